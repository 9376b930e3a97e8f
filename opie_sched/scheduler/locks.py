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
* ``opie-reconciler``: the reconciler's leadership
  (:class:`opie_sched.common.coordination.Leadership`). The worker holding
  it runs the reconciler; its ownership is re-checked with the backend at
  every round, so after a lost session (Redis key or etcd lease expired)
  the old holder stops and only the new one runs. A file lock is released
  by the kernel when the process dies; Redis and etcd locks expire with
  the holder's heartbeat; any other worker takes over at its next period.
* ``opie-worker-<member id>``: every worker that reserves victims holds
  its own liveness lock while it lives (:meth:`Coordinator.worker_id`); its
  member id is recorded with the victims it reserves. When that lock can
  be taken by someone else, the worker is dead (process gone, or backend
  session expired) and the reconciler releases its reservations at once,
  without waiting for ``reservation_timeout``.

The backend is ``[opie_preemption] coordination_url``; unset, tooz's file
driver in a directory of this machine (:func:`lock_dir`) serves the
workers of ONE scheduler host: with scheduler services on several hosts
and no ``coordination_url``, ``opie-scheduler`` refuses to start
(:func:`file_lock_conflicts`).
"""

import contextlib
import os
import socket
import sysconfig
import threading
import uuid

from oslo_log import log as logging

from opie_sched.common import leadership as coordination

LOG = logging.getLogger(__name__)

RECONCILER_LOCK = 'opie-reconciler'
#: Seconds a worker or the reconciler waits for a host's preemption lock.
HOST_LOCK_TIMEOUT = 60.0
#: Binary name of the scheduler services (opie-scheduler registers as it).
SCHEDULER_BINARY = 'nova-scheduler'


class LockTimeout(Exception):
    """A lock could not be taken in time."""


class LockDirError(Exception):
    """No safe directory for the file driver's locks."""


def host_lock_name(rp_uuid):
    """Name of the preemption lock of one resource provider (compute
    node).
    """
    return 'opie-preempt-%s' % rp_uuid


def worker_lock_name(member_id):
    """Name of the liveness lock of one worker (its member id)."""
    return 'opie-worker-%s' % member_id


_install_dirs_cache = {}


def _install_dirs():
    """Directories Python imports from (site-packages, dist-packages, the
    ``sys.path`` entries) and Nova's ``pybasedir``, real paths: a
    directory created below one of them can shadow a package.

    Computed once per value of ``sys.path`` (``sysconfig.get_paths()`` and
    the real paths cost about a millisecond, and :func:`coordinator` asks
    for them at every preemption decision).
    """
    import sys
    key = tuple(sys.path)
    dirs = _install_dirs_cache.get(key)
    if dirs is None:
        dirs = frozenset(_find_install_dirs(sys.path))
        _install_dirs_cache.clear()
        _install_dirs_cache[key] = dirs
    return dirs


def _find_install_dirs(path_entries):
    dirs = set()
    for key in ('purelib', 'platlib'):
        path = sysconfig.get_paths().get(key)
        if path:
            dirs.add(os.path.realpath(path))
    for entry in path_entries:
        if entry and os.path.isdir(entry):
            dirs.add(os.path.realpath(entry))
    import nova
    dirs.add(os.path.realpath(os.path.join(os.path.dirname(nova.__file__),
                                           os.pardir)))
    return dirs


def _inside(path, dirs):
    path = os.path.realpath(path)
    return any(path == d or path.startswith(d + os.sep) for d in dirs)


