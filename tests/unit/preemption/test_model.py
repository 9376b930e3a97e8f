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
"""Tests of the preemption host view (opie_sched.preemption.model)."""

import testtools

from opie_sched.preemption import model

from tests.unit.preemption.helpers import host
from tests.unit.preemption.helpers import inst


class HostViewTest(testtools.TestCase):

    def test_dual_state(self):
        h = host('h', [inst('n', 1, preemptible=False), inst('p', 1)])
        self.assertEqual(model.Resources(4, 8000, 120), h.full_free)
        self.assertEqual(model.Resources(6, 12000, 160), h.normal_free())
        self.assertEqual(model.Resources(2, 4000, 0),
                         h.deficit(model.Resources(6, 12000, 100)))

    def test_leaving_instances_count_as_released(self):
        h = host('h', [inst('a', 1), inst('b', 1, leaving=True)])
        self.assertEqual(['a'], [i.uuid for i in h.preemptible_instances])
        self.assertEqual(model.Resources(6, 12000, 160), h.projected_free())
