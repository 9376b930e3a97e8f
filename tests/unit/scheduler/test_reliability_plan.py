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
"""Tests of the Die-Hard constraint (opie_sched.scheduler.reliability_plan)."""

from nova import objects

from opie_sched.scheduler import reliability_plan as reliability

from tests.unit.scheduler.rpm_helpers import _NovaTest
from tests.unit.scheduler.rpm_helpers import HINTS
from tests.unit.scheduler.rpm_helpers import request


class ConstraintTest(_NovaTest):

    def test_hints(self):
        self.assertEqual((2, 0.999, 80.0),
                         reliability.constraint(request(hints=HINTS)))
        self.assertIsNone(reliability.constraint(request()))

    def test_defaults(self):
        self.assertEqual((3, 0.9999, 24.0), reliability.constraint(
            request(hints={'opie_tasks': '3'})))

    def test_group_name(self):
        group = objects.InstanceGroup(
            name='etl opie_tasks=4 opie_target=0.99,opie_hours=10',
            hosts=[], policy='anti-affinity')
        self.assertEqual((4, 0.99, 10.0), reliability.constraint(
            request(group=group)))

    def test_invalid(self):
        for hints in ({'opie_tasks': 'x'}, {'opie_tasks': '0'},
                      {'opie_tasks': '2', 'opie_target': '1.5'},
                      {'opie_tasks': '2', 'opie_hours': '-1'},
                      {'opie_target': '0.9'}):
            self.assertRaises(reliability.ReliabilityError,
                              reliability.constraint, request(hints=hints))
