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
"""Tests of the preemption planner (opie_sched.preemption.planner)."""

import testtools

from opie_sched.preemption import model
from opie_sched.preemption import planner

from tests.unit.preemption.helpers import host
from tests.unit.preemption.helpers import inst
from tests.unit.preemption.helpers import MEDIUM
from tests.unit.preemption.helpers import NOW
from tests.unit.preemption.helpers import POLICY


class PlannerTest(testtools.TestCase):

    def test_fits_without_preemption(self):
        plan = planner.plan_host(host('h', [inst('a', 10)]), MEDIUM, POLICY,
                                 NOW)
        self.assertFalse(plan.needs_preemption)
        self.assertEqual((), plan.victims)

    def test_cheapest_victims_billing_period(self):
        h = host('h', [inst('a', 3000), inst('b', 4000), inst('c', 7100),
                       inst('d', 1000)])
        plan = planner.plan_host(h, model.Resources(4, 8000, 80), POLICY,
                                 NOW)
        self.assertTrue(plan.feasible)
        self.assertEqual(['b', 'd'], [i.uuid for i, _ in plan.victims])
        self.assertEqual(1400, plan.total_cost)
        self.assertIn('total cost 1400', planner.describe_plan(plan))

    def test_never_a_normal_instance(self):
        h = host('h', [inst('n1', 1, preemptible=False),
                       inst('n2', 1, preemptible=False),
                       inst('n3', 1, preemptible=False), inst('p', 9)])
        plan = planner.plan_host(h, model.Resources(4, 8000, 80), POLICY,
                                 NOW)
        self.assertFalse(plan.feasible)
        self.assertEqual((), plan.victims)
        self.assertIn('1 preemptible instances hold only', plan.reason)

    def test_rank_hosts(self):
        free = host('free', [inst('f', 5)])
        cheap = host('cheap', [inst('c%d' % i, 100) for i in range(4)])
        dear = host('dear', [inst('d%d' % i, 3000) for i in range(4)])
        ranked = planner.rank_hosts([dear, cheap, free], MEDIUM, POLICY,
                                    NOW)
        self.assertEqual(['free', 'cheap', 'dear'],
                         [p.host for p in ranked])
        ranked = planner.rank_hosts([dear, cheap],
                                    model.Resources(2, 4000, 40), POLICY,
                                    NOW)
        self.assertEqual('cheap', ranked[0].host)

    def test_overcommit_plans(self):
        over = host('over', [inst('n', 1, preemptible=False,
                                  res=(4, 8000, 80)),
                             inst('a', 3000, res=(4, 8000, 80)),
                             inst('b', 4000, res=(4, 8000, 80))])
        ok = host('ok', [inst('x', 1)])
        [plan] = planner.overcommit_plans([ok, over], POLICY, NOW)
        self.assertEqual('over', plan.host)
        self.assertEqual(['b'], [i.uuid for i, _ in plan.victims])
