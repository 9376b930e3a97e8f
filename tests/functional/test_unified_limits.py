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
"""A preemptible quota of its own with Nova's unified limits.

A preemptible flavor requests ``resources:VCPU=0``, ``MEMORY_MB=0``,
``DISK_GB=0`` and the ``CUSTOM_PREEMPTIBLE_*`` classes instead
(:mod:`opie_sched.common.flavors`), so nova's ``UnifiedLimitsDriver``
counts a preemptible boot against ``class:CUSTOM_PREEMPTIBLE_VCPU`` (and
``_MEMORY_MB``, ``_DISK_GB``) and ``servers``, never against
``class:VCPU``: the deltas come from the flavor's Placement request, the
usage from the project's Placement usages. Run on the real Nova API with
oslo.limit's fixture standing for Keystone's limits.
"""

from oslo_limit import fixture as limit_fixture

from nova.limit import local as local_limit
from nova.tests.functional.api import client

from tests.functional import base

PREEMPTIBLE_VCPU = 'class:CUSTOM_PREEMPTIBLE_VCPU'
#: nova's 403 message names the exceeded limit so
VCPU_OVER = 'Resource class:VCPU is over limit of 4'
PREEMPTIBLE_OVER = 'Resource %s is over limit of 4' % PREEMPTIBLE_VCPU


class UnifiedLimitsTest(base.OpieNovaTestCase):
    HOSTS = ('host1', 'host2')

    def setUp(self):
        super().setUp()
        self.flags(driver='nova.quota.UnifiedLimitsDriver', group='quota')
        registered = {local_limit.SERVER_METADATA_ITEMS: 128,
                      local_limit.INJECTED_FILES: 5,
                      local_limit.INJECTED_FILES_CONTENT: 10 * 1024,
                      local_limit.INJECTED_FILES_PATH: 255,
                      local_limit.KEY_PAIRS: 100,
                      local_limit.SERVER_GROUPS: 10,
                      local_limit.SERVER_GROUP_MEMBERS: 10,
                      'servers': 20,
                      'class:VCPU': 100,
                      'class:MEMORY_MB': 200000,
                      'class:DISK_GB': 2000,
                      PREEMPTIBLE_VCPU: 100,
                      'class:CUSTOM_PREEMPTIBLE_MEMORY_MB': 200000,
                      'class:CUSTOM_PREEMPTIBLE_DISK_GB': 2000}
        # this project: 4 normal vCPU and 4 preemptible vCPU
        project = {self.api.project_id: {'class:VCPU': 4,
                                         PREEMPTIBLE_VCPU: 4}}
        self.useFixture(limit_fixture.LimitFixture(registered, project))

    def refused(self, flavor):
        error = self.assertRaises(
            client.OpenStackApiException, self.api.post_server,
            {'server': self._build_server(
                flavor_id=self.flavor_ids[flavor], networks='none')})
        self.assertEqual(403, error.response.status_code)
        return error.response.text

    def test_at_the_normal_limit_preemptibles_boot_to_their_own(self):
        self.boot('large', name='normal')
        self.assertIn(VCPU_OVER, self.refused('small'))
        p = [self.boot('medium.preemptible', name='p%d' % i)
             for i in range(2)]
        text = self.refused('small.preemptible')
        self.assertIn(PREEMPTIBLE_OVER, text)
        self.assertNotIn(VCPU_OVER, text)
        # nobody was preempted for it
        self.assertEqual({s['id'] for s in p} | {
            s['id'] for s in self.api.get_servers()
            if s['name'] == 'normal'}, self.live_uuids())

    def test_at_the_preemptible_limit_normal_servers_boot_to_theirs(self):
        [self.boot('medium.preemptible', name='p%d' % i) for i in range(2)]
        self.assertIn(PREEMPTIBLE_OVER, self.refused('small.preemptible'))
        self.boot('large', name='normal')
        text = self.refused('small')
        self.assertIn(VCPU_OVER, text)
        self.assertNotIn(PREEMPTIBLE_OVER, text)
        self.assertEqual(3, len(self.live_uuids()))
