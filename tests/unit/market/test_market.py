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
"""Tests of the proportional-share spot market (opie_sched.market).

Expected values are computed here from the papers' formulas: Merkat eq. 1
``p = sum(b) / C``, ``a_i = b_i / p``; Merkat §3.1 allocation error
``e = (a_host - a_cluster) / a_host``; Themis §III.B worst-fit decreasing.

Run with ``stestr run tests.unit.market.test_market``.
"""

import dataclasses
import decimal
from decimal import Decimal
import io
import json
import os

import fixtures
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from opie_sched.cmd import cli
from opie_sched.common import flavors
from opie_sched.market import bids
from opie_sched.market import budget
from opie_sched.market import outbid
from opie_sched.market import pricing

D = Decimal
CPU = pricing.VCPUS
RAM = pricing.MEMORY_MB


def close(test, expected, actual, places=20):
    """Decimal (or float) equality up to ``places`` decimal digits."""
    test.assertLess(abs(D(str(expected)) - D(str(actual))),
                    D(10) ** -places,
                    '%s != %s' % (expected, actual))


# -- strategies --------------------------------------------------------------

BID = st.integers(0, 1000).map(lambda n: D(n) / 10)
POSITIVE_BID = st.integers(1, 1000).map(lambda n: D(n) / 10)
CAPACITY = st.integers(1, 500).map(D)


# -- Merkat eq. 1 ------------------------------------------------------------

class SpotPriceTest(testtools.TestCase):

    def test_price_is_sum_of_bids_over_capacity(self):
        self.assertEqual(D(6) / D(4), pricing.spot_price([1, 2, 3], 4))

    def test_reserve_price_is_a_floor(self):
        # sum(b) / C = 3 / 100 = 0.03 < reserve 0.05 -> 0.05
        self.assertEqual(D('0.05'),
                         pricing.spot_price([1, 2], 100, reserve='0.05'))
        # 300 / 100 = 3 > reserve 0.05 -> eq. 1 price
        self.assertEqual(D(3),
                         pricing.spot_price([100, 200], 100, reserve='0.05'))

    def test_no_bids_costs_the_reserve(self):
        self.assertEqual(D(0), pricing.spot_price([], 10))
        self.assertEqual(D('0.2'), pricing.spot_price([], 10, '0.2'))

    def test_capacity_must_be_positive(self):
        self.assertRaises(ValueError, pricing.spot_price, [1], 0)
        self.assertRaises(ValueError, pricing.spot_price, [1], -5)

    def test_themis_two_bidders(self):
        # Themis SLO-policies paper §2: bids 1 and 2 on one node's CPU ->
        # A gets 1/3 and B 2/3 of it.
        shares = pricing.proportional_shares({'A': 1, 'B': 2}, 100)
        close(self, D(100) / 3, shares['A'])
        close(self, D(200) / 3, shares['B'])

    @settings(max_examples=60, deadline=None)
    @given(st.lists(POSITIVE_BID, min_size=1, max_size=8), CAPACITY)
    def test_uncapped_shares_are_bid_over_price(self, bid_list, capacity):
        named = {'vm%d' % i: b for i, b in enumerate(bid_list)}
        price = sum(bid_list) / capacity
        shares = pricing.proportional_shares(named, capacity)
        for key, bid in named.items():
            close(self, bid / price, shares[key], places=18)
        # Work conserving: the whole capacity is handed out.
        close(self, capacity, sum(shares.values()), places=18)


class ProportionalSharesTest(testtools.TestCase):

    def test_cap_surplus_goes_to_the_others(self):
        # capacity 10, bids A=1 B=1 C=2: p = 4 / 10, C would get
        # 2 / 0.4 = 5 but asked for 2 -> 2. The other 8 units are shared
        # by A and B at p' = 2 / 8: 1 / 0.25 = 4 each.
        shares = pricing.proportional_shares(
            {'A': 1, 'B': 1, 'C': 2}, 10, caps={'C': 2})
        self.assertEqual({'A': D(4), 'B': D(4), 'C': D(2)}, shares)

    def test_cascading_caps(self):
        # capacity 12, bids 1, 2, 3, caps C=2 then B=4:
        # p = 6/12: C -> 6 >= 2 capped; p' = 3/10: B -> 6.67 >= 4 capped;
        # p'' = 1/6: A -> 6.
        shares = pricing.proportional_shares(
            {'A': 1, 'B': 2, 'C': 3}, 12, caps={'B': 4, 'C': 2})
        self.assertEqual({'A': D(6), 'B': D(4), 'C': D(2)}, shares)

    def test_everyone_capped_leaves_capacity_idle(self):
        shares = pricing.proportional_shares(
            {'A': 5, 'B': 5}, 100, caps={'A': 10, 'B': 20})
        self.assertEqual({'A': D(10), 'B': D(20)}, shares)

    def test_reserve_limits_a_share(self):
        # One bidder of 1/h, 100 units, reserve 0.1/unit-h: 1 / 0.1 = 10.
        shares = pricing.proportional_shares({'A': 1}, 100, reserve='0.1')
        self.assertEqual(D(10), shares['A'])

    def test_zero_bid_gets_nothing(self):
        self.assertEqual({'A': D(0), 'B': D(10)},
                         pricing.proportional_shares({'A': 0, 'B': 3}, 10))
        self.assertEqual({'A': D(0)},
                         pricing.proportional_shares({'A': 0}, 10))

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.tuples(BID, st.one_of(st.none(), CAPACITY)),
                    min_size=1, max_size=8),
           CAPACITY)
    def test_caps_and_capacity_hold(self, rows, capacity):
        named = {'vm%d' % i: b for i, (b, _) in enumerate(rows)}
        caps = {'vm%d' % i: c for i, (_, c) in enumerate(rows)}
        shares = pricing.proportional_shares(named, capacity, caps)
        tolerance = D('1e-18')
        self.assertLessEqual(sum(shares.values()), capacity + tolerance)
        for key, share in shares.items():
            self.assertGreaterEqual(share, 0)
            if caps[key] is not None:
                self.assertLessEqual(share, caps[key] + tolerance)
            if named[key] == 0:
                self.assertEqual(0, share)
        # Work conserving: capacity only idles when every bidder is capped.
        bidders = [k for k in named if named[k] > 0]
        uncapped = [k for k in bidders
                    if caps[k] is None or shares[k] < caps[k] - tolerance]
        if uncapped:
            close(self, capacity, sum(shares.values()), places=17)


# -- Merkat §3.1: allocation error -------------------------------------------

class AllocationErrorTest(testtools.TestCase):

    def test_formula(self):
        # e = (a_host - a_cluster) / a_host
        self.assertEqual(D(-1) / D(4), pricing.allocation_error(40, 50))
        self.assertEqual(D(1) / D(5), pricing.allocation_error(50, 40))
        self.assertEqual(D(0), pricing.allocation_error(7, 7))

    def test_zero_shares(self):
        self.assertEqual(D(0), pricing.allocation_error(0, 0))
        self.assertRaises(ValueError, pricing.allocation_error, 0, 1)

    def test_vm_error_is_the_largest_over_resources(self):
        errors = {CPU: D('0.1'), RAM: D('-0.5')}
        self.assertEqual(D('-0.5'), pricing.vm_allocation_error(errors))
        errors = {CPU: D('0.3'), RAM: D('-0.2')}
        self.assertEqual(D('0.3'), pricing.vm_allocation_error(errors))
        # Equal magnitudes: the deficit is reported.
        errors = {CPU: D('0.2'), RAM: D('-0.2')}
        self.assertEqual(D('-0.2'), pricing.vm_allocation_error(errors))
        self.assertEqual(D(0), pricing.vm_allocation_error({}))


