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
"""Tests of opie_sched.workload: SWF reader, trace mapping, generator."""

import collections
import gzip
import io
import os
import pickle
import shutil
import statistics
import tempfile

import testtools

from opie_sched.workload import generator
from opie_sched.workload import mapping
from opie_sched.workload import swf
import tests

TRACES = os.path.join(os.path.dirname(tests.ROOT), 'shared', 'traces')
NASA = os.path.join(TRACES, 'NASA-iPSC-1993-3.1-cln.swf.gz')
LUBLIN = os.path.join(TRACES, 'lublin_256.swf.gz')

HEADER = """\
; Version: 2.2
; Computer: Test machine
; Information: http://example.org/one
;              http://example.org/two
;
; UnixStartTime: 749458803
; TimeZoneString: US/Pacific
; MaxNodes: 64
; MaxProcs: 128
; Note: first note
;       continued here
; Note: second note
; Queue:  0  interactive
; Queue:  1  batch
"""


def line(job=1, submit=0, run=100, procs=4, status=1, queue=-1,
         partition=-1, wait=-1, req_procs=-1, user=1):
    fields = [job, submit, wait, run, procs, -1, -1, req_procs, -1, -1,
              status, user, -1, -1, queue, partition, -1, -1]
    return ' '.join(str(f) for f in fields) + '\n'


JOBS = (line(1, 0, 1451, 128) + line(2, 1460, 3726, 8, queue=1)
        + line(3, 1460, 20, 1, partition=2) + line(5, 5198.5, 0.25, 16))
TEXT = HEADER + JOBS


def job(number=1, submit=0, run=100, procs=4, status=1, queue=-1,
        partition=-1, req_procs=-1, line_no=0):
    return swf.SWFJob(number, submit, -1, run, procs, -1, -1, req_procs,
                      -1, -1, status, -1, -1, -1, queue, partition, -1, -1,
                      line_no=line_no)


class TempDirMixin:

    def setUp(self):
        super().setUp()
        self.dir = tempfile.mkdtemp(prefix='opie-workload-')
        self.addCleanup(shutil.rmtree, self.dir, True)

    def write(self, name, data, compress=False):
        path = os.path.join(self.dir, name)
        if isinstance(data, str):
            data = data.encode('utf-8')
        if compress:
            data = gzip.compress(data)
        with open(path, 'wb') as f:
            f.write(data)
        return path


