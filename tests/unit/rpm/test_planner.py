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
"""Tests of RPM's repacking planner (opie_sched.rpm.planner): triggers,
underload and overload moves, budgets, scores, bad input and the local
discovery of hosts."""

import fixtures
from oslo_config import cfg
import testtools

from opie_sched.rpm import model as rpm
from opie_sched.rpm import planner as pl
from opie_sched.services.repacker import collector as col
from opie_sched.services.repacker import executor as ex

from tests.unit.services.repacker.helpers import FakeConn
from tests.unit.services.repacker.helpers import host
from tests.unit.services.repacker.helpers import inst
from tests.unit.services.repacker.helpers import moves


class TriggerTest(testtools.TestCase):
    """Paper IV §5.3 thresholds and window through the planner."""

    def trigger(self, cpu, mem):
        h = pl.Host('h', 8, 16000, (), tuple(cpu), tuple(mem))
        return pl.host_triggers([h], pl.Policy()).get('h')

    def test_defaults_are_the_thesis(self):
        p = pl.Policy()
        self.assertEqual((0.9, 0.3, 10, 0.75),
                         (p.overload, p.underload, p.window, p.target))

    def test_overload_needs_ten_consecutive_samples_above_90(self):
        self.assertEqual(rpm.Event.OVERLOAD,
                         self.trigger([0.95] * 10, [0.5] * 10))
        self.assertIsNone(self.trigger([0.95] * 9, [0.5] * 9))
        # One sample at exactly 90 % inside the window breaks the run.
        self.assertIsNone(self.trigger([0.95] * 5 + [0.9] + [0.95] * 4,
                                       [0.5] * 10))
        # Older samples do not matter: only the last 10.
        self.assertEqual(rpm.Event.OVERLOAD,
                         self.trigger([0.1] + [0.95] * 10, [0.5] * 11))

    def test_overload_on_memory_or_cpu_sample_by_sample(self):
        cpu = [0.95, 0.5] * 5
        mem = [0.5, 0.95] * 5
        self.assertEqual(rpm.Event.OVERLOAD, self.trigger(cpu, mem))

    def test_underload_needs_both_below_30_for_ten_samples(self):
        self.assertEqual(rpm.Event.UNDERLOAD,
                         self.trigger([0.1] * 10, [0.29] * 10))
        self.assertIsNone(self.trigger([0.1] * 10, [0.3] * 10))
        self.assertIsNone(self.trigger([0.1] * 10, [0.1] * 9 + [0.35]))
        self.assertIsNone(self.trigger([0.1] * 9, [0.1] * 9))

    def test_custom_thresholds(self):
        h = pl.Host('h', 8, 16000, (), (0.85,) * 3, (0.1,) * 3)
        policy = pl.Policy(overload=0.8, underload=0.2, window=3)
        self.assertEqual({'h': rpm.Event.OVERLOAD},
                         pl.host_triggers([h], policy))

    def test_short_history_plans_nothing(self):
        result = pl.plan([host('h1', [inst('a')], samples=9),
                          host('h2', [inst('b', 'large')], samples=9)])
        self.assertEqual(([], {}), (result.moves, result.triggers))


