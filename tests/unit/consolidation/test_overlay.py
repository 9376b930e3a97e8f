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
"""Tests of the P2P overlay (opie_sched.consolidation.overlay)."""

import testtools

from opie_sched.consolidation import overlay


class OverlayTest(testtools.TestCase):

    def test_barabasi_albert_shape(self):
        net = overlay.ScaleFreeOverlay(300, m=2, seed=4)
        degrees = net.degrees()
        # m(m+1)/2 core edges plus m per later peer.
        self.assertEqual(2 * (3 + 2 * (300 - 3)), degrees.sum())
        self.assertTrue((degrees >= 2).all())
        # preferential attachment makes hubs: the largest degree is far
        # above the mean (a random regular graph would have 4).
        self.assertGreater(degrees.max(), 5 * degrees.mean())
        for p in range(300):
            for q in net.neighbours(p):
                self.assertTrue(net.are_neighbours(int(q), p))
            self.assertNotIn(p, net.neighbours(p))

    def test_m1_is_a_tree(self):
        net = overlay.ScaleFreeOverlay(100, m=1, seed=0)
        self.assertEqual(2 * 99, net.degrees().sum())

    def test_seeded(self):
        a = overlay.ScaleFreeOverlay(200, 2, seed=9)
        b = overlay.ScaleFreeOverlay(200, 2, seed=9)
        c = overlay.ScaleFreeOverlay(200, 2, seed=10)
        self.assertTrue(all((a.neighbours(p) == b.neighbours(p)).all()
                            for p in range(200)))
        self.assertFalse(all(len(a.neighbours(p)) == len(c.neighbours(p))
                             and (a.neighbours(p) == c.neighbours(p)).all()
                             for p in range(200)))

    def test_bad_input(self):
        self.assertRaises(overlay.OverlayError, overlay.ScaleFreeOverlay, 1)
        self.assertRaises(overlay.OverlayError, overlay.ScaleFreeOverlay, 5,
                          m=5)
        self.assertRaises(overlay.OverlayError, overlay.ScaleFreeOverlay,
                          'x')
        self.assertRaises(overlay.OverlayError, overlay.PeerSampling, 10, 0)

    def test_peer_sampling_views(self):
        ps = overlay.PeerSampling(30, k=20, seed=1)
        first = [v.copy() for v in ps.views]
        for p, v in enumerate(ps.views):
            self.assertEqual(20, len(set(v.tolist())))
            self.assertNotIn(p, v)
            self.assertTrue(((v >= 0) & (v < 30)).all())
        ps.next_cycle()
        self.assertEqual(1, ps.cycle)
        self.assertFalse(all((a == b).all()
                             for a, b in zip(first, ps.views)))
        # k is capped at n - 1
        self.assertEqual(4, overlay.PeerSampling(5, k=20).k)
