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
"""tooz leadership, the part of the coordination helpers that the Nova
scheduler plugin needs too (:mod:`opie_sched.scheduler.locks`).

It imports oslo.log and (when called) tooz only, nothing of oslo.service
nor of the companion services, so that the scheduler plugin loads with any
oslo.service nova 31 to 34 installs (4.1 has no ``oslo_service.backend``):

* :func:`start_coordinator` -- a started tooz coordinator;
* :class:`Leadership` -- a leadership held through a tooz lock whose
  ownership is re-checked at every round.

:mod:`opie_sched.common.coordination` (the companion services' daemons)
re-exports both.
"""

import os
import threading

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


def start_coordinator(url, member_id):
    """A started tooz coordinator on ``url`` (heartbeat thread on).

    For the file driver (``file://DIR``) the directory is created.

    :param url: tooz backend URL.
    :param member_id: this member's id (str).
    :raises tooz.coordination.ToozError: the backend is unreachable.
    """
    from tooz import coordination as tooz_coordination
    if url.startswith('file://'):
        os.makedirs(url[len('file://'):], exist_ok=True)
    coord = tooz_coordination.get_coordinator(url, member_id.encode())
    coord.start(start_heart=True)
    return coord


class Leadership:
    """Leadership held through one tooz lock, re-checked at every round.

    Rule: a member acts as leader for a round only when :meth:`check`
    returned True at the start of that round. :meth:`check` takes the lock
    without blocking when it is free, and when this member already holds
    it, asks the backend again whether it still does
    (``Lock.is_still_owner()``; on drivers without it, such as etcd3gw,
    the lock's ``heartbeat()`` must succeed). Ownership is never cached:
    after a lost backend session (a Redis key or etcd lease expired while
    this member could not heartbeat, a broken connection) the check fails,
    the lock is given up, and this member stops acting as leader until it
    takes the lock again -- so a second member that took the expired lock
    is the only leader. A file lock (one machine) is released by the
    kernel when its process dies.

    Backend errors count as "not the leader" (logged).

    :param coordinator: a callable returning the started tooz coordinator
        (called at every check, so it may be started lazily).
    :param name: the lock's name (str).
    :param member_id: this member's id, for messages.
    """

    def __init__(self, coordinator, name, member_id=''):
        self._coordinator = coordinator
        self.name = name
        self.member_id = member_id
        self._lock = None
        self._mutex = threading.Lock()

    @property
    def held(self):
        """True when the last :meth:`check` found this member leading."""
        return self._lock is not None

    def _still_owner(self):
        import tooz
        try:
            try:
                return bool(self._lock.is_still_owner())
            except tooz.NotImplemented:
                return bool(self._lock.heartbeat())
        except Exception:
            LOG.exception('%s: could not confirm the ownership of lock %s',
                          self.member_id, self.name)
            return False

    def _forget(self):
        lock, self._lock = self._lock, None
        try:
            lock.release()
        except Exception:
            LOG.debug('Releasing the lost lock %s failed', self.name,
                      exc_info=True)

    def check(self):
        """True when this member leads now (the lock taken or confirmed).

        :returns: bool; False on any backend error.
        """
        with self._mutex:
            if self._lock is not None:
                if self._still_owner():
                    return True
                LOG.warning('%s lost the lock %s (backend session lost or '
                            'lock expired): no longer acting as its holder',
                            self.member_id, self.name)
                self._forget()
            try:
                lock = self._coordinator().get_lock(self.name.encode())
                if not lock.acquire(blocking=False):
                    return False
            except Exception:
                LOG.exception('%s: could not try the lock %s',
                              self.member_id, self.name)
                return False
            self._lock = lock
            LOG.info('%s holds the lock %s', self.member_id, self.name)
            return True

    def release(self):
        """Give the lock up (no-op when not held)."""
        with self._mutex:
            if self._lock is None:
                return
            lock, self._lock = self._lock, None
            try:
                lock.release()
            except Exception:
                LOG.exception('Could not release lock %s', self.name)
