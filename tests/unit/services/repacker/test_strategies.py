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
"""The strategies of opie-repacker: rpm, p2p (thesis Paper II), gossip
(thesis Paper III), their stevedore loading and the service running them
with the collector and the cloud faked.

Run with ``stestr run tests.unit.services.repacker.test_strategies``.
"""

import fixtures
import hypothesis
from hypothesis import strategies as st
from stevedore import extension
import testtools

from opie_sched.consolidation import overlay
from opie_sched.rpm import planner as pl
from opie_sched.services.repacker import executor as ex
from opie_sched.services.repacker import service as svc
from opie_sched.services.repacker import strategies
from tests import entry_points
from tests.unit.rpm import test_planner as planner_tests
from tests.unit.services.repacker import helpers as base

SETTINGS = hypothesis.settings(max_examples=25, deadline=None,
                               derandomize=True)


def conf(tmp='/nonexistent', **overrides):
    return base.make_conf(tmp, **overrides)


def _host(name, loads, accepts=True, prefix=None):
    """A host of 8 vCPU / 16000 MB with one instance per (vcpus, MB)."""
    insts = tuple(pl.Instance('%s-%d' % (prefix or name, i),
                              vcpus=c, memory_mb=m)
                  for i, (c, m) in enumerate(loads))
    cpu = sum(i.cpu for i in insts) / 8.0
    mem = sum(i.memory for i in insts) / 16000.0
    return pl.Host(name, 8, 16000, insts, (cpu,) * 10, (mem,) * 10,
                   accepts=accepts)


def replay(hosts, plan, alpha=0.9):
    """Apply the plan's moves in order and check every one fits when it
    runs (requests within the host, used <= α); the final placement.
    """
    where = {i.id: h.name for h in hosts for i in h.instances}
    insts = {i.id: i for h in hosts for i in h.instances}
    caps = {h.name: h for h in hosts}
    for move in plan.moves:
        assert where[move.server] == move.source, move
        where[move.server] = move.destination
        dest = caps[move.destination]
        assert dest.accepts, move
        on = [insts[s] for s, h in where.items() if h == move.destination]
        assert sum(i.vcpus for i in on) <= dest.cpu_allowed + 1e-9, move
        assert sum(i.memory_mb for i in on) <= dest.memory_allowed + 1e-9
        assert sum(i.cpu for i in on) / dest.vcpus <= alpha + 1e-9, move
        assert sum(i.memory for i in on) / dest.memory_mb <= alpha + 1e-9
    return where


host_loads = st.lists(
    st.lists(st.tuples(st.integers(1, 3), st.integers(500, 4000)),
             min_size=0, max_size=3),
    min_size=2, max_size=9)


class LoadTest(testtools.TestCase):

    def test_entry_points_registered(self):
        names = extension.ExtensionManager(strategies.NAMESPACE).names()
        self.assertTrue({'rpm', 'p2p', 'gossip'} <= set(names), names)

    def test_default_is_rpm(self):
        self.assertIsInstance(strategies.load(conf()),
                              strategies.RPMStrategy)

    def test_load_by_option(self):
        self.assertIsInstance(strategies.load(conf(strategy='p2p')),
                              strategies.P2PStrategy)
        self.assertIsInstance(strategies.load(conf(strategy='gossip')),
                              strategies.GossipStrategy)

    def test_unknown_strategy_is_refused_by_the_option(self):
        # [opie_repacker] strategy is an entry-point option: a name that
        # is no installed strategy never reaches the loader
        exc = self.assertRaises(ValueError, conf, strategy='nope')
        self.assertIn("unknown repacker strategy 'nope'", str(exc))

    def test_unknown_strategy(self):
        exc = self.assertRaises(strategies.StrategyError, strategies.load,
                                conf(), 'nope')
        self.assertIn('nope', str(exc))
        self.assertIn('gossip', str(exc))
        # a PlanError: the service reports a failed period, no crash
        self.assertIsInstance(exc, pl.PlanError)

    def test_rpm_is_the_planner(self):
        hosts = planner_tests.BudgetTest.hosts(self)
        self.assertEqual(pl.plan(hosts, pl.Policy()).as_dict(),
                         strategies.load(conf()).plan(hosts).as_dict())


