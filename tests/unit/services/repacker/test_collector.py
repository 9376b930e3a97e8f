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
"""Tests of the repacker's host collector
(opie_sched.services.repacker.collector)."""

import os
import types

import fixtures
import testtools

from opie_sched.services.repacker import collector as col


class CollectorTest(testtools.TestCase):

    def test_topology_from_aggregates(self):
        aggs = [types.SimpleNamespace(hosts=['h1', 'h2'], metadata={
                    col.GROUP_KEY: 'g1', col.CLUSTER_KEY: 'c1'}),
                types.SimpleNamespace(hosts=['h2'], metadata={
                    col.GROUP_KEY: 'g2'}),
                types.SimpleNamespace(hosts=['h3'], metadata={})]
        self.assertEqual({'h1': ('g1', 'c1'), 'h2': (None, 'c1'),
                          'h3': (None, None)},
                         col.location_from_aggregates(aggs))

    def server(self, specs=None, status='ACTIVE', flavor=True):
        return types.SimpleNamespace(
            id='s1', name='s', status=status, task_state=None,
            compute_host='h1',
            flavor={'vcpus': 1, 'ram': 2000, 'extra_specs': specs or {}}
            if flavor else None)

    def test_instance_of(self):
        from opie_sched.common import flavors
        i = col.instance_of(self.server(
            flavors.preemptible_extra_specs(1, 2000, 20)))
        self.assertEqual((1, 2000, True, True),
                         (i.vcpus, i.memory_mb, i.preemptible, i.movable))
        self.assertFalse(col.instance_of(self.server()).preemptible)
        self.assertFalse(col.instance_of(
            self.server(status='SHUTOFF')).movable)
        self.assertRaises(col.CollectError, col.instance_of,
                          self.server(flavor=False))

    def test_sample_builds_hosts(self):
        inv = {'VCPU': {'total': 8, 'reserved': 0, 'allocation_ratio': 2.0},
               'MEMORY_MB': {'total': 16512, 'reserved': 512,
                             'allocation_ratio': 1.0},
               'DISK_GB': {'total': 200}}
        docs = {'/resource_providers': {'resource_providers': [
                    {'uuid': 'u1', 'name': 'node1'},
                    {'uuid': 'u2', 'name': 'sharing-pool'}]},
                '/resource_providers/u1/inventories': {'inventories': inv},
                '/resource_providers/u2/inventories': {'inventories': {}}}

        def get(url):
            return types.SimpleNamespace(status_code=200, text='',
                                         json=lambda: docs[url])

        conn = types.SimpleNamespace(
            placement=types.SimpleNamespace(get=get),
            compute=types.SimpleNamespace(
                aggregates=lambda: [],
                hypervisors=lambda details: [types.SimpleNamespace(
                    name='node1', service_details={'host': 'h1'},
                    status='enabled', state='up')],
                servers=lambda details, all_projects: [self.server()]))
        clock = iter(range(0, 1000, 30))
        history = col.History(10, clock=lambda: next(clock))
        c = col.Collector(conn, history)
        c.sample(interval=60)
        c.sample(interval=60)   # 30 s later: not kept
        [h] = c.sample(interval=60)
        self.assertEqual(('h1', 8, 16000, True, 16, 16000),
                         (h.name, h.vcpus, h.memory_mb, h.accepts,
                          h.cpu_allowed, h.memory_allowed))
        self.assertEqual((0.125, 0.125), h.cpu_history)
        self.assertEqual('s1', h.instances[0].id)

    def test_unreadable_cloud(self):
        def boom(url):
            raise RuntimeError('down')

        def denied(url):
            return types.SimpleNamespace(status_code=403, text='no')

        for get, msg in ((boom, 'resource_providers: down'),
                         (denied, 'HTTP 403 no')):
            conn = types.SimpleNamespace(
                placement=types.SimpleNamespace(get=get))
            e = self.assertRaises(col.CollectError,
                                  col.Collector(conn, col.History(3)).nodes)
            self.assertIn(msg, str(e))

    def test_history_persisted(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'h.json')
        h = col.History(2, path)
        for v in (0.1, 0.2, 0.3):
            h.record('a', v, v)
        h.forget(['a'])
        h.save()
        self.assertEqual(([0.2, 0.3], [0.2, 0.3]),
                         col.History(2, path).samples('a'))
        with open(path, 'w') as f:
            f.write('{bad')
        self.assertEqual(([], []), col.History(2, path).samples('a'))
