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
"""Tests of the simulator's shared core (opie_sched.simcore) and of
the scenarios' use of it.

Run with ``stestr run tests.unit.simcore.test_simulator_core``.
"""

import fractions

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import numpy as np
import testtools

from opie_sched.consolidation import p2p
from opie_sched.simcore import clock
from opie_sched.simcore import hosts as hosts_mod
from opie_sched.simcore import metrics
from opie_sched.simulator import engine
from opie_sched.simulator import rpm_vs_ffd
from opie_sched.workload import generator


class EventQueueTest(testtools.TestCase):

    def test_time_then_priority_then_insertion(self):
        q = clock.EventQueue()
        q.push(5.0, 'late')
        q.push(1.0, 'b', priority=1)
        q.push(1.0, 'a', priority=0)
        q.push(1.0, 'c', priority=1)
        self.assertEqual(1.0, q.next_time())
        self.assertEqual(4, len(q))
        got = [q.pop() for _ in range(4)]
        self.assertEqual([(1.0, 'a'), (1.0, 'b'), (1.0, 'c'),
                          (5.0, 'late')], got)
        self.assertFalse(q)
        self.assertIsNone(q.next_time())
        self.assertRaises(IndexError, q.pop)

    def test_items_are_never_compared(self):
        q = clock.EventQueue()
        q.push(1.0, {'x': 1})
        q.push(1.0, {'y': 2})        # dicts do not order: no TypeError
        self.assertEqual({'x': 1}, q.pop()[1])

    def test_drain_sees_pushes(self):
        q = clock.EventQueue()
        q.push(1.0, 'a')
        got = []
        for t, item in q.drain():
            got.append((t, item))
            if item == 'a':
                q.push(0.5, 'late push, earlier time')
                q.push(2.0, 'b')
        self.assertEqual([(1.0, 'a'), (0.5, 'late push, earlier time'),
                          (2.0, 'b')], got)
        self.assertFalse(q)

    def test_tuple_priority(self):
        q = clock.EventQueue()
        q.push(2.0, 'dep 7', priority=(3, 7))
        q.push(2.0, 'dep 3', priority=(3, 3))
        q.push(2.0, 'sample', priority=(0, -1))
        self.assertEqual(['sample', 'dep 3', 'dep 7'],
                         [q.pop()[1] for _ in range(3)])


class ArrivalsTest(testtools.TestCase):

    def test_sorted_stably_and_handed_out_by_time(self):
        items = [('c', 3.0), ('a', 1.0), ('b', 1.0), ('d', 7.0)]
        arr = clock.Arrivals(items, key=lambda x: x[1])
        self.assertEqual(4, arr.total)
        self.assertEqual(7.0, arr.last_time())
        self.assertEqual(1.0, arr.next_time())
        self.assertEqual([('a', 1.0), ('b', 1.0)], arr.due(2.0))
        self.assertEqual([], arr.due(2.5))
        self.assertEqual((2, ('c', 3.0)), arr.pop())
        self.assertEqual(1, len(arr))
        self.assertEqual([('d', 7.0)], arr.due(7.0))
        self.assertFalse(arr)
        self.assertIsNone(arr.next_time())
        self.assertRaises(IndexError, arr.pop)

    def test_separate_time_and_key(self):
        items = [(1.0, 9), (1.0, 2), (0.5, 5)]
        arr = clock.Arrivals(items, key=lambda x: (x[0], x[1]),
                             time=lambda x: x[0])
        self.assertEqual([(0.5, 5), (1.0, 2), (1.0, 9)], arr.items)
        self.assertEqual(0.5, arr.next_time())

    def test_empty(self):
        arr = clock.Arrivals([])
        self.assertIsNone(arr.last_time())
        self.assertEqual([], arr.due(1e9))


class MergeTest(testtools.TestCase):

    def test_events_first_at_equal_times_and_pushes_seen(self):
        arr = clock.Arrivals([1.0, 2.0, 4.0])
        q = clock.EventQueue()
        q.push(2.0, 'd0')
        seen = []
        for kind, t, item in clock.merge(arr, q):
            seen.append((kind, t, item))
            if kind is clock.ARRIVAL and item[0] == 0:
                q.push(3.0, 'd1')          # pushed during the loop
        self.assertEqual([
            (clock.ARRIVAL, 1.0, (0, 1.0)),
            (clock.EVENT, 2.0, 'd0'),
            (clock.ARRIVAL, 2.0, (1, 2.0)),
            (clock.EVENT, 3.0, 'd1'),
            (clock.ARRIVAL, 4.0, (2, 4.0))], seen)