class UnderloadTest(testtools.TestCase):

    def test_drains_preemptible_first_to_the_best_scored_host(self):
        # host1 12.5 %, host2 25 % (normal + preemptible) both underloaded;
        # host3 50 %. E (target 75 %) prefers host3 for every move.
        hosts = [host('host1', [inst('p1', preemptible=True)]),
                 host('host2', [inst('n2'), inst('p2', preemptible=True)]),
                 host('host3', [inst('n3', 'large')])]
        result = pl.plan(hosts)
        self.assertEqual([('p1', 'host1', 'host3', 'underload'),
                          ('p2', 'host2', 'host3', 'underload'),
                          ('n2', 'host2', 'host3', 'underload')],
                         moves(result))
        self.assertEqual({'host1': 'underload', 'host2': 'underload'},
                         result.triggers)
        self.assertEqual(2, result.budget_left)
        for m in result.moves:
            self.assertGreaterEqual(m.score, 0.0)
            self.assertLessEqual(m.score, 1.0)

    def test_preemptible_first_even_when_smaller(self):
        order = pl.drain_order([inst('n', 'large'), inst('p', 'small', True),
                                inst('q', 'medium', True)])
        self.assertEqual(['q', 'p', 'n'], [i.id for i in order])

    def test_emptiest_host_drained_first(self):
        hosts = [host('a', [inst('a1'), inst('a2')]),
                 host('b', [inst('b1')]),
                 host('c', [inst('c1', 'large')])]
        result = pl.plan(hosts)
        self.assertEqual(['b1', 'a1', 'a2'],
                         [m.server for m in result.moves])
        # 'a' does not receive b1 (E prefers c), so 'a' is drained too.
        self.assertEqual({'c'}, {m.destination for m in result.moves})

    def test_host_receiving_instances_is_not_drained(self):
        # b (25 %) is the only non-empty destination for a's instance,
        # so b keeps its instances this period.
        hosts = [host('a', [inst('a1')]), host('b', [inst('b1', 'medium')])]
        result = pl.plan(hosts)
        self.assertEqual([('a1', 'a', 'b', 'underload')], moves(result))
        self.assertEqual('received instances in this plan',
                         result.skipped['b'])

    def test_empty_host_is_no_consolidation_target(self):
        result = pl.plan([host('a', [inst('a1')]), host('empty')])
        self.assertEqual([], result.moves)
        self.assertIn('fits on no other host', result.skipped['a'])

    def test_all_or_nothing(self):
        # c has room for one small only (alpha 0.9): a cannot be emptied.
        full = [inst('c%d' % i, 'medium') for i in range(3)] + [inst('c9')]
        hosts = [host('a', [inst('a1'), inst('a2')]),
                 host('c', full, samples=0)]
        result = pl.plan(hosts)
        self.assertEqual([], result.moves)
        self.assertEqual('instance a1 fits on no other host',
                         result.skipped['a'])

    def test_unmovable_instance_keeps_host(self):
        hosts = [host('a', [inst('a1', movable=False)]),
                 host('c', [inst('c1', 'large')])]
        result = pl.plan(hosts)
        self.assertEqual([], result.moves)
        self.assertIn('cannot move', result.skipped['a'])

    def test_disabled_host_receives_nothing(self):
        hosts = [host('a', [inst('a1')]),
                 host('c', [inst('c1', 'large')], accepts=False),
                 host('d', [inst('d1', 'medium'), inst('d2', 'medium')])]
        self.assertEqual([('a1', 'a', 'd', 'underload')],
                         moves(pl.plan(hosts)))


class OverloadTest(testtools.TestCase):

    def overloaded(self):
        # 'hot' uses 100 % of its CPU: 2 large... 8 vCPU, 16000 MB.
        return host('hot', [inst('h1', 'large'), inst('h2', 'medium'),
                            inst('h3', 'small'), inst('h4', 'small')])

    def test_relieves_to_the_threshold_with_the_best_move(self):
        hosts = [self.overloaded(), host('mid', [inst('m1', 'large')])]
        result = pl.plan(hosts)
        # One small (lowest DT) brings hot to 87.5 % <= 90 %.
        self.assertEqual([('h3', 'hot', 'mid', 'overload')], moves(result))
        self.assertEqual({'hot': 'overload'}, result.triggers)

    def test_overload_before_underload(self):
        hosts = [host('cold', [inst('c1')]), self.overloaded(),
                 host('mid', [inst('m1', 'large')])]
        result = pl.plan(hosts, pl.Policy(max_migrations=1))
        self.assertEqual([('h3', 'hot', 'mid', 'overload')], moves(result))
        self.assertIn('budget', result.skipped['cold'])

    def test_events_are_prioritised(self):
        state = pl._State([host('u1', [inst('a')]), host('o1'),
                           host('u2')])
        events = pl.ordered_events({'u1': rpm.Event.UNDERLOAD,
                                    'o1': rpm.Event.OVERLOAD,
                                    'u2': rpm.Event.UNDERLOAD}, state)
        self.assertEqual([(rpm.Event.OVERLOAD, 'o1'),
                          (rpm.Event.UNDERLOAD, 'u2'),
                          (rpm.Event.UNDERLOAD, 'u1')], events)

    def test_no_destination_reported(self):
        result = pl.plan([self.overloaded()])
        self.assertEqual([], result.moves)
        self.assertEqual('no instance fits on another host',
                         result.skipped['hot'])


