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
"""Tests of the repacking planner (opie_sched.flavormix, thesis Paper V).

Run with ``stestr run tests.unit.flavormix.test_flavormix``.
"""

import fractions
import io
import itertools
import json
import math
import os
import random

import fixtures
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from opie_sched.cmd import cli
from opie_sched import flavormix as rp
from opie_sched.simulator import repacking_strategies as rs

F = fractions.Fraction

try:
    from scipy import optimize as _optimize
    HAVE_SCIPY = _optimize.milp is not None
except ImportError:  # pragma: no cover
    HAVE_SCIPY = False


# -- oracles ------------------------------------------------------------------

def brute_force(types, need, current=None, upper=None):
    """Every count vector, exact Fractions, the documented tie-break.

    The last type's count is the least that covers what the others leave
    (any more would cost more); every other count is enumerated.
    """
    types = sorted(types, key=lambda t: t.name)
    need = F(need)
    current = current or {}
    upper = upper or {}

    def top(t, rem):
        n = math.ceil(rem / F(t.capacity)) if rem > 0 else 0
        return min(n, upper[t.name]) if t.name in upper else n

    ranges = [range(top(t, need) + 1) for t in types[:-1]]
    last = types[-1]
    best = None
    for head in itertools.product(*ranges):
        rem = need - sum(n * F(t.capacity) for n, t in zip(head, types))
        vec = head + (top(last, rem),)
        cap = sum(n * F(t.capacity) for n, t in zip(vec, types))
        if cap < need:
            continue
        cost = sum(n * F(t.price) for n, t in zip(vec, types))
        starts = sum(max(0, n - current.get(t.name, 0))
                     for n, t in zip(vec, types))
        key = (cost, starts, sum(vec), cap, vec)
        if best is None or key < best[0]:
            best = (key, {t.name: n for n, t in zip(vec, types) if n})
    return None if best is None else best[1]


def dp_cost(types, need):
    """Min cost to cover an integer need with integer capacities (DP)."""
    caps = [int(t.capacity) for t in types]
    prices = [F(t.price) for t in types]
    den = math.lcm(*(p.denominator for p in prices))
    iprices = [int(p * den) for p in prices]
    cost = [0] * (need + 1)
    for x in range(1, need + 1):
        cost[x] = min(p + cost[max(0, x - c)]
                      for p, c in zip(iprices, caps))
    return F(cost[need], den)


def exact_price(types, counts):
    by = {t.name: t for t in types}
    return sum((n * F(by[k].price) for k, n in counts.items()), F(0))


def exact_cap(types, counts):
    by = {t.name: t for t in types}
    return sum((n * F(by[k].capacity) for k, n in counts.items()), F(0))


# -- strategies ---------------------------------------------------------------

PRICE = st.one_of(st.integers(1, 6),
                  st.sampled_from([0.1, 0.2, 0.3, 0.25, 0.7, 1.5, 2.0]))
CAPACITY = st.one_of(st.integers(1, 12), st.sampled_from([0.5, 1.5, 2.5]))


@st.composite
def instances(draw, max_types=4, max_need=30):
    n = draw(st.integers(1, max_types))
    names = draw(st.lists(st.text('abc', min_size=1, max_size=2),
                          min_size=n, max_size=n, unique=True))
    types = [rp.VMType(name, draw(PRICE), draw(CAPACITY)) for name in names]
    # Keep the brute force small: at most ~3000 vectors.
    sizes = sorted(F(t.capacity) for t in types)[:-1]
    while max_need > 1 and math.prod(max_need / c + 2 for c in sizes) > 3000:
        max_need -= 1
    need = draw(st.one_of(st.integers(0, max_need),
                          st.sampled_from([0.5, 3.7, 10.25])))
    current = {name: c for name in names
               for c in [draw(st.integers(0, 3))] if c}
    return types, need, current


