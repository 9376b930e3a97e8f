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
"""diehard-tables34: Paper VI §5.2's claims on Tables 3 and 4 judged over
topologies by the verdicts rules, on made-up per-topology rows.
"""

import testtools

from opie_sched.simulator import diehard_capacity_models as dcm
from opie_sched.simulator import verdicts

NOISE = [0, 1, -1, 0, 1, -1, 0, 1, -1, 0]


def _rows(hours, extra=None):
    """Per-topology rows like the thesis' table at ``hours``."""
    paper = dcm.TABLES34[hours]
    out = {}
    for alg in dcm.ROWS:
        n, aff, s = paper[alg.split('-')[0]]
        rows = []
        for i, e in enumerate(NOISE):
            row = {'extra': n + e * 0.5, 'affinity': aff + 10 * e,
                   'reliability': s, 'met': True}
            if alg == 'hrf':
                row['s_at_paper_n'] = (0.9995 if hours == 80.0
                                       else 0.998) + 1e-5 * e
            rows.append(row)
        out[alg] = rows
    for (alg, key), values in (extra or {}).items():
        for row, value in zip(out[alg], values):
            row[key] = value
    return out


def _by_name(found):
    return {v.claim.name: v for v in found}


class ClaimsTest(testtools.TestCase):

    def test_thesis_like_rows_hold_every_claim(self):
        found = dcm.claims({80.0: _rows(80.0), 168.0: _rows(168.0)})
        self.assertEqual([], [(v.claim.name, v.verdict) for v in found
                              if v.verdict != verdicts.HOLDS])
        self.assertEqual({dcm.SCENARIO: {'holds': 13, 'fails': 0,
                                         'undecided': 0}},
                         verdicts.tally(found))

    def test_verdicts_follow_the_values(self):
        # at 80 h DH needs 16 (Prop 12): the direction claim fails, DH's
        # n is outside its band; HRF at n = 0 below S_min on every
        # topology fails; at 168 h HRF's S straddles S_min: undecided
        dh = [16.0] * 10
        rows80 = _rows(80.0, {('diehard', 'extra'): dh,
                              ('hrf', 's_at_paper_n'): [0.9985] * 10})
        rows168 = _rows(168.0, {('hrf', 's_at_paper_n'): [
            0.999 + 1e-4 * e for e in (1, -1, 2, -2, 0, 1, -1, 2, -2,
                                       0.5)]})
        found = _by_name(dcm.claims({80.0: rows80, 168.0: rows168}))
        self.assertEqual(verdicts.FAILS, found[
            'T=80 h: Proportional needs more extra tasks than DH'].verdict)
        self.assertEqual(verdicts.FAILS, found[
            'T=80 h: DH extra tasks n as the table'].verdict)
        self.assertEqual(verdicts.FAILS, found[
            'T=80 h: HRF with n = 0 meets S_min (S - S_min > 0)'].verdict)
        self.assertEqual(verdicts.UNDECIDED, found[
            'T=168 h: HRF with n = 25 misses S_min (S - S_min < 0)']
            .verdict)
        # 16 at 80 h, ~18 at 168 h: still more at 168 h
        longer = found['DH needs more extra tasks at 168 h than at 80 h']
        self.assertEqual(verdicts.HOLDS, longer.verdict)
        self.assertAlmostEqual(2.0 / 16.0, longer.effect)

    def test_the_literal_trim_row_is_judged_when_asked(self):
        rows80 = _rows(80.0, {('diehard', 'extra'): [16.0] * 10})
        rows168 = _rows(168.0)
        even = _by_name(dcm.claims({80.0: rows80, 168.0: rows168}))
        lit = _by_name(dcm.claims({80.0: rows80, 168.0: rows168},
                                  dh='diehard-literal'))
        name = 'T=80 h: DH extra tasks n as the table'
        self.assertEqual(verdicts.FAILS, even[name].verdict)
        self.assertEqual(verdicts.HOLDS, lit[name].verdict)


class ExperimentTest(testtools.TestCase):

    def test_reduced(self):
        result = dcm.experiment(reduced=True, seed=42)
        self.assertEqual([s[0] for s in dcm.SETTINGS],
                         [s['label'] for s in result['settings']])
        judged = result['settings'][0]
        self.assertEqual(judged['verdicts'],
                         {c['claim']: c['verdict']
                          for c in result['claims']})
        self.assertEqual(13, sum(result['tally'].values()))
        for c in result['claims']:
            self.assertEqual(2, c['n'])
        text = dcm.report(result)
        self.assertIn('diehard-tables34: %d hold, %d fail, %d undecided '
                      '(of 13 claims, each counted once)'
                      % tuple(result['tally'][k]
                              for k in verdicts.VERDICTS), text)
        self.assertIn('The thesis on these choices:', text)
