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
"""Preemption that holds on a real in-process Nova: forged metadata,
failing deletes, release timeouts, disk-only shortfalls, maximum lifetime,
alternates, and two scheduler services racing on the same hosts.
"""

import itertools
import threading
import time
from unittest import mock

import fixtures
from oslo_utils.fixture import uuidsentinel as uuids
from oslo_utils import timeutils

from nova import context as nova_context
from nova import objects
from nova.scheduler import manager as nova_manager
from nova.tests import fixtures as nova_fixtures

from opie_sched.common import flavors
from opie_sched.notifications import base as notes
from opie_sched.preemption import victim_state as vs
from opie_sched.scheduler import actions
from opie_sched.scheduler import cell_reads
from opie_sched.scheduler import locks
from opie_sched.scheduler import operations
from opie_sched.scheduler import ownership
from opie_sched.scheduler import reconciler
from opie_sched.scheduler import request_view
from opie_sched.scheduler import reservations
from tests.functional import base
from tests.functional import test_preemption

_Helpers = test_preemption._Helpers


def locks_conf():
    from opie_sched.scheduler import manager
    return manager.CONF


class _Base(base.OpieNovaTestCase, _Helpers):
    HOSTS = ('host1',)
    EXTRA_FLAGS = {'opie_reconciler': {'run_in_scheduler': False}}

    def sysmeta(self, server_id):
        ctx = nova_context.get_admin_context(read_deleted='yes')
        with nova_context.target_cell(
                ctx, self.cell_mappings['cell1']) as cctxt:
            inst = objects.Instance.get_by_uuid(
                cctxt, server_id, expected_attrs=['system_metadata'])
            return vs.VictimState.from_metadata(inst.system_metadata)

    def full_used(self, host):
        usages = self.usages(host)
        return tuple(usages.get(std, 0) + usages.get(pre, 0)
                     for std, pre in flavors.CLASS_MAP.items())


class ForgedMetadataTest(_Base):

    def test_owner_metadata_does_not_protect_a_server(self):
        # billing period costs: 100 s is the cheapest of the two
        p = self.fill_with_preemptibles('host1', 'large', [100, 2000])
        # the owner writes every key the service ever used
        self.api.post_server_metadata(p[0]['id'], {
            vs.PREEMPTED_BY_KEY: 'x', vs.PREEMPTED_AT_KEY: 'now',
            vs.KEY_STATE: vs.TERMINATING})
        normal = self.boot('large', name='normal')
        self.assertEqual({p[1]['id'], normal['id']}, self.live_uuids())
        self.assertTrue(self.db_instance(p[0]['id']).deleted)
        self.assertEqual((8, 16000, 160), self.full_used('host1'))


class DiskShortfallTest(_Base):

    def test_disk_only_shortfall_is_preempted(self):
        self.flavor_ids['disky.preemptible'] = self._create_flavor(
            name='disky.preemptible', vcpu=1, memory_mb=1000, disk=150,
            extra_spec=flavors.preemptible_extra_specs(1, 1000, 150))
        self.flavor_ids['disk-normal'] = self._create_flavor(
            name='disk-normal', vcpu=1, memory_mb=1000, disk=100)
        disky = self.boot('disky.preemptible', name='disky')
        small = self.boot('small.preemptible', name='small')
        # vCPU and RAM have room (2 of 8, 2000 of 16000); disk does not
        # (150 + 20 + 100 > 200): only disk makes disky a victim.
        normal = self.boot('disk-normal', name='normal')
        self.assertEqual({small['id'], normal['id']}, self.live_uuids())
        self.assertTrue(self.db_instance(disky['id']).deleted)
        self.assertLessEqual(self.full_used('host1')[2], 200)


