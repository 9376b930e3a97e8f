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
"""Locks shared by every scheduler worker and scheduler host (tooz).

* ``opie-preempt-<resource provider uuid>``: held while one worker reads a
  host's allocations, chooses victims and records their reservation, so a
  second worker placing on the same host sees the first one's victims as
  leaving and plans only for what is still missing.
* ``opie-reconciler``: the reconciler's leadership. The worker holding it
  runs the reconciler; it keeps the lock while it lives (a file lock is
  released by the kernel when the process dies; Redis, MySQL and etcd
  locks expire with the holder's heartbeat), and any other worker takes
  over at its next period.

The backend is ``[opie_preemption] coordination_url``; unset, tooz's file
driver under ``$state_path/opie_sched/locks`` serves the workers of one
scheduler host.
"""

import contextlib
import os
import socket
import threading

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

RECONCILER_LOCK = 'opie-reconciler'
#: Seconds a worker or the reconciler waits for a host's preemption lock.
HOST_LOCK_TIMEOUT = 60.0


class LockTimeout(Exception):
    """A lock could not be taken in time."""


def host_lock_name(rp_uuid):
    """Name of the preemption lock of one resource provider (compute
    node).
    """
    return 'opie-preempt-%s' % rp_uuid


def default_url(conf):
    """``[opie_preemption] coordination_url``, or the file driver's URL
    under ``$state_path`` (the directory is created).
    """
    url = conf.opie_preemption.coordination_url
    if url:
        return url
    path = os.path.join(conf.state_path, 'opie_sched', 'locks')
    os.makedirs(path, exist_ok=True)
    return 'file://' + path


class Coordinator:
    """One tooz coordinator per process, with a process-local lock in front
    of every named lock (tooz locks are per coordinator, not per thread, on
    some backends).

    :param url: tooz backend URL.
    :param member_id: this process's member id (default host:pid).
    """

    def __init__(self, url, member_id=None):
        self.url = url
        self.member_id = member_id or '%s:%d' % (socket.gethostname(),
                                                 os.getpid())
        self._coordinator = None
        self._start_lock = threading.Lock()
        self._local = {}
        self._local_lock = threading.Lock()
        self._held = {}

    def _tooz(self):
        with self._start_lock:
            if self._coordinator is None:
                from tooz import coordination
                coord = coordination.get_coordinator(
                    self.url, self.member_id.encode())
                coord.start(start_heart=True)
                self._coordinator = coord
            return self._coordinator

    def _local_for(self, name):
        with self._local_lock:
            return self._local.setdefault(name, threading.Lock())

    @contextlib.contextmanager
    def lock(self, name, timeout):
        """Hold the named lock across processes and hosts.

        :param timeout: seconds to wait for it.
        :raises LockTimeout: when it could not be taken in time.
        """
        local = self._local_for(name)
        if not local.acquire(timeout=timeout):
            raise LockTimeout(name)
        try:
            tlock = self._tooz().get_lock(name.encode())
            if not tlock.acquire(blocking=timeout):
                raise LockTimeout(name)
            try:
                yield
            finally:
                try:
                    tlock.release()
                except Exception:
                    LOG.exception('Could not release lock %s', name)
        finally:
            local.release()

    def hold(self, name):
        """Take the named lock without waiting and keep it until
        :meth:`drop` or the end of the process.

        :returns: True when this process holds it (now or already).
        """
        if name in self._held:
            return True
        tlock = self._tooz().get_lock(name.encode())
        try:
            taken = tlock.acquire(blocking=False)
        except Exception:
            LOG.exception('Could not try lock %s', name)
            return False
        if taken:
            self._held[name] = tlock
        return taken

    def drop(self, name):
        """Release a lock taken with :meth:`hold` (no-op when not held)."""
        tlock = self._held.pop(name, None)
        if tlock is not None:
            try:
                tlock.release()
            except Exception:
                LOG.exception('Could not release lock %s', name)

    def stop(self):
        """Release held locks and leave the backend."""
        for name in list(self._held):
            self.drop(name)
        with self._start_lock:
            if self._coordinator is not None:
                try:
                    self._coordinator.stop()
                except Exception:
                    LOG.exception('Could not stop the tooz coordinator')
                self._coordinator = None


_coordinators = {}
_coordinators_lock = threading.Lock()


def coordinator(conf):
    """The process's :class:`Coordinator` for ``conf``'s backend."""
    url = default_url(conf)
    with _coordinators_lock:
        coord = _coordinators.get(url)
        if coord is None:
            coord = _coordinators[url] = Coordinator(url)
        return coord