class StepClockTest(testtools.TestCase):

    def test_tick_and_skip(self):
        c = clock.StepClock(300.0)
        self.assertEqual(0.0, c.now)
        self.assertEqual(300.0, c.tick())
        self.assertEqual(1, c.ticks)
        self.assertEqual(1500.0, c.skip_to(1799.0))    # floor to the grid
        self.assertEqual(1500.0, c.skip_to(10.0))      # never backwards
        self.assertEqual(1800.0, c.tick())

    def test_run_jumps_over_idle_time(self):
        c = clock.StepClock(10.0)
        arr = clock.Arrivals([3.0, 4.0, 95.0])
        running = []
        seen = []
        for now, due in c.run(arr, lambda: running):
            seen.append((now, list(due)))
            running.extend(due)
            c.tick()
            if now >= 10.0:
                running.clear()        # the work is done after two steps
        self.assertEqual([(0.0, []), (10.0, [3.0, 4.0]), (90.0, []),
                          (100.0, [95.0])], seen)

    def test_steps_from_index(self):
        c = clock.StepClock(60.0)
        self.assertEqual([(0, 0.0), (1, 60.0), (2, 120.0)],
                         list(c.steps(3)))
        self.assertEqual(120.0, c.now)

    def test_exact_step(self):
        c = clock.StepClock(fractions.Fraction(1, 12))
        for _ in range(12):
            c.tick()
        self.assertEqual(1, c.now)

    def test_bad_step(self):
        for bad in (0, -1.0, float('inf'), float('nan'), True, '1'):
            self.assertRaises(ValueError, clock.StepClock, bad)


class SeriesTest(testtools.TestCase):

    def test_record_keeps_one_sample_per_time(self):
        s = metrics.Series(('t', 'x'))
        s.record((0.0, 1))
        s.record((1.0, 2))
        s.record((1.0, 5))       # same time: replaces
        s.record((2.0, 3))
        self.assertEqual(3, len(s))
        self.assertEqual([(0.0, 1), (1.0, 5), (2.0, 3)], s.rows())
        arrays = s.arrays()
        self.assertEqual([0.0, 1.0, 2.0], arrays['t'].tolist())
        self.assertEqual([1.0, 5.0, 3.0], arrays['x'].tolist())
        self.assertEqual(3, s.last('x'))

    def test_append_and_errors(self):
        s = metrics.Series(('a', 'b'))
        s.append(({'x': 1}, 2.5))
        s.append(({}, 0.0))
        self.assertEqual([{'x': 1}, {}], s.column('a'))
        self.assertRaises(KeyError, s.column, 'c')
        self.assertRaises(ValueError, s.append, (1,))
        self.assertRaises(ValueError, metrics.Series, ())
        self.assertRaises(ValueError, metrics.Series, ('a', 'a'))
        empty = metrics.Series(('t',))
        self.assertIsNone(empty.last('t'))
        self.assertEqual(0, empty.arrays()['t'].size)


