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
"""Tests of the job-to-VM mapping rules (opie_sched.workload.mapping)."""

import io
import os

import testtools

from opie_sched.workload import mapping
from opie_sched.workload import swf
import tests
from tests.unit.workload.helpers import job
from tests.unit.workload.helpers import line


TRACES = os.path.join(os.path.dirname(tests.ROOT), 'shared', 'traces')
NASA = os.path.join(TRACES, 'NASA-iPSC-1993-3.1-cln.swf.gz')
LUBLIN = os.path.join(TRACES, 'lublin_256.swf.gz')


class RuleTest(testtools.TestCase):

    def test_parse(self):
        self.assertEqual('none', str(mapping.parse_rule('none')))
        self.assertEqual('all', str(mapping.parse_rule(' ALL ')))
        rule = mapping.parse_rule('queue: 3, 2')
        self.assertEqual(('queue', frozenset({2, 3})),
                         (rule.kind, rule.values))
        self.assertEqual('queue:2,3', str(rule))
        self.assertEqual('partition:1', str(mapping.parse_rule('partition:1')))
        rule = mapping.parse_rule('fraction:0.25@7')
        self.assertEqual((0.25, 7), (rule.fraction, rule.seed))
        self.assertEqual('fraction:0.25@7', str(rule))
        self.assertEqual('fraction:0.5', str(mapping.parse_rule(
            'fraction:0.5')))
        self.assertIs(rule, mapping.parse_rule(rule))
        for text in ('none', 'all', 'queue:0,1', 'fraction:1', 'fraction:0',
                     'fraction:0.3@2'):
            self.assertEqual(mapping.parse_rule(text), mapping.parse_rule(
                str(mapping.parse_rule(text))))

    def test_parse_errors(self):
        for text, fragment in (
                ('', 'unknown preemptible rule'),
                ('queues:1', 'unknown preemptible rule'),
                ('queue', 'needs an argument'),
                ('queue:', 'needs an argument'),
                ('queue:a', "queue 'a' is not an integer"),
                ('queue:1,,2', "queue '' is not an integer"),
                ('partition:-1', 'partition numbers are >= 0'),
                ('fraction:x', "fraction 'x' is not a number"),
                ('fraction:1.5', 'between 0 and 1'),
                ('fraction:-0.1', 'between 0 and 1'),
                ('fraction:0.5@x', "seed 'x' is not an integer"),
                ('none:1', 'takes no argument'),
                ('all:', 'takes no argument')):
            err = self.assertRaises(ValueError, mapping.parse_rule, text)
            self.assertIn(fragment, str(err))
        self.assertRaises(ValueError, mapping.parse_rule, 3)

    def test_classify(self):
        q = mapping.parse_rule('queue:1,3')
        self.assertEqual([False, True, False, True, False],
                         [q(job(queue=n)) for n in (0, 1, 2, 3, -1)])
        p = mapping.parse_rule('partition:2')
        self.assertTrue(p(job(partition=2)))
        self.assertFalse(p(job(partition=1, queue=2)))
        self.assertTrue(mapping.parse_rule('all')(job()))
        self.assertFalse(mapping.parse_rule('none')(job()))

    def test_fraction_is_seeded_hash(self):
        rule = mapping.parse_rule('fraction:0.3')
        picks = [rule(job(n)) for n in range(1, 20001)]
        self.assertAlmostEqual(0.3, sum(picks) / len(picks), delta=0.02)
        self.assertEqual(picks, [rule(job(n)) for n in range(1, 20001)])
        # Independent of the other fields and of the order.
        self.assertEqual(rule(job(77, queue=1)), rule(job(77, submit=9)))
        other = mapping.parse_rule('fraction:0.3@1')
        self.assertNotEqual(picks, [other(job(n)) for n in range(1, 20001)])
        self.assertFalse(any(mapping.parse_rule('fraction:0')(job(n))
                             for n in range(1, 1000)))
        self.assertTrue(all(mapping.parse_rule('fraction:1')(job(n))
                            for n in range(1, 1000)))
        # Stable across processes (not Python's randomised hash()).
        self.assertAlmostEqual(mapping.hashed_unit(1, 0),
                               mapping.hashed_unit(1, 0))
        self.assertEqual(0.0 <= mapping.hashed_unit(5) < 1.0, True)


