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
"""Victim state on Nova objects: what counts as leaving, the authoritative
full state from Placement allocations, Nova-like disk accounting.
"""

import datetime
import types
from unittest import mock

import fixtures
from oslo_utils.fixture import uuidsentinel as uuids
import testtools

from nova import objects
from nova.tests.unit.scheduler import fakes

from opie_sched.common import flavors
from opie_sched.preemption import victim_state as vs
from opie_sched.scheduler import host_capacity
from opie_sched.scheduler import ownership
from opie_sched.scheduler import reservations

objects.register_all()

NOW = datetime.datetime(2026, 11, 23, 12, 0, 0,
                        tzinfo=datetime.timezone.utc)


def flavor(vcpus, ram, root, preemptible=True, ephemeral=0, swap=0):
    specs = flavors.preemptible_extra_specs(
        vcpus, ram, flavors.disk_gb(root, ephemeral, swap)) \
        if preemptible else {}
    return objects.Flavor(vcpus=vcpus, memory_mb=ram, root_gb=root,
                          ephemeral_gb=ephemeral, swap=swap,
                          extra_specs=specs)


def instance(uuid, flv, metadata=None, sysmeta=None, image_ref='img',
             task_state=None, vm_state='active'):
    return objects.Instance(
        uuid=uuid, host='h', node='h', flavor=flv, launched_at=NOW,
        metadata=metadata or {}, system_metadata=sysmeta or {},
        task_state=task_state, vm_state=vm_state, display_name=uuid,
        project_id='p', image_ref=image_ref)


class LeavingTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.flags = self.useFixture(fixtures.MockPatchObject(
            host_capacity.CONF.opie_preemption, 'reservation_timeout', 300))

    def test_user_metadata_cannot_make_a_server_leave(self):
        # the owner sets the keys the service once used: nothing changes
        inst = instance(uuids.a, flavor(1, 2000, 20), metadata={
            vs.PREEMPTED_BY_KEY: 'x', vs.PREEMPTED_AT_KEY: 'now',
            vs.KEY_STATE: vs.TERMINATING})
        self.assertFalse(ownership.instance_is_leaving(inst, now=NOW))
        info = ownership.instance_info(inst, now=NOW)
        self.assertFalse(info.leaving)
        self.assertTrue(info.preemptible)

    def test_service_owned_state_decides(self):
        reserved = vs.reserve('p', NOW - datetime.timedelta(seconds=10))
        inst = instance(uuids.a, flavor(1, 2000, 20),
                        sysmeta=reserved.as_metadata())
        self.assertTrue(ownership.instance_is_leaving(inst, now=NOW))
        stale = vs.reserve('p', NOW - datetime.timedelta(seconds=301))
        inst = instance(uuids.b, flavor(1, 2000, 20),
                        sysmeta=stale.as_metadata())
        self.assertFalse(ownership.instance_is_leaving(inst, now=NOW))
        term = stale.terminating(NOW, 60, 3600)
        inst = instance(uuids.c, flavor(1, 2000, 20),
                        sysmeta=term.as_metadata())
        self.assertTrue(ownership.instance_is_leaving(inst, now=NOW))

    def test_vm_and_task_states(self):
        deleting = instance(uuids.a, flavor(1, 2000, 20),
                            task_state='deleting')
        deleting.updated_at = NOW - datetime.timedelta(seconds=59)
        self.assertTrue(ownership.instance_is_leaving(deleting, now=NOW))
        # issue 30 hole 4: a delete that never finishes (whoever asked
        # for it) leaves only until retry_interval (60 s) after it began
        deleting.updated_at = NOW - datetime.timedelta(seconds=61)
        self.assertFalse(ownership.instance_is_leaving(deleting, now=NOW))
        self.assertEqual(ownership.RUNNING,
                         ownership.instance_state(deleting, now=NOW))
        # a soft-deleted server keeps its allocation until reclaimed or
        # restored: it is not leaving (it is a candidate victim)
        self.assertFalse(ownership.instance_is_leaving(
            instance(uuids.a, flavor(1, 2000, 20), vm_state='soft-delete'),
            now=NOW))
        self.assertFalse(ownership.instance_is_leaving(
            instance(uuids.a, flavor(1, 2000, 20),
                     task_state='soft-deleting'), now=NOW))


