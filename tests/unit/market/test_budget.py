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
"""Tests of the projects' budgets and charges (opie_sched.market.budget)."""

import testtools

from opie_sched.market import budget
from opie_sched.market import outbid
from opie_sched.market import pricing
from tests.unit.market.helpers import CPU
from tests.unit.market.helpers import D
from tests.unit.market.helpers import HOUR
from tests.unit.market.helpers import RAM
from tests.unit.market.helpers import server
from tests.unit.market.helpers import T0


PRICES = {CPU: D('0.32'), RAM: D('0.00001')}     # per vCPU-h, per MB-h


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


class ShippedOutOfCreditPoliciesTest(testtools.TestCase):
    """Each shipped policy's order (their effect on notices:
    tests/unit/market/test_budget.py, test_out_of_credit_*).
    """

    servers = [outbid.Server('cheap', D('0.1'), {CPU: 1}, 'p1', 5),
               outbid.Server('big', D('9'), {CPU: 8}, 'p1', 9),
               outbid.Server('old', D('0.1'), {CPU: 2}, 'p1', 1)]
    prices = {pricing.DEFAULT_POOL: {CPU: D(1)}}

    def test_installed(self):
        self.assertEqual(['lowest_bid', 'most_expensive'],
                         budget.policy_names())

    def test_lowest_bid_first_then_oldest(self):
        policy = budget.load_policy('lowest_bid')
        self.assertIsInstance(policy, budget.LowestBidFirst)
        self.assertEqual(['old', 'cheap', 'big'], [
            s.uuid for s in policy.order(self.servers, self.prices, HOUR)])

    def test_most_expensive_first(self):
        policy = budget.load_policy('most_expensive')
        self.assertIsInstance(policy, budget.MostExpensiveFirst)
        self.assertEqual(['big', 'old', 'cheap'], [
            s.uuid for s in policy.order(self.servers, self.prices, HOUR)])
