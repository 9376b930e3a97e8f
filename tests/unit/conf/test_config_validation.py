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
import subprocess
import sys

import fixtures
from oslo_config import cfg
import testtools

from opie_sched.cmd import launch
from opie_sched import conf as opie_conf
from opie_sched.conf import autoscaler as autoscaler_opts
from opie_sched.conf import repacker as repacker_opts
from opie_sched.conf import validation
from opie_sched.services.market import opts as market_opts
import tests

ROOT = tests.ROOT


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


class LaunchTest(testtools.TestCase):
    """The console scripts: one line for a missing extra or a refused
    configuration, in a subprocess as the installed script runs.
    """

    def run_script(self, code, *args):
        env = dict(os.environ, PYTHONPATH=ROOT)
        return subprocess.run([sys.executable, '-c', code] + list(args),
                              capture_output=True, text=True, env=env,
                              cwd=ROOT, timeout=300)

    def test_missing_extra_is_named(self):
        # nova refused as on an opie_sched[client] host
        proc = self.run_script(
            'import sys\n'
            'class No:\n'
            '    def find_spec(self, name, path=None, target=None):\n'
            '        if name.split(".")[0] == "nova":\n'
            '            raise ModuleNotFoundError("No module named %r" % '
            'name, name=name)\n'
            'sys.meta_path.insert(0, No())\n'
            'from opie_sched.cmd import launch\n'
            'sys.exit(launch.opie_scheduler())\n')
        self.assertEqual(1, proc.returncode, proc.stderr)
        self.assertEqual(
            ["opie-scheduler needs: pip install 'opie_sched[scheduler]' "
             "(No module named 'nova')"], proc.stderr.splitlines())

    def test_own_import_error_is_not_an_extra(self):
        exc = ModuleNotFoundError('x', name='opie_sched.nothing')
        self.assertIsNone(launch.missing_module(exc))
        self.assertEqual('nova', launch.missing_module(
            ModuleNotFoundError('x', name='nova.conf')))

    def test_every_service_script_is_launched(self):
        import configparser
        setup = configparser.ConfigParser()
        setup.read(os.path.join(ROOT, 'setup.cfg'))
        scripts = dict(
            line.split('=', 1) for line in
            setup['entry_points']['console_scripts'].splitlines()
            if line.strip() and not line.strip().startswith('#'))
        scripts = {k.strip(): v.strip() for k, v in scripts.items()}
        for name in launch.SCRIPTS:
            self.assertEqual('opie_sched.cmd.launch:%s'
                             % name.replace('-', '_'), scripts[name])

    def test_scheduler_refuses_a_bad_cost_module(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(tmp, 'nova.conf')
        with open(path, 'w') as f:
            f.write('[oslo_concurrency]\nlock_path = %s\n'
                    '[opie_preemption]\ncost_modules = nonexistent\n' % tmp)
        proc = self.run_script(
            'import sys\nsys.argv = ["opie-scheduler", "--config-file", %r]\n'
            'from opie_sched.cmd import launch\n'
            'sys.exit(launch.opie_scheduler())\n' % path)
        self.assertEqual(1, proc.returncode, proc.stderr)
        self.assertEqual(
            ["opie-scheduler refuses to start: invalid opie configuration: "
             "[opie_preemption] cost_modules: unknown cost module "
             "'nonexistent' (entry-point group opie_sched.preemption.costs; "
             "available: billing_period, count, runtime, waste)"],
            proc.stderr.splitlines())