class DiskAccountingTest(testtools.TestCase):

    def test_swap_counted_and_volume_root_excluded(self):
        flv = flavor(2, 4000, 40, ephemeral=10, swap=1536)
        self.assertEqual(40 + 10 + 2, ownership.flavor_resources(flv).disk_gb)
        normal = flavor(2, 4000, 40, preemptible=False, ephemeral=10,
                        swap=1536)
        self.assertEqual(12, ownership.flavor_resources(
            normal, boot_from_volume=True).disk_gb)
        bfv = instance(uuids.v, normal, image_ref='')
        self.assertEqual(12, ownership.instance_info(bfv, now=NOW)
                         .resources.disk_gb)
        # a preemptible flavor booted from a volume holds no root disk in
        # CUSTOM_PREEMPTIBLE_DISK_GB either, as the scheduler claims it
        # (nova's is_bfv rule for DISK_GB; issue 30, hole 9)
        self.assertEqual(12, ownership.flavor_resources(
            flv, boot_from_volume=True).disk_gb)

    def test_resources_overrides_win(self):
        # a Ceph-style flavor (resources:DISK_GB=0) holds no disk
        ceph = flavor(2, 4000, 40, preemptible=False)
        ceph.extra_specs = {'resources:DISK_GB': '0'}
        self.assertEqual((2, 4000, 0), tuple(ownership.flavor_resources(ceph)))

    def test_request_resources_like_nova(self):
        spec = objects.RequestSpec(
            flavor=flavor(2, 4000, 40, preemptible=False, swap=512),
            is_bfv=True, num_instances=1)
        self.assertEqual((2, 4000, 1),
                         tuple(ownership.request_resources(spec)))
        spec.is_bfv = False
        self.assertEqual((2, 4000, 41),
                         tuple(ownership.request_resources(spec)))

    def test_consumed_disk_counts_in_the_full_state(self):
        self.useFixture(fixtures.MockPatchObject(
            host_capacity.CONF, 'reserved_host_memory_mb', 0))
        hs = fakes.FakeHostState('h', 'h', {
            'vcpus_total': 8, 'vcpus_used': 0, 'total_usable_ram_mb': 16000,
            'free_ram_mb': 16000, 'total_usable_disk_gb': 200,
            'disk_mb_used': 100 * 1024, 'free_disk_mb': 100 * 1024,
            'cpu_allocation_ratio': 1.0, 'ram_allocation_ratio': 1.0,
            'disk_allocation_ratio': 1.0})
        spec = objects.RequestSpec(flavor=flavor(2, 4000, 40, False),
                                   is_bfv=False, num_instances=1,
                                   pci_requests=None, numa_topology=None,
                                   instance_group=None)
        for _ in range(2):
            before = host_capacity.consumed_disk_gb(hs)
            hs.consume_from_request(spec)
            host_capacity.note_consumed(hs, spec, before)
        capacity, used = host_capacity.full_state(hs)
        # nova never raises disk_mb_used: opie adds what was consumed
        self.assertEqual(100 * 1024, hs.disk_mb_used)
        self.assertEqual((4, 8000, 180), tuple(used))
        # nova refreshes the host state from the compute node: the
        # consumption is then in disk_mb_used and no longer added
        hs.free_disk_mb = 20 * 1024
        hs.disk_mb_used = 180 * 1024
        hs.updated = NOW
        self.assertEqual(180, host_capacity.full_state(hs)[1].disk_gb)


class FakePlacement:

    def __init__(self, allocations):
        self.allocations = allocations
        self.urls = []

    def get(self, url, version=None, global_request_id=None):
        self.urls.append(url)
        resp = mock.Mock(status_code=200)
        resp.json.return_value = {'allocations': {
            c: {'resources': r} for c, r in self.allocations.items()}}
        return resp


class FreshHostViewTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MockPatchObject(
            host_capacity.CONF.opie_preemption, 'reservation_timeout', 300))
        self.rows = {}
        self.migrations = {}

        def owners(cctxt, consumers):
            found = {u: u for u in consumers if u in self.rows}
            found.update({m: i for m, i in self.migrations.items()
                          if m in consumers})
            return found, {i: self.rows[i] for i in set(found.values())}
        self.useFixture(fixtures.MockPatch(
            'opie_sched.scheduler.ownership.allocation_owners',
            side_effect=owners))
        self.useFixture(fixtures.MockPatch(
            'opie_sched.scheduler.reservations.cell_context'))

    def test_every_claim_counts_and_victims_are_sized_by_allocation(self):
        pre = flavors.CLASS_MAP
        client = FakePlacement({
            # a normal instance (claimed by another worker, in flight)
            uuids.n1: {'VCPU': 4, 'MEMORY_MB': 8000, 'DISK_GB': 80},
            # a preemptible boot-from-volume server: no disk allocation
            uuids.p_bfv: {pre['VCPU']: 2, pre['MEMORY_MB']: 4000},
            # a preemptible server with swap: disk as nova counted it
            uuids.p_swap: {pre['VCPU']: 2, pre['MEMORY_MB']: 4000,
                           pre['DISK_GB']: 41},
            # a preemptible reserved by another worker
            uuids.p_res: {pre['VCPU']: 2, pre['MEMORY_MB']: 4000,
                          pre['DISK_GB']: 40},
            # a migration record holding a preemptible's old resources
            uuids.migration: {pre['VCPU']: 1, pre['MEMORY_MB']: 1000},
            # a preemptible claim in flight (no instance in the cell yet)
            uuids.in_flight: {pre['VCPU']: 1},
        })
        flv = flavor(2, 4000, 40)
        self.rows = {
            uuids.p_bfv: instance(uuids.p_bfv, flv, image_ref=''),
            uuids.p_swap: instance(uuids.p_swap, flv),
            uuids.p_res: instance(uuids.p_res, flv, sysmeta=vs.reserve(
                'other', NOW).as_metadata()),
            # resized away (unconfirmed): its source allocation here is
            # the migration's; its owner's move pins it (issue 30)
            uuids.p_moved: instance(uuids.p_moved, flavor(1, 1000, 0)),
        }
        self.migrations = {uuids.migration: uuids.p_moved}
        capacity = (8, 16000, 200)
        hv, rows = reservations.fresh_host_view(
            None, client, 'rp', None, reservations.model.Resources(
                *capacity), 'h', now=NOW)
        self.assertEqual(['/resource_providers/rp/allocations'],
                         client.urls)
        self.assertEqual((12, 21000, 161), tuple(hv.used))
        by_uuid = {i.uuid: i for i in hv.instances}
        self.assertEqual({uuids.p_bfv, uuids.p_swap, uuids.p_res,
                          uuids.p_moved}, set(by_uuid))
        self.assertEqual(0, by_uuid[uuids.p_bfv].resources.disk_gb)
        self.assertEqual(41, by_uuid[uuids.p_swap].resources.disk_gb)
        self.assertEqual((1, 1000, 0),
                         tuple(by_uuid[uuids.p_moved].resources))
        self.assertTrue(by_uuid[uuids.p_res].leaving)
        self.assertTrue(by_uuid[uuids.p_moved].pinned)
        self.assertEqual({uuids.p_bfv, uuids.p_swap},
                         {i.uuid for i in hv.preemptible_instances})
        self.assertEqual(set(by_uuid), set(rows))

    def test_summary_helpers(self):
        summary = {'resources': {
            'VCPU': {'capacity': 8, 'used': 2},
            'MEMORY_MB': {'capacity': 15488, 'used': 0},
            'DISK_GB': {'capacity': 200, 'used': 0},
            flavors.VCPU_CLASS: {'capacity': 8, 'used': 0}}}
        self.assertEqual(((8, 15488, 200), (2, 0, 0)),
                         tuple(map(tuple,
                                   host_capacity.summary_state(summary))))
        self.assertFalse(reservations.summary_has_preemptible(summary))
        summary['resources'][flavors.VCPU_CLASS]['used'] = 1
        self.assertTrue(reservations.summary_has_preemptible(summary))
        self.assertTrue(reservations.summary_has_preemptible(None))
        self.assertIsNone(host_capacity.summary_state({'resources': {}}))


