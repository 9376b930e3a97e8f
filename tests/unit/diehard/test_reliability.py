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
"""Tests of the Die-Hard reliability model (opie_sched.diehard.reliability)."""

import random

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from opie_sched.diehard import reliability as dh_rel
from opie_sched.diehard import topology as dh_topo

from tests.unit.diehard.helpers import homogeneous
from tests.unit.diehard.helpers import HOURS
from tests.unit.diehard.helpers import oracle_reliability
from tests.unit.diehard.helpers import small_problems


class ReliabilityTestCase(testtools.TestCase):

    @settings(max_examples=150, deadline=None)
    @given(small_problems())
    def test_exact_matches_brute_force(self, problem):
        topology, vector, tasks = problem
        got = dh_rel.reliability(topology, vector, tasks, HOURS,
                                 method='exact')
        want = oracle_reliability(topology, vector, tasks, HOURS)
        self.assertAlmostEqual(want, got.value, delta=1e-12)
        self.assertEqual(0.0, got.error_bound)

    @settings(max_examples=150, deadline=None)
    @given(small_problems())
    def test_untruncated_sum_matches_brute_force(self, problem):
        topology, vector, tasks = problem
        got = dh_rel.reliability(topology, vector, tasks, HOURS,
                                 method='truncated', tolerance=0)
        want = oracle_reliability(topology, vector, tasks, HOURS)
        self.assertAlmostEqual(want, got.value, delta=1e-12)
        self.assertEqual(0.0, got.error_bound)

    @settings(max_examples=150, deadline=None)
    @given(small_problems(), st.sampled_from([1e-6, 1e-3, 0.05, 0.3]))
    def test_truncation_error_is_bounded(self, problem, tolerance):
        topology, vector, tasks = problem
        got = dh_rel.reliability(topology, vector, tasks, HOURS,
                                 method='truncated', tolerance=tolerance)
        want = oracle_reliability(topology, vector, tasks, HOURS)
        self.assertLessEqual(got.value, want + 1e-12)
        self.assertLessEqual(want, got.value + got.error_bound + 1e-12)
        self.assertLessEqual(got.error_bound, tolerance + 1e-15)

    def test_truncated_sum_on_a_larger_topology(self):
        # 10 network x 2 power domains: 2**12 states, still enumerable.
        rng = random.Random(3)
        nets = [dh_topo.Domain('n%d' % i, (rng.uniform(0.005, 0.05),))
                for i in range(10)]
        pows = [dh_topo.Domain('p0', (0.01,)),
                dh_topo.Domain('p1', (0.002, 0.02))]
        cells = [dh_topo.Cell('n%d' % i, 'p%d' % (i % 2), 10)
                 for i in range(10)]
        topology = dh_topo.Topology(nets, pows, cells)
        vector = [rng.randint(3, 10) for _ in cells]
        exact = dh_rel.reliability(topology, vector, 50, 10, method='exact')
        approx = dh_rel.reliability(topology, vector, 50, 10,
                                    method='truncated', tolerance=1e-6)
        self.assertEqual('truncated', approx.method)
        self.assertLess(approx.network_terms, 10)
        self.assertLessEqual(approx.value, exact.value + 1e-12)
        self.assertLessEqual(exact.value, approx.value + approx.error_bound)

    def test_no_failures_over_zero_hours(self):
        topology = homogeneous(3, 2, 0.5)
        rel = dh_rel.reliability(topology, [2, 2, 0], 4, 0)
        self.assertEqual(1.0, rel.value)

    def test_placement_as_mapping(self):
        topology = homogeneous(3, 2, 0.5)
        by_dict = dh_rel.reliability(topology, {('n0', 'p0'): 2,
                                                ('n2', 'p0'): 1}, 2, HOURS)
        by_list = dh_rel.reliability(topology, [2, 0, 1], 2, HOURS)
        self.assertEqual(by_list, by_dict)

    def test_bad_placements(self):
        topology = homogeneous(3, 2, 0.5)
        for placement, text in [([1, 2], '2 counts for 3 cells'),
                                ([3, 0, 0], '3 tasks in cell (n0, p0)'),
                                ([-1, 0, 0], '-1 tasks'),
                                ({('n9', 'p0'): 1}, "no cell ('n9', 'p0')")]:
            err = self.assertRaises(dh_topo.PlanError, dh_rel.reliability,
                                    topology, placement, 1, HOURS)
            self.assertIn(text, str(err))
        self.assertRaises(dh_topo.PlanError, dh_rel.reliability, topology,
                          [1, 0, 0], 0, HOURS)
        self.assertRaises(dh_topo.PlanError, dh_rel.reliability, topology,
                          [1, 0, 0], 1, -1)


class LemmaTestCase(testtools.TestCase):

    def test_values(self):
        self.assertEqual(17, dh_rel.lemma_extra_tasks(1000, 61, 1))
        self.assertEqual(34, dh_rel.lemma_extra_tasks(1000, 61, 2))
        self.assertEqual(52, dh_rel.lemma_extra_tasks(1000, 61, 3))
        self.assertEqual(334, dh_rel.lemma_extra_tasks(1000, 4, 1))
        self.assertEqual(0, dh_rel.lemma_extra_tasks(1000, 61, 0))

    @staticmethod
    def survives_any(tasks, domains, failures, extra):
        # The placement of K + n tasks that best survives i failures
        # spreads evenly; i failures take away at worst its i largest
        # domains.
        total = tasks + extra
        loads = sorted([total // domains + (d < total % domains)
                        for d in range(domains)], reverse=True)
        return total - sum(loads[:failures]) >= tasks

    @given(st.integers(0, 300), st.integers(2, 30), st.data())
    def test_is_necessary(self, tasks, domains, data):
        failures = data.draw(st.integers(1, domains - 1))
        n = dh_rel.lemma_extra_tasks(tasks, domains, failures)
        if n:
            self.assertFalse(self.survives_any(tasks, domains, failures,
                                               n - 1))

    @given(st.integers(0, 300), st.integers(2, 30))
    def test_is_sufficient_for_one_failure(self, tasks, domains):
        # Lemma 1. For i > 1 the rounding can leave Lemma 2 short, e.g.
        # K=1, R=4, i=2 gives n=1 but 2 tasks on 4 domains die with two
        # domains: test_lemma_2_rounding.
        n = dh_rel.lemma_extra_tasks(tasks, domains, 1)
        self.assertTrue(self.survives_any(tasks, domains, 1, n))

    def test_lemma_2_rounding(self):
        self.assertEqual(1, dh_rel.lemma_extra_tasks(1, 4, 2))
        self.assertFalse(self.survives_any(1, 4, 2, 1))
        self.assertTrue(self.survives_any(
            1000, 61, 2, dh_rel.lemma_extra_tasks(1000, 61, 2)))

    def test_invalid(self):
        self.assertRaises(dh_topo.PlanError, dh_rel.lemma_extra_tasks,
                          10, 3, 3)
        self.assertRaises(dh_topo.PlanError, dh_rel.lemma_extra_tasks,
                          10, 3, -1)