# -- Themis §III.B: worst-fit decreasing -------------------------------------

class WorstFitDecreasingTest(testtools.TestCase):

    def test_highest_bid_first_to_least_loaded_host(self):
        placement = pricing.worst_fit_decreasing(
            {'a': 1, 'b': 5, 'c': 3, 'd': 2}, ['h1', 'h2'])
        # b(5) -> h1; c(3) -> h2 (0 < 5); d(2) -> h2 (3 < 5);
        # a(1) -> h1 (5 = 5, first host wins).
        self.assertEqual(['b', 'c', 'd', 'a'], list(placement))
        self.assertEqual({'b': 'h1', 'c': 'h2', 'd': 'h2', 'a': 'h1'},
                         placement)

    def test_existing_load_counts(self):
        placement = pricing.worst_fit_decreasing(
            {'x': 1}, ['h1', 'h2'], assigned={'h1': 0, 'h2': -1})
        self.assertEqual({'x': 'h2'}, placement)
        placement = pricing.worst_fit_decreasing(
            {'x': 1}, ['h1', 'h2'], assigned={'h1': 10})
        self.assertEqual({'x': 'h2'}, placement)

    def test_errors(self):
        self.assertRaises(ValueError, pricing.worst_fit_decreasing,
                          {'x': 1}, [])
        self.assertRaises(ValueError, pricing.worst_fit_decreasing,
                          {'x': 1}, ['h', 'h'])
        self.assertEqual({}, pricing.worst_fit_decreasing({}, []))

    def test_themis_two_hosts_three_equal_bids(self):
        # Themis §III.B: 2 hosts x 100 CPU, 3 VMs with the same bid b.
        # Cluster-wide each should get 200 / 3 = 66.6; per host, two share
        # one host (50 each) and the third has a host to itself (100).
        b = D(7)
        hosts = [pricing.Host('h1', {CPU: 100}), pricing.Host('h2',
                                                              {CPU: 100})]
        vms = [pricing.VM(u, {CPU: b}) for u in ('v1', 'v2', 'v3')]
        result = pricing.allocate(hosts, vms)
        by_host = {}
        for vm in result.vms.values():
            by_host.setdefault(vm.host, []).append(vm.host_shares[CPU])
            close(self, b / (3 * b / 200), vm.cluster[CPU])
            self.assertTrue(vm.placed)
        self.assertEqual([[D(100) * b / (2 * b)] * 2, [D(100)]],
                         sorted(by_host.values(), key=len, reverse=True))
        self.assertEqual(('v1', 'v3'), result.hosts['h1'].vms)
        self.assertEqual(('v2',), result.hosts['h2'].vms)


# -- Merkat §3.1 worked example ----------------------------------------------

def merkat_market(**vm_host):
    hosts = [pricing.Host('n%d' % i, {CPU: 100}) for i in (1, 2, 3)]
    bid_of = {'s1': 12, 's2': 12, 's3': 12, 'l1': 30, 'l2': 30}
    vms = [pricing.VM(u, {CPU: b}, vm_host.get(u))
           for u, b in bid_of.items()]
    return hosts, vms, bid_of


class MerkatExampleTest(testtools.TestCase):
    """3 nodes x 100 CPU; 3 VMs bid 12, 2 VMs bid 30 (Merkat §3.1)."""

    def check(self, result, bid_of):
        price = D(sum(bid_of.values())) / D(300)      # eq. 1, cluster-wide
        self.assertEqual(price, result.pools['default'].prices[CPU])
        for uuid, vm in result.vms.items():
            cluster = D(bid_of[uuid]) / price
            self.assertEqual(cluster, vm.cluster[CPU])
            local_bids = [bid_of[u] for u in result.hosts[vm.host].vms]
            host_price = D(sum(local_bids)) / D(100)
            local = D(bid_of[uuid]) / host_price
            close(self, local, vm.host_shares[CPU])
            close(self, (local - cluster) / local, vm.errors[CPU])
            self.assertEqual(vm.errors[CPU], vm.error)

    def test_paper_numbers(self):
        hosts, vms, bid_of = merkat_market(s1='n3', s2='n3', s3='n3',
                                           l1='n1', l2='n2')
        result = pricing.allocate(hosts, vms)
        self.check(result, bid_of)
        # "an allocation of 37.5 CPU units for the first 3 VMs and ... 93.75
        # for the last two"; per node "33.3 ... and 100".
        self.assertEqual(D('37.5'), result.vms['s1'].cluster[CPU])
        self.assertEqual(D('93.75'), result.vms['l1'].cluster[CPU])
        close(self, D(100) / 3, result.vms['s2'].host_shares[CPU])
        self.assertEqual(D(100), result.vms['l2'].host_shares[CPU])
        # Not enforceable: three 37.5s do not fit in 100, nor 93.75 + 37.5.
        self.assertGreater(3 * result.vms['s1'].cluster[CPU], 100)
        self.assertFalse(result.vms['s1'].placed)

    def test_worst_fit_decreasing_finds_the_paper_placement(self):
        hosts, vms, bid_of = merkat_market()
        result = pricing.allocate(hosts, vms)
        self.check(result, bid_of)
        self.assertEqual(('l1',), result.hosts['n1'].vms)
        self.assertEqual(('l2',), result.hosts['n2'].vms)
        self.assertEqual(('s1', 's2', 's3'), result.hosts['n3'].vms)

    def test_cluster_share_capped_at_one_host(self):
        # One VM bidding 90 and one bidding 10 on 2 x 100: eq. 1 on 200
        # units would give 180, more than a host has -> 100; the other
        # gets the remaining 100 (work conserving).
        hosts = [pricing.Host('h1', {CPU: 100}),
                 pricing.Host('h2', {CPU: 100})]
        vms = [pricing.VM('big', {CPU: 90}), pricing.VM('small', {CPU: 10})]
        result = pricing.allocate(hosts, vms)
        self.assertEqual(D(100), result.vms['big'].cluster[CPU])
        self.assertEqual(D(100), result.vms['small'].cluster[CPU])
        self.assertEqual(D(0), result.vms['big'].error)

    def test_requests_cap_shares(self):
        hosts = [pricing.Host('h1', {CPU: 8, RAM: 16384})]
        vms = [pricing.VM('a', {CPU: 1, RAM: 1}, 'h1', {CPU: 2, RAM: 4096}),
               pricing.VM('b', {CPU: 1, RAM: 3}, 'h1')]
        result = pricing.allocate(hosts, vms)
        a, b = result.vms['a'], result.vms['b']
        self.assertEqual(D(2), a.host_shares[CPU])        # 4 > asked 2
        self.assertEqual(D(6), b.host_shares[CPU])        # the rest
        self.assertEqual(D(4096), a.host_shares[RAM])     # 1/4 = 4096
        self.assertEqual(D(12288), b.host_shares[RAM])

    def test_pools_are_separate_markets(self):
        hosts = [pricing.Host('a1', {CPU: 10}, 'gold'),
                 pricing.Host('b1', {CPU: 10}, 'silver')]
        vms = [pricing.VM('x', {CPU: 5}, 'a1', {CPU: 8}),
               pricing.VM('z', {CPU: 1}, 'a1', {CPU: 4}),
               pricing.VM('y', {CPU: 1}, None, {CPU: 2}, pool='silver')]
        result = pricing.allocate(hosts, vms, {CPU: '0.01'})
        # gold: 12 vCPU asked of 10 -> contended, eq. 1 price 6 / 10; x's
        # 8.33 would pass its 8 -> 8, z gets the 2 left at 1 / 2.
        self.assertEqual(D(1) / 2, result.pools['gold'].prices[CPU])
        self.assertEqual({'x': D(8), 'z': D(2)},
                         {u: result.vms[u].cluster[CPU] for u in 'xz'})
        # silver: 2 vCPU asked of 10 -> the price falls to the reserve.
        self.assertEqual(D('0.01'), result.pools['silver'].prices[CPU])
        self.assertEqual(D(2), result.vms['y'].cluster[CPU])
        self.assertEqual('b1', result.vms['y'].host)

    def test_bad_markets(self):
        h = pricing.Host('h', {CPU: 1})
        self.assertRaises(ValueError, pricing.allocate, [], [])
        self.assertRaises(ValueError, pricing.allocate, [h, h], [])
        self.assertRaises(ValueError, pricing.allocate,
                          [h, pricing.Host('g', {RAM: 1})], [])
        self.assertRaises(ValueError, pricing.allocate,
                          [pricing.Host('z', {CPU: 0})], [])
        self.assertRaises(ValueError, pricing.allocate, [h],
                          [pricing.VM('v', {CPU: 1}, 'nowhere')])
        self.assertRaises(ValueError, pricing.allocate, [h],
                          [pricing.VM('v', {CPU: 1}, None, pool='other')])
        self.assertRaises(ValueError, pricing.allocate, [h],
                          [pricing.VM('v', {RAM: 1}, 'h')])
        v = pricing.VM('v', {CPU: 1}, 'h')
        self.assertRaises(ValueError, pricing.allocate, [h], [v, v])