class MappingTest(testtools.TestCase):

    def test_policy_defaults_and_validation(self):
        policy = mapping.MappingPolicy()
        self.assertEqual((1, 8, 2000, 20, 1.0, 'fraction:0.5'), (
            policy.procs_per_vcpu, policy.max_vcpus_per_server,
            policy.memory_mb_per_vcpu, policy.disk_gb_per_vcpu,
            policy.time_compression, str(policy.preemptible_rule)))
        self.assertEqual(mapping.parse_rule('queue:2'), mapping.MappingPolicy(
            preemptible_rule='queue:2').preemptible_rule)
        for kwargs in ({'procs_per_vcpu': 0}, {'time_compression': -1},
                       {'time_compression': float('inf')},
                       {'max_vcpus_per_server': 0},
                       {'max_vcpus_per_server': 2.5},
                       {'memory_mb_per_vcpu': 0}, {'disk_gb_per_vcpu': -1},
                       {'preemptible_rule': 'bogus'}):
            self.assertRaises(ValueError, mapping.MappingPolicy, **kwargs)

    def test_split_of_big_jobs(self):
        policy = mapping.MappingPolicy()
        self.assertEqual((1, 1), policy.servers(1))
        self.assertEqual((1, 8), policy.servers(8))
        self.assertEqual((2, 8), policy.servers(16))
        self.assertEqual((3, 7), policy.servers(20))
        self.assertEqual((16, 8), policy.servers(128))
        p4 = mapping.MappingPolicy(procs_per_vcpu=4, max_vcpus_per_server=4)
        self.assertEqual((8, 4), p4.servers(128))
        self.assertEqual((1, 1), p4.servers(3))
        self.assertEqual((1, 2), p4.servers(5))

    def test_request_fields(self):
        trace = [job(1, 100, 50, 20, queue=1, line_no=7),
                 job(2, 160, 30, 2, queue=0, line_no=8)]
        reqs, summary = mapping.map_trace(trace, mapping.MappingPolicy(
            preemptible_rule='queue:1'))
        self.assertEqual(mapping.ServerRequest(
            job_id=1, submit=0.0, runtime=50.0, vcpus=7, memory_mb=14000,
            disk_gb=140, count=3, preemptible=True, source_line=7), reqs[0])
        self.assertEqual((2, 60.0, 2, 4000, 40, 1, False, 8), (
            reqs[1].job_id, reqs[1].submit, reqs[1].vcpus,
            reqs[1].memory_mb, reqs[1].disk_gb, reqs[1].count,
            reqs[1].preemptible, reqs[1].source_line))
        self.assertEqual(21, reqs[0].total_vcpus)
        self.assertEqual((2, 2, 1, 4, 23), (
            summary.jobs_read, summary.requests, summary.preemptible,
            summary.servers, summary.vcpus))

    def test_time_compression(self):
        trace = [job(1, 1000, 600), job(2, 4600, 3600)]
        reqs, _ = mapping.map_trace(trace, mapping.MappingPolicy(
            time_compression=60))
        self.assertEqual([(0.0, 10.0), (60.0, 60.0)],
                         [(r.submit, r.runtime) for r in reqs])

    def test_start_window_and_limit(self):
        trace = [job(n, 100 * n) for n in range(1, 11)]
        reqs, summary = mapping.map_trace(trace, start=300, window=400)
        self.assertEqual([3, 4, 5, 6], [r.job_id for r in reqs])
        self.assertEqual([0, 100, 200, 300], [r.submit for r in reqs])
        self.assertEqual({'before start': 2, 'after window': 4},
                         dict(summary.skipped))
        reqs, summary = mapping.map_trace(trace, limit=3)
        self.assertEqual([1, 2, 3], [r.job_id for r in reqs])
        self.assertTrue(summary.limited)
        self.assertIn('stopped at the limit', str(summary))
        self.assertEqual([], mapping.map_trace(trace, limit=0)[0])
        self.assertRaises(ValueError, mapping.map_trace, trace, limit=-1)
        self.assertRaises(ValueError, mapping.map_trace, trace, window=-1)

    def test_skips(self):
        trace = [job(1, 0), job(2, 1, status=5), job(3, 2, run=-1),
                 job(4, 3, procs=-1), job(5, 4, procs=0),
                 job(6, 5, procs=-1, req_procs=2), job(1, 6, status=3),
                 job(7, 7, status=0)]
        reqs, summary = mapping.map_trace(trace)
        self.assertEqual([1, 6, 7], [r.job_id for r in reqs])
        self.assertEqual(2, reqs[1].vcpus)
        self.assertEqual({'cancelled': 1, 'unknown run time': 1,
                          'unknown processors': 2,
                          'partial execution record': 1},
                         dict(summary.skipped))
        self.assertEqual(8, summary.jobs_read)
        text = str(summary)
        self.assertTrue(text.startswith('8 jobs read, 3 mapped'), text)
        self.assertIn('1 cancelled', text)
        self.assertIn('2 unknown processors', text)

    def test_sorted_and_from_trace(self):
        text = line(1, 0, 10, 4) + line(2, 5, 10, 32) + line(3, 5, 10, 1)
        trace = swf.read_swf(io.StringIO(text))
        reqs, summary = mapping.map_trace(trace, mapping.MappingPolicy(
            preemptible_rule='all'))
        self.assertEqual([1, 2, 3], [r.job_id for r in reqs])
        self.assertEqual([1, 2, 3], [r.source_line for r in reqs])
        self.assertEqual((4, 8, 1), (reqs[1].count, reqs[1].vcpus,
                                     reqs[2].vcpus))
        self.assertTrue(all(r.preemptible for r in reqs))
        reqs, _ = mapping.map_trace(list(reversed(trace.jobs)))
        self.assertEqual([(1, 0), (2, 5), (3, 5)],
                         [(r.job_id, r.submit) for r in reqs])
        # A plain iterator: time 0 is its first job.
        reqs, _ = mapping.map_trace(iter(trace.jobs[1:]))
        self.assertEqual([0, 0], [r.submit for r in reqs])


