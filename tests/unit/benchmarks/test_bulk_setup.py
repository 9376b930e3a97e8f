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
"""The scheduling benchmark's bulk set-up (benchmarks/bulk_setup.py) makes
the same Placement and Nova state as its slow set-up (issue 21), with one
cell and with two (``--cells 2``).

Each set-up runs in its own process (``scheduling_latency.py --one-scale 5
--dump-state PATH [--slow-setup]``: an in-process Nova 34 with 5 nodes,
the (a) fill and the (b) fill, 20 preemptibles) and writes what the
schedulers see: every ComputeNode's fields, every resource provider's
generation, inventories, traits and usages through Placement's API, every
instance (flavor, metadata, system metadata, info cache), its mapping,
consumer generation and allocations. Only the identifiers each run draws
at random (ids, uuids, timestamps) are left out; instances are matched by
node, name and age.
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


def _state(tmp, slow, nodes=5, cells=1):
    path = os.path.join(tmp, 'slow.json' if slow else 'bulk.json')
    env = dict(os.environ, PYTHONHASHSEED='0')
    proc = subprocess.run(
        [sys.executable, '-O', SCRIPT, '--one-scale', str(nodes),
         '--dump-state', path] + (['--slow-setup'] if slow else []) + (
            ['--cells', str(cells)] if cells != 1 else []),
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True, timeout=900)
    if proc.returncode:
        raise AssertionError('set-up (%s) failed:\n%s' % (
            'slow' if slow else 'bulk', proc.stderr[-4000:]))
    with open(path) as f:
        return json.load(f)


class TestBulkSetupEqualsSlowSetup(unittest.TestCase):

    def test_same_state_for_five_nodes(self):
        with tempfile.TemporaryDirectory() as tmp:
            slow = _state(tmp, True)
            bulk = _state(tmp, False)
        self.assertEqual(5, len(slow['nodes']))
        self.assertEqual(5, len(slow['providers']))
        self.assertEqual(20, len(slow['instances']))
        self._same(slow, bulk)

    def test_same_state_for_six_nodes_in_two_cells(self):
        # --cells 2: each cell's nodes and instances are copies of
        # templates in that cell's database
        with tempfile.TemporaryDirectory() as tmp:
            slow = _state(tmp, True, nodes=6, cells=2)
            bulk = _state(tmp, False, nodes=6, cells=2)
        self.assertEqual(6, len(slow['nodes']))
        self.assertEqual(24, len(slow['instances']))
        self.assertEqual({'cell1': 12, 'cell2': 12}, {
            cell: sum(1 for i in bulk['instances'].values()
                      if i['mapping'][0] == cell)
            for cell in ('cell1', 'cell2')})
        self._same(slow, bulk)

    def _same(self, slow, bulk):
        for part in ('nodes', 'providers', 'instances'):
            self.assertEqual(sorted(slow[part]), sorted(bulk[part]), part)
            for key in slow[part]:
                self.assertEqual(slow[part][key], bulk[part][key],
                                 '%s %s differs' % (part, key))