class FailingDeleteTest(_Base):
    EXTRA_FLAGS = {'opie_reconciler': {'run_in_scheduler': False},
                   'opie_preemption': {'release_timeout': 1,
                                       'retry_interval': 1,
                                       'max_attempts': 2}}

    def test_failed_delete_is_retried_with_backoff_then_fault(self):
        p = self.fill_with_preemptibles('host1', 'large', [100, 2000])
        real = actions.compute_api()
        broken = mock.Mock(wraps=real)
        broken.delete.side_effect = RuntimeError('compute service down')
        with mock.patch.object(actions, 'compute_api', return_value=broken), \
                self.assertLogs('opie_sched.scheduler.manager',
                                level='WARNING') as logs:
            normal = self.boot('large', name='normal')
        # the request proceeded after release_timeout with a clear warning
        self.assertIn('did not release their host within release_timeout',
                      '\n'.join(logs.output))
        self.assertIn(p[0]['id'], self.live_uuids())
        state = self.sysmeta(p[0]['id'])
        self.assertEqual((vs.TERMINATING, 1, normal['id']),
                         (state.state, state.attempts, state.preemptor))
        rec = reconciler.Reconciler()
        # A second failing attempt after the backoff: attempts reach
        # max_attempts, so the operator gets a fault.
        time.sleep(1.1)
        with mock.patch.object(actions, 'compute_api', return_value=broken):
            rec.run_once()
        self.assertEqual(2, self.sysmeta(p[0]['id']).attempts)
        self.assertIn('Preemption has not completed after 2 attempts',
                      self.db_instance(p[0]['id']).fault.message)
        # Still in backoff (2 s now): nothing else is chosen meanwhile.
        rec.run_once()
        self.assertEqual(2, self.sysmeta(p[0]['id']).attempts)
        self.assertIn(p[1]['id'], self.live_uuids())
        # The compute service is back: the next round finishes the job.
        time.sleep(2.1)
        rec.run_once()
        self._wait_until_deleted(p[0])
        self.assertEqual({p[1]['id'], normal['id']}, self.live_uuids())
        self.assertEqual((8, 16000, 160), self.full_used('host1'))


class CrashedWorkerTest(_Base):
    EXTRA_FLAGS = {'opie_reconciler': {'run_in_scheduler': False},
                   'opie_preemption': {'reservation_timeout': 1}}

    def test_reservation_of_a_dead_worker_expires(self):
        p = self.fill_with_preemptibles('host1', 'large', [100, 2000])
        # a worker reserved p0 and died before its request finished
        ctx = nova_context.get_admin_context()
        with nova_context.target_cell(
                ctx, self.cell_mappings['cell1']) as cctxt:
            inst = objects.Instance.get_by_uuid(
                cctxt, p[0]['id'], expected_attrs=['system_metadata'])
            reservations.write_state(inst, vs.reserve(
                'dead-request', timeutils.utcnow(with_timezone=True)))
        time.sleep(1.1)
        reconciler.Reconciler().run_once()
        self.assertIsNone(self.sysmeta(p[0]['id']))
        self.assertEqual({p[0]['id'], p[1]['id']}, self.live_uuids())


class MaxLifetimeTest(_Base):
    EXTRA_FLAGS = {'opie_reconciler': {'run_in_scheduler': False},
                   'opie_preemption': {'max_lifetime': 3600}}

    def test_old_preemptibles_are_terminated(self):
        p = self.fill_with_preemptibles('host1', 'medium', [4000, 100])
        normal = self.boot('medium', name='normal')
        self.set_runtime(normal['id'], 10 ** 5)
        acted = reconciler.Reconciler().run_once()
        self.assertEqual(1, len(acted))
        self._wait_until_deleted(p[0])
        self.assertEqual({p[1]['id'], normal['id']}, self.live_uuids())
        self.assertIn(actions.PREEMPT_ACTION,
                      [a['action'] for a in
                       self.api.get_instance_actions(p[0]['id'])])
        [note] = self.preempt_notifications()
        data = notes.from_primitive(note['payload'])
        self.assertEqual(reconciler.LIFETIME, data.preemptor_uuid)
        self.assertEqual([p[0]['id']], [v.uuid for v in data.victims])