class StepIntegralTest(testtools.TestCase):
    """One integral for the simulator's and the demo's utilisation."""

    def test_each_sample_holds_until_the_next_the_last_until_end(self):
        t, v = [10.0, 20.0, 30.0], [4.0, 2.0, 1.0]
        # 4 x 10 + 2 x 10 + 1 x 5
        self.assertEqual(65.0, metrics.step_integral(t, v, 10.0, 35.0))
        # zero before the first sample; clipped to the window
        self.assertEqual(65.0, metrics.step_integral(t, v, 0.0, 35.0))
        self.assertEqual(4.0 * 5 + 2.0 * 3,
                         metrics.step_integral(t, v, 15.0, 23.0))
        self.assertEqual(0.0, metrics.step_integral(t, v, 35.0, 35.0))
        self.assertEqual(0.0, metrics.step_integral([], [], 0.0, 9.0))
        self.assertRaises(ValueError, metrics.step_integral, t, v[:2],
                          0.0, 1.0)

    def test_demo_and_simulator_agree(self):
        from opie_sched.demo import replay
        samples = [(0.0, 3.0, 1.0), (7.0, 5.0, 4.0), (12.0, 1.0, 0.0),
                   (20.0, 0.0, 0.0)]
        demo = replay.ReplayResult('demo', capacity_vcpus=8)
        demo.samples = [replay.Sample(*s) for s in samples]
        sim = engine.SimResult('sim', 'p', n_hosts=1, capacity_vcpus=8,
                               horizon=20.0)
        sim.series = {
            't': np.array([s[0] for s in samples]),
            'normal_vcpus': np.array([s[1] for s in samples]),
            'preemptible_vcpus': np.array([s[2] for s in samples])}
        # (3 + 1) x 7 + (5 + 4) x 5 + 1 x 8 = 81 vCPU-s over 20 s x 8 vCPU
        self.assertEqual(81.0 / 160.0, demo.utilisation())
        for kinds in (('normal', 'preemptible'), ('normal',),
                      ('preemptible',)):
            for window in ((0.0, 20.0), (5.0, 15.0)):
                self.assertAlmostEqual(
                    sim.utilisation(kinds, *window),
                    demo.utilisation(kinds, window=window), places=12)


