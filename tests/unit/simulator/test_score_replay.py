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
"""Tests of the ``score-replay`` scenario
(opie_sched.simulator.score_replay): hand-made requests on one host whose
score and outcome are known, the tally's sums on a generated workload,
and the skip when the trace is absent.
"""

import io
import json

import fixtures
import testtools

from opie_sched.cmd import cli
from opie_sched.services.market import score
from opie_sched.simulator import cloud as cloud_mod
from opie_sched.simulator import scenarios
from opie_sched.simulator import score_replay as sr
from opie_sched.workload import generator
from opie_sched.workload import mapping


def _req(job, submit, vcpus, preemptible, runtime=100000.0, count=1):
    return mapping.ServerRequest(job, float(submit), runtime, vcpus,
                                 vcpus * 2000, vcpus * 20, count,
                                 preemptible)


def _run(requests, n_hosts=1, lags=sr.LAGS):
    sim = sr.ScoreReplay(cloud_mod.Cloud.uniform(n_hosts), lags)
    return {rec['job_id']: rec for rec in sim.run(requests)}


class HandMadeTest(testtools.TestCase):
    """One 8-vCPU host; every answer and outcome known by hand."""

    def test_fits_now_preempting_no_room(self):
        recs = _run([
            _req(1, 0, 4, True),      # a preemptible server holds 4 vCPU
            _req(2, 10, 4, False),    # 4 free: fits now
            _req(3, 20, 4, False),    # full; normal state has 4: preempts
            _req(4, 30, 1, False),    # normal state full: no room
        ])
        self.assertEqual(score.FITS_NOW, recs[1]['asked'][sr.PASS])
        self.assertEqual(sr.PLACED_FREE, recs[1]['outcome'])
        self.assertEqual(score.FITS_NOW, recs[2]['asked'][sr.PASS])
        self.assertEqual(sr.PLACED_FREE, recs[2]['outcome'])
        self.assertEqual(score.PREEMPTING, recs[3]['asked'][sr.PASS])
        self.assertEqual(sr.PLACED_PREEMPTING, recs[3]['outcome'])
        self.assertEqual(score.NO_ROOM, recs[4]['asked'][sr.PASS])
        self.assertEqual(sr.FAILED, recs[4]['outcome'])
        # nothing changed in the 10 s before each arrival
        for rec in recs.values():
            self.assertEqual(rec['asked'][sr.PASS],
                             rec['asked']['0 s before'])

    def test_same_second_takes_the_room(self):
        recs = _run([_req(1, 0, 8, False), _req(2, 0, 8, False)])
        self.assertEqual(sr.PLACED_FREE, recs[1]['outcome'])
        # asked at the start of the second: the host was empty
        self.assertEqual(score.FITS_NOW, recs[2]['asked']['0 s before'])
        self.assertEqual(score.NO_ROOM, recs[2]['asked'][sr.PASS])
        self.assertEqual(sr.FAILED, recs[2]['outcome'])
        counts = sr.tally(list(recs.values()))
        self.assertEqual(1, counts['0 s before']['reasons'][sr.TAKEN])
        self.assertEqual(2, counts[sr.PASS]['right'])

    def test_lag_sees_the_departure_to_come(self):
        # a normal server leaves at 100; the next asks 60 s before 130
        recs = _run([_req(1, 0, 8, False, runtime=100.0),
                     _req(2, 130, 8, False)])
        self.assertEqual(score.NO_ROOM, recs[2]['asked']['60 s before'])
        self.assertEqual(score.FITS_NOW, recs[2]['asked'][sr.PASS])
        counts = sr.tally(list(recs.values()))
        self.assertEqual(1, counts['60 s before']['reasons'][sr.FREED])

    def test_host_states_adapter(self):
        cloud = cloud_mod.Cloud.uniform(2)
        cloud.add(0, 'a', (2, 4000, 40), True, 0.0)
        cloud.add(0, 'b', (1, 2000, 20), False, 0.0)
        states = sr.host_states(cloud)
        self.assertEqual((8, 16000, 200), states[0].capacity)
        self.assertEqual((1, 2000, 20), states[0].normal_used)
        self.assertEqual((2, 4000, 40), states[0].preemptible_used)
        self.assertEqual((score.Running(sr.SIM_BID, 2, 4000),),
                         states[0].running)
        self.assertEqual((0, 0, 0), states[1].normal_used)


class TallyTest(testtools.TestCase):

    def test_counts_add_up_on_a_generated_workload(self):
        reqs = generator.generate(seed=7, count=150, rate_per_hour=120.0,
                                  preemptible_fraction=0.6)
        records, counts = sr.replay(reqs, n_hosts=2)
        self.assertEqual(len(reqs), len(records))
        for row in sr.asked():
            c = counts[row]
            cells = sum(sum(v.values()) for v in c['table'].values())
            self.assertEqual(len(reqs), cells)
            self.assertEqual(len(reqs), c['total'])
            self.assertEqual(c['total'] - c['right'],
                             sum(c['reasons'].values()))
            self.assertLessEqual(c['fits_now_right'], c['fits_now'])
        # the pass sees what the scheduler sees
        self.assertEqual(len(reqs), counts[sr.PASS]['right'])
        outcomes = {rec['outcome'] for rec in records}
        self.assertIn(sr.PLACED_FREE, outcomes)
        self.assertIn(sr.FAILED, outcomes)
        text = sr.table_text(counts)
        for row in sr.asked():
            self.assertIn('asked %s: right' % row, text)


class ScenarioTest(testtools.TestCase):

    def test_registered(self):
        self.assertIs(sr.score_replay, scenarios.SCENARIOS['score-replay'])

    def test_skipped_without_the_trace(self):
        result, text = sr.score_replay(
            directory=self.useFixture(fixtures.TempDir()).path, jobs=5)
        self.assertIn('NASA-iPSC-1993-3.1-cln.swf.gz', result['skipped'])
        self.assertIn('score-replay: skipped: trace', text)

    def test_cli_passes_traces_dir_and_limit(self):
        out = self.useFixture(fixtures.MonkeyPatch('sys.stdout',
                                                   io.StringIO())).new_value
        empty = self.useFixture(fixtures.TempDir()).path
        rc = cli.main(['simulate', '--scenario', 'score-replay',
                       '--traces-dir', empty, '--limit', '7', '-f', 'json'])
        self.assertEqual(0, rc)
        data = json.loads(out.getvalue())
        self.assertEqual('score-replay', data['scenario'])
        self.assertEqual(7, data['jobs'])
        self.assertIn(empty, data['skipped'])
