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
"""Tests of exact victim selection (opie_sched.preemption.victims).

Run with ``python -m testtools.run tests.unit.preemption.test_victims``.
"""

import datetime
import fractions
import itertools
import math
import random
from unittest import mock

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from opie_sched.preemption import costs
from opie_sched.preemption import model
from opie_sched.preemption import victims

NOW = datetime.datetime(2026, 11, 22, 12, 0, tzinfo=datetime.timezone.utc)
SMALL = model.Resources(1, 2000, 20)
MEDIUM = model.Resources(2, 4000, 40)
LARGE = model.Resources(4, 8000, 80)


def inst(uuid, res=MEDIUM, preemptible=True, leaving=False, runtime=None):
    launched = (None if runtime is None
                else NOW - datetime.timedelta(seconds=runtime))
    return model.InstanceInfo(uuid, model.Resources(*res), preemptible,
                              launched, leaving=leaving)


# -- strategies --------------------------------------------------------------

# Short uuids over a tiny alphabet: prefixes and equal-length strings make
# the lexicographic tie-break matter.
UUIDS = st.text(alphabet='abc', min_size=1, max_size=3)

INT_RES = st.tuples(st.integers(0, 4),
                    st.sampled_from([0, 500, 1000, 2000, 4000]),
                    st.integers(0, 3))
FLOAT_RES = st.tuples(st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.5, 1.5]),
                      st.sampled_from([0.0, 0.1, 0.7, 1000.0]),
                      st.sampled_from([0.0, 0.3, 1e-3]))
FLAVOR_RES = st.sampled_from([SMALL, MEDIUM, LARGE, model.ZERO])

INT_COST = st.integers(0, 3).map(float)
NEAR_TIE_COST = st.sampled_from([0.0, 0.5, 0.5 + 1e-9, 1.0, 1.0 + 1e-10,
                                 1.0 + 1e-9, 1.0 + 2e-9, 1.5, 3600.0,
                                 3600.0 + 3e-6])
FLOAT_COST = st.floats(0, 10, allow_nan=False, allow_infinity=False)

NEED_INT = st.tuples(st.integers(0, 8), st.sampled_from([0, 1000, 4500,
                                                         9000]),
                     st.integers(0, 6))
NEED_FLOAT = st.tuples(st.sampled_from([0.0, 0.3, 0.6, 1.0, 2.2]),
                       st.sampled_from([0.0, 0.8, 1000.1]),
                       st.sampled_from([0.0, 0.3, 0.6]))
NEED_FLAVOR = st.sampled_from([SMALL, MEDIUM, LARGE,
                               LARGE - model.Resources(1, 1500, 15),
                               MEDIUM + LARGE]).map(tuple)


@st.composite
def problems(draw, max_n=10):
    kind = draw(st.sampled_from(['int', 'float', 'flavor']))
    res = {'int': INT_RES, 'float': FLOAT_RES, 'flavor': FLAVOR_RES}[kind]
    need = {'int': NEED_INT, 'float': NEED_FLOAT,
            'flavor': NEED_FLAVOR}[kind]
    cost = draw(st.sampled_from([INT_COST, NEAR_TIE_COST, FLOAT_COST]))
    uuids = draw(st.lists(UUIDS, unique=True, max_size=max_n))
    candidates = [(inst(u, draw(res)), draw(cost)) for u in uuids]
    return candidates, model.Resources(*draw(need))


def reference(candidates, need):
    """An independent oracle for tiny inputs: exact Fraction sums."""
    exact_need = [fractions.Fraction(v) for v in need]
    if all(v <= 0 for v in exact_need):
        return ()
    feasible = []
    for size in range(len(candidates) + 1):
        for combo in itertools.combinations(candidates, size):
            if all(sum((fractions.Fraction(i.resources[k]) for i, _ in combo),
                       fractions.Fraction(0)) >= exact_need[k]
                   for k in range(3)):
                total = sum((fractions.Fraction(c) for _, c in combo),
                            fractions.Fraction(0))
                feasible.append((float(total), combo))
    if not feasible:
        return None
    best = min(t for t, _ in feasible)
    tied = [c for t, c in feasible
            if t - best <= victims.TIE_RTOL * max(1.0, best)]
    return min((len(c), tuple(sorted(i.uuid for i, _ in c))) for c in tied)[1]