class SplitBidTest(testtools.TestCase):

    def test_in_proportion_to_requested_fractions(self):
        # 2 of 8 vCPU = 1/4, 2048 of 16384 MB = 1/8: weights 2 : 1.
        parts = pricing.split_bid('0.3', {CPU: 8, RAM: 16384},
                                  {CPU: 2, RAM: 2048})
        self.assertEqual({CPU: D('0.2'), RAM: D('0.1')}, parts)

    def test_equal_without_request(self):
        parts = pricing.split_bid(1, {RAM: 10, CPU: 4})
        self.assertEqual([CPU, RAM], list(parts))
        self.assertEqual({CPU: D('0.5'), RAM: D('0.5')}, parts)

    def test_parts_add_up_exactly(self):
        parts = pricing.split_bid(1, {CPU: 3, RAM: 3}, {CPU: 1, RAM: 2})
        self.assertEqual(D(1), sum(parts.values()))

    def test_surplus_goes_to_the_contended_resources_only(self):
        # issue 23: with memory uncontended, a 1 vCPU / 16 GB server
        # bidding 1.0 bids it all on vCPU (memory is at its reserve).
        capacity = {CPU: 16, RAM: 64000}
        held = {CPU: 1, RAM: 16000}
        self.assertEqual({CPU: D('0.2'), RAM: D('0.8')},
                         pricing.split_bid(1, capacity, held))
        self.assertEqual({CPU: D(1), RAM: D(0)},
                         pricing.split_bid(1, capacity, held,
                                           contended={CPU}))
        # the reserve cost is paid first on every resource
        self.assertEqual({CPU: D('0.84'), RAM: D('0.16')},
                         pricing.split_bid(1, capacity, held,
                                           {RAM: D('0.00001')},
                                           contended={CPU}))
        # a server asking nothing of the contended resource: as before
        self.assertEqual(pricing.split_bid(1, capacity, {RAM: 100}),
                         pricing.split_bid(1, capacity, {RAM: 100},
                                           contended={CPU}))

    def test_contended_resources(self):
        self.assertEqual(frozenset({CPU}), pricing.contended_resources(
            {CPU: 4, RAM: 100}, [{CPU: 3, RAM: 50}, {CPU: 2, RAM: 50}]))
        self.assertEqual(frozenset(), pricing.contended_resources(
            {CPU: 4, RAM: 100}, [{CPU: 4, RAM: 100}]))


# -- bids --------------------------------------------------------------------

class BidsTest(testtools.TestCase):

    def test_valid(self):
        self.assertEqual(D('0.05'), bids.parse_bid('0.05'))
        self.assertEqual(D('0.05'), bids.parse_bid(' 0.05\n'))
        self.assertEqual(D('0.1'), bids.parse_bid(0.1))   # shortest repr
        self.assertEqual(D(3), bids.parse_bid(3))
        self.assertEqual(D(0), bids.parse_bid('0'))
        self.assertFalse(bids.parse_bid('-0').is_signed())
        self.assertEqual(D(2), bids.parse_bid('2', cap=2))   # cap allowed
        self.assertIsInstance(bids.parse_bid(1), Decimal)

    def assertRejected(self, value, fragment, cap=None):
        exc = self.assertRaises(bids.BidError, bids.parse_bid, value, cap,
                                'vm1 bid')
        self.assertIsInstance(exc, ValueError)
        self.assertIn('vm1 bid', str(exc))
        self.assertIn(fragment, str(exc))

    def test_negative(self):
        self.assertRejected(-1, 'negative')
        self.assertRejected('-0.01', 'negative')

    def test_nan(self):
        self.assertRejected(float('nan'), 'not a number')
        self.assertRejected('NaN', 'not a number')
        self.assertRejected(D('sNaN'), 'not a number')

    def test_infinite(self):
        self.assertRejected(float('inf'), 'finite')
        self.assertRejected('-Infinity', 'finite')

    def test_not_numbers(self):
        for value in ('abc', '', '1,5', None, True, [1], {'x': 1}):
            self.assertRejected(value, 'not a number')

    def test_above_cap(self):
        self.assertRejected('10.01', 'above the largest accepted bid 10',
                            cap=10)

    def test_precedence(self):
        md, fl = {'opie:bid': '0.3'}, {'opie:bid': '0.2'}
        self.assertEqual((D('0.3'), bids.SOURCE_METADATA),
                         bids.resolve_bid(md, fl, '0.1'))
        self.assertEqual((D('0.2'), bids.SOURCE_FLAVOR),
                         bids.resolve_bid({'other': 'x'}, fl, '0.1'))
        self.assertEqual((D('0.1'), bids.SOURCE_DEFAULT),
                         bids.resolve_bid(None, {}, '0.1'))

    def test_invalid_source_does_not_fall_back(self):
        exc = self.assertRaises(bids.BidError, bids.resolve_bid,
                                {'opie:bid': 'lots'}, {'opie:bid': '0.2'},
                                '0.1')
        self.assertIn('server metadata opie:bid', str(exc))
        exc = self.assertRaises(bids.BidError, bids.resolve_bid,
                                None, {'opie:bid': '5'}, '0.1', cap=1)
        self.assertIn('flavor extra spec opie:bid', str(exc))
        self.assertRaises(bids.BidError, bids.resolve_bid, {}, {}, None)

    def test_invalid_bids_never_change_a_price(self):
        raw = {'a': '1', 'b': '-5', 'c': 'nan', 'd': '2', 'e': 'inf',
               'f': '99', 'g': True}
        valid, rejected = bids.valid_bids(raw, cap=10)
        self.assertEqual({'a': D(1), 'd': D(2)}, valid)
        self.assertEqual(['b', 'c', 'e', 'f', 'g'], list(rejected))
        self.assertEqual(D(3) / 10, pricing.spot_price(valid.values(), 10))


# -- budget ------------------------------------------------------------------

T0 = 1_800_000_000          # a period start, seconds since the epoch
HOUR = 3600
PRICES = {CPU: D('0.32'), RAM: D('0.00001')}     # per vCPU-h, per MB-h


def server(uuid, bid, project='p1', created_at=None, cpu=2, ram=4096,
           pool=pricing.DEFAULT_POOL):
    return outbid.Server(uuid, D(bid), {CPU: cpu, RAM: ram}, project,
                         created_at, pool)


class BudgetTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.cm = budget.CreditManager()
        self.cm.open_account('p1', balance=10, refill_rate=2, cap=12)

    def test_charge_is_price_times_held_times_period(self):
        entry = self.cm.charge('p1', 's1', T0, 1800, PRICES,
                               {CPU: 2, RAM: 4096})
        # (0.32 * 2 + 0.00001 * 4096) per hour * 0.5 h
        expected = (D('0.32') * 2 + D('0.00001') * 4096) * D('0.5')
        self.assertEqual(-expected, entry.amount)
        self.assertEqual(D(10) - expected, self.cm.balance('p1'))
        self.assertEqual(entry.balance, self.cm.balance('p1'))
        self.assertEqual(budget.EntryKey('charge', 'p1', 's1', T0),
                         entry.key)

    def test_charges_are_rounded_to_the_quantum(self):
        entry = self.cm.charge('p1', 's1', T0, HOUR, {CPU: D(1) / 3},
                               {CPU: 1})
        self.assertEqual(D('-0.333333'), entry.amount)

    def test_refill_rate_and_cap(self):
        self.cm.charge('p1', 's1', T0, HOUR, {CPU: 7}, {CPU: 1})   # 10->3
        self.assertEqual(D(1), self.cm.refill('p1', T0, 1800).amount)
        self.assertEqual(D(4), self.cm.balance('p1'))
        for hour in range(1, 6):      # +2 per hour up to the cap of 12
            self.cm.refill('p1', T0 + hour * HOUR, HOUR)
        self.assertEqual(D(12), self.cm.balance('p1'))
        last = self.cm.store.entries('p1')[-1]
        self.assertEqual(D(0), last.amount)          # 4+2+2+2+2 = 12, then 0

    def test_refill_above_cap_takes_nothing_away(self):
        self.cm.credit('p1', 50, granted_at=T0)
        self.assertEqual(D(60), self.cm.balance('p1'))
        self.assertEqual(D(0), self.cm.refill('p1', T0, HOUR).amount)
        self.assertEqual(D(60), self.cm.balance('p1'))

    def test_uncapped_refill(self):
        self.cm.open_account('p2', refill_rate='0.5')
        self.cm.refill('p2', T0, 4 * HOUR)
        self.assertEqual(D(2), self.cm.balance('p2'))

    def test_replayed_period_is_not_charged_twice(self):
        servers = [server('s1', 1), server('s2', 1),
                   server('other', 1, project='p2')]
        prices = {pricing.DEFAULT_POOL: PRICES}
        first = self.cm.settle_period('p1', T0, HOUR, servers, prices)
        balance = self.cm.balance('p1')
        ledger = self.cm.store.entries()
        # A restart replays the period, even with other prices: no change.
        again = self.cm.settle_period(
            'p1', T0, HOUR, servers, {pricing.DEFAULT_POOL: {CPU: 100}})
        self.assertEqual(first, again)
        self.assertEqual(balance, self.cm.balance('p1'))
        self.assertEqual(ledger, self.cm.store.entries())
        # 10 + refill min(2, 12 - 10) - 2 servers * (0.64 + 0.04096)
        self.assertEqual(D(12) - 2 * (D('0.64') + D('0.04096')), balance)
        self.assertEqual(['refill', 'charge', 'charge'],
                         [e.key.kind for e in ledger])
        # The next period is charged.
        self.cm.settle_period('p1', T0 + HOUR, HOUR, servers, prices)
        self.assertEqual(6, len(self.cm.store.entries('p1')))

    def test_credit_is_idempotent(self):
        self.cm.credit('p1', '2.5', granted_at=T0)
        self.cm.credit('p1', '2.5', granted_at=T0)
        self.assertEqual(D('12.5'), self.cm.balance('p1'))
        self.assertRaises(budget.BudgetError, self.cm.credit, 'p1', 0, T0 + 1)
        self.assertRaises(budget.BudgetError, self.cm.credit, 'p1', -1,
                          T0 + 1)

    def test_bad_input(self):
        self.assertRaises(budget.UnknownAccount, self.cm.balance, 'nobody')
        self.assertRaises(budget.BudgetError, self.cm.open_account, 'p1')
        self.assertRaises(budget.BudgetError, self.cm.open_account, 'p3',
                          refill_rate=-1)
        self.assertRaises(budget.BudgetError, self.cm.charge, 'p1', 's',
                          T0, 0, PRICES, {CPU: 1})
        self.assertRaises(budget.BudgetError, self.cm.charge, 'p1', 's',
                          T0, HOUR, {CPU: -1}, {CPU: 1})

    def test_period_start_for(self):
        self.assertEqual(T0, budget.period_start_for(T0 + 1799, 1800))
        self.assertEqual(T0 + 1800, budget.period_start_for(T0 + 1800, 1800))

    def test_out_of_credit_lowest_bid_first(self):
        # Each server costs (0.64 + 0.04096) per hour.
        each = D('0.64') + D('0.04096')
        servers = [server('c', '0.9', created_at=5),
                   server('a', '0.7', created_at=9),
                   server('b', '0.7', created_at=3),
                   server('d', '0.7'),
                   server('z', '0.1', project='p2')]
        prices = {pricing.DEFAULT_POOL: PRICES}
        self.assertEqual([], self.cm.out_of_credit('p1', servers, prices,
                                                   HOUR))
        # Leave credit for exactly two servers: drop two, lowest bid first,
        # oldest first among equal bids, unknown age last.
        self.cm.charge('p1', 'x', T0, HOUR, {CPU: D(10) - 2 * each},
                       {CPU: 1})
        self.assertEqual(2 * each, self.cm.balance('p1'))
        victims = self.cm.out_of_credit('p1', servers, prices, HOUR)
        self.assertEqual(['b', 'a'], [s.uuid for s in victims])
        # In debt: every paying server goes.
        self.cm.charge('p1', 'y', T0, HOUR, {CPU: 5}, {CPU: 1})
        victims = self.cm.out_of_credit('p1', servers, prices, HOUR)
        self.assertEqual(['b', 'a', 'd', 'c'], [s.uuid for s in victims])

    def test_out_of_credit_most_expensive_policy(self):
        servers = [server('small', '0.1', cpu=1, ram=0),
                   server('big', '9', cpu=8, ram=0)]
        prices = {pricing.DEFAULT_POOL: {CPU: 1}}
        self.cm.charge('p1', 'x', T0, HOUR, {CPU: 9}, {CPU: 1})   # -> 1
        victims = self.cm.out_of_credit('p1', servers, prices, HOUR,
                                        policy='most_expensive')
        self.assertEqual(['big'], [s.uuid for s in victims])
        victims = self.cm.out_of_credit('p1', servers, prices, HOUR)
        self.assertEqual(['small', 'big'], [s.uuid for s in victims])
        self.assertRaises(budget.BudgetError, self.cm.out_of_credit, 'p1',
                          servers, prices, HOUR, policy='random')

    def test_a_post_that_lost_a_race_is_recomputed(self):
        store = RacyStore()
        cm = budget.CreditManager(store)
        cm.open_account('p', balance=5)
        entry = cm.charge('p', 's', T0, HOUR, {CPU: 1}, {CPU: 1})
        # Someone else credited 1 between the read and the post.
        self.assertEqual(D(5), entry.balance)
        self.assertEqual(D(5), cm.balance('p'))
        self.assertEqual(['credit', 'charge'],
                         [e.key.kind for e in store.entries()])


class RacyStore(budget.InMemoryStore):
    """Another worker credits the account once, right before a post."""

    raced = False

    def post(self, entry, expected_version):
        if not self.raced:
            self.raced = True
            account = self.get_account(entry.key.project)
            super().post(budget.LedgerEntry(
                budget.EntryKey('credit', account.project, None, 0),
                D(1), account.balance + 1), account.version)
        super().post(entry, expected_version)