class TerminateTest(testtools.TestCase):
    """actions.terminate on instances as the database returns them: every
    step re-checks the victim and wins the record's compare-and-set first.
    """

    def setUp(self):
        super().setUp()
        from opie_sched.scheduler import actions
        self.actions = actions
        self.rows = {}
        self.useFixture(fixtures.MockPatch(
            'opie_sched.scheduler.reservations.load_by_uuid',
            side_effect=lambda cctxt, uuids: {
                u: self.rows[u] for u in uuids if u in self.rows}))
        self.useFixture(fixtures.MockPatch(
            'opie_sched.scheduler.reservations.cell_context',
            side_effect=lambda ctx, cell: types.SimpleNamespace(
                request_id=ctx.request_id)))
        # one journal of every step, in order
        self.calls = []
        self.cas_wins = True

        def swap(cctxt, inst, expected, new):
            self.calls.append(('swap', inst.uuid, expected, new))
            return self.cas_wins

        self.useFixture(fixtures.MockPatch(
            'opie_sched.scheduler.reservations.swap_state',
            side_effect=swap))
        self.api = mock.Mock()
        for verb in ('delete', 'stop', 'shelve', 'shelve_offload'):
            getattr(self.api, verb).side_effect = (
                lambda c, inst, verb=verb: self.calls.append(
                    (verb, inst.uuid, c.request_id)))
        self.useFixture(fixtures.MockPatchObject(
            actions, 'compute_api', return_value=self.api))
        self.useFixture(fixtures.MockPatchObject(
            actions, 'mark_victim', side_effect=lambda c, inst, *a:
            self.calls.append(('mark', inst.uuid, c.request_id))))
        # retried victims were marked by their first attempt
        self.useFixture(fixtures.MockPatchObject(
            actions, 'is_marked', return_value=True))
        self.ctx = mock.Mock(request_id='req-1')
        # the guest's notice (server metadata); in the journal when
        # journal_notices
        self.notices = {}
        self.journal_notices = False

        def write(cctxt, uuid, metadata, delete):
            self.assertFalse(delete)
            if self.journal_notices:
                self.calls.append(('notice', uuid))
            self.notices.setdefault(uuid, {}).update(metadata)

        def remove(cctxt, uuid, key):
            self.notices.get(uuid, {}).pop(key, None)

        self.useFixture(fixtures.MockPatchObject(
            actions.main_db, 'instance_metadata_update', side_effect=write))
        self.useFixture(fixtures.MockPatchObject(
            actions.main_db, 'instance_metadata_delete', side_effect=remove))
        self.sleep = self.useFixture(fixtures.MockPatch(
            'opie_sched.scheduler.actions.time.sleep')).mock
        # the notice's wait (which ends early when the victims release:
        # tests/functional/test_headroom.py) as one sleep of its length
        self.useFixture(fixtures.MockPatch(
            'opie_sched.scheduler.actions.wait_notice',
            side_effect=lambda ctx, by_cell, seconds: self.sleep(seconds)))

    def reserved(self, uuid, flv=None, request_id='req-1', **kwargs):
        state = vs.reserve(uuids.p, NOW, request_id, 'details')
        self.rows[uuid] = instance(uuid, flv or flavor(2, 4000, 40),
                                   sysmeta=state.as_metadata(), **kwargs)
        return state

    def test_a_victim_resized_to_a_normal_flavor_is_spared(self):
        state = self.reserved(uuids.a, flavor(2, 4000, 40, False))
        # a notice written before (the market's, or ours before a resize)
        self.notices[uuids.a] = {vs.NOTICE_KEY: 'x',
                                 vs.DEADLINE_KEY: 'y', 'mine': 'z'}
        self.assertEqual([], self.actions.terminate(
            self.ctx, None, [uuids.a], uuids.p, action='delete'))
        # its record is cleared (compare-and-set), nothing else happens
        self.assertEqual([('swap', uuids.a, state, None)], self.calls)
        # and the notice is withdrawn, the owner's keys kept
        self.assertEqual({'mine': 'z'}, self.notices[uuids.a])

    def test_the_guest_is_noticed_before_the_action(self):
        self.useFixture(fixtures.MockPatchObject(
            host_capacity.CONF.opie_preemption, 'notice_seconds', 7.5))
        self.useFixture(fixtures.MockPatchObject(
            host_capacity.CONF.opie_preemption, 'reservation_timeout', 300))
        self.journal_notices = True
        self.reserved(uuids.a)
        self.reserved(uuids.b, request_id='req-other')
        self.assertEqual([uuids.a], self.actions.terminate(
            self.ctx, None, [uuids.a, uuids.b], uuids.p,
            action='stop'))
        self.assertEqual(['notice', 'swap', 'mark', 'stop'],
                         [c[0] for c in self.calls])
        # only the victim this request may act on; the cause word only
        self.assertEqual([uuids.a], list(self.notices))
        notice = self.notices[uuids.a]
        deadline = notice[vs.DEADLINE_KEY]
        self.assertEqual('preemption at %s (stop): preempted by the '
                         'scheduler' % deadline, notice[vs.NOTICE_KEY])
        self.sleep.assert_called_once_with(7.5)

    def test_notice_waits_once_for_all_hosts_and_is_bounded(self):
        self.useFixture(fixtures.MockPatchObject(
            host_capacity.CONF.opie_preemption, 'notice_seconds', 500))
        self.useFixture(fixtures.MockPatchObject(
            host_capacity.CONF.opie_preemption, 'release_timeout', 120))
        self.useFixture(fixtures.MockPatchObject(
            host_capacity.CONF.opie_preemption, 'reservation_timeout', 300))
        self.reserved(uuids.a)
        self.reserved(uuids.b)
        noticed = self.actions.notify_guests(
            self.ctx, [('cell1', [uuids.a], uuids.p),
                       ('cell2', [uuids.b], uuids.p)], 'delete')
        self.assertEqual({uuids.a, uuids.b}, noticed)
        # one wait, bounded by release_timeout and reservation_timeout / 3
        self.sleep.assert_called_once_with(100.0)
        # a retry gives no new notice and does not wait
        self.sleep.reset_mock()
        self.journal_notices = True
        self.calls.clear()
        self.actions.terminate(self.ctx, None, [uuids.a], 'reconciler',
                               action='delete', retry=True)
        self.assertNotIn('notice', [c[0] for c in self.calls])
        self.sleep.assert_not_called()

    def test_record_written_before_the_delete_and_failure_is_kept(self):
        state = self.reserved(uuids.a)
        self.assertEqual([uuids.a], self.actions.terminate(
            self.ctx, None, [uuids.a], uuids.p, action='delete'))
        [swap, mark, delete] = self.calls
        # the ORDER: the record, then the owner's marks, then the delete
        self.assertEqual(('swap', uuids.a, state), swap[:3])
        new = swap[3]
        self.assertEqual((vs.TERMINATING, 1, uuids.p, 'req-1'),
                         (new.state, new.attempts, new.preemptor,
                          new.request_id))
        self.assertIsNotNone(new.next_attempt)
        # the victim's actions carry a fresh request id, never the
        # preemptor's
        self.assertNotEqual('req-1', new.action_request)
        self.assertEqual(('mark', uuids.a, new.action_request), mark)
        self.assertEqual(('delete', uuids.a, new.action_request), delete)
        # a failing delete: nothing done, the record stays terminating
        self.calls.clear()
        self.reserved(uuids.b)
        self.api.delete.side_effect = RuntimeError('compute down')
        with self.assertLogs('opie_sched.scheduler.actions', 'WARNING'):
            done = self.actions.terminate(self.ctx, None, [uuids.b],
                                          uuids.p, action='delete')
        self.assertEqual([], done)
        self.assertEqual(['swap', 'mark'], [c[0] for c in self.calls])

    def test_only_the_record_owner_acts(self):
        # another request's reservation, no record at all, a lost
        # compare-and-set: no stop, no delete, no mark
        self.reserved(uuids.a, request_id='req-other')
        self.rows[uuids.b] = instance(uuids.b, flavor(2, 4000, 40))
        self.assertEqual([], self.actions.terminate(
            self.ctx, None, [uuids.a, uuids.b], uuids.p))
        self.assertEqual([], self.calls)
        self.reserved(uuids.c)
        self.cas_wins = False
        self.assertEqual([], self.actions.terminate(
            self.ctx, None, [uuids.c], uuids.p))
        self.assertEqual(['swap'], [c[0] for c in self.calls])

    def test_gone_and_deleting_victims(self):
        # gone: nothing; being deleted by its owner: the record turns
        # terminating (so a delete that never finishes is retried) but
        # nothing is called now
        self.reserved(uuids.b, task_state='deleting')
        self.assertEqual([], self.actions.terminate(
            self.ctx, None, [uuids.a, uuids.b], uuids.p))
        self.assertEqual(['swap'], [c[0] for c in self.calls])
        self.assertEqual(vs.TERMINATING, self.calls[0][3].state)

    def test_stuck_deleting_victim_is_deleted_again_then_faulted(self):
        state = vs.reserve(uuids.p, NOW, 'req-0').terminating(NOW, 1, 10)
        state = state.terminating(NOW, 1, 10)
        self.rows[uuids.a] = instance(uuids.a, flavor(2, 4000, 40),
                                      sysmeta=state.as_metadata(),
                                      task_state='deleting')
        self.useFixture(fixtures.MockPatchObject(
            host_capacity.CONF.opie_preemption, 'max_attempts', 3))
        faults = self.useFixture(fixtures.MockPatchObject(
            self.actions, '_add_fault')).mock
        with mock.patch.object(self.actions.timeutils, 'utcnow',
                               return_value=NOW + datetime.timedelta(
                                   seconds=60)), \
                self.assertLogs('opie_sched.scheduler.actions',
                                'ERROR') as logs:
            self.assertEqual([uuids.a], self.actions.terminate(
                self.ctx, None, [uuids.a], 'reconciler', retry=True))
        self.assertEqual(['swap', 'delete'], [c[0] for c in self.calls])
        self.assertEqual(3, self.calls[0][3].attempts)
        self.assertIn('Preemption stuck', '\n'.join(logs.output))
        faults.assert_called_once()
        # before the new next_attempt: counted as leaving, left alone
        new = self.calls[0][3]
        self.rows[uuids.a].system_metadata = new.as_metadata()
        self.calls.clear()
        with mock.patch.object(self.actions.timeutils, 'utcnow',
                               return_value=new.next_attempt
                               - datetime.timedelta(seconds=1)):
            self.assertEqual([], self.actions.terminate(
                self.ctx, None, [uuids.a], 'reconciler', retry=True))
        self.assertEqual([], self.calls)

    def test_shelve_refused_by_nova_falls_back_to_delete(self):
        # issue 30 hole 3: the state read allowed a shelve, Nova refused
        # it (the state changed since): the record switches to delete and
        # the delete is sent at once, so no retry shelves it again
        from nova import exception
        flv = flavor(2, 4000, 40)
        flv.extra_specs[vs.BEHAVIOR_SPEC] = vs.SHELVE
        self.reserved(uuids.a, flv)
        self.api.shelve.side_effect = exception.InstanceInvalidState(
            attr='vm_state', instance_uuid=uuids.a, state='rescued',
            method='shelve')
        self.useFixture(fixtures.MockPatchObject(
            self.actions, '_add_fault', side_effect=lambda c, inst, msg, d:
            self.calls.append(('fault', inst.uuid, msg))))
        self.assertEqual([uuids.a], self.actions.terminate(
            self.ctx, None, [uuids.a], uuids.p, action='delete'))
        self.assertEqual(['swap', 'mark', 'swap', 'fault', 'delete'],
                         [c[0] for c in self.calls])
        first, second = self.calls[0][3], self.calls[2][3]
        self.assertEqual((vs.SHELVE, first, vs.DELETE),
                         (first.behavior, self.calls[2][2], second.behavior))

    def test_shelve_refused_by_state_is_deleted_without_a_shelve(self):
        flv = flavor(2, 4000, 40)
        flv.extra_specs[vs.BEHAVIOR_SPEC] = vs.SHELVE
        self.reserved(uuids.a, flv, vm_state='rescued')
        self.useFixture(fixtures.MockPatchObject(
            self.actions, '_add_fault', side_effect=lambda c, inst, msg, d:
            self.calls.append(('fault', inst.uuid, msg))))
        self.assertEqual([uuids.a], self.actions.terminate(
            self.ctx, None, [uuids.a], uuids.p, action='delete'))
        self.assertEqual(['swap', 'mark', 'fault', 'delete'],
                         [c[0] for c in self.calls])
        self.assertEqual(vs.DELETE, self.calls[0][3].behavior)
        self.assertIn('shelve is not possible in state rescued',
                      self.calls[2][2])

    def test_behaviour_from_the_flavor_then_from_the_record(self):
        flv = flavor(2, 4000, 40)
        flv.extra_specs[vs.BEHAVIOR_SPEC] = vs.SHELVE
        self.reserved(uuids.a, flv)
        self.assertEqual([uuids.a], self.actions.terminate(
            self.ctx, None, [uuids.a], uuids.p, action='delete'))
        self.assertEqual(['swap', 'mark', 'shelve'],
                         [c[0] for c in self.calls])
        new = self.calls[0][3]
        self.assertEqual(vs.SHELVE, new.behavior)
        # the next step: a shelved victim is offloaded, an offloaded one's
        # record cleared (the retry passes action=delete: the record wins)
        inst = self.rows[uuids.a]
        inst.system_metadata = new.as_metadata()
        inst.vm_state = 'shelved'
        self.calls.clear()
        self.actions.finish(self.ctx, None, [uuids.a])
        self.assertEqual(['swap', 'shelve_offload'],
                         [c[0] for c in self.calls])
        inst.system_metadata = self.calls[0][3].as_metadata()
        inst.vm_state = 'shelved_offloaded'
        self.calls.clear()
        self.actions.finish(self.ctx, None, [uuids.a])
        self.assertEqual(['swap'], [c[0] for c in self.calls])
        self.assertIsNone(self.calls[0][3])


