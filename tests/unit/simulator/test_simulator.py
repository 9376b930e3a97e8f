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
"""Tests of the data-centre simulator (opie_sched.simulator) and
``opie-sched simulate``.

Run with ``stestr run tests.unit.simulator.test_simulator``.
"""

import csv
import io
import json
import os
import random

import fixtures
import testtools

from opie_sched.cmd import cli
from opie_sched.cmd import simulate
from opie_sched.preemption import costs
from opie_sched.preemption import model
from opie_sched.preemption import planner
from opie_sched.simulator import cloud as cloud_mod
from opie_sched.simulator import engine
from opie_sched.simulator import policies
from opie_sched.simulator import report
from opie_sched.workload import generator
from opie_sched.workload import mapping
import tests

SMALL = model.Resources(1, 2000, 20)
MEDIUM = model.Resources(2, 4000, 40)
LARGE = model.Resources(4, 8000, 80)
FLAVORS = (SMALL, MEDIUM, LARGE)

REPO_ROOT = tests.ROOT
TRACES_DIR = os.path.join(REPO_ROOT, '..', 'shared', 'traces')
NASA = os.path.join(TRACES_DIR, simulate.NASA_TRACE)


def request(job_id, submit, runtime, res, preemptible, count=1):
    return mapping.ServerRequest(
        job_id=job_id, submit=submit, runtime=runtime, vcpus=res[0],
        memory_mb=res[1], disk_gb=res[2], count=count,
        preemptible=preemptible)


def random_cloud(rng, n_hosts, t_now, fill=0.9):
    """A cloud whose hosts are filled at random with normal and
    preemptible instances of the three flavors started before t_now.
    """
    cloud = cloud_mod.Cloud.uniform(n_hosts)
    for k in range(int(n_hosts * 8 * fill)):
        host = rng.randrange(n_hosts)
        res = rng.choice(FLAVORS)
        if not cloud.full_state_fits(res)[host]:
            continue
        cloud.add(host, 'i%05d' % k, res, rng.random() < 0.7,
                  t_now - rng.uniform(0, 3 * 86400))
    return cloud


def reference_plan(cloud, res, policy, t):
    """What the scheduler does: rank_hosts over the hosts Placement
    admits (normal state), built as HostViews one by one.
    """
    mask = cloud.normal_state_fits(res)
    views = [cloud.view(i) for i in range(cloud.n_hosts) if mask[i]]
    if not views:
        return None
    plans = planner.rank_hosts(views, res, policy,
                               cloud_mod.to_datetime(t))
    return plans[0] if plans[0].feasible else None


def key(plan):
    return (plan.host, plan.needs_preemption,
            tuple(i.uuid for i, _ in plan.victims), plan.total_cost)


