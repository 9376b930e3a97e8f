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
"""rpm-vs-ffd: §6.1's claims judged over seeds by the verdicts rules.

The claims logic is checked on made-up per-seed runs (no simulation):
each claim's verdict follows the direction of the per-seed values, an
interval straddling the reference leaves it undecided, each claim is
counted once. One reduced experiment checks the wiring.
"""

import re

import testtools

from opie_sched.simulator import rpm_vs_ffd as rvf
from opie_sched.simulator import verdicts

SEEDS = 10
#: Per-seed noise, the same for both arms' made-up runs.
NOISE = [0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 1.5, -1.5, 0.0]


def _run(i, **values):
    base = {'active_servers': 100.0, 'avg_cpu': 0.5, 'avg_mem': 0.5,
            'triggers': 400.0, 'migrations': 200.0,
            'service_migrations': 100.0, 'service_data_gb': 3000.0,
            'data_transfer_gb': 4000.0, 'batch_data_gb': 1000.0,
            'unresolved': 20.0, 'overload': 3.0, 'unresolved_overload': 0.0,
            'rejected': 10.0, 'data_per_trigger_gb': 12.0}
    out = {k: v + NOISE[i] * (0.001 if k.startswith('avg') else 1.0)
           for k, v in base.items()}
    out['unresolved_overload'] = 0.0
    for key, value in values.items():
        out[key] = value(i) if callable(value) else value
    return out


def _paper_like():
    """FFD-sum and RPM runs in which every claim of §6.1 holds."""
    ffd = [_run(i) for i in range(SEEDS)]
    rpm = [_run(i, active_servers=lambda i: 75.0 + NOISE[i],
                avg_cpu=0.6, avg_mem=lambda i: 0.6 + 0.001 * NOISE[i],
                triggers=lambda i: ffd[i]['triggers'] * 0.41,
                migrations=70.0, service_migrations=lambda i: 5 + NOISE[i],
                service_data_gb=300.0, batch_data_gb=1500.0,
                data_transfer_gb=1800.0, unresolved=2.0,
                overload=lambda i: 8.0 + NOISE[i], rejected=5.0)
           for i in range(SEEDS)]
    lo = [dict(r, triggers=r['triggers'] * 2, data_per_trigger_gb=12.2)
          for r in rpm]
    hi = [dict(r, triggers=r['triggers'] * 0.6, data_per_trigger_gb=12.5)
          for r in rpm]
    return {'ffd': ffd, 'rpm': rpm, 'rpm-sb0.1': lo, 'rpm-sb0.6': hi}


def _by_name(found):
    return {v.claim.name: v for v in found}


class ClaimsTest(testtools.TestCase):

    def test_every_claim_holds_on_paper_like_runs(self):
        found = rvf.claims(_paper_like())
        bad = [(v.claim.name, v.verdict, v.reason) for v in found
               if v.verdict != verdicts.HOLDS]
        self.assertEqual([], bad)
        self.assertEqual(17, len(found))
        # each counted once
        self.assertEqual({rvf.SCENARIO: {'holds': 17, 'fails': 0,
                                         'undecided': 0}},
                         verdicts.tally(found))

    def test_opposite_direction_fails(self):
        runs = _paper_like()
        for r, f in zip(runs['rpm'], runs['ffd']):
            r['triggers'] = f['triggers'] + 50.0
            r['service_migrations'] = f['service_migrations'] + 10.0
            r['overload'] = f['overload'] - 2.0
        found = _by_name(rvf.claims(runs))
        self.assertEqual(verdicts.FAILS,
                         found['RPM fewer sub-optimal state triggers']
                         .verdict)
        self.assertEqual(verdicts.FAILS,
                         found['RPM fewer service migrations'].verdict)
        self.assertEqual(verdicts.FAILS,
                         found['RPM more overload triggers'].verdict)
        # the "about 60 %" magnitude: +12.5 % is far outside its band
        mag = [v for n, v in found.items() if n.startswith('triggers, ')]
        self.assertEqual([verdicts.FAILS], [v.verdict for v in mag])
        self.assertGreater(mag[0].estimate.mean, 0)

    def test_straddling_zero_is_undecided(self):
        runs = _paper_like()
        # RPM - FFD-sum = -1 +- 5, alternating: the mean on the paper's
        # side, the interval (+-3.8) across 0
        for i, (r, f) in enumerate(zip(runs['rpm'], runs['ffd'])):
            r['migrations'] = f['migrations'] - 1 + (5.0 if i % 2 else -5.0)
            r['rejected'] = f['rejected'] - 1 + (5.0 if i % 2 else -5.0)
        found = _by_name(rvf.claims(runs))
        for name in ('RPM fewer migrations', 'RPM fewer pending requests'):
            self.assertEqual(verdicts.UNDECIDED, found[name].verdict, name)

    def test_effect_is_relative_to_ffd_sum(self):
        found = _by_name(rvf.claims(_paper_like()))
        v = found['RPM fewer migrations']
        self.assertAlmostEqual(-130.0, v.estimate.mean)
        self.assertAlmostEqual(-130.0 / 200.0, v.effect)
        self.assertEqual('rel. diff', v.effect_kind)
        mag = next(v for n, v in found.items() if n.startswith('triggers'))
        self.assertAlmostEqual(-59.0, mag.estimate.mean)
        self.assertEqual(verdicts.MAGNITUDE, mag.claim.kind)
        self.assertAlmostEqual(rvf.PAPER_TRIGGER_CHANGE, mag.claim.target)

    def test_unresolved_overloads(self):
        runs = _paper_like()
        name = 'RPM resolves every overload trigger'
        runs['rpm'][3]['unresolved_overload'] = 1.0
        # one seed of ten: outside the band, the interval reaches 0
        self.assertEqual(verdicts.UNDECIDED,
                         _by_name(rvf.claims(runs))[name].verdict)
        for r in runs['rpm']:
            r['unresolved_overload'] = 2.0
        self.assertEqual(verdicts.FAILS,
                         _by_name(rvf.claims(runs))[name].verdict)

    def test_batch_share_and_table5(self):
        runs = _paper_like()
        for r in runs['rpm']:
            r['batch_data_gb'] = 0.2 * r['data_transfer_gb']
        for r in runs['rpm-sb0.6']:
            r['data_per_trigger_gb'] = 3.0       # far below 12
            r['triggers'] = 2 * r['triggers']    # rises with the SB ratio
        found = _by_name(rvf.claims(runs))
        self.assertEqual(verdicts.FAILS,
                         found['batch jobs: the bulk of RPM\'s data']
                         .verdict)
        self.assertEqual(verdicts.FAILS, found[
            'RPM data per trigger comparable over SB'].verdict)
        self.assertEqual(verdicts.FAILS, found[
            'RPM triggers fall, SB 0.4 -> 0.6'].verdict)
        self.assertEqual(verdicts.HOLDS, found[
            'RPM triggers fall, SB 0.1 -> 0.4'].verdict)
        # spread: largest deviation from the three's mean
        self.assertAlmostEqual(0.5, rvf._spread([1.0, 2.0, 3.0]))
        self.assertAlmostEqual(1.0, rvf._spread([3.0, 3.0, 0.0]))
        self.assertEqual(0.0, rvf._spread([0.0, 0.0, 0.0]))

    def test_arms_of_different_seeds_are_refused(self):
        runs = _paper_like()
        runs['rpm-sb0.6'] = runs['rpm-sb0.6'][:-1]
        self.assertRaises(ValueError, rvf.claims, runs)


