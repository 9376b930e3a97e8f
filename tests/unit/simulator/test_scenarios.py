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
"""Tests of the named paper scenarios (opie_sched.simulator.scenarios),
run in their reduced forms.

Run with ``stestr run tests.unit.simulator.test_scenarios``.
"""

import io
import json
import os
import re

import fixtures
import testtools

from opie_sched.cmd import cli
from opie_sched.cmd import simulate
from opie_sched import flavormix
from opie_sched.rpm import model as rpm_model
from opie_sched.simulator import diehard_redundancy as redundancy
from opie_sched.simulator import preemption_latency as latency
from opie_sched.simulator import repacking_costs as costs
from opie_sched.simulator import repacking_single
from opie_sched.simulator import repacking_strategies
from opie_sched.simulator import rpm_vs_ffd as rvf
from opie_sched.simulator import rpm_vs_ffd_timeline as timeline
from opie_sched.simulator import rpm_weights
from opie_sched.simulator import scenarios
from opie_sched.simulator import themis
from opie_sched.workload import generator


def _row(result, k, alg):
    return next(r for r in result['rows']
                if r['K'] == k and r['algorithm'] == alg)


class RegistryTest(testtools.TestCase):

    def test_names_wired_into_the_cli(self):
        for name in scenarios.SCENARIOS:
            self.assertIn(name, simulate.SCENARIOS)
        self.assertIn('nasa-backfill', simulate.SCENARIOS)

    def test_unknown_name(self):
        self.assertRaises(KeyError, scenarios.run, 'no-such-scenario')

    def test_the_names_users_type_are_kept(self):
        # modules are named by what they compute; the scenario names of
        # ``opie-sched simulate --scenario`` stay what users type
        self.assertEqual(
            ['diehard-table2', 'repacking-tables', 'themis-value',
             'rpm-vs-ffd', 'diehard-tables34', 'repacking-tables45',
             'preemption-latency', 'p2p-consolidation',
             'gossip-redistribution', 'merkat-fig6', 'themis-fig6',
             'repacking-single-type', 'rpm-weights', 'rpm-fig3',
             'gossip-fig5', 'headroom-tradeoff', 'score-replay'],
            list(scenarios.SCENARIOS))

    def test_every_scenario_names_its_paper_source(self):
        self.assertEqual(list(scenarios.SCENARIOS), list(scenarios.SOURCES))

    def test_no_module_is_named_after_a_figure_or_table(self):
        from opie_sched import simulator
        here = os.path.dirname(simulator.__file__)
        named = [f for f in os.listdir(here)
                 if re.search(r'(fig|table)s?\d', f)]
        self.assertEqual([], named)

    def test_cli_runs_a_reduced_scenario(self):
        out = self.useFixture(fixtures.MonkeyPatch('sys.stdout',
                                                   io.StringIO())).new_value
        rc = cli.main(['simulate', '--scenario', 'diehard-table2',
                       '--reduced', '--format', 'json'])
        self.assertEqual(0, rc)
        data = json.loads(out.getvalue())
        self.assertEqual('diehard-table2', data['scenario'])
        self.assertTrue(data['reduced'])
        self.assertIn('runtime_s', data)

    def test_cli_text(self):
        out = self.useFixture(fixtures.MonkeyPatch('sys.stdout',
                                                   io.StringIO())).new_value
        rc = cli.main(['simulate', '--scenario', 'diehard-table2',
                       '--reduced'])
        self.assertEqual(0, rc)
        self.assertIn('Table 2', out.getvalue())
        self.assertRegex(out.getvalue(), r'\| runtime_s +\| \d+\.\d ')
        # nested fields only with --long (json and yaml always)
        self.assertNotIn('| rows ', out.getvalue())
        out.seek(0)
        out.truncate()
        rc = cli.main(['simulate', '--scenario', 'diehard-table2',
                       '--reduced', '--long'])
        self.assertEqual(0, rc)
        self.assertIn('| rows ', out.getvalue())

    def test_cli_discovery(self):
        out = self.useFixture(fixtures.MonkeyPatch('sys.stdout',
                                                   io.StringIO())).new_value
        err = self.useFixture(fixtures.MonkeyPatch('sys.stderr',
                                                   io.StringIO())).new_value
        rc = cli.main(['simulate', '--scenario', 'rpm-vs-ffd', '--reduced',
                       '--discovery', 'global', '--seed-count', '1',
                       '-f', 'json'])
        self.assertEqual(0, rc, err.getvalue())
        data = json.loads(out.getvalue())
        self.assertEqual('global', data['discovery'])
        self.assertIn('global', data['report'])
        self.assertEqual(2, cli.main(['simulate', '--scenario',
                                      'diehard-table2', '--reduced',
                                      '--discovery', 'global']))
        self.assertIn('opie-sched: error: --discovery is for --scenario '
                      'rpm-vs-ffd', err.getvalue())


