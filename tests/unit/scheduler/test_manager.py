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
"""Tests of the scheduler manager (opie_sched.scheduler.manager).

The manager's book of alternates returned per instance (issue 30,
hole 6): which report of a built server names an alternate the conductor
claimed without the scheduler. The reconciler inside opie-scheduler: one
per cloud, interval honoured, a failing round never takes the scheduler
down; the renewal of reservations.
"""

from unittest import mock

import fixtures
import testtools

from opie_sched.scheduler import locks
from opie_sched.scheduler import manager


class AlternatesBookTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.now = 0.0
        self.book = manager._AlternatesBook(clock=lambda: self.now)
        self.alt = object()
        self.book.add('i1', 'host1', {'host2': self.alt}, False)

    def test_report_from_the_chosen_host_drops_the_entry(self):
        self.assertIsNone(self.book.landed('i1', 'host1'))
        # a later report (a move) is not taken for a reschedule
        self.assertIsNone(self.book.landed('i1', 'host2'))

    def test_report_from_an_alternate_is_a_reschedule(self):
        self.assertEqual((self.alt, False), self.book.landed('i1', 'host2'))
        self.assertIsNone(self.book.landed('i1', 'host2'))

    def test_report_from_another_host_keeps_waiting(self):
        self.assertIsNone(self.book.landed('i1', 'source'))
        self.assertEqual((self.alt, False), self.book.landed('i1', 'host2'))

    def test_unknown_instance(self):
        self.assertIsNone(self.book.landed('other', 'host2'))

    def test_entries_expire(self):
        self.now = manager._AlternatesBook.TTL + 1
        self.assertIsNone(self.book.landed('i1', 'host2'))

    def test_oldest_entries_go_beyond_the_size(self):
        with mock.patch.object(manager._AlternatesBook, 'SIZE', 2):
            self.book.add('i2', 'host1', {'host2': self.alt}, True)
            self.book.add('i3', 'host1', {'host2': self.alt}, False)
        self.assertIsNone(self.book.landed('i1', 'host2'))
        self.assertEqual((self.alt, True), self.book.landed('i2', 'host2'))


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
        self.shared = self.useFixture(fixtures.MockPatchObject(
            locks, 'check_shared_backend', return_value=[])).mock
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

    def test_shared_file_lock_is_an_error_each_period(self):
        self.coord.hold.return_value = True
        self.shared.return_value = ['sched2']
        self.useFixture(fixtures.MockPatchObject(
            locks, 'default_url', return_value='file:///x'))
        for at in (1000, 1005):
            with self.assertLogs('opie_sched.scheduler.manager',
                                 'ERROR') as logs:
                self.tick(at)
            self.assertIn('several hosts (this one, sched2)',
                          logs.output[0])
        # it still runs: stopping the scheduler would stop scheduling
        self.assertEqual(2, self.mgr.reconciler.run_once.call_count)

    def test_disabled(self):
        self.useFixture(fixtures.MockPatchObject(
            manager.CONF.opie_reconciler, 'run_in_scheduler', False))
        self.tick(1000)
        self.coord.hold.assert_not_called()


class RenewReservationsTest(testtools.TestCase):
    """A live request renews its reservations every third of the lease."""

    def setUp(self):
        super().setUp()
        self.mgr = manager.OpieSchedulerManager.__new__(
            manager.OpieSchedulerManager)
        self.renew = self.useFixture(fixtures.MockPatch(
            'opie_sched.scheduler.reservations.renew')).mock
        self.clock = [1000.0]
        self.useFixture(fixtures.MockPatch(
            'opie_sched.scheduler.manager.time.monotonic',
            side_effect=lambda: self.clock[0]))
        self.useFixture(fixtures.MockPatchObject(
            manager.CONF.opie_preemption, 'reservation_timeout', 300))
        victim = mock.Mock(uuid='v1')
        plan = mock.Mock(victims=[(victim, 1.0)])
        self.view = mock.Mock(
            pending=[manager._Pending(plan, 'cell1', 'p')],
            renewed_at=1000.0, request_id='req-1', ctx=mock.sentinel.ctx)

    def test_renewed_after_a_third_of_the_lease(self):
        self.clock[0] = 1099.0
        self.mgr._renew_reservations(self.view)
        self.renew.assert_not_called()
        self.clock[0] = 1100.0
        self.mgr._renew_reservations(self.view)
        self.renew.assert_called_once_with(mock.sentinel.ctx, 'cell1',
                                           ['v1'], 'req-1')
        self.clock[0] = 1150.0
        self.mgr._renew_reservations(self.view)
        self.assertEqual(1, self.renew.call_count)

    def test_nothing_reserved(self):
        self.view.pending = []
        self.clock[0] = 5000.0
        self.mgr._renew_reservations(self.view)
        self.renew.assert_not_called()

    def test_error_is_logged(self):
        self.renew.side_effect = RuntimeError('db down')
        self.clock[0] = 2000.0
        with self.assertLogs('opie_sched.scheduler.manager', 'ERROR'):
            self.mgr._renew_reservations(self.view)