# -- out of bid --------------------------------------------------------------

class OutbidTest(testtools.TestCase):
    """The out-of-bid rule (:func:`outbid.assess`)."""

    def test_memory_heavy_bid_buys_vcpus_when_memory_is_idle(self):
        # issue 23's example: a 16 vCPU pool (memory plentiful), vCPU
        # contended by 1 vCPU fillers. The 1 vCPU / 16 GB server bidding
        # 1.0 got a 0.79 vCPU share (its bid went mostly to memory) while
        # a 1 vCPU / 1 GB one bidding 0.3 got 0.95: now the higher bid
        # keeps its whole vCPU and the lower one loses.
        servers = [outbid.Server('heavy', D(1), {CPU: 1, RAM: 16000}),
                   outbid.Server('light', D('0.3'), {CPU: 1, RAM: 1000})]
        servers += [outbid.Server('f%02d' % i, D('0.3'),
                                  {CPU: 1, RAM: 1000}) for i in range(16)]
        market = outbid.assess(servers, {CPU: 16, RAM: 64000})
        self.assertEqual({CPU: True, RAM: False}, market.contended)
        heavy = market.positions['heavy']
        light = market.positions['light']
        self.assertEqual(D(1), heavy.shares[CPU])
        self.assertEqual(D(16000), heavy.shares[RAM])
        self.assertFalse(heavy.out_of_bid)
        self.assertLess(light.shares[CPU], 1)
        self.assertNotIn('heavy', {o.server.uuid for o in
                                   outbid.select_victims(
                                       servers, {CPU: 16, RAM: 64000})})

    def test_victims_by_lowest_bid_per_unit_held(self):
        # 8 vCPU, 10 asked. 'big' bids most in total (1.2 for 4 vCPU,
        # 0.3 per vCPU), 'small' less (0.4 for 1 vCPU, 0.4 per vCPU):
        # the market serves 'big' least (Merkat eq. 1: a/d = b/(p d)),
        # so 'big' goes first, and alone (the rest then fits).
        servers = [outbid.Server('big', D('1.2'), {CPU: 4}),
                   outbid.Server('small', D('0.4'), {CPU: 1}),
                   outbid.Server('r1', D(5), {CPU: 3}),
                   outbid.Server('r2', D(5), {CPU: 2})]
        market = outbid.assess(servers, {CPU: 8})
        self.assertEqual(['big', 'small'],
                         [o.server.uuid for o in outbid.out_of_bid(market)])
        self.assertEqual(['big'], [o.server.uuid for o in
                                   outbid.select_victims(servers,
                                                         {CPU: 8})])
        self.assertEqual(D('1.2') / (market.prices[CPU] * 4),
                         outbid.unit_bid(servers[0], market.prices))

    def test_pending_demand_raises_the_price_but_holds_nothing(self):
        # 4 vCPU held by two 2 vCPU servers at the reserve; a refused
        # request (pending) bidding 3 for 2 vCPU contends the pool.
        running = [outbid.Server('low', D('0.5'), {CPU: 2}),
                   outbid.Server('mid', D(2), {CPU: 2})]
        reserve = {CPU: D('0.1')}
        calm = outbid.assess(running, {CPU: 4}, reserve)
        self.assertEqual(D('0.1'), calm.prices[CPU])
        refused = outbid.Server('refused', D(3), {CPU: 2}, pending=True)
        market = outbid.assess(running + [refused], {CPU: 4}, reserve)
        self.assertGreater(market.prices[CPU], D('0.1'))
        self.assertEqual(D(0), market.positions['refused'].charge_per_hour)
        victims = outbid.select_victims(running + [refused], {CPU: 4},
                                        reserve)
        self.assertEqual(['low'], [o.server.uuid for o in victims])
        # a pending request bidding less per unit than the running
        # servers displaces nobody
        poor = outbid.Server('poor', D('0.01'), {CPU: 2}, pending=True)
        self.assertEqual([], outbid.select_victims(
            running + [poor], {CPU: 4}, reserve))
        # ...nor one bidding as much per unit (the incumbent stays)
        same = outbid.Server('same', D('0.5'), {CPU: 2}, pending=True)
        self.assertEqual([], outbid.select_victims(
            running + [same], {CPU: 4}, reserve))

    def test_two_servers_in_an_idle_96_vcpu_pool(self):
        # The example: two 1-vCPU servers bidding 1 and 100 in a
        # 96-vCPU pool. The eq. 1 price 101 / 96 is above the first bid,
        # but the demand (2 vCPU) fits: the price falls to the reserve
        # and both shares cover the flavors.
        servers = [outbid.Server('low', D(1), {CPU: 1}),
                   outbid.Server('high', D(100), {CPU: 1})]
        market = outbid.assess(servers, {CPU: 96})
        self.assertEqual({CPU: D(0)}, market.prices)
        self.assertEqual({CPU: False}, market.contended)
        self.assertEqual([], outbid.out_of_bid(market))
        for uuid in ('low', 'high'):
            self.assertEqual({CPU: D(1)}, market.positions[uuid].shares)
            self.assertEqual(D(0), market.positions[uuid].charge_per_hour)
        # with a reserve of 0.5 per vCPU-hour both pay the reserve cost
        market = outbid.assess(servers, {CPU: 96}, {CPU: '0.5'})
        self.assertEqual({CPU: D('0.5')}, market.prices)
        self.assertEqual([], outbid.out_of_bid(market))
        self.assertEqual([D('0.5'), D('0.5')],
                         [p.charge_per_hour
                          for p in market.positions.values()])
        # ...and a bid below the reserve cost of the flavor is out of bid
        market = outbid.assess(servers, {CPU: 96}, {CPU: 2})
        [found] = outbid.out_of_bid(market)
        self.assertEqual('low', found.server.uuid)
        self.assertEqual({CPU: D('0.5')}, found.position.shortfall)
        self.assertIn('below the reserve price', found.reason)
        self.assertEqual(D(1), found.position.charge_per_hour)

    def test_contention_order_and_reason(self):
        # 4 vCPU of capacity, 2 vCPU per server, 6 asked: contended.
        servers = [server('rich', '4', cpu=2, ram=0),
                   server('b', '1', cpu=2, ram=0, created_at=20),
                   server('a', '1', cpu=2, ram=0, created_at=20),
                   server('old', '1', cpu=2, ram=0, created_at=10)]
        market = outbid.assess(servers, {CPU: 4})
        self.assertTrue(market.contended[CPU])
        # rich gets its 2 vCPU (4 / (7/4) > 2); the 3 others share 2 at
        # 3 / 2 per vCPU-hour: 2/3 vCPU each.
        self.assertEqual(D(3) / 2, market.prices[CPU])
        found = outbid.out_of_bid(market)
        self.assertEqual(['old', 'a', 'b'], [o.server.uuid for o in found])
        reason = found[0].reason
        self.assertIn('out of bid', reason)
        self.assertIn("pool 'default' is contended (8 vCPU demanded of 4)",
                      reason)
        self.assertIn('1.5 per vCPU-hour', reason)
        self.assertIn('buys 0.666667 of the 2 vCPU it holds', reason)
        self.assertEqual(D(3), found[0].cost)
        # the capped server pays its share at the price, not its bid
        self.assertEqual(D(3), market.positions['rich'].charge_per_hour)
        self.assertEqual(D(1), market.positions['old'].charge_per_hour)

    def test_recorded_prices_give_the_same_market(self):
        servers = [server('x', '3', cpu=2, ram=4096),
                   server('y', '1', cpu=4, ram=8192),
                   server('z', '0', cpu=2, ram=2048)]
        capacity = {CPU: 6, RAM: 12288}
        first = outbid.assess(servers, capacity, {CPU: '0.01'})
        again = outbid.assess(servers, capacity, {CPU: '0.01'},
                              prices=first.prices)
        self.assertEqual(first.positions, again.positions)

    def test_bad_input(self):
        self.assertRaises(ValueError, outbid.assess,
                          [server('x', 1)], {CPU: 0})
        self.assertRaises(ValueError, outbid.assess,
                          [server('x', 1), server('x', 2)], {CPU: 4})

    def test_hourly_cost(self):
        self.assertEqual(D('1.5'), outbid.hourly_cost({CPU: D('0.5')},
                                                      {CPU: 3, RAM: 100}))