class DiehardRedundancyTest(testtools.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.result, cls.text = redundancy.diehard_redundancy(reduced=True,
                                                             seed=3)

    def test_every_algorithm_meets_the_target(self):
        for row in self.result['rows']:
            self.assertTrue(row['met_all'], row)
            self.assertGreaterEqual(row['reliability'],
                                    redundancy.DIEHARD_TARGET)

    def test_diehard_needs_no_more_than_the_baselines(self):
        dh = _row(self.result, 500, 'diehard')
        prop = _row(self.result, 500, 'proportional')
        hrf = _row(self.result, 500, 'hrf')
        self.assertLessEqual(dh['extra_max'], prop['extra_min'])
        self.assertLessEqual(prop['extra'], hrf['extra'])
        self.assertLess(dh['affinity'], prop['affinity'])
        self.assertLess(prop['affinity'], hrf['affinity'])

    def test_literal_trim_reading(self):
        lit = _row(self.result, 500, 'diehard-literal')
        dh = _row(self.result, 500, 'diehard')
        self.assertTrue(lit['met_all'])
        self.assertGreaterEqual(lit['reliability'], redundancy.DIEHARD_TARGET)
        # emptying the least reliable domains concentrates the tasks:
        # never a lower affinity than the within-one-task spread at the
        # same n
        if lit['extra'] == dh['extra']:
            self.assertGreater(lit['affinity'], dh['affinity'])
        self.assertIn('DH (literal trim)', self.text)
        self.assertIn('Our only tuning', self.text)

    def test_table1_reliability_grows_and_saturates(self):
        rows = self.result['table1']
        self.assertEqual(list(redundancy.DIEHARD_TABLE1),
                         [r['n'] for r in rows])
        ours = [r['ours'] for r in rows]
        # more extra tasks never lower S; the last steps gain < 1e-5
        self.assertEqual(sorted(ours), ours)
        self.assertLess(ours[-1] - ours[-2], 1e-5)
        self.assertGreater(ours[2] - ours[0], 0.01)
        self.assertIn('Table 1', self.text)

    def test_claims_judged_once_over_the_seeds(self):
        claims = self.result['claims']
        # 4 direction + 4 magnitude claims per K, each counted once
        self.assertEqual(8, len(claims))
        self.assertEqual(len(claims), len({c['claim'] for c in claims}))
        self.assertEqual({'diehard-table2': {
            'holds': sum(c['verdict'] == 'holds' for c in claims),
            'fails': sum(c['verdict'] == 'fails' for c in claims),
            'undecided': sum(c['verdict'] == 'undecided' for c in claims)}},
            self.result['tally'])
        by = {c['claim']: c for c in claims}
        fewer = by['K=500: DH needs fewer extra tasks than Proportional '
                   '(n_DH - n_Prop < 0)']
        self.assertEqual(2, fewer['n'])
        dh = _row(self.result, 500, 'diehard')
        prop = _row(self.result, 500, 'proportional')
        self.assertAlmostEqual(dh['extra'] - prop['extra'], fewer['mean'])
        # DH needs 18 on every seed: a point interval, inside the band
        n = by['K=500: DH extra tasks n as Table 2']
        self.assertEqual(18.0, n['mean'])
        self.assertEqual('holds', n['verdict'])
        self.assertIn('ours: mean [95 % CI]', self.text)
        self.assertIn('diehard-table2: %d hold' % self.result['tally'][
            'diehard-table2']['holds'], self.text)

    def test_wiring_sensitivity(self):
        sens = {r['setting']: r for r in self.result['sensitivity']}
        self.assertEqual(['calibrated', 'four single PDUs',
                          'four redundant pairs',
                          'calibrated, literal trim'], list(sens))
        # the calibrated row is the main table's
        self.assertEqual(_row(self.result, 500, 'diehard')['extra'],
                         sens['calibrated']['dh_n'])
        # one PDU per power domain: covering a PDU failure costs far
        # more extra tasks than the calibrated wiring
        self.assertGreater(sens['four single PDUs']['dh_n'],
                           3 * sens['calibrated']['dh_n'])
        self.assertIn('3 power nodes', self.text)
        self.assertIn('(K+n-1)(K+n-2)/2', self.text)

    def test_hrf_misses_the_target_at_proportionals_n(self):
        hrf = _row(self.result, 500, 'hrf')
        self.assertLess(hrf['reliability_at_proportional_n'],
                        redundancy.DIEHARD_TARGET)

    def test_text_quotes_the_thesis(self):
        self.assertIn('Table 2', self.text)
        # Thesis K=500 numbers: DH 18, Proportional 23, HRF 25 (137026).
        for number in ('18', '23', '25', '137026'):
            self.assertIn(number, self.text)


class RepackingCostsTest(testtools.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.result, cls.text = costs.repacking_costs(reduced=True,
                                                        seed=1)
        cls.cost = {(c['workload'], c['app'], c['reconfig'],
                     c['strategy']): c for c in cls.result['costs']}

    def test_all_runs_present(self):
        self.assertEqual(4 * 2 * 2 * 5, len(self.cost))
        self.assertEqual(set(costs.SERIES),
                         {c['workload'] for c in self.result['costs']})

    def test_repacked_cost_no_more_than_plain(self):
        for (wl, app, rc, name), c in self.cost.items():
            if name.endswith('_Repacked'):
                plain = self.cost[wl, app, rc, name[:-len('_Repacked')]]
                self.assertLessEqual(c['total_cost'],
                                     plain['total_cost'] + 1e-9,
                                     (wl, app, rc, name))

    def test_expensive_reconfiguration_costs_more(self):
        for (wl, app, rc, name), c in self.cost.items():
            if rc == 'cheap' and name != 'S_base' and name != 'S_delta':
                other = self.cost[wl, app, 'expensive', name]
                self.assertGreaterEqual(other['total_cost'],
                                        c['total_cost'] - 1e-9)
            if name in ('S_base', 'S_delta'):
                self.assertEqual(0, c['reconfigurations'])

    def test_savings_positive_and_larger_for_app_b(self):
        by = {(s['workload'], s['app'], s['reconfig']): s
              for s in self.result['savings']}
        for key, s in by.items():
            self.assertGreater(s['S_delta_Repacked_vs_S_delta'], 0, key)
        # Paper V §6.4: app B (lower price/performance of large VMs)
        # benefits more.
        for wl in costs.SERIES:
            for rc in ('cheap', 'expensive'):
                self.assertGreater(
                    by[wl, 'B', rc]['S_delta_Repacked_vs_S_delta'],
                    by[wl, 'A', rc]['S_delta_Repacked_vs_S_delta'])

    def test_text_quotes_table6(self):
        self.assertIn('35.51', self.text)
        self.assertIn('Table 6', self.text)


class RepackingSingleTypeTest(testtools.TestCase):
    """Paper V §6.2's one-type repack (``repacking-single-type``)."""

    TYPES = [{'name': 'a', 'price': 1, 'capacity': 10},
             {'name': 'b', 'price': 3, 'capacity': 40}]

    def test_one_type_repack_by_hand(self):
        # d = 10 h, K = 1 %, repacking time 1 h, 1-h steps, base 'a'.
        # t0 load 10: one a (1/h). t1 load 40: S_base adds 3 a (4/h);
        # the cheapest one-type cover is one b (3/h), R = 3 * 1 h,
        # gain 1 - (30 + 3) / 40 > K: switch, b is the base now. t2: keep.
        # t3 load 50: add one b (the new base, 6/h); five a (5/h), R = 5,
        # gain 1 - 55 / 60 > K: switch. Total 1 + 3 + 3 + 3 + 5 + 5.
        sim = repacking_strategies.make_strategy(
            'S_base_Repacked_single', flavormix.vm_types(self.TYPES),
            d=10, K=0.01, repack_time=1, base='a').run([10, 40, 40, 50], 1)
        self.assertEqual([{'a': 1}, {'b': 1}, {'b': 1}, {'a': 5}],
                         sim.sets)
        self.assertEqual(2, sim.reconfigurations)
        self.assertEqual([0, 3, 0, 5], sim.reconfig_costs)
        self.assertEqual(20, sim.total_cost)

    def test_judge_and_verdicts_over_every_row(self):
        result, text = repacking_single.repacking_single_type(
            reduced=True, seed=1)
        self.assertEqual(4 * 2 * 2, len(result['rows']))
        self.assertEqual(4 * 2 * 2 * len(repacking_single.CLAIMS),
                         len(result['verdicts']))
        for row in result['rows']:
            self.assertEqual(repacking_single.judge(row['runs']),
                             row['claims'])
            # one instance type at the end of every run
            self.assertEqual(1, len(
                row['runs'][repacking_single.SINGLE]['last_set']), row)
        n = sum(v['holds'] for v in result['verdicts'])
        self.assertIn('(%d of %d hold)' % (n, len(result['verdicts'])),
                      text)

    def test_judge(self):
        def run(cost, n, r):
            return {'total_cost': cost, 'reconfigurations': n,
                    'reconfig_cost': r}
        runs = {'S_base': run(100, 0, 0), 'S_base_Repacked': run(80, 10, 5),
                'S_delta_Repacked': run(95, 3, 1),
                'S_base_Repacked_single': run(90, 4, 8)}
        self.assertEqual({'benefit': True, 'low_vs_base_rep': True,
                          'low_vs_delta_rep': False, 'dear_r': True,
                          'not_comp_base_rep': True,
                          'not_comp_delta_rep': False},
                         repacking_single.judge(runs))
        runs['S_base_Repacked_single'] = run(99, 11, 4)
        self.assertEqual({'benefit': True, 'low_vs_base_rep': False,
                          'low_vs_delta_rep': False, 'dear_r': False,
                          'not_comp_base_rep': True,
                          'not_comp_delta_rep': True},
                         repacking_single.judge(runs))


class ThemisValueTest(testtools.TestCase):
    """The themis-value scenario (opie_sched.simulator.themis; its rules
    are tested in tests.unit.simulator.test_themis).
    """

    def test_registered(self):
        self.assertIs(themis.themis_value,
                      scenarios.SCENARIOS['themis-value'])

    def test_skips_without_the_trace(self):
        empty = self.useFixture(fixtures.TempDir()).path
        result, text = themis.themis_value(reduced=True, directory=empty)
        self.assertTrue(result['skipped'])
        self.assertIn(themis.TRACE, result['reason'])
        self.assertIn('skipped', text)

    def test_reduced_on_the_trace(self):
        try:
            themis.trace_path()
        except themis.TraceMissing as exc:
            self.skipTest(str(exc))
        result, text = themis.themis_value(reduced=True, seed=0)
        self.assertFalse(result['skipped'])
        self.assertEqual(2, len(result['rows']))
        for row in result['rows']:
            for policy in ('market', 'fcfs', 'edf', 'edf_star'):
                self.assertLessEqual(row[policy]['value'],
                                     row[policy]['max_value'] + 1e-6)
                self.assertLessEqual(row[policy]['value_job'],
                                     row[policy]['value'] + 1e-6)
            # EDF* never does worse than EDF on met deadlines here: it
            # only gives up jobs that cannot finish
            self.assertGreaterEqual(row['edf_star']['met'],
                                    row['edf']['met'])
            self.assertAlmostEqual(
                row['market']['value_job'] / row['edf_star']['value_job'],
                row['market_vs_edf_star_job'])
        # verdicts on every row: 2 readings x (3 or 4 claims) per factor
        self.assertEqual(2 * 4 + 2 * 3, len(result['fig5b_verdicts']))
        # Fig. 5(b) over 2 seeds: 4 claims at high load, 2 at light load,
        # each once; the first seed's rows are the table's
        claims = result['fig5b_claims']
        self.assertEqual([0, 1], result['claim_seeds'])
        self.assertEqual(6, len({c['claim'] for c in claims}))
        by = {c['claim']: c for c in claims}
        ratio = by['high load (0.1): market/FCFS about 2']
        self.assertEqual(2, ratio['n'])
        self.assertAlmostEqual(result['rows'][0]['market_vs_fcfs'],
                               ratio['values'][0])
        self.assertEqual(sum(result['tally'][
            themis.FIG5B_SCENARIO].values()), len(claims))
        sens = result['fig5b_sensitivity']
        self.assertEqual([x[0] for x in themis.FIG5B_SETTINGS],
                         [r['setting'] for r in sens])
        self.assertEqual('%.2f %s' % (sum(ratio['values']) / 2,
                                      ratio['verdict']),
                         sens[0]['shown'][ratio['claim']])
        # the budget rule's setting reran every policy under its budgets
        self.assertIn('budget: B = 60 / deadline', text)
        self.assertIn('shares per host, 240 x 1 CPU', text)
        self.assertEqual([0.1, 1.0], [r['factor']
                                      for r in result['fig5b_by_factor']])
        # the trace's span is computed, not quoted
        self.assertGreater(result['span_days'], 0)
        self.assertIn('%.1f days' % result['span_days'], text)
        mk = result['merkat']
        if not mk.get('skipped'):
            self.assertEqual([1.0, 0.2], [c['factor'] for c in mk['curve']])
            self.assertLess(mk['curve'][0]['offered_load'],
                            mk['curve'][1]['offered_load'])
        high = result['rows'][0]
        self.assertEqual(0.1, high['factor'])
        # Under high load the market and EDF beat FCFS (HPCC'12 Fig. 5).
        self.assertGreater(high['market']['value'], high['fcfs']['value'])
        self.assertGreater(high['edf']['value'], high['fcfs']['value'])
        self.assertIn('market/FCFS', text)
        self.assertIn('Merkat', text)
        # Fig. 5(c) / SLO Fig. 3: our counters, every verdict printed
        for row in result['rows']:
            st, op = row['market_stats'], row['vm_operations']
            self.assertAlmostEqual(st.get('suspended_vms', 0) / st['periods'],
                                   op['vms_per_period'])
            self.assertEqual(st.get('suspends', 0) + st.get('resumes', 0),
                             op['job_ops'])
            self.assertLessEqual(op['jobs_suspended'], st.get('suspends', 0))
            self.assertLessEqual(op['max_jobs_period'],
                                 op['max_vms_period'])
        ops = result['vm_operation_verdicts']
        self.assertIn('Paper vs ours (%d of %d hold)' % (
            sum(v['holds'] for v in ops), len(ops)), text)
        self.assertIn('%.2f (factor 0.1)' % max(
            r['vm_operations']['vms_per_period'] for r in result['rows']),
            text)


class RepackingStabilityIntervalTest(testtools.TestCase):

    def test_reduced(self):
        result, text = scenarios.run('repacking-tables45', reduced=True)[:2]
        self.assertEqual(4 * 4, len(result['rows']))
        for row in result['rows']:
            self.assertGreaterEqual(row['total_cost'], row['reconfig_cost'])
            self.assertLessEqual(row['unpaid_repacks'],
                                 row['reconfigurations'])
        rows = {(r['workload'], r['reconfig'], r['d_minutes']): r
                for r in result['rows']}
        # Cheap R: d hardly matters; the costs agree within 1 %.
        for wl, short in (('Increase1', 180.0), ('Increase2', 100.0)):
            a = rows[wl, 'cheap', short]['total_cost']
            b = rows[wl, 'cheap', 1000.0]['total_cost']
            self.assertAlmostEqual(a, b, delta=0.01 * b)
        self.assertIn('1209.32', text)
        self.assertEqual({'Increase1', 'Increase2', 'Seasonal1',
                          'Seasonal2'}, set(result['directions']))
        # no noise unless asked for: the text says which
        self.assertIn('no per-step noise', text)
        # experiment apart from report: the saved result is all it needs
        from opie_sched.simulator import repacking_stability_interval as rsi
        self.assertEqual(text, rsi.report(json.loads(json.dumps(result))))
        for row in result['rows']:
            self.assertLessEqual(row['unpaid_repacks'], row['repacks'])

    def test_four_series(self):
        from opie_sched import flavormix
        lengths = {}
        for name in ('Increase1', 'Seasonal1', 'Increase2', 'Seasonal2'):
            demand, step = flavormix.thesis_series(name, seed=3)
            lengths[name] = round(len(demand) * step)
            # smooth: no step changes the load by more than 2 % of the
            # series' peak (2 % noise on every step alone would)
            jumps = [abs(b - a) / float(max(demand))
                     for a, b in zip(demand, demand[1:])]
            self.assertLess(max(jumps), 0.02, name)
        self.assertEqual({'Increase1': 168, 'Seasonal1': 182,
                          'Increase2': 215, 'Seasonal2': 338}, lengths)
        self.assertRaises(flavormix.RepackingError,
                          flavormix.thesis_series, 'Stable3')

    def test_realised_intervals(self):
        from opie_sched import flavormix
        from opie_sched.simulator import repacking_stability_interval as rsi
        from opie_sched.simulator import repacking_strategies
        demand = [1000, 1000, 3000, 3000, 3000, 9000, 9000, 9000]
        strategy = repacking_strategies.make_strategy(
            'S_delta_Repacked', flavormix.thesis_types('B'), d=10.0,
            K=0.0, repack_time=0.0)
        sim = strategy.run(demand, 1.0)
        got = rsi.realised_intervals(sim, strategy)
        self.assertEqual(sim.reconfigurations, len(got))
        self.assertEqual(len(demand) * 60.0,
                         sum(m for m, _ in got) + 60.0 * next(
                             t for t, s in enumerate(sim.sets)
                             if s != sim.sets[0]) if got else 0)


class DiehardCapacityModelsTest(testtools.TestCase):

    def test_reduced(self):
        result, text = scenarios.run('diehard-tables34', reduced=True)[:2]
        self.assertEqual(2, result['runs'])
        rows = {(r['model'], r['hours'], r['algorithm']): r
                for r in result['rows']}
        self.assertEqual(3 * 2 * 5, len(rows))
        # both readings of Alg. 1's trim, computed: emptying the least
        # reliable domains needs fewer extra tasks at 80 h than keeping
        # every domain within one task
        for model in ('free', 'background', 'whole-domain'):
            lit = rows[(model, 80.0, 'diehard-literal')]
            even = rows[(model, 80.0, 'diehard')]
            self.assertLess(lit['extra'], even['extra'])
            self.assertGreater(lit['affinity'], even['affinity'])
        # A domain holding the job: HRF meets S_min with n = 0 at 80 h
        # (thesis Table 3) but not at 168 h with the thesis' n = 25.
        self.assertEqual(0, rows[('whole-domain', 80.0, 'hrf')]['extra'])
        hrf168 = rows[('whole-domain', 168.0, 'hrf')]
        self.assertLess(hrf168['s_at_paper_n'], 0.999)
        self.assertGreater(rows[('background', 80.0, 'hrf')]['extra'], 0)
        for key, row in rows.items():
            if key[2] != 'dual':
                self.assertTrue(row['met_all'])
                self.assertGreaterEqual(row['reliability'], 0.999)
        self.assertIn('Tables 3 and 4', text)
        self.assertIn('124251', text)


class RPMvsFFDTest(testtools.TestCase):

    def test_workload_generator(self):
        vms = generator.thesis_vm_workload(seed=1, hours=2, services=5,
                                           batch_rate_per_min=0.5)
        services = [v for v in vms if v['kind'] == 'service']
        batch = [v for v in vms if v['kind'] == 'batch']
        self.assertEqual(5, len(services))
        self.assertTrue(batch)
        for v in batch:
            self.assertGreaterEqual(v['end'] - v['arrival'], 600 + 60)
            self.assertLessEqual(v['end'] - v['arrival'], 7200 + 1e-9)
            self.assertLess(v['arrival'], 7200)
        self.assertEqual(vms, generator.thesis_vm_workload(
            seed=1, hours=2, services=5, batch_rate_per_min=0.5))

    def test_reduced(self):
        result, text = rvf.rpm_vs_ffd(reduced=True, seed=42,
                                      settings=('ours',))
        self.assertEqual([42, 43, 44], result['seeds'])
        self.assertEqual(list(rvf.LOADS), list(result['loads']))
        total, table4 = (result['loads'][k] for k in rvf.LOADS)
        ours, other = result['settings']
        self.assertEqual(('ours', 'load-total'),
                         (ours['name'], other['name']))
        # the concurrent-load reading offers more requests and keeps
        # more hosts busy
        self.assertGreater(table4['requests'], total['requests'])
        self.assertGreater(
            sum(r['active_servers'] for r in ours['runs']['ffd']),
            sum(r['active_servers'] for r in other['runs']['ffd']))
        # Table 5: one RPM arm per other SB ratio, the 0.4 one is Table
        # 4's run
        self.assertEqual(['ffd', 'rpm', 'rpm-sb0.1', 'rpm-sb0.6'],
                         list(ours['runs']))
        for setting in (ours, other):
            for arm in ('ffd', 'rpm'):
                for run in setting['runs'][arm]:
                    self.assertEqual(run['triggers'],
                                     run['overload'] + run['underload'])
                    self.assertLessEqual(run['unresolved'],
                                         run['triggers'])
                    self.assertEqual(run['migrations'],
                                     run['batch_migrations']
                                     + run['service_migrations'])
                    self.assertEqual(run['migrations'], run['dist1']
                                     + run['dist2'] + run['dist3'])
                    self.assertAlmostEqual(
                        run['data_transfer_gb'],
                        run['batch_data_gb'] + run['service_data_gb'])
                    self.assertGreater(run['active_servers'], 0)
        self.assertIn('Table 4', text)
        self.assertIn('-26 %', text)
        self.assertIn('-41 %', text)
        self.assertIn('rpm-vs-ffd: %d hold' % result['tally']['holds'],
                      text)

    def test_total_load_has_batch_jobs_in_a_short_window(self):
        # "total": the window's share of the day's requests, split by the
        # SB ratio (a whole day's services once left a 6-h run with none)
        for hours, n in ((6.0, 64), (24.0, 256)):
            vms = rvf.thesis_load(n, hours, 0, 'total')
            batch = sum(1 for v in vms if v['kind'] == 'batch')
            services = len(vms) - batch
            want = n * rvf.REQUESTS_PER_HOST_DAY * hours / 24.0
            self.assertAlmostEqual(
                rvf.SB_RATIO / (1 + rvf.SB_RATIO) * want, services,
                delta=1)
            self.assertGreater(batch, 0.5 * (want - services))

    def test_same_seed_same_result(self):
        a, _ = rvf.rpm_vs_ffd(reduced=True, seeds=[3], settings=('ours',))
        b, _ = rvf.rpm_vs_ffd(reduced=True, seeds=[3], settings=('ours',))
        self.assertEqual(a['settings'], b['settings'])

    def test_global_discovery_option(self):
        result, text = rvf.rpm_vs_ffd(reduced=True, seeds=[1],
                                      discovery='global',
                                      settings=('ours',))
        self.assertEqual('global', result['discovery'])
        self.assertIn('global discovery', text)

    def test_ffd_sum_weights_eq_20(self):
        # Σ demand / Σ capacity per dimension.
        self.assertEqual((0.5, 0.25), rvf.ffd_sum_weights(8, 16, 16, 64))
        w = rvf.ffd_sum_weights(8, 16, 16, 64)
        # eq. 19 on capacity-normalised sizes: the scarcer CPU weighs
        # twice as much as memory.
        self.assertAlmostEqual(0.5 * 4 / 16 + 0.25 * 16 / 64,
                               rvf.ffd_sum_volume(w, 4, 16))
        self.assertGreater(rvf.ffd_sum_volume(w, 8, 0),
                           rvf.ffd_sum_volume(w, 0, 32))
        self.assertRaises(ValueError, rvf.ffd_sum_weights, -1, 0, 1, 1)
        self.assertRaises(ValueError, rvf.ffd_sum_weights, 1, 1, 0, 1)

    def test_thesis_load(self):
        vms = rvf.thesis_load(256, 24.0, seed=5)
        services = sum(1 for v in vms if v['kind'] == 'service')
        batch = len(vms) - services
        # 230000 requests on 65536 hosts, services / batch = 0.4.
        self.assertAlmostEqual(230000 / 65536.0 * 256, len(vms),
                               delta=0.15 * len(vms))
        self.assertAlmostEqual(0.4, services / float(batch), delta=0.08)
        cpu, mem = rvf.peak_reservation(vms, 256)
        self.assertGreater(cpu, 0.75)
        self.assertLess(cpu, 1.05)

    def test_table4_load_is_the_concurrent_load(self):
        # the generated requests' mean concurrent CPU reservation over a
        # day (services all day, batch while alive) is Table 4's 62 % of
        # hosts active x alpha; the SB ratio is kept
        vms = rvf.thesis_load(256, 24.0, seed=5, load='table4')
        day = 86400.0
        reserved = sum(v['cpu'] * ((v['end'] or day) - v['arrival'])
                       for v in vms) / day
        self.assertAlmostEqual(rvf.TABLE4_CONCURRENT,
                               reserved / (256 * rvf.HOST_CPU), delta=0.05)
        services = sum(1 for v in vms if v['kind'] == 'service')
        self.assertAlmostEqual(0.4, services / float(len(vms) - services),
                               delta=0.05)
        self.assertRaises(ValueError, rvf.thesis_load, 16, 1.0, 0, 'peak')

    def test_ffd_victims_ignore_the_job_type(self):
        vms = rvf.thesis_load(32, 2.0, seed=0, load='table4')
        # a service (live migration) and a bigger batch job on host 0
        svc = next(i for i, v in enumerate(vms) if v['kind'] == 'service'
                   and v['cpu'] == 8)
        bat = next(i for i, v in enumerate(vms) if v['kind'] == 'batch'
                   and v['cpu'] <= 4)
        orders = {}
        for policy, victims in (('ffd', 'volume'), ('rpm', 'volume'),
                                ('ffd', 'planner')):
            dc = rvf.DataCentre(32, vms, policy, ffd_victims=victims)
            dc.hosts.place(svc, 0)
            dc.hosts.place(bat, 0)
            orders[policy, victims] = rvf.overload_victims(dc, 0)
        # FFD-sum: the larger volume (the 8-ECU service) first; RPM and
        # the "planner" reading: the cold batch job (cheaper data) first
        self.assertEqual([svc, bat], orders['ffd', 'volume'])
        self.assertEqual([bat, svc], orders['rpm', 'volume'])
        self.assertEqual([bat, svc], orders['ffd', 'planner'])

    def test_same_rules_for_both_policies(self):
        vms = rvf.thesis_load(32, 2.0, seed=0)
        dcs = [rvf.DataCentre(32, vms, p) for p in rvf.POLICIES]
        for dc in dcs:
            for vm, host in enumerate([0, 0, 1, 2]):
                dc.hosts.place(vm, host)
        for vm in range(5, 9):
            self.assertEqual(dcs[0].fits(vm, 0), dcs[1].fits(vm, 0))
        self.assertRaises(ValueError, rvf.DataCentre, 32, vms, 'bfd')


LATENCY_OUT = '''machine: 2 cores (os.cpu_count), x86_64, Python 3.11.7
nova 34 in-process, Placement + sqlite; request: one normal medium

 nodes |    a opie   a stock  a o/s |    b opie   (decide    +term)   \
b stock  b o/s  b d/s |   c retry   c r/o   c r/d
    10 |     449.6     418.4   1.07 |    1349.9     515.2     834.8     \
417.1   3.24   1.24 |     778.1    0.58    1.51

ratio a opie/stock 10 nodes: 1.07
'''


class RPMWeightsTest(testtools.TestCase):
    """Paper IV Tables 6-10 and Fig. 4 (``rpm-weights``)."""

    def test_lambdas_for(self):
        self.assertEqual((0.05, 0.05, 0.8, 0.05, 0.05),
                         tuple(round(x, 12) for x in
                               rpm_weights.lambdas_for('efficiency', 0.8)))
        self.assertEqual((0.0, 0.25, 0.25, 0.25, 0.25),
                         rpm_weights.lambdas_for('risk', 0.0))
        self.assertRaises(ValueError, rpm_weights.lambdas_for, 'cost', 0.5)
        self.assertRaises(ValueError, rpm_weights.lambdas_for, 'risk', 1.5)

    def test_sign(self):
        self.assertEqual(1, rpm_weights.sign(2.0, 1.0))
        self.assertEqual(-1, rpm_weights.sign(1.0, 2.0))
        self.assertEqual(0, rpm_weights.sign(3.0, 3.0))

    def test_score_uses_the_lambdas(self):
        # All weight on imbalance: a new request's score is its
        # normalised placement imbalance on the host (eq. 3 with λ5 = 1).
        vms = rvf.thesis_load(8, 1.0, 3, 'table4')
        dc = rvf.DataCentre(8, vms, 'rpm', lambdas=(0, 0, 0, 0, 1))
        dc.hosts.place(0, 2)
        dc.demand(0.0)
        c, m = dc.utilisation(2)
        vc = dc.use_cpu[1] / rvf.HOST_CPU
        vm = dc.use_mem[1] / rvf.HOST_MEM
        want = rpm_model.normalise(rpm_model.imbalance(c, m, vc, vm),
                                   rpm_model.MAX_PLACEMENT_IMBALANCE)
        self.assertAlmostEqual(want, dc.score(1, 2, None))
        self.assertRaises(rpm_model.RPMError, rvf.DataCentre, 8, vms,
                          'rpm', lambdas=(1, 1, 0, 0, 0))

    def test_reduced_rows_are_our_runs(self):
        result, text = rpm_weights.rpm_weights(reduced=True, seed=5,
                                               count=2)
        rows = {(r['table'], r['metric']): r for r in result['rows']}
        self.assertEqual(sum(len(t[2]) for t in rpm_weights.TABLES),
                         len(result['rows']))
        # our column is the mean of RPM's own runs with the factor's
        # lambdas, seed by seed
        got = []
        for s in (5, 6):
            vms = rvf.thesis_load(64, 6.0, s, 'table4')
            got.append(rvf.run_policy(
                'rpm', 64, vms, 6.0, s, group_size=32,
                lambdas=rpm_weights.lambdas_for('efficiency', 0.8)))
        self.assertAlmostEqual(
            sum(r['underload'] for r in got) / 2,
            rows['Table 6', 'underload']['ours'][1])
        self.assertEqual([r['underload'] for r in got],
                         [r['underload'] for r in
                          result['runs']['efficiency=0.8']])
        self.assertEqual([None, None], rows['Table 8', None]['ours'])
        # every claim judged once, the tally printed
        self.assertEqual(len(result['claims']),
                         sum(result['tally'].values()))
        self.assertIn('rpm-weights: %(holds)d hold, %(fails)d fail, '
                      '%(undecided)d undecided' % result['tally'], text)


class RPMvsFFDTimelineTest(testtools.TestCase):
    """Paper IV Fig. 3 (``rpm-fig3``)."""

    def test_seed_count(self):
        # full runs default to the thesis' 10 runs; --seed-count picks
        # how many, from --seed on
        captured = []

        def fake(name):
            def f(reduced=False, seed=0, count=None, **kw):
                captured.append((name, reduced, seed, count))
                return {'scenario': name}, 'ok'
            return f
        self.assertEqual(10, rpm_weights.THESIS_RUNS)
        for name in simulate.SEED_COUNT_SCENARIOS:
            self.useFixture(fixtures.MonkeyPatch(
                'opie_sched.simulator.scenarios.SCENARIOS',
                dict(scenarios.SCENARIOS, **{name: fake(name)})))
            out = self.useFixture(fixtures.MonkeyPatch(
                'sys.stdout', io.StringIO())).new_value
            self.assertEqual(0, cli.main(['simulate', '--scenario', name,
                                          '--seed', '4', '--seed-count',
                                          '2', '-f', 'json']))
            self.assertEqual('ok', json.loads(out.getvalue())['report'])
        self.assertEqual([('rpm-weights', False, 4, 2),
                          ('rpm-fig3', False, 4, 2),
                          ('gossip-redistribution', False, 4, 2),
                          ('themis-value', False, 4, 2),
                          ('rpm-vs-ffd', False, 4, 2)], captured)
        err = self.useFixture(fixtures.MonkeyPatch(
            'sys.stderr', io.StringIO())).new_value
        self.assertEqual(2, cli.main(['simulate', '--scenario',
                                      'diehard-table2', '--reduced',
                                      '--seed-count', '3']))
        self.assertIn('--seed-count is for --scenario rpm-weights',
                      err.getvalue())

    def test_full_run_defaults_to_the_thesis_runs(self):
        loaded = []
        keys = {m[0] for t in rpm_weights.TABLES for m in t[2] if m[0]}
        keys |= {c[2] for c in timeline.CLAIMS} | {'avg_cpu', 'avg_mem'}

        def load(n_hosts, hours, seed, load='total', **kw):
            loaded.append(seed)
            return []

        def run(policy, n_hosts, vms, hours, *args, **kw):
            out = {k: 1.0 for k in keys}
            every = kw.get('series_every')
            if every:
                window = dict(out, cpu=0.5, mem=0.5, batch_data_gb=0.0)
                out['series'] = [window] * int(hours * 60 // every)
            return out
        self.useFixture(fixtures.MonkeyPatch(
            'opie_sched.simulator.rpm_vs_ffd.thesis_load', load))
        self.useFixture(fixtures.MonkeyPatch(
            'opie_sched.simulator.rpm_vs_ffd.run_policy', run))
        for f, reduced in ((rpm_weights.rpm_weights, [5, 6, 7]),
                           (timeline.rpm_vs_ffd_timeline, [5])):
            result, text = f(seed=3)
            self.assertEqual(list(range(3, 13)), result['seeds'])
            self.assertEqual(list(range(3, 13)), sorted(set(loaded)))
            del loaded[:]
            self.assertEqual([7], f(seed=7, count=1)[0]['seeds'])
            self.assertEqual(reduced, f(reduced=True, seed=5)[0]['seeds'])

    def test_series_add_up_to_the_run(self):
        vms = rvf.thesis_load(32, 3.0, 4, 'table4')
        run = rvf.run_policy('ffd', 32, vms, 3.0, 4, group_size=16,
                             series_every=30)
        series = run['series']
        self.assertEqual([30 * (i + 1) for i in range(6)],
                         [e['minute'] for e in series])
        for key in ('migrations', 'service_data_gb', 'batch_data_gb'):
            self.assertAlmostEqual(run[key], sum(e[key] for e in series))
        self.assertGreater(run['migrations'], 0)
        # equal windows: their mean is the run's time mean
        self.assertAlmostEqual(run['avg_cpu'],
                               sum(e['cpu'] for e in series) / 6)
        self.assertAlmostEqual(run['avg_mem'],
                               sum(e['mem'] for e in series) / 6)
        self.assertNotIn('series', rvf.run_policy('ffd', 32, vms, 1.0, 4,
                                                  group_size=16))

    def test_judge(self):
        ffd = {'avg_cpu': 0.5, 'avg_mem': 0.6, 'active_servers': 10,
               'migrations': 8, 'service_migrations': 3,
               'service_data_gb': 40.0}
        rpm = dict(ffd, avg_cpu=0.55, active_servers=11, migrations=5,
                   service_data_gb=50.0)
        self.assertEqual({'cpu': True, 'mem': False, 'active': False,
                          'migrations': True, 'service_migrations': False,
                          'service_data': False},
                         timeline.judge(ffd, rpm))

    def test_reduced_verdicts_over_every_run(self):
        result, text = timeline.rpm_vs_ffd_timeline(reduced=True, seed=2)
        self.assertEqual(2 * len(timeline.CLAIMS), len(result['verdicts']))
        for run in result['runs']:
            self.assertEqual(timeline.judge(run['runs']['ffd'],
                                            run['runs']['rpm']),
                             run['claims'])
        n = sum(v['holds'] for v in result['verdicts'])
        self.assertIn('(%d of %d hold)' % (n, len(result['verdicts'])),
                      text)


class PreemptionLatencyTest(testtools.TestCase):
    """The benchmark itself runs in
    tests.unit.benchmarks.test_scheduling_latency
    (about 40 s); here, its table parsing and the skip path.
    """

    def test_parse_table(self):
        rows = latency.parse_latency_table(LATENCY_OUT)
        self.assertEqual([10], list(rows))
        row = rows[10]
        self.assertEqual(449.6, row['a_opie'])
        self.assertEqual(515.2, row['b_decide'])
        self.assertEqual(778.1, row['c_retry'])
        self.assertEqual(1.51, row['c_retry_vs_decide'])

    def test_benchmark_present(self):
        self.assertIsNotNone(latency.latency_benchmark_path())

    def test_model_uses_the_measured_retry_passes(self):
        row = latency.parse_latency_table(LATENCY_OUT)[10]
        costs = latency.RetryStepCosts(boot=1.0, delete=0.5, fail=0.25)
        m = latency.latency_model(row, costs)
        # the retry's scheduling side is the measured (c), once: not the
        # (successful, overcommitting) stock pass of (b) counted twice
        self.assertAlmostEqual(0.25 + 0.7781 + 0.0 + 0.5 + 1.0,
                               m['retry'])
        self.assertAlmostEqual(1.0 + 0.5152 + 0.5, m['opie'])
        self.assertAlmostEqual((1.0 + 0.5) / m['opie'],
                               m['constant_share']['opie'])
        self.assertAlmostEqual(1.75 / m['retry'],
                               m['constant_share']['retry'])
        text = '\n'.join(latency._model_text({10: m}, costs))
        self.assertIn('model, not measured', text)

    def test_end_to_end_steps_are_measured(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'e2e.json')
        with open(path, 'w') as f:
            json.dump({'cloud': 'devcloud', 'ratios': {
                'opie_vs_free': 1.2, 'retry_vs_opie': 2.5},
                'model_steps': {'boot': 2.0, 'delete': 0.9, 'fail': 0.4,
                                'reaper': 0.1}}, f)
        costs = latency.RetryStepCosts.from_end_to_end(path)
        self.assertTrue(costs.measured)
        row = latency.parse_latency_table(LATENCY_OUT)[10]
        text = '\n'.join(latency._model_text(
            {10: latency.latency_model(row, costs)}, costs))
        self.assertNotIn('model, not measured', text)
        self.assertIn('retry/opie 2.50', text)

    def test_skipped_without_benchmark(self):
        self.useFixture(fixtures.MonkeyPatch(
            'opie_sched.simulator.preemption_latency.latency_benchmark_path',
            lambda: None))
        result, text = latency.preemption_latency(reduced=True)
        self.assertTrue(result['skipped'])
        self.assertIn('skipped', text)
