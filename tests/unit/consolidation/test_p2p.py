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
"""Tests of the P2P consolidation allocation (opie_sched.consolidation.p2p)."""

import hypothesis
from hypothesis import strategies as st
import numpy as np
import testtools

from opie_sched.consolidation import overlay
from opie_sched.consolidation import p2p

from tests.unit.consolidation.helpers import SETTINGS


class AllocateTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.net = overlay.ScaleFreeOverlay(50, 1, seed=2)
        self.rng = np.random.default_rng(0)

    def test_most_utilised_climbs_to_the_fullest_fitting_node(self):
        c = p2p.Cluster(50, 10)
        hub = self.net.hub()
        nbrs = self.net.neighbours(hub)
        c.place('a', 6, int(nbrs[0]))
        c.place('b', 9, int(nbrs[1]))     # too full for a demand of 2
        walk = p2p.allocate(c, self.net, 'max', 2, hub, self.rng)
        self.assertEqual(int(nbrs[0]), walk.node)
        self.assertEqual(1, walk.hops)

    def test_least_utilised_prefers_empty(self):
        c = p2p.Cluster(50, 10)
        hub = self.net.hub()
        c.place('a', 5, hub)
        walk = p2p.allocate(c, self.net, 'min', 2, hub, self.rng)
        self.assertNotEqual(hub, walk.node)
        self.assertEqual(0, c.used[walk.node])

    def test_first_fit_stays_when_it_fits(self):
        c = p2p.Cluster(50, 10)
        walk = p2p.allocate(c, self.net, 'ff', 10, 7, self.rng)
        self.assertEqual((7, 0), (walk.node, walk.hops))

    def test_htl_rejects(self):
        c = p2p.Cluster(50, 10)
        for i in range(50):
            c.place(i, 10, i)
        walk = p2p.allocate(c, self.net, 'max', 1, 0, self.rng, htl=5)
        self.assertIsNone(walk.node)
        self.assertEqual(5, walk.hops)
        walk = p2p.allocate(c, self.net, 'max', 1, 0, self.rng, htl=0)
        self.assertEqual((None, 0), (walk.node, walk.hops))

    @hypothesis.given(seed=st.integers(0, 10 ** 6),
                      heuristic=st.sampled_from(['max', 'min', 'ff']),
                      htl=st.integers(0, 25),
                      demands=st.lists(st.integers(1, 10), min_size=1,
                                       max_size=120))
    @SETTINGS
    def test_walk_properties(self, seed, heuristic, htl, demands):
        net = overlay.ScaleFreeOverlay(40, 1, seed=seed)
        c = p2p.Cluster(40, 10)
        rng = np.random.default_rng(seed)
        for j, d in enumerate(demands):
            walk = p2p.allocate(c, net, heuristic, d, int(rng.integers(40)),
                                rng, htl=htl)
            self.assertLessEqual(walk.hops, htl)           # HTL honoured
            self.assertEqual(walk.hops + 1, len(walk.path))
            for a, b in zip(walk.path, walk.path[1:]):     # overlay hops
                self.assertTrue(net.are_neighbours(a, b))
            if walk.node is not None:
                self.assertEqual(walk.path[-1], walk.node)
                c.place(j, d, walk.node)
            self.assertTrue((c.used <= 10 + 1e-9).all())   # capacity

    @hypothesis.given(seed=st.integers(0, 10 ** 6),
                      loads=st.lists(st.integers(0, 10), min_size=30,
                                     max_size=30))
    @SETTINGS
    def test_reconsolidation_properties(self, seed, loads):
        net = overlay.ScaleFreeOverlay(30, 1, seed=seed)
        c = p2p.Cluster(30, 10)
        for node, load in enumerate(loads):
            for u in range(load):
                c.place((node, u), 1, node)
        total = c.used.sum()
        moves = []

        def record(vm, src, dst, walk):
            moves.append((src, dst, walk))

        moved, slept = p2p.reconsolidate(
            c, net, np.random.default_rng(seed), on_migrate=record)
        self.assertEqual(moved, len(moves))
        self.assertAlmostEqual(total, c.used.sum())
        self.assertTrue((c.used <= 10 + 1e-9).all())
        for src, dst, walk in moves:
            self.assertNotEqual(src, dst)
            self.assertEqual(src, walk.path[0])
            self.assertLessEqual(walk.hops, p2p.HTL)
            for a, b in zip(walk.path, walk.path[1:]):
                self.assertTrue(net.are_neighbours(a, b))
        light = sum(1 for x in loads if 0 < x <= 4)
        self.assertLessEqual(slept, light)

    def test_reconsolidation_empties_a_light_node(self):
        net = overlay.ScaleFreeOverlay(2, 1, seed=0)
        c = p2p.Cluster(2, 10)
        c.place('light', 3, 0)
        c.place('heavy', 6, 1)
        moved, slept = p2p.reconsolidate(c, net, np.random.default_rng(0))
        self.assertEqual((1, 1), (moved, slept))
        self.assertEqual(1, c.where['light'])
        # above the threshold nothing moves
        c2 = p2p.Cluster(2, 10)
        c2.place('a', 5, 0)
        c2.place('b', 5, 1)
        self.assertEqual((0, 0), p2p.reconsolidate(
            c2, net, np.random.default_rng(0)))

    def test_cluster_refuses_overflow(self):
        c = p2p.Cluster(2, 10)
        c.place('a', 8, 0)
        self.assertRaises(p2p.P2PError, c.place, 'b', 3, 0)
        self.assertRaises(p2p.P2PError, c.place, 'a', 1, 1)
        self.assertRaises(p2p.P2PError, p2p.Cluster, 0, 10)
        self.assertRaises(p2p.P2PError, p2p.allocate, c, None, 'best', 1, 0,
                          np.random.default_rng(0))

    def test_profit_and_power(self):
        model = p2p.PowerModel()
        self.assertEqual(175.0, model.power(0.0))
        self.assertEqual(250.0, model.power(1.0))
        c = p2p.Cluster(3, 10)
        c.place('a', 10, 0)
        c.place('b', 5, 1)
        # income 15 × 0.01; cost (250/250 + 212.5/250) × 0.05
        self.assertAlmostEqual(0.15 - (1 + 0.85) * 0.05, model.profit(c))
        self.assertAlmostEqual(15 / 30, p2p.data_centre_utilisation(c))
        self.assertAlmostEqual(15 / 20, p2p.node_utilisation(c))
