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
"""The scheduling benchmark's ``--cells`` spreads its nodes over cells
that both schedulers see (issue 21).

``scheduling_latency.py --one-scale 6 --cells 2 --probe-cells PATH`` (in a
subprocess: nova's fixtures change process-wide state) sets up 6 nodes
with the (b) fill over two cells (one compute service each; in each cell
its own node, a template node and one bulk copy of it) and writes
how many host states each scheduler manager builds per cell, and one
preempting opie decision limited to each cell in turn (the request
spec's ``requested_destination``), checked as scenario (b) is: victims
chosen on the selected node and gone afterwards. For cell2 that is
opie's instance read of another cell than the default one.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import tests

ROOT = tests.ROOT
SCRIPT = os.path.join(ROOT, 'benchmarks', 'scheduling_latency.py')


class TestBenchTwoCells(unittest.TestCase):

    def test_nodes_of_both_cells_seen_and_preempted_on(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'cells.json')
            proc = subprocess.run(
                [sys.executable, '-O', SCRIPT, '--one-scale', '6',
                 '--cells', '2', '--probe-cells', path],
                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                universal_newlines=True, timeout=900)
            self.assertEqual(0, proc.returncode, proc.stderr[-4000:])
            with open(path) as f:
                got = json.load(f)
        self.assertEqual({'cell1': 3, 'cell2': 3}, got['nodes'])
        for manager in ('opie', 'stock'):
            self.assertEqual({'cell1': 3, 'cell2': 3},
                             got['host_states'][manager], manager)
        self.assertEqual(['cell1', 'cell2'], sorted(got['preempted']))
        for cell, decision in got['preempted'].items():
            self.assertEqual(cell, decision['node_cell'], decision)
        self.assertTrue(got['preempted']['cell2']['node'].startswith(
            'compute2'), got['preempted'])

    def test_bad_cells_refused(self):
        for argv in (['--cells', '0'], ['--nodes', '3', '--cells', '4']):
            proc = subprocess.run(
                [sys.executable, SCRIPT] + argv, cwd=ROOT,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                universal_newlines=True, timeout=120)
            self.assertEqual(2, proc.returncode, argv)
            self.assertIn('at least one node per cell', proc.stderr)
