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
"""Tests of the simulated hosts (opie_sched.simcore.hosts)."""

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import numpy as np
import testtools

from opie_sched.simcore import hosts as hosts_mod


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
