# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""The market's plugin families as its settings load them
(opie_sched.services.market.settings): charge rules
(:mod:`opie_sched.market.charge_rules`, ``[opie_market] charge_rule``) and
out-of-credit policies (:class:`opie_sched.market.budget.
OutOfCreditPolicy`, ``[opie_market] out_of_credit_policy``): the loader's
sentence for an unknown or broken one at start, and a rule and a policy
of another package (entry points this test installs) accepted by the
options and used by the market. Each shipped rule and policy:
tests/unit/market/test_charge_rules.py and test_budget.py.
"""

from decimal import Decimal as D
import os
import subprocess
import sys

import fixtures
from oslo_config import cfg
import testtools

from opie_sched.conf import validation
from opie_sched.market import budget
from opie_sched.market import charge_rules
from opie_sched.market import outbid
from opie_sched.market import pricing
from opie_sched import plugins
from opie_sched.services.market import charging
from opie_sched.services.market import opts as market_opts
from opie_sched.services.market import settings as market_settings
import tests
from tests import entry_points
from tests.unit.market.helpers import CPU
from tests.unit.market.helpers import HOUR
from tests.unit.market.helpers import position
from tests.unit.market import test_charge_rules


class HalfBidRule(charge_rules.ChargeRule):
    """A rule of another package: every server pays half its bid."""

    description = 'half the bid'

    def charge_per_hour(self, position):
        return pricing.as_decimal(position.server.bid) / 2


class NewestFirst(budget.OutOfCreditPolicy):
    """A policy of another package: the newest server first."""

    description = 'the newest first'

    def order(self, servers, prices, period_seconds):
        return sorted(servers, key=lambda s: -(s.created_at or 0))


def market_problems(test, **values):
    """:func:`opie_sched.conf.validation.problems` of ``[opie_market]``
    with ``values`` (what the services check at start).
    """
    path = os.path.join(test.useFixture(fixtures.TempDir()).path,
                        'opie-market.conf')
    with open(path, 'w') as f:
        f.write('[opie_market]\n' + ''.join(
            '%s = %s\n' % item for item in values.items()))
    conf = cfg.ConfigOpts()
    market_opts.register_opts(conf)
    conf(['--config-file', path], default_config_files=[])
    return validation.problems(conf)


class StartUpTest(testtools.TestCase):
    """An unknown or broken plugin stops the market at start with the
    loader's one line.
    """

    def test_unknown_names(self):
        self.assertEqual(
            ["[opie_market] charge_rule: unknown charge rule 'auction' "
             "(entry-point group opie_sched.market.charge_rules; "
             "available: bid, share_cost)"],
            market_problems(self, charge_rule='auction'))
        self.assertEqual(
            ["[opie_market] out_of_credit_policy: unknown out-of-credit "
             "policy 'random' (entry-point group "
             "opie_sched.market.out_of_credit; available: lowest_bid, "
             "most_expensive)"],
            market_problems(self, out_of_credit_policy='random'))
        # the settings object refuses them too (its ConfigError)
        e = self.assertRaises(market_settings.ConfigError,
                              market_settings.Settings, charge_rule='x')
        self.assertIsInstance(e.__cause__, charge_rules.ChargeRuleError)
        self.assertIsInstance(e.__cause__.__cause__, plugins.PluginNotFound)
        e = self.assertRaises(budget.BudgetError, budget.CreditManager(
            ).out_of_credit, 'p1', [], {}, HOUR, policy='random')
        self.assertIn("unknown out-of-credit policy 'random'", str(e))

    def test_opie_market_refuses_to_start_with_one_line(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(tmp, 'opie-market.conf')
        with open(path, 'w') as f:
            f.write('[opie_market]\nstate_dir = %s\ncharge_rule = auction\n'
                    % tmp)
        root = tests.ROOT
        proc = subprocess.run(
            [sys.executable, '-c',
             'import sys\nsys.argv = ["opie-market", "--config-file", %r, '
             '"tick"]\nfrom opie_sched.cmd import launch\n'
             'sys.exit(launch.opie_market())\n' % path],
            capture_output=True, text=True, cwd=root, timeout=300,
            env=dict(os.environ, PYTHONPATH=root))
        self.assertEqual(2, proc.returncode, proc.stderr)
        self.assertEqual(
            ["opie-market: invalid opie configuration: [opie_market] "
             "charge_rule: unknown charge rule 'auction' (entry-point group "
             "opie_sched.market.charge_rules; available: bid, share_cost)"],
            proc.stderr.splitlines())

    def test_broken_plugins(self):
        self.useFixture(entry_points.EntryPoints({
            charge_rules.NAMESPACE: {'broken': 'opie_no_such_mod:Rule'},
            budget.POLICY_NAMESPACE: {'broken': 'opie_no_such_mod:P'}}))
        found = market_problems(self, charge_rule='broken',
                                out_of_credit_policy='broken')
        self.assertEqual(
            ["[opie_market] charge_rule: charge rule 'broken' (entry-point "
             "group opie_sched.market.charge_rules) failed to load: "
             "ModuleNotFoundError: No module named 'opie_no_such_mod'"],
            found)
        e = self.assertRaises(market_settings.ConfigError,
                              market_settings.Settings,
                              out_of_credit_policy='broken')
        self.assertEqual(
            "out_of_credit_policy: out-of-credit policy 'broken' "
            "(entry-point group opie_sched.market.out_of_credit) failed "
            "to load: ModuleNotFoundError: No module named "
            "'opie_no_such_mod'", str(e))


class AddedPluginsTest(testtools.TestCase):
    """A charge rule and an out-of-credit policy of another package."""

    def setUp(self):
        super().setUp()
        self.useFixture(entry_points.EntryPoints({
            charge_rules.NAMESPACE: {'half_bid': __name__ + ':HalfBidRule'},
            budget.POLICY_NAMESPACE: {'newest': __name__ + ':NewestFirst'},
        }))

    def test_accepted_by_the_options(self):
        self.assertEqual([], market_problems(
            self, charge_rule='half_bid', out_of_credit_policy='newest'))
        conf = cfg.ConfigOpts()
        market_opts.register_opts(conf)
        conf([], default_config_files=[])
        for name, value, text in (
                ('charge_rule', 'half_bid', 'half the bid'),
                ('out_of_credit_policy', 'newest', 'the newest first')):
            conf.set_override(name, value, group='opie_market')
            self.assertEqual(value, conf.opie_market[name])
            # listed with its description (the sample configuration)
            opt = conf._get_opt_info(name, 'opie_market')['opt']
            self.assertEqual(text, opt.type.choices[value])

    def test_used_by_the_market(self):
        settings = market_settings.Settings(charge_rule='half_bid',
                                            out_of_credit_policy='newest')
        markets = {'default': outbid.Market(
            capacity={}, reserve={}, prices={}, demand={}, contended={},
            positions={'s': position('4', 2, '1.5')})}
        [server] = charging.Charger(
            settings, budget.CreditManager()).charged_servers(markets)
        self.assertEqual(D('2'), server.charge_per_hour)
        cm = budget.CreditManager()
        cm.open_account('p1', balance=1)
        servers = [outbid.Server(u, D('1'), {CPU: 1}, 'p1', t)
                   for u, t in (('a', 1), ('b', 3), ('c', 2))]
        victims = cm.out_of_credit('p1', servers,
                                   {pricing.DEFAULT_POOL: {CPU: D(1)}},
                                   HOUR, settings.credit_policy)
        # 3 due, 1 in the account: the two newest go
        self.assertEqual(['b', 'c'], [s.uuid for s in victims])

    def test_a_new_rule_needs_a_payload_version_bump(self):
        self.assertRaises(
            AssertionError,
            test_charge_rules.ShippedChargeRulesTest(
                'test_enum_follows_the_installed_rules')
            .test_enum_follows_the_installed_rules)
