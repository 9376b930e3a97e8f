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
"""The scheduling-latency benchmark runs end to end in its quick mode.

``benchmarks/scheduling_latency.py --quick`` starts an all-in-one Nova 34
(10 nodes) and times opie-scheduler against stock nova's scheduler for the
three scenarios of issue 6. It runs in a subprocess: nova's fixtures change
process-wide state (config, databases, logging) that must not leak into the
other unit tests.
"""

import ast
import os
import re
import subprocess
import sys
import unittest

import tests

ROOT = tests.ROOT
SCRIPT = os.path.join(ROOT, 'benchmarks', 'scheduling_latency.py')


class TestSchedulingLatencyQuick(unittest.TestCase):

    def test_quick_mode_prints_ratios(self):
        proc = subprocess.run(
            [sys.executable, '-O', SCRIPT, '--quick', '--burst', '3'],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            universal_newlines=True, timeout=1800)
        self.assertEqual(0, proc.returncode,
                         'stdout:\n%s\nstderr (end):\n%s'
                         % (proc.stdout, proc.stderr[-4000:]))
        out = proc.stdout
        for scenario in ('a opie/stock', 'b opie/stock', 'c retry/opie'):
            match = re.search(r'^ratio %s 10 nodes: (\d+\.\d+)$'
                              % re.escape(scenario), out, re.M)
            self.assertIsNotNone(match, '%s missing in:\n%s'
                                 % (scenario, out))
            self.assertGreater(float(match.group(1)), 0.0)
        # the table row of the 10-node scale
        self.assertRegex(out, r'(?m)^\s+10 \|')
        # the burst: every request served, none past rpc_response_timeout
        for state in ('free room', 'preemption'):
            match = re.search(r'(?m)^\s+10 %s\s+3\s+(\d+)\s+(\d+)\s+'
                              r'(\d+)\s' % state, out)
            self.assertIsNotNone(match, '%s burst missing in:\n%s'
                                 % (state, out))
            self.assertEqual(('3', '0', '0'), match.groups(), out)
        self.assertRegex(out, r'ratio burst throughput preemption/free '
                              r'room N=3 10 nodes: \d+\.\d+')
        # Placement's request log stays off both streams
        self.assertNotIn('"GET /placement', out + proc.stderr)


class TestNoAsserts(unittest.TestCase):
    """Benchmark checks survive ``python -O`` (which drops asserts)."""

    def test_benchmarks_have_no_assert_statements(self):
        bench = os.path.join(ROOT, 'benchmarks')
        for name in sorted(os.listdir(bench)):
            if not name.endswith('.py'):
                continue
            with open(os.path.join(bench, name)) as f:
                tree = ast.parse(f.read(), name)
            lines = [n.lineno for n in ast.walk(tree)
                     if isinstance(n, ast.Assert)]
            self.assertEqual([], lines, '%s: assert at lines %s'
                             % (name, lines))
