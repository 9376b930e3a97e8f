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
"""Rules of the SLO controllers (opie_sched.market.slo), one class per policy.

Themis HPCC'12 Fig. 3/4 and Table I; Themis SLO-policies paper Alg. 1;
Merkat RR-8343 Algorithms 1-3.
"""

import math

import testtools

from opie_sched import flavormix
from opie_sched.market import slo


class BidMaxTest(testtools.TestCase):
    """bid_max = remaining budget / remaining time (Themis Table I)."""

    def test_spread_over_time(self):
        self.assertEqual(5.0, slo.bid_max(50, 10))
        self.assertEqual(50.0, slo.bid_max(50, 1))

    def test_negative_balance_is_zero(self):
        self.assertEqual(0.0, slo.bid_max(-3, 2))

    def test_bad_input(self):
        self.assertRaises(slo.SLOError, slo.bid_max, 1, 0)
        self.assertRaises(slo.SLOError, slo.bid_max, 'x', 1)
        self.assertRaises(slo.SLOError, slo.bid_max, True, 1)
        self.assertRaises(slo.SLOError, slo.bid_max, math.nan, 1)


class BudgetRenewalTest(testtools.TestCase):
    """Renewal at a rate, never above the initial amount (§III.A)."""

    def test_renewal_is_capped(self):
        b = slo.Budget(60, 20)
        b.charge(50)
        self.assertEqual(10, b.balance)
        self.assertEqual(30, b.renew())
        self.assertEqual(50, b.renew())
        self.assertEqual(60, b.renew())
        self.assertEqual(60, b.renew())
        self.assertEqual(50, b.spent)

    def test_bid_max_of_balance(self):
        b = slo.Budget(40, 0)
        self.assertEqual(20.0, b.bid_max(2))

    def test_bad_amounts(self):
        self.assertRaises(slo.SLOError, slo.Budget, -1)
        self.assertRaises(slo.SLOError, slo.Budget(1).charge, -1)


class ScaleOneVMTest(testtools.TestCase):
    """Fig. 3 lines 1-20: factor 1+T, x2 after `limit` steps, dead band."""

    def test_increase_by_one_plus_gap(self):
        c = slo.ScaleOneVM()
        # v = 0.5, v_ref = 1 -> T = 0.5, factor 1.5.
        self.assertAlmostEqual(15.0, c(10, 0.5, 1.0, 1, 100))

    def test_aggressive_after_limit(self):
        c = slo.ScaleOneVM(limit=3)
        c(10, 0.5, 1.0, 1, 1000)          # step 2: factor 1.5
        self.assertAlmostEqual(20.0, c(10, 0.5, 1.0, 1, 1000))  # step 3

    def test_large_gap_doubles(self):
        c = slo.ScaleOneVM()
        # v_ref = 1, v = -2 -> T = 3 >= 2 -> factor 2.
        self.assertAlmostEqual(20.0, c(10, -2.0, 1.0, 1, 1000))

    def test_decrease_and_floor(self):
        c = slo.ScaleOneVM()
        self.assertAlmostEqual(10 / 1.5, c(10, 1.5, 1.0, 1, 100))
        self.assertEqual(1.0, slo.ScaleOneVM()(1.2, 100.0, 1.0, 1, 100))

    def test_dead_band_keeps_the_bid(self):
        c = slo.ScaleOneVM()
        self.assertEqual(10.0, c(10, 0.97, 1.0, 1, 100))

    def test_capped_at_bid_max(self):
        self.assertEqual(12.0, slo.ScaleOneVM()(10, 0.1, 1.0, 1, 12))

    def test_reversal_restarts_step(self):
        c = slo.ScaleOneVM(limit=3)
        c(10, 0.5, 1.0, 1, 1000)
        c(10, 0.5, 1.0, 1, 1000)
        # Now above the reference: a new direction, gentle again.
        self.assertAlmostEqual(10 / 1.5, c(10, 1.5, 1.0, 1, 1000))


