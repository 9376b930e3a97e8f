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
"""Tests of the tabu-search rebalancing (opie_sched.market.rebalance) and
its repacker strategy (opie_sched.services.repacker.tabu).
"""

from decimal import Decimal

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from opie_sched.market import pricing
from opie_sched.market import rebalance
from opie_sched.rpm import planner
from opie_sched.services.repacker import tabu

D = Decimal
CPU = pricing.VCPUS
RAM = pricing.MEMORY_MB


def merkat_hosts():
    return [pricing.Host('n%d' % i, {CPU: 100}) for i in (1, 2, 3)]


def used(result, vms, host):
    return sum(vm.request.get(CPU, 0) for vm in vms
               if result.placement[vm.uuid] == host)


class RebalanceTest(testtools.TestCase):

    def test_merkat_example_from_a_bad_placement(self):
        # Merkat §3.1: 3 nodes x 100 CPU; bids 12, 12, 12, 30, 30. Both
        # large VMs start on n1 (50 each of the 93.75 the pool entitles
        # them to), the small ones on n2: one large VM moves to n3.
        vms = [pricing.VM('l1', {CPU: 30}, 'n1'),
               pricing.VM('l2', {CPU: 30}, 'n1'),
               pricing.VM('s1', {CPU: 12}, 'n2'),
               pricing.VM('s2', {CPU: 12}, 'n2'),
               pricing.VM('s3', {CPU: 12}, 'n2')]
        result = rebalance.rebalance(merkat_hosts(), vms, seed=1)
        self.assertLess(result.error_after, result.error_before)
        self.assertEqual(-0.875, result.worst_before)   # (50 - 93.75) / 50
        self.assertEqual(1, len(result.migrations))
        [move] = result.migrations
        self.assertIn(move.vm, ('l1', 'l2'))
        self.assertEqual(('n1', 'n3'), (move.source, move.destination))
        # the paper's placement: each large VM has a node to itself,
        # 100 CPU for the 93.75 it is entitled to: e = 0.0625
        for uuid in ('l1', 'l2'):
            self.assertEqual(D('0.0625'), result.errors[uuid])

    def test_stops_after_the_non_improving_limit(self):
        # 4 equal uncapped VMs on 3 x 10: the start (2 + 1 + 1) is already
        # the best; every move is a sideways one -> 100 idle iterations.
        hosts = [pricing.Host('h%d' % i, {CPU: 10}) for i in (1, 2, 3)]
        vms = [pricing.VM('a', {CPU: 1}, 'h1'),
               pricing.VM('b', {CPU: 1}, 'h1'),
               pricing.VM('c', {CPU: 1}, 'h2'),
               pricing.VM('d', {CPU: 1}, 'h3')]
        result = rebalance.rebalance(hosts, vms)
        self.assertEqual(('non_improving', 100),
                         (result.stopped, result.iterations))
        self.assertEqual(rebalance.NON_IMPROVING_LIMIT, 100)
        self.assertEqual([], result.migrations)
        self.assertEqual(result.error_before, result.error_after)
        short = rebalance.rebalance(hosts, vms, non_improving=7)
        self.assertEqual(('non_improving', 7),
                         (short.stopped, short.iterations))

    def test_capacity_is_respected(self):
        # h2 has room for one 4-vCPU request only
        hosts = [pricing.Host('h1', {CPU: 8}), pricing.Host('h2', {CPU: 8})]
        vms = [pricing.VM(u, {CPU: b}, 'h1', {CPU: 4})
               for u, b in (('a', 1), ('b', 2))]
        vms.append(pricing.VM('big', {CPU: 9}, 'h2', {CPU: 4}))
        vms.append(pricing.VM('c', {CPU: 3}, 'h1', {CPU: 4}))
        result = rebalance.rebalance(hosts, vms, seed=3)
        for host in ('h1', 'h2'):
            self.assertLessEqual(used(result, vms, host), 8)
        self.assertLessEqual(result.error_after, result.error_before)

    def test_migration_budget_and_determinism(self):
        vms = [pricing.VM('l%d' % i, {CPU: 30}, 'n1') for i in (1, 2, 3)]
        none = rebalance.rebalance(merkat_hosts(), vms, max_migrations=0)
        self.assertEqual([], none.migrations)
        self.assertEqual(none.error_before, none.error_after)
        one = rebalance.rebalance(merkat_hosts(), vms, max_migrations=1,
                                  seed='x')
        self.assertEqual(1, len(one.migrations))
        two = rebalance.rebalance(merkat_hosts(), vms, seed='x')
        self.assertEqual(2, len(two.migrations))
        self.assertEqual(0.0, two.error_after)
        self.assertEqual(two, rebalance.rebalance(merkat_hosts(), vms,
                                                  seed='x'))

    def test_pools_are_kept(self):
        hosts = [pricing.Host('a1', {CPU: 10}, 'gold'),
                 pricing.Host('b1', {CPU: 10}, 'silver')]
        vms = [pricing.VM('x', {CPU: 1}, 'a1'), pricing.VM('y', {CPU: 1},
                                                           'a1')]
        result = rebalance.rebalance(hosts, vms)
        self.assertEqual([], result.migrations)

    def test_bad_input(self):
        hosts = merkat_hosts()
        self.assertRaises(rebalance.RebalanceError, rebalance.rebalance,
                          hosts, [pricing.VM('v', {CPU: 1})])
        self.assertRaises(rebalance.RebalanceError, rebalance.rebalance,
                          hosts, [pricing.VM('v', {CPU: 1}, 'nowhere')])
        self.assertRaises(rebalance.RebalanceError, rebalance.rebalance,
                          hosts, [], non_improving=0)
        self.assertRaises(rebalance.RebalanceError, rebalance.rebalance,
                          hosts, [], max_migrations=-1)

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.tuples(st.integers(1, 50), st.integers(1, 4),
                              st.integers(0, 2)), min_size=1, max_size=9),
           st.integers(0, 1000))
    def test_error_never_increases_and_fits(self, rows, seed):
        hosts = [pricing.Host('h%d' % i, {CPU: 8}) for i in range(3)]
        vms, load = [], {h.name: 0 for h in hosts}
        for n, (bid, size, host) in enumerate(rows):
            name = 'h%d' % host
            if load[name] + size > 8:
                continue
            load[name] += size
            vms.append(pricing.VM('v%d' % n, {CPU: bid}, name,
                                  {CPU: size}))
        result = rebalance.rebalance(hosts, vms, seed=seed,
                                     non_improving=20)
        self.assertLessEqual(result.error_after, result.error_before)
        for h in hosts:
            self.assertLessEqual(used(result, vms, h.name), 8)
        moved = {m.vm for m in result.migrations}
        for vm in vms:
            self.assertEqual(vm.uuid in moved,
                             result.placement[vm.uuid] != vm.host)