class SettingsTest(testtools.TestCase):

    def test_each_setting_changes_one_choice(self):
        ours = rvf.setting_params('ours')
        self.assertEqual({'load': 'table4', 'discovery': 'local',
                          'ffd_victims': 'volume',
                          'max_ttl': rvf.rpm.MAX_TTL}, ours)
        for name, _, _, paper in rvf.SETTINGS[1:]:
            other = rvf.setting_params(name)
            changed = [k for k in ours if ours[k] != other[k]]
            self.assertEqual(1, len(changed), name)
            self.assertTrue(paper)
        self.assertEqual('local', rvf.setting_params(
            'discovery', 'global')['discovery'])

    def test_rpm_calls_do_not_depend_on_ffd_victims(self):
        planned = rvf.planned_runs(True, [5])
        rpm_calls = {tuple(sorted(kw.items()))
                     for name, arm, _, kw in planned
                     if name in ('ours', 'ffd-planner') and arm == 'rpm'}
        self.assertEqual(1, len(rpm_calls))
        ffd_calls = {tuple(sorted(kw.items()))
                     for name, arm, _, kw in planned
                     if name in ('ours', 'ffd-planner') and arm == 'ffd'}
        self.assertEqual(2, len(ffd_calls))


class ExperimentTest(testtools.TestCase):

    def test_reduced_experiment_and_report(self):
        result = rvf.experiment(reduced=True, seeds=[1, 2],
                                settings=('ours', 'ffd-planner'))
        self.assertEqual([1, 2], result['seeds'])
        self.assertEqual(['ours', 'ffd-planner', 'load-total'],
                         [s['name'] for s in result['settings']])
        names = [c['claim'] for c in result['claims']]
        self.assertEqual(len(names), len(set(names)))
        self.assertEqual(len(names), sum(result['tally'].values()))
        ours = result['settings'][0]
        self.assertEqual(dict(ours['verdicts']),
                         {c['claim']: c['verdict']
                          for c in result['claims']})
        # RPM is the same run in both settings
        self.assertEqual(ours['runs']['rpm'],
                         result['settings'][1]['runs']['rpm'])
        for run in ours['runs']['rpm'] + ours['runs']['ffd']:
            self.assertLessEqual(run['unresolved_overload'],
                                 run['overload'])
            self.assertLessEqual(run['unresolved_overload'],
                                 run['unresolved'])
        text = rvf.report(result)
        tally = re.findall(
            r'^rpm-vs-ffd: (\d+) hold, (\d+) fail, (\d+) undecided \(of '
            r'(\d+) claims, each counted once\)$', text, re.M)
        self.assertEqual([tuple(str(result['tally'][k]) for k in
                                verdicts.VERDICTS) + (str(len(names)),)],
                         tally)
        self.assertIn('Sensitivity', text)
        self.assertIn('The thesis on these choices:', text)
        self.assertIn('(reduced)', text)
        self.assertRaises(ValueError, rvf.experiment, reduced=True,
                          count=0)
