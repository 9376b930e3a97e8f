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

from opie_sched.cmd import demo
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

    def test_report_uses_the_common_window(self):
        self.assertIn('adds 50.0 points',
                      report.conclusion(self.with_pre, self.baseline))
        text = demo.Results([self.with_pre, self.baseline]).human_readable()
        normal = [line for line in text.splitlines()
                  if 'vCPU utilisation, normal' in line][0]
        self.assertEqual(['25.0', '25.0'], normal.split()[-2:])

    def test_unknown_preemption_cost_is_not_a_number(self):
        # a remote cloud does not publish the preemption cost
        self.with_pre.preemption_cost = None
        text = demo.Results([self.with_pre, self.baseline]).human_readable()
        row = [line for line in text.splitlines()
               if 'total preemption cost' in line][0]
        self.assertEqual(['n/a', '0'], row.split()[-2:])


LARGE = (4, 8000, 80)


def outcome(job, t, *hosts):
    return replay.NormalOutcome(job, t, LARGE, len(hosts), tuple(hosts))


class NormalOutcomesTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.with_pre = result('with backfilling', [(0, 0, 0), (1, 0, 0)])
        self.baseline = result('normal only', [(0, 0, 0), (1, 0, 0)])

    def test_identical(self):
        for r in (self.with_pre, self.baseline):
            r.normal_outcomes = [outcome(1, 0, 'host1'),
                                 outcome(2, 60, 'host2', None)]
        self.assertEqual((2, 2, []), report.compare_normal(self.with_pre,
                                                           self.baseline))
        self.assertIn('identical: each of the 2 normal requests',
                      report.comparison_text(self.with_pre, self.baseline))

    def test_each_difference_is_named(self):
        self.with_pre.normal_outcomes = [outcome(1, 0, 'host1'),
                                         outcome(2, 3725, None)]
        self.baseline.normal_outcomes = [outcome(1, 0, 'host1'),
                                         outcome(2, 3725, 'host2')]
        same, total, diff = report.compare_normal(self.with_pre,
                                                  self.baseline)
        self.assertEqual((1, 2), (same, total))
        text = report.comparison_text(self.with_pre, self.baseline)
        self.assertIn('1 of 2 normal requests differ', text)
        self.assertIn('job 2 at t=1:02:05: FAILED with backfilling, host2 '
                      'without', text)

    def test_request_missing_from_one_replay_differs(self):
        self.with_pre.normal_outcomes = [outcome(1, 0, 'host1')]
        same, total, diff = report.compare_normal(self.with_pre,
                                                  self.baseline)
        self.assertEqual((0, 1), (same, total))
        self.assertIn('host1 with backfilling, not replayed without',
                      report.comparison_text(self.with_pre, self.baseline))


def failure(fault, room, count=1, failed=1):
    return replay.NormalFailure('j7', 3725, LARGE, count, failed, fault,
                                room)


class FailureReasonTest(testtools.TestCase):

    NO_CANDIDATES = 'No valid host was found. '

    def test_no_allocation_candidates_short_of_one_resource(self):
        text = report.failure_reason(failure(self.NO_CANDIDATES, {
            'host1': (2, 12000, 120), 'host2': (3, 9000, 90)}))
        self.assertTrue(text.startswith(
            'no allocation candidates: no host had 4 vCPU / 8000 MB / 80 GB '
            'free in the normal state'), text)
        self.assertIn('short of vCPU on every host', text)
        self.assertIn('most room: host2 3 vCPU / 9000 MB / 90 GB, host1 2 '
                      'vCPU / 12000 MB / 120 GB', text)

    def test_fragmented_normal_state(self):
        text = report.failure_reason(failure(self.NO_CANDIDATES, {
            'host1': (8, 4000, 200), 'host2': (2, 16000, 200)}))
        self.assertIn('normal state is fragmented', text)

    def test_filters_refused_the_hosts(self):
        text = report.failure_reason(failure(
            'No valid host was found. There are not enough hosts '
            'available.', {'host1': (8, 16000, 200)}))
        self.assertTrue(text.startswith(
            'every host Placement offered was refused by the scheduler\'s '
            'filters'), text)
        self.assertIn('room for it afterwards on host1', text)

    def test_other_fault_and_no_placement(self):
        self.assertEqual('Build of instance x aborted', report.failure_reason(
            failure('Build of instance x aborted', None)))
        self.assertEqual('no fault recorded',
                         report.failure_reason(failure(None, None)))

    def test_lines_and_report_name_every_failure(self):
        r = result('with backfilling', [(0, 4, 0), (10, 0, 0)])
        r.failures = [failure(self.NO_CANDIDATES, None),
                      failure(self.NO_CANDIDATES, None, count=3, failed=2)]
        lines = report.failure_lines(r)
        self.assertEqual(
            ['job j7 at t=1:02:05, 1 x 4 vCPU / 8000 MB / 80 GB: no '
             'allocation candidates: no host had 4 vCPU / 8000 MB / 80 GB '
             'free in the normal state',
             'job j7 at t=1:02:05, 3 x 4 vCPU / 8000 MB / 80 GB (2 failed): '
             'no allocation candidates: no host had 4 vCPU / 8000 MB / 80 '
             'GB free in the normal state'], lines)
        self.assertEqual(['with backfilling: ' + line for line in lines],
                         report.failure_report([r]))

    def test_failure_named_once_when_alike_in_every_replay(self):
        a = result('with backfilling', [(0, 4, 0), (10, 0, 0)])
        b = result('normal only', [(0, 4, 0), (10, 0, 0)])
        self.assertEqual(['none'], report.failure_report([a, b]))
        a.failures = [failure(self.NO_CANDIDATES, None)]
        b.failures = [failure(self.NO_CANDIDATES, None)]
        [line] = report.failure_report([a, b])
        self.assertTrue(line.startswith('every replay: job j7 at t=1:02:05'),
                        line)
        # a different reason: named per replay
        b.failures = [failure(self.NO_CANDIDATES, {'host1': (8, 0, 0)})]
        lines = report.failure_report([a, b])
        self.assertEqual(2, len(lines))
        self.assertTrue(lines[0].startswith('with backfilling: job j7'))
        self.assertTrue(lines[1].startswith('normal only: job j7'))
        self.assertTrue(report.failure_report([a])[0].startswith(
            'with backfilling: job j7'))
