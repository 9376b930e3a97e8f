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
"""A preemptible quota of its own (issue 23), through public APIs.

With nova's unified limits a preemptible boot counts against
``class:CUSTOM_PREEMPTIBLE_VCPU`` (its flavor requests ``VCPU=0`` and the
preemptible classes), a normal one against ``class:VCPU``: a project at
one limit still boots servers of the other kind up to their own. The
limits are Keystone project limits of a fresh project (Tempest's dynamic
credentials), created by the admin and deleted at the end; nova reads
them at every boot.
"""

import re
import time

from tempest import config
from tempest.lib.common.utils import data_utils
from tempest.lib import decorators

from opie_sched_tempest_plugin import base

CONF = config.CONF

#: One over-limit entry of nova's 403 (``oslo_limit.exception.
#: ProjectOverLimit``): resource name and limit.
_OVER = re.compile(r'Resource (\S+) is over limit of (-?\d+)')

VCPU = 'class:VCPU'
PREEMPTIBLE_VCPU = 'class:CUSTOM_PREEMPTIBLE_VCPU'


class PreemptibleQuotaTest(base.OpieBaseTest):
    """A project limited to :attr:`LIMIT` normal and :attr:`LIMIT`
    preemptible servers of the smallest flavor pair, by its vCPU limits.
    """

    #: Servers of each kind the project's vCPU limits admit.
    LIMIT = 2

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.opie.preemption:
            raise cls.skipException('[opie] preemption = false')
        if not CONF.compute_feature_enabled.unified_limits:
            raise cls.skipException(
                '[compute-feature-enabled] unified_limits = false: the '
                'legacy quotas have no preemptible quota of its own')

    @classmethod
    def resource_setup(cls):
        super().resource_setup()
        cls.normal, cls.preemptible = cls.flavor_pair()
        cls.project = cls.primary_project
        # Only the vCPU limits bind: every other limit the boots meet is
        # finite (a negative one would be listed in every refusal) and
        # ten times what the servers take.
        limits = {'servers': 10 * 2 * cls.LIMIT,
                  VCPU: cls.LIMIT * cls.normal.size['VCPU'],
                  PREEMPTIBLE_VCPU: cls.LIMIT * cls.preemptible.size['VCPU']}
        for rc in ('MEMORY_MB', 'DISK_GB'):
            for name, flavor in (('class:' + rc, cls.normal),
                                 ('class:' + base.PREEMPTIBLE[rc],
                                  cls.preemptible)):
                limits[name] = max(1, 10 * cls.LIMIT * flavor.size[rc])
        cls.limits = limits
        for name, value in sorted(limits.items()):
            cls.set_project_limit(cls.project, name, value)

    def setUp(self):
        super().setUp()
        self.wait_for_no_usage()
        room = self.preemptible_room(self.preemptible.size)
        self.assertGreaterEqual(
            room, 2 * self.LIMIT, 'the cloud must hold %d servers of %s '
            'for this test' % (2 * self.LIMIT, self.preemptible.name))

    def wait_for_no_usage(self):
        """Wait until the project uses no vCPU of either class in
        Placement (the previous test's servers are deleted).
        """
        deadline = time.monotonic() + CONF.opie.build_timeout
        while True:
            used = {rc: n for rc, n in self.project_usages().items() if n}
            if not used:
                return
            if time.monotonic() > deadline:
                self.fail('project %s still uses %s' % (self.project, used))
            time.sleep(1)

    def refused(self, flavor):
        """Boot one server of ``flavor``: nova must answer 403 and create
        nothing. Returns ``{resource: limit}`` of the limits the 403 says
        the boot would exceed.
        """
        before = set(self.server_map(self.primary))
        name = data_utils.rand_name('refused')
        status, body = self.call(
            self.primary, 'POST', '/servers', '2.37', ok=None,
            json={'server': {'name': name, 'flavorRef': flavor.id,
                             'imageRef': self.image_id,
                             'networks': 'none'}})
        if status == 202:
            self.addCleanup(self.delete_and_wait, self.primary,
                            [body['server']['id']])
        self.assertEqual(403, status, 'a boot of %s over the limit: %s'
                         % (flavor.name, body))
        self.assertEqual(before, set(self.server_map(self.primary)))
        message = body['forbidden']['message']
        over = {res: int(limit) for res, limit in _OVER.findall(message)}
        self.assertTrue(over, message)
        return over

    def project_usages(self):
        """``{resource class: amount}`` the project uses in Placement."""
        return self.placement(
            self.admin, '/usages?project_id=%s' % self.project)['usages']

    def usage(self):
        """The project's Placement usage of both vCPU classes."""
        usages = self.project_usages()
        return {VCPU: usages.get('VCPU', 0),
                PREEMPTIBLE_VCPU: usages.get(base.PREEMPTIBLE['VCPU'], 0)}

    @decorators.idempotent_id('88933fae-2e7f-46b9-8ff1-dc590b5b9ba1')
    def test_at_the_normal_limit_preemptibles_boot_to_their_own(self):
        """At its ``class:VCPU`` limit the project boots no normal server
        (403 naming that class only) but still ``LIMIT`` preemptible ones;
        the next preemptible boot is refused on
        ``class:CUSTOM_PREEMPTIBLE_VCPU`` only.
        """
        normal = self.boot(self.primary, self.normal, self.LIMIT)
        self.assertEqual({VCPU: self.limits[VCPU]},
                         self.refused(self.normal))
        pre = self.boot(self.primary, self.preemptible, self.LIMIT)
        self.assertEqual({PREEMPTIBLE_VCPU: self.limits[PREEMPTIBLE_VCPU]},
                         self.refused(self.preemptible))
        # both limits reached, nobody preempted
        self.assertEqual({VCPU: self.limits[VCPU],
                          PREEMPTIBLE_VCPU: self.limits[PREEMPTIBLE_VCPU]},
                         self.usage())
        self.assertEqual(set(normal + pre), set(self.server_map(
            self.primary)))
        self.assertEqual({VCPU: self.limits[VCPU]},
                         self.refused(self.normal))

    @decorators.idempotent_id('8d93d87f-b84e-40e2-a100-4d250ff15138')
    def test_at_the_preemptible_limit_normal_servers_boot_to_theirs(self):
        """At its ``class:CUSTOM_PREEMPTIBLE_VCPU`` limit the project boots
        no preemptible server (403 naming that class only) but still
        ``LIMIT`` normal ones; the next normal boot is refused on
        ``class:VCPU`` only.
        """
        pre = self.boot(self.primary, self.preemptible, self.LIMIT)
        self.assertEqual({PREEMPTIBLE_VCPU: self.limits[PREEMPTIBLE_VCPU]},
                         self.refused(self.preemptible))
        normal = self.boot(self.primary, self.normal, self.LIMIT)
        self.assertEqual({VCPU: self.limits[VCPU]},
                         self.refused(self.normal))
        self.assertEqual({VCPU: self.limits[VCPU],
                          PREEMPTIBLE_VCPU: self.limits[PREEMPTIBLE_VCPU]},
                         self.usage())
        self.assertEqual(set(normal + pre), set(self.server_map(
            self.primary)))
        self.assertEqual({PREEMPTIBLE_VCPU: self.limits[PREEMPTIBLE_VCPU]},
                         self.refused(self.preemptible))