class OptimalSetTest(testtools.TestCase):

    @settings(max_examples=150, deadline=None)
    @given(instances())
    def test_bnb_matches_brute_force(self, inst):
        types, need, current = inst
        got = rp.optimal_set(types, need, current=current)
        self.assertEqual(brute_force(types, need, current), got)

    @settings(max_examples=80, deadline=None)
    @given(instances(), st.data())
    def test_bnb_with_upper_bounds(self, inst, data):
        types, need, current = inst
        upper = {t.name: data.draw(st.integers(0, 6)) for t in types
                 if data.draw(st.booleans())}
        want = brute_force(types, need, current, upper)
        if want is None:
            self.assertRaises(rp.RepackingError, rp.optimal_set, types,
                              need, current=current, upper=upper)
        else:
            self.assertEqual(want, rp.optimal_set(
                types, need, current=current, upper=upper))

    @testtools.skipUnless(HAVE_SCIPY, 'scipy not installed')
    @settings(max_examples=40, deadline=None)
    @given(instances())
    def test_milp_cost_matches(self, inst):
        types, need, current = inst
        got = rp.optimal_set(types, need, current=current, method='milp')
        want = brute_force(types, need, current)
        self.assertGreaterEqual(exact_cap(types, got), F(need))
        self.assertAlmostEqual(float(exact_price(types, want)),
                               float(exact_price(types, got)), places=9)

    def test_tie_break_prefers_reuse_then_fewer_servers(self):
        types = [rp.VMType('a', 1, 1), rp.VMType('b', 2, 2)]
        # {a:2}, {a:0,b:1} cost the same; b:1 has fewer servers.
        self.assertEqual({'b': 1}, rp.optimal_set(types, 2))
        # With two a's running, reusing them wins.
        self.assertEqual({'a': 2}, rp.optimal_set(types, 2,
                                                  current={'a': 2}))
        # Order of the types given does not matter.
        self.assertEqual({'b': 1}, rp.optimal_set(types[::-1], 2))

    def test_table2_types(self):
        for app in 'AB':
            types = rp.thesis_types(app)
            self.assertEqual(6, len(types))
            by_cap = sorted(types, key=lambda t: t.capacity)
            ratios = [t.price / t.capacity for t in by_cap]
            # Paper V 6.4: larger VMs have a better price/performance.
            self.assertEqual(sorted(ratios, reverse=True), ratios)
        a = {t.name: t.capacity for t in rp.thesis_types('A')}
        b = {t.name: t.capacity for t in rp.thesis_types('B')}
        order = ['small1', 'small2', 'med1', 'med2', 'large1', 'large2']
        for x, y in zip(order, order[1:]):
            # ... and more so for B: C_{i+1}^A/C_i^A < C_{i+1}^B/C_i^B.
            self.assertLess(a[y] / a[x], b[y] / b[x])

    def test_table2_against_dp(self):
        rng = random.Random(7)
        for app in 'AB':
            types = rp.thesis_types(app)
            for need in [1, 500, 501, 39396, 39397] + [
                    rng.randint(1, 30000) for _ in range(4)]:
                got = rp.optimal_set(types, need)
                self.assertGreaterEqual(exact_cap(types, got), need)
                self.assertEqual(dp_cost(types, need),
                                 exact_price(types, got), (app, need))
                if HAVE_SCIPY:
                    milp = rp.optimal_set(types, need, method='milp')
                    self.assertEqual(exact_price(types, got),
                                     exact_price(types, milp))

    def test_zero_demand(self):
        self.assertEqual({}, rp.optimal_set(rp.thesis_types('A'), 0))

    def test_set_helpers_and_transition(self):
        types = rp.thesis_types('A')
        self.assertAlmostEqual(0.18 * 2 + 5.4, rp.set_price(
            types, {'small1': 2, 'large2': 1}))
        self.assertEqual(1000 + 39396, rp.set_capacity(
            types, {'small1': 2, 'large2': 1}))
        cur, tgt = {'small1': 3, 'med1': 1}, {'small1': 1, 'large2': 2}
        keep, start, stop = rp.transition(cur, tgt)
        self.assertEqual({'small1': 1}, keep)
        self.assertEqual({'large2': 2}, start)
        self.assertEqual({'small1': 2, 'med1': 1}, stop)


