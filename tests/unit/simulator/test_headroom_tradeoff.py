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
"""Tests of the ``headroom-tradeoff`` scenario
(opie_sched.simulator.headroom_tradeoff): small hand-made workloads whose
every notice, wait and victim is known, the equivalence with the engine at
headroom 0 on a generated workload, the default's rule, and a slice of a
shared trace (skipped when the traces are absent).
"""

import io
import json

import fixtures
import testtools

from opie_sched.cmd import cli
from opie_sched.preemption import costs
from opie_sched.simulator import cloud as cloud_mod
from opie_sched.simulator import engine
from opie_sched.simulator import headroom_tradeoff as ht
from opie_sched.simulator import policies
from opie_sched.simulator import scenarios
from opie_sched.workload import generator
from opie_sched.workload import mapping


def _req(job, submit, vcpus, preemptible, runtime=100000.0, count=1):
    return mapping.ServerRequest(job, float(submit), runtime, vcpus,
                                 vcpus * 2000, vcpus * 20, count,
                                 preemptible)


def _sim(hosts, fraction, mode='cut', shape='sum'):
    return ht.HeadroomSimulator(
        cloud_mod.Cloud.uniform(hosts), costs.load_policy('billing_period',
                                                          period=3600),
        fraction, mode, shape=shape)


