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
"""``opie-status upgrade check`` against a real in-process Nova.

The coordination check reads nova's service records of every cell; the
inventory check reads Placement through nova's own report client (the
scheduler's ``[placement]`` credentials), as on a scheduler host.
"""

import nova.conf
from nova import context as nova_context
from nova import objects
from oslo_upgradecheck import upgradecheck

from opie_sched.cmd import status
from opie_sched import conf as opie_conf
from tests.functional import base

Code = upgradecheck.Code
# As opie-status and the scheduler's modules do.
opie_conf.register_opts(nova.conf.CONF)


class UpgradeCheckTest(base.OpieNovaTestCase):

    EXTRA_FLAGS = {'opie_reconciler': {'run_in_scheduler': False}}

    def setUp(self):
        super().setUp()
        self.checks = status.Checks(nova.conf.CONF, configure_db=False)

    def test_file_lock_with_a_second_scheduler_host(self):
        self.flags(coordination_url=None, group='opie_preemption')
        result = self.checks._check_coordination()
        self.assertEqual(Code.SUCCESS, result.code, result.details)
        self.assertEqual(1, len(status.nova_scheduler_hosts()))
        # A second host's nova-scheduler registers its service record, as
        # nova's service does when it starts.
        objects.Service(nova_context.get_admin_context(), host='sched2',
                        binary='nova-scheduler', topic='scheduler').create()
        self.assertIn('sched2', status.nova_scheduler_hosts())
        result = self.checks._check_coordination()
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('sched2', result.details)
        self.flags(coordination_url='etcd3+http://controller:2379',
                   group='opie_preemption')
        self.assertEqual(Code.SUCCESS,
                         self.checks._check_coordination().code)

    def drop_preemptible_inventory(self, host):
        uuid = self._get_provider_uuid_by_host(host)
        url = '/resource_providers/%s/inventories' % uuid
        body = self.placement.get(url, version='1.14').body
        kept = {rc: inv for rc, inv in body['inventories'].items()
                if not rc.startswith('CUSTOM_PREEMPTIBLE_')}
        self.placement.put(url, {
            'resource_provider_generation':
                body['resource_provider_generation'],
            'inventories': kept}, version='1.14')

    def test_preemptible_inventory_of_the_computes(self):
        result = self.checks._check_inventory()
        self.assertEqual(Code.SUCCESS, result.code, result.details)
        self.assertIn('All 2 compute nodes', result.details)
        self.drop_preemptible_inventory('host2')
        result = self.checks._check_inventory()
        self.assertEqual(Code.WARNING, result.code)
        self.assertIn('host2', result.details)
        self.drop_preemptible_inventory('host1')
        self.assertEqual(Code.FAILURE, self.checks._check_inventory().code)
