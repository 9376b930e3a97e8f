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
"""Tests of the RPM terms (thesis Paper IV) and the overlay and discovery
of hosts (opie_sched.rpm.model)."""

import testtools

from opie_sched.rpm import model as rpm


# -- pure terms ---------------------------------------------------------------

class OverbookingRiskTest(testtools.TestCase):

    def test_three_cases(self):
        # capacity 8: requested 4 (unreq 4), used 2 (free 6)
        self.assertEqual(0.0, rpm.overbooking_risk(3, 4, 6))
        self.assertEqual(0.5, rpm.overbooking_risk(5, 4, 6))
        self.assertEqual(1.0, rpm.overbooking_risk(7, 4, 6))

    def test_boundaries(self):
        self.assertEqual(0.0, rpm.overbooking_risk(4, 4, 6))   # req = unreq
        self.assertEqual(1.0, rpm.overbooking_risk(6, 4, 6))   # req = free
        self.assertEqual(0.0, rpm.overbooking_risk(4, 4, 4))   # unreq = free
        self.assertEqual(1.0, rpm.overbooking_risk(4.001, 4, 4))
        self.assertEqual(0.0, rpm.overbooking_risk(0, 0, 0))

    def test_used_above_requested(self):
        # free < unreq: no middle case
        self.assertEqual(0.0, rpm.overbooking_risk(3, 4, 2))
        self.assertEqual(1.0, rpm.overbooking_risk(4, 4, 2))

    def test_overcommitted_host(self):
        self.assertEqual(1.0, rpm.overbooking_risk(1, -2, -1))

    def test_max_of_dimensions(self):
        self.assertEqual(0.5, rpm.host_overbooking_risk(3, 4, 6, 5, 4, 6))
        self.assertEqual(1.0, rpm.host_overbooking_risk(7, 4, 6, 0, 4, 6))

    def test_invalid(self):
        self.assertRaises(rpm.RPMError, rpm.overbooking_risk, -1, 4, 6)
        self.assertRaises(rpm.RPMError, rpm.overbooking_risk, 1, float('nan'),
                          6)


class VariationTest(testtools.TestCase):

    def test_cov(self):
        self.assertEqual(0.0, rpm.coefficient_of_variation([0.5] * 10))
        self.assertAlmostEqual(0.5, rpm.coefficient_of_variation(
            [0.25, 0.75]))
        self.assertEqual(0.0, rpm.coefficient_of_variation([0.4]))
        self.assertEqual(0.0, rpm.coefficient_of_variation([0, 0, 0]))

    def test_bound_is_reached(self):
        samples = [1.0] + [0.0] * 9
        self.assertAlmostEqual(rpm.max_coefficient_of_variation(10),
                               rpm.coefficient_of_variation(samples))
        self.assertAlmostEqual(3.0, rpm.max_coefficient_of_variation(10))

    def test_host_variation_and_risk(self):
        self.assertAlmostEqual(
            0.5, rpm.host_load_variation([0.5, 0.5], [0.25, 0.75]))
        self.assertAlmostEqual(0.25, rpm.risk(0.5, 0.5))

    def test_negative_sample(self):
        self.assertRaises(rpm.RPMError, rpm.coefficient_of_variation,
                          [0.1, -0.1])


class DistanceTest(testtools.TestCase):

    def test_levels(self):
        a = rpm.Location('h1', 'g1', 'c1')
        self.assertEqual(1, rpm.distance(a, rpm.Location('h2', 'g1', 'c1')))
        self.assertEqual(2, rpm.distance(a, rpm.Location('h3', 'g2', 'c1')))
        self.assertEqual(3, rpm.distance(a, rpm.Location('h4', 'g3', 'c2')))
        self.assertEqual(1, rpm.distance(a, a))

    def test_unknown_is_far(self):
        a = rpm.Location('h1', 'g1', 'c1')
        unknown = rpm.Location('h9', None, None)
        self.assertEqual(3, rpm.distance(a, unknown))
        self.assertEqual(3, rpm.distance(unknown, rpm.Location(
            'h8', None, None)))
        self.assertEqual(2, rpm.distance(a, rpm.Location('h7', None, 'c1')))

    def test_nearest(self):
        c = rpm.Location('h', 'g2', 'c1')
        self.assertIsNone(rpm.nearest_distance(c, []))
        self.assertEqual(2, rpm.nearest_distance(c, [
            rpm.Location('x', 'g1', 'c1'), rpm.Location('y', 'g', 'c2')]))


