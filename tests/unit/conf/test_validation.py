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
"""A configuration the services cannot honour is refused at start
(issue 33): :mod:`opie_sched.conf.validation`, the services' console
scripts (:mod:`opie_sched.cmd.launch`) and the scheduler manager.
"""

import os

import fixtures
from oslo_config import cfg
import testtools

from opie_sched import conf as opie_conf
from opie_sched.conf import autoscaler as autoscaler_opts
from opie_sched.conf import repacker as repacker_opts
from opie_sched.conf import validation
from opie_sched.services.market import opts as market_opts


class ValidationTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def conf(self, text, register=opie_conf.register_opts):
        path = os.path.join(self.tmp, 'test.conf')
        with open(path, 'w') as f:
            f.write(text)
        conf = cfg.ConfigOpts()
        register(conf)
        conf(['--config-file', path])
        return conf

    def problems(self, text, register=opie_conf.register_opts):
        return validation.problems(self.conf(text, register))

    def test_defaults_are_valid(self):
        for register in (opie_conf.register_opts,
                         autoscaler_opts.register_opts,
                         repacker_opts.register_opts,
                         market_opts.register_opts):
            self.assertEqual([], self.problems('', register))

    def test_unknown_cost_module(self):
        found = self.problems('[opie_preemption]\ncost_modules = '
                              'billing_period,nonexistent:2\n')
        self.assertEqual(1, len(found), found)
        self.assertIn("cost_modules: unknown cost module 'nonexistent' "
                      "(entry-point group opie_sched.preemption.costs; "
                      "available: billing_period, count, runtime, waste)",
                      found[0])

    def test_bad_multiplier(self):
        found = self.problems('[opie_preemption]\ncost_modules = count:-1\n')
        self.assertIn("multiplier of cost module 'count'", found[0])

    def test_out_of_range_and_choices_are_read_now(self):
        found = self.problems('[opie_preemption]\nrelease_timeout = -5\n'
                              'action = explode\n')
        self.assertIn('[opie_preemption] release_timeout: Should be greater '
                      'than or equal to 0', found)
        self.assertIn("[opie_preemption] action: unknown interruption "
                      "behaviour 'explode' (entry-point group "
                      "opie_sched.preemption.behaviours; available: delete, "
                      "shelve, stop)", found)

    def test_misspelt_option_and_section(self):
        found = self.problems('[opie_preemption]\ncost_module = count\n'
                              '[opie_premption]\nenabled = true\n'
                              '[opie_market]\nconnection = sqlite://\n'
                              '[nova_section]\nanything = 1\n')
        self.assertEqual(2, len(found), found)
        self.assertIn('unknown option [opie_preemption] cost_module in ',
                      found[0])
        self.assertIn('(did you mean cost_modules?)', found[0])
        self.assertIn('unknown section [opie_premption]', found[1])
        self.assertIn('(did you mean [opie_preemption]?)', found[1])

    def test_cross_option_and_plugins(self):
        found = self.problems('[opie_preemption]\nmax_retry_interval = 10\n'
                              'default_bid = abc\n'
                              '[opie_rpm]\nutilisation_source = prom\n'
                              '[opie_reliability]\ntopology_file = '
                              '/nonexistent/topology.yaml\n')
        text = '\n'.join(found)
        self.assertIn('max_retry_interval (10) must be >= retry_interval '
                      '(60)', text)
        self.assertIn('default_bid', text)
        self.assertIn("utilisation_source: unknown utilisation source "
                      "'prom'", text)
        self.assertIn('topology_file: /nonexistent/topology.yaml is not',
                      text)

    def test_service_groups(self):
        self.assertIn("[opie_repacker] strategy: unknown repacker strategy "
                      "'rmp'",
                      self.problems('[opie_repacker]\nstrategy = rmp\n',
                                    repacker_opts.register_opts)[0])
        self.assertIn('stability_interval must be > 0',
                      self.problems('[opie_autoscaler]\nstability_interval '
                                    '= 0\n', autoscaler_opts.register_opts)[0])
        found = self.problems('[opie_market]\ndefault_bid = -1\n',
                              market_opts.register_opts)
        self.assertIn('[opie_market]', found[0])

    def test_validate_raises_one_line(self):
        conf = self.conf('[opie_preemption]\ncost_modules = nonexistent\n'
                         'cost_module = count\n')
        exc = self.assertRaises(validation.ConfigError, validation.validate,
                                conf)
        self.assertEqual(2, len(exc.problems))
        self.assertNotIn('\n', str(exc))
        self.assertIsInstance(exc, cfg.Error)