class P2PTest(testtools.TestCase):

    def test_light_host_moves_to_a_more_loaded_neighbour(self):
        hosts = [_host('a', [(1, 2000)]),                 # 12.5 %
                 _host('b', [(4, 8000), (1, 2000)])]      # 62.5 %
        plan = strategies.load(conf(strategy='p2p')).plan(hosts)
        self.assertEqual([('a-0', 'a', 'b', pl.UNDERLOAD)],
                         base.moves(plan))
        self.assertEqual({'a': pl.UNDERLOAD}, plan.triggers)
        self.assertEqual(4, plan.budget_left)
        self.assertGreater(plan.moves[0].data_transfer_mb, 0)
        self.assertIn('a-0', pl.format_plan(plan, hosts))

    def test_above_threshold_nothing_moves(self):
        hosts = [_host('a', [(4, 8000)]), _host('b', [(4, 8000)])]
        plan = strategies.load(conf(strategy='p2p')).plan(hosts)
        self.assertEqual([], plan.moves)

    def test_disabled_host_receives_nothing(self):
        hosts = [_host('a', [(1, 2000)]),
                 _host('b', [(4, 8000)], accepts=False)]
        plan = strategies.load(conf(strategy='p2p')).plan(hosts)
        self.assertEqual([], plan.moves)
        self.assertIn('a', plan.skipped)

    def test_bad_input(self):
        strat = strategies.load(conf(strategy='p2p'))
        h = _host('a', [(1, 2000)])
        self.assertRaises(pl.PlanError, strat.plan, [h, h])
        self.assertRaises(pl.PlanError, strat.plan, ['a'])
        self.assertRaises(pl.PlanError, strat.plan, [h], policy='x')

    @hypothesis.given(loads=host_loads, htl=st.integers(0, 3),
                      budget=st.integers(0, 6), seed=st.integers(0, 99))
    @SETTINGS
    def test_properties(self, loads, htl, budget, seed):
        hosts = [_host('h%02d' % i, l) for i, l in enumerate(loads)]
        c = conf(strategy='p2p', p2p_htl=htl, max_migrations=budget,
                 consolidation_seed=seed)
        plan = strategies.load(c).plan(hosts)
        replay(hosts, plan)                        # capacity, order
        self.assertLessEqual(len(plan.moves), budget)
        self.assertEqual(budget - len(plan.moves), plan.budget_left)
        # the walk only follows overlay links: with HTL 1 a destination is
        # an overlay neighbour of its source (hosts sorted by name).
        net = overlay.ScaleFreeOverlay(len(hosts), 1, seed=seed)
        index = {h.name: i for i, h in enumerate(hosts)}
        if htl <= 1:
            for m in plan.moves:
                self.assertTrue(net.are_neighbours(index[m.source],
                                                   index[m.destination]))
        if htl == 0:
            self.assertEqual([], plan.moves)
        again = strategies.load(c).plan(hosts)     # deterministic
        self.assertEqual(plan.as_dict(), again.as_dict())


class GossipStrategyTest(testtools.TestCase):

    def test_two_light_hosts_merge(self):
        hosts = [_host('a', [(1, 2000)]), _host('b', [(2, 4000)]),
                 _host('c', [(4, 8000), (2, 4000)])]
        plan = strategies.load(conf(strategy='gossip')).plan(hosts)
        where = replay(hosts, plan)
        # fewer hosts in use afterwards
        self.assertLess(len(set(where.values())), 3)
        self.assertTrue(plan.moves)

    def test_overloaded_host_offloads(self):
        hosts = [_host('a', [(4, 7600), (4, 7600)]),      # 100 % CPU
                 _host('b', [(1, 1000)])]
        plan = strategies.load(conf(strategy='gossip')).plan(hosts)
        self.assertEqual(pl.OVERLOAD, plan.moves[0].reason)
        self.assertEqual('a', plan.moves[0].source)
        replay(hosts, plan)

    def test_merge_only_option(self):
        hosts = [_host('a', [(1, 2000)]), _host('b', [(2, 4000)])]
        plan = strategies.load(conf(strategy='gossip',
                                    gossip_strategy='merge')).plan(hosts)
        self.assertEqual(1, len(plan.moves))
        self.assertEqual('merge', plan.moves[0].reason)

    @hypothesis.given(loads=host_loads, budget=st.integers(0, 8),
                      k=st.integers(1, 5), seed=st.integers(0, 99),
                      mode=st.sampled_from(['merge', 'merge-imb',
                                            'incremental']),
                      disabled=st.integers(0, 8))
    @SETTINGS
    def test_properties(self, loads, budget, k, seed, mode, disabled):
        hosts = [_host('h%02d' % i, l, accepts=(i != disabled))
                 for i, l in enumerate(loads)]
        c = conf(strategy='gossip', max_migrations=budget,
                 gossip_view_size=k, consolidation_seed=seed,
                 gossip_strategy=mode)
        plan = strategies.load(c).plan(hosts)
        replay(hosts, plan)          # capacity, order, disabled host
        self.assertLessEqual(len(plan.moves), budget)
        self.assertEqual(len({m.server for m in plan.moves}),
                         len(plan.moves))
        again = strategies.load(c).plan(hosts)
        self.assertEqual(plan.as_dict(), again.as_dict())