class AlternatesTest(_Base):
    HOSTS = ('host1', 'host2', 'host3')

    def test_alternates_exclude_hosts_that_would_need_preemption(self):
        self.fill_with_preemptibles('host2', 'large', [100, 200])
        seen = []
        original = nova_manager.SchedulerManager._get_alternate_hosts

        def spy(self_, selected, spec, hosts_, *args, **kwargs):
            seen.append(({h.host for h in selected},
                         {h.host for h in hosts_}))
            return original(self_, selected, spec, hosts_, *args, **kwargs)

        with mock.patch.object(nova_manager.SchedulerManager,
                               '_get_alternate_hosts', spy):
            self.boot('large', name='normal')
        [(selected, offered)] = seen
        self.assertNotIn('host2', offered - selected)
        self.assertEqual({'host1', 'host3'}, offered)


class _ClaimHelpers:

    def claim(self, rp_uuid, consumer, vcpus, ram, disk):
        """A normal claim in Placement, as a worker makes it."""
        body = {'allocations': {rp_uuid: {'resources': {
            'VCPU': vcpus, 'MEMORY_MB': ram, 'DISK_GB': disk}}},
            'project_id': self.api.project_id, 'user_id': 'u',
            'consumer_generation': None}
        self.placement.put('/allocations/%s' % consumer, body,
                           version='1.28')

    def summary(self, rp_uuid):
        """The provider summary ``GET /allocation_candidates`` would give
        now (capacity and used of every class).
        """
        inv = self.placement.get('/resource_providers/%s/inventories'
                                 % rp_uuid).body['inventories']
        used = self.placement.get('/resource_providers/%s/usages'
                                  % rp_uuid).body['usages']
        return {'resources': {
            rc: {'capacity': (i['total'] - i['reserved'])
                 * i['allocation_ratio'], 'used': used.get(rc, 0)}
            for rc, i in inv.items()}}


