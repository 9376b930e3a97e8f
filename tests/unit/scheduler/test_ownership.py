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
"""Tests of opie_sched.scheduler.ownership on nova objects: what counts as
leaving, Nova-like disk accounting and the resources leaving victims hold.
"""

import datetime

import fixtures
from oslo_utils.fixture import uuidsentinel as uuids
import testtools

from nova import objects
from nova.tests.unit.scheduler import fakes

from opie_sched.common import flavors
from opie_sched.preemption import ownership as rules
from opie_sched.preemption import victim_state as vs
from opie_sched.scheduler import host_capacity
from opie_sched.scheduler import ownership
from tests.unit.scheduler import ownership_helpers
from tests.unit.scheduler.ownership_helpers import PRE
from tests.unit.scheduler.victim_helpers import flavor
from tests.unit.scheduler.victim_helpers import instance
from tests.unit.scheduler.victim_helpers import NOW


class HeldResourcesTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MockPatchObject(
            ownership.CONF.opie_preemption, 'retry_interval', 60))

    def test_what_placement_holds(self):
        pre = objects.Flavor(name='p', vcpus=2, memory_mb=4000, root_gb=40,
                             ephemeral_gb=0, swap=0, extra_specs=dict(PRE))
        self.assertEqual((2, 4000, 40), tuple(ownership.flavor_resources(pre)))
        ceph = objects.Flavor(name='c', vcpus=2, memory_mb=4000, root_gb=40,
                              ephemeral_gb=0, swap=0,
                              extra_specs={'resources:DISK_GB': '0'})
        self.assertEqual((2, 4000, 0), tuple(ownership.flavor_resources(ceph)))
        self.assertEqual((2, 4000, 0), tuple(ownership.flavor_resources(
            objects.Flavor(name='v', vcpus=2, memory_mb=4000, root_gb=40,
                           ephemeral_gb=0, swap=0, extra_specs={}),
            boot_from_volume=True)))

    def test_volume_booted_preemptible_holds_no_root_disk(self):
        # issue 30, hole 9: nova's is_bfv rule for DISK_GB, applied to the
        # preemptible disk class (never raised, idempotent)
        key = rules.PREEMPTIBLE_DISK_KEY
        specs = flavors.preemptible_extra_specs(2, 4000, 40 + 10 + 1)
        lowered = rules.volume_booted_specs(specs, 10, 512)
        self.assertEqual('11', lowered[key])
        self.assertEqual('51', specs[key])
        self.assertIs(lowered, rules.volume_booted_specs(lowered, 10, 512))
        ceph = flavors.preemptible_extra_specs(2, 4000, 0)
        self.assertIs(ceph, rules.volume_booted_specs(ceph, 10, 0))
        self.assertIs(PRE, rules.volume_booted_specs(PRE, 40, 0))
        bad = dict(PRE, **{key: 'lots'})
        self.assertIs(bad, rules.volume_booted_specs(bad, 0, 0))
        self.assertEqual({}, rules.volume_booted_specs({}, 0, 0))
        pre = objects.Flavor(name='p', vcpus=2, memory_mb=4000, root_gb=40,
                             ephemeral_gb=0, swap=0, extra_specs=dict(PRE))
        self.assertEqual((2, 4000, 0), tuple(ownership.flavor_resources(
            pre, boot_from_volume=True)))
        spec = objects.RequestSpec(flavor=pre, is_bfv=True)
        self.assertEqual((2, 4000, 0),
                         tuple(ownership.request_resources(spec)))
        clone = ownership.volume_booted_flavor(spec)
        self.assertEqual('0', clone.extra_specs[key])
        self.assertEqual('40', pre.extra_specs[key])
        self.assertIsNone(ownership.volume_booted_flavor(
            objects.RequestSpec(flavor=pre, is_bfv=False)))
        self.assertIsNone(ownership.volume_booted_flavor(
            objects.RequestSpec(flavor=pre)))

    def test_provider_instances_pin_a_migration_owner(self):
        rows = {}
        for uuid in ('mover', 'other'):
            row = objects.Instance(
                uuid=uuid, flavor=objects.Flavor(
                    name='p', vcpus=2, memory_mb=4000, root_gb=40,
                    ephemeral_gb=0, swap=0, extra_specs=dict(PRE)),
                launched_at=ownership_helpers.NOW, task_state=None,
                vm_state='active',
                display_name=uuid, project_id='p', system_metadata={})
            rows[uuid] = row

        def owners_of(cctxt, consumers):
            self.assertEqual({'mig', 'other'}, set(consumers))
            return {'mig': 'mover', 'other': 'other'}, rows
        pre = {flavors.VCPU_CLASS: 2, flavors.MEMORY_MB_CLASS: 4000}
        infos, _ = ownership.provider_instances(None, {
            'mig': pre, 'other': pre, 'mover': {'VCPU': 4},
            'in-flight': {'VCPU': 1}}, owners_of, now=ownership_helpers.NOW)
        by_uuid = {i.uuid: i for i in infos}
        self.assertTrue(by_uuid['mover'].pinned)
        self.assertFalse(by_uuid['other'].pinned)
        self.assertEqual((2, 4000, 0), tuple(by_uuid['mover'].resources))


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
