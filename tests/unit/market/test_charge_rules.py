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
"""Tests of the market's shipped charge rules
(opie_sched.market.charge_rules): their names, pinned per notification
payload version."""

from decimal import Decimal as D

import testtools

from opie_sched.market import budget
from opie_sched.market import charge_rules
from opie_sched.market import outbid
from opie_sched.notifications import market as market_notes
from opie_sched.services.market import charging
from opie_sched.services.market import settings as market_settings

from tests.unit.market.helpers import position


#: The charge_rule enum of the price payload, pinned with its version: a
#: rule added to (or removed from) the installed ones fails
#: test_enum_follows_the_installed_rules until the payload's version is
#: bumped and its names written here.
PINNED_RULES = {
    (market_notes.MarketPricePayload, '1.0'): ('share_cost', 'bid'),
}


class ShippedChargeRulesTest(testtools.TestCase):

    def test_installed(self):
        self.assertEqual(('share_cost', 'bid'), charge_rules.names())

    def test_share_cost_is_the_share_at_the_clearing_price(self):
        rule = charge_rules.load('share_cost')
        self.assertIsInstance(rule, charge_rules.ShareCostRule)
        # capped at its flavor: pays what its share costs, not its bid
        self.assertEqual(D('1.5'), rule.charge_per_hour(
            position('4', 2, '1.5')))

    def test_bid_is_the_bid_of_a_server_holding_a_share(self):
        rule = charge_rules.load('bid')
        self.assertIsInstance(rule, charge_rules.BidRule)
        self.assertEqual(D('4'), rule.charge_per_hour(
            position('4', 2, '1.5')))
        # no share: what its (empty) share costs
        self.assertEqual(D('0'), rule.charge_per_hour(
            position('4', 0, '0')))

    def test_charger_uses_the_configured_rule(self):
        markets = {'default': outbid.Market(
            capacity={}, reserve={}, prices={}, demand={}, contended={},
            positions={'s': position('4', 2, '1.5')})}
        for rule, charge in (('share_cost', D('1.5')), ('bid', D('4'))):
            charger = charging.Charger(market_settings.Settings(
                charge_rule=rule), budget.CreditManager())
            [server] = charger.charged_servers(markets)
            self.assertEqual(charge, server.charge_per_hour, rule)

    def test_enum_follows_the_installed_rules(self):
        for (cls, version), pinned in PINNED_RULES.items():
            values = tuple(cls.fields['charge_rule']._type._valid_values)
            self.assertEqual(charge_rules.names(), values, cls.__name__)
            self.assertEqual(
                (version, pinned), (cls.VERSION, charge_rules.names()),
                '%s: the charge rules are %s but version %s pins %s: bump '
                'its VERSION (and its fingerprint in test_notifications) '
                'and pin the new names here'
                % (cls.__name__, charge_rules.names(), version, pinned))