class GainTest(testtools.TestCase):

    def test_boundary(self):
        # 1 - (2*1 + R)/(4*1) > 0.25  <=>  R < 1, decided exactly.
        ok, g, reason = rp.decide(4, 2, 1, 1, 0.25)
        self.assertFalse(ok)
        self.assertEqual(0.25, g)
        self.assertIn('keep', reason)
        ok, g, reason = rp.decide(4, 2, 1, math.nextafter(1.0, 0), 0.25)
        self.assertTrue(ok)
        self.assertIn('repack', reason)
        self.assertEqual(0.25, rp.gain(4, 2, 1, 1))

    def test_not_cheaper(self):
        for p_hat in (3, 3.0000001):
            ok, g, reason = rp.decide(3, p_hat, 10, 0, 0)
            self.assertFalse(ok)
            self.assertIsNone(g)
            self.assertIn('not cheaper', reason)

    def test_plan_at_boundary(self):
        types = [rp.VMType('x', 1, 1), rp.VMType('y', 1.5, 2)]
        # P = 2 ({x:2}), P_hat = 1.5 ({y:1}), d = 1, K = 0: R < 0.5.
        at = rp.plan(types, 2, {'x': 2}, d=1, K=0, R=0.5)
        self.assertFalse(at.repack)
        self.assertEqual({'x': 2}, at.target)
        self.assertEqual(0.0, at.gain)
        below = rp.plan(types, 2, {'x': 2}, d=1, K=0,
                        R=math.nextafter(0.5, 0))
        self.assertTrue(below.repack)
        self.assertEqual({'y': 1}, below.target)
        self.assertEqual({'y': 1}, below.start)
        self.assertEqual({'x': 2}, below.stop)
        # R from the started servers: C_extra = 1.5/h for 1/3 h = 0.5.
        via_time = rp.plan(types, 2, {'x': 2}, d=1, K=0,
                           repack_time=F(1, 3))
        self.assertEqual(0.5, via_time.reconfig_cost)
        self.assertFalse(via_time.repack)
        explicit = rp.plan(types, 2, {'x': 2}, d=1, K=0, c_extra=1,
                           repack_time=0.25)
        self.assertEqual(0.25, explicit.reconfig_cost)
        self.assertTrue(explicit.repack)

    def test_plan_scales_out_first_and_reuses(self):
        types = rp.thesis_types('A')
        p = rp.plan(types, 20000, {'small1': 10, 'large1': 1}, d=1000 / 60,
                    repack_time=4 / 60)
        self.assertGreaterEqual(p.baseline_capacity, 20000)
        self.assertEqual(exact_cap(types, p.baseline),
                         exact_cap(types, {'small1': 10, 'large1': 1})
                         + exact_cap(types, p.scaled_out))
        self.assertEqual(dp_cost(types, 20000),
                         exact_price(types, p.optimal))
        self.assertEqual(p.keep, rp.transition(p.baseline, p.optimal)[0])
        self.assertTrue(p.repack)

    def test_large_d_bound(self):
        # For large d the saving is bounded by 1 - P_hat/P (Paper V 3.4).
        for d in (1, 10, 1e6):
            self.assertLess(rp.gain(10, 6, d, 1), 1 - 6 / 10)


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


class ErrorsTest(testtools.TestCase):

    def test_bad_types(self):
        bad = [
            [{'name': 'a', 'price': -1, 'capacity': 1}],
            [{'name': 'a', 'price': 1, 'capacity': 0}],
            [{'name': 'a', 'price': float('nan'), 'capacity': 1}],
            [{'name': 'a', 'price': True, 'capacity': 1}],
            [{'name': 'a', 'price': '1', 'capacity': 1}],
            [{'name': '', 'price': 1, 'capacity': 1}],
            [{'name': 'a', 'price': 1}],
            [{'name': 'a', 'price': 1, 'capacity': 1, 'ram': 2}],
            [{'name': 'a', 'price': 1, 'capacity': 1},
             {'name': 'a', 'price': 2, 'capacity': 2}],
            [], 'abc', 5,
        ]
        for spec in bad:
            self.assertRaises(rp.RepackingError, rp.vm_types, spec)
        self.assertTrue(issubclass(rp.RepackingError, ValueError))

    def test_bad_arguments(self):
        types = rp.thesis_types('A')
        calls = [
            lambda: rp.optimal_set(types, -1),
            lambda: rp.optimal_set(types, float('inf')),
            lambda: rp.optimal_set(types, 10, method='simplex'),
            lambda: rp.optimal_set(types, 10, current={'huge': 1}),
            lambda: rp.optimal_set(types, 10, current={'small1': -1}),
            lambda: rp.optimal_set(types, 10, current={'small1': 1.5}),
            lambda: rp.optimal_set(types, 10 ** 6, upper={'small1': 1,
                                                          'small2': 0,
                                                          'med1': 0,
                                                          'med2': 0,
                                                          'large1': 0,
                                                          'large2': 0}),
            lambda: rp.plan(types, 10, d=0),
            lambda: rp.plan(types, 10, R=1, repack_time=1),
            lambda: rp.plan(types, 10, c_extra=1),
            lambda: rp.plan(types, 10, K=-0.1),
            lambda: rp.decide(1, 0.5, 1, -1, 0),
            lambda: rp.gain(0, 0, 1, 0),
            lambda: rp.affordable_servers(10, 0),
            lambda: rp.merkat_vm_upper_bound(1, {'cpu': 1}, {'mem': 1},
                                             {'cpu': 1}, 3),
            lambda: rs.make_strategy('S_magic', types),
            lambda: rs.make_strategy('S_base', types, base='xl'),
            lambda: rs.make_strategy('S_delta', types).run([1, -2]),
            lambda: rs.make_strategy('S_delta', types).run([1], 0),
            lambda: rp.thesis_types('C'),
            lambda: rp.workload('bursty'),
            lambda: rp.increase(hours=0),
        ]
        for call in calls:
            self.assertRaises(rp.RepackingError, call)