class SummaryShortcutTest(_Base, _ClaimHelpers):
    """The preemption decision after a claim, when the request's provider
    summary is stale either way: victims are chosen from Placement's
    allocations read under the host's lock, whatever the summary said.
    When the summary plus the request's own claim already shows the host
    over capacity, the pre-lock ``GET .../usages`` is skipped (the lock
    is needed anyway); when it shows room, that GET still catches the
    other workers' claims made since.
    """

    def plan(self, summary, preemptor, claimed=(2, 4000, 40)):
        """Run the manager's decision for ``preemptor`` (whose claim is
        already in Placement) with ``summary`` as the request read it.

        :returns: ``(victim uuids, Placement URLs read)``.
        """
        rp = self._get_provider_uuid_by_host('host1')
        manager = self.scheduler.manager
        view = request_view.RequestView(nova_context.get_admin_context(),
                                 {rp: summary})
        view.request_id = 'req-' + preemptor[:8]
        view.note_claim(rp, reservations.model.Resources(*claimed))
        host = mock.Mock(uuid=rp, cell_uuid=self.cell_mappings['cell1'].uuid,
                         host='host1', nodename='host1')
        client = manager.placement_client
        with mock.patch.object(client, 'get', wraps=client.get) as get:
            manager._plan_victims(view, host, preemptor)
        urls = [c.args[0] for c in get.call_args_list]
        victims = [inst.uuid for item in view.pending
                   for inst, _ in item.plan.victims]
        if view.pending:
            manager._unreserve(view)
        return victims, urls

    def test_summary_over_capacity_skips_the_usages_read(self):
        pre = self.fill_with_preemptibles('host1', 'medium',
                                          [100, 200, 300, 400])
        rp = self._get_provider_uuid_by_host('host1')
        summary = self.summary(rp)
        self.claim(rp, uuids.preemptor, 2, 4000, 40)
        victims, urls = self.plan(summary, uuids.preemptor)
        # the cheapest (billing period: 100 s) frees the medium claim
        self.assertEqual([pre[0]['id']], victims)
        self.assertEqual(
            ['/resource_providers/%s/allocations' % rp], urls)

    def test_one_cell_context_under_the_lock(self):
        # the state read and the reservation under the host's lock use one
        # context targeted at the host's cell
        pre = self.fill_with_preemptibles('host1', 'medium',
                                          [100, 200, 300, 400])
        rp = self._get_provider_uuid_by_host('host1')
        summary = self.summary(rp)
        self.claim(rp, uuids.preemptor, 2, 4000, 40)
        made = self.useFixture(fixtures.MockPatchObject(
            reservations, 'cell_context',
            wraps=reservations.cell_context)).mock
        read = self.useFixture(fixtures.MockPatchObject(
            reservations, 'fresh_host_view',
            wraps=reservations.fresh_host_view)).mock
        reserve = self.useFixture(fixtures.MockPatchObject(
            reservations, 'reserve', wraps=reservations.reserve)).mock
        victims, _ = self.plan(summary, uuids.preemptor)
        self.assertEqual([pre[0]['id']], victims)
        cell = self.cell_mappings['cell1'].uuid
        # (the second one clears the reservation after the decision)
        self.assertEqual(2, made.call_count)
        cctxt = read.call_args.kwargs['cctxt']
        self.assertIs(cctxt, reserve.call_args.args[0])
        self.assertEqual(cell, cctxt.cell_uuid)

    def test_host_freed_since_the_summary_gets_no_victims(self):
        pre = self.fill_with_preemptibles('host1', 'medium',
                                          [100, 200, 300, 400])
        rp = self._get_provider_uuid_by_host('host1')
        # the request read the host full...
        summary = self.summary(rp)
        # ...then two preemptibles left (their owner deleted them)
        for server in pre[2:]:
            self.api.delete_server(server['id'])
            self._wait_until_deleted(server)
        self.claim(rp, uuids.preemptor, 2, 4000, 40)
        victims, urls = self.plan(summary, uuids.preemptor)
        self.assertEqual([], victims)
        # decided from the allocations read under the lock
        self.assertEqual(
            ['/resource_providers/%s/allocations' % rp], urls)
        self.assertEqual({pre[0]['id'], pre[1]['id']}, self.live_uuids())
        self.assertIsNone(self.sysmeta(pre[0]['id']))
        self.assertIsNone(self.sysmeta(pre[1]['id']))

    def test_claim_unseen_by_the_summary_completes_the_overcommit(self):
        pre = self.fill_with_preemptibles('host1', 'medium',
                                          [100, 200, 300])
        rp = self._get_provider_uuid_by_host('host1')
        # the summary has room for this request's medium (6 + 2 of 8
        # vCPU)...
        summary = self.summary(rp)
        # ...but another worker claimed a medium since
        self.claim(rp, uuids.other, 2, 4000, 40)
        self.claim(rp, uuids.preemptor, 2, 4000, 40)
        victims, urls = self.plan(summary, uuids.preemptor)
        self.assertEqual([pre[0]['id']], victims)
        self.assertEqual(['/resource_providers/%s/usages' % rp,
                          '/resource_providers/%s/allocations' % rp], urls)

    def test_summary_with_room_and_no_other_claim_takes_no_lock(self):
        self.fill_with_preemptibles('host1', 'medium', [100, 200, 300])
        rp = self._get_provider_uuid_by_host('host1')
        summary = self.summary(rp)
        self.claim(rp, uuids.preemptor, 2, 4000, 40)
        with mock.patch.object(locks, 'coordinator') as coordinator:
            victims, urls = self.plan(summary, uuids.preemptor)
        self.assertEqual([], victims)
        self.assertEqual(['/resource_providers/%s/usages' % rp], urls)
        coordinator.assert_not_called()