class ProviderPreemptibleFreeTest(testtools.TestCase):
    """What Placement admits of a preemptible claim: its own inventories'
    capacity less their usage, per class.
    """

    def test_capacity_less_usage_per_preemptible_class(self):
        pre = flavors.CLASS_MAP
        bodies = {
            'inventories': {'inventories': {
                'VCPU': {'total': 8, 'reserved': 0, 'allocation_ratio': 2.0},
                pre['VCPU']: {'total': 8, 'reserved': 0,
                              'allocation_ratio': 1.0},
                pre['MEMORY_MB']: {'total': 16512, 'reserved': 512,
                                   'allocation_ratio': 1.0}}},
            'usages': {'usages': {'VCPU': 4, pre['VCPU']: 6,
                                  pre['MEMORY_MB']: 12000}}}

        def get(url, version=None, global_request_id=None):
            resp = mock.Mock(status_code=200)
            resp.json.return_value = bodies[url.rsplit('/', 1)[1]]
            return resp
        client = mock.Mock(get=get)
        free = reservations.provider_preemptible_free(client, None, 'rp')
        # no preemptible disk inventory: nothing of it is free
        self.assertEqual((2, 4000, 0), tuple(free))

    def test_placement_error(self):
        client = mock.Mock(get=mock.Mock(return_value=mock.Mock(
            status_code=503)))
        self.assertRaises(reservations.PlacementError,
                          reservations.provider_preemptible_free, client,
                          None, 'rp')