class VerticalDeadlineTest(testtools.TestCase):
    """Fig. 4 lines 1-7: halve at max allocation, else Scale-One-VM."""

    def test_reference_progress(self):
        self.assertEqual(0.5, slo.reference_progress(100, 200))
        self.assertEqual(math.inf, slo.reference_progress(1, 0))
        self.assertEqual(0.0, slo.reference_progress(0, -5))

    def test_halves_at_maximum_allocation(self):
        c = slo.VerticalDeadline()
        self.assertEqual(5.0, c(10, 1.0, 0.5, 1.0, 1.0, 1, 100))
        self.assertEqual(1.0, c(1.5, 1.0, 0.5, 1.0, 1.0, 1, 100))

    def test_behind_scales_up(self):
        c = slo.VerticalDeadline()
        self.assertAlmostEqual(15.0, c(10, 0.5, 1.0, 0.5, 1.0, 1, 100))

    def test_maximum_allocation_halves_even_when_behind(self):
        # Fig. 4 line 4 tests the allocation only: more bid cannot buy
        # more than the most the application can use.
        c = slo.VerticalDeadline()
        self.assertEqual(30.0, c(60, 1.0, 2.0, 1.0, 1.0, 1, 100))

    def test_unreachable_deadline_bids_up(self):
        c = slo.VerticalDeadline()
        self.assertEqual(100.0, c(60, 0.5, math.inf, 0.5, 1.0, 1, 100))


class StartSuspendTest(testtools.TestCase):
    """SLO paper Alg. 1 and the HPCC'12 postpone rule."""

    def test_initial_bid(self):
        self.assertEqual(7.5, slo.initial_bid(10, 0.75, 1))
        self.assertEqual(1.0, slo.initial_bid(0.1, 0.75, 1))

    def test_can_start(self):
        self.assertTrue(slo.can_start([5, 5], 10))
        self.assertFalse(slo.can_start([5, 5.5], 10))

    def test_postpone(self):
        self.assertEqual(50.0, slo.postpone_time(300, 200))
        self.assertEqual(300.0, slo.postpone_time(300, 200, 0.5, 300))
        self.assertIsNone(slo.postpone_time(100, 200))

    def test_suspend_after_max_iterations(self):
        s = slo.Suspend(2)
        self.assertFalse(s(True, True))
        self.assertFalse(s(True, True))
        self.assertTrue(s(True, True))

    def test_any_good_period_resets(self):
        s = slo.Suspend(1)
        self.assertFalse(s(True, True))
        self.assertFalse(s(True, False))     # could still pay more
        self.assertFalse(s(True, True))
        self.assertTrue(s(True, True))

    def test_bad_iterations(self):
        self.assertRaises(slo.SLOError, slo.Suspend, -1)


class ScaleMultiVMsTest(testtools.TestCase):
    """Fig. 3 lines 22-42: additive then doubling, within nvms_max."""

    def test_grows_additively_then_doubles(self):
        c = slo.ScaleMultiVMs(limit=3)
        bid, n = c(0.5, 1.0, 1.0, 4, 1.0, 2.0, 1000, 100)
        self.assertEqual(2.0, bid)           # alloc_ref * P
        self.assertEqual(6, n)               # factor 2
        _, n = c(0.5, 1.0, 1.0, n, 1.0, 2.0, 1000, 100)
        self.assertEqual(10, n)              # factor 4 (doubled)

    def test_bounded_by_budget_and_provider(self):
        c = slo.ScaleMultiVMs()
        _, n = c(0.5, 1.0, 1.0, 4, 1.0, 2.0, 11, 100)
        self.assertEqual(5, n)               # floor(11 / 2)
        _, n = slo.ScaleMultiVMs()(0.5, 1, 1, 4, 1.0, 2.0, 1000, 5)
        self.assertEqual(5, n)               # T_nvms

    def test_shrinks_to_one_at_least(self):
        c = slo.ScaleMultiVMs()
        _, n = c(5.0, 1.0, 1.0, 2, 1.0, 1.0, 100, 10)
        self.assertEqual(1, n)

    def test_holds_inside_the_band(self):
        _, n = slo.ScaleMultiVMs()(1.1, 1.0, 1.2, 7, 1.0, 1.0, 100, 10)
        self.assertEqual(7, n)

    def test_bad_thresholds(self):
        self.assertRaises(slo.SLOError, slo.ScaleMultiVMs(), 1, 2, 1, 1,
                          1, 1, 1, 1)


