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
"""Tests of the repacker service's rounds
(opie_sched.services.repacker.service)."""

import os
import threading
from unittest import mock

import fixtures
import testtools

from opie_sched.services.repacker import executor as ex
from opie_sched.services.repacker import service as svc

from tests.unit.rpm import test_planner
from tests.unit.services.repacker.helpers import FakeCollector
from tests.unit.services.repacker.helpers import FakeConn
from tests.unit.services.repacker.helpers import make_conf


class ServiceTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.hosts = test_planner.BudgetTest.hosts(self)

    def service(self, conn=None, **overrides):
        s = svc.RepackerService(make_conf(self.tmp, **overrides),
                                conn=conn or FakeConn({}),
                                collector=FakeCollector(self.hosts))
        s.start()
        self.addCleanup(s.stop)
        return s

    def test_dry_run_prints_the_plan(self):
        out = []
        s = self.service(dry_run=True)
        s.out = out.append
        period = s.run_once()
        self.assertEqual('ok', period.status, period.error)
        self.assertEqual(['p1', 'p2', 'n2'],
                         [o.move.server for o in period.outcomes])
        self.assertEqual({ex.PLANNED}, {o.result for o in period.outcomes})
        self.assertIn('host3', out[0])

    def test_period_migrates_within_budget(self):
        conn = FakeConn({'p1': 'host1', 'p2': 'host2', 'n2': 'host2'})
        period = self.service(conn, max_migrations=2,
                              poll_interval=0).run_once()
        self.assertEqual([ex.DONE, ex.DONE],
                         [o.result for o in period.outcomes])
        self.assertEqual({'p1': 'host3', 'p2': 'host3', 'n2': 'host2'},
                         conn.compute.hosts)

    def test_two_replicas_never_act_at_once(self):
        a, b = self.service(), self.service()
        lock = a.coordinator.get_lock(svc.LOCK_NAME)
        self.assertTrue(lock.acquire(blocking=False))
        try:
            self.assertEqual('locked', b.run_once(dry_run=True).status)
        finally:
            lock.release()
        self.assertEqual('ok', b.run_once(dry_run=True).status)
        self.assertTrue(os.path.isdir(os.path.join(self.tmp, 'locks')))

    def test_daemon_samples_between_periods(self):
        s = self.service(dry_run=True, interval=0.05, sample_interval=0.01)
        calls = []
        enough = threading.Event()

        class Counting(FakeCollector):
            def sample(inner, interval):
                calls.append(interval)
                if len(calls) >= 8:
                    enough.set()
                return self.hosts

        s._collector = Counting(self.hosts)
        periods = []
        run_once = s.run_once
        s.run_once = lambda: periods.append(run_once())
        self.assertEqual(0.01, s.round_interval())
        daemon = s.service('opie-repacker')
        daemon.start()
        self.assertTrue(enough.wait(120))
        daemon.stop()
        self.assertIsNone(s.coordinator)  # the daemon left the backend
        self.assertGreaterEqual(len(calls), 8)
        self.assertTrue(1 <= len(periods) < len(calls), (periods, calls))
        self.assertEqual({0.01}, set(calls))

    def test_round_is_a_period_once_per_interval(self):
        s = self.service(dry_run=True, interval=10.0, sample_interval=2.0)
        kinds = []
        s.run_once = lambda: kinds.append('period')
        s.sample = lambda: kinds.append('sample')
        clock = iter([100.0, 102.0, 104.0, 109.9, 110.0, 112.0, 120.5])
        with mock.patch.object(svc.time, 'monotonic', lambda: next(clock)):
            for _ in range(7):
                s.run_round()
        self.assertEqual(['period', 'sample', 'sample', 'sample', 'period',
                          'sample', 'period'], kinds)

    def test_round_interval(self):
        for interval, sample, tick in ((600.0, 60.0, 60.0),
                                       (30.0, 60.0, 30.0),
                                       (600.0, 0.0, 600.0),
                                       (0.0, 0.0, 1.0)):
            s = svc.RepackerService(make_conf(self.tmp, interval=interval,
                                              sample_interval=sample))
            self.assertEqual(tick, s.round_interval())

    def test_a_failing_round_is_logged(self):
        s = self.service(dry_run=True)

        def broken():
            raise RuntimeError('collector broke')

        s.run_once = broken
        log = self.useFixture(fixtures.FakeLogger())
        s.run_round()  # does not raise
        self.assertIn('Repacker round failed', log.output)
        self.assertIn('collector broke', log.output)

    def test_bad_policy_is_an_error_period(self):
        s = self.service(underload_threshold=0.95)
        period = s.run_once(dry_run=True)
        self.assertEqual('error', period.status)
        self.assertIn('below the overload', period.error)
