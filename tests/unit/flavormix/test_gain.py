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
"""Tests of the repacking gain and decision (opie_sched.flavormix.gain)."""

import math

import testtools

from opie_sched import flavormix as rp

from tests.unit.flavormix.helpers import dp_cost
from tests.unit.flavormix.helpers import exact_cap
from tests.unit.flavormix.helpers import exact_price
from tests.unit.flavormix.helpers import F


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
