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
"""Tests of the victims' reservations: the authoritative full state from
Placement allocations (opie_sched.scheduler.reservations)."""

from unittest import mock

import fixtures
from oslo_utils.fixture import uuidsentinel as uuids
import testtools

from opie_sched.common import flavors
from opie_sched.preemption import victim_state as vs
from opie_sched.scheduler import host_capacity
from opie_sched.scheduler import reservations

from tests.unit.scheduler.victim_helpers import flavor
from tests.unit.scheduler.victim_helpers import instance
from tests.unit.scheduler.victim_helpers import NOW


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