class AllocationOwnersTest(_Base):
    """The rows the decision under the lock reads for a host's preemptible
    consumers (``ownership.allocation_owners``): light rows, read fresh, that
    carry what the plan and the reservation need.
    """

    def reserved_by(self, cctxt, server_id, preemptor):
        """Record a reservation of ``server_id`` by ``preemptor`` (as
        another worker's decision would).
        """
        ctx = nova_context.get_admin_context()
        with nova_context.target_cell(
                ctx, self.cell_mappings['cell1']) as tctx:
            inst = objects.Instance.get_by_uuid(
                tctx, server_id, expected_attrs=['system_metadata'])
        reservations.write_state(inst, vs.reserve(preemptor, _now()),
                                 cctxt)

    def test_light_rows_of_the_consumers(self):
        p = self.fill_with_preemptibles('host1', 'medium', [100, 200, 300])
        self.api.delete_server(p[2]['id'])
        self._wait_until_deleted(p[2])
        cell = self.cell_mappings['cell1'].uuid
        ctx = nova_context.get_admin_context()
        cctxt = reservations.cell_context(ctx, cell)
        # another worker reserved p[1]
        self.reserved_by(cctxt, p[1]['id'], 'other')
        owners, rows = ownership.allocation_owners(
            cctxt, [p[0]['id'], p[1]['id'], p[2]['id'], uuids.in_flight])
        # the deleted server and the claim in flight own nothing
        self.assertEqual({p[0]['id']: p[0]['id'], p[1]['id']: p[1]['id']},
                         owners)
        self.assertEqual({p[0]['id'], p[1]['id']}, set(rows))
        row = rows[p[1]['id']]
        self.assertEqual(vs.RESERVED, ownership.victim_state(row).state)
        self.assertTrue(ownership.instance_is_leaving(row))
        info = ownership.instance_info(rows[p[0]['id']])
        self.assertEqual((True, (2, 4000, 40), False),
                         (info.preemptible, tuple(info.resources),
                          info.leaving))
        self.assertIsNotNone(info.launched_at.tzinfo)
        # the rows serve the compare-and-set of the reservation: p[0]'s
        # record (none) is as read; p[1]'s changed since it was read
        self.reserved_by(cctxt, p[1]['id'], 'third')
        done = reservations.reserve(
            cctxt, [rows[p[0]['id']], rows[p[1]['id']]], uuids.preemptor,
            'req-x', {}, worker='w')
        self.assertEqual([p[0]['id']], done)
        self.assertEqual((vs.RESERVED, uuids.preemptor),
                         (self.sysmeta(p[0]['id']).state,
                          self.sysmeta(p[0]['id']).preemptor))
        self.assertEqual('third', self.sysmeta(p[1]['id']).preemptor)


class BulkRowsTest(_Base):
    """The bulk read of a request's hosts (``cell_reads.load_instances``): one
    row per instance whatever its victim record holds (the record's keys
    ride along the instance rows in one query), and the server metadata
    only when asked for, also for rows loaded earlier without it.
    """

    reserved_by = AllocationOwnersTest.reserved_by

    def test_one_row_per_instance_with_its_record(self):
        p = self.fill_with_preemptibles('host1', 'medium', [100, 200, 300])
        ids = [s['id'] for s in p]
        cell = self.cell_mappings['cell1'].uuid
        ctx = nova_context.get_admin_context()
        cctxt = reservations.cell_context(ctx, cell)
        # p[1] reserved: a record of several opie_victim_* keys, beside
        # nova's own system metadata keys
        self.reserved_by(cctxt, ids[1], 'other')
        self.api.post_server_metadata(ids[2], {'opie:bid': '0.5',
                                               'owner:note': 'x'})
        for meta in (True, False):
            rows = cell_reads.load_instances(ctx, {cell: {'host1'}},
                                        server_metadata=meta)
            got = rows[('host1', 'host1')]
            self.assertEqual(sorted(ids), sorted(r.uuid for r in got))
            by_uuid = {r.uuid: r for r in got}
            record = vs.reserve('other', _now()).as_metadata()
            self.assertEqual(sorted(record),
                             sorted(by_uuid[ids[1]].system_metadata))
            self.assertEqual('other',
                             ownership.victim_state(by_uuid[ids[1]]).preemptor)
            self.assertTrue(ownership.instance_is_leaving(by_uuid[ids[1]]))
            self.assertEqual({}, by_uuid[ids[0]].system_metadata)
            self.assertEqual({}, by_uuid[ids[2]].system_metadata)
            self.assertEqual({'opie:bid': '0.5'} if meta else {},
                             by_uuid[ids[2]].metadata)
            self.assertEqual({}, by_uuid[ids[0]].metadata)
        # a request's view loads without the server metadata; a reader
        # of it (the market's weigher) still gets it
        view = request_view.RequestView(ctx)
        host_state = mock.Mock(host='host1', nodename='host1',
                               cell_uuid=cell)
        view._ensure_loaded([host_state])
        row = view.instance('host1', 'host1', ids[2])
        self.assertEqual({}, row.metadata)
        view.loaded_instances([host_state])
        self.assertEqual({'opie:bid': '0.5'}, row.metadata)
        self.assertEqual({'opie:bid': '0.5'}, view.instance(
            'host1', 'host1', ids[2]).metadata)


