"""The scheduling-latency benchmark runs end to end in its quick mode.

``benchmarks/scheduling_latency.py --quick`` starts an all-in-one Nova 34
(10 nodes) and times opie-scheduler against stock nova's scheduler for the
three scenarios of issue 6. It runs in a subprocess: nova's fixtures change
process-wide state (config, databases, logging) that must not leak into the
other unit tests.
"""

import os
import re
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, 'benchmarks', 'scheduling_latency.py')


class TestSchedulingLatencyQuick(unittest.TestCase):

    def test_quick_mode_prints_ratios(self):
        proc = subprocess.run(
            [sys.executable, SCRIPT, '--quick'], cwd=ROOT,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            universal_newlines=True, timeout=240)
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
