"""Tests of the named paper scenarios (opie_sched.simulator.scenarios),
run in their reduced forms.

Run with ``stestr run tests.unit.test_scenarios``.
"""

import io
import json

import fixtures
import testtools

from opie_sched.cmd import cli
from opie_sched.cmd import simulate
from opie_sched.simulator import scenarios
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
        self.assertIn('runtime:', out.getvalue())


class DieHardTable2Test(testtools.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.result, cls.text = scenarios.diehard_table2(reduced=True, seed=3)

    def test_every_algorithm_meets_the_target(self):
        for row in self.result['rows']:
            self.assertTrue(row['met_all'], row)
            self.assertGreaterEqual(row['reliability'],
                                    scenarios.DIEHARD_TARGET)

    def test_diehard_needs_no_more_than_the_baselines(self):
        dh = _row(self.result, 500, 'diehard')
        prop = _row(self.result, 500, 'proportional')
        hrf = _row(self.result, 500, 'hrf')
        self.assertLessEqual(dh['extra_max'], prop['extra_min'])
        self.assertLessEqual(prop['extra'], hrf['extra'])
        self.assertLess(dh['affinity'], prop['affinity'])
        self.assertLess(prop['affinity'], hrf['affinity'])

    def test_hrf_misses_the_target_at_proportionals_n(self):
        hrf = _row(self.result, 500, 'hrf')
        self.assertLess(hrf['reliability_at_proportional_n'],
                        scenarios.DIEHARD_TARGET)

    def test_text_quotes_the_thesis(self):
        self.assertIn('Table 2', self.text)
        # Thesis K=500 numbers: DH 18, Proportional 23, HRF 25 (137026).
        for number in ('18', '23', '25', '137026'):
            self.assertIn(number, self.text)


class RepackingTablesTest(testtools.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.result, cls.text = scenarios.repacking_tables(reduced=True,
                                                          seed=1)
        cls.cost = {(c['workload'], c['app'], c['reconfig'],
                     c['strategy']): c for c in cls.result['costs']}

    def test_all_runs_present(self):
        self.assertEqual(2 * 2 * 2 * 5, len(self.cost))

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
        for wl in ('increase', 'seasonal'):
            for rc in ('cheap', 'expensive'):
                self.assertGreater(
                    by[wl, 'B', rc]['S_delta_Repacked_vs_S_delta'],
                    by[wl, 'A', rc]['S_delta_Repacked_vs_S_delta'])

    def test_text_quotes_table6(self):
        self.assertIn('35.51', self.text)
        self.assertIn('Table 6', self.text)


class ThemisValueTest(testtools.TestCase):

    def test_reduced_ordering(self):
        result, text = scenarios.themis_value(reduced=True, seed=42)
        row = result['rows'][0]
        v = row['value']
        # What the model gives under high load: EDF >= market >= FCFS.
        self.assertGreaterEqual(v['edf'], v['market'])
        self.assertGreaterEqual(v['market'], v['fcfs'])
        for policy in v:
            self.assertLessEqual(v[policy], row['max_value'] + 1e-6)
        self.assertIn('market/FCFS', text)

    def test_light_load_every_policy_meets_every_deadline(self):
        for policy in ('market', 'fcfs', 'edf'):
            jobs = scenarios.themis_jobs(30, 0.05, 32, seed=5)
            if policy == 'market':
                scenarios._run_market(jobs, 16, 2, seed=5)
            else:
                scenarios._run_queue(jobs, 32, policy)
            for job in jobs:
                self.assertIsNotNone(job.finish, (policy, job.jid))
                self.assertLessEqual(job.finish, job.deadline + 1e-6)
                self.assertAlmostEqual(job.budget * job.tasks, job.value())

    def test_utilities_of_table1(self):
        job = scenarios._Job(0, 0.0, 2, 3600.0, 2.0, 'deadline-strict')
        self.assertEqual(0.0, job.value())
        job.done_at_deadline = 0.5
        job.kind = 'deadline-partial'
        self.assertAlmostEqual(0.5 * job.budget * 2, job.value())
        job.finish = 5400.0     # half-way between ideal and deadline
        job.kind = 'performance-strict'
        self.assertAlmostEqual(0.5 * job.budget * 2, job.value())
        job.kind = 'deadline-strict'
        self.assertAlmostEqual(job.budget * 2, job.value())

    def test_edf_meets_more_deadlines_than_fcfs(self):
        jobs_f = scenarios.themis_jobs(80, 3.0, 32, seed=9)
        jobs_e = scenarios.themis_jobs(80, 3.0, 32, seed=9)
        scenarios._run_queue(jobs_f, 32, 'fcfs')
        scenarios._run_queue(jobs_e, 32, 'edf')

        def met(jobs):
            return sum(1 for j in jobs if j.finish is not None
                       and j.finish <= j.deadline + 1e-6)
        self.assertGreaterEqual(met(jobs_e), met(jobs_f))


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
        result, text = scenarios.rpm_vs_ffd(reduced=True, seed=42)
        ffd, rpm_ = result['ffd'], result['rpm']
        # RPM packs onto fewer servers and rejects no more than FFD-sum.
        self.assertLessEqual(rpm_['active_servers'], ffd['active_servers'])
        self.assertLessEqual(rpm_['rejected'], ffd['rejected'])
        for run in (ffd, rpm_):
            self.assertEqual(run['triggers'],
                             run['overload'] + run['underload'])
            self.assertLessEqual(run['unresolved'], run['triggers'])
            self.assertGreaterEqual(run['data_transfer_gb'], 0)
        self.assertIn('Table 4', text)
        self.assertIn('-26 %', text)


LATENCY_OUT = '''machine: 2 cores (os.cpu_count), x86_64, Python 3.11.7
nova 34 in-process, Placement + sqlite; request: one normal medium

 nodes |    a opie   a stock  a o/s |    b opie   (decide    +term)   \
b stock  b o/s  b d/s |   c retry   c r/o   c r/d
    10 |     449.6     418.4   1.07 |    1349.9     515.2     834.8     \
417.1   3.24   1.24 |     778.1    0.58    1.51

ratio a opie/stock 10 nodes: 1.07
'''


class PreemptionLatencyTest(testtools.TestCase):
    """The benchmark itself runs in tests.unit.test_bench_scheduling
    (about 40 s); here, its table parsing and the skip path."""

    def test_parse_table(self):
        rows = scenarios.parse_latency_table(LATENCY_OUT)
        self.assertEqual([10], list(rows))
        row = rows[10]
        self.assertEqual(449.6, row['a_opie'])
        self.assertEqual(515.2, row['b_decide'])
        self.assertEqual(778.1, row['c_retry'])
        self.assertEqual(1.51, row['c_retry_vs_decide'])

    def test_benchmark_present(self):
        self.assertIsNotNone(scenarios.latency_benchmark_path())

    def test_skipped_without_benchmark(self):
        self.useFixture(fixtures.MonkeyPatch(
            'opie_sched.simulator.scenarios.latency_benchmark_path',
            lambda: None))
        result, text = scenarios.preemption_latency(reduced=True)
        self.assertTrue(result['skipped'])
        self.assertIn('skipped', text)