class StrategiesTest(testtools.TestCase):

    def run_all(self, demand, dt, types, **kw):
        return {name: rs.make_strategy(name, types, **kw).run(demand, dt)
                for name in rs.STRATEGIES}

    def check_shape(self, name, gen_kwargs):
        demand, dt = rp.workload(name, seed=1, **gen_kwargs)
        types = rp.thesis_types('A')
        cheap = self.run_all(demand, dt, types, repack_time=4 / 60)
        dear = self.run_all(demand, dt, types, repack_time=20 / 60)
        for sims in (cheap, dear):
            for sim in sims.values():
                self.assertEqual(len(demand), len(sim.sets))
                self.assertFalse(any(sim.unmet), sim.strategy)
                self.assertAlmostEqual(
                    sim.total_cost, sum(sim.prices) * dt + sum(
                        sim.reconfig_costs), places=6)
            # Thesis observations (Paper V 6.2): repacking pays off, and
            # S_delta_Repacked beats blind S_Full.
            self.assertLess(sims['S_delta_Repacked'].total_cost,
                            sims['S_delta'].total_cost)
            self.assertLess(sims['S_base_Repacked'].total_cost,
                            sims['S_base'].total_cost)
            self.assertLess(sims['S_delta_Repacked'].total_cost,
                            sims['S_Full'].total_cost)
        for name in ('S_delta', 'S_base'):
            self.assertEqual(cheap[name].total_cost, dear[name].total_cost)
            self.assertEqual(0, cheap[name].reconfigurations)
        for name in ('S_delta_Repacked', 'S_base_Repacked', 'S_Full'):
            self.assertLessEqual(cheap[name].total_cost,
                                 dear[name].total_cost)
        # S_Full runs an optimal set every step.
        for load, s in zip(demand, cheap['S_Full'].sets):
            self.assertEqual(exact_price(types, rp.optimal_set(types, load)),
                             exact_price(types, s))

    def test_increase(self):
        self.check_shape('increase', {'hours': 72, 'peak': 40000})

    def test_seasonal(self):
        self.check_shape('seasonal', {'hours': 72, 'high': 40000})

    def test_k_one_never_repacks(self):
        demand, dt = rp.workload('seasonal', seed=2, hours=48)
        types = rp.thesis_types('B')
        for plain, repacked in (('S_delta', 'S_delta_Repacked'),
                                ('S_base', 'S_base_Repacked')):
            a = rs.make_strategy(plain, types).run(demand, dt)
            b = rs.make_strategy(repacked, types, K=1).run(demand, dt)
            self.assertEqual(a.sets, b.sets)
            self.assertEqual(0, b.reconfigurations)

    def test_free_repacking_is_always_optimal(self):
        demand, dt = rp.workload('increase', seed=3, hours=24,
                                 step_minutes=15)
        types = rp.thesis_types('A')
        sim = rs.make_strategy('s_delta_repacked', types, K=0,
                               repack_time=0).run(demand, dt)
        for load, s in zip(demand, sim.sets):
            self.assertEqual(exact_price(types, rp.optimal_set(types, load)),
                             exact_price(types, s))

    def test_workload_generators(self):
        for name in rp.WORKLOADS:
            a, dt = rp.workload(name, seed=5, hours=48, step_minutes=10)
            self.assertEqual(48 * 6, len(a))
            self.assertEqual(a, rp.workload(name, seed=5, hours=48,
                                            step_minutes=10)[0])
            self.assertTrue(all(isinstance(x, int) and x >= 0 for x in a))
            self.assertAlmostEqual(10 / 60, dt)
            if name != 'on_off':
                self.assertNotEqual(a, rp.workload(
                    name, seed=6, hours=48, step_minutes=10)[0])
        inc = rp.increase(hours=168, seed=0)
        q = len(inc) // 4
        self.assertGreater(sum(inc[-q:]), 3 * sum(inc[:q]))
        off = rp.on_off(hours=24, step_minutes=60, on_hours=8, off_hours=16)
        self.assertEqual([0] * 16, off[8:24])
        seas = rp.seasonal(hours=72, step_minutes=60, low=1000, high=5000)
        for day in range(3):
            cycle = seas[24 * day:24 * (day + 1)]
            self.assertLess(min(cycle), 1100)
            self.assertGreater(max(cycle), 4000)