# -- hypothesis: the work-conserving market ---------------------------------

DEMAND = st.integers(0, 64).map(D)
MARKET_ROWS = st.lists(st.tuples(BID, DEMAND), min_size=1, max_size=8)
COUNTS = {}


def exact_sum(values):
    """The sum without rounding (Decimal's default context keeps 28
    digits; the shares are rounded down so that their exact sum fits).
    """
    with decimal.localcontext() as ctx:
        ctx.prec = 200
        return sum(values, D(0))


def _count(name):
    COUNTS[name] = COUNTS.get(name, 0) + 1


class ClearMarketPropertyTest(testtools.TestCase):
    """Properties of :func:`pricing.clear_market` and :func:`outbid.assess`
    (the issue's three, plus eq. 1 without binding caps).
    """

    @settings(max_examples=300, deadline=None)
    @given(MARKET_ROWS, CAPACITY, st.sampled_from(['0', '0.01', '0.5']))
    def test_shares_never_exceed_demand_nor_capacity(self, rows, capacity,
                                                     reserve):
        _count('shares_bounded')
        bids_ = {'vm%d' % i: b for i, (b, _) in enumerate(rows)}
        demands = {'vm%d' % i: d for i, (_, d) in enumerate(rows)}
        cleared = pricing.clear_market(bids_, capacity, demands, reserve)
        self.assertLessEqual(exact_sum(cleared.shares.values()), capacity)
        for key, share in cleared.shares.items():
            self.assertGreaterEqual(share, 0)
            self.assertLessEqual(share, demands[key])
        self.assertGreaterEqual(cleared.price, D(reserve))

    @settings(max_examples=300, deadline=None)
    @given(MARKET_ROWS, CAPACITY, st.sampled_from(['0', '0.01', '0.5']))
    def test_demand_within_capacity_nobody_out_of_bid(self, rows, capacity,
                                                      reserve):
        total = sum(d for _, d in rows)
        if total > capacity:
            capacity = total if total > 0 else capacity
        _count('no_contention')
        reserve = D(reserve)
        # bids that cover the reserve cost of the flavor (Themis bid_min)
        servers = [outbid.Server('vm%d' % i, b + reserve * d, {CPU: d})
                   for i, (b, d) in enumerate(rows)]
        market = outbid.assess(servers, {CPU: capacity}, {CPU: reserve})
        self.assertEqual({CPU: reserve}, market.prices)
        self.assertEqual([], outbid.out_of_bid(market))
        for srv in servers:
            pos = market.positions[srv.uuid]
            self.assertEqual(srv.held, pos.shares)
            self.assertEqual(reserve * srv.held[CPU], pos.charge_per_hour)

    @settings(max_examples=300, deadline=None)
    @given(MARKET_ROWS, CAPACITY)
    def test_charges_never_exceed_bids_and_eq1_without_caps(self, rows,
                                                            capacity):
        _count('charges')
        servers = [outbid.Server('vm%d' % i, b, {CPU: d})
                   for i, (b, d) in enumerate(rows)]
        market = outbid.assess(servers, {CPU: capacity})
        for srv in servers:
            pos = market.positions[srv.uuid]
            self.assertLessEqual(pos.charge_per_hour, srv.bid)
            self.assertEqual(pos.out_of_bid, pos.shares[CPU] < srv.held[CPU])
        cleared = pricing.clear_market(
            {s.uuid: s.bid for s in servers}, capacity)
        if any(s.bid > 0 for s in servers):
            # no caps: the eq. 1 price, the whole capacity handed out
            close(self, pricing.spot_price([s.bid for s in servers],
                                           capacity), cleared.price)
            close(self, capacity, sum(cleared.shares.values()), places=18)

    @classmethod
    def tearDownClass(cls):
        # printed with the test run's output (the report quotes it)
        print('hypothesis examples run: %s' % sorted(COUNTS.items()))
        super().tearDownClass()


# -- billing: the papers' worked examples ------------------------------------

class WorkedExampleChargesTest(testtools.TestCase):
    """What each VM of the papers' examples is charged for one hour.

    The engine charges what a server's share of its pool costs
    (:func:`outbid.assess`, :meth:`budget.CreditManager.settle_period`).
    A VM of the papers may use up to one host (its maximum allocation).
    """

    def charges(self, bid_of, hosts, per_host):
        servers = [outbid.Server(u, D(b), {CPU: per_host}, 'p')
                   for u, b in bid_of.items()]
        market = outbid.assess(servers, {CPU: hosts * per_host})
        charged = [dataclasses.replace(s, charge_per_hour=market.positions[
            s.uuid].charge_per_hour) for s in servers]
        cm = budget.CreditManager()
        cm.open_account('p', balance=1000)
        entries = cm.settle_period('p', T0, HOUR, charged,
                                   {pricing.DEFAULT_POOL: market.prices})
        return market, {e.key.server: -e.amount for e in entries
                        if e.key.kind == 'charge'}

    def test_themis_two_hosts_three_equal_bids(self):
        # Themis HPCC'12 §III.B: 2 hosts x 100 CPU, 3 VMs bidding b = 7:
        # p = 21 / 200, each entitled to 66.7 -> each pays its bid, 7.
        market, charged = self.charges({'v1': 7, 'v2': 7, 'v3': 7}, 2, 100)
        self.assertEqual(D(21) / 200, market.prices[CPU])
        self.assertEqual({'v1': D(7), 'v2': D(7), 'v3': D(7)}, charged)
        close(self, D(200) / 3, market.positions['v1'].shares[CPU])

    def test_merkat_three_nodes(self):
        # Merkat §3.1: 3 nodes x 100 CPU; bids 12, 12, 12, 30, 30 ->
        # p = 96 / 300 = 0.32, allocations 37.5 and 93.75 -> each pays its
        # bid; the provider earns p * C = 96 per hour.
        bid_of = {'s1': 12, 's2': 12, 's3': 12, 'l1': 30, 'l2': 30}
        market, charged = self.charges(bid_of, 3, 100)
        self.assertEqual(D('0.32'), market.prices[CPU])
        self.assertEqual({u: D(b) for u, b in bid_of.items()}, charged)
        self.assertEqual(D(96), sum(charged.values()))
        self.assertEqual(D('37.5'), market.positions['s1'].shares[CPU])
        self.assertEqual(D('93.75'), market.positions['l1'].shares[CPU])

    def test_capped_share_pays_less_than_its_bid(self):
        # Merkat's example, but the large VMs ask for 50 CPU at most: they
        # get 50 and pay 50 * p*, where p* = 36 / 200 clears the rest.
        servers = [outbid.Server(u, D(b), {CPU: d}) for u, b, d in (
            ('s1', 12, 100), ('s2', 12, 100), ('s3', 12, 100),
            ('l1', 30, 50), ('l2', 30, 50))]
        market = outbid.assess(servers, {CPU: 300})
        self.assertEqual(D(36) / 200, market.prices[CPU])
        self.assertEqual(D(9), market.positions['l1'].charge_per_hour)
        self.assertEqual(D(12), market.positions['s1'].charge_per_hour)


# -- one definition of "preemptible" -----------------------------------------

