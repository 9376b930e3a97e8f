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

import subprocess
import sys
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


#: A second process holding the reconciler lock (hold) and a host's lock
#: (lock) on the file driver until its stdin closes.
_HOLDER = """
import sys
from opie_sched.scheduler import locks
coord = locks.Coordinator(sys.argv[1], sys.argv[2])
assert coord.hold('opie-reconciler')
assert coord.worker_id() == sys.argv[2]
with coord.lock('opie-preempt-x', 5):
    print('held', flush=True)
    sys.stdin.read()
"""


class CoordinatorTest(testtools.TestCase):
    """The file backend on one machine, across PROCESSES (the file
    driver's fcntl locks exclude other processes; inside one process tooz
    adds a barrier of its own, which is not what several workers rely on).
    """

    def setUp(self):
        super().setUp()
        self.url = 'file://' + self.useFixture(fixtures.TempDir()).path
        self.me = locks.Coordinator(self.url, 'parent')
        self.addCleanup(self.me.stop)

    def holder(self):
        proc = subprocess.Popen(
            [sys.executable, '-c', _HOLDER, self.url, 'child'],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.addCleanup(self._reap, proc)
        self.assertEqual('held', proc.stdout.readline().strip())
        return proc

    @staticmethod
    def _reap(proc):
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdin.close()
        proc.stdout.close()

    def test_another_process_holds_the_locks(self):
        proc = self.holder()
        self.assertFalse(self.me.hold('opie-reconciler'))
        with testtools.ExpectedException(locks.LockTimeout):
            with self.me.lock('opie-preempt-x', 0.3):
                pass
        self.assertFalse(self.me.is_dead('child'))
        # the holder exits: the kernel releases its locks
        proc.stdin.close()
        self.assertEqual(0, proc.wait(60))
        self.assertTrue(self.me.hold('opie-reconciler'))
        self.assertTrue(self.me.hold('opie-reconciler'))
        with self.me.lock('opie-preempt-x', 5):
            pass
        self.assertTrue(self.me.is_dead('child'))

    def test_a_killed_holder_is_dead_at_once(self):
        proc = self.holder()
        self.assertFalse(self.me.is_dead('child'))
        proc.kill()
        proc.wait(60)
        self.assertTrue(self.me.is_dead('child'))
        self.assertTrue(self.me.hold('opie-reconciler'))

    def test_this_worker_is_alive(self):
        self.assertEqual('parent', self.me.worker_id())
        self.assertFalse(self.me.is_dead('parent'))
        self.assertFalse(self.me.is_dead(''))

    def test_drop(self):
        self.assertTrue(self.me.hold('opie-reconciler'))
        self.me.drop('opie-reconciler')
        self.me.drop('opie-reconciler')
        other = locks.Coordinator(self.url, 'other')
        self.addCleanup(other.stop)
        self.assertTrue(other.hold('opie-reconciler'))


class LockDirTest(testtools.TestCase):
    """The file driver's locks are never created inside site-packages."""

    def setUp(self):
        super().setUp()
        from oslo_config import cfg
        self.conf = cfg.ConfigOpts()
        self.conf.register_opt(cfg.StrOpt('state_path'))
        self.conf.register_opt(cfg.StrOpt('lock_path'),
                               group='oslo_concurrency')
        self.conf.register_opt(cfg.StrOpt('coordination_url'),
                               group='opie_preemption')
        self.conf([])
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def test_nova_default_state_path_is_refused(self):
        import os

        import nova
        pybasedir = os.path.join(os.path.dirname(nova.__file__), '..')
        self.conf.set_override('state_path', pybasedir)
        with testtools.ExpectedException(locks.LockDirError,
                                         '.*lock_path.*coordination_url'):
            locks.default_url(self.conf)

    def test_a_directory_python_imports_from_is_refused(self):
        import os
        import sys
        self.useFixture(fixtures.MockPatchObject(
            sys, 'path', [self.tmp] + sys.path))
        self.conf.set_override('state_path', self.tmp)
        self.assertRaises(locks.LockDirError, locks.default_url, self.conf)
        # nothing created that could shadow a package
        self.assertEqual([], os.listdir(self.tmp))

    def test_install_dirs_are_found_once_per_sys_path(self):
        import os
        import sys
        import sysconfig
        self.conf.set_override('state_path', self.tmp)
        self.useFixture(fixtures.MockPatchObject(sys, 'path',
                                                 list(sys.path)))
        found = self.useFixture(fixtures.MockPatchObject(
            locks, '_find_install_dirs',
            wraps=locks._find_install_dirs)).mock
        locks._install_dirs_cache.clear()
        for _ in range(3):
            locks.default_url(self.conf)
        self.assertEqual(1, found.call_count)
        # a directory added to sys.path counts from then on
        sys.path.insert(0, self.tmp)
        self.assertRaises(locks.LockDirError, locks.default_url, self.conf)
        self.assertEqual(2, found.call_count)
        self.assertIn(os.path.realpath(sysconfig.get_paths()['purelib']),
                      locks._install_dirs())

    def test_site_packages_is_refused(self):
        import sysconfig
        self.conf.set_override('state_path', sysconfig.get_paths()['purelib'])
        self.assertRaises(locks.LockDirError, locks.lock_dir, self.conf)

    def test_lock_path_first(self):
        import os

        import nova
        self.conf.set_override('state_path', os.path.join(
            os.path.dirname(nova.__file__), '..'))
        self.conf.set_override('lock_path', self.tmp, 'oslo_concurrency')
        self.assertEqual('file://%s/opie_sched' % self.tmp,
                         locks.default_url(self.conf))
        self.assertTrue(os.path.isdir(os.path.join(self.tmp, 'opie_sched')))

    def test_state_path_of_the_host(self):
        self.conf.set_override('state_path', self.tmp)
        self.assertEqual('%s/opie_sched/locks' % self.tmp,
                         locks.lock_dir(self.conf))

    def test_coordination_url_wins(self):
        self.conf.set_override('coordination_url', 'redis://r:6379',
                               'opie_preemption')
        self.assertEqual('redis://r:6379', locks.default_url(self.conf))


class FileLockConflictsTest(testtools.TestCase):
    """Several scheduler hosts never share the file driver's locks."""

    def setUp(self):
        super().setUp()
        self.conf = mock.Mock()
        self.conf.host = 'sched1'
        self.conf.opie_preemption.coordination_url = None

    @staticmethod
    def svc(host, up=True, binary='nova-scheduler'):
        return mock.Mock(host=host, binary=binary, deleted=False, up=up)

    def conflicts(self, services):
        return locks.file_lock_conflicts(self.conf, services,
                                         lambda s: s.up)

    def test_other_scheduler_host_up(self):
        services = [self.svc('sched1'), self.svc('sched2'),
                    self.svc('sched3', up=False),
                    self.svc('compute1', binary='nova-compute')]
        self.assertEqual(['sched2'], self.conflicts(services))
        self.conf.opie_preemption.coordination_url = 'file:///x'
        self.assertEqual(['sched2'], self.conflicts(services))
        self.conf.opie_preemption.coordination_url = 'redis://r:6379'
        self.assertEqual([], self.conflicts(services))

    def test_one_host(self):
        self.assertEqual([], self.conflicts([self.svc('sched1')]))


#: opie-scheduler's main() with nova's start-up mocked and the check's
#: answer given in argv[1] ('' = nothing wrong); prints the exit code and
#: whether the service was created.
_SCHEDULER_MAIN = """
import sys
from unittest import mock
from opie_sched.cmd import scheduler as cmd
from opie_sched.scheduler import locks
with mock.patch.object(cmd.config, 'parse_args'), \\
        mock.patch.object(cmd.logging, 'setup'), \\
        mock.patch.object(cmd.objects, 'register_all'), \\
        mock.patch.object(cmd.objects.Service, 'enable_min_version_cache'), \\
        mock.patch.object(cmd.compat, 'reset_executors'), \\
        mock.patch.object(cmd.service, 'serve'), \\
        mock.patch.object(cmd.service, 'wait'), \\
        mock.patch.object(locks, 'startup_error',
                          return_value=sys.argv[1] or None), \\
        mock.patch.object(cmd.service.Service, 'create') as create:
    rc = cmd.main()
print('rc=%s created=%s' % (rc, create.called), flush=True)
"""


class SchedulerStartTest(testtools.TestCase):
    """opie-scheduler does not start when the locks' check says no (a
    subprocess: the console script patches nova for native threads).
    """

    def main(self, error):
        proc = subprocess.run(
            [sys.executable, '-c', _SCHEDULER_MAIN, error],
            capture_output=True, text=True, timeout=120)
        self.assertEqual(0, proc.returncode, proc.stderr)
        return proc.stdout.strip().splitlines()[-1], proc.stderr

    def test_refuses_to_start(self):
        out, err = self.main('scheduler hosts share file locks')
        self.assertEqual('rc=1 created=False', out)
        self.assertIn('opie-scheduler refuses to start: scheduler hosts '
                      'share file locks', err)

    def test_starts(self):
        out, _err = self.main('')
        self.assertEqual('rc=None created=True', out)


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