class RealTraceTest(testtools.TestCase):

    def trace(self, path):
        if not os.path.exists(path):
            self.skipTest('%s not found: the shared traces are not beside '
                          'this checkout' % os.path.basename(path))
        return swf.read_swf(path)

    def test_nasa(self):
        trace = self.trace(NASA)
        self.assertEqual(18239, len(trace))
        self.assertEqual(128, trace.max_procs)
        self.assertEqual(749458803, trace.unix_start_time)
        self.assertEqual('US/Pacific', trace.time_zone_string)
        self.assertEqual(128, max(j.allocated_procs for j in trace))
        # No queue or partition data despite the header's two queues.
        self.assertEqual({-1}, {j.queue for j in trace})
        self.assertEqual({-1}, {j.partition for j in trace})
        reqs, summary = mapping.map_trace(trace)
        self.assertEqual(18239, len(reqs))
        self.assertEqual(18239, summary.requests)
        share = summary.preemptible / summary.requests
        self.assertAlmostEqual(0.5, share, delta=0.02)
        reqs, summary = mapping.map_trace(trace, mapping.MappingPolicy(
            procs_per_vcpu=4, time_compression=60), limit=100)
        self.assertEqual(100, len(reqs))
        self.assertTrue(all(r.total_vcpus <= 32 for r in reqs))

    def test_lublin(self):
        trace = self.trace(LUBLIN)
        self.assertEqual(10000, len(trace))
        self.assertEqual(256, trace.max_procs)
        self.assertEqual({0}, {j.queue for j in trace})
        reqs, _ = mapping.map_trace(trace, mapping.MappingPolicy(
            preemptible_rule='queue:0'), limit=50)
        self.assertEqual(50, len(reqs))
        self.assertTrue(all(r.preemptible for r in reqs))