class BudgetTest(testtools.TestCase):

    def hosts(self):
        return [host('host1', [inst('p1', preemptible=True)]),
                host('host2', [inst('n2'), inst('p2', preemptible=True)]),
                host('host3', [inst('n3', 'large')])]

    def test_budget_caps_the_plan_preemptible_first(self):
        result = pl.plan(self.hosts(), pl.Policy(max_migrations=2))
        self.assertEqual(['p1', 'p2'], [m.server for m in result.moves])
        self.assertEqual(0, result.budget_left)
        self.assertEqual('migration budget exhausted (1 of 2 moves planned)',
                         result.skipped['host2'])

    def test_zero_budget(self):
        result = pl.plan(self.hosts(), pl.Policy(max_migrations=0))
        self.assertEqual([], result.moves)

    def test_executor_budget_skips_the_rest(self):
        conn = FakeConn({'a': 'h1'})
        plan = [pl.Move('a', 'a', 'h1', 'h2', 'underload', 0.1,
                        rpm.Terms(0, 0, 0, 0, 0), 1.0, False)] * 2
        outcomes = ex.Executor(conn, poll_interval=0).execute(plan, 1)
        self.assertEqual([ex.DONE, ex.SKIPPED],
                         [o.result for o in outcomes])


class ScoreTest(testtools.TestCase):

    def test_same_group_preferred(self):
        hosts = [host('a', [inst('a1')], group='g1', cluster='c1'),
                 host('far', [inst('f1', 'large')], group='g9',
                      cluster='c9'),
                 host('near', [inst('n1', 'large')], group='g1',
                      cluster='c1')]
        result = pl.plan(hosts)
        self.assertEqual('near', result.moves[0].destination)
        self.assertAlmostEqual(1 / 3.0, result.moves[0].terms.distance)

    def test_efficiency_picks_host_closest_to_target(self):
        hosts = [host('a', [inst('a1')]),
                 host('b', [inst('b1', 'medium')], samples=0),
                 host('c', [inst('c1', 'large'), inst('c2', 'small')],
                      samples=0)]
        move = pl.plan(hosts).moves[0]
        # c ends at 75 %: E = 0.
        self.assertEqual('c', move.destination)
        self.assertEqual(0.0, move.terms.efficiency)

    def test_risk_of_varying_host_avoided(self):
        # Allocation ratio 2: a request above Unreq is overbooking (R_o > 0);
        # R_v is 0 on the steady host and 0.8 on the varying one.
        def dest(name, history):
            light = inst(name + '1', 'large', cpu_used=1,
                         memory_used_mb=2000)
            return pl.Host(name, 8, 16000, (light,), history, history,
                           cpu_limit=16, memory_limit_mb=32000)

        varying = dest('a-varying', (0.1, 0.9) * 5)
        steady = dest('b-steady', (0.125,) * 10)
        mover = pl.Instance('m', 'm', 6, 12000, cpu_used=0.5,
                            memory_used_mb=1000)
        state = pl._State([host('src', [mover], samples=0), varying,
                           steady])
        policy = pl.Policy(lambdas=(1.0, 0, 0, 0, 0))
        terms = {d.name: pl.move_terms(state, mover, 'src', d.name, policy,
                                       1.0)[0] for d in (varying, steady)}
        self.assertEqual(0.0, terms['b-steady'].risk)
        # R_o = (6 - 4) / (7 - 4); Risk = R_o * 0.8 over sqrt(9).
        self.assertAlmostEqual(2 / 3.0 * 0.8 / 3, terms['a-varying'].risk)
        best = pl.best_destination(state, mover, 'src', policy, 1.0)
        self.assertEqual('b-steady', best.destination)

    def test_data_transfer_uses_rpm_formula(self):
        cold = inst('c', 'small', live=False)
        live = inst('l', 'small', dirty_rate=10.0)
        policy = pl.Policy()
        self.assertEqual(2000.0, pl.data_transfer(cold, policy))
        self.assertGreater(pl.data_transfer(live, policy), 2000.0)

    def test_format_plan(self):
        hosts = BudgetTest.hosts(self)
        text = pl.format_plan(pl.plan(hosts), hosts)
        self.assertIn('host1', text)
        self.assertIn('underload', text)
        self.assertIn('budget left: 2', text)
        self.assertIn('(no migration)', pl.format_plan(pl.plan([])))