class EfficiencyTest(testtools.TestCase):

    def test_distance_reading(self):
        self.assertAlmostEqual(0.0, rpm.efficiency(0.5, 0.5, 0.25, 0.25))
        self.assertAlmostEqual(0.5, rpm.efficiency(0.0, 0.0, 0.25, 0.25))
        self.assertAlmostEqual(0.25, rpm.efficiency(0.75, 0.5, 0.25, 0.25))
        self.assertEqual((0.0, 0.75), rpm.efficiency_bounds())

    def test_literal_reading(self):
        self.assertAlmostEqual(-0.25, rpm.efficiency(
            0.75, 0.75, 0.25, 0.25, formula='literal'))
        self.assertAlmostEqual(0.5, rpm.efficiency(
            0.0, 0.25, 0.25, 0.0, formula='literal'))
        self.assertEqual((-0.25, 0.75), rpm.efficiency_bounds(
            formula='literal'))

    def test_invalid(self):
        self.assertRaises(rpm.RPMError, rpm.efficiency, 0, 0, 0, 0,
                          formula='x')
        self.assertRaises(rpm.RPMError, rpm.efficiency, 0, 0, 0, 0,
                          target=1.5)


class DataTransferTest(testtools.TestCase):

    def test_cold(self):
        self.assertEqual(4096.0, rpm.data_transfer(4096))

    def test_live_formula(self):
        m, r, bw, n = 1000.0, 10.0, 100.0, 3
        expected = m + m * (1 - 0.1 ** 4) / (1 - 0.1)
        self.assertAlmostEqual(expected, rpm.data_transfer(
            m, live=True, dirty_rate=r, bandwidth=bw, rounds=n))
        self.assertAlmostEqual(m + m * 4, rpm.data_transfer(
            m, live=True, dirty_rate=bw, bandwidth=bw, rounds=3))
        self.assertLessEqual(
            rpm.data_transfer(m, True, r, bw, 3),
            rpm.data_transfer_bound(m, True, r, bw))

    def test_precopy_rounds(self):
        # log_{0.1}(T·L/M) = log_{0.1}(0.001) = 3;
        # log_{0.1}(X·R/(M(L−R))) = log_{0.1}(100·10/(1000·90)) ≈ 1.95 → 2
        self.assertEqual(2, rpm.precopy_rounds(1000, 10, 100, 0.01, 100))
        self.assertEqual(0, rpm.precopy_rounds(1000, 0, 100, 0.01, 100))
        self.assertEqual(30, rpm.precopy_rounds(1000, 100, 100, 0.01, 100))
        self.assertRaises(rpm.RPMError, rpm.precopy_rounds, 0, 1, 1, 1, 1)

    def test_live_needs_bandwidth(self):
        self.assertRaises(rpm.RPMError, rpm.data_transfer, 10, live=True)


class ImbalanceTest(testtools.TestCase):

    def test_placement(self):
        self.assertAlmostEqual(0.0, rpm.imbalance(0.5, 0.5, 0.25, 0.25))
        self.assertAlmostEqual(0.5, rpm.imbalance(0.5, 0.0, 0.25, 0.25))

    def test_migration(self):
        self.assertAlmostEqual(
            abs((0.8 - 0.2) - (0.4 - 0.1)) + abs((0.1 + 0.2) - (0.5 + 0.1)),
            rpm.imbalance(0.1, 0.5, 0.2, 0.1, src_cpu=0.8, src_mem=0.4))