class ReadSWFTest(TempDirMixin, testtools.TestCase):

    def check_trace(self, trace):
        self.assertEqual([1, 2, 3, 5], [j.job_number for j in trace.jobs])
        first = trace.jobs[0]
        self.assertEqual((0, 1451, 128, 1, 1), (
            first.submit_time, first.run_time, first.allocated_procs,
            first.status, first.user_id))
        self.assertIsInstance(first.run_time, int)
        self.assertEqual(5198.5, trace.jobs[3].submit_time)
        self.assertEqual(0.25, trace.jobs[3].run_time)
        self.assertEqual(1, trace.jobs[1].queue)
        self.assertEqual(2, trace.jobs[2].partition)
        n_header = HEADER.count('\n')
        self.assertEqual([n_header + i for i in (1, 2, 3, 4)],
                         [j.line_no for j in trace.jobs])
        self.assertEqual(4, len(trace))
        self.assertEqual([], trace.errors)
        self.assertFalse(trace.truncated)
        self.assertEqual(5198.5, trace.span)

    def test_plain_file(self):
        path = self.write('t.swf', TEXT)
        trace = swf.read_swf(path)
        self.check_trace(trace)
        self.assertEqual(path, trace.path)

    def test_gzip_detected_by_magic_not_name(self):
        self.check_trace(swf.read_swf(self.write('t.txt', TEXT, True)))
        self.check_trace(swf.read_swf(self.write('plain.swf.gz', TEXT)))

    def test_file_objects(self):
        self.check_trace(swf.read_swf(io.BytesIO(TEXT.encode())))
        self.check_trace(swf.read_swf(io.BytesIO(gzip.compress(
            TEXT.encode()))))
        self.check_trace(swf.read_swf(io.StringIO(TEXT)))
        with open(self.write('t.swf.gz', TEXT, True), 'rb') as f:
            trace = swf.read_swf(f)
            self.assertFalse(f.closed)
        self.check_trace(trace)
        self.assertTrue(trace.path.endswith('t.swf.gz'))

    def test_non_seekable_stream(self):
        class Pipe:
            def __init__(self, data):
                self._data = io.BytesIO(data)

            def read(self, n=-1):
                return self._data.read(min(n, 3) if n > 0 else n)

        self.check_trace(swf.read_swf(Pipe(gzip.compress(TEXT.encode()))))
        self.check_trace(swf.read_swf(Pipe(TEXT.encode())))

    def test_crlf_and_blank_lines(self):
        text = TEXT.replace('\n', '\r\n').replace(JOBS.replace(
            '\n', '\r\n'), '\r\n' + JOBS.replace('\n', '\r\n\r\n'))
        trace = swf.read_swf(io.BytesIO(text.encode()))
        self.assertEqual([1, 2, 3, 5], [j.job_number for j in trace.jobs])

    def test_header(self):
        trace = swf.read_swf(io.StringIO(TEXT))
        h = trace.header
        self.assertEqual('2.2', h['Version'])
        self.assertEqual('Test machine', h['Computer'])
        self.assertEqual('http://example.org/one http://example.org/two',
                         h['Information'])
        self.assertNotIn('http', h)
        self.assertEqual('first note continued here\nsecond note',
                         h['Note'])
        self.assertEqual('0  interactive\n1  batch', h['Queue'])
        self.assertEqual(128, trace.max_procs)
        self.assertEqual(64, trace.max_nodes)
        self.assertEqual(749458803, trace.unix_start_time)
        self.assertEqual('US/Pacific', trace.time_zone_string)
        self.assertIsNone(trace.header_int('Computer'))

    def test_max_procs_falls_back_to_max_nodes(self):
        trace = swf.read_swf(io.StringIO('; MaxNodes: 256\n' + line()))
        self.assertEqual(256, trace.max_procs)
        self.assertIsNone(trace.unix_start_time)
        self.assertIsNone(trace.time_zone_string)

    def test_equal_submit_times_and_partial_records(self):
        text = (line(1, 10) + line(2, 10) + line(2, 30, status=2)
                + line(1, 20, status=3) + line(3, 10))
        trace = swf.read_swf(io.StringIO(text))
        self.assertEqual([1, 2, 2, 1, 3],
                         [j.job_number for j in trace.jobs])
        self.assertEqual([False, False, True, True, False],
                         [j.is_partial for j in trace.jobs])

    def test_procs_falls_back_to_requested(self):
        self.assertEqual(6, job(procs=-1, req_procs=6).procs)
        self.assertEqual(4, job(procs=4, req_procs=6).procs)

    def test_max_jobs(self):
        trace = swf.read_swf(io.StringIO(TEXT), max_jobs=2)
        self.assertEqual([1, 2], [j.job_number for j in trace.jobs])
        self.assertTrue(trace.truncated)
        self.assertRaises(ValueError, swf.read_swf, io.StringIO(TEXT),
                          max_jobs=0)

    def test_iter_swf_streams(self):
        header = {}
        it = swf.iter_swf(io.StringIO(TEXT), header=header)
        first = next(it)
        self.assertEqual(1, first.job_number)
        self.assertEqual('2.2', header['Version'])
        self.assertEqual([2, 3, 5], [j.job_number for j in it])

    def test_error_attributes(self):
        err = swf.SWFError('NASA.swf.gz', 123, 'expected 18 fields, got 7')
        self.assertEqual('NASA.swf.gz:123: expected 18 fields, got 7',
                         str(err))
        self.assertIsInstance(err, ValueError)
        copy = pickle.loads(pickle.dumps(err))
        self.assertEqual((str(err), 'NASA.swf.gz', 123),
                         (str(copy), copy.path, copy.line_no))
        self.assertEqual('x.swf: no jobs in trace',
                         str(swf.SWFError('x.swf', None, 'no jobs in trace')))


