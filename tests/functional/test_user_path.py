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
"""The operator's path through the real command-line clients.

python-openstackclient and the ``opie-sched`` CLI (openstacksdk) talk to the
in-process Nova running the opie scheduler, exactly as an operator types
the commands (see the install guide's walk-through).
"""

import fixtures
import yaml

from nova.compute import provider_config as nova_provider_config

from opie_sched.demo import clients
from tests.functional import base


class OperatorPathTest(base.OpieNovaTestCase):
    HOSTS = ('host1',)

    def test_preemptible_twin_backfill_and_preempted_list(self):
        cli = self.useFixture(clients.RealClients(self))
        image = self.glance.auto_disk_config_enabled_image['id']
        # The cloud's existing flavors (``openstack flavor create`` needs
        # Keystone to resolve projects, which this in-process cloud lacks).
        self._create_flavor(name='paper.medium', vcpu=2, memory_mb=4000,
                            disk=40, ephemeral=0)
        self._create_flavor(name='paper.large', vcpu=4, memory_mb=8000,
                            disk=80, ephemeral=0)
        cli.opie_sched('flavor', 'create-preemptible', 'paper.medium')
        twin = cli.openstack('flavor', 'show', 'paper.medium.preemptible',
                             '-f', 'json')
        self.assertEqual(
            {'opie:preemptible': 'true',
             'resources:VCPU': '0', 'resources:MEMORY_MB': '0',
             'resources:DISK_GB': '0',
             'resources:CUSTOM_PREEMPTIBLE_VCPU': '2',
             'resources:CUSTOM_PREEMPTIBLE_MEMORY_MB': '4000',
             'resources:CUSTOM_PREEMPTIBLE_DISK_GB': '40'},
            twin['properties'])

        spot = [cli.openstack('server', 'create', '--flavor',
                              'paper.medium.preemptible', '--image', image,
                              '--nic', 'none', '--wait', '-f', 'json',
                              'spot-%d' % i) for i in range(4)]
        self.assertEqual({'ACTIVE'}, {s['status'] for s in spot})
        # host1 (8 vCPU) is full: a fifth preemptible server has no room.
        self.assertRaises(AssertionError, cli.openstack, 'server', 'create',
                          '--flavor', 'paper.medium.preemptible',
                          '--image', image, '--nic', 'none', '--wait',
                          'spot-4')

        normal = cli.openstack('server', 'create', '--flavor', 'paper.large',
                               '--image', image, '--nic', 'none', '--wait',
                               '-f', 'json', 'normal')
        self.assertEqual('ACTIVE', normal['status'])
        self.assertEqual('host1', normal['OS-EXT-SRV-ATTR:host'])

        # 4 vCPU had to be freed: two of the four medium preemptibles.
        # ("openstack server list" needs Keystone to name projects.)
        alive = set()
        for name in ['spot-%d' % i for i in range(4)]:
            try:
                cli.openstack('server', 'show', name, '-f', 'json')
                alive.add(name)
            except AssertionError as exc:
                self.assertIn('No Server found', str(exc))
        self.assertEqual(2, len(alive))
        preempted = cli.opie_sched('preempt', 'list', '--format', 'json')
        self.assertEqual(2, len(preempted))
        self.assertEqual({'spot-%d' % i for i in range(4)} - alive,
                         {p['name'] for p in preempted})
        self.assertEqual({'DELETED'}, {p['status'] for p in preempted})


class ProviderConfigTest(base.OpieNovaTestCase):
    HOSTS = ('host1', 'host2')

    def test_from_placement_is_a_valid_nova_provider_config(self):
        cli = self.useFixture(clients.RealClients(self))
        path = self.useFixture(fixtures.TempDir()).path + '/opie.yaml'
        cli.opie_sched('provider-config', '--from-placement', '--node',
                       'host2', '--output', path)
        with open(path) as f:
            doc = yaml.safe_load(f)
        # nova-compute's own validation accepts it.
        nova_provider_config._validate_provider_config(doc, path)
        [provider] = doc['providers']
        self.assertEqual(self._get_provider_uuid_by_host('host2'),
                         provider['identification']['uuid'])
        totals = {k: v['total'] for item in
                  provider['inventories']['additional']
                  for k, v in item.items()}
        self.assertEqual({'CUSTOM_PREEMPTIBLE_VCPU': 8,
                          'CUSTOM_PREEMPTIBLE_MEMORY_MB': 16000,
                          'CUSTOM_PREEMPTIBLE_DISK_GB': 200}, totals)