class CloudTest(testtools.TestCase):

    def test_capacity_uses_allocation_ratios(self):
        spec = cloud_mod.HostSpec(8, 16000, 200, cpu_allocation_ratio=2.0,
                                  ram_allocation_ratio=1.5)
        cloud = cloud_mod.Cloud([spec, cloud_mod.HostSpec()])
        self.assertEqual((16.0, 24000.0, 200.0), tuple(cloud.cap[0]))
        self.assertEqual(24.0, cloud.capacity_vcpus)
        self.assertEqual(['host00001', 'host00002'], cloud.names)
        self.assertRaises(ValueError, cloud_mod.HostSpec, vcpus=0)
        self.assertRaises(ValueError, cloud_mod.Cloud, [spec] * 2,
                          names=['b', 'a'])

    def test_dual_state_and_view(self):
        cloud = cloud_mod.Cloud.uniform(1)
        cloud.add(0, 'n', LARGE, False, 0.0)
        cloud.add(0, 'p', MEDIUM, True, 10.0)
        view = cloud.view(0)
        self.assertEqual(model.Resources(2, 4000, 80), view.full_free)
        self.assertEqual(model.Resources(4, 8000, 120), view.normal_free())
        self.assertEqual(tuple(view.full_free), tuple(cloud.free_full[0]))
        self.assertEqual(tuple(view.normal_free()),
                         tuple(cloud.free_normal[0]))
        self.assertFalse(cloud.full_state_fits(LARGE)[0])
        self.assertTrue(cloud.normal_state_fits(LARGE)[0])
        self.assertEqual(1, cloud.active_hosts)
        host, info, start = cloud.remove('p')
        self.assertEqual((0, 'p', 10.0), (host, info.uuid, start))
        self.assertEqual(4.0, cloud.normal_vcpus)
        self.assertEqual(0.0, cloud.preemptible_vcpus)

    def test_best_plan_equals_rank_hosts(self):
        rng = random.Random(7)
        t = 5 * 86400.0
        for spec in ('billing_period', 'billing_period:1,count:60',
                     'runtime', 'waste:1000,count:1'):
            policy = costs.load_policy(spec)
            # Saturated clouds (every request needs preemption) with the
            # lower-bound pruning forced and disabled, and one with room.
            for prune_above, fill in ((0, 3.0), (10 ** 6, 3.0), (16, 0.9)):
                cloud = random_cloud(rng, 40, t, fill)
                cloud.prune_above = prune_above
                for _ in range(25):
                    res = rng.choice(FLAVORS)
                    expected = reference_plan(cloud, res, policy, t)
                    got = cloud.best_plan(res, cloud.normal_state_fits(res),
                                          policy, t)
                    if expected is None:
                        self.assertIsNone(got)
                        continue
                    host, plan = got
                    self.assertEqual(expected.host, cloud.names[host])
                    self.assertEqual(key(expected), key(plan),
                                     '%s prune_above=%d' % (spec,
                                                            prune_above))

    def test_simulated_decisions_equal_planner_on_same_hosts(self):
        # Replay a contended workload; before every normal request, the
        # policy's choice must be rank_hosts' first plan on those hosts.
        test = self

        class Checked(policies.OpiePolicy):
            checked = 0

            def choose(self, cloud, res, preemptible, t):
                got = super().choose(cloud, res, preemptible, t)
                if not preemptible:
                    expected = reference_plan(cloud, res, self.cost_policy,
                                              t)
                    test.assertEqual(
                        None if expected is None else key(expected),
                        None if got is None else key(got[1]))
                    Checked.checked += 1
                return got

        reqs = generator.generate(seed=3, count=400, rate_per_hour=150)
        cloud = cloud_mod.Cloud.uniform(8)
        cloud.prune_above = 2
        policy = Checked(costs.load_policy('billing_period'))
        result = engine.Simulator(cloud, policy).run(reqs)
        self.assertGreater(result.preemption_decisions, 10)
        self.assertEqual(result.normal_requests, Checked.checked)