class ScoreTest(testtools.TestCase):

    def test_normalise(self):
        self.assertEqual(0.5, rpm.normalise(1.5, 3))
        self.assertEqual(1.0, rpm.normalise(4, 3))
        self.assertEqual(0.0, rpm.normalise(-1, 3))
        self.assertEqual(0.5, rpm.normalise(0.25, 0.75, -0.25))
        self.assertEqual(0.0, rpm.normalise(1, 0))

    def test_score(self):
        terms = rpm.Terms(1.0, 0.5, 0.0, 0.0, 0.5)
        self.assertAlmostEqual(0.4, rpm.score(terms))
        self.assertAlmostEqual(1.0, rpm.score(terms, (1, 0, 0, 0, 0)))

    def test_lambdas_must_add_to_one(self):
        self.assertRaises(rpm.RPMError, rpm.score, rpm.Terms(0, 0, 0, 0, 0),
                          (0.5, 0.5, 0.5, 0, 0))
        self.assertRaises(rpm.RPMError, rpm.check_lambdas, (1.2, -0.2, 0, 0,
                                                            0))
        self.assertRaises(rpm.RPMError, rpm.check_lambdas, (1,))


class TriggerTest(testtools.TestCase):

    def test_overload_needs_ten_consecutive(self):
        high, low = [0.95] * 10, [0.5] * 10
        self.assertTrue(rpm.is_overloaded(high, low))
        self.assertTrue(rpm.is_overloaded(low, high))
        # CPU and RAM alternating above 90 %: overloaded in every sample
        self.assertTrue(rpm.is_overloaded([0.95, 0.5] * 5, [0.5, 0.95] * 5))
        self.assertFalse(rpm.is_overloaded(high[:9], low[:9]))
        self.assertFalse(rpm.is_overloaded([0.5] + [0.95] * 9, low))
        self.assertFalse(rpm.is_overloaded([0.9] * 10, low))  # not above
        self.assertTrue(rpm.is_overloaded([0.5] + [0.95] * 10, low + [0.5]))

    def test_underload_needs_both_dimensions(self):
        self.assertTrue(rpm.is_underloaded([0.1] * 10, [0.29] * 10))
        self.assertFalse(rpm.is_underloaded([0.1] * 10, [0.3] * 10))
        self.assertFalse(rpm.is_underloaded([0.1] * 9, [0.1] * 9))

    def test_host_trigger_and_priorities(self):
        self.assertEqual(rpm.Event.OVERLOAD,
                         rpm.host_trigger([0.95] * 10, [0.1] * 10))
        self.assertEqual(rpm.Event.UNDERLOAD,
                         rpm.host_trigger([0.1] * 10, [0.1] * 10))
        self.assertIsNone(rpm.host_trigger([0.5] * 10, [0.5] * 10))
        events = [(rpm.Event.UNDERLOAD, 'u'), (rpm.Event.NEW_REQUEST, 'n1'),
                  (rpm.Event.OVERLOAD, 'o'), (rpm.Event.NEW_REQUEST, 'n2')]
        self.assertEqual(['o', 'n1', 'n2', 'u'],
                         [p for _, p in rpm.prioritise(events)])


# -- local discovery (Paper IV Alg. 1, §4.1, §5.2) ---------------------------

def _tree(clusters=2, groups=4, hosts=16):
    """Locations of a three-level tree: ``clusters`` × ``groups`` ×
    ``hosts``.
    """
    return [rpm.Location('c%dg%dh%d' % (c, g, h), 'g%d' % g, 'c%d' % c)
            for c in range(clusters) for g in range(groups)
            for h in range(hosts)]


class OverlayTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.locs = _tree()
        self.overlay = rpm.Overlay(self.locs)

    def test_k_distinct_neighbours_never_the_source(self):
        rng = rpm.seeded_rng(1)
        for _ in range(50):
            got = self.overlay.sample(rng, 'c0g0h0')
            self.assertEqual(rpm.NEIGHBOURS, len(got))
            self.assertEqual(len(got), len(set(got)))
            self.assertNotIn('c0g0h0', got)

    def test_locality_split_60_30_10(self):
        # Groups large enough that no tier runs dry: the first draw of
        # each round follows the probabilities exactly.
        overlay = rpm.Overlay(_tree(2, 4, 64), k=1)
        loc = dict(overlay.locations)
        rng = rpm.seeded_rng(2)
        counts = {1: 0, 2: 0, 3: 0}
        n = 20000
        for _ in range(n):
            (peer,) = overlay.sample(rng, 'c0g0h0')
            counts[rpm.distance(loc['c0g0h0'], loc[peer])] += 1
        # anywhere (0.1) lands in the group 63/511, in the cluster
        # 192/511 and elsewhere 256/511 of the time.
        expect = {1: 0.6 + 0.1 * 63 / 511, 2: 0.3 + 0.1 * 192 / 511,
                  3: 0.1 * 256 / 511}
        for dist, p in expect.items():
            self.assertAlmostEqual(p, counts[dist] / float(n), delta=0.015)

    def test_small_group_falls_back_to_wider_tiers(self):
        overlay = rpm.Overlay(_tree(2, 2, 4), k=20)
        got = overlay.sample(rpm.seeded_rng(0), 'c0g0h0')
        self.assertEqual(15, len(got))          # every other host
        self.assertEqual(set(overlay.hosts) - {'c0g0h0'}, set(got))

    def test_no_topology_means_random_neighbours(self):
        locs = [rpm.Location('h%d' % i, None, None) for i in range(30)]
        got = rpm.Overlay(locs, k=5).sample(rpm.seeded_rng(0), 'h0')
        self.assertEqual(5, len(set(got)))

    def test_deterministic_with_a_seed(self):
        a = [self.overlay.sample(rpm.seeded_rng(7), 'c1g2h3')
             for _ in range(2)]
        self.assertEqual(a[0], a[1])
        self.assertNotEqual(
            self.overlay.sample(rpm.seeded_rng(7), 'c1g2h3'),
            self.overlay.sample(rpm.seeded_rng(8), 'c1g2h3'))

    def test_bad_input(self):
        self.assertRaises(rpm.RPMError, rpm.Overlay, self.locs, k=0)
        self.assertRaises(rpm.RPMError, rpm.Overlay, self.locs,
                          locality=(0.5, 0.5, 0.5))
        self.assertRaises(rpm.RPMError, rpm.Overlay, self.locs,
                          locality=(1.0, 0.0))
        self.assertRaises(rpm.RPMError, rpm.Overlay,
                          [self.locs[0], self.locs[0]])
        self.assertRaises(rpm.RPMError, self.overlay.sample,
                          rpm.seeded_rng(0), 'nope')


class DiscoverTest(testtools.TestCase):
    """Alg. 1: urgent events take the first round's best peer, others
    collect a candidate per round up to MaxTTL.
    """

    def setUp(self):
        super().setUp()
        self.overlay = rpm.Overlay(_tree(), k=3)
        self.seen = []

    def rank_by_name(self, names):
        self.seen.append(list(names))
        best = min(names)
        return best, float(sum(map(ord, best)) % 97)

    def test_urgent_uses_one_round(self):
        got = rpm.discover(rpm.seeded_rng(0), self.overlay, 'c0g0h0',
                           self.rank_by_name, urgent=True, max_ttl=3)
        self.assertEqual(1, got.rounds)
        self.assertEqual(1, len(self.seen))
        self.assertEqual(min(self.seen[0]), got.best)

    def test_non_urgent_runs_max_ttl_rounds_and_keeps_the_best(self):
        got = rpm.discover(rpm.seeded_rng(0), self.overlay, 'c0g0h0',
                           self.rank_by_name, urgent=False, max_ttl=3)
        self.assertEqual(4, got.rounds)
        self.assertEqual(4, len(got.candidates))
        self.assertEqual(min(c[1] for c in got.candidates), got.score)
        self.assertIn((got.best, got.score), got.candidates)

    def test_nothing_found_is_pending_at_max_ttl(self):
        got = rpm.discover(rpm.seeded_rng(0), self.overlay, 'c0g0h0',
                           lambda names: None, urgent=True, max_ttl=2)
        self.assertIsNone(got.best)
        self.assertEqual(3, got.rounds)

    def test_empty_rounds_age_the_event(self):
        answers = iter([None, ('x', 0.5), None, None])
        got = rpm.discover(rpm.seeded_rng(0), self.overlay, 'c0g0h0',
                           lambda names: next(answers), urgent=False,
                           max_ttl=2)
        # round 1 nothing (life 1), round 2 candidate (life 2), round 3
        # nothing at MaxTTL: the candidate is placed.
        self.assertEqual(('x', 0.5, 3), got[:3])