class HostsTest(testtools.TestCase):

    def _hosts(self, **kwargs):
        return hosts_mod.Hosts([[8, 16000], [8, 16000], [4, 8000]],
                               **kwargs)

    def test_place(self):
        h = self._hosts()
        vm = h.register(size=(2, 4000))
        self.assertFalse(h.is_placed(vm))
        h.place(vm, 1)
        self.assertTrue(h.is_placed(vm))
        self.assertEqual([0, 0], h.sums['size'][0].tolist())
        self.assertEqual([2, 4000], h.sums['size'][1].tolist())
        self.assertEqual([0, 1, 0], h.count.tolist())
        self.assertEqual(1, h.active_hosts)
        self.assertEqual([6, 12000], h.free(1).tolist())
        self.assertEqual(1, h.moves['placements'])
        self.assertEqual([vm], h.vms_on(1))
        self.assertEqual([False, True, False], h.active().tolist())

    def test_remove_reverses_place(self):
        h = self._hosts()
        a = h.register(size=(2, 4000))
        b = h.register(size=(1, 1000))
        h.place(a, 0)
        h.place(b, 0)
        self.assertEqual(0, h.remove(a))
        self.assertEqual([1, 1000], h.sums['size'][0].tolist())
        self.assertEqual(1, h.count[0])
        self.assertEqual(1, h.active_hosts)
        h.remove(b)
        self.assertEqual([0, 0], h.sums['size'][0].tolist())
        self.assertEqual(0, h.active_hosts)
        self.assertEqual(2, h.moves['removals'])
        self.assertEqual(-1, h.host[a])

    def test_migrate_moves_sums_and_counts_once(self):
        h = self._hosts()
        a = h.register(size=(2, 4000))
        h.place(a, 0)
        self.assertEqual(0, h.migrate(a, 2))
        self.assertEqual([0, 0], h.sums['size'][0].tolist())
        self.assertEqual([2, 4000], h.sums['size'][2].tolist())
        self.assertEqual([0, 0, 1], h.count.tolist())
        self.assertEqual(1, h.active_hosts)
        self.assertEqual({'placements': 1, 'migrations': 1},
                         dict(h.moves))
        self.assertRaises(hosts_mod.HostsError, h.migrate, a, 2)

    def test_relocate_is_not_counted(self):
        h = self._hosts()
        a = h.register(size=(1, 1))
        h.place(a, 0)
        self.assertEqual(0, h.relocate(a, 1))
        self.assertEqual(1, h.relocate(a, 0))
        self.assertEqual(0, h.moves['migrations'])
        self.assertEqual([1, 1], h.sums['size'][0].tolist())

    def test_placement_order_per_host(self):
        h = self._hosts()
        ids = [h.register(size=(1, 1)) for _ in range(3)]
        for vm in (ids[2], ids[0], ids[1]):
            h.place(vm, 0)
        h.relocate(ids[2], 1)
        h.relocate(ids[2], 0)            # back at the end
        self.assertEqual([ids[0], ids[1], ids[2]], h.vms_on(0))

    def test_errors_change_nothing(self):
        h = self._hosts()
        a = h.register(size=(1, 1))
        self.assertRaises(hosts_mod.HostsError, h.remove, a)
        self.assertRaises(hosts_mod.HostsError, h.place, a, 3)
        self.assertRaises(hosts_mod.HostsError, h.place, a, -1)
        h.place(a, 0)
        self.assertRaises(hosts_mod.HostsError, h.place, a, 1)
        self.assertRaises(hosts_mod.HostsError, h.relocate, a, 7)
        self.assertRaises(hosts_mod.HostsError, h.release, a)
        self.assertRaises(hosts_mod.HostsError, h.register, bogus=(1, 1))
        self.assertEqual([1, 1], h.sums['size'][0].tolist())
        self.assertEqual(1, h.n_placed)
        self.assertEqual(1, h.moves['placements'])

    def test_bad_shapes(self):
        self.assertRaises(hosts_mod.HostsError, hosts_mod.Hosts, [])
        self.assertRaises(hosts_mod.HostsError, hosts_mod.Hosts,
                          [[1, 2]], measures=())

    def test_one_dimension(self):
        h = hosts_mod.Hosts([10.0, 10.0])
        self.assertEqual((2, 1), h.cap.shape)
        vm = h.register(size=3.0)
        h.place(vm, 1)
        self.assertEqual(7.0, h.free(1)[0])

    def test_ids_are_reused_after_release(self):
        h = self._hosts()
        a = h.register(size=(1, 1))
        h.place(a, 0)
        h.remove(a)
        h.release(a)
        b = h.register(size=(3, 3))
        self.assertEqual(a, b)
        self.assertEqual([3, 3], h.values['size'][b].tolist())

    def test_zero_when_empty_drops_the_residue(self):
        plain = hosts_mod.Hosts([1.0])
        exact = hosts_mod.Hosts([1.0], zero_when_empty=True)
        for h in (plain, exact):
            a, b = h.register(size=0.1), h.register(size=0.2)
            h.place(a, 0)
            h.place(b, 0)
            h.remove(a)
            h.remove(b)
        self.assertNotEqual(0.0, plain.sums['size'][0, 0])   # 0.1+0.2-...
        self.assertEqual(0.0, exact.sums['size'][0, 0])

    def test_two_measures_and_bulk(self):
        h = hosts_mod.Hosts([[16, 64]] * 2, measures=('reserved', 'used'))
        ids = h.register_many(3, reserved=[[4, 8], [2, 4], [8, 16]],
                              used=[[1, 2], [2, 4], [3, 6]])
        self.assertEqual(range(0, 3), ids)
        for vm, host in ((0, 0), (1, 1), (2, 0)):
            h.place(vm, host)
        self.assertEqual([12, 24], h.sums['reserved'][0].tolist())
        self.assertEqual([4, 8], h.sums['used'][0].tolist())
        # bulk change of use, then refresh
        h.values['used'][:, 0] = [0.5, 0.25, 0.125]
        h.refresh()
        self.assertEqual([0.625, 0.25], h.sums['used'][:, 0].tolist())
        h.remove_many([0, 1])
        self.assertEqual([8, 0], h.sums['reserved'][:, 0].tolist())
        self.assertEqual([1, 0], h.count.tolist())
        self.assertEqual(1, h.active_hosts)
        self.assertEqual([2], h.vms_on(0))
        self.assertEqual(2, h.moves['removals'])
        self.assertRaises(hosts_mod.HostsError, h.remove_many, [0])

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.tuples(st.sampled_from('prmx'),
                              st.integers(0, 9), st.integers(0, 3),
                              st.integers(1, 5)), max_size=60))
    def test_sums_always_equal_a_recount(self, ops):
        """Whatever the sequence of changes, every host's sums and count
        equal those recomputed from the VMs placed there.
        """
        h = hosts_mod.Hosts([[10, 10]] * 4)
        ids = list(h.register_many(10, size=[[k, 2 * k] for k in
                                             range(1, 11)]))
        for op, vm, host, _ in ops:
            vm = ids[vm]
            placed = h.is_placed(vm)
            if op == 'p' and not placed:
                h.place(vm, host)
            elif op == 'r' and placed:
                h.remove(vm)
            elif op == 'm' and placed and h.host[vm] != host:
                h.migrate(vm, host)
            elif op == 'x' and placed:
                h.relocate(vm, host)
        for host in range(4):
            on = [vm for vm in ids if h.host[vm] == host]
            self.assertEqual(sorted(on), sorted(h.vms_on(host)))
            want = np.sum([h.values['size'][vm] for vm in on] or
                          [[0, 0]], axis=0)
            self.assertEqual(want.tolist(), h.sums['size'][host].tolist())
            self.assertEqual(len(on), h.count[host])
        self.assertEqual(int((h.count > 0).sum()), h.active_hosts)
        self.assertEqual(h.moves['placements'] - h.moves['removals'],
                         h.n_placed)