class BadInputTest(testtools.TestCase):

    def test_instance(self):
        for kw in ({'vcpus': 0}, {'memory_mb': -1}, {'vcpus': float('nan')},
                   {'dirty_rate': -1}, {'cpu_used': 'x'}, {'vcpus': True}):
            e = self.assertRaises(pl.PlanError, pl.Instance, 'i', **kw)
            self.assertIn('instance i', str(e))
        self.assertRaises(pl.PlanError, pl.Instance, '')

    def test_host(self):
        self.assertRaises(pl.PlanError, pl.Host, 'h', 0, 16000)
        e = self.assertRaises(pl.PlanError, pl.Host, 'h', 8, 16000, (),
                              (0.1, 0.2), (0.1,))
        self.assertIn('2 CPU samples but 1 memory', str(e))
        self.assertRaises(pl.PlanError, pl.Host, 'h', 8, 16000, (),
                          (-0.1,), (0.1,))
        self.assertRaises(pl.PlanError, pl.Host, 'h', 8, 16000, ('x',))

    def test_policy(self):
        e = self.assertRaises(pl.PlanError, pl.Policy, underload=0.9,
                              overload=0.5)
        self.assertIn('below the overload', str(e))
        e = self.assertRaises(pl.PlanError, pl.Policy,
                              lambdas=(0.5, 0.5, 0.5, 0, 0))
        self.assertIn('add up to 1', str(e))
        self.assertRaises(pl.PlanError, pl.Policy, overload=1.5)
        self.assertRaises(pl.PlanError, pl.Policy, window=0)
        self.assertRaises(pl.PlanError, pl.Policy, max_migrations=-1)
        self.assertRaises(pl.PlanError, pl.Policy, bandwidth=0)
        self.assertRaises(pl.PlanError, pl.Policy,
                          efficiency_formula='nope')

    def test_plan(self):
        e = self.assertRaises(pl.PlanError, pl.plan,
                              [host('a'), host('a')])
        self.assertIn("duplicate host 'a'", str(e))
        e = self.assertRaises(pl.PlanError, pl.plan,
                              [host('a', [inst('x')]),
                               host('b', [inst('x')])])
        self.assertIn('x is on two hosts', str(e))
        self.assertRaises(pl.PlanError, pl.plan, ['a'])
        self.assertRaises(pl.PlanError, pl.plan, [], policy={})

    def test_executor(self):
        self.assertRaises(ValueError, ex.Executor(None).execute, [], -1)
        self.assertRaises(ValueError, ex.block_migration_value, 'maybe')
        self.assertEqual(('auto', True, False),
                         tuple(ex.block_migration_value(v)
                               for v in ('auto', 'True', 'false')))

    def test_history(self):
        self.assertRaises(ValueError, col.History, 0)


