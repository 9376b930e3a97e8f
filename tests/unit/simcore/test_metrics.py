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
"""Tests of the simulation metrics (opie_sched.simcore.metrics)."""

import numpy as np
import testtools

from opie_sched.simcore import metrics
from opie_sched.simulator import engine


class SeriesTest(testtools.TestCase):

    def test_record_keeps_one_sample_per_time(self):
        s = metrics.Series(('t', 'x'))
        s.record((0.0, 1))
        s.record((1.0, 2))
        s.record((1.0, 5))       # same time: replaces
        s.record((2.0, 3))
        self.assertEqual(3, len(s))
        self.assertEqual([(0.0, 1), (1.0, 5), (2.0, 3)], s.rows())
        arrays = s.arrays()
        self.assertEqual([0.0, 1.0, 2.0], arrays['t'].tolist())
        self.assertEqual([1.0, 5.0, 3.0], arrays['x'].tolist())
        self.assertEqual(3, s.last('x'))

    def test_append_and_errors(self):
        s = metrics.Series(('a', 'b'))
        s.append(({'x': 1}, 2.5))
        s.append(({}, 0.0))
        self.assertEqual([{'x': 1}, {}], s.column('a'))
        self.assertRaises(KeyError, s.column, 'c')
        self.assertRaises(ValueError, s.append, (1,))
        self.assertRaises(ValueError, metrics.Series, ())
        self.assertRaises(ValueError, metrics.Series, ('a', 'a'))
        empty = metrics.Series(('t',))
        self.assertIsNone(empty.last('t'))
        self.assertEqual(0, empty.arrays()['t'].size)


class StepIntegralTest(testtools.TestCase):
    """One integral for the simulator's and the demo's utilisation."""

    def test_each_sample_holds_until_the_next_the_last_until_end(self):
        t, v = [10.0, 20.0, 30.0], [4.0, 2.0, 1.0]
        # 4 x 10 + 2 x 10 + 1 x 5
        self.assertEqual(65.0, metrics.step_integral(t, v, 10.0, 35.0))
        # zero before the first sample; clipped to the window
        self.assertEqual(65.0, metrics.step_integral(t, v, 0.0, 35.0))
        self.assertEqual(4.0 * 5 + 2.0 * 3,
                         metrics.step_integral(t, v, 15.0, 23.0))
        self.assertEqual(0.0, metrics.step_integral(t, v, 35.0, 35.0))
        self.assertEqual(0.0, metrics.step_integral([], [], 0.0, 9.0))
        self.assertRaises(ValueError, metrics.step_integral, t, v[:2],
                          0.0, 1.0)

    def test_demo_and_simulator_agree(self):
        from opie_sched.demo import replay
        samples = [(0.0, 3.0, 1.0), (7.0, 5.0, 4.0), (12.0, 1.0, 0.0),
                   (20.0, 0.0, 0.0)]
        demo = replay.ReplayResult('demo', capacity_vcpus=8)
        demo.samples = [replay.Sample(*s) for s in samples]
        sim = engine.SimResult('sim', 'p', n_hosts=1, capacity_vcpus=8,
                               horizon=20.0)
        sim.series = {
            't': np.array([s[0] for s in samples]),
            'normal_vcpus': np.array([s[1] for s in samples]),
            'preemptible_vcpus': np.array([s[2] for s in samples])}
        # (3 + 1) x 7 + (5 + 4) x 5 + 1 x 8 = 81 vCPU-s over 20 s x 8 vCPU
        self.assertEqual(81.0 / 160.0, demo.utilisation())
        for kinds in (('normal', 'preemptible'), ('normal',),
                      ('preemptible',)):
            for window in ((0.0, 20.0), (5.0, 15.0)):
                self.assertAlmostEqual(
                    sim.utilisation(kinds, *window),
                    demo.utilisation(kinds, window=window), places=12)