class PreemptibleMarkerTest(testtools.TestCase):

    def test_marker(self):
        for value in ('true', 'True', '1', 'yes', 'on', True):
            self.assertTrue(flavors.is_marked_preemptible(
                {flavors.MARKER_KEY: value}), value)
        for specs in (None, {}, {flavors.MARKER_KEY: 'false'},
                      {flavors.MARKER_KEY: 'maybe'},
                      {flavors.MARKER_KEY: False}, {'other': 'true'}):
            self.assertFalse(flavors.is_marked_preemptible(specs), specs)
        # the resources are a separate check: the marker alone decides
        self.assertTrue(flavors.is_marked_preemptible(
            {flavors.MARKER_KEY: 'true', 'resources:VCPU': '2'}))


# -- the CLI -----------------------------------------------------------------

MERKAT = {
    'hosts': [{'name': 'node-%d' % i, 'capacity': {'vcpus': 100}}
              for i in (1, 2, 3)],
    'vms': ([{'uuid': 'small-%d' % i, 'bid': 12} for i in (1, 2, 3)]
            + [{'uuid': 'large-%d' % i, 'bid': 30} for i in (1, 2)]),
}


class MarketCLITest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.stdout = io.StringIO()
        self.stderr = io.StringIO()
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', self.stdout))
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', self.stderr))

    def write(self, doc, name='snap.json'):
        path = os.path.join(self.tmp, name)
        with open(path, 'w') as f:
            f.write(doc if isinstance(doc, str) else json.dumps(doc))
        return path

    def run_json(self, doc):
        self.assertEqual(0, self.run_main('market', 'allocate',
                                          self.write(doc), '-f', 'json'),
                         self.stderr.getvalue())
        return json.loads(self.stdout.getvalue())

    def test_merkat_example_json(self):
        out = self.run_json(MERKAT)
        price = (3 * 12 + 2 * 30) / 300.0
        self.assertAlmostEqual(price, out['pools'][0]['prices']['vcpus'])
        vms = {v['uuid']: v for v in out['vms']}
        for uuid, bid, host_bids in (('small-1', 12, 36),
                                     ('large-2', 30, 30)):
            vm = vms[uuid]
            cluster = bid / price
            local = bid / (host_bids / 100.0)
            self.assertAlmostEqual(cluster, vm['cluster_share']['vcpus'])
            self.assertAlmostEqual(local, vm['host_share']['vcpus'])
            self.assertAlmostEqual((local - cluster) / local, vm['error'])
            self.assertTrue(vm['placed'])
            self.assertEqual('bid', vm['bid_source'])
        hosts = {h['name']: h for h in out['hosts']}
        self.assertEqual(['small-1', 'small-2', 'small-3'],
                         hosts['node-3']['vms'])

    def test_table(self):
        self.assertEqual(0, self.run_main('market', 'allocate',
                                          self.write(MERKAT), '-c', 'vms'))
        cells = [line.split('|')[2].strip() for line in
                 self.stdout.getvalue().splitlines() if line.count('|') == 3]
        self.assertEqual('Value', cells[0])
        self.assertEqual(['vm', 'host', 'bid source', 'bids/h',
                          'cluster share', 'host share', 'errors',
                          'vm error'],
                         [c.strip() for c in cells[1].split('   ')
                          if c.strip()])
        row = [c for c in cells if c.startswith('small-1')][0].split()
        self.assertEqual(['small-1', 'node-3', '(placed)', 'bid',
                          'vcpus=12', 'vcpus=37.5', 'vcpus=33.3333',
                          'vcpus=-0.125', '-0.125'], row)

    def test_table_has_every_field(self):
        self.assertEqual(0, self.run_main('market', 'allocate',
                                          self.write(MERKAT)))
        out = self.stdout.getvalue()
        for field in ('resources', 'reserve_price', 'pools', 'hosts',
                      'vms'):
            self.assertIn('| %s ' % field, out)
        self.assertIn('vcpus=0.32', out)     # (3 * 12 + 2 * 30) / 300

    def test_bid_sources_reserve_and_split(self):
        doc = {
            'reserve_price': {'vcpus': 0.5},
            'default_bid': '0.4', 'max_bid': 10,
            'hosts': [{'name': 'h', 'pool': 'gold',
                       'capacity': {'vcpus': 8, 'memory_mb': 8192}}],
            'vms': [{'uuid': 'm', 'host': 'h', 'metadata': {'opie:bid': 1},
                     'flavor_extra_specs': {'opie:bid': '2'},
                     'request': {'vcpus': 4, 'memory_mb': 2048}},
                    {'uuid': 'f', 'host': 'h',
                     'flavor_extra_specs': {'opie:bid': '2'}},
                    {'uuid': 'd', 'pool': 'gold'},
                    {'uuid': 'x', 'host': 'h',
                     'bid': {'vcpus': '0.25', 'memory_mb': '0.5'}}]}
        out = self.run_json(doc)
        vms = {v['uuid']: v for v in out['vms']}
        self.assertEqual(['metadata', 'flavor', 'default', 'bid'],
                         [vms[u]['bid_source'] for u in 'mfdx'])
        # m: weights 4/8 : 2048/8192 = 2 : 1 of its bid of 1.
        self.assertAlmostEqual(2 / 3, vms['m']['bids']['vcpus'])
        self.assertAlmostEqual(1 / 3, vms['m']['bids']['memory_mb'])
        self.assertEqual(0.5, out['reserve_price']['vcpus'])
        # vCPU bids: 2/3 + 1 + 0.2 + 0.25 = 2.1167 < reserve 0.5 * 8 -> 0.5
        self.assertEqual(0.5, out['pools'][0]['prices']['vcpus'])
        self.assertAlmostEqual(0.25 / 0.5, vms['x']['host_share']['vcpus'])

    def run_main(self, *argv):
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_CLIENT_CONFIG_FILE', os.path.join(self.tmp, 'none.yaml')))
        self.useFixture(fixtures.EnvironmentVariable('HOME', self.tmp))
        return cli.main(list(argv))

    def assertSnapshotError(self, doc, fragment):
        self.stderr.seek(0)
        self.stderr.truncate()
        code = self.run_main('market', 'allocate', self.write(doc))
        err = self.stderr.getvalue()
        self.assertEqual(1, code, err)
        self.assertEqual(1, err.count('\n'), err)
        self.assertTrue(err.startswith('opie-sched: error: '), err)
        self.assertIn(fragment, err)

    def test_main_runs_the_command(self):
        self.assertEqual(0, self.run_main('market', 'allocate',
                                          self.write(MERKAT), '--format',
                                          'json'))
        # --format is the long form of -f
        self.assertEqual(5, len(json.loads(self.stdout.getvalue())['vms']))

    def test_bad_snapshots_name_the_field(self):
        def merkat(**changes):
            doc = json.loads(json.dumps(MERKAT))
            for path, value in changes.items():
                where, key = path.rsplit('__', 1)
                target = doc
                for part in where.split('__'):
                    target = target[int(part) if part.isdigit() else part]
                target[key] = value
            return doc

        self.assertSnapshotError(merkat(hosts__1__capacity__vcpus=-1),
                                 'hosts[1].capacity.vcpus: -1 is less than '
                                 'or equal to the minimum of 0')
        self.assertSnapshotError(merkat(hosts__0__capacity__vcpu=1),
                                 'hosts[0].capacity: Additional properties')
        self.assertSnapshotError(merkat(vms__2__bid=-1),
                                 'vms[2].bid: must not be negative')
        self.assertSnapshotError(merkat(vms__2__bid='NaN'),
                                 'vms[2].bid: not a number')
        self.assertSnapshotError(merkat(vms__0__bid=True),
                                 'vms[0].bid: True is not of type')
        self.assertSnapshotError(merkat(vms__1__bid={'vcpus': 'x'}),
                                 'vms[1].bid.vcpus: not a number')
        self.assertSnapshotError(merkat(vms__1__host='node-9'),
                                 'vms[1].host: unknown host')
        self.assertSnapshotError(merkat(vms__1__uuid='small-1'),
                                 'vms[1].uuid: duplicate VM')
        self.assertSnapshotError(merkat(hosts__2__name='node-1'),
                                 'hosts[2].name: duplicate host')
        self.assertSnapshotError(merkat(vms__4__pool='gold'),
                                 "vms[4].pool: no host in pool 'gold'")
        self.assertSnapshotError(merkat(vms__4__pool='gold',
                                        vms__4__host='node-2'),
                                 "vms[4].pool: 'gold', but host 'node-2' "
                                 "is in pool 'default'")
        self.assertSnapshotError(
            merkat(hosts__1__capacity={'memory_mb': 5}),
            'hosts[1].capacity: has memory_mb, hosts[0] has vcpus')
        self.assertSnapshotError(
            merkat(vms__0__request={'memory_mb': 5}),
            'vms[0].request.memory_mb: no host has resource')
        self.assertSnapshotError(dict(MERKAT, max_bid=20),
                                 'vms[3].bid: 30 is above the largest')
        no_bid = merkat(vms__0__metadata={'opie:bid': 'cheap'})
        del no_bid['vms'][0]['bid']
        self.assertSnapshotError(no_bid,
                                 'vms[0]: server metadata opie:bid: not a '
                                 'number')
        del no_bid['vms'][0]['metadata']
        self.assertSnapshotError(no_bid, 'vms[0]: no bid')
        self.assertSnapshotError({'hosts': []}, "'vms' is a required")
        self.assertSnapshotError('{"hosts": [', 'not valid JSON')
        self.assertSnapshotError('{"hosts": NaN, "vms": []}',
                                 'NaN is not a number')
        code = self.run_main('market', 'allocate',
                             os.path.join(self.tmp, 'missing.json'))
        self.assertEqual(1, code)
        self.assertIn('cannot read', self.stderr.getvalue())


