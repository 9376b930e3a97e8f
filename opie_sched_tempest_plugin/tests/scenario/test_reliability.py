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
"""Die-Hard placement (thesis Paper VI) through the public API: a
multi-create with scheduler hints ``opie_tasks``/``opie_target``/
``opie_hours`` is spread one task per host over the failure domains that
host aggregates declare (metadata ``opie:network_domain``).
"""

import time

from tempest import config
from tempest.lib.common.utils import data_utils
from tempest.lib import decorators

from opie_sched_tempest_plugin import base

CONF = config.CONF

NETWORK_KEY = 'opie:network_domain'


class FailureDomainTest(base.OpieBaseTest):
    """Two hosts in two network domains, a third in none (made the
    emptiest, so nova's weighers alone would pick it).
    """

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.opie.reliability:
            raise cls.skipException('[opie] reliability = false: the '
                                    'scheduler has no FailureDomainFilter')

    @classmethod
    def resource_setup(cls):
        super().resource_setup()
        cls.normal, _ = cls.flavor_pair()
        _, body = cls.call(cls.admin, 'GET', '/os-hypervisors/detail',
                           '2.53')
        hosts = sorted(h['service']['host'] for h in body['hypervisors']
                       if h['state'] == 'up' and h['status'] == 'enabled')
        if len(hosts) < 3:
            raise cls.skipException('needs 3 compute hosts, the cloud has '
                                    '%d' % len(hosts))
        cls.domain_hosts = hosts[:2]
        cls.outside = hosts[2]
        cls.domains = {}
        for index, host in enumerate(cls.domain_hosts):
            domain = data_utils.rand_name('opie-net%d' % index)
            _, agg = cls.call(cls.admin, 'POST', '/os-aggregates', json={
                'aggregate': {'name': domain}})
            agg_id = agg['aggregate']['id']
            cls.addClassResourceCleanup(cls.call, cls.admin, 'DELETE',
                                        '/os-aggregates/%s' % agg_id)
            cls.call(cls.admin, 'POST', '/os-aggregates/%s/action' % agg_id,
                     json={'add_host': {'host': host}})
            cls.addClassResourceCleanup(
                cls.call, cls.admin, 'POST',
                '/os-aggregates/%s/action' % agg_id,
                json={'remove_host': {'host': host}})
            cls.call(cls.admin, 'POST', '/os-aggregates/%s/action' % agg_id,
                     json={'set_metadata': {'metadata': {
                         NETWORK_KEY: domain}}})
            cls.domains[host] = domain

    def _service_hosts(self, ids):
        servers = self.server_map(self.admin, all_projects=True)
        return {i: servers[i].compute_host for i in ids}

    def _ballast(self):
        """One normal server (admin's) on each domain host, so the host
        outside every domain is the emptiest.
        """
        for host in self.domain_hosts:
            self.boot(self.admin, self.normal,
                      availability_zone='nova:%s' % host)

    @decorators.idempotent_id('a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c13')
    def test_tasks_spread_over_domains(self):
        self._ballast()
        ids = self.boot(self.primary, self.normal, 2, hints={
            'opie_tasks': '2', 'opie_target': '0.5', 'opie_hours': '1'})
        placed = self._service_hosts(ids)
        self.assertEqual(sorted(self.domain_hosts), sorted(placed.values()),
                         'one task per host, on the hosts of the two '
                         'domains (never %s, which is in none)'
                         % self.outside)

    @decorators.idempotent_id('b2c3d4e5-f6a7-4b8c-9d0e-1f2a3b4c5d14')
    def test_impossible_request_fails_cleanly(self):
        """More tasks than hosts in domains, or a malformed hint: the
        servers go to ERROR (no valid host), nothing runs unprotected.
        """
        for count, hints in ((3, {'opie_tasks': '3'}),
                             (2, {'opie_tasks': '2', 'opie_target': '2'})):
            ids = self.boot(self.primary, self.normal, count, hints=hints,
                            wait=False)
            deadline = time.monotonic() + CONF.opie.build_timeout
            while True:
                servers = self.server_map(self.primary)
                if all(servers[i].status in ('ERROR', 'ACTIVE')
                       for i in ids) or time.monotonic() > deadline:
                    break
                time.sleep(1)
            self.assertEqual(['ERROR'] * count,
                             [servers[i].status for i in ids], hints)
            self.assertIn('No valid host',
                          (servers[ids[0]].fault or {}).get('message', ''))
