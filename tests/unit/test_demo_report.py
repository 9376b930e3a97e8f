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
"""The demo's report compares both replays over one window."""

import testtools

from opie_sched.demo import replay
from opie_sched.demo import report


def result(label, samples):
    r = replay.ReplayResult(label, capacity_vcpus=10)
    r.samples = [replay.Sample(*s) for s in samples]
    return r


class UtilisationWindowTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        # Same normal load (5 vCPU for 10 s); backfilling keeps 5 vCPU of
        # preemptibles busy until t = 20 s.
        self.with_pre = result('with', [(0, 5, 5), (10, 0, 5), (20, 0, 0)])
        self.baseline = result('normal', [(0, 5, 0), (10, 0, 0)])

    def test_own_span_by_default(self):
        # 5 of 10 vCPU over 0..10 s; (10 + 5) of 10 vCPU-s over 0..20 s.
        self.assertEqual(0.5, self.baseline.utilisation())
        self.assertEqual(0.75, self.with_pre.utilisation())
        self.assertEqual(0.25, self.with_pre.utilisation(('normal',)))

    def test_common_window(self):
        window = report.common_window([self.with_pre, self.baseline])
        self.assertEqual((0, 20), window)
        self.assertEqual(0.25, self.baseline.utilisation(('normal',),
                                                         window=window))
        self.assertEqual(0.25, self.with_pre.utilisation(('normal',),
                                                         window=window))
        self.assertEqual(0.75, self.with_pre.utilisation(window=window))

    def test_summary_uses_the_common_window(self):
        text = report.summary(self.with_pre, self.baseline)
        self.assertIn('adds 50.0 points', text)
        normal = [line for line in text.splitlines()
                  if line.startswith('vCPU utilisation, normal')][0]
        self.assertEqual(['25.0', '%', '25.0', '%'], normal.split()[-4:])

    def test_unknown_preemption_cost_is_not_a_number(self):
        # a remote cloud does not publish the preemption cost
        self.with_pre.preemption_cost = None
        text = report.summary(self.with_pre, self.baseline)
        row = [line for line in text.splitlines()
               if line.startswith('total preemption cost')][0]
        self.assertEqual(['n/a', '0'], row.split()[-2:])
