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
"""Tests of opie_sched.common.provider_config, checked with nova's own code."""

import os
import re
import uuid

import fixtures
import jsonschema
import testtools
import yaml

from nova.compute import provider_config as nova_pc

from opie_sched.common import flavors
from opie_sched.common import provider_config
from tests.unit.common import test_flavors

PLACEMENT = 'http://placement.example'
UUID1 = '5d3c1f9e-2d0b-4b1a-9a43-6f3ac2b0e111'
UUID2 = '5d3c1f9e-2d0b-4b1a-9a43-6f3ac2b0e222'


def host(**kw):
    p = {'uuid': UUID1, 'vcpus': 8, 'memory_mb': 16000, 'disk_gb': 200}
    p.update(kw)
    return p


def nova_parse(test, doc):
    """Load ``doc`` the way nova-compute does; return nova's result."""
    path = test.useFixture(fixtures.TempDir()).path
    with open(os.path.join(path, 'opie.yaml'), 'w') as f:
        f.write(provider_config.dump_yaml(doc))
    return nova_pc.get_provider_configs(path)


class BuildProviderConfigTest(testtools.TestCase):

    def test_document(self):
        doc = provider_config.build_provider_config([host(
            reserved_memory_mb=512, reserved_vcpus=1,
            cpu_allocation_ratio=4.0, ram_allocation_ratio=1.5,
            disk_allocation_ratio=1)])
        self.assertEqual({
            'meta': {'schema_version': '1.0'},
            'providers': [{
                'identification': {'uuid': UUID1},
                'inventories': {'additional': [
                    {'CUSTOM_PREEMPTIBLE_VCPU': {
                        'total': 8, 'reserved': 1, 'min_unit': 1,
                        'max_unit': 8, 'step_size': 1,
                        'allocation_ratio': 4.0}},
                    {'CUSTOM_PREEMPTIBLE_MEMORY_MB': {
                        'total': 16000, 'reserved': 512, 'min_unit': 1,
                        'max_unit': 16000, 'step_size': 1,
                        'allocation_ratio': 1.5}},
                    {'CUSTOM_PREEMPTIBLE_DISK_GB': {
                        'total': 200, 'reserved': 0, 'min_unit': 1,
                        'max_unit': 200, 'step_size': 1,
                        'allocation_ratio': 1.0}},
                ]},
            }],
        }, doc)

    def test_classes_are_the_flavor_classes(self):
        doc = provider_config.build_provider_config([host()])
        classes = [next(iter(item)) for item in
                   doc['providers'][0]['inventories']['additional']]
        self.assertEqual(list(flavors.PREEMPTIBLE_CLASSES), classes)

    def test_defaults(self):
        doc = provider_config.build_provider_config([host()])
        for item in doc['providers'][0]['inventories']['additional']:
            inv = next(iter(item.values()))
            self.assertEqual(0, inv['reserved'])
            self.assertEqual(1.0, inv['allocation_ratio'])

    def test_valid_for_nova_schema(self):
        docs = [
            provider_config.build_provider_config([host()]),
            provider_config.build_provider_config(
                [{'uuid': '$COMPUTE_NODE', 'vcpus': 1, 'memory_mb': 1,
                  'disk_gb': 1}]),
            provider_config.build_provider_config(
                [host(uuid=None, name='compute-1.example.org'),
                 host(uuid=UUID2, cpu_allocation_ratio=16)]),
        ]
        for doc in docs:
            jsonschema.validate(doc, nova_pc.SCHEMA_V1)
            self.assertEqual(doc['providers'],
                             nova_pc._validate_provider_config(doc, 'x'))

    def test_loaded_by_nova(self):
        doc = provider_config.build_provider_config(
            [host(), host(uuid=None, name='cmp2', reserved_disk_gb=10)])
        configs = nova_parse(self, doc)
        self.assertEqual({UUID1, 'cmp2'}, set(configs))
        inv = configs['cmp2']['inventories']['additional']
        self.assertEqual(10, inv[2]['CUSTOM_PREEMPTIBLE_DISK_GB']['reserved'])

    def test_compute_node_per_host_file(self):
        doc = provider_config.build_provider_config(
            [{'uuid': provider_config.COMPUTE_NODE, 'vcpus': 4,
              'memory_mb': 8192, 'disk_gb': 100}])
        self.assertEqual({'uuid': '$COMPUTE_NODE'},
                         doc['providers'][0]['identification'])
        self.assertEqual({'$COMPUTE_NODE'}, set(nova_parse(self, doc)))

    def test_uuid_wins_over_name(self):
        doc = provider_config.build_provider_config([host(name='cmp1')])
        self.assertEqual({'uuid': UUID1},
                         doc['providers'][0]['identification'])

    def test_errors(self):
        bad = [
            [],
            [host(uuid=None)],
            [host(uuid='not-a-uuid')],
            [host(uuid=None, name='x' * 201)],
            [host(), host()],
            [host(uuid=None, name='a'), host(uuid=None, name='a')],
            [{'uuid': UUID1, 'vcpus': 8, 'memory_mb': 1}],
            [host(vcpus=0)],
            [host(vcpus=8.0)],
            [host(vcpus=True)],
            [host(memory_mb='1024')],
            [host(reserved_vcpus=9)],
            [host(reserved_memory_mb=-1)],
            [host(cpu_allocation_ratio=0)],
            [host(ram_allocation_ratio='1.0')],
            [host(disk_allocation_ratio=float('inf'))],
        ]
        for providers in bad:
            self.assertRaises(provider_config.ProviderConfigError,
                              provider_config.build_provider_config,
                              providers)

    def test_error_messages(self):
        exc = self.assertRaises(provider_config.ProviderConfigError,
                                provider_config.build_provider_config,
                                [host(uuid=None, name='cmp1', disk_gb=None)])
        self.assertIn('cmp1: disk_gb must be an integer', str(exc))
        exc = self.assertRaises(provider_config.ProviderConfigError,
                                provider_config.build_provider_config,
                                [{'name': 'cmp1', 'vcpus': 2,
                                  'memory_mb': 5}])
        self.assertEqual('cmp1: disk_gb is missing', str(exc))
        self.assertIsInstance(exc, ValueError)

    def test_reserved_may_equal_total(self):
        provider_config.build_provider_config([host(reserved_vcpus=8)])

    def test_generator_input(self):
        doc = provider_config.build_provider_config(
            host(uuid=u) for u in (UUID1, UUID2))
        self.assertEqual(2, len(doc['providers']))