class BillingPeriodCaseTest(testtools.TestCase):
    """tests/functional/test_preemption.py's billing_period case: runtime
    mod 3600 s gives 3000, 400, 3500, 1000; a large normal server preempts
    the 4000 s and 1000 s mediums (cost 400 + 1000).
    """

    def test_large_normal_preempts_cheapest_pair(self):
        t = 10000.0
        runtimes = [3000, 4000, 7100, 1000]
        reqs = [request(i + 1, t - rt, 99999, MEDIUM, True)
                for i, rt in enumerate(runtimes)]
        reqs.append(request(5, t, 100, LARGE, False))
        result = engine.simulate(reqs, n_hosts=1, record_decisions=True)
        # uuids follow arrival order: r<position>-<server>
        by_job = {d.job_id: d for d in result.decisions}
        normal = by_job[5]
        self.assertEqual('host00001', normal.host)
        self.assertEqual((by_job[2].uuid, by_job[4].uuid), normal.victims)
        self.assertAlmostEqual(1400.0, normal.cost, places=6)
        self.assertEqual(2, result.preemptions)
        self.assertEqual(0, result.normal_failed)

        # The same on a hand-built HostView with plan_host.
        cloud = cloud_mod.Cloud.uniform(1)
        for i, rt in enumerate(runtimes):
            cloud.add(0, 'p%d' % i, MEDIUM, True, t - rt)
        plan = planner.plan_host(cloud.view(0), LARGE,
                                 costs.load_policy('billing_period'),
                                 cloud_mod.to_datetime(t))
        self.assertEqual(('p1', 'p3'), tuple(i.uuid for i, _ in plan.victims))
        self.assertAlmostEqual(1400.0, plan.total_cost, places=6)

    def test_preemptible_request_on_full_host_is_rejected(self):
        reqs = [request(1, 0, 1000, LARGE, True),
                request(2, 1, 1000, LARGE, True),
                request(3, 2, 1000, SMALL, True)]
        result = engine.simulate(reqs, n_hosts=1)
        self.assertEqual(1, result.preemptible_rejected)
        self.assertEqual(0, result.preemptions)

    def test_unsatisfiable_normal_request_kills_nothing(self):
        xlarge = model.Resources(8, 16000, 160)
        reqs = [request(1, 0, 1000, LARGE, False),
                request(2, 1, 1000, MEDIUM, True),
                request(3, 2, 1000, MEDIUM, True),
                request(4, 3, 1000, xlarge, False)]
        result = engine.simulate(reqs, n_hosts=1)
        self.assertEqual(1, result.normal_failed)
        self.assertEqual(0, result.preemptions)
        self.assertEqual(0, result.normal_blocked_by_preemptible)

    def test_multi_create_is_all_or_nothing(self):
        # host1: normal large + preemptible large; host2: 2 preemptible
        # large. Normal state room: 3 large. 4 fail without preempting; 3
        # succeed preempting all three preemptibles.
        base = [request(1, 0, 9000, LARGE, False),
                request(2, 1, 9000, LARGE, True),
                request(3, 2, 9000, LARGE, True),
                request(4, 3, 9000, LARGE, True)]
        four = engine.simulate(base + [request(5, 10, 10, LARGE, False, 4)],
                               n_hosts=2)
        self.assertEqual(1, four.normal_failed)
        self.assertEqual(0, four.preemptions)
        self.assertEqual(4, four.servers_booted)
        three = engine.simulate(base + [request(5, 10, 10, LARGE, False, 3)],
                                n_hosts=2)
        self.assertEqual(0, three.normal_failed)
        self.assertEqual(3, three.preemptions)


class PolicyTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        # Contended: 4 hosts, ~1.5x the capacity offered, half preemptible.
        self.reqs = generator.generate(seed=11, count=600,
                                       rate_per_hour=45)

    def run_policy(self, name, **kw):
        return engine.simulate(self.reqs, n_hosts=4, policy=name,
                               record_decisions=True, **kw)

    def test_normal_requests_never_fail_because_of_preemptibles(self):
        test = self

        class Watch(policies.OpiePolicy):
            room = 0

            def schedule(self, cloud, request, uuids, t):
                res = policies.request_resources(request)
                room = (not request.preemptible
                        and cloud.normal_state_fits(res).any())
                outcome = super().schedule(cloud, request, uuids, t)
                if room:
                    Watch.room += 1
                    test.assertTrue(outcome.ok, request)
                return outcome

        result = engine.simulate(
            self.reqs, n_hosts=4,
            policy=Watch(costs.load_policy('billing_period')))
        self.assertEqual(0, result.normal_blocked_by_preemptible)
        self.assertGreater(result.preemptions, 0)
        self.assertGreater(Watch.room, 0)
        # Without preemptible awareness, preemptibles do block them.
        stock = self.run_policy('stock')
        self.assertGreater(stock.normal_blocked_by_preemptible, 0)
        self.assertEqual(0, stock.preemptions)

    def test_preemptible_requests_never_preempt(self):
        for name in ('opie', 'first-fit', 'retry'):
            result = self.run_policy(name)
            pre = [d for d in result.decisions if d.preemptible]
            self.assertTrue(pre)
            self.assertEqual([], [d for d in pre if d.victims], name)
            self.assertTrue(any(d.victims for d in result.decisions))

    def test_retry_same_placement_more_passes(self):
        opie = self.run_policy('opie')
        retry = self.run_policy('retry')
        self.assertEqual(
            [(d.uuid, d.host, d.victims, d.cost) for d in opie.decisions],
            [(d.uuid, d.host, d.victims, d.cost) for d in retry.decisions])
        self.assertEqual(opie.requests, opie.scheduling_passes)
        self.assertEqual(0, opie.extra_passes)
        # One extra pass per normal request that needed preemption or
        # failed (generated requests have one server each).
        self.assertEqual(opie.preemption_decisions + opie.normal_failed,
                         retry.extra_passes)
        self.assertGreater(retry.extra_passes, 0)
        self.assertEqual(opie.as_dict()['utilisation'],
                         retry.as_dict()['utilisation'])

    def test_first_fit_preempts_more(self):
        opie = self.run_policy('opie')
        first = self.run_policy('first-fit')
        self.assertEqual(0, first.normal_blocked_by_preemptible)
        self.assertGreater(first.preemptions, opie.preemptions)

    def test_cost_modules_with_multipliers(self):
        policy = policies.make_policy('opie', 'billing_period:1,count:60')
        self.assertEqual(2, len(policy.cost_policy.modules))
        self.assertRaises(ValueError, policies.make_policy, 'nope')
        self.assertRaises(costs.CostModuleError, policies.make_policy,
                          'opie', 'no_such_module')

    def test_time_series_and_utilisation(self):
        reqs = [request(1, 0, 100, LARGE, False),
                request(2, 0, 50, LARGE, True)]
        result = engine.simulate(reqs, n_hosts=1, horizon=100)
        self.assertEqual([0.0, 50.0, 100.0], list(result.series['t']))
        self.assertEqual([4.0, 4.0, 0.0],
                         list(result.series['normal_vcpus']))
        self.assertEqual([4.0, 0.0, 0.0],
                         list(result.series['preemptible_vcpus']))
        self.assertEqual([1, 1, 0], list(result.series['active_hosts']))
        self.assertAlmostEqual(0.75, result.utilisation())
        self.assertAlmostEqual(0.5, result.utilisation(('normal',)))
        self.assertAlmostEqual(0.25, result.utilisation(('preemptible',)))
        self.assertEqual(4, result.events)


class NasaBackfillTest(testtools.TestCase):

    def test_reduced_scenario_first_200_jobs(self):
        if not os.path.isfile(NASA):
            self.skipTest('NASA trace not found at %s (../shared/traces '
                          'next to the repository)' % NASA)
        with_bf, without_bf, info = simulate.nasa_backfill(
            NASA, hosts=16, limit=200, progress_every=0)
        self.assertEqual(200, info.requests)
        self.assertEqual(200, without_bf.requests)
        self.assertEqual(0, without_bf.preemptible_requests)
        self.assertEqual(200, with_bf.normal_requests)
        self.assertEqual(with_bf.window(), without_bf.window())
        self.assertGreater(with_bf.utilisation(),
                           without_bf.utilisation() + 0.2)
        self.assertEqual(0.0, without_bf.utilisation(('preemptible',)))
        self.assertGreater(with_bf.preemptions, 0)
        self.assertEqual(0, with_bf.normal_blocked_by_preemptible)
        self.assertLessEqual(with_bf.normal_failed, without_bf.normal_failed)
        text = simulate.scenario_text(with_bf, without_bf)
        self.assertIn('without backfilling', text)


