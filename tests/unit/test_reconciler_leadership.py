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
"""The reconciler inside opie-scheduler: one per cloud, interval honoured,
a failing round never takes the scheduler down.
"""

from unittest import mock

import fixtures
import testtools

from opie_sched.scheduler import locks
from opie_sched.scheduler import manager


class ReconcilerPeriodicTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.mgr = manager.OpieSchedulerManager.__new__(
            manager.OpieSchedulerManager)
        self.mgr.reconciler = mock.Mock()
        self.useFixture(fixtures.MockPatch(
            'nova.scheduler.client.report.report_client_singleton',
            return_value=mock.sentinel.placement))
        self.mgr._opie_last_reconcile = None
        self.coord = mock.Mock()
        self.useFixture(fixtures.MockPatchObject(
            locks, 'coordinator', return_value=self.coord))
        self.clock = [1000.0]
        self.useFixture(fixtures.MockPatch(
            'opie_sched.scheduler.manager.time.monotonic',
            side_effect=lambda: self.clock[0]))
        conf = manager.CONF.opie_reconciler
        self.useFixture(fixtures.MockPatchObject(conf, 'interval', 5))
        self.useFixture(fixtures.MockPatchObject(conf, 'run_in_scheduler',
                                                 True))

    def tick(self, at):
        self.clock[0] = at
        self.mgr._opie_reconcile(mock.sentinel.ctx)

    def test_interval_below_a_minute_is_honoured(self):
        self.coord.hold.return_value = True
        for at in (1000, 1003, 1005, 1009, 1010):
            self.tick(at)
        # runs at 1000, 1005 and 1010 only
        self.assertEqual(3, self.mgr.reconciler.run_once.call_count)
        self.mgr.reconciler.run_once.assert_called_with(
            mock.sentinel.ctx, placement=mock.sentinel.placement)
        self.coord.hold.assert_called_with(locks.RECONCILER_LOCK)

    def test_only_the_lock_holder_runs(self):
        self.coord.hold.return_value = False
        self.tick(1000)
        self.tick(1010)
        self.mgr.reconciler.run_once.assert_not_called()
        self.coord.hold.return_value = True
        self.tick(1020)
        self.assertEqual(1, self.mgr.reconciler.run_once.call_count)

    def test_a_failing_round_is_logged_not_raised(self):
        self.coord.hold.return_value = True
        self.mgr.reconciler.run_once.side_effect = RuntimeError('db down')
        with self.assertLogs('opie_sched.scheduler.manager', 'ERROR'):
            self.tick(1000)

    def test_disabled(self):
        self.useFixture(fixtures.MockPatchObject(
            manager.CONF.opie_reconciler, 'run_in_scheduler', False))
        self.tick(1000)
        self.coord.hold.assert_not_called()


class CoordinatorTest(testtools.TestCase):
    """The file backend on one machine: one holder of a held lock."""

    def test_hold_is_exclusive_across_coordinators(self):
        path = self.useFixture(fixtures.TempDir()).path
        a = locks.Coordinator('file://' + path, 'a')
        b = locks.Coordinator('file://' + path, 'b')
        self.addCleanup(a.stop)
        self.addCleanup(b.stop)
        self.assertTrue(a.hold('opie-reconciler'))
        self.assertTrue(a.hold('opie-reconciler'))
        self.assertFalse(b.hold('opie-reconciler'))
        a.drop('opie-reconciler')
        self.assertTrue(b.hold('opie-reconciler'))

    def test_lock_times_out(self):
        path = self.useFixture(fixtures.TempDir()).path
        a = locks.Coordinator('file://' + path, 'a')
        b = locks.Coordinator('file://' + path, 'b')
        self.addCleanup(a.stop)
        self.addCleanup(b.stop)
        with a.lock('opie-preempt-x', 1):
            with testtools.ExpectedException(locks.LockTimeout):
                with b.lock('opie-preempt-x', 0.2):
                    pass
        with b.lock('opie-preempt-x', 1):
            pass
