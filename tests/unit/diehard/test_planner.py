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
"""Tests of the Die-Hard redundancy planner (opie_sched.diehard.planner)."""

import itertools
import random

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from opie_sched.diehard import planner as dh_plan
from opie_sched.diehard import reliability as dh_rel
from opie_sched.diehard import topology as dh_topo

from tests.unit.diehard.helpers import homogeneous
from tests.unit.diehard.helpers import HOURS
from tests.unit.diehard.helpers import oracle_reliability
from tests.unit.diehard.helpers import small_problems


def brute_force_min_extra(topology, tasks, target, hours):
    """min n such that some placement of K + n tasks reaches the target."""
    caps = [c.hosts for c in topology.cells]
    for extra in range(topology.capacity - tasks + 1):
        for vector in itertools.product(*[range(c + 1) for c in caps]):
            if sum(vector) == tasks + extra and dh_rel.reliability(
                    topology, vector, tasks, hours,
                    method='exact').value >= target:
                return extra
    return None


class PlannerTestCase(testtools.TestCase):

    def test_diehard_n_is_the_minimum_on_tiny_clusters(self):
        # The regime Die-Hard targets: identical network domains (no power
        # risk) and a target that needs extra tasks. Brute force looks at
        # every placement of every task count.
        rng = random.Random(11)
        checked = 0
        while checked < 25:
            topology = homogeneous(rng.randint(2, 4), rng.randint(2, 3),
                                   rng.uniform(0.01, 0.3))
            tasks = rng.randint(1, topology.capacity - 1)
            target = rng.choice([0.99, 0.999, 0.9999])
            best = brute_force_min_extra(topology, tasks, target, HOURS)
            if not best:
                continue
            checked += 1
            plan = dh_plan.plan_diehard(topology, tasks, target, HOURS)
            self.assertTrue(plan.met)
            self.assertEqual(best, plan.extra, (tasks, target, topology.cells,
                                                topology.network_domains))

    @settings(max_examples=40, deadline=None)
    @given(small_problems(max_networks=3, max_powers=2),
           st.sampled_from(['diehard', 'proportional', 'hrf']),
           st.sampled_from([0.5, 0.9, 0.99, 0.999]))
    def test_plans_are_sound(self, problem, algorithm, target):
        # For any topology: a plan meets the target iff its placement does,
        # holds K + n tasks within capacity, and never beats brute force.
        topology, _, tasks = problem
        if tasks > topology.capacity:
            return
        plan = dh_plan.plan(topology, tasks, target, HOURS,
                            algorithm=algorithm)
        vector = topology.placement_vector(plan.placement)
        self.assertEqual(tasks + plan.extra, sum(vector))
        rel = oracle_reliability(topology, vector, tasks, HOURS)
        self.assertAlmostEqual(rel, plan.reliability.value, delta=1e-9)
        self.assertEqual(plan.met, plan.reliability.value >= target)
        best = brute_force_min_extra(topology, tasks, target, HOURS)
        if best is None:
            self.assertFalse(plan.met)
        elif plan.met:
            self.assertGreaterEqual(plan.extra, best)

    def test_diehard_trims_the_least_reliable_domain(self):
        # Two reliable domains and a flaky one: spreading 2 tasks per
        # domain and trimming the flaky domain empty needs 2 extra tasks
        # (brute force agrees), where an even spread needs 3.
        nets = [dh_topo.Domain('good-1', (0.01,)),
                dh_topo.Domain('good-2', (0.01,)),
                dh_topo.Domain('flaky', (0.7,))]
        topology = dh_topo.Topology(nets, [dh_topo.Domain('p', (0.0,))],
                                    [dh_topo.Cell(d.name, 'p', 2)
                                     for d in nets])
        plan = dh_plan.plan_diehard(topology, 2, 0.999, HOURS)
        self.assertEqual(2, plan.extra)
        self.assertEqual(brute_force_min_extra(topology, 2, 0.999, HOURS),
                         plan.extra)
        self.assertEqual({'good-1': 2, 'good-2': 2},
                         dict(plan.per_network_domain()))

    def test_placements_only_add_tasks(self):
        # Bisection relies on S growing with n: each family's placement for
        # N + 1 tasks contains the one for N.
        topology = dh_topo.thesis_topology()
        ctx = dh_plan._Context(topology, 100, 0.9999, 80,
                               dh_rel.DEFAULT_TOLERANCE)
        families = [lambda n: dh_plan.spread_placement(ctx, n, 'network'),
                    lambda n: dh_plan.spread_placement(ctx, n, 'power'),
                    lambda n: dh_plan.proportional_placement(ctx, n),
                    lambda n: dh_plan.hrf_placement(ctx, n)]
        for family in families:
            previous = family(0)
            for total in range(1, 400, 7):
                current = family(total)
                self.assertEqual(total, sum(current))
                self.assertTrue(all(a <= b for a, b in zip(previous,
                                                           current)))
                previous = current

    def test_literal_spread_empties_the_least_reliable_domains(self):
        # Alg. 1 line 17 as printed: n = ceil(N / R) on every domain, the
        # N* - N surplus removed from the least reliable domains, each
        # emptied before the next.
        rates = [0.05, 0.01, 0.04, 0.02, 0.03]
        nets = [dh_topo.Domain('n%d' % i, (r,)) for i, r in enumerate(rates)]
        topology = dh_topo.Topology(nets, [dh_topo.Domain('p', (0.0,))],
                                    [dh_topo.Cell(d.name, 'p', 10)
                                     for d in nets])
        ctx = dh_plan._Context(topology, 10, 0.9, HOURS,
                               dh_rel.DEFAULT_TOLERANCE)
        # 11 tasks: 3 per domain = 15, surplus 4: n0 (least reliable)
        # emptied (3), then one from n2 (the next least reliable)
        literal = dh_plan.spread_placement(ctx, 11, 'network',
                                           dh_plan.SPREAD_LITERAL)
        self.assertEqual([0, 3, 2, 3, 3], literal)
        # D'Hondt: within one task of each other, the two least
        # reliable domains give one task each... four of them here
        dhondt = dh_plan.spread_placement(ctx, 11, 'network')
        self.assertEqual(11, sum(dhondt))
        self.assertLessEqual(max(dhondt) - min(dhondt), 1)
        self.assertEqual([2, 3, 2, 2, 2], dhondt)
        # a capped domain's shortfall goes to the most reliable with room
        cells = [dh_topo.Cell(d.name, 'p', 1 if i == 1 else 10)
                 for i, d in enumerate(nets)]
        small = dh_topo.Topology(nets, [dh_topo.Domain('p', (0.0,))], cells)
        ctx = dh_plan._Context(small, 10, 0.9, HOURS,
                               dh_rel.DEFAULT_TOLERANCE)
        self.assertEqual([2, 1, 3, 3, 3], dh_plan.spread_placement(
            ctx, 12, 'network', dh_plan.SPREAD_LITERAL))

    def test_literal_spread_on_the_thesis_table_3(self):
        # Paper VI Table 3 (K = 500, S_min = 0.999, 80 h): the literal
        # trim meets S_min with fewer extra tasks than the D'Hondt spread
        topology = dh_topo.thesis_topology(seed=0)
        lit = dh_plan.plan(topology, 500, 0.999, 80,
                           spread=dh_plan.SPREAD_LITERAL)
        even = dh_plan.plan(topology, 500, 0.999, 80)
        self.assertTrue(lit.met)
        self.assertLess(lit.extra, even.extra)
        self.assertRaises(dh_topo.PlanError, dh_plan.plan, topology, 500,
                          0.999, 80, spread='sideways')

    def test_unreachable_target(self):
        # One network domain: extra tasks cannot help against its failure.
        topology = homogeneous(1, 5, 0.5)
        plan = dh_plan.plan_diehard(topology, 2, 0.9, HOURS)
        self.assertFalse(plan.met)

    def test_invalid_input(self):
        topology = homogeneous(2, 2, 0.1)
        for args in [(5, 0.9), (0, 0.9), (1, 1.0), (1, 0.0)]:
            self.assertRaises(dh_topo.PlanError, dh_plan.plan, topology,
                              args[0], args[1], HOURS)
        self.assertRaises(dh_topo.PlanError, dh_plan.plan, topology, 1, 0.9,
                          HOURS, algorithm='magic')
        self.assertRaises(dh_topo.PlanError, dh_plan.plan, topology, 1, 0.9,
                          HOURS, max_extra=-1)

    def test_thesis_table_2(self):
        # Paper VI Table 2 (K=1000, S_min=0.9999, T=80 h): DH needs 36
        # extra tasks, Proportional 45; HRF misses the target with 51 (the
        # bound of the three-failure tree node). The thesis averages 10
        # random clusters whose background load and exact PDU wiring it
        # does not give, and its Table 1 shows our topology's S(x) within
        # about a third of its failure probability (see thesis_topology),
        # so we accept +-20% around the thesis' n. The ordering
        # DH < Proportional is the thesis' claim and asserted exactly.
        topology = dh_topo.thesis_topology(seed=0)
        diehard = dh_plan.plan(topology, 1000, 0.9999, 80, 'diehard')
        proportional = dh_plan.plan(topology, 1000, 0.9999, 80, 'proportional')
        self.assertTrue(diehard.met)
        self.assertTrue(proportional.met)
        self.assertTrue(29 <= diehard.extra <= 43, diehard.extra)
        self.assertTrue(36 <= proportional.extra <= 54, proportional.extra)
        self.assertLess(diehard.extra, proportional.extra)
        self.assertLess(diehard.affinity_score, proportional.affinity_score)
        bound = dh_rel.lemma_extra_tasks(1000, 61, 3)
        hrf = dh_plan.plan(topology, 1000, 0.9999, 80, 'hrf', max_extra=bound)
        self.assertFalse(hrf.met)
        self.assertEqual(bound, hrf.extra)