def covers(selection, need):
    return all(f >= n for f, n in zip(selection.freed, need))


# -- property tests ----------------------------------------------------------


class OracleTest(testtools.TestCase):
    """The brute-force oracle against an independent exact reference."""

    @settings(max_examples=150, deadline=None)
    @given(problems(max_n=7))
    def test_brute_force_matches_reference(self, problem):
        candidates, need = problem
        expected = reference(candidates, need)
        got = victims.brute_force_victims(candidates, need, method='python')
        if expected is None:
            self.assertIsNone(got)
        else:
            self.assertEqual(expected, got.uuids)

    @settings(max_examples=60, deadline=None)
    @given(problems(max_n=12))
    def test_numpy_brute_force_matches_python(self, problem):
        candidates, need = problem
        self.assertEqual(
            victims.brute_force_victims(candidates, need, method='python'),
            victims.brute_force_victims(candidates, need, method='numpy'))


class SelectVictimsPropertyTest(testtools.TestCase):
    """select_victims against the brute-force oracle."""

    @settings(max_examples=200, deadline=None)
    @given(problems(max_n=12), st.randoms(use_true_random=False))
    def test_matches_oracle(self, problem, rnd):
        candidates, need = problem
        oracle = victims.brute_force_victims(candidates, need)
        got = victims.select_victims(candidates, need)
        if oracle is None:
            # None exactly when the oracle finds no feasible set.
            self.assertIsNone(got)
            return
        self.assertIsNotNone(got)
        # Same optimal cost, and the same set including the tie-break.
        self.assertEqual(oracle.total_cost, got.total_cost)
        self.assertEqual(oracle.uuids, got.uuids)
        self.assertEqual(oracle, got)
        # Frees enough in every dimension.
        self.assertTrue(covers(got, need), (got.freed, need))
        # Only preemptible instances; victims sorted by uuid.
        self.assertTrue(all(i.preemptible for i, _ in got.victims))
        self.assertEqual(sorted(got.uuids), list(got.uuids))
        self.assertEqual(math.fsum(c for _, c in got.victims),
                         got.total_cost)
        # Independent of the order of the candidates.
        shuffled = list(candidates)
        rnd.shuffle(shuffled)
        self.assertEqual(got, victims.select_victims(shuffled, need))

    @settings(max_examples=200, deadline=None)
    @given(problems(max_n=12))
    def test_branch_and_bound_matches_oracle_on_small_hosts(self, problem):
        # Small hosts are enumerated; force the branch and bound on them
        # too, so both methods stay covered against the oracle.
        candidates, need = problem
        with mock.patch.object(victims, 'ENUMERATE_MAX', -1):
            got = victims.select_victims(candidates, need)
        self.assertEqual(victims.brute_force_victims(candidates, need), got)

    @settings(max_examples=40, deadline=None)
    @given(st.integers(13, 16), st.integers(0, 2 ** 32 - 1),
           st.sampled_from(['billing', 'count', 'zero']))
    def test_realistic_hosts_match_oracle(self, n, seed, policy):
        rng = random.Random(seed)
        candidates = []
        for i in range(n):
            flavor = rng.choice([SMALL, MEDIUM, LARGE])
            cost = {'billing': rng.uniform(0, 86400) % 3600,
                    'count': 1.0, 'zero': 0.0}[policy]
            candidates.append((inst('%08x' % rng.getrandbits(32) + str(i),
                                    flavor), cost))
        need = (rng.choice([MEDIUM, LARGE, LARGE + LARGE])
                - model.Resources(rng.randint(0, 1), rng.randint(0, 1500),
                                  rng.randint(0, 15))).clip_negative()
        self.assertEqual(victims.brute_force_victims(candidates, need),
                         victims.select_victims(candidates, need))


# -- examples ----------------------------------------------------------------


