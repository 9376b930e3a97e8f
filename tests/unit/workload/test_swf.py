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
"""Tests of the Standard Workload Format reader (opie_sched.workload.swf)."""

import gzip
import io
import os
import pickle
import shutil
import tempfile

import testtools

from opie_sched.workload import swf

from tests.unit.workload.helpers import job
from tests.unit.workload.helpers import line


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

JOBS = (line(1, 0, 1451, 128) + line(2, 1460, 3726, 8, queue=1)
        + line(3, 1460, 20, 1, partition=2) + line(5, 5198.5, 0.25, 16))
TEXT = HEADER + JOBS


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
