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
"""Tests of the interruption history's survival curve and rates against
counts by hand (opie_sched.services.market.survival)."""

import os

import testtools

from opie_sched.services.market import survival
from tests.unit.services.market import helpers as base
from tests.unit.services.market.planning_helpers import HOUR
from tests.unit.services.market.planning_helpers import life


#: Seven lives, counted by hand below: interrupted after 1, 3, 3 and 6
#: hours; deleted by their owners after 2 and 5 hours; one still running
#: after 7 hours.
LIVES = [life(0, 1, 'interrupted'), life(0, 2, 'deleted'),
         life(1, 4, 'interrupted'), life(2, 5, 'interrupted'),
         life(0, 5, 'deleted'), life(1, 7, 'interrupted'),
         life(3, None, None)]
NOW = 10 * HOUR


class SurvivalTest(testtools.TestCase):

    def test_kaplan_meier_equals_the_count_by_hand(self):
        curve = survival.survival_curve(LIVES, NOW)
        self.assertEqual((7, 4, 3), (curve['servers'],
                                     curve['interruptions'],
                                     curve['censored']))
        # by hand: at 1 h, 1 of 7 at risk interrupted: 6/7; 2 h censored;
        # at 3 h, 2 of 5 at risk: 6/7 * 3/5; 5 h censored; at 6 h, 1 of
        # 2: 6/7 * 3/5 * 1/2; 7 h (still running) censored.
        s1, s3, s6 = 6 / 7, 6 / 7 * 3 / 5, 6 / 7 * 3 / 5 / 2
        got = {p['seconds'] / HOUR: p['survival'] for p in curve['points']}
        want = {1: s1, 2: s1, 3: s3, 5: s3, 6: s6, 7: s6}
        self.assertEqual(sorted(want), sorted(got))
        for t in want:
            self.assertAlmostEqual(want[t], got[t], places=12)
        self.assertEqual(6 * HOUR, curve['median_seconds'])
        for p in curve['points']:
            self.assertLessEqual(p['low'] or 0, p['survival'])

    def test_no_interruption_and_no_server(self):
        curve = survival.survival_curve([life(0, 2, 'deleted')], NOW)
        self.assertEqual([1.0], [p['survival'] for p in curve['points']])
        self.assertEqual([], survival.survival_curve([], NOW)['points'])

    def test_rates_per_period_by_hand(self):
        rows = survival.interruption_rates(LIVES, 0, 8 * HOUR, 4 * HOUR)
        # [0, 4 h): all 7 ran; interrupted at 1 h and 3 h (the 3 h ones:
        # life 3 ends at 4 h, in the next period) -> 1 h and ... by hand:
        # lives ending interrupted in [0, 4): only the one at 1 h.
        # [4, 8): lives that ran: 2..7 minus the one deleted at 2 h and
        # the one interrupted at 1 h -> 5; interrupted at 4, 5, 7 h -> 3.
        self.assertEqual([(7, 1), (5, 3)],
                         [(r['servers'], r['interruptions']) for r in rows])
        self.assertEqual([1 / 7, 3 / 5], [r['rate'] for r in rows])
        # server-hours in [0, 4): 1 + 2 + 3 + 2 + 4 + 3 + 1
        self.assertEqual(16.0, rows[0]['server_hours'])
        self.assertRaises(ValueError, survival.interruption_rates, LIVES,
                          0, 1, 0)

    def test_plot_writes_a_png(self):
        doc = {'flavor': 'spot.small', 'period_seconds': 14400,
               'survival': survival.survival_curve(LIVES, NOW),
               'rates': [dict(r, period_start='2026-11-28T00:00:00Z')
                         for r in survival.interruption_rates(
                             LIVES, 0, 8 * HOUR, 4 * HOUR)]}
        path = os.path.join(self.useFixture(
            base.fixtures.TempDir()).path, 'h.png')
        survival.plot(doc, path)
        with open(path, 'rb') as f:
            self.assertEqual(b'\x89PNG', f.read(4))
