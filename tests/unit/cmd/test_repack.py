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
"""Tests of ``opie-sched repack plan`` (opie_sched.cmd.repack)."""

import io
import json
import os

import fixtures
import testtools

from opie_sched.cmd import cli
from opie_sched import flavormix as rp
from opie_sched.simulator import repacking_strategies as rs

from tests.unit.flavormix.helpers import brute_force
from tests.unit.flavormix.helpers import exact_price
from tests.unit.flavormix.helpers import HAVE_SCIPY


class CLITest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.stdout = io.StringIO()
        self.stderr = io.StringIO()
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', self.stdout))
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', self.stderr))

    def write(self, doc, name='app.json'):
        path = os.path.join(self.tmp, name)
        with open(path, 'w') as f:
            f.write(doc if isinstance(doc, str) else json.dumps(doc))
        return path

    def test_plan_json(self):
        doc = {'types': [{'name': 'small', 'price': 0.18, 'capacity': 500},
                         {'name': 'big', 'price': 1.44, 'capacity': 6868}],
               'demand': 12000, 'current': {'small': 20}, 'd': 10,
               'K': 0.01, 'repack_time': 0.1}
        path = self.write(doc)
        self.assertEqual(0, cli.main(['repack', 'plan', path,
                                      '--format', 'json']))
        out = json.loads(self.stdout.getvalue())
        types = rp.vm_types(doc['types'])
        want = rp.plan(types, 12000, {'small': 20}, d=10, K=0.01,
                       repack_time=0.1)
        self.assertEqual(want.as_dict(), out)
        self.assertEqual(brute_force(types, 12000, out['baseline']),
                         out['optimal'])
        self.assertEqual(out['optimal'] if out['repack'] else
                         out['baseline'], out['target'])
        for key in ('current', 'optimal', 'current_price', 'optimal_price',
                    'repack', 'reason', 'gain'):
            self.assertIn(key, out)

    def test_plan_table_and_thesis_types(self):
        path = self.write({'types': 'table2:B', 'demand': 30000,
                           'current': {'small1': 60}, 'R': 0.5})
        self.assertEqual(0, cli.main(['repack', 'plan', path]))
        out = self.stdout.getvalue()
        self.assertRegex(out, r'\| optimal +\| \w+ x\d+')
        self.assertRegex(out, r'\| reason +\| repack: gain ')
        self.assertRegex(out, r'\| repack +\| True ')

    @testtools.skipUnless(HAVE_SCIPY, 'scipy not installed')
    def test_plan_milp(self):
        path = self.write({'types': 'table2:A', 'demand': 54321})
        self.assertEqual(0, cli.main(['repack', 'plan', path, '--format',
                                      'json', '--method', 'milp']))
        out = json.loads(self.stdout.getvalue())
        types = rp.thesis_types('A')
        self.assertEqual(exact_price(types, rp.optimal_set(types, 54321)),
                         exact_price(types, out['optimal']))

    def test_plan_errors(self):
        cases = [
            ('{', 'not valid JSON'),
            ('[1]', 'JSON object'),
            (json.dumps({'demand': 1}), 'missing'),
            (json.dumps({'types': 'table2:A', 'demand': 1, 'x': 1}),
             'unknown key'),
            (json.dumps({'types': 'table2:Z', 'demand': 1}), 'table2'),
            (json.dumps({'types': 'table2:A', 'demand': -5}),
             'required capacity'),
            (json.dumps({'types': 'table2:A', 'demand': 5,
                         'current': {'nope': 1}}), 'unknown flavor'),
        ]
        for i, (text, msg) in enumerate(cases):
            self.stderr.seek(0)
            self.stderr.truncate()
            path = self.write(text, 'bad%d.json' % i)
            self.assertEqual(1, cli.main(['repack', 'plan', path]))
            self.assertIn(msg, self.stderr.getvalue())
        self.assertEqual(1, cli.main(['repack', 'plan',
                                      os.path.join(self.tmp, 'none.json')]))
        self.assertIn('cannot read', self.stderr.getvalue())

    def test_simulate(self):
        self.assertEqual(0, cli.main(
            ['repack', 'simulate', '--workload', 'increase', '--strategy',
             'S_delta', '--seed', '4', '--format', 'json']))
        out = json.loads(self.stdout.getvalue())
        demand, dt = rp.workload('increase', seed=4)
        want = rs.make_strategy('S_delta', rp.thesis_types('A'),
                                repack_time=4 / 60).run(demand, dt)
        self.assertEqual([('S_delta', want.total_cost)],
                         [(r['strategy'], r['total_cost']) for r in out])
        self.assertIn('workload increase (seed 4, ', self.stderr.getvalue())
        self.stdout.seek(0)
        self.stdout.truncate()
        self.assertEqual(0, cli.main(
            ['repack', 'simulate', '--workload', 'seasonal', '--strategy',
             'S_delta_Repacked']))
        self.assertIn('S_delta_Repacked', self.stdout.getvalue())
        self.assertEqual(2, cli.main(
            ['repack', 'simulate', '--workload', 'seasonal', '--strategy',
             'S_nope']))
