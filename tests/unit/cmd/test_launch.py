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
"""Tests of the services' launch checks (opie_sched.cmd.launch)."""

import os
import subprocess
import sys

import fixtures
import testtools

from opie_sched.cmd import launch
import tests


ROOT = tests.ROOT


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