class HorizontalDeadlineTest(testtools.TestCase):
    """Fig. 4 lines 9-13: more workers when the ARIA bound misses."""

    def test_execution_time_bound(self):
        # ceil(9 * 10 / 3) + 20 = 50
        self.assertEqual(50, slo.estimated_execution_time(10, 10, 20, 3))
        self.assertEqual(0, slo.estimated_execution_time(0, 10, 20, 3))

    def test_late_adds_workers(self):
        c = slo.HorizontalDeadline()
        _, n = c(100, 60, 120, 600, 4, 1.0, 1.0, 1000, 200)
        self.assertGreater(n, 4)

    def test_early_releases_workers(self):
        c = slo.HorizontalDeadline()
        _, n = c(10, 60, 120, 100000, 8, 1.0, 1.0, 1000, 200)
        self.assertLess(n, 8)


class MerkatVerticalTest(testtools.TestCase):
    """Merkat Alg. 1: CPU and memory bids, damping, re-weighting."""

    def _call(self, c, bids, alloc, v, bid_max=100.0, share=None):
        return c(bids, alloc, {'cpu': 0.25, 'mem': 256},
                 {'cpu': 1.0, 'mem': 1024}, v, 100.0, 75.0, 100.0, 0.1,
                 bid_max, share)

    def test_too_slow_increases_both(self):
        c = slo.MerkatVertical()
        out = self._call(c, {'cpu': 2, 'mem': 1},
                         {'cpu': 0.5, 'mem': 512}, 150.0)
        # T = |100 - 150| / 150 = 1/3 -> factor max(2, 4/3) = 2.
        self.assertEqual({'cpu': 4.0, 'mem': 2.0}, out)

    def test_fast_enough_decreases(self):
        c = slo.MerkatVertical()
        out = self._call(c, {'cpu': 4, 'mem': 2},
                         {'cpu': 0.5, 'mem': 512}, 50.0)
        # T = 1 -> factor 2.
        self.assertEqual({'cpu': 2.0, 'mem': 1.0}, out)

    def test_damped_on_reversal(self):
        c = slo.MerkatVertical()
        self._call(c, {'cpu': 2, 'mem': 1}, {'cpu': 0.5, 'mem': 512},
                   150.0)          # increased: history < 0
        # Now too fast with a large gap: T = |100 - 10| / 10 = 9;
        # undamped factor 10, damped max(2, 5) = 5.
        out = self._call(c, {'cpu': 4, 'mem': 2},
                         {'cpu': 0.5, 'mem': 512}, 10.0)
        self.assertAlmostEqual(0.8, out['cpu'])
        self.assertAlmostEqual(0.4, out['mem'])

    def test_in_band_keeps_bids(self):
        c = slo.MerkatVertical()
        out = self._call(c, {'cpu': 3, 'mem': 1},
                         {'cpu': 0.5, 'mem': 512}, 90.0)
        self.assertEqual({'cpu': 3.0, 'mem': 1.0}, out)

    def test_below_minimum_allocation_increases(self):
        c = slo.MerkatVertical()
        out = self._call(c, {'cpu': 3, 'mem': 1},
                         {'cpu': 0.1, 'mem': 512}, 90.0)
        self.assertEqual(6.0, out['cpu'])
        self.assertEqual(1.0, out['mem'])

    def test_share_above_maximum_decreases(self):
        c = slo.MerkatVertical()
        out = self._call(c, {'cpu': 4, 'mem': 1},
                         {'cpu': 1.0, 'mem': 512}, 90.0,
                         share={'cpu': 1.5, 'mem': 512})
        self.assertEqual(2.0, out['cpu'])

    def test_share_capped_at_maximum_decreases(self):
        # a work-conserving market caps the share at exactly alloc_max:
        # line 9 still fires (tolerance), the CPU bid halves while the
        # memory (below its maximum, in band) keeps its bid
        c = slo.MerkatVertical()
        out = self._call(c, {'cpu': 4, 'mem': 1},
                         {'cpu': 1.0, 'mem': 512}, 90.0,
                         share={'cpu': 1.0, 'mem': 512})
        self.assertEqual({'cpu': 2.0, 'mem': 1.0}, out)
        # just below the cap (beyond the tolerance): in band, kept
        out = slo.MerkatVertical()(
            {'cpu': 4, 'mem': 1}, {'cpu': 0.99, 'mem': 512},
            {'cpu': 0.25, 'mem': 256}, {'cpu': 1.0, 'mem': 1024}, 90.0,
            100.0, 75.0, 100.0, 0.1, 100.0, {'cpu': 0.99, 'mem': 512})
        self.assertEqual({'cpu': 4.0, 'mem': 1.0}, out)

    def test_budget_reweighting_by_missing_allocation(self):
        c = slo.MerkatVertical()
        out = self._call(c, {'cpu': 30, 'mem': 30},
                         {'cpu': 0.5, 'mem': 768}, 150.0, bid_max=10.0)
        # w_cpu = 0.5, w_mem = 0.25 -> 2/3 and 1/3 of bid_max.
        self.assertAlmostEqual(10.0, sum(out.values()))
        self.assertAlmostEqual(20 / 3.0, out['cpu'])

    def test_budget_with_one_resource_at_maximum(self):
        c = slo.MerkatVertical()
        out = self._call(c, {'cpu': 4, 'mem': 30},
                         {'cpu': 0.5, 'mem': 1024}, 150.0, bid_max=10.0)
        self.assertAlmostEqual(10.0, sum(out.values()))
        self.assertAlmostEqual(10.0, out['mem'])

    def test_mismatched_keys(self):
        self.assertRaises(slo.SLOError, slo.MerkatVertical(), {'cpu': 1},
                          {'mem': 1}, {'cpu': 0}, {'cpu': 1}, 1, 1, 1, 1,
                          0, 1)