class RequestOperationTest(_Base):
    """What a request is for (``operations.request_operation``), from the
    instance mapping's cell (one column) and the instance's record.
    """

    def test_operations(self):
        from nova.compute import task_states
        from nova.compute import vm_states
        ctx = nova_context.get_admin_context()
        spec = objects.RequestSpec()

        def operation(uuid):
            return operations.request_operation(ctx, spec, [uuid], {})
        # no mapping; a mapping without a cell yet (a new server)
        self.assertEqual(operations.BOOT, operation(uuids.unknown))
        objects.InstanceMapping(
            context=ctx, instance_uuid=uuids.new, project_id='p',
            user_id='u', cell_mapping=None).create()
        self.assertEqual(operations.BOOT, operation(uuids.new))
        # a server mapped to cell1, on a host
        server = self.boot('medium', host='host1')
        self.assertEqual(operations.MOVE, operation(server['id']))
        with nova_context.target_cell(
                ctx, self.cell_mappings['cell1']) as cctxt:
            inst = objects.Instance.get_by_uuid(cctxt, server['id'])
            inst.task_state = task_states.MIGRATING
            inst.save()
            self.assertEqual(operations.LIVE_MIGRATION,
                             operation(server['id']))
            inst.task_state = None
            inst.vm_state = vm_states.SHELVED_OFFLOADED
            inst.save()
        self.assertEqual(operations.UNSHELVE, operation(server['id']))
        # a rebuild (nova fetches no candidates for it)
        self.assertEqual(operations.REBUILD, operations.request_operation(
            ctx, spec, [server['id']], None))


def _now():
    from oslo_utils import timeutils
    return timeutils.utcnow(with_timezone=True)


