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
"""Tests of who is out of bid (opie_sched.market.outbid), with the
market-clearing properties and the worked example's charges."""

import dataclasses
import decimal

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from opie_sched.market import budget
from opie_sched.market import outbid
from opie_sched.market import pricing

from tests.unit.market.helpers import BID
from tests.unit.market.helpers import CAPACITY
from tests.unit.market.helpers import close
from tests.unit.market.helpers import CPU
from tests.unit.market.helpers import D
from tests.unit.market.helpers import HOUR
from tests.unit.market.helpers import RAM
from tests.unit.market.helpers import server
from tests.unit.market.helpers import T0


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
