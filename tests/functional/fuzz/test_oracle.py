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
"""The fuzzer's brute-force oracle (no cloud): its minimum on hand-made
cases, its agreement with the scheduler's exact victim selection, and the
problems it reports on a decision that is not minimal.
"""

import datetime

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from opie_sched.preemption import costs
from opie_sched.preemption import model
from opie_sched.preemption import planner
from opie_sched.preemption import victims
from tests.functional.fuzz import oracle

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def _inst(i, res, runtime, leaving=False):
    return model.InstanceInfo(
        uuid='p%d' % i, resources=model.Resources(*res), preemptible=True,
        launched_at=NOW - datetime.timedelta(seconds=runtime),
        leaving=leaving)


class OracleTest(testtools.TestCase):

    def test_minimum_by_hand(self):
        # two mediums (cost 400 + 1000) beat one large (cost 3000)
        cands = [((2, 4000, 40), 400.0), ((2, 4000, 40), 1000.0),
                 ((4, 8000, 80), 3000.0), ((2, 4000, 40), 3500.0)]
        self.assertEqual(1400.0, oracle.minimum(cands, (4, 8000, 80)))
        self.assertEqual(0.0, oracle.minimum(cands, (0, 0, 0)))
        self.assertIsNone(oracle.minimum(cands, (11, 0, 0)))

    def test_minimum_count_by_hand(self):
        # the cheapest way to free a large is two mediums: 2 victims
        cands = [((2, 4000, 40), 400.0), ((2, 4000, 40), 1000.0),
                 ((4, 8000, 80), 3000.0)]
        self.assertEqual(2, oracle.minimum_count(cands, (4, 8000, 80)))
        # two cheapest sets tie: the larger one counts
        tie = [((2, 4000, 40), 500.0), ((2, 4000, 40), 500.0),
               ((4, 8000, 80), 1000.0)]
        self.assertEqual(2, oracle.minimum_count(tie, (4, 8000, 80)))
        self.assertEqual(1, oracle.minimum_count(cands, (1, 0, 0)))
        self.assertEqual(0, oracle.minimum_count(cands, (0, 0, 0)))
        self.assertEqual(0, oracle.minimum_count(cands, (11, 0, 0)))

    @settings(max_examples=60, deadline=None, derandomize=True)
    @given(st.lists(st.tuples(st.sampled_from([(1, 2000, 20),
                                               (2, 4000, 40),
                                               (4, 8000, 80)]),
                              st.integers(0, 7200)),
                    min_size=0, max_size=8),
           st.sampled_from([(1, 2000, 20), (2, 4000, 40), (4, 8000, 80),
                            (6, 12000, 120)]))
    def test_agrees_with_the_exact_selection(self, items, need):
        policy = costs.load_policy(['billing_period:1.0'])
        insts = [_inst(i, res, rt) for i, (res, rt) in enumerate(items)]
        used = model.Resources.total(i.resources for i in insts)
        hv = model.HostView('h', model.Resources(8, 16000, 200), used,
                            insts)
        request = model.Resources(*need)
        plan = planner.plan_host(hv, request, policy, NOW)
        self.assertEqual([], oracle.check_decision(hv, request, policy,
                                                   NOW, plan))
        # and a plan that is not minimal is reported
        if plan.needs_preemption and plan.feasible:
            cands = planner.instance_costs(hv, policy, NOW)
            costly = victims.select_victims(
                [(i, 7200.0 - c) for i, c in cands], plan.deficit)
            worse = planner.HostPlan('h', True, True, costly.victims,
                                     costly.total_cost, plan.deficit)
            real = sum(c for i, c in cands
                       if i.uuid in {v.uuid for v, _ in costly.victims})
            problems = oracle.check_decision(hv, request, policy, NOW,
                                             worse)
            if real > plan.total_cost + 1e-6:
                self.assertEqual(1, len(problems), problems)
                self.assertIn('the minimum is', problems[0])
            else:
                self.assertEqual([], problems)

    def test_leaving_instance_as_victim_is_reported(self):
        policy = costs.load_policy(['billing_period:1.0'])
        insts = [_inst(0, (4, 8000, 80), 100, leaving=True),
                 _inst(1, (4, 8000, 80), 200)]
        hv = model.HostView('h', model.Resources(8, 16000, 200),
                            model.Resources(16, 32000, 320), insts)
        plan = planner.HostPlan('h', True, True, ((insts[0], 100.0),),
                                100.0, model.Resources(0, 0, 0))
        [problem] = oracle.check_decision(hv, model.ZERO, policy, NOW,
                                          plan)
        self.assertIn('are not candidates', problem)
