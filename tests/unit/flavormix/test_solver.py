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
"""Tests of the optimal VM-type sets (opie_sched.flavormix.solver), checked
against brute force."""

import random

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from opie_sched import flavormix as rp

from tests.unit.flavormix.helpers import brute_force
from tests.unit.flavormix.helpers import dp_cost
from tests.unit.flavormix.helpers import exact_cap
from tests.unit.flavormix.helpers import exact_price
from tests.unit.flavormix.helpers import F
from tests.unit.flavormix.helpers import HAVE_SCIPY
from tests.unit.flavormix.helpers import instances


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
