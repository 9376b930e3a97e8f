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
"""Tests of the reconciler's lifetime rules
(opie_sched.scheduler.reconciler)."""

import testtools

from nova import objects

from opie_sched.preemption import ownership as rules
from opie_sched.scheduler import reconciler

from tests.unit.scheduler.ownership_helpers import ago
from tests.unit.scheduler.ownership_helpers import PRE


class LifetimeTest(testtools.TestCase):

    def test_starts_at_the_latest_move_to_preemptible(self):
        self.assertEqual(ago(100), rules.lifetime_start(ago(1000),
                                                        [ago(500), ago(100)]))
        self.assertEqual(ago(1000), rules.lifetime_start(
            ago(1000).replace(tzinfo=None)))

    def test_flavor_limit_overrides_the_cloud_wide_one(self):
        def flv(value):
            specs = dict(PRE)
            if value is not None:
                specs[reconciler.LIFETIME_KEY] = value
            return objects.Flavor(extra_specs=specs)
        # 0 on the flavor: no limit, whatever the cloud's
        self.assertEqual(0, reconciler.lifetime_limit(flv('0'), 3600))
        self.assertEqual(7200, reconciler.lifetime_limit(flv('7200'), 3600))
        self.assertEqual(3600, reconciler.lifetime_limit(flv(None), 3600))
        self.assertEqual(3600, reconciler.lifetime_limit(flv('-1'), 3600))
        self.assertEqual(3600, reconciler.lifetime_limit(flv('x'), 3600))