class MerkatHorizontalTest(testtools.TestCase):
    """Merkat Alg. 2 (+1/-1 VM) capped by Alg. 3 (VM upper bound)."""

    prices = {'cpu': 1.0, 'mem': 0.001}
    alloc = {'cpu': 1.0, 'mem': 512.0}
    cap = {'cpu': 100.0, 'mem': 102400.0}

    def test_adds_one_when_above_high(self):
        n, bids = slo.MerkatHorizontal()(10, 1, 5, 3, self.prices,
                                         self.alloc, self.cap, 1000, 50)
        self.assertEqual(4, n)
        self.assertEqual({'cpu', 'mem'}, set(bids))

    def test_releases_one_when_below_low(self):
        n, _ = slo.MerkatHorizontal()(0, 1, 5, 3, self.prices, self.alloc,
                                      self.cap, 1000, 50)
        self.assertEqual(2, n)

    def test_budget_bound_is_algorithm_3(self):
        budget = 5.0
        bound, total = flavormix.merkat_vm_upper_bound(
            budget, self.prices, self.alloc, self.cap, 50)
        n, bids = slo.MerkatHorizontal()(10, 1, 5, 40, self.prices,
                                         self.alloc, self.cap, budget, 50)
        self.assertEqual(bound, n)
        self.assertAlmostEqual(sum(total.values()) / bound,
                               sum(bids.values()))
        self.assertLessEqual(sum(bids.values()) * n, budget + 1e-9)

    def test_keeps_one_vm_when_nothing_is_affordable(self):
        n, bids = slo.MerkatHorizontal()(10, 1, 5, 3, self.prices,
                                         self.alloc, self.cap, 0.1, 50)
        self.assertEqual(1, n)
        self.assertAlmostEqual(0.1, sum(bids.values()))
