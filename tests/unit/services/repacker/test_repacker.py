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
"""Unit tests of opie-repacker (opie_sched.services.repacker, issue 4).

The planner with the thesis' triggers (Paper IV §5.3: > 90 % in CPU or
memory, < 30 % in both, 10 consecutive samples), priorities (Table 1),
preemptible-first draining, the per-period budget, destination choice by
the RPM score (§4.3.1) and input errors; the collector, executor and
service on fake openstacksdk objects; the console script's options.

Run with ``stestr run tests.unit.services.repacker.test_repacker``.
"""

import io
import os
import threading
import types
from unittest import mock

import fixtures
from oslo_config import cfg
import testtools

from opie_sched.cmd import repacker as cmd
from opie_sched.conf import repacker as opts
from opie_sched.rpm import model as rpm
from opie_sched.rpm import planner as pl
from opie_sched.services.repacker import collector as col
from opie_sched.services.repacker import executor as ex
from opie_sched.services.repacker import service as svc

#: The paper's host (8 vCPU, 16000 MB) and flavors (vCPU, MB).
SIZES = {'small': (1, 2000), 'medium': (2, 4000), 'large': (4, 8000)}


def inst(id, flavor='small', preemptible=False, **kw):
    vcpus, ram = SIZES[flavor]
    return pl.Instance(id, id, vcpus, ram, preemptible, **kw)


def host(name, instances=(), samples=10, cpu=None, mem=None, **kw):
    """A host whose history is ``samples`` copies of its current load
    (or of ``cpu``/``mem`` when given).
    """
    insts = tuple(instances)
    c = sum(i.cpu for i in insts) / 8.0 if cpu is None else cpu
    m = sum(i.memory for i in insts) / 16000.0 if mem is None else mem
    return pl.Host(name, 8, 16000, insts, (c,) * samples, (m,) * samples,
                   **kw)


def moves(plan):
    return [(m.server, m.source, m.destination, m.reason)
            for m in plan.moves]


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


# -- fakes of openstacksdk ----------------------------------------------------

class FakeCompute:
    """Servers ``{id: host}``; migrations land at once unless the
    destination is in ``fail``.
    """

    def __init__(self, servers, fail=()):
        self.hosts = dict(servers)
        self.fail = set(fail)
        self.calls = []

    def live_migrate_server(self, server, host=None, block_migration=None):
        self.calls.append((server, host, block_migration))
        if host == 'boom':
            raise RuntimeError('HTTP 400: no\nmore')
        if host not in self.fail:
            self.hosts[server] = host

    def get_server(self, server):
        return types.SimpleNamespace(status='ACTIVE', task_state=None,
                                     compute_host=self.hosts[server])


class FakeConn:
    def __init__(self, servers, fail=()):
        self.compute = FakeCompute(servers, fail)


def move(server, src, dst):
    return pl.Move(server, server, src, dst, 'underload', 0.1,
                   rpm.Terms(0, 0, 0, 0, 0), 1.0, False)


class ExecutorTest(testtools.TestCase):

    def test_failed_migration_is_logged_and_plan_goes_on(self):
        logs = self.useFixture(fixtures.FakeLogger())
        conn = FakeConn({'a': 'h1', 'b': 'h1', 'c': 'h1'}, fail={'h3'})
        outcomes = ex.Executor(conn, block_migration=True,
                               poll_interval=0).execute(
            [move('a', 'h1', 'h3'), move('b', 'h1', 'boom'),
             move('c', 'h1', 'h2')], 5)
        self.assertEqual([ex.FAILED, ex.FAILED, ex.DONE],
                         [o.result for o in outcomes])
        self.assertIn('ACTIVE on h1', outcomes[0].detail)
        self.assertEqual('RuntimeError: HTTP 400: no', outcomes[1].detail)
        self.assertEqual('h2', conn.compute.hosts['c'])
        self.assertEqual(True, conn.compute.calls[0][2])
        self.assertIn('going on with the plan', logs.output)

    def test_dry_run_migrates_nothing(self):
        conn = FakeConn({'a': 'h1'})
        outcomes = ex.Executor(conn).execute([move('a', 'h1', 'h2')], 5,
                                             dry_run=True)
        self.assertEqual([ex.PLANNED], [o.result for o in outcomes])
        self.assertEqual([], conn.compute.calls)

    def test_timeout(self):
        conn = FakeConn({'a': 'h1'})
        conn.compute.get_server = lambda s: types.SimpleNamespace(
            status='MIGRATING', task_state='migrating', compute_host='h1')
        now = [0.0]

        def sleep(s):
            now[0] += 5

        outcome = ex.Executor(conn, timeout=10, poll_interval=5,
                              clock=lambda: now[0], sleep=sleep).migrate(
            move('a', 'h1', 'h2'))
        self.assertEqual(ex.FAILED, outcome.result)
        self.assertIn('still MIGRATING', outcome.detail)


