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
"""Tests of the hosts' capacity from Placement
(opie_sched.scheduler.host_capacity)."""

from unittest import mock

import fixtures
from oslo_utils.fixture import uuidsentinel as uuids
import testtools

from nova import objects
from nova.tests.unit.scheduler import fakes

from opie_sched.common import flavors
from opie_sched.preemption import model
from opie_sched.scheduler import host_capacity
from opie_sched.scheduler import request_view


objects.register_all()

PRE = flavors.CLASS_MAP


def summary(vcpu_cap, vcpu_used, pre_vcpu_used=0):
    return {'resources': {
        'VCPU': {'capacity': vcpu_cap, 'used': vcpu_used},
        'MEMORY_MB': {'capacity': 16000, 'used': 1000},
        'DISK_GB': {'capacity': 200, 'used': 10},
        PRE['VCPU']: {'capacity': vcpu_cap, 'used': pre_vcpu_used},
        PRE['MEMORY_MB']: {'capacity': 16000, 'used': 500}}}


class SummaryStateTest(testtools.TestCase):

    def test_capacity_is_placements_and_used_adds_both_classes(self):
        capacity, used = host_capacity.summary_state(summary(112, 96, 12))
        self.assertEqual((112, 16000, 200), tuple(capacity))
        self.assertEqual((108, 1500, 10), tuple(used))

    def test_missing_standard_class(self):
        self.assertIsNone(host_capacity.summary_state({'resources': {
            'VCPU': {'capacity': 8, 'used': 0}}}))
        self.assertIsNone(host_capacity.summary_state(None))
        # no DISK_GB inventory (disks are volumes): no disk capacity, the
        # summary still the judge (issue 30, a suspected item)
        capacity, used = host_capacity.summary_state({'resources': {
            'VCPU': {'capacity': 8, 'used': 4},
            'MEMORY_MB': {'capacity': 16000, 'used': 8000},
            PRE['VCPU']: {'capacity': 8, 'used': 4}}})
        self.assertEqual(((8, 16000, 0), (8, 8000, 0)),
                         (tuple(capacity), tuple(used)))

    def test_view_adds_its_own_claims(self):
        view = request_view.RequestView(mock.Mock(), {uuids.rp: summary(8, 2)})
        view.note_claim(uuids.rp, model.Resources(2, 100, 5))
        view.note_claim(uuids.rp, model.Resources(1, 0, 0))
        capacity, used = view.provider_state(uuids.rp)
        self.assertEqual((5, 1600, 15), tuple(used))
        self.assertIsNone(view.provider_state(uuids.other))

    def test_full_state_reads_the_view_first(self):
        hs = fakes.FakeHostState('h', 'h', {
            'uuid': uuids.rp, 'vcpus_total': 32, 'vcpus_used': 112,
            'total_usable_ram_mb': 16000, 'free_ram_mb': 15000,
            'total_usable_disk_gb': 200, 'disk_mb_used': 0,
            'free_disk_mb': 200 * 1024, 'cpu_allocation_ratio': 4.0,
            'ram_allocation_ratio': 1.0, 'disk_allocation_ratio': 1.0})
        view = request_view.RequestView(mock.Mock(),
                                        {uuids.rp: summary(112, 108)})
        self.assertEqual(((112, 16000, 200), (108, 1500, 10)),
                         tuple(map(tuple, host_capacity.full_state(hs, view))))


class ReservedTest(testtools.TestCase):
    """ComputeNode records count reserved amounts as used; Placement takes
    them off the total before the ratio.
    """

    def node(self):
        return objects.ComputeNode(
            uuid=uuids.rp, vcpus=32, memory_mb=16000, local_gb=200,
            vcpus_used=4 + 108, memory_mb_used=512 + 1000,
            local_gb_used=10, cpu_allocation_ratio=4.0,
            ram_allocation_ratio=1.0, disk_allocation_ratio=1.0)

    def test_compute_node_in_placements_model(self):
        capacity, used = host_capacity.compute_node_state(
            self.node(), model.Resources(4, 512, 0))
        self.assertEqual((112, 15488, 200), tuple(capacity))
        self.assertEqual((108, 1000, 10), tuple(used))

    def test_conf_reserved_is_the_fallback(self):
        self.useFixture(fixtures.MockPatchObject(
            host_capacity.CONF, 'reserved_host_cpus', 4))
        self.useFixture(fixtures.MockPatchObject(
            host_capacity.CONF, 'reserved_host_memory_mb', 512))
        self.useFixture(fixtures.MockPatchObject(
            host_capacity.CONF, 'reserved_host_disk_mb', 0))
        capacity, used = host_capacity.compute_node_state(self.node())
        self.assertEqual((112, 15488, 200), tuple(capacity))
        self.assertEqual((108, 1000, 10), tuple(used))

    def test_reserved_cache_reads_each_provider_once_per_ttl(self):
        now = [0.0]
        cache = host_capacity.ReservedCache(ttl=60, clock=lambda: now[0])
        client = mock.Mock()
        client.get.return_value.status_code = 200
        client.get.return_value.json.return_value = {'inventories': {
            'VCPU': {'total': 32, 'reserved': 4},
            'MEMORY_MB': {'total': 16000, 'reserved': 512}}}
        node = self.node()
        for _ in range(3):
            self.assertEqual((4, 512, 0),
                             tuple(cache.get(client, None, node)))
        self.assertEqual(1, client.get.call_count)
        now[0] = 61
        cache.get(client, None, node)
        self.assertEqual(2, client.get.call_count)
        node.vcpus = 64      # a resized host is read again at once
        cache.get(client, None, node)
        self.assertEqual(3, client.get.call_count)

    def test_reserved_cache_falls_back_when_placement_fails(self):
        self.useFixture(fixtures.MockPatchObject(
            host_capacity.CONF, 'reserved_host_cpus', 2))
        client = mock.Mock()
        client.get.return_value.status_code = 503
        self.assertEqual(2, host_capacity.ReservedCache().get(
            client, None, self.node()).vcpus)
