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
"""Tests of the scheduler's locks (opie_sched.scheduler.locks): one
reconciler per cloud, the lock directory and the file-lock conflicts
between scheduler hosts."""

import subprocess
import sys
from unittest import mock

import fixtures
import testtools

from opie_sched.scheduler import locks


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