class DumpYamlTest(testtools.TestCase):

    def test_round_trip_and_header(self):
        doc = provider_config.build_provider_config(
            [host(uuid='$COMPUTE_NODE', cpu_allocation_ratio=2.5)])
        text = provider_config.dump_yaml(doc)
        self.assertTrue(text.startswith('#'))
        header = text.split('meta:')[0]
        self.assertTrue(all(line.startswith('#')
                            for line in header.splitlines()))
        self.assertEqual(doc, yaml.safe_load(text))
        # document order is kept: meta first
        self.assertLess(text.index('meta:'), text.index('providers:'))

    def test_no_header(self):
        doc = provider_config.build_provider_config([host()])
        self.assertTrue(provider_config.dump_yaml(doc, header=None)
                        .startswith('meta:'))


# -- Placement on requests-mock --------------------------------------------

class FakePlacement(fixtures.Fixture):
    """GET /resource_providers and their inventories with requests-mock.

    ``providers`` maps uuid -> {'name', 'parent', 'inventories'}.
    """

    def __init__(self, url=PLACEMENT, mocker=None):
        super().__init__()
        self.url = url
        self.mocker = mocker
        self.providers = {}

    def _setUp(self):
        m = self.mocker
        if m is None:
            m = self.useFixture(test_flavors.MockerFixture()).mocker
        self.mocker = m
        versions = {'versions': [{
            'id': 'v1.0', 'max_version': '1.39', 'min_version': '1.0',
            'status': 'CURRENT', 'links': [{'rel': 'self', 'href': ''}]}]}
        m.get(self.url, json=versions)
        m.get(self.url + '/', json=versions)
        base = re.escape(self.url + '/resource_providers')
        m.get(re.compile(base + r'(\?.*)?$'), json=self._list)
        m.get(re.compile(base + r'/([^/?]+)/inventories$'),
              json=self._inventories)

    def add(self, name, vcpus=None, memory_mb=None, disk_gb=None,
            parent=None, rp_uuid=None, reserved=(0, 512, 0),
            ratios=(16.0, 1.5, 1.0), extra=None):
        rp_uuid = rp_uuid or str(uuid.uuid4())
        inventories = {}
        for rc, total, res, ratio in zip(('VCPU', 'MEMORY_MB', 'DISK_GB'),
                                         (vcpus, memory_mb, disk_gb),
                                         reserved, ratios):
            if total is not None:
                inventories[rc] = {'total': total, 'reserved': res,
                                   'min_unit': 1, 'max_unit': total,
                                   'step_size': 1, 'allocation_ratio': ratio}
        inventories.update(extra or {})
        self.providers[rp_uuid] = {'name': name, 'parent': parent,
                                   'inventories': inventories}
        return rp_uuid

    def _list(self, request, context):
        return {'resource_providers': [
            {'uuid': u, 'name': p['name'], 'generation': 1,
             'parent_provider_uuid': p['parent'],
             'root_provider_uuid': p['parent'] or u, 'links': []}
            for u, p in self.providers.items()]}

    def _inventories(self, request, context):
        rp = request.path.split('/resource_providers/')[1].split('/')[0]
        if rp not in self.providers:
            context.status_code = 404
            return {'errors': [{'status': 404, 'title': 'Not Found'}]}
        return {'inventories': self.providers[rp]['inventories'],
                'resource_provider_generation': 1}


class InventoriesFromPlacementTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.placement = self.useFixture(FakePlacement())
        self.conn = test_flavors.sdk_connection(placement=PLACEMENT)
        self.cmp1 = self.placement.add('cmp1', 8, 16000, 200, rp_uuid=UUID1)
        self.cmp2 = self.placement.add('cmp2', 32, 128000, 1000,
                                       rp_uuid=UUID2, reserved=(2, 4096, 10),
                                       ratios=(4.0, 1.0, 2.0))
        self.numa = self.placement.add(
            'cmp2_NUMA0', parent=self.cmp2,
            extra={'CUSTOM_PMEM': {'total': 1}})
        self.log = self.useFixture(fixtures.FakeLogger())

    def test_all_compute_nodes(self):
        providers = provider_config.inventories_from_placement(self.conn)
        self.assertEqual([
            {'uuid': UUID1, 'name': 'cmp1', 'vcpus': 8, 'memory_mb': 16000,
             'disk_gb': 200, 'reserved_vcpus': 0, 'reserved_memory_mb': 512,
             'reserved_disk_gb': 0, 'cpu_allocation_ratio': 16.0,
             'ram_allocation_ratio': 1.5, 'disk_allocation_ratio': 1.0},
            {'uuid': UUID2, 'name': 'cmp2', 'vcpus': 32,
             'memory_mb': 128000, 'disk_gb': 1000, 'reserved_vcpus': 2,
             'reserved_memory_mb': 4096, 'reserved_disk_gb': 10,
             'cpu_allocation_ratio': 4.0, 'ram_allocation_ratio': 1.0,
             'disk_allocation_ratio': 2.0},
        ], providers)
        self.assertIn('skipping resource provider cmp2_NUMA0', self.log.output)
        self.assertIn('no VCPU/MEMORY_MB/DISK_GB inventory', self.log.output)

    def test_end_to_end_with_nova(self):
        providers = provider_config.inventories_from_placement(self.conn)
        doc = provider_config.build_provider_config(providers)
        configs = nova_parse(self, doc)
        self.assertEqual({UUID1, UUID2}, set(configs))
        vcpu = configs[UUID2]['inventories']['additional'][0][
            'CUSTOM_PREEMPTIBLE_VCPU']
        self.assertEqual({'total': 32, 'reserved': 2, 'min_unit': 1,
                          'max_unit': 32, 'step_size': 1,
                          'allocation_ratio': 4.0}, vcpu)

    def test_selected_by_name_or_uuid(self):
        providers = provider_config.inventories_from_placement(
            self.conn, ['cmp2'])
        self.assertEqual([UUID2], [p['uuid'] for p in providers])
        providers = provider_config.inventories_from_placement(
            self.conn, [UUID1, 'cmp1', 'cmp2'])
        self.assertEqual([UUID1, UUID2], [p['uuid'] for p in providers])

    def test_unknown_name(self):
        exc = self.assertRaises(provider_config.ProviderConfigError,
                                provider_config.inventories_from_placement,
                                self.conn, ['cmp1', 'nope'])
        self.assertEqual("resource provider 'nope' not found in Placement",
                         str(exc))

    def test_named_provider_without_inventory(self):
        exc = self.assertRaises(provider_config.ProviderConfigError,
                                provider_config.inventories_from_placement,
                                self.conn, ['cmp2_NUMA0'])
        self.assertIn('has no VCPU/MEMORY_MB/DISK_GB inventory', str(exc))

    def test_partial_inventory_skipped(self):
        self.placement.add('shared-disk-node', 4, 4096)
        providers = provider_config.inventories_from_placement(self.conn)
        self.assertEqual(['cmp1', 'cmp2'], [p['name'] for p in providers])
        self.assertIn('has no DISK_GB inventory', self.log.output)

    def test_no_providers(self):
        self.placement.providers.clear()
        self.assertEqual(
            [], provider_config.inventories_from_placement(self.conn))