class MarketDemoTextTest(testtools.TestCase):
    """The market demo's story of a period, as the table shows it."""

    def test_period_and_ledger(self):
        from opie_sched.demo import market as demo
        record = {
            'period': 2, 'period_start_iso': '2026-01-01T10:00:00Z',
            'period_seconds': 600, 'booted': ['alpha-3'],
            'boot_failures': [],
            'prices': {'default': {'vcpus': 0.2, 'memory_mb': 0.0}},
            'market': {'default': {
                'capacity': {'vcpus': 16, 'memory_mb': 32000},
                'bids': {'vcpus': 3.78, 'memory_mb': 0.72},
                'demand': {'vcpus': 18, 'memory_mb': 9000},
                'contended': {'vcpus': True, 'memory_mb': False}}},
            'total_bids': {'default': 4.5},
            'servers': [{'server': 'gamma-1', 'project': 'gamma',
                         'flavor': 'cpu2', 'host': 'host1', 'bid': 0.2,
                         'bid_source': 'metadata', 'vcpus': 2,
                         'shares': {'vcpus': 0.931034},
                         'charge_per_hour': 0.18, 'charged': 0.03,
                         'outcome': 'preempted'}],
            'notices': [], 'owner_actions': [], 'cancelled': [],
            'preempted': [{'server': 'gamma-1', 'project': 'gamma',
                           'at': 36060, 'kind': 'out_of_bid'}],
            'errors': [],
            'accounts': {'gamma': {'start': 5.0, 'charged': 0.03,
                                   'refilled': 0.0, 'balance': 4.97}}}
        lines = demo.format_demo_period(record, 3).splitlines()
        self.assertEqual('== period 2/3: 2026-01-01T10:00:00Z, 600 s ==',
                         lines[1])
        self.assertEqual('demand: +alpha-3', lines[2])
        self.assertIn('0.2 per vCPU-hour (contended: 18 vCPU demanded of '
                      '16, bids 3.78/h)', lines[3])
        self.assertEqual(['SERVER', 'PROJECT', 'FLAVOR', 'HOST', 'BID/H',
                          'SOURCE', 'VCPU', 'SHARE', 'PAYS/H', 'CHARGED',
                          'OUTCOME'], lines[4].split())
        self.assertEqual(['gamma-1', 'gamma', 'cpu2', 'host1', '0.2',
                          'metadata', '0.931/2', '0.18', '0.03',
                          'preempted'], lines[5].split())
        self.assertEqual('preempted gamma-1 (gamma) at 10:01:00Z, deleted '
                         '(out of bid)', lines[6])
        self.assertEqual(['gamma', '5', '0.03', '0', '4.97'],
                         lines[8].split())
        ledger = demo.format_demo_ledger({'project': 'gamma', 'entries': [
            {'time_iso': '2026-01-01T10:00:00Z', 'kind': 'charge',
             'server': 'gamma-1', 'amount': -0.03, 'balance': 4.97,
             'note': 'share cost'}]}).splitlines()
        self.assertEqual('ledger of project gamma:', ledger[1])
        self.assertEqual(['2026-01-01T10:00:00Z', 'charge', 'gamma-1',
                          '-0.03', '4.97', 'share', 'cost'],
                         ledger[3].split())


# -- the scheduler's weigher applies the same rule ---------------------------

class WeigherRuleTest(testtools.TestCase):
    """ProportionalShareWeigher: a host where the request would be out of
    bid (:func:`outbid.assess`) weighs 0; idle capacity penalises nobody.
    """

    def test_request_out_of_bid(self):
        from opie_sched.scheduler import bids
        capacity = {CPU: D(96), RAM: D(96000)}
        # the example: bids 1 and 100 for 1 vCPU in 96
        self.assertFalse(bids.request_out_of_bid(
            D(1), 1, 1000, capacity, [(D(100), 1, 1000)]))
        full = [(D(100), 48, 48000), (D(100), 48, 48000)]
        self.assertTrue(bids.request_out_of_bid(
            D(1), 1, 1000, capacity, full))
        self.assertFalse(bids.request_out_of_bid(
            D(1000), 1, 1000, capacity, full))

    def test_weights(self):
        from opie_sched.scheduler.weights import proportional_share
        from tests.unit.scheduler import test_scheduler_plugins as plugins

        class Case(plugins._PluginTest):
            def runTest(self):
                pass

        case = Case()
        case.setUp()
        self.addCleanup(case.doCleanups)

        def spot(uuid, host, bid):
            inst = plugins.instance(uuid, host, plugins.MEDIUM, True)
            inst.metadata = {'opie:bid': bid}
            return inst
        hosts = case.use_hosts(
            plugins.host_state('h-fits', [spot('a%d' % i, 'h-fits', '1')
                                          for i in range(3)]),
            plugins.host_state('h-rich', [spot('b%d' % i, 'h-rich', '1')
                                          for i in range(4)]),
            plugins.host_state('h-poor', [spot('c%d' % i, 'h-poor', '0.01')
                                          for i in range(4)]))
        spec = plugins.request(plugins.MEDIUM, True)
        spec.scheduler_hints = {'opie_bid': ['0.1']}
        got = dict(case.weigh([proportional_share.ProportionalShareWeigher],
                              hosts, spec))
        # 8 of 8 vCPU asked: it fits, worst fit by the sum of bids
        self.assertAlmostEqual(0.1 / 3.1, got['h-fits'], places=6)
        # 10 of 8 asked against bids of 1: out of bid there
        self.assertEqual(0.0, got['h-rich'])
        # 10 of 8 asked, but it outbids the others
        self.assertAlmostEqual(0.1 / 0.14, got['h-poor'], places=6)