class LocalDiscoveryTest(testtools.TestCase):
    """The planner's default view: Paper IV Alg. 1's k neighbours."""

    def cluster(self, groups=4, size=8):
        """One busy underloaded host per group plus half-full hosts."""
        hosts = []
        for g in range(groups):
            for h in range(size):
                name = 'g%dh%d' % (g, h)
                if h == 0:
                    insts = [inst(name + '-a', 'small')]
                else:
                    insts = [inst('%s-%d' % (name, k), 'medium')
                             for k in range(2)]
                hosts.append(host(name, insts, group='g%d' % g,
                                  cluster='c%d' % (g // 2)))
        return hosts

    def test_default_is_local_with_the_thesis_values(self):
        policy = pl.Policy()
        self.assertEqual('local', policy.discovery)
        self.assertEqual(20, policy.neighbours)
        self.assertEqual((0.6, 0.3, 0.1), policy.locality)

    def test_destinations_are_in_the_sampled_view(self):
        hosts = self.cluster()
        seen = []
        real = rpm.Overlay.sample

        def spy(overlay, rng, source):
            got = real(overlay, rng, source)
            seen.append((source, set(got)))
            return got

        self.useFixture(fixtures.MockPatchObject(rpm.Overlay, 'sample',
                                                 spy))
        result = pl.plan(hosts, pl.Policy(neighbours=3, max_ttl=1, seed=4,
                                          max_migrations=50))
        self.assertTrue(result.moves)
        for move in result.moves:
            views = set().union(*(v for s, v in seen if s == move.source))
            self.assertIn(move.destination, views)
        # 2 rounds (MaxTTL 1) of 3 neighbours per drained instance.
        self.assertTrue(all(len(v) == 3 for _, v in seen))

    def test_same_seed_same_plan_global_differs(self):
        hosts = self.cluster()
        a = pl.plan(hosts, pl.Policy(neighbours=3, seed=11))
        b = pl.plan(hosts, pl.Policy(neighbours=3, seed=11))
        self.assertEqual(moves(a), moves(b))
        glob = pl.plan(hosts, pl.Policy(discovery='global'))
        big_k = pl.plan(hosts, pl.Policy(neighbours=len(hosts), seed=1))
        self.assertEqual(moves(glob), moves(big_k))

    def test_local_view_prefers_the_own_group(self):
        hosts = self.cluster(groups=8)
        result = pl.plan(hosts, pl.Policy(neighbours=5, seed=3,
                                          max_migrations=50))
        by_name = {h.name: h for h in hosts}
        dists = [rpm.distance(by_name[m.source].location,
                              by_name[m.destination].location)
                 for m in result.moves]
        self.assertTrue(dists)
        self.assertGreater(dists.count(1), len(dists) / 2.0)

    def test_bad_discovery_policy(self):
        for kw in ({'discovery': 'both'}, {'neighbours': 0},
                   {'max_ttl': -1}, {'locality': (0.5, 0.6, 0.1)},
                   {'seed': 1.5}):
            self.assertRaises(pl.PlanError, pl.Policy, **kw)


class DiscoveryOptionsTest(testtools.TestCase):

    def test_discovery_policy_from_opie_rpm(self):
        from opie_sched.conf import rpm as rpm_opts
        conf = cfg.ConfigOpts()
        rpm_opts.register_opts(conf)
        conf([])
        self.assertEqual({'discovery': 'local', 'neighbours': 20,
                          'max_ttl': rpm.MAX_TTL, 'seed': None},
                         rpm_opts.discovery_policy(conf))
        conf.set_override('discovery', 'global', 'opie_rpm')
        conf.set_override('discovery_seed', 5, 'opie_rpm')
        policy = pl.Policy(**rpm_opts.discovery_policy(conf))
        self.assertEqual(('global', 5), (policy.discovery, policy.seed))