class ServiceStrategyTest(testtools.TestCase):
    """The service runs the configured strategy under its lock, budget
    and dry-run, with the collector and the cloud faked.
    """

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.hosts = [_host('a', [(1, 2000)]),
                      _host('b', [(4, 8000), (1, 2000)]),
                      _host('c', [(1, 1000)])]

    def service(self, conn, **overrides):
        s = svc.RepackerService(base.make_conf(self.tmp, **overrides),
                                conn=conn,
                                collector=base.FakeCollector(self.hosts))
        s.start()
        self.addCleanup(s.stop)
        return s

    def test_p2p_dry_run_then_live(self):
        conn = base.FakeConn({'a-0': 'a', 'b-0': 'b', 'b-1': 'b',
                              'c-0': 'c'})
        s = self.service(conn, strategy='p2p', poll_interval=0)
        period = s.run_once(dry_run=True)
        self.assertEqual('ok', period.status, period.error)
        self.assertIsInstance(s.strategy, strategies.P2PStrategy)
        self.assertEqual({ex.PLANNED}, {o.result for o in period.outcomes})
        self.assertEqual([], conn.compute.calls)
        planned = [(m.server, m.destination) for m in period.plan.moves]
        self.assertEqual({('a-0', 'b'), ('c-0', 'b')}, set(planned))
        period = s.run_once()
        self.assertEqual([ex.DONE] * 2, [o.result for o in period.outcomes])
        self.assertEqual('b', conn.compute.hosts['a-0'])
        self.assertEqual('b', conn.compute.hosts['c-0'])

    def test_gossip_budget(self):
        conn = base.FakeConn({'a-0': 'a', 'b-0': 'b', 'b-1': 'b',
                              'c-0': 'c'})
        s = self.service(conn, strategy='gossip', max_migrations=1,
                         poll_interval=0)
        period = s.run_once()
        self.assertEqual('ok', period.status, period.error)
        self.assertEqual(1, len(conn.compute.calls))

    def test_broken_strategy_is_an_error_period(self):
        # installed (so the option accepts it) but failing to import
        self.useFixture(entry_points.EntryPoints({strategies.NAMESPACE: {
            'broken': 'opie_sched.nonexistent_module:Strategy'}}))
        s = self.service(base.FakeConn({}), strategy='broken')
        period = s.run_once(dry_run=True)
        self.assertEqual('error', period.status)
        self.assertIn("repacker strategy 'broken'", period.error)
        self.assertIn('failed to load', period.error)


class TabuStrategyLoadTest(testtools.TestCase):
    """The tabu strategy through the repacker's loader, bids given."""

    def test_loaded_by_name_and_plans_with_the_bids(self):
        from opie_sched.conf import repacker as repacker_opts
        from oslo_config import cfg
        conf = cfg.ConfigOpts()
        repacker_opts.register_opts(conf)
        conf([])
        strategy = strategies.load(conf, 'tabu')
        self.assertEqual('tabu', strategy.name)
        strategy._bids = {}
        plan = strategy.plan([])
        self.assertEqual([], list(plan.moves))