class RejectSWFTest(TempDirMixin, testtools.TestCase):

    def assertRejects(self, data, line_no, fragment, name='bad.swf',
                      compress=False):
        path = self.write(name, data, compress)
        err = self.assertRaises(swf.SWFError, swf.read_swf, path)
        self.assertEqual(line_no, err.line_no)
        self.assertEqual(path, err.path)
        prefix = path if line_no is None else '%s:%d' % (path, line_no)
        self.assertTrue(str(err).startswith(prefix + ': '), str(err))
        self.assertIn(fragment, str(err))
        return err

    def test_wrong_field_count(self):
        err = self.assertRejects('; Version: 2\n' + line() + '1 2 3 4 5 6 7\n',
                                 3, 'expected 18 fields, got 7')
        self.assertEqual('expected 18 fields, got 7', err.reason)
        self.assertRejects(line().strip() + ' 9\n', 1,
                           'expected 18 fields, got 19')

    def test_non_numeric(self):
        self.assertRejects(line(1) + line(2).replace(' 100 ', ' abc ', 1), 2,
                           "field 4 (run time) is not a number: 'abc'")
        self.assertRejects(line().replace(' 100 ', ' 1_00 ', 1), 1,
                           'not a number')
        self.assertRejects(line().replace(' 100 ', ' nan ', 1), 1,
                           'not a number')
        self.assertRejects(line().replace(' 100 ', ' 1e999 ', 1), 1,
                           'out of range')

    def test_integer_fields(self):
        self.assertRejects(line(procs=4).replace(' 4 ', ' 2.5 ', 1), 1,
                           'field 5 (allocated processors) must be an '
                           'integer')
        trace = swf.read_swf(io.StringIO(line().replace(' 4 ', ' 4.0 ', 1)))
        self.assertEqual(4, trace.jobs[0].allocated_procs)

    def test_negative_values(self):
        self.assertRejects(line(run=-5), 1, 'field 4 (run time) is -5')
        self.assertRejects(line(procs=-2), 1,
                           'field 5 (allocated processors) is -2')
        self.assertRejects(line(queue=-3), 1, 'or -1 for unknown')
        self.assertRejects(line(job=-1), 1, 'field 1 (job number) must be '
                           'known')
        self.assertRejects(line(job=0), 1, 'field 1 (job number) is 0')
        self.assertRejects(line(submit=-1), 1, 'field 2 (submit time) must '
                           'be known')
        # -1 is "unknown" where allowed.
        trace = swf.read_swf(io.StringIO(line(run=-1, procs=-1, queue=-1)))
        self.assertEqual(-1, trace.jobs[0].run_time)

    def test_status(self):
        self.assertRejects(line(status=7), 1, 'SWF status is -1 or 0..5')
        for status in (-1, 0, 1, 5):
            swf.read_swf(io.StringIO(line(status=status)))

    def test_submit_time_going_backwards(self):
        self.assertRejects(line(1, 100) + line(2, 100) + line(3, 99), 3,
                           'submit time 99 is earlier than the previous')

    def test_job_number_not_increasing(self):
        self.assertRejects(line(1) + line(3) + line(3), 3,
                           'job number 3 is not larger than')
        self.assertRejects(line(5) + line(2), 2, 'job number 2')

    def test_partial_record_of_unknown_job(self):
        self.assertRejects(line(1) + line(2, status=2), 2,
                           'partial-execution record (status 2) of job 2')

    def test_not_utf8(self):
        self.assertRejects(line(1).encode() + b'\xff\xfe\x00garbage\n', 2,
                           'not UTF-8')

    def test_text_stream_over_binary_data(self):
        path = self.write('bin.swf', line(1).encode() + b'\xff\xfe\n')
        with open(path, encoding='utf-8') as f:
            err = self.assertRaises(swf.SWFError, swf.read_swf, f)
        self.assertIn('not UTF-8', str(err))

    def test_binary_garbage(self):
        self.assertRejects(line(1) + line(2) + '\x00\x01\x02 binary\n', 3,
                           'control character 0x00')
        self.assertRejects(b'\x89PNG\r\n\x1a\n\x00\x00', 1, 'not UTF-8')

    def test_overlong_line(self):
        self.assertRejects(line(1) + 'x' * (swf.MAX_LINE_BYTES + 10) + '\n'
                           + line(2), 2, 'line longer than')
        self.assertRejects(line(1) + '7' * (swf.MAX_LINE_BYTES * 3), 2,
                           'line longer than')

    def test_empty(self):
        self.assertRejects('', None, 'no jobs in trace')
        self.assertRejects(HEADER + '\n\n', None, 'no jobs in trace')
        self.assertRejects('', None, 'no jobs in trace', name='e.gz',
                           compress=True)

    def test_corrupt_gzip(self):
        data = gzip.compress((HEADER + ''.join(
            line(i, i) for i in range(1, 2000))).encode())
        path = self.write('cut.swf.gz', data[:len(data) // 2])
        err = self.assertRaises(swf.SWFError, swf.read_swf, path)
        # The error names the line being read when the data ran out.
        self.assertGreater(err.line_no, HEADER.count('\n'))
        self.assertIn('%s:%d: corrupt compressed data' % (path, err.line_no),
                      str(err))
        bad = bytearray(data)
        bad[len(bad) // 2] ^= 0xff
        self.assertRaises(swf.SWFError, swf.read_swf, io.BytesIO(bytes(bad)))

    def test_error_in_gzip_names_line(self):
        self.assertRejects(HEADER + line(1) + '1 2 3\n', HEADER.count('\n')
                           + 2, 'expected 18 fields, got 3',
                           name='NASA.swf.gz', compress=True)


class SkipInvalidTest(testtools.TestCase):

    def test_collects_errors_and_keeps_good_lines(self):
        text = (line(1, 0) + '1 2 3\n' + line(2, 10) + line(3, 5)
                + line(4, 20, run=-7) + b'\xff\n'.decode('latin-1')
                + line(5, 30))
        data = text.encode('latin-1')
        trace = swf.read_swf(io.BytesIO(data), skip_invalid=True)
        self.assertEqual([1, 2, 5], [j.job_number for j in trace.jobs])
        self.assertEqual([2, 4, 5, 6], [e.line_no for e in trace.errors])
        self.assertIn('expected 18 fields', trace.errors[0].reason)
        self.assertIn('earlier than', trace.errors[1].reason)
        self.assertIn('run time', trace.errors[2].reason)
        self.assertIn('UTF-8', trace.errors[3].reason)
        self.assertEqual(7, trace.lines)
        # Without skip_invalid the first bad line raises.
        err = self.assertRaises(swf.SWFError, swf.read_swf, io.BytesIO(data))
        self.assertEqual(2, err.line_no)

    def test_all_invalid(self):
        err = self.assertRaises(swf.SWFError, swf.read_swf,
                                io.StringIO('1 2\n3 4\n'), skip_invalid=True)
        self.assertIsNone(err.line_no)
        self.assertIn('no valid jobs (2 invalid lines skipped', str(err))


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


class GeneratorTest(testtools.TestCase):

    def test_reproducible_by_seed(self):
        a = generator.generate(seed=7)
        self.assertEqual(a, generator.generate(seed=7))
        self.assertNotEqual(a, generator.generate(seed=8))
        self.assertEqual(generator.DEFAULT_COUNT, len(a))
        self.assertEqual(generator.generate(), generator.generate(
            seed=generator.DEFAULT_SEED, count=None))
        # Changing the class mix leaves arrivals, sizes and runtimes alone.
        b = generator.generate(seed=7, preemptible_fraction=0.9)
        self.assertEqual([(r.submit, r.vcpus, r.runtime) for r in a],
                         [(r.submit, r.vcpus, r.runtime) for r in b])

    def test_shape_of_requests(self):
        reqs = generator.generate(seed=1, count=50)
        self.assertEqual(list(range(1, 51)), [r.job_id for r in reqs])
        self.assertEqual(0.0, reqs[0].submit)
        submits = [r.submit for r in reqs]
        self.assertEqual(sorted(submits), submits)
        flavors = set(generator.FLAVORS.values())
        for r in reqs:
            self.assertIn((r.vcpus, r.memory_mb, r.disk_gb), flavors)
            self.assertEqual((1, None), (r.count, r.source_line))
            self.assertTrue(600 <= r.runtime <= 4 * 3600)
        self.assertEqual([], generator.generate(count=0))

    def test_statistics(self):
        reqs = generator.generate(seed=3, count=4000, rate_per_hour=60,
                                  preemptible_fraction=0.3,
                                  flavor_weights=(2, 1, 1))
        share = sum(r.preemptible for r in reqs) / len(reqs)
        self.assertAlmostEqual(0.3, share, delta=0.03)
        gaps = [b.submit - a.submit for a, b in zip(reqs, reqs[1:])]
        self.assertAlmostEqual(60.0, statistics.mean(gaps), delta=4.0)
        sizes = collections.Counter(r.vcpus for r in reqs)
        self.assertAlmostEqual(0.5, sizes[1] / len(reqs), delta=0.03)
        self.assertAlmostEqual(0.25, sizes[4] / len(reqs), delta=0.03)
        # Median of the density x**-2 on [L, H]: 1 / ((1/L + 1/H) / 2).
        low, high = 600.0, 14400.0
        median = 1.0 / ((1.0 / low + 1.0 / high) / 2.0)
        self.assertAlmostEqual(median, statistics.median(
            r.runtime for r in reqs), delta=0.06 * median)

    def test_default_demo_load(self):
        reqs = generator.generate()
        pre = sum(r.preemptible for r in reqs)
        self.assertTrue(30 <= pre <= 70, pre)
        hours = reqs[-1].submit / 3600.0
        self.assertTrue(2.0 <= hours <= 6.0, hours)
        # Offered load is of the order of the demo's 32 vCPUs.
        load = sum(r.vcpus * r.runtime for r in reqs) / reqs[-1].submit
        self.assertTrue(16 <= load <= 64, load)

    def test_bounded_power_law(self):
        import random
        rng = random.Random(0)
        draws = [generator.bounded_power_law(rng, 10, 1000, 1.0)
                 for _ in range(5000)]
        self.assertTrue(all(10 <= d <= 1000 for d in draws))
        # exponent 1 is log-uniform: median sqrt(10 * 1000) = 100.
        self.assertAlmostEqual(100, statistics.median(draws), delta=10)
        self.assertEqual(5.0, generator.bounded_power_law(rng, 5, 5, 2.0))
        self.assertRaises(ValueError, generator.bounded_power_law, rng, 0,
                          5, 2.0)

    def test_validation(self):
        for kwargs in ({'count': -1}, {'rate_per_hour': 0},
                       {'preemptible_fraction': 1.5},
                       {'flavor_weights': (1, 1)},
                       {'flavor_weights': (0, 0, 0)},
                       {'flavor_weights': (1, -1, 1)},
                       {'runtime_min': 0}, {'runtime_min': 10,
                                            'runtime_max': 5}):
            self.assertRaises(ValueError, generator.generate, **kwargs)

    def test_diurnal_cpu(self):
        self.assertAlmostEqual(2.0, generator.diurnal_cpu(0, 4, 1, 0))
        self.assertAlmostEqual(4.0, generator.diurnal_cpu(21600, 4, 1, 0))
        self.assertAlmostEqual(0.0, generator.diurnal_cpu(64800, 4, 1, 0))
        self.assertAlmostEqual(3.0, generator.diurnal_cpu(21600, 4, 0.5, 0))
        # s shifts the peak by s days.
        self.assertAlmostEqual(4.0, generator.diurnal_cpu(43200, 4, 1, 0.25))
        self.assertAlmostEqual(2.0, generator.diurnal_cpu(12345, 4, 0, 0.3))
        import numpy
        values = generator.diurnal_cpu(numpy.array([0, 21600, 64800]), 4, 1,
                                       0)
        numpy.testing.assert_allclose([2.0, 4.0, 0.0], values, atol=1e-9)
        self.assertRaises(ValueError, generator.diurnal_cpu, 0, 4, 1.5, 0)
        self.assertRaises(ValueError, generator.diurnal_cpu, 0, 4, 0.5, -1)


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
