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
"""Tests of ``opie-sched preempt explain`` on snapshots
(opie_sched.preemption.snapshot)."""

import json
import os
import subprocess
import sys
import tempfile

import testtools

from opie_sched.cmd import preempt
from opie_sched.preemption import snapshot

from tests.unit.preemption.helpers import POLICY


def snapshot_doc():
    return {
        'now': '2026-11-22T12:00:00Z',
        'request': {'vcpus': 2, 'memory_mb': 4000, 'disk_gb': 40},
        'hosts': [
            {'name': 'host-A', 'vcpus': 8, 'memory_mb': 16000,
             'disk_gb': 200, 'instances': [
                 {'uuid': 'A%d' % i, 'vcpus': 2, 'memory_mb': 4000,
                  'disk_gb': 40, 'preemptible': i > 1,
                  'launched_at': '2026-11-22T07:28:00Z'}
                 for i in range(4)]},
            {'name': 'host-C', 'vcpus': 8, 'memory_mb': 16000,
             'disk_gb': 200, 'cpu_allocation_ratio': 1.0, 'instances': [
                 {'uuid': 'CP%d' % i, 'vcpus': 2, 'memory_mb': 4000,
                  'disk_gb': 40, 'preemptible': True,
                  'launched_at': '2026-11-22T%02d:%02d:00Z'
                  % (11 - i, 39 - i)} for i in range(4)]},
        ]}


class ExplainTest(testtools.TestCase):

    def test_explain_chooses_least_cost_host(self):
        snap = snapshot.parse(snapshot_doc())
        result = preempt.explain(snap, POLICY)
        # host-A: A2/A3 run 4h32m -> 1920 s each; host-C: CP0 runs 21 min
        # -> 1260 s, the cheapest single victim anywhere.
        self.assertEqual('host-C', result['host'])
        self.assertEqual([{'uuid': 'CP0', 'cost': 1260.0}],
                         result['victims'])
        self.assertEqual(1260.0, result['total_cost'])

    def test_explain_never_chooses_a_pinned_server(self):
        # the ownership model (issue 30): CP0, the cheapest, is being
        # moved by its owner; the next cheapest is chosen instead
        doc = snapshot_doc()
        doc['hosts'][1]['instances'][0]['state'] = 'pinned'
        result = preempt.explain(snapshot.parse(doc), POLICY)
        self.assertNotIn('CP0', [v['uuid'] for v in result['victims']])
        self.assertNotIn('CP0', result['ranking'][0]['victims'])
        doc['hosts'][1]['instances'][0]['state'] = 'moving'
        self.assertRaises(snapshot.SnapshotError, snapshot.parse, doc)

    def test_explain_no_host(self):
        doc = snapshot_doc()
        doc['request'] = {'vcpus': 16, 'memory_mb': 1, 'disk_gb': 1}
        result = preempt.explain(snapshot.parse(doc), POLICY)
        self.assertIsNone(result['host'])
        self.assertIn('no host can fit', result['reason'])

    def test_snapshot_capacity_is_placements(self):
        doc = snapshot_doc()
        doc['hosts'][0].update(vcpus=32, reserved_vcpus=4,
                               cpu_allocation_ratio=4.0,
                               reserved_memory_mb=512)
        host = snapshot.parse(doc).hosts[0]
        self.assertEqual((112, 15488, 200), tuple(host.capacity))
        doc['hosts'][0]['reserved_vcpus'] = 33
        e = self.assertRaises(snapshot.SnapshotError, snapshot.parse, doc)
        self.assertIn('hosts[0].reserved_vcpus', str(e))

    def test_snapshot_errors_name_the_field(self):
        doc = snapshot_doc()
        doc['hosts'][1]['instances'][2]['vcpus'] = -1
        e = self.assertRaises(snapshot.SnapshotError, snapshot.parse, doc)
        self.assertIn('hosts[1].instances[2].vcpus', str(e))
        doc = snapshot_doc()
        doc['hosts'][0]['instances'][0]['launched_at'] = 'yesterday'
        e = self.assertRaises(snapshot.SnapshotError, snapshot.parse, doc)
        self.assertIn('hosts[0].instances[0].launched_at', str(e))
        doc = snapshot_doc()
        doc['hosts'][1]['name'] = 'host-A'
        self.assertRaises(snapshot.SnapshotError, snapshot.parse, doc)

    def test_cli_json_and_errors(self):
        with tempfile.TemporaryDirectory() as d:
            good = os.path.join(d, 'snap.json')
            with open(good, 'w') as f:
                json.dump(snapshot_doc(), f)
            out = subprocess.run(
                [sys.executable, '-m', 'opie_sched.cmd.cli', 'preempt',
                 'explain', good, '--cost', 'billing_period', '-f', 'json'],
                capture_output=True, text=True)
            self.assertEqual(0, out.returncode, out.stderr)
            self.assertEqual({'host': 'host-C',
                              'victims': [{'uuid': 'CP0', 'cost': 1260.0}],
                              'total_cost': 1260.0}, json.loads(out.stdout))
            out = subprocess.run(
                [sys.executable, '-m', 'opie_sched.cmd.cli', 'preempt',
                 'explain', good, '--ranking'],
                capture_output=True, text=True)
            self.assertEqual(0, out.returncode, out.stderr)
            self.assertRegex(out.stdout, r'\| host +\| host-C ')
            self.assertRegex(out.stdout, r'\|\s+CP0\s+1260\s+\|')
            self.assertRegex(out.stdout, r'\| total_cost +\| 1260 ')
            self.assertRegex(out.stdout, r'\|\s+host-C\s+yes\s+1260\s+CP0')
            bad = os.path.join(d, 'bad.json')
            with open(bad, 'w') as f:
                f.write('{"hosts": [')
            out = subprocess.run(
                [sys.executable, '-m', 'opie_sched.cmd.cli', 'preempt',
                 'explain', bad], capture_output=True, text=True)
            self.assertEqual(1, out.returncode)
            self.assertIn('not valid JSON', out.stderr)
            self.assertNotIn('Traceback', out.stderr)