class SFullCostTest(testtools.TestCase):
    """S_Full pays R for every change of its set (Paper V §4, item 3)."""

    TYPES = {'s': {'price': 1, 'capacity': 10},
             'l': {'price': 3, 'capacity': 40}}

    def test_pure_scale_out_pays_r(self):
        # 10 -> 20: the optimal set adds one 's' (a pure scale-out).
        sim = rs.make_strategy('S_Full', self.TYPES,
                               repack_time=0.5).run([10, 20], 1.0)
        self.assertEqual([{'s': 1}, {'s': 2}], sim.sets)
        # Step 0 starts from nothing: one 's' started; step 1 one more.
        self.assertEqual([0.5, 0.5], sim.reconfig_costs)
        self.assertEqual(2, sim.reconfigurations)
        free = rs.SFull(self.TYPES, scaling_is_free=True,
                        repack_time=0.5).run([10, 20], 1.0)
        self.assertEqual([0.0, 0.0], free.reconfig_costs)
        self.assertEqual(0, free.reconfigurations)

    def test_scale_in_starts_nothing_and_pays_nothing(self):
        sim = rs.make_strategy('S_Full', self.TYPES,
                               repack_time=0.5).run([20, 10], 1.0)
        self.assertEqual([1.0, 0.0], sim.reconfig_costs)
        self.assertEqual(2, sim.reconfigurations)

    def test_replacement_pays_the_started_servers(self):
        # 20 -> 40: two 's' replaced by one 'l' (price 3 x 0.5 h).
        sim = rs.make_strategy('S_Full', self.TYPES,
                               repack_time=0.5).run([20, 40], 1.0)
        self.assertEqual([{'s': 2}, {'l': 1}], sim.sets)
        self.assertEqual(1.5, sim.reconfig_costs[1])

    def test_s_full_is_the_worst_repacking_variant(self):
        demand, dt = rp.workload('increase', seed=1, hours=72,
                                 peak=40000)
        types = rp.thesis_types('B')
        for minutes in (4, 20):
            sims = {n: rs.make_strategy(
                n, types, d=1000 / 60, repack_time=minutes / 60).run(
                    demand, dt)
                for n in ('S_Full', 'S_delta_Repacked', 'S_base_Repacked')}
            full = sims.pop('S_Full')
            for other in sims.values():
                self.assertGreater(full.total_cost, other.total_cost)
                self.assertGreater(full.reconfigurations,
                                   other.reconfigurations)