class ScenariosOnTheCoreTest(testtools.TestCase):
    """The scenarios' state is the core's."""

    def test_engine_cloud_accounts_every_instance(self):
        reqs = generator.generate(seed=3, count=300, rate_per_hour=400,
                                  preemptible_fraction=0.5)
        sim = engine.Simulator(
            engine.cloud_mod.Cloud.uniform(4),
            engine.policies_mod.make_policy('opie'))
        result = sim.run(reqs)
        hosts = sim.cloud.hosts
        # every server left by the end (departure or preemption)
        self.assertEqual(0, hosts.n_placed)
        self.assertEqual(0, sim.cloud.active_hosts)
        self.assertEqual(hosts.moves['placements'], hosts.moves['removals'])
        self.assertGreaterEqual(hosts.moves['placements'],
                                result.servers_booted)
        self.assertEqual(0.0, float(np.abs(sim.cloud.used).max()))

    def test_rpm_placement_keeps_fractional_use(self):
        """Regression: the first minute's placements used to be added to
        integer per-host sums (numpy's bincount of nothing is int64), so
        a service using 2.55 ECU counted as 2.
        """
        vms = rpm_vs_ffd.thesis_load(16, 1.0, 0)
        dc = rpm_vs_ffd.DataCentre(16, vms, 'rpm')
        dc.demand(0.0)
        vm = next(i for i, v in enumerate(vms) if v['kind'] == 'service'
                  and dc.use_cpu[i] != int(dc.use_cpu[i]))
        dc.hosts.place(vm, 0)
        self.assertEqual(dc.use_cpu[vm], dc.uc[0])
        self.assertEqual(dc.use_mem[vm], dc.um[0])
        self.assertEqual(dc.cpu[vm], dc.rc[0])

    def test_rpm_migrations_counted_by_the_core(self):
        vms = rpm_vs_ffd.thesis_load(64, 6.0, 1)
        dc_counts = {}
        orig = rpm_vs_ffd.DataCentre.__init__

        def keep(self, *args, **kwargs):
            orig(self, *args, **kwargs)
            dc_counts['dc'] = self

        self.patch(rpm_vs_ffd.DataCentre, '__init__', keep)
        out = rpm_vs_ffd.run_policy('ffd', 64, vms, 6.0, 1)
        dc = dc_counts['dc']
        self.assertEqual(out['migrations'], dc.hosts.moves['migrations'])
        self.assertEqual(int((dc.host >= 0).sum()), dc.hosts.n_placed)

    def test_p2p_cluster_is_the_core_model(self):
        c = p2p.Cluster(3, 10)
        self.assertIsInstance(c, hosts_mod.Hosts)
        c.place('a', 4, 0)
        c.place('b', 3, 0)
        c.migrate('b', 2)
        self.assertEqual({'a': 0, 'b': 2}, c.where)
        self.assertEqual({'a': 4.0}, c.vms[0])
        self.assertEqual([4.0, 0.0, 3.0], c.used.tolist())
        self.assertEqual(1, c.moves['migrations'])
        c.remove('a')
        self.assertEqual(0.0, c.used[0])
        self.assertRaises(p2p.P2PError, c.place, 'b', 1, 1)
        self.assertRaises(p2p.P2PError, c.place, 'c', 11, 1)