class HeadroomModelTest(testtools.TestCase):
    """Two or three 8-vCPU hosts, billing_period cost (seconds into the
    hour), notice 120 s.
    """

    def test_headroom_notices_the_cheapest_victim_120s_ahead(self):
        # H = 25 % of 16 vCPU = 4. A (t=0) and B (t=100) fill host 1; C
        # (8 vCPU) would leave F = 0 < H: kept out. N takes host 2, F = 0:
        # the reconciler notices B (cost 100 s into its hour at t=200)
        # rather than A (200 s), and B goes at 320, after its full notice.
        reqs = [_req(1, 0, 4, True), _req(2, 100, 4, True),
                _req(3, 150, 8, True), _req(4, 200, 8, False)]
        run = _sim(2, 0.25).run(reqs, horizon=400)
        self.assertEqual([120.0], run.notices)
        self.assertEqual(['r00000001-000'], run.victim_ids)
        self.assertEqual(1, run.headroom_victims)
        self.assertEqual(0, run.burst_victims)
        self.assertEqual(1, run.preemptible_kept_out)
        self.assertEqual(0, run.normal_slowed)
        self.assertEqual(1.0, run.full_notice_share())

    def test_headroom_zero_admits_and_bursts_with_zero_notice(self):
        reqs = [_req(1, 0, 8, True), _req(2, 0, 8, True),
                _req(3, 50, 8, False)]
        run = _sim(2, 0.0).run(reqs)
        self.assertEqual([0.0], run.notices)
        self.assertEqual(1, run.burst_victims)
        self.assertEqual(0, run.headroom_victims)
        self.assertEqual(1, run.normal_slowed)
        self.assertEqual(1, run.normal_burst)
        self.assertEqual(0, run.preemptible_kept_out)
        self.assertEqual(0.0, run.full_notice_share())

    def _noticed_then_needed(self, mode):
        # H = 50 % of 16 = 8. P1, P2 fill host 1; N1 takes host 2 at 100:
        # P1 (cheaper: 100 s into its hour... both started at 0; P1 first
        # by uuid) and P2 are noticed until 220; N2 at 150 needs host 1.
        reqs = [_req(1, 0, 4, True), _req(2, 0, 4, True),
                _req(3, 100, 8, False), _req(4, 150, 8, False)]
        return _sim(2, 0.5, mode).run(reqs)

    def test_cut_mode_cuts_the_notice(self):
        run = self._noticed_then_needed('cut')
        self.assertEqual([50.0, 50.0], run.notices)
        self.assertEqual(2, run.headroom_victims)
        self.assertEqual(2, run.cut_victims)
        self.assertEqual(1, run.normal_slowed)
        self.assertEqual(1, run.normal_cut)
        self.assertEqual([], run.waits)

    def test_honour_mode_waits_out_the_notice(self):
        run = self._noticed_then_needed('honour')
        self.assertEqual([120.0, 120.0], run.notices)
        self.assertEqual(0, run.cut_victims)
        self.assertEqual([70.0], run.waits)
        self.assertEqual(1, run.normal_slowed)

    #: P1, P2 (6 vCPU) on hosts 1 and 2, P3 (4 vCPU) fits only host 3;
    #: then an 8-vCPU normal server. Three 8-vCPU hosts, H = 1/3 = 8 vCPU.
    CRUMBS = [_req(1, 0, 6, True), _req(2, 10, 6, True),
              _req(3, 40, 4, True), _req(4, 100, 8, False)]

    def test_slots_keep_a_whole_host_free(self):
        # one slot: P3 would take the last free host, it is kept out; N
        # lands on host 3 at once, and the reconciler frees the host that
        # is cheapest to clear for one more slot (P2: 90 s into its hour,
        # P1 100 s), with the full notice
        sim = _sim(3, 1.0 / 3, shape='slots')
        self.assertEqual(1, sim.slots_wanted)
        run = sim.run(self.CRUMBS, horizon=300)
        self.assertEqual(1, run.preemptible_kept_out)
        self.assertEqual(0, run.normal_slowed)
        self.assertEqual([120.0], run.notices)
        self.assertEqual(['r00000001-000'], run.victim_ids)

    def test_sum_shape_leaves_crumbs_a_large_server_cannot_use(self):
        # summed over the cloud, P3 leaves 8 vCPU free (2 + 2 + 4): it is
        # admitted, and N finds no host with 8 free: it preempts P3 at
        # once (0 s, the cheapest host to clear), then the headroom
        # notices P2
        run = _sim(3, 1.0 / 3, shape='sum').run(self.CRUMBS, horizon=300)
        self.assertEqual(0, run.preemptible_kept_out)
        self.assertEqual(1, run.normal_slowed)
        self.assertEqual(1, run.normal_burst)
        self.assertEqual([0.0, 120.0], run.notices)
        self.assertEqual(['r00000002-000', 'r00000001-000'],
                         run.victim_ids)

    def test_all_or_nothing_undoes_victims(self):
        # two 8-vCPU servers on a cloud whose normal state has room for
        # one: nothing is preempted, the request fails.
        reqs = [_req(1, 0, 8, True), _req(2, 0, 8, False),
                _req(3, 10, 8, False, count=2)]
        run = _sim(2, 0.0).run(reqs)
        self.assertEqual(1, run.sim.normal_failed)
        self.assertEqual([], run.victim_ids)
        self.assertEqual(0, run.sim.preemptions)

    def test_nothing_taken_when_the_deficit_cannot_be_freed(self):
        # H = 8 vCPU; after N2 only 4 are free and the one preemptible
        # server holds 2: it is not noticed (never empty the cloud)
        reqs = [_req(1, 0, 2, True), _req(2, 10, 6, False),
                _req(3, 20, 4, False)]
        run = _sim(2, 0.5).run(reqs)
        self.assertEqual(0, run.headroom_victims)
        self.assertEqual([], run.victim_ids)

    def test_without_keep_out_the_headroom_is_refilled_and_renoticed(self):
        # H = one host: P2 and P3 take the free host in turn and are
        # noticed each time (P2 started last: the cheapest)
        reqs = [_req(1, 0, 8, True), _req(2, 5, 8, True),
                _req(3, 200, 8, True)]
        sim = ht.HeadroomSimulator(
            cloud_mod.Cloud.uniform(2),
            costs.load_policy('billing_period', period=3600), 0.5,
            keep_out=False)
        run = sim.run(reqs, horizon=400)
        self.assertEqual(['r00000001-000', 'r00000002-000'], run.victim_ids)
        self.assertEqual([120.0, 120.0], run.notices)
        kept = _sim(2, 0.5).run(reqs, horizon=400)
        self.assertEqual([], kept.victim_ids)
        self.assertEqual(2, kept.preemptible_kept_out)

    def test_filter_rule_does_not_count_room_under_notice(self):
        # H = 8 vCPU of three hosts. P1 (8) and P2 (4) admitted; N (6)
        # leaves 4 + 2 free: P2, the cheapest, is noticed (its 4 vCPU on
        # their way: F = 10). P3 (1 vCPU) keeps F = 9 >= 8 by the model's
        # count, but HeadroomFilter's full state is 6: kept out.
        reqs = [_req(1, 0, 8, True), _req(2, 1, 4, True),
                _req(3, 10, 6, False), _req(4, 20, 1, True)]
        policy = costs.load_policy('billing_period', period=3600)
        runs = {keep: ht.HeadroomSimulator(
            cloud_mod.Cloud.uniform(3), policy, 1 / 3.0,
            keep_out=keep).run(reqs, horizon=60)
            for keep in (True, 'filter')}
        self.assertEqual(1, runs[True].headroom_victims)
        self.assertEqual(1, runs['filter'].headroom_victims)
        self.assertEqual(0, runs[True].preemptible_kept_out)
        self.assertEqual(1, runs['filter'].preemptible_kept_out)
        self.assertRaises(ValueError, ht.HeadroomSimulator,
                          cloud_mod.Cloud.uniform(1), policy, 0.1,
                          keep_out='sometimes')

    def test_bad_arguments(self):
        self.assertRaises(ValueError, _sim, 1, 1.5)
        self.assertRaises(ValueError, _sim, 1, 0.1, 'never')
        self.assertRaises(ValueError, _sim, 1, 0.1, 'cut', 'cubes')