class SelectVictimsExampleTest(testtools.TestCase):

    def test_zero_need_is_empty_selection(self):
        for candidates in ([], [(inst('a'), 5.0)]):
            for sel in (victims.select_victims(candidates, model.ZERO),
                        victims.brute_force_victims(candidates,
                                                    model.ZERO)):
                self.assertEqual(victims.VictimSelection(), sel)
                self.assertEqual((), sel.uuids)
                self.assertEqual(0.0, sel.total_cost)
                self.assertEqual(model.ZERO, sel.freed)

    def test_one_big_cheap_instance_beats_several_small(self):
        candidates = [(inst('big', LARGE), 10.0)] + [
            (inst('small%d' % i, SMALL), 5.0) for i in range(4)]
        sel = victims.select_victims(candidates, LARGE)
        self.assertEqual(('big',), sel.uuids)
        self.assertEqual(10.0, sel.total_cost)
        self.assertEqual(LARGE, sel.freed)

    def test_several_small_cheap_instances_beat_one_big(self):
        candidates = [(inst('big', LARGE), 10.0)] + [
            (inst('small%d' % i, SMALL), 2.0) for i in range(4)]
        sel = victims.select_victims(candidates, LARGE)
        self.assertEqual(('small0', 'small1', 'small2', 'small3'),
                         sel.uuids)
        self.assertEqual(8.0, sel.total_cost)

    def test_billing_period_example(self):
        # López García et al. §4.2: runtimes 3000 s, 4000 s and 7100 s,
        # cost = runtime mod 3600 = 3000, 400, 3500: the 4000 s one goes.
        policy = costs.CostPolicy([(costs.BillingPeriodCost(period=3600),
                                    1.0)])
        host = model.HostView('h', model.Resources(8, 16000, 200),
                              model.Resources(8, 12000, 120))
        candidates = []
        for uuid, runtime in (('r3000', 3000), ('r4000', 4000),
                              ('r7100', 7100)):
            i = inst(uuid, runtime=runtime)
            candidates.append((i, policy.instance_cost(i, host, NOW)))
        self.assertEqual([3000.0, 400.0, 3500.0], [c for _, c in candidates])
        sel = victims.select_victims(candidates, MEDIUM)
        self.assertEqual(('r4000',), sel.uuids)
        self.assertEqual(400.0, sel.total_cost)
        # Two instances needed: the two cheapest.
        sel = victims.select_victims(candidates, MEDIUM + SMALL)
        self.assertEqual(('r3000', 'r4000'), sel.uuids)
        self.assertEqual(3400.0, sel.total_cost)

    def test_infeasible_returns_none(self):
        candidates = [(inst('a', SMALL), 1.0), (inst('b', SMALL), 1.0)]
        self.assertIsNone(victims.select_victims(candidates, LARGE))
        self.assertIsNone(victims.brute_force_victims(candidates, LARGE))
        self.assertIsNone(victims.select_victims([], SMALL))

    def test_each_dimension_must_be_covered(self):
        cpu_heavy = inst('cpu', (8, 1000, 10))
        mem_heavy = inst('mem', (1, 16000, 10))
        need = model.Resources(4, 8000, 0)
        sel = victims.select_victims(
            [(cpu_heavy, 1.0), (mem_heavy, 1.0)], need)
        self.assertEqual(('cpu', 'mem'), sel.uuids)
        self.assertEqual(model.Resources(9, 17000, 20), sel.freed)

    def test_tie_prefers_fewer_victims(self):
        candidates = [(inst('a', SMALL), 1.0), (inst('b', SMALL), 1.0),
                      (inst('z', MEDIUM), 2.0)]
        self.assertEqual(('z',),
                         victims.select_victims(candidates, MEDIUM).uuids)

    def test_tie_within_tolerance(self):
        # 2.0 + 1e-9 ties with 2.0 (within 1e-9 x 2): the single victim wins.
        candidates = [(inst('a', SMALL), 1.0), (inst('b', SMALL), 1.0),
                      (inst('z', MEDIUM), 2.0 + 1e-9)]
        self.assertEqual(('z',),
                         victims.select_victims(candidates, MEDIUM).uuids)
        # 2.0 + 1e-8 does not tie: the two cheaper victims win.
        candidates[2] = (inst('z', MEDIUM), 2.0 + 1e-8)
        self.assertEqual(('a', 'b'),
                         victims.select_victims(candidates, MEDIUM).uuids)

    def test_tie_prefers_smallest_uuids(self):
        candidates = [(inst(u, SMALL), 1.0) for u in ('d', 'b', 'c', 'a')]
        sel = victims.select_victims(candidates, MEDIUM)
        self.assertEqual(('a', 'b'), sel.uuids)

    def test_useless_free_instance_is_not_a_victim(self):
        candidates = [(inst('a', model.ZERO), 0.0),
                      (inst('b', (0, 0, 100)), 0.0),
                      (inst('c', MEDIUM), 7.0)]
        sel = victims.select_victims(candidates, model.Resources(2, 0, 0))
        self.assertEqual(('c',), sel.uuids)

    def test_zero_cost_instances(self):
        candidates = [(inst('%02d' % i, SMALL), 0.0) for i in range(40)]
        sel = victims.select_victims(candidates, LARGE)
        self.assertEqual(('00', '01', '02', '03'), sel.uuids)
        self.assertEqual(0.0, sel.total_cost)

    def test_large_host(self):
        rng = random.Random(7)
        candidates = [(inst('%03d' % i, rng.choice([SMALL, MEDIUM, LARGE])),
                       rng.uniform(0, 3600)) for i in range(64)]
        sel = victims.select_victims(candidates, LARGE + LARGE)
        self.assertTrue(covers(sel, LARGE + LARGE))
        cheaper = [c for _, c in candidates if c < sel.total_cost]
        self.assertTrue(cheaper)

    def test_selection_is_frozen(self):
        sel = victims.select_victims([(inst('a'), 1.0)], SMALL)
        self.assertRaises(AttributeError, setattr, sel, 'total_cost', 0.0)