def lock_dir(conf):
    """The file driver's lock directory (not created).

    Rule: ``[oslo_concurrency] lock_path``/opie_sched when set (the lock
    directory every OpenStack service of the host already shares), else
    ``$state_path/opie_sched/locks`` -- but never inside a Python install
    directory: Nova's default ``state_path`` is ``$pybasedir``
    (site-packages), where a ``opie_sched/locks`` directory would shadow
    the installed package.

    :raises LockDirError: when neither is usable; the message names the
        options to set.
    """
    lock_path = None
    try:
        lock_path = conf.oslo_concurrency.lock_path
    except Exception:  # the group is not registered on this conf
        lock_path = None
    if lock_path:
        path = os.path.join(lock_path, 'opie_sched')
    else:
        path = os.path.join(conf.state_path, 'opie_sched', 'locks')
    if _inside(path, _install_dirs()):
        raise LockDirError(
            'The opie_sched lock directory would be %s, inside a Python '
            'install directory (nova\'s default state_path is its '
            'package directory). Set [oslo_concurrency] lock_path (or '
            '[DEFAULT] state_path) to a directory of this host, or '
            '[opie_preemption] coordination_url to a shared tooz backend.'
            % path)
    return path


def default_url(conf):
    """``[opie_preemption] coordination_url``, or the file driver's URL
    in :func:`lock_dir` (the directory is created).

    :raises LockDirError: see :func:`lock_dir`.
    """
    url = conf.opie_preemption.coordination_url
    if url:
        return url
    path = lock_dir(conf)
    os.makedirs(path, exist_ok=True)
    return 'file://' + path


def is_file_url(url):
    """True for tooz's file driver (locks of one machine only)."""
    return url.startswith('file:')


def file_lock_conflicts(conf, services, is_up, host=None):
    """Other hosts whose scheduler services are up while the locks are
    the file driver's (correct for ONE scheduler host only).

    :param services: nova ``Service`` objects (binary ``nova-scheduler``).
    :param is_up: callable telling whether a service is up.
    :param host: this host (default ``conf.host``).
    :returns: sorted list of host names; empty when the backend is shared
        (``coordination_url`` set to a non-file URL) or no other host runs
        a scheduler.
    """
    url = conf.opie_preemption.coordination_url
    if url and not is_file_url(url):
        return []
    host = host or conf.host
    return sorted({s.host for s in services
                   if s.binary == SCHEDULER_BINARY and s.host != host
                   and not s.deleted and is_up(s)})


class Coordinator:
    """One tooz coordinator per process, with a process-local lock in front
    of every named lock (tooz locks are per coordinator, not per thread, on
    some backends).

    :param url: tooz backend URL.
    :param member_id: this process's member id (default
        ``host:pid:random``, unique even when a pid is reused).
    """

    def __init__(self, url, member_id=None):
        self.url = url
        self.member_id = member_id or '%s:%d:%s' % (
            socket.gethostname(), os.getpid(), uuid.uuid4().hex[:8])
        self._coordinator = None
        self._start_lock = threading.Lock()
        self._local = {}
        self._local_lock = threading.Lock()
        self._held = {}
        self._held_lock = threading.Lock()

    def _tooz(self):
        with self._start_lock:
            if self._coordinator is None:
                self._coordinator = coordination.start_coordinator(
                    self.url, self.member_id)
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

    def _leadership(self, name):
        with self._held_lock:
            lead = self._held.get(name)
            if lead is None:
                lead = self._held[name] = coordination.Leadership(
                    self._tooz, name, self.member_id)
            return lead

    def hold(self, name):
        """Take the named lock without waiting, or confirm with the backend
        that this process still holds it; keep it until :meth:`drop` or
        the end of the process.

        :returns: True when this process holds it now; False when another
            member does, this process lost it (session expired) or the
            backend failed (logged).
        """
        return self._leadership(name).check()

    def drop(self, name):
        """Release a lock taken with :meth:`hold` (no-op when not held)."""
        with self._held_lock:
            lead = self._held.pop(name, None)
        if lead is not None:
            lead.release()

    def worker_id(self):
        """This worker's member id, its liveness lock held (taken on first
        use, re-checked at every call).

        :returns: the member id (str), or '' when the liveness lock could
            not be held (then only ``reservation_timeout`` ends this
            worker's reservations).
        """
        if self.hold(worker_lock_name(self.member_id)):
            return self.member_id
        return ''

    def is_dead(self, member_id):
        """True when the worker ``member_id`` is known dead: its liveness
        lock is free (taken and released at once here). A worker of this
        process, or one whose lock is held, is alive; a backend error
        means "not known dead".
        """
        if not member_id:
            return False
        if member_id == self.member_id:
            return False
        try:
            tlock = self._tooz().get_lock(
                worker_lock_name(member_id).encode())
            if not tlock.acquire(blocking=False):
                return False
            tlock.release()
        except Exception:
            LOG.exception('Could not check whether worker %s lives',
                          member_id)
            return False
        return True

    def stop(self):
        """Release held locks and leave the backend."""
        with self._held_lock:
            names = list(self._held)
        for name in names:
            self.drop(name)
        with self._start_lock:
            if self._coordinator is not None:
                try:
                    self._coordinator.stop()
                except Exception:
                    LOG.exception('Could not stop the tooz coordinator')
                self._coordinator = None