class TabuStrategyTest(testtools.TestCase):
    """The repacker adapter: collector data + bids -> planner Moves."""

    def hosts(self):
        # CPU overcommitted 2:1 (the limit Nova enforces is 200 vCPU of
        # 100): l1 and l2 ask 70 each on n1, which has 100 to share.
        def inst(uuid, vcpus, preemptible=True, movable=True):
            return planner.Instance(uuid, uuid, vcpus, 1000,
                                    preemptible=preemptible,
                                    movable=movable)

        def host(name, instances, **kw):
            return planner.Host(name, 100, 100000, tuple(instances),
                                cpu_limit=200, **kw)
        return [
            host('n1', (inst('l1', 70), inst('l2', 70),
                        inst('web', 10, False))),
            host('n2', (inst('s1', 60), inst('pinned', 30, movable=False))),
            host('n3', ()),
            host('off', (), accepts=False)]

    def test_plan_moves_an_under_served_server(self):
        bids = {'l1': D(30), 'l2': D(30), 's1': D(12)}
        strategy = tabu.TabuRebalanceStrategy(bids=bids, seed=1)
        plan = strategy.plan(self.hosts())
        self.assertIsInstance(plan, planner.Plan)
        [move] = plan.moves
        self.assertIsInstance(move, planner.Move)
        self.assertIn(move.server, ('l1', 'l2'))
        self.assertEqual(('n1', 'n3'), (move.source, move.destination))
        self.assertTrue(move.preemptible)
        # n1's 100 vCPU less the 10 of 'web' (a normal server, outside
        # the market): l1 and l2 share 90, 45 each of the 70 they ask
        self.assertAlmostEqual((45 - 70) / 45.0,
                               float(strategy.last_result.worst_before))
        self.assertEqual(0.0, strategy.last_result.error_after)
        self.assertEqual(tabu.REASON, move.reason)
        self.assertGreater(move.data_transfer_mb, 0)
        self.assertLess(strategy.last_result.error_after,
                        strategy.last_result.error_before)

    def test_budget_unmovable_and_unknown_bids(self):
        hosts = self.hosts()
        # no bids known: nothing to rebalance
        self.assertEqual([], tabu.TabuRebalanceStrategy(
            bids={}).plan(hosts).moves)
        # a budget of 0 migrations
        plan = tabu.TabuRebalanceStrategy(
            bids={'l1': 30, 'l2': 30}, max_migrations=0).plan(hosts)
        self.assertEqual(([], 0), (plan.moves, plan.budget_left))
        # a bid source that fails: no plan, a clear error

        def broken():
            raise RuntimeError('market API down')
        self.assertRaisesRegex(
            tabu.StrategyError, 'market API down',
            tabu.TabuRebalanceStrategy(bids=broken).plan, hosts)