class EngineEquivalenceTest(testtools.TestCase):

    def test_headroom_zero_is_the_engine(self):
        # at headroom 0 the replay is the shared engine's opie policy:
        # same failures, victims and utilisation on a generated workload
        reqs = generator.generate(seed=3, count=300, rate_per_hour=40.0,
                                  preemptible_fraction=0.6)
        ours = _sim(4, 0.0).run(reqs)
        theirs = engine.simulate(reqs, n_hosts=4,
                                 policy=policies.make_policy('opie'))
        self.assertGreater(theirs.preemptions, 0)
        self.assertEqual(theirs.normal_failed, ours.sim.normal_failed)
        self.assertEqual(theirs.preemptible_rejected,
                         ours.sim.preemptible_rejected)
        self.assertEqual(theirs.preemptions, ours.victims)
        self.assertAlmostEqual(theirs.utilisation(), ours.sim.utilisation())


class RecommendTest(testtools.TestCase):

    @staticmethod
    def _row(share, given_up, failed=0):
        return {'full_notice_share': share,
                'utilisation_given_up_pts': given_up,
                'normal_failed': failed}

    def _table(self, sum_shares, slot_shares, failed=0):
        table = {('none', 0.0): self._row(0.0, 0.0)}
        for f, s, g in sum_shares:
            table['sum', f] = self._row(s, g, failed)
        for f, s, g in slot_shares:
            table['slots', f] = self._row(s, g, failed)
        return table

    def test_smallest_size_meeting_the_target_on_every_trace(self):
        a = self._table([(0.05, 0.5, 1.0), (0.1, 0.96, 2.0)],
                        [(0.05, 0.97, 3.0), (0.1, 0.99, 6.0)])
        b = self._table([(0.05, 0.9, 1.0), (0.1, 0.95, 2.5)],
                        [(0.05, 0.95, 4.0), (0.1, 0.99, 7.0)])
        shape, fraction, reason = ht.recommend({'a': a, 'b': b})
        self.assertEqual(('sum', 0.1), (shape, fraction))
        self.assertIn('2.50 points', reason)

    def test_more_failures_disqualify(self):
        a = self._table([(0.05, 0.99, 1.0)], [(0.05, 0.99, 2.0)],
                        failed=1)
        shape, fraction, reason = ht.recommend({'a': a})
        self.assertIn('no size or shape', reason)

    def test_fall_back_to_most_notice_per_point(self):
        a = self._table([(0.05, 0.2, 2.0), (0.1, 0.5, 4.0)],
                        [(0.05, 0.4, 2.0), (0.1, 0.6, 8.0)])
        shape, fraction, reason = ht.recommend({'a': a})
        self.assertEqual(('slots', 0.05), (shape, fraction))
        self.assertIn('20.0 points', reason)
        self.assertEqual((None, None, 'no trace was replayed'),
                         ht.recommend({}))


class TraceSliceTest(testtools.TestCase):

    def test_registered(self):
        self.assertIs(ht.headroom_tradeoff,
                      scenarios.SCENARIOS['headroom-tradeoff'])

    def test_missing_traces_are_reported(self):
        result, text = ht.headroom_tradeoff(
            directory=self.useFixture(fixtures.TempDir()).path, jobs=5)
        self.assertEqual(3, len(result['skipped']))
        self.assertIn('skipped: trace NASA-iPSC-1993-3.1-cln.swf.gz not '
                      'found', text)
        self.assertIsNone(result['recommended_fraction'])

    def test_cli_passes_traces_dir_and_limit(self):
        out = self.useFixture(fixtures.MonkeyPatch('sys.stdout',
                                                   io.StringIO())).new_value
        empty = self.useFixture(fixtures.TempDir()).path
        rc = cli.main(['simulate', '--scenario', 'headroom-tradeoff',
                       '--traces-dir', empty, '--limit', '7', '-f', 'json'])
        self.assertEqual(0, rc)
        data = json.loads(out.getvalue())
        self.assertEqual('headroom-tradeoff', data['scenario'])
        self.assertEqual(3, len(data['skipped']))
        self.assertIn(empty, data['skipped']['HPC2N'])

    def test_nasa_slice(self):
        name = ht.TRACES[0][0]
        try:
            path = ht.trace_path(name)
        except ht.TraceMissing as exc:
            self.skipTest('%s (the shared traces live in ../shared/traces '
                          'next to the repository)' % exc)
        reqs, n_hosts, horizon, _ = ht.trace_workload(path, 25)
        self.assertEqual(16, n_hosts)          # 128 processors / 8
        runs = ht.replay(reqs, n_hosts, horizon, fractions=(0.0, 0.2),
                         modes=('cut',), shapes=('slots',))
        table = ht.rows(runs, (0.0, 0.2), ('slots',), n_hosts)
        base, with_h = table['none', 0.0], table['slots', 0.2]
        self.assertEqual(4, with_h['slots'])   # 25.6 vCPU / 8, rounded up
        self.assertGreater(base['victims'], 0)
        self.assertEqual(0.0, base['full_notice_share'])
        run = runs['slots', 'cut', 0.2]
        self.assertTrue(all(0.0 <= n <= ht.NOTICE_SECONDS
                            for n in run.notices))
        self.assertGreater(with_h['full_notice_share'], 0.0)
        self.assertLessEqual(with_h['normal_slowed'], base['normal_slowed'])
        text = ht.table_text('NASA slice', table)
        self.assertIn('slots (4)', text)