def scheduler_services(ctx):
    """Every cell's ``nova-scheduler`` Service records (cells that do not
    answer are skipped, logged).
    """
    from nova import context as nova_context
    from nova import objects
    results = nova_context.scatter_gather_all_cells(
        ctx, objects.ServiceList.get_by_binary, SCHEDULER_BINARY)
    services = []
    for cell_uuid, result in results.items():
        if nova_context.is_cell_failure_sentinel(result):
            LOG.warning('Cell %s did not list its scheduler services',
                        cell_uuid)
            continue
        services.extend(result)
    return services


def check_shared_backend(conf, ctx=None):
    """The hosts (other than this one) running a scheduler service that
    is up while the locks are the file driver's, read from Nova's service
    records; [] when none or when the backend is shared.

    :raises LockDirError: see :func:`lock_dir`.
    """
    url = default_url(conf)
    if not is_file_url(url):
        return []
    from nova import context as nova_context
    from nova import servicegroup
    ctx = ctx or nova_context.get_admin_context()
    group = servicegroup.API()
    return file_lock_conflicts(conf, scheduler_services(ctx),
                               group.service_is_up)


def startup_error(conf):
    """Why this scheduler host must not start, or None: its lock
    directory would be inside a Python install directory, or scheduler
    services of other hosts are up while its locks are the file driver's.

    :returns: an error message (str) or None.
    """
    try:
        others = check_shared_backend(conf)
    except LockDirError as exc:
        return str(exc)
    if others:
        return SHARED_FILE_LOCK_ERROR % (', '.join(others),
                                         default_url(conf))
    return None


#: Logged (ERROR) when :func:`check_shared_backend` finds other hosts.
SHARED_FILE_LOCK_ERROR = (
    'Scheduler services run on several hosts (this one, %s) but the '
    'opie_sched locks are the file driver\'s (%s), which excludes the '
    'workers of ONE host only: victims can be chosen twice and two '
    'reconcilers can run. Set [opie_preemption] coordination_url to a '
    'tooz backend every scheduler host reaches (etcd3+http://..., '
    'redis://...).')


_coordinators = {}
_coordinators_lock = threading.Lock()


def coordinator(conf):
    """The process's :class:`Coordinator` for ``conf``'s backend (a
    forked worker gets its own, with its own member id).

    :raises LockDirError: see :func:`lock_dir`.
    """
    url = default_url(conf)
    key = (url, os.getpid())
    with _coordinators_lock:
        coord = _coordinators.get(key)
        if coord is None:
            coord = _coordinators[key] = Coordinator(url)
        return coord


def reset():
    """Stop and forget every coordinator of this process (their locks
    released): for tests, each with a lock directory of its own.
    """
    with _coordinators_lock:
        coords = list(_coordinators.values())
        _coordinators.clear()
    for coord in coords:
        coord.stop()
