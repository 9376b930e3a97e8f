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
"""Leader election of the market replicas (tooz)."""

import os
import socket

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


def default_member_id():
    return '%s-%d' % (socket.gethostname(), os.getpid())


class Leadership:
    """Leader election with tooz: the leader holds a distributed lock.

    Any tooz backend an operator already runs works (etcd3, redis,
    zookeeper, memcached, mysql, postgresql); the embedded default is the
    file driver (one machine, no server). The lock is taken without
    blocking at each tick and kept while this member lives, its ownership
    re-checked with the backend at every tick
    (:class:`opie_sched.common.coordination.Leadership`, the helper every
    opie_sched service uses); if the leader dies or loses its session,
    the backend frees the lock (file lock closed, session expired), the
    old leader stops leading and the next tick of another replica takes
    it.

    :param url: tooz backend URL.
    :param member_id: this replica's id (text).
    """

    LOCK = 'opie-market-leader'

    def __init__(self, url, member_id=None):
        from opie_sched.common import coordination
        self.member_id = member_id or default_member_id()
        self.coordinator = coordination.start_coordinator(url,
                                                          self.member_id)
        self.leadership = coordination.Leadership(
            lambda: self.coordinator, self.LOCK, self.member_id)
        self.stopped = False

    @property
    def held(self):
        return self.leadership.held

    def is_leader(self):
        """True when this member holds the leader lock now (taking it if
        free, re-checking it with the backend if held). Backend errors
        mean "not leader" (logged).
        """
        if self.stopped:
            return False
        return self.leadership.check()

    def stop(self):
        """Give up leadership and leave the backend (idempotent)."""
        if self.stopped:
            return
        self.stopped = True
        self.leadership.release()
        try:
            self.coordinator.stop()
        except Exception:
            LOG.exception('stopping the tooz coordinator failed')
