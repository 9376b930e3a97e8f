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
"""Transparent normal placement on a real in-process Nova: normal servers
land exactly where they land on the same cloud without preemptible ones.
"""

import time

import fixtures

from nova import context as nova_context
from nova.virt import fake

from opie_sched.scheduler import transparent
from tests.functional import base

#: A sequence of normal requests that fills the 3 hosts (24 vCPU) and
#: fragments them under nova's spreading weighers: some requests fail.
NORMAL_SEQUENCE = ('large', 'large', 'large', 'medium', 'medium', 'medium',
                   'large', 'small', 'small', 'small', 'medium', 'small',
                   'small', 'small', 'small')

#: Multi-create requests, (flavor, servers): 8 + 12 + 2 of the 24 vCPU,
#: each instance after the first weighed on what the earlier ones consumed.
MULTI_CREATES = (('medium', 4), ('large', 3), ('small', 2))


def _no_disk_least(original):
    def get_available_resource(self, nodename):
        # nova's fake driver reports disk_available_least = 0 whatever is
        # on the host, which nova's DiskWeigher reads as "no physical disk
        # left" everywhere; a hypervisor with no such measure reports none
        # and nova counts the flavors' disk instead.
        resources = original(self, nodename)
        if resources:
            resources['disk_available_least'] = None
        return resources
    return get_available_resource


class TransparentPlacementTest(base.OpieNovaTestCase):
    """With ``transparent_normal_placement``, nova's own weighers (RAM,
    CPU, disk, I/O, instances...) and opie's full-state weighers all
    enabled, a sequence of normal boots made while preemptible servers fill
    two of the three hosts lands on the same hosts, and fails at the same
    requests, as the same sequence on the same cloud holding no
    preemptible server.
    """

    HOSTS = ('host1', 'host2', 'host3')
    EXTRA_FLAGS = {
        'opie_preemption': {'transparent_normal_placement': True},
        'opie_reconciler': {'run_in_scheduler': False},
        'filter_scheduler': {'weight_classes': [
            'nova.scheduler.weights.all_weighers',
            'opie_sched.scheduler.weights.all_weighers']},
    }

    def setUp(self):
        self.useFixture(fixtures.MockPatchObject(
            fake.FakeDriver, 'get_available_resource',
            _no_disk_least(fake.FakeDriver.get_available_resource)))
        super().setUp()

    def settled(self, server):
        """The server once ACTIVE or ERROR."""
        for _ in range(600):
            server = self.api.get_server(server['id'])
            if server['status'] in ('ACTIVE', 'ERROR'):
                return server
            time.sleep(0.1)
        self.fail('server %s neither ACTIVE nor ERROR: %s'
                  % (server['id'], server['status']))

    def refresh_compute_nodes(self):
        """Run every resource tracker's periodic update, so that the
        ComputeNode stats (nova's I/O and instance counts) no longer count
        the servers just built as building, in both clouds alike.
        """
        ctx = nova_context.get_admin_context()
        for compute in self.computes.values():
            compute.manager.update_available_resource(ctx)

    def place_sequence(self):
        """Boot NORMAL_SEQUENCE one by one: ``([host or None], servers)``."""
        outcome, servers = [], []
        for i, flavor in enumerate(NORMAL_SEQUENCE):
            server = self._build_server(
                name='n%d' % i, flavor_id=self.flavor_ids[flavor],
                networks='none')
            server = self.api.post_server({'server': server})
            server = self.settled(server)
            servers.append(server)
            self.refresh_compute_nodes()
            outcome.append(self.server_host(server)
                           if server['status'] == 'ACTIVE' else None)
        return outcome, servers

    def place_multi_creates(self):
        """Boot MULTI_CREATES, one request each: ``([[host or None]
        in launch order], servers)``.
        """
        outcome, servers = [], []
        for i, (flavor, count) in enumerate(MULTI_CREATES):
            server = self._build_server(
                name='m%d' % i, flavor_id=self.flavor_ids[flavor],
                networks='none')
            server.update(min_count=count, max_count=count,
                          return_reservation_id=True)
            resv = self.api.post_server({'server': server})
            batch = sorted(
                (self.settled(s) for s in self.api.get_servers(
                    search_opts={'reservation_id':
                                 resv['reservation_id']})),
                key=lambda s: s['OS-EXT-SRV-ATTR:launch_index'])
            self.assertEqual(count, len(batch))
            servers += batch
            self.refresh_compute_nodes()
            outcome.append([s['OS-EXT-SRV-ATTR:host']
                            if s['status'] == 'ACTIVE' else None
                            for s in batch])
        return outcome, servers

    def test_multi_creates_land_as_without_preemptibles(self):
        # Each instance of a multi-create is weighed on the normal state
        # after the earlier ones consumed the real HostState; alternates
        # are sorted on it too.
        alone, servers = self.place_multi_creates()
        for server in servers:
            self._delete_server(server)
        self.refresh_compute_nodes()
        preemptibles = [self.boot('small.preemptible', host='host1')
                        for _ in range(6)]
        preemptibles += [self.boot('large.preemptible', host='host2')]
        self.refresh_compute_nodes()
        with_preemptibles, _ = self.place_multi_creates()
        self.assertEqual(alone, with_preemptibles)
        self.assertLess(len(self.live_uuids()
                            & {p['id'] for p in preemptibles}),
                        len(preemptibles))

    def test_normal_boots_land_as_without_preemptibles(self):
        self.assertTrue(transparent.enabled())
        # The cloud with normal servers only.
        alone, servers = self.place_sequence()
        self.assertIn(None, alone)           # some requests failed
        self.assertGreater(len(set(alone) - {None}), 1)
        for server in servers:
            self._delete_server(server)

        # The same cloud with preemptible servers: host1 full (8 small),
        # host2 half full (2 medium), host3 empty.
        preemptibles = [self.boot('small.preemptible', host='host1')
                        for _ in range(8)]
        preemptibles += [self.boot('medium.preemptible', host='host2')
                         for _ in range(2)]
        self.refresh_compute_nodes()
        with_preemptibles, _ = self.place_sequence()

        self.assertEqual(alone, with_preemptibles)
        # The preemptible servers were there and made room as needed.
        live = self.live_uuids()
        self.assertLess(len(live & {p['id'] for p in preemptibles}),
                        len(preemptibles))
        for host in self.HOSTS:
            usage = self.usages(host)
            self.assertLessEqual(
                usage['VCPU'] + usage.get('CUSTOM_PREEMPTIBLE_VCPU', 0),
                base.HOST['vcpus'])