class TwoSchedulersRaceTest(_Base, _ClaimHelpers):
    """Two scheduler services (two manager objects, each with its own
    memory, as two workers have) place normal instances on the same
    preemptible-full host: no host ends over capacity, no victim is chosen
    twice or without need, no normal server fails (the reconciler is off).
    """

    HOSTS = ('host1', 'host2')

    def setUp(self):
        super().setUp()
        # nova's start_service() refuses a second scheduler; the service
        # fixture it wraps does not: both listen on the scheduler topic.
        self.useFixture(nova_fixtures.ConfPatcher(host='scheduler2'))
        self.scheduler2 = self.useFixture(nova_fixtures.ServiceFixture(
            'scheduler', host='scheduler2',
            manager=base.OPIE_MANAGER)).service
        self.useFixture(nova_fixtures.ConfPatcher(host='fake-mini'))
        # the planners that asked for a host's lock, and who read inside it
        self._race = threading.Condition()
        self._at_lock = []
        self._inside = []
        self.interleaved = None

    def arrived_at_lock(self, name):
        """A planner asks for the lock ``name`` (noted for a host's lock)."""
        if name.startswith('opie-preempt-'):
            with self._race:
                self._at_lock.append(threading.current_thread().name)
                self._race.notify_all()

    def separate_coordinators(self):
        """Each planner thread gets a tooz coordinator of its own (as two
        worker processes have): on Redis when one answers on
        127.0.0.1:6379 (exclusion between two clients of the server),
        else on this test's file driver directory (tooz's exclusion
        between two coordinators). The exclusion tested is tooz's, never
        the per-process threading lock in front of it.
        """
        import socket
        import uuid
        try:
            socket.create_connection(('127.0.0.1', 6379), timeout=1).close()
            url = 'redis://127.0.0.1:6379?namespace=opie-race-%s' % (
                uuid.uuid4().hex[:8])
        except OSError:
            url = locks.default_url(locks_conf())
        coords = {}
        mutex = threading.Lock()
        arrived = self.arrived_at_lock

        class Coordinator(locks.Coordinator):
            """The product's coordinator, noting who asks for a lock."""

            def lock(self, name, timeout):
                arrived(name)
                return super().lock(name, timeout)

        def per_thread(conf):
            name = threading.current_thread().name
            with mutex:
                if name not in coords:
                    coords[name] = Coordinator(url, name)
                    self.addCleanup(coords[name].stop)
                return coords[name]

        self.useFixture(fixtures.MockPatchObject(locks, 'coordinator',
                                                 per_thread))
        return coords

    def force_interleaving(self):
        """The first planner to read the host's state holds it, inside its
        lock, until the second planner has asked for the lock (up to 30 s:
        a guard only), then up to 3 s more for the second one to read it
        too: with a lock that excludes, the second cannot, and reads after
        the first one's reservations; with one that does not, both read
        the same state. :attr:`interleaved` tells whether the second
        planner did ask while the first one was inside (else the two ran
        one after the other and the test proved nothing).
        """
        original = reservations.fresh_host_view
        race, at_lock, inside = self._race, self._at_lock, self._inside

        def gated(*args, **kwargs):
            with race:
                inside.append(threading.current_thread().name)
                race.notify_all()
                if len(inside) == 1:
                    race.wait_for(lambda: len(set(at_lock)) >= 2, 30)
                    self.interleaved = len(set(at_lock)) >= 2
                    race.wait_for(lambda: len(inside) >= 2, 3)
            return original(*args, **kwargs)

        self.useFixture(fixtures.MockPatchObject(
            reservations, 'fresh_host_view', gated))

    def test_two_planners_on_one_host(self):
        pre = self.fill_with_preemptibles('host1', 'medium',
                                          [100, 200, 300, 400])
        coords = self.separate_coordinators()
        self.force_interleaving()
        rp = self._get_provider_uuid_by_host('host1')
        cell = self.cell_mappings['cell1'].uuid
        # Both workers claimed a normal medium on host1 (Placement admits
        # both on the normal state) before either chose victims.
        preemptors = [uuids.preemptor_a, uuids.preemptor_b]
        for consumer in preemptors:
            self.claim(rp, consumer, 2, 4000, 40)
        summary = self.summary(rp)
        host = mock.Mock(uuid=rp, cell_uuid=cell, host='host1',
                         nodename='host1')
        views = []
        managers = (self.scheduler.manager, self.scheduler2.manager)
        threads = []
        for manager, preemptor in zip(managers, preemptors):
            view = request_view.RequestView(nova_context.get_admin_context())
            view.pending = []
            view.summaries, view.request_id = {rp: summary}, 'req-' + \
                preemptor[:8]
            views.append(view)
            threads.append(threading.Thread(
                target=manager._plan_victims, args=(view, host, preemptor),
                name='worker-%s' % preemptor[:8]))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        chosen = [inst.uuid for view in views for item in view.pending
                  for inst, _ in item.plan.victims]
        self.assertEqual(2, len(coords))
        # the race took place: the second planner asked for the host's
        # lock while the first one was reading the host under it
        self.assertTrue(self.interleaved, (self._at_lock, self._inside))
        self.assertEqual(2, len(set(self._inside)), self._inside)
        # Whichever planner took the lock first saw both claims and chose
        # for the whole overcommit; the other saw those victims reserved
        # and chose none: two victims in all, the two cheapest (billing
        # period: 100 s and 200 s), none twice.
        self.assertEqual(sorted([pre[0]['id'], pre[1]['id']]),
                         sorted(chosen))
        for victim in (pre[0], pre[1]):
            self.assertEqual(vs.RESERVED, self.sysmeta(victim['id']).state)
        for manager, view in zip(managers, views):
            # the request's own context: victims act only for the request
            # their record names
            ctx = nova_context.get_admin_context()
            ctx.request_id = view.request_id
            manager._execute(ctx, view.pending)
        for victim in (pre[0], pre[1]):
            self._wait_until_deleted(victim)
        self.assertEqual({pre[2]['id'], pre[3]['id']}, self.live_uuids())
        self.assertEqual((8, 16000, 160), self.full_used('host1'))

    def schedulers_in_turn(self):
        """The message bus hands the scheduler topic's requests to the two
        services in turn, as RabbitMQ hands a queue's messages to its
        consumers: oslo.messaging's in-memory bus gives each to whichever
        service polls first, which can be the same one every time.

        :returns: ``{service host: number of select_destinations calls it
            handled}``, filled as they come.
        """
        from oslo_messaging._drivers import impl_fake
        services = [self.scheduler, self.scheduler2]
        handled = {svc.host: 0 for svc in services}
        turn = itertools.cycle([svc.host for svc in services])
        mutex = threading.Lock()
        deliver = impl_fake.FakeExchange.deliver_message

        def in_turn(exchange, topic, ctxt, message, server=None,
                    fanout=False, reply_q=None):
            if (topic == 'scheduler' and server is None and not fanout
                    and message.get('method') == 'select_destinations'):
                with mutex:
                    server = next(turn)
            return deliver(exchange, topic, ctxt, message, server=server,
                           fanout=fanout, reply_q=reply_q)

        self.useFixture(fixtures.MockPatchObject(
            impl_fake.FakeExchange, 'deliver_message', in_turn))
        for svc in services:
            def counted(*args, _host=svc.host,
                        _real=svc.manager.select_destinations, **kwargs):
                with mutex:
                    handled[_host] += 1
                return _real(*args, **kwargs)
            self.useFixture(fixtures.MockPatchObject(
                svc.manager, 'select_destinations', counted))
        return handled

    def test_concurrent_normal_boots(self):
        # End to end through the API; the message bus hands the requests
        # to the two scheduler services in turn (the multi-process cloud's
        # Tempest tier races real workers).
        handled = self.schedulers_in_turn()
        pre = []
        for host in self.HOSTS:
            pre += self.fill_with_preemptibles(
                host, 'medium', [100 + i for i in range(4)])
        filled = dict(handled)
        posted = []
        for i in range(4):
            req = self._build_server(name='normal-%d' % i,
                                     flavor_id=self.flavor_ids['medium'],
                                     networks='none')
            posted.append(self.api.post_server({'server': req}))
        servers = [self._wait_for_state_change(
            s, 'ACTIVE', max_retries=self.BOOT_POLLS) for s in posted]
        self.assertEqual(4, len(servers))
        for host in self.HOSTS:
            used = self.full_used(host)
            self.assertLessEqual(used[0], 8, host)
            self.assertLessEqual(used[1], 16000, host)
        # exactly the victims needed: 4 normal mediums need 4 mediums
        alive = self.live_uuids()
        self.assertEqual(4, len([p for p in pre if p['id'] not in alive]))
        self.assertEqual(8, len(alive))
        # both scheduler services placed normal servers
        normals = {host: count - filled[host]
                   for host, count in handled.items()}
        self.assertEqual(4, sum(normals.values()), normals)
        for host, count in normals.items():
            self.assertGreaterEqual(count, 1, normals)