class CLITest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.stdout = io.StringIO()
        self.stderr = io.StringIO()
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', self.stdout))
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', self.stderr))

    def write(self, doc, name='app.json'):
        path = os.path.join(self.tmp, name)
        with open(path, 'w') as f:
            f.write(doc if isinstance(doc, str) else json.dumps(doc))
        return path

    def test_plan_json(self):
        doc = {'types': [{'name': 'small', 'price': 0.18, 'capacity': 500},
                         {'name': 'big', 'price': 1.44, 'capacity': 6868}],
               'demand': 12000, 'current': {'small': 20}, 'd': 10,
               'K': 0.01, 'repack_time': 0.1}
        path = self.write(doc)
        self.assertEqual(0, cli.main(['repack', 'plan', path,
                                      '--format', 'json']))
        out = json.loads(self.stdout.getvalue())
        types = rp.vm_types(doc['types'])
        want = rp.plan(types, 12000, {'small': 20}, d=10, K=0.01,
                       repack_time=0.1)
        self.assertEqual(want.as_dict(), out)
        self.assertEqual(brute_force(types, 12000, out['baseline']),
                         out['optimal'])
        self.assertEqual(out['optimal'] if out['repack'] else
                         out['baseline'], out['target'])
        for key in ('current', 'optimal', 'current_price', 'optimal_price',
                    'repack', 'reason', 'gain'):
            self.assertIn(key, out)

    def test_plan_table_and_thesis_types(self):
        path = self.write({'types': 'table2:B', 'demand': 30000,
                           'current': {'small1': 60}, 'R': 0.5})
        self.assertEqual(0, cli.main(['repack', 'plan', path]))
        out = self.stdout.getvalue()
        self.assertRegex(out, r'\| optimal +\| \w+ x\d+')
        self.assertRegex(out, r'\| reason +\| repack: gain ')
        self.assertRegex(out, r'\| repack +\| True ')

    @testtools.skipUnless(HAVE_SCIPY, 'scipy not installed')
    def test_plan_milp(self):
        path = self.write({'types': 'table2:A', 'demand': 54321})
        self.assertEqual(0, cli.main(['repack', 'plan', path, '--format',
                                      'json', '--method', 'milp']))
        out = json.loads(self.stdout.getvalue())
        types = rp.thesis_types('A')
        self.assertEqual(exact_price(types, rp.optimal_set(types, 54321)),
                         exact_price(types, out['optimal']))

    def test_plan_errors(self):
        cases = [
            ('{', 'not valid JSON'),
            ('[1]', 'JSON object'),
            (json.dumps({'demand': 1}), 'missing'),
            (json.dumps({'types': 'table2:A', 'demand': 1, 'x': 1}),
             'unknown key'),
            (json.dumps({'types': 'table2:Z', 'demand': 1}), 'table2'),
            (json.dumps({'types': 'table2:A', 'demand': -5}),
             'required capacity'),
            (json.dumps({'types': 'table2:A', 'demand': 5,
                         'current': {'nope': 1}}), 'unknown flavor'),
        ]
        for i, (text, msg) in enumerate(cases):
            self.stderr.seek(0)
            self.stderr.truncate()
            path = self.write(text, 'bad%d.json' % i)
            self.assertEqual(1, cli.main(['repack', 'plan', path]))
            self.assertIn(msg, self.stderr.getvalue())
        self.assertEqual(1, cli.main(['repack', 'plan',
                                      os.path.join(self.tmp, 'none.json')]))
        self.assertIn('cannot read', self.stderr.getvalue())

    def test_simulate(self):
        self.assertEqual(0, cli.main(
            ['repack', 'simulate', '--workload', 'increase', '--strategy',
             'S_delta', '--seed', '4', '--format', 'json']))
        out = json.loads(self.stdout.getvalue())
        demand, dt = rp.workload('increase', seed=4)
        want = rs.make_strategy('S_delta', rp.thesis_types('A'),
                                repack_time=4 / 60).run(demand, dt)
        self.assertEqual([('S_delta', want.total_cost)],
                         [(r['strategy'], r['total_cost']) for r in out])
        self.assertIn('workload increase (seed 4, ', self.stderr.getvalue())
        self.stdout.seek(0)
        self.stdout.truncate()
        self.assertEqual(0, cli.main(
            ['repack', 'simulate', '--workload', 'seasonal', '--strategy',
             'S_delta_Repacked']))
        self.assertIn('S_delta_Repacked', self.stdout.getvalue())
        self.assertEqual(2, cli.main(
            ['repack', 'simulate', '--workload', 'seasonal', '--strategy',
             'S_nope']))