class BadInputTest(testtools.TestCase):

    def check(self, candidates, need, fragment):
        for func in (victims.select_victims, victims.brute_force_victims):
            exc = self.assertRaises(ValueError, func, candidates, need)
            self.assertIn(fragment, str(exc))

    def test_normal_instance(self):
        self.check([(inst('n1', preemptible=False), 1.0)], SMALL,
                   'n1 is a normal (non-preemptible) instance')

    def test_leaving_instance(self):
        self.check([(inst('l1', leaving=True), 1.0)], SMALL,
                   'l1 is already leaving')

    def test_bad_costs(self):
        for cost in (-1.0, float('nan'), float('inf'), -float('inf')):
            self.check([(inst('a'), cost)], SMALL,
                       'cost of instance a must be a finite number >= 0')
        self.check([(inst('a'), 'cheap')], SMALL,
                   'cost of instance a must be a number')

    def test_bad_need(self):
        self.check([(inst('a'), 1.0)], model.Resources(-1, 0, 0),
                   'need.vcpus (vCPU) must be a finite number >= 0')
        self.check([(inst('a'), 1.0)], model.Resources(0, float('nan'), 0),
                   'need.memory_mb (MB) must be a finite number >= 0')
        self.check([(inst('a'), 1.0)], (1, 2), 'need must have 3 dimensions')

    def test_bad_zero_need_still_validated(self):
        self.check([(inst('n', preemptible=False), 1.0)], model.ZERO,
                   'normal (non-preemptible)')

    def test_duplicate_uuids(self):
        self.check([(inst('a'), 1.0), (inst('a', SMALL), 2.0)], SMALL,
                   'duplicate candidate uuid a')

    def test_bad_resources(self):
        self.check([(inst('a', (1, -5, 0)), 1.0)], SMALL,
                   'resources.memory_mb (MB) of instance a must be a finite')

    def test_not_a_pair(self):
        self.check([inst('a')], SMALL, 'must be an (InstanceInfo, cost) pair')

    def test_brute_force_refuses_large_n(self):
        candidates = [(inst('%02d' % i, SMALL), 1.0) for i in range(25)]
        exc = self.assertRaises(ValueError, victims.brute_force_victims,
                                candidates, SMALL)
        self.assertIn('refuses 25 candidates', str(exc))
        # select_victims has no such limit.
        self.assertEqual(('00',),
                         victims.select_victims(candidates, SMALL).uuids)
