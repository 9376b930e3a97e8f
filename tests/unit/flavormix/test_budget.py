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
"""Tests of the budget caps (opie_sched.flavormix.budget)."""

import itertools
import math

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from opie_sched import flavormix as rp
from opie_sched.simulator import repacking_strategies as rs

from tests.unit.flavormix.helpers import exact_cap
from tests.unit.flavormix.helpers import exact_price
from tests.unit.flavormix.helpers import F
from tests.unit.flavormix.helpers import instances


class BudgetTest(testtools.TestCase):

    def test_affordable_servers_boundary(self):
        self.assertEqual(4, rp.affordable_servers(4 * 0.72 * 2, 0.72, 2))
        self.assertEqual(3, rp.affordable_servers(
            math.nextafter(4 * 0.72 * 2, 0), 0.72, 2))
        self.assertEqual(0, rp.affordable_servers(0, 0.72))
        self.assertEqual(2, rp.affordable_servers(100, 1, nvms_max=2))

    @settings(max_examples=100, deadline=None)
    @given(st.integers(0, 50), st.integers(0, 40),
           st.dictionaries(st.sampled_from(['cpu', 'mem']),
                           st.tuples(st.integers(0, 5), st.integers(1, 4),
                                     st.integers(1, 200)),
                           min_size=1))
    def test_merkat_upper_bound_matches_scan(self, budget, nmax, res):
        price = {r: v[0] for r, v in res.items()}
        alloc = {r: v[1] for r, v in res.items()}
        cap = {r: v[2] for r, v in res.items()}
        n, bids = rp.merkat_vm_upper_bound(budget, price, alloc, cap, nmax)

        def total(k):
            out = F(0)
            for r in res:
                share = F(alloc[r] * k, cap[r])
                if share >= 1:
                    return None
                out += F(price[r] * alloc[r] * k) / (1 - share)
            return out
        want = max([k for k in range(1, nmax + 1)
                    if total(k) is not None and total(k) <= budget],
                   default=0)
        self.assertEqual(want, n)
        if n:
            self.assertLessEqual(sum(bids.values()), budget + 1e-9)

    def test_merkat_fixed_price_limit(self):
        # Huge capacity: the market bound is the fixed-price bound.
        n, _ = rp.merkat_vm_upper_bound(10 + 1e-6, {'cpu': 1}, {'cpu': 1},
                                        {'cpu': 10 ** 12}, 100)
        self.assertEqual(rp.affordable_servers(10 + 1e-6, 1), n)

    @settings(max_examples=60, deadline=None)
    @given(instances(max_types=3, max_need=15),
           st.sampled_from([0, 0.5, 1, 2.5, 4, 7]))
    def test_budget_capped_set(self, inst, budget):
        types, need, current = inst
        got, limited = rp.budget_capped_set(types, need, budget,
                                            current=current)
        self.assertLessEqual(exact_price(types, got), F(budget))
        opt = rp.optimal_set(types, need, current=current)
        if exact_price(types, opt) <= F(budget):
            self.assertFalse(limited)
            self.assertEqual(opt, got)
        else:
            self.assertTrue(limited)
            # No affordable set has more capacity (brute force).
            ranges = [range(int(F(budget) / F(t.price)) + 1) for t in types]
            best = max(sum(n * F(t.capacity) for n, t in zip(v, types))
                       for v in itertools.product(*ranges)
                       if sum(n * F(t.price) for n, t in zip(v, types))
                       <= F(budget))
            self.assertEqual(best, exact_cap(types, got))

    def test_cap_to_budget_homogeneous(self):
        types = rp.thesis_types('B')
        for budget in (0, 0.71, 0.72, 3.0, 100):
            got = rp.cap_to_budget(types, {'med1': 10}, budget)
            self.assertEqual(min(10, rp.affordable_servers(budget, 0.72)),
                             got.get('med1', 0))
            self.assertEqual(['med1'] if got else [], list(got))

    def test_plan_with_budget(self):
        types = rp.thesis_types('A')
        p = rp.plan(types, 100000, {'small1': 4}, budget=20, budget_period=2)
        self.assertTrue(p.budget_limited)
        self.assertLessEqual(p.optimal_price, 10)
        self.assertLessEqual(p.baseline_price, 10)
        self.assertIn('budget', p.reason)

    def test_strategy_budget(self):
        types = rp.thesis_types('A')
        demand = rp.increase(hours=24, step_minutes=30, peak=40000)
        sim = rs.make_strategy('S_base', types, base='med1', budget=6,
                               budget_period=2).run(demand, 0.5)
        cap = rp.affordable_servers(6, 0.72, 2)
        for s, price in zip(sim.sets, sim.prices):
            self.assertLessEqual(s.get('med1', 0), cap)
            self.assertLessEqual(price, 3 + 1e-12)
        self.assertTrue(any(sim.unmet))
