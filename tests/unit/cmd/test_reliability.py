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
"""Tests of ``opie-sched reliability plan`` (opie_sched.cmd.reliability)."""

import io
import json
import os

import fixtures
import testtools
import yaml

from opie_sched.cmd import cli
from opie_sched.diehard import planner as dh_plan
from opie_sched.diehard import topology as dh_topo

from tests.unit.diehard.helpers import SMALL_YAML


class CLITestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.EnvironmentVariable('OS_CLOUD'))
        self.stdout = io.StringIO()
        self.stderr = io.StringIO()
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', self.stdout))
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', self.stderr))
        self.topo = os.path.join(self.tmp, 'topo.yaml')
        with open(self.topo, 'w') as f:
            f.write(SMALL_YAML)

    def run_cli(self, *argv):
        return cli.main(['reliability', 'plan'] + list(argv))

    def test_json_output(self):
        code = self.run_cli('--tasks', '4', '--target', '0.99', '--hours',
                            '10', '--topology', self.topo, '--format',
                            'json', '--algorithm', 'diehard')
        self.assertEqual(0, code, self.stderr.getvalue())
        out = json.loads(self.stdout.getvalue())
        topology = dh_topo.topology_from_dict(yaml.safe_load(SMALL_YAML))
        plan = dh_plan.plan(topology, 4, 0.99, 10.0)
        self.assertEqual(plan.extra, out['extra_tasks'])
        self.assertEqual(4 + plan.extra, out['total_tasks'])
        self.assertEqual(plan.met, out['target_met'])
        self.assertAlmostEqual(plan.reliability.value,
                               out['reliability']['value'])
        self.assertEqual(sum(c['tasks'] for c in out['placement']),
                         out['total_tasks'])
        self.assertEqual(sum(out['network_domains'].values()),
                         out['total_tasks'])
        self.assertNotIn('trace', out)

    def test_thesis_topology_table(self):
        code = self.run_cli('--tasks', '500', '--target', '0.9999',
                            '--hours', '80', '--thesis-topology',
                            '--algorithm', 'proportional')
        self.assertEqual(0, code, self.stderr.getvalue())
        out = self.stdout.getvalue()
        self.assertIn('| extra_tasks ', out)
        self.assertIn('| target_met      | True', out)
        self.assertRegex(out, r'\| reliability +\| 0\.9999\d+ \(error bound')
        self.assertIn('net-01', out)

    def test_errors(self):
        code = self.run_cli('--tasks', '4', '--target', '0.99', '--hours',
                            '10', '--topology',
                            os.path.join(self.tmp, 'nope.yaml'))
        self.assertEqual(1, code)
        self.assertIn('cannot read', self.stderr.getvalue())
        code = self.run_cli('--tasks', '400', '--target', '0.99', '--hours',
                            '10', '--topology', self.topo)
        self.assertEqual(1, code)
        self.assertIn('do not fit', self.stderr.getvalue())
        self.assertEqual(2, self.run_cli('--tasks', '4', '--target', '1',
                                         '--hours', '1', '--topology',
                                         self.topo))
        self.assertEqual(2, self.run_cli('--tasks', '4', '--target', '0.9',
                                         '--hours', '1'))
