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
"""Tests of the simulator's repacking strategies on flavormix plans
(opie_sched.simulator.repacking_strategies; their place is
tests/unit/simulator/, which another branch is reworking)."""

import testtools

from opie_sched import flavormix as rp
from opie_sched.simulator import repacking_strategies as rs

from tests.unit.flavormix.helpers import exact_price


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
