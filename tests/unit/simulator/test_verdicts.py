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
"""Tests of the claims-and-verdict rules (opie_sched.simulator.verdicts).

Run with ``stestr run tests.unit.simulator.test_verdicts``.
"""

import math

import testtools

from opie_sched.simulator import verdicts as vd


def _dir(name='x lower', sign=-1, reference=0.0):
    return vd.Claim('s', name, 'lower', 'Table 1', vd.DIRECTION, sign=sign,
                    reference=reference)


def _mag(band=None, target=10.0, name='x ~10'):
    return vd.Claim('s', name, '10', 'Table 1', vd.MAGNITUDE,
                    target=target, band=band)


class EstimateTest(testtools.TestCase):

    def test_t_interval(self):
        # mean 2, sd 1, n 4: half width t(0.975, 3) * 1 / 2 = 1.5912
        e = vd.estimate([1.0, 2.0, 2.0, 3.0])
        self.assertEqual(2.0, e.mean)
        self.assertAlmostEqual(math.sqrt(2.0 / 3.0), e.sd)
        half = 3.182446305284263 * e.sd / 2.0
        self.assertAlmostEqual(2.0 - half, e.low)
        self.assertAlmostEqual(2.0 + half, e.high)

    def test_one_value_has_no_interval(self):
        e = vd.estimate([5.0])
        self.assertEqual((1, 5.0, None, None), (e.n, e.mean, e.low, e.high))

    def test_bad_values(self):
        self.assertRaises(vd.ClaimError, vd.estimate, [])
        self.assertRaises(vd.ClaimError, vd.estimate, [1.0, float('nan')])


class DirectionTest(testtools.TestCase):

    def test_interval_below_zero_holds_for_lower(self):
        v = vd.judge(_dir(), [-3.0, -2.0, -4.0, -3.0])
        self.assertEqual(vd.HOLDS, v.verdict)

    def test_interval_above_zero_fails_for_lower(self):
        v = vd.judge(_dir(), [3.0, 2.0, 4.0, 3.0])
        self.assertEqual(vd.FAILS, v.verdict)

    def test_interval_straddling_zero_is_undecided(self):
        # mean -0.5 is on the paper's side, but the interval holds 0
        v = vd.judge(_dir(), [-2.0, 1.0, -1.5, 0.5])
        self.assertLess(v.estimate.mean, 0)
        self.assertLess(v.estimate.low, 0)
        self.assertGreater(v.estimate.high, 0)
        self.assertEqual(vd.UNDECIDED, v.verdict)

    def test_every_seed_at_the_reference_is_undecided(self):
        self.assertEqual(vd.UNDECIDED,
                         vd.judge(_dir(), [0.0, 0.0, 0.0]).verdict)

    def test_one_seed_is_undecided(self):
        self.assertEqual(vd.UNDECIDED, vd.judge(_dir(), [-5.0]).verdict)

    def test_bound_uses_the_reference(self):
        claim = _dir('ratio >= 0.75', sign=1, reference=0.75)
        self.assertEqual(vd.HOLDS,
                         vd.judge(claim, [0.80, 0.81, 0.82]).verdict)
        self.assertEqual(vd.FAILS,
                         vd.judge(claim, [0.60, 0.61, 0.62]).verdict)
        v = vd.judge(claim, [0.6, 0.9, 0.8])
        self.assertEqual(vd.UNDECIDED, v.verdict)
        # Cohen's d against the reference
        self.assertAlmostEqual((v.estimate.mean - 0.75) / v.estimate.sd,
                               v.effect)
        self.assertEqual('Cohen d', v.effect_kind)

    def test_relative_effect_against_the_baseline(self):
        v = vd.judge(_dir(), [-2.0, -2.0, -2.0], baseline=[20.0, 20.0, 20.0])
        self.assertAlmostEqual(-0.1, v.effect)
        self.assertEqual('rel. diff', v.effect_kind)
        # sd 0: the point interval excludes 0
        self.assertEqual(vd.HOLDS, v.verdict)


class MagnitudeTest(testtools.TestCase):

    def test_default_band_is_twenty_percent(self):
        self.assertEqual((8.0, 12.0), _mag().band)

    def test_mean_in_band_holds(self):
        v = vd.judge(_mag(), [11.5, 11.9, 11.0])
        self.assertEqual(vd.HOLDS, v.verdict)
        self.assertAlmostEqual((v.estimate.mean - 10.0) / 10.0, v.effect)

    def test_interval_outside_band_fails(self):
        self.assertEqual(vd.FAILS,
                         vd.judge(_mag(), [7.0, 7.2, 7.1, 6.9]).verdict)
        self.assertEqual(vd.FAILS,
                         vd.judge(_mag((1.5, 2.5), 2.0),
                                  [2.7, 2.75, 2.8]).verdict)

    def test_mean_outside_interval_reaching_band_is_undecided(self):
        v = vd.judge(_mag(), [6.0, 9.0, 7.0, 8.5])
        self.assertLess(v.estimate.mean, 8.0)
        self.assertGreater(v.estimate.high, 8.0)
        self.assertEqual(vd.UNDECIDED, v.verdict)

    def test_bad_claims(self):
        self.assertRaises(vd.ClaimError, vd.Claim, 's', 'c', 'p', 'src',
                          vd.MAGNITUDE)
        self.assertRaises(vd.ClaimError, vd.Claim, 's', 'c', 'p', 'src',
                          vd.MAGNITUDE, target=1.0, band=(2.0, 1.0))
        self.assertRaises(vd.ClaimError, vd.Claim, 's', 'c', 'p', 'src',
                          'vibes')
        self.assertRaises(vd.ClaimError, vd.Claim, 's', 'c', 'p', 'src',
                          vd.DIRECTION, sign=0)


class TallyTest(testtools.TestCase):

    def test_tally_counts_each_claim_once(self):
        vs = [vd.judge(_dir('a'), [-1.0, -1.1]),
              vd.judge(_dir('b'), [1.0, 1.1]),
              vd.judge(_dir('c'), [-1.0, 1.0]),
              vd.judge(_mag(name='d'), [10.0, 10.1])]
        self.assertEqual({'s': {'holds': 2, 'fails': 1, 'undecided': 1}},
                         {k: dict(v) for k, v in vd.tally(vs).items()})
        self.assertIn('s: 2 hold, 1 fail, 1 undecided (of 4 claims',
                      vd.tally_text(vs))

    def test_a_claim_judged_twice_is_refused(self):
        vs = [vd.judge(_dir('a'), [-1.0, -1.1]),
              vd.judge(_dir('a'), [-1.0, -1.2])]
        self.assertRaises(vd.ClaimError, vd.tally, vs)

    def test_table_shows_paper_interval_effect_and_verdict(self):
        text = vd.claims_table([vd.judge(_mag(), [11.0, 11.0, 11.0])])
        self.assertIn('10 (band 8.00..12.0)', text)
        self.assertIn('11.0 [11.0, 11.0]', text)
        self.assertIn('+10.0 % vs paper', text)
        self.assertIn('holds', text)