class CollectorTest(testtools.TestCase):

    def test_topology_from_aggregates(self):
        aggs = [types.SimpleNamespace(hosts=['h1', 'h2'], metadata={
                    col.GROUP_KEY: 'g1', col.CLUSTER_KEY: 'c1'}),
                types.SimpleNamespace(hosts=['h2'], metadata={
                    col.GROUP_KEY: 'g2'}),
                types.SimpleNamespace(hosts=['h3'], metadata={})]
        self.assertEqual({'h1': ('g1', 'c1'), 'h2': (None, 'c1'),
                          'h3': (None, None)},
                         col.location_from_aggregates(aggs))

    def server(self, specs=None, status='ACTIVE', flavor=True):
        return types.SimpleNamespace(
            id='s1', name='s', status=status, task_state=None,
            compute_host='h1',
            flavor={'vcpus': 1, 'ram': 2000, 'extra_specs': specs or {}}
            if flavor else None)

    def test_instance_of(self):
        from opie_sched.common import flavors
        i = col.instance_of(self.server(
            flavors.preemptible_extra_specs(1, 2000, 20)))
        self.assertEqual((1, 2000, True, True),
                         (i.vcpus, i.memory_mb, i.preemptible, i.movable))
        self.assertFalse(col.instance_of(self.server()).preemptible)
        self.assertFalse(col.instance_of(
            self.server(status='SHUTOFF')).movable)
        self.assertRaises(col.CollectError, col.instance_of,
                          self.server(flavor=False))

    def test_sample_builds_hosts(self):
        inv = {'VCPU': {'total': 8, 'reserved': 0, 'allocation_ratio': 2.0},
               'MEMORY_MB': {'total': 16512, 'reserved': 512,
                             'allocation_ratio': 1.0},
               'DISK_GB': {'total': 200}}
        docs = {'/resource_providers': {'resource_providers': [
                    {'uuid': 'u1', 'name': 'node1'},
                    {'uuid': 'u2', 'name': 'sharing-pool'}]},
                '/resource_providers/u1/inventories': {'inventories': inv},
                '/resource_providers/u2/inventories': {'inventories': {}}}

        def get(url):
            return types.SimpleNamespace(status_code=200, text='',
                                         json=lambda: docs[url])

        conn = types.SimpleNamespace(
            placement=types.SimpleNamespace(get=get),
            compute=types.SimpleNamespace(
                aggregates=lambda: [],
                hypervisors=lambda details: [types.SimpleNamespace(
                    name='node1', service_details={'host': 'h1'},
                    status='enabled', state='up')],
                servers=lambda details, all_projects: [self.server()]))
        clock = iter(range(0, 1000, 30))
        history = col.History(10, clock=lambda: next(clock))
        c = col.Collector(conn, history)
        c.sample(interval=60)
        c.sample(interval=60)   # 30 s later: not kept
        [h] = c.sample(interval=60)
        self.assertEqual(('h1', 8, 16000, True, 16, 16000),
                         (h.name, h.vcpus, h.memory_mb, h.accepts,
                          h.cpu_allowed, h.memory_allowed))
        self.assertEqual((0.125, 0.125), h.cpu_history)
        self.assertEqual('s1', h.instances[0].id)

    def test_unreadable_cloud(self):
        def boom(url):
            raise RuntimeError('down')

        def denied(url):
            return types.SimpleNamespace(status_code=403, text='no')

        for get, msg in ((boom, 'resource_providers: down'),
                         (denied, 'HTTP 403 no')):
            conn = types.SimpleNamespace(
                placement=types.SimpleNamespace(get=get))
            e = self.assertRaises(col.CollectError,
                                  col.Collector(conn, col.History(3)).nodes)
            self.assertIn(msg, str(e))

    def test_history_persisted(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'h.json')
        h = col.History(2, path)
        for v in (0.1, 0.2, 0.3):
            h.record('a', v, v)
        h.forget(['a'])
        h.save()
        self.assertEqual(([0.2, 0.3], [0.2, 0.3]),
                         col.History(2, path).samples('a'))
        with open(path, 'w') as f:
            f.write('{bad')
        self.assertEqual(([], []), col.History(2, path).samples('a'))


def make_conf(tmp, **overrides):
    conf = cfg.ConfigOpts()
    opts.register_opts(conf)
    conf([], project='opie_sched')
    conf.set_override('state_dir', tmp, group=opts.GROUP)
    for k, v in overrides.items():
        conf.set_override(k, v, group=opts.GROUP)
    return conf


class FakeCollector:
    def __init__(self, hosts):
        self._hosts = hosts

    def sample(self, interval):
        return self._hosts


class ServiceTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.hosts = BudgetTest.hosts(self)

    def service(self, conn=None, **overrides):
        s = svc.RepackerService(make_conf(self.tmp, **overrides),
                                conn=conn or FakeConn({}),
                                collector=FakeCollector(self.hosts))
        s.start()
        self.addCleanup(s.stop)
        return s

    def test_dry_run_prints_the_plan(self):
        out = []
        s = self.service(dry_run=True)
        s.out = out.append
        period = s.run_once()
        self.assertEqual('ok', period.status, period.error)
        self.assertEqual(['p1', 'p2', 'n2'],
                         [o.move.server for o in period.outcomes])
        self.assertEqual({ex.PLANNED}, {o.result for o in period.outcomes})
        self.assertIn('host3', out[0])

    def test_period_migrates_within_budget(self):
        conn = FakeConn({'p1': 'host1', 'p2': 'host2', 'n2': 'host2'})
        period = self.service(conn, max_migrations=2,
                              poll_interval=0).run_once()
        self.assertEqual([ex.DONE, ex.DONE],
                         [o.result for o in period.outcomes])
        self.assertEqual({'p1': 'host3', 'p2': 'host3', 'n2': 'host2'},
                         conn.compute.hosts)

    def test_two_replicas_never_act_at_once(self):
        a, b = self.service(), self.service()
        lock = a.coordinator.get_lock(svc.LOCK_NAME)
        self.assertTrue(lock.acquire(blocking=False))
        try:
            self.assertEqual('locked', b.run_once(dry_run=True).status)
        finally:
            lock.release()
        self.assertEqual('ok', b.run_once(dry_run=True).status)
        self.assertTrue(os.path.isdir(os.path.join(self.tmp, 'locks')))

    def test_daemon_samples_between_periods(self):
        s = self.service(dry_run=True, interval=0.05, sample_interval=0.01)
        calls = []
        enough = threading.Event()

        class Counting(FakeCollector):
            def sample(inner, interval):
                calls.append(interval)
                if len(calls) >= 8:
                    enough.set()
                return self.hosts

        s._collector = Counting(self.hosts)
        periods = []
        run_once = s.run_once
        s.run_once = lambda: periods.append(run_once())
        self.assertEqual(0.01, s.round_interval())
        daemon = s.service('opie-repacker')
        daemon.start()
        self.assertTrue(enough.wait(120))
        daemon.stop()
        self.assertIsNone(s.coordinator)  # the daemon left the backend
        self.assertGreaterEqual(len(calls), 8)
        self.assertTrue(1 <= len(periods) < len(calls), (periods, calls))
        self.assertEqual({0.01}, set(calls))

    def test_round_is_a_period_once_per_interval(self):
        s = self.service(dry_run=True, interval=10.0, sample_interval=2.0)
        kinds = []
        s.run_once = lambda: kinds.append('period')
        s.sample = lambda: kinds.append('sample')
        clock = iter([100.0, 102.0, 104.0, 109.9, 110.0, 112.0, 120.5])
        with mock.patch.object(svc.time, 'monotonic', lambda: next(clock)):
            for _ in range(7):
                s.run_round()
        self.assertEqual(['period', 'sample', 'sample', 'sample', 'period',
                          'sample', 'period'], kinds)

    def test_round_interval(self):
        for interval, sample, tick in ((600.0, 60.0, 60.0),
                                       (30.0, 60.0, 30.0),
                                       (600.0, 0.0, 600.0),
                                       (0.0, 0.0, 1.0)):
            s = svc.RepackerService(make_conf(self.tmp, interval=interval,
                                              sample_interval=sample))
            self.assertEqual(tick, s.round_interval())

    def test_a_failing_round_is_logged(self):
        s = self.service(dry_run=True)

        def broken():
            raise RuntimeError('collector broke')

        s.run_once = broken
        log = self.useFixture(fixtures.FakeLogger())
        s.run_round()  # does not raise
        self.assertIn('Repacker round failed', log.output)
        self.assertIn('collector broke', log.output)

    def test_bad_policy_is_an_error_period(self):
        s = self.service(underload_threshold=0.95)
        period = s.run_once(dry_run=True)
        self.assertEqual('error', period.status)
        self.assertIn('below the overload', period.error)


class CommandTest(testtools.TestCase):

    def test_options(self):
        conf = cmd.parse_config(['--dry-run', '--once'])
        self.assertTrue(conf.opie_repacker.dry_run)
        self.assertTrue(conf.once)
        self.assertEqual(600.0, conf.opie_repacker.interval)
        self.assertEqual([opts.repacker_group],
                         [g for g, _ in opts.list_opts()])

    def test_once_dry_run_prints_table(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        hosts = BudgetTest.hosts(self)
        conf_file = os.path.join(tmp, 'r.conf')
        with open(conf_file, 'w') as f:
            f.write('[opie_repacker]\nstate_dir = %s\n' % tmp)
        out = io.StringIO()
        with mock.patch.object(svc.RepackerService, 'collector',
                               FakeCollector(hosts)), \
                mock.patch('sys.stdout', out):
            rc = cmd.main(['--config-file', conf_file, '--once',
                           '--dry-run'], conn=FakeConn({}))
        self.assertEqual(0, rc)
        self.assertIn('p1', out.getvalue())
        self.assertIn('underload', out.getvalue())

    def test_bad_option(self):
        err = io.StringIO()
        with mock.patch('sys.stderr', err):
            self.assertEqual(2, cmd.main(['--nope']))
        self.assertIn('unrecognized arguments: --nope', err.getvalue())


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