class SimulateCLITest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.EnvironmentVariable('HOME', self.tmp))
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_CLIENT_CONFIG_FILE', os.path.join(self.tmp, 'none.yaml')))
        self.stdout = io.StringIO()
        self.stderr = io.StringIO()
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', self.stdout))
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', self.stderr))

    def main(self, *argv):
        return cli.main(['simulate', '--output-dir', self.tmp] + list(argv))

    def test_json_output(self):
        rc = self.main('--generate', '150', '--hosts', '2', '--format',
                       'json', '--no-plot')
        self.assertEqual(0, rc, self.stderr.getvalue())
        doc = json.loads(self.stdout.getvalue())
        [res] = doc['results']
        self.assertEqual('opie', res['policy'])
        self.assertEqual(150, res['requests'])
        self.assertEqual(2, res['hosts'])
        self.assertEqual(0, res['normal_blocked_by_preemptible'])
        for name in ('utilisation', 'utilisation_normal', 'preemptions',
                     'preemption_cost', 'scheduling_passes',
                     'normal_failed', 'preemptible_rejected'):
            self.assertIn(name, res)
        self.assertIn('generated', doc['workload'])
        self.assertEqual(os.path.join(self.tmp, 'simulation.csv'),
                         doc['time_series'])
        self.assertNotIn('plot', doc)
        self.assertIn('[opie', self.stderr.getvalue())    # progress
        with open(os.path.join(self.tmp, 'simulation.csv')) as f:
            rows = list(csv.reader(f))
        self.assertEqual(['label'] + [n for n, _ in engine.SERIES]
                         + ['capacity_vcpus'], rows[0])
        self.assertGreater(len(rows), 100)

    def test_summary_of_all_policies_with_plot(self):
        rc = self.main('--generate', '120', '--hosts', '2', '--policy',
                       'all', '--cost', 'billing_period:1,count:60')
        self.assertEqual(0, rc, self.stderr.getvalue())
        out = self.stdout.getvalue()
        self.assertIn('normal requests failed', out)
        self.assertIn('vCPU utilisation, all', out)
        header = [line for line in out.splitlines()
                  if 'first-fit' in line and 'retry' in line]
        self.assertTrue(header, out)
        [requests] = [line.strip('| ').split() for line in out.splitlines()
                      if line.strip('| ').startswith('requests ')]
        self.assertEqual(['requests', '120', '120', '120', '120'], requests)
        self.assertTrue(os.path.getsize(os.path.join(self.tmp,
                                                     'simulation.png')))

    def test_trace_input(self):
        path = os.path.join(self.tmp, 'tiny.swf')
        with open(path, 'w') as f:
            f.write('; MaxProcs: 16\n')
            for i in range(1, 6):
                f.write('%d %d 0 %d 4 -1 -1 4 -1 -1 1 1 1 -1 -1 -1 -1 -1\n'
                        % (i, 10 * i, 100))
        rc = self.main('--trace', path, '--hosts', '1', '--preemptible',
                       'all', '--format', 'json', '--no-plot')
        self.assertEqual(0, rc, self.stderr.getvalue())
        [res] = json.loads(self.stdout.getvalue())['results']
        self.assertEqual(5, res['preemptible_requests'])

    def test_bad_trace_is_an_error_with_line(self):
        path = os.path.join(self.tmp, 'bad.swf')
        with open(path, 'w') as f:
            f.write('1 0 0 10 1\n')
        self.assertEqual(1, self.main('--trace', path))
        self.assertIn('bad.swf:1:', self.stderr.getvalue())

    def test_scenario_skipped_without_traces(self):
        rc = self.main('--scenario', 'nasa-backfill', '--traces-dir',
                       os.path.join(self.tmp, 'nowhere'))
        self.assertEqual(0, rc)
        self.assertIn('skipping scenario nasa-backfill',
                      self.stderr.getvalue())
        self.assertRegex(self.stdout.getvalue(), r'\| skipped +\| True')

    def test_report_summary_side_by_side(self):
        reqs = generator.generate(seed=1, count=30)
        a = engine.simulate(reqs, 2, 'opie', label='a')
        b = engine.simulate(reqs, 2, 'stock', label='b')
        text = report.summary([a, b])
        self.assertIn('scheduling passes', text)
        self.assertEqual(2, len(json.loads(report.to_json([a, b]))
                                ['results']))
