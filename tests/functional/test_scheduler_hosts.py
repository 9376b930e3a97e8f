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
"""Reservations' lifetime across scheduler workers on a real in-process
Nova: a dead worker's reservations are released as soon as it is known
dead (its liveness lock free), a live worker's long request keeps its
reservations past ``reservation_timeout``, and a scheduler host refuses to
share the file driver's locks with another one.
"""

import datetime
import subprocess
import sys
import time

import fixtures
from oslo_utils import timeutils

from nova import context as nova_context
from nova import objects
from nova.tests import fixtures as nova_fixtures

from opie_sched.preemption import victim_state as vs
from opie_sched.scheduler import locks
from opie_sched.scheduler import manager
from opie_sched.scheduler import reconciler
from opie_sched.scheduler import reservations
from tests.functional import base
from tests.functional import test_preemption_holds

#: A scheduler worker in another process: joins the locks' backend, holds
#: its liveness lock, prints its member id and waits to be killed.
_WORKER = """
import sys
from opie_sched.scheduler import locks
coord = locks.Coordinator(sys.argv[1])
print(coord.worker_id(), flush=True)
sys.stdin.read()
"""


class DeadWorkerTest(test_preemption_holds._Base):
    """A worker killed right after its decision: its victims are released
    at the reconciler's next round, long before ``reservation_timeout``
    (300 s here, the default).
    """

    EXTRA_FLAGS = {'opie_reconciler': {'run_in_scheduler': False},
                   'opie_preemption': {'reservation_timeout': 300}}

    def start_worker(self):
        url = locks.default_url(manager.CONF)
        proc = subprocess.Popen([sys.executable, '-c', _WORKER, url],
                                stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        self.addCleanup(self._reap, proc)
        member_id = proc.stdout.readline().strip()
        self.assertTrue(member_id)
        return proc, member_id

    @staticmethod
    def _reap(proc):
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdin.close()
        proc.stdout.close()

    def reserve(self, server_id, worker):
        """Record the decision as that worker does (under no lock: the
        test is the only planner).
        """
        ctx = nova_context.get_admin_context()
        with nova_context.target_cell(
                ctx, self.cell_mappings['cell1']) as cctxt:
            inst = objects.Instance.get_by_uuid(
                cctxt, server_id, expected_attrs=['system_metadata'])
            reservations.reserve(
                cctxt, [inst], 'preemptor', 'req-dead', {},
                timeutils.utcnow(with_timezone=True), worker=worker)

    def test_dead_workers_victims_are_released_at_once(self):
        p = self.fill_with_preemptibles('host1', 'large', [100, 2000])
        proc, worker = self.start_worker()
        decided = time.monotonic()
        self.reserve(p[0]['id'], worker)
        state = self.sysmeta(p[0]['id'])
        self.assertEqual((vs.RESERVED, worker), (state.state, state.worker))
        # alive: its reservation holds
        reconciler.Reconciler().run_once()
        self.assertEqual(vs.RESERVED, self.sysmeta(p[0]['id']).state)
        proc.kill()
        proc.wait()
        reconciler.Reconciler().run_once()
        released = time.monotonic() - decided
        self.assertIsNone(self.sysmeta(p[0]['id']))
        self.assertLess(released, 60)
        # a candidate again: a normal request preempts the cheapest
        normal = self.boot('large', name='normal')
        self._wait_until_deleted(p[0])
        self.assertEqual({p[1]['id'], normal['id']}, self.live_uuids())

    def test_a_live_request_renews_only_its_own_reservations(self):
        p = self.fill_with_preemptibles('host1', 'large', [100, 2000])
        old = timeutils.utcnow(with_timezone=True) - \
            datetime.timedelta(seconds=250)
        ctx = nova_context.get_admin_context()
        cell = self.cell_mappings['cell1']
        with nova_context.target_cell(ctx, cell) as cctxt:
            for server, request in ((p[0], 'req-a'), (p[1], 'req-b')):
                inst = objects.Instance.get_by_uuid(
                    cctxt, server['id'], expected_attrs=['system_metadata'])
                reservations.reserve(cctxt, [inst], 'x', request, {}, old)
        renewed = reservations.renew(ctx, cell.uuid,
                                     [p[0]['id'], p[1]['id']], 'req-a')
        self.assertEqual([p[0]['id']], renewed)
        self.assertGreater(self.sysmeta(p[0]['id']).since, old)
        self.assertEqual(old.replace(microsecond=0),
                         self.sysmeta(p[1]['id']).since)

    def test_unknown_worker_keeps_the_lease(self):
        p = self.fill_with_preemptibles('host1', 'large', [100, 2000])
        self.reserve(p[0]['id'], '')
        reconciler.Reconciler().run_once()
        self.assertEqual(vs.RESERVED, self.sysmeta(p[0]['id']).state)

    def test_this_schedulers_reservations_record_its_worker(self):
        p = self.fill_with_preemptibles('host1', 'large', [100, 2000])
        seen = []
        original = reservations.reserve

        def spy(*args, **kwargs):
            done = original(*args, **kwargs)
            seen.extend(self.sysmeta(u) for u in done)
            return done

        self.useFixture(fixtures.MockPatchObject(
            reservations, 'reserve', spy))
        self.boot('large', name='normal')
        self._wait_until_deleted(p[0])
        [state] = seen
        self.assertEqual(locks.coordinator(manager.CONF).member_id,
                         state.worker)


class SharedFileLockTest(test_preemption_holds._Base):
    """Scheduler services of two hosts never share the file driver's
    locks: opie-scheduler refuses to start, and the running one logs an
    ERROR at each reconciler period.
    """

    def setUp(self):
        super().setUp()
        # a second scheduler host's service, up (its record heartbeats)
        self.useFixture(nova_fixtures.ConfPatcher(host='scheduler2'))
        self.scheduler2 = self.useFixture(nova_fixtures.ServiceFixture(
            'scheduler', host='scheduler2',
            manager=base.NOVA_MANAGER)).service
        self.useFixture(nova_fixtures.ConfPatcher(host='fake-mini'))

    def test_other_scheduler_host_is_found(self):
        self.useFixture(nova_fixtures.ConfPatcher(host='scheduler'))
        self.assertEqual(['scheduler2'],
                         locks.check_shared_backend(manager.CONF))
        self.assertIn('several hosts (this one, scheduler2)',
                      locks.startup_error(manager.CONF))
        self.flags(coordination_url='redis://127.0.0.1:6379',
                   group='opie_preemption')
        self.assertEqual([], locks.check_shared_backend(manager.CONF))
        self.assertIsNone(locks.startup_error(manager.CONF))

    def test_one_scheduler_host(self):
        self.scheduler2.stop()
        self.useFixture(nova_fixtures.ConfPatcher(host='scheduler'))
        # stopped: its record no longer heartbeats; forced down for the
        # servicegroup's view
        ctx = nova_context.get_admin_context()
        with nova_context.target_cell(
                ctx, self.cell_mappings['cell1']) as cctxt:
            svc = objects.Service.get_by_args(cctxt, 'scheduler2',
                                              'nova-scheduler')
            svc.forced_down = True
            svc.save()
        self.assertEqual([], locks.check_shared_backend(manager.CONF))

    def test_running_scheduler_logs_error_each_period(self):
        self.useFixture(nova_fixtures.ConfPatcher(host='scheduler'))
        log = self.useFixture(fixtures.FakeLogger())
        mgr = self.scheduler.manager
        self.flags(run_in_scheduler=True, interval=1,
                   group='opie_reconciler')
        mgr._opie_reconcile(nova_context.get_admin_context())
        self.assertIn('Scheduler services run on several hosts (this one, '
                      'scheduler2)', log.output)
