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
"""A scheduler worker killed after its preemption decision, in process.

What a real death leaves behind, and nothing more:

* the victims' records name the dead worker: the request that is to die
  reserves them under a member id of its own (a
  :class:`~opie_sched.scheduler.locks.Coordinator` of the same backend
  holding that member's liveness lock), and the death stops that
  coordinator, so the lock is free and
  :meth:`~opie_sched.scheduler.locks.Coordinator.is_dead` says so, as for a
  process gone (the reconciler's ``_expire_reservations``);
* the worker runs no code after its death: the death is a
  :class:`WorkerKilled` (a ``BaseException``: no ``except Exception`` of
  the scheduler stops it) and the manager's clean-up of a failed request
  (``_unreserve``, in a ``finally``) is skipped for it;
* the request fails as the conductor sees a dead worker: its call raises
  (``MessagingTimeout``, without waiting ``rpc_response_timeout``), the
  conductor buries the server in cell0 (ERROR); the Placement claims the
  dead worker made stay (nova removes them only when the server is
  deleted), as they would.

Points of death (:data:`STAGES`), all after the decision reserved its
victims: ``decided`` (right after the reservation, before anything else),
``noticed`` (after the guests' notice), ``terminating`` (after the first
victim's record went ``terminating``, before its compute call), ``sent``
(after the first victim's stop, shelve or delete was sent).
"""

import threading
import uuid as uuid_mod

import fixtures
import oslo_messaging

from opie_sched.preemption import victim_state as vs
from opie_sched.scheduler import actions
from opie_sched.scheduler import locks
from opie_sched.scheduler import manager
from opie_sched.scheduler import reservations

STAGES = ('decided', 'noticed', 'terminating', 'sent')


class WorkerKilled(BaseException):
    """The scheduler worker's process died here."""


class Kill:
    """One armed kill: the next scheduling request (its thread) that
    reserves victims dies at ``stage``.

    :param stage: one of :data:`STAGES`.
    :param url: the locks' backend (``locks.default_url(CONF)``).
    """

    def __init__(self, stage, url):
        if stage not in STAGES:
            raise ValueError('unknown stage %r' % stage)
        self.stage = stage
        self.thread = None
        self.died = False
        #: the victims the doomed request reserved (uuids)
        self.reserved = []
        self.worker = locks.Coordinator(
            url, member_id='fuzz-killed-worker:%s' % uuid_mod.uuid4().hex[:8])
        # alive until its death: its liveness lock held
        self.member_id = self.worker.worker_id()

    def claim(self):
        """The current thread's request is the one to die (first come)."""
        if self.thread is None and not self.died:
            self.thread = threading.get_ident()

    def mine(self):
        return self.thread == threading.get_ident()

    def alive_here(self):
        return not self.died and self.mine()

    def die(self):
        """The process is gone: its locks are free; nothing runs after."""
        self.died = True
        self.worker.stop()
        raise WorkerKilled(self.stage)

    def close(self):
        if not self.died:
            self.worker.stop()


def install(use_fixture, cloud):
    """Patch the scheduler so that ``cloud.kill`` (a :class:`Kill` or
    None) takes effect; ``cloud.recorder`` is the fuzz recorder.
    """
    mgr = manager.OpieSchedulerManager

    def armed():
        kill = cloud.kill
        return kill if kill is not None and kill.alive_here() else None

    real_select = mgr.select_destinations

    def select_destinations(self, context, *args, **kwargs):
        try:
            return real_select(self, context, *args, **kwargs)
        except WorkerKilled as exc:
            raise oslo_messaging.MessagingTimeout(
                'fuzz: the scheduler worker died (%s)' % exc)

    real_schedule = mgr._schedule

    def _schedule(self, *args, **kwargs):
        if cloud.kill is not None:
            cloud.kill.claim()
        return real_schedule(self, *args, **kwargs)

    real_unreserve = mgr._unreserve

    def _unreserve(self, view):
        kill = cloud.kill
        if kill is not None and kill.died and kill.mine():
            return  # a dead process clears nothing
        return real_unreserve(self, view)

    real_plan = mgr._plan_victims

    def _plan_victims(self, view, host_state, instance_uuid):
        result = real_plan(self, view, host_state, instance_uuid)
        kill = armed()
        if kill is not None and view.planned_victims:
            kill.reserved = sorted(view.planned_victims)
            if kill.stage == 'decided':
                kill.die()
        return result

    real_worker_id = locks.Coordinator.worker_id

    def worker_id(coord):
        kill = armed()
        if kill is not None and coord is not kill.worker:
            return kill.member_id
        return real_worker_id(coord)

    real_notify = actions.notify_guests

    def notify_guests(*args, **kwargs):
        result = real_notify(*args, **kwargs)
        kill = armed()
        if kill is not None and kill.stage == 'noticed':
            kill.die()
        return result

    real_swap = reservations.swap_state

    def swap_state(cctxt, inst, expected, new):
        result = real_swap(cctxt, inst, expected, new)
        kill = armed()
        if (result and kill is not None and kill.stage == 'terminating'
                and new is not None and new.state == vs.TERMINATING):
            kill.die()
        return result

    def on_sent(verb, uuid):
        kill = armed()
        if kill is not None and kill.stage == 'sent':
            kill.die()

    cloud.recorder.on_sent = on_sent
    for name, fn in (('select_destinations', select_destinations),
                     ('_schedule', _schedule), ('_unreserve', _unreserve),
                     ('_plan_victims', _plan_victims)):
        use_fixture(fixtures.MockPatchObject(mgr, name, fn))
    use_fixture(fixtures.MockPatchObject(locks.Coordinator, 'worker_id',
                                         worker_id))
    use_fixture(fixtures.MockPatchObject(actions, 'notify_guests',
                                         notify_guests))
    use_fixture(fixtures.MockPatchObject(reservations, 'swap_state',
                                         swap_state))
