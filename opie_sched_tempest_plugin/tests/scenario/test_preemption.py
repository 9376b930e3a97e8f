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
"""Preemption on a running cloud, as its users see it.

Each test starts from the cloud as it is (normally empty), fills the
preemptible room it finds, acts, and deletes what it booted. Run these
tests serially: they fill the whole cloud.
"""

from tempest import config
from tempest.lib import decorators

from opie_sched_tempest_plugin import base

CONF = config.CONF

FORGED_KEY = 'opie:preempted_by'


class PreemptionTest(base.OpieBaseTest):
    """Preemptible and normal boots; a normal server on a
    preemptible-full cloud; owners seeing why; forged victim marks.
    """

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.opie.preemption:
            raise cls.skipException('[opie] preemption = false')

    @classmethod
    def resource_setup(cls):
        super().resource_setup()
        cls.normal, cls.preemptible = cls.flavor_pair()

    @decorators.idempotent_id('6b1f3c1e-2d53-4d0c-9d57-0f1e6a3c9a01')
    def test_preemptible_and_normal_boot(self):
        """A preemptible server takes preemptible inventory only; a normal
        one standard inventory only.
        """
        hosts = self.hosts()
        pre = self.boot(self.primary, self.preemptible)[0]
        norm = self.boot(self.primary, self.normal)[0]
        after = self.hosts()
        for server_id, classes, other in (
                (pre, base.PREEMPTIBLE.values(), base.STANDARD),
                (norm, base.STANDARD, base.PREEMPTIBLE.values())):
            allocs = self.placement(self.admin, '/allocations/%s'
                                    % server_id)['allocations']
            self.assertEqual(1, len(allocs), allocs)
            resources = list(allocs.values())[0]['resources']
            self.assertTrue(set(classes) & set(resources), resources)
            self.assertFalse(set(other) & set(resources), resources)
        self.assertEqual(
            sum(h['used'].get('CUSTOM_PREEMPTIBLE_VCPU', 0)
                for h in hosts.values()) + self.preemptible.size['VCPU'],
            sum(h['used'].get('CUSTOM_PREEMPTIBLE_VCPU', 0)
                for h in after.values()))

    @decorators.idempotent_id('0c4f8b6e-5a3f-4f0e-8c7e-3c5b2a1d9e02')
    def test_normal_boot_preempts_and_owner_sees_why(self):
        """On a preemptible-full cloud a normal server (alt's) becomes
        ACTIVE; the minimum number of the primary's preemptible servers go,
        and their owner sees a ``preempt`` action in the event list.
        """
        fill, _placed = self.fill_with_preemptibles(self.primary,
                                                    self.preemptible)
        normal = self.boot(self.alt, self.normal)[0]
        host = self.placement_of([normal])[normal]
        self.assertIsNotNone(host)
        present = self.server_map(self.primary)
        victims = [i for i in fill if i not in present]
        # A normal server of the same size as a preemptible one needs
        # exactly one victim (the fill left no room for even one more).
        self.assertEqual(1, len(victims), 'victims of one normal boot')
        self.assertIn(base.PREEMPT_ACTION,
                      self.actions(self.primary, victims[0]))
        self.assertNotIn(base.PREEMPT_ACTION,
                         self.actions(self.alt, normal))
        self.assert_within_capacity()

    @decorators.idempotent_id('d2a9e3f4-7b6c-4e1a-a0b8-5f4c3d2e1b03')
    def test_owner_metadata_does_not_protect(self):
        """Server metadata is the user's: ``opie:preempted_by`` set by the
        owner on every preemptible server must not make them
        unpreemptible. A normal boot still preempts one of them and no
        host ends over capacity.
        """
        fill, _placed = self.fill_with_preemptibles(self.primary,
                                                    self.preemptible)
        for server_id in fill:
            self.call(self.primary, 'PUT', '/servers/%s/metadata/%s'
                      % (server_id, FORGED_KEY),
                      json={'meta': {FORGED_KEY: 'not-a-victim'}})
        normal = self.boot(self.alt, self.normal)[0]
        self.assertIsNotNone(self.placement_of([normal])[normal])
        present = self.server_map(self.primary)
        victims = [i for i in fill if i not in present]
        self.assertEqual(1, len(victims),
                         'a forged opie:preempted_by protected the '
                         'owner\'s servers (or more than one victim)')
        self.assertIn(base.PREEMPT_ACTION,
                      self.actions(self.primary, victims[0]))
        self.assert_within_capacity()
