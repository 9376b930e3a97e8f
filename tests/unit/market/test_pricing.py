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
"""Tests of the proportional-share prices (opie_sched.market.pricing).

Expected values are computed here from the papers' formulas: Merkat eq. 1
``p = sum(b) / C``, ``a_i = b_i / p``; Merkat §3.1 allocation error
``e = (a_host - a_cluster) / a_host``; Themis §III.B worst-fit decreasing.
"""

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from opie_sched.market import pricing

from tests.unit.market.helpers import BID
from tests.unit.market.helpers import CAPACITY
from tests.unit.market.helpers import close
from tests.unit.market.helpers import CPU
from tests.unit.market.helpers import D
from tests.unit.market.helpers import RAM


POSITIVE_BID = st.integers(1, 1000).map(lambda n: D(n) / 10)


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
