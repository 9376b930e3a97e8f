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
"""Reader for the Standard Workload Format (SWF) of job traces.

Source: the Parallel Workloads Archive's definition of the Standard Workload
Format, version 2.2
(https://www.cs.huji.ac.il/labs/parallel/workload/swf.html).
A trace is a text file (often gzip-compressed) of header comments — lines
starting with ``;``, usually ``; Key: value`` — and one line per job of 18
whitespace-separated numeric fields, where ``-1`` means "unknown":

====  =====================  =========================================
 #    field                  unit / meaning
====  =====================  =========================================
 1    job number             counter, from 1
 2    submit time            seconds from the start of the log
 3    wait time              seconds
 4    run time               seconds (wall clock)
 5    allocated processors   processors
 6    average CPU time       seconds (per processor)
 7    used memory            KB (per processor, average)
 8    requested processors   processors
 9    requested time         seconds
10    requested memory       KB (per processor)
11    status                 1 completed, 0 failed, 5 cancelled;
                             2/3/4 partial execution records
12    user id                natural number
13    group id               natural number
14    executable id          natural number
15    queue                  natural number (0 = interactive, often)
16    partition              natural number
17    preceding job          job number this job depends on
18    think time             seconds after the preceding job ended
====  =====================  =========================================

What this reader enforces (each violation is an :class:`SWFError` naming the
line):

* exactly 18 fields, each a finite decimal number; integers where the field
  is a count or an identifier (job number, processors, status, ids, queue,
  partition, preceding job), floats allowed for times and memory (the
  standard permits fractional seconds);
* no negative value other than ``-1``; the job number and the submit time
  must be known (job number >= 1, submit time >= 0), and the status must be
  one of -1, 0..5;
* ordering: the standard says lines are sorted by ascending submit time and
  that job numbers are a counter, so a job line whose submit time is *lower*
  than the previous job's (equal is fine) or whose job number is not larger
  than the previous one's is rejected. Partial-execution records (status 2,
  3, 4) repeat the number of a job already seen and are exempt from both
  checks (they must not introduce a new job number);
* text: every line must be UTF-8 without control characters (binary data)
  and at most :data:`MAX_LINE_BYTES` long;
* at least one job: a file without job lines is an error.

Gzip is detected by the magic bytes, not by the file name; anything else is
read as plain text. Lines are read one at a time, so memory is proportional
to the number of jobs kept (use :func:`iter_swf` to stream without keeping
them).
"""

import dataclasses
import gzip
import io
import math
import os
import re
import zlib

#: Number of data fields in an SWF job line.
NUM_FIELDS = 18

#: Longest accepted line, in bytes (a real job line is < 200 bytes).
MAX_LINE_BYTES = 64 * 1024

#: Status codes (field 11).
STATUS_FAILED = 0
STATUS_COMPLETED = 1
STATUS_PARTIAL = 2
STATUS_PARTIAL_LAST_COMPLETED = 3
STATUS_PARTIAL_LAST_FAILED = 4
STATUS_CANCELLED = 5
PARTIAL_STATUSES = frozenset((STATUS_PARTIAL, STATUS_PARTIAL_LAST_COMPLETED,
                              STATUS_PARTIAL_LAST_FAILED))

_GZIP_MAGIC = b'\x1f\x8b'

# (attribute, human name, integer?, lowest value other than -1,
#  -1 allowed?)
_FIELDS = (
    ('job_number', 'job number', True, 1, False),
    ('submit_time', 'submit time', False, 0, False),
    ('wait_time', 'wait time', False, 0, True),
    ('run_time', 'run time', False, 0, True),
    ('allocated_procs', 'allocated processors', True, 0, True),
    ('avg_cpu_time', 'average CPU time', False, 0, True),
    ('used_memory_kb', 'used memory', False, 0, True),
    ('requested_procs', 'requested processors', True, 0, True),
    ('requested_time', 'requested time', False, 0, True),
    ('requested_memory_kb', 'requested memory', False, 0, True),
    ('status', 'status', True, 0, True),
    ('user_id', 'user id', True, 0, True),
    ('group_id', 'group id', True, 0, True),
    ('executable', 'executable', True, 0, True),
    ('queue', 'queue', True, 0, True),
    ('partition', 'partition', True, 0, True),
    ('preceding_job', 'preceding job', True, 0, True),
    ('think_time', 'think time', False, 0, True),
)

_NUMBER_RE = re.compile(r'[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\Z')
_CONTROL_RE = re.compile(r'[\x00-\x08\x0e-\x1f\x7f]')
_HEADER_RE = re.compile(r';([ \t]*)([A-Za-z][A-Za-z0-9_]*):(?:[ \t](.*))?\Z')


class SWFError(ValueError):
    """A trace that is not valid SWF.

    :ivar path: the file name (or ``'<stream>'``)
    :ivar line_no: 1-based line number, or ``None`` for whole-file problems
    :ivar reason: the message without the ``path:line:`` prefix

    ``str(err)`` is ``'path:line_no: reason'`` (e.g.
    ``'NASA.swf.gz:123: expected 18 fields, got 7'``).
    """

    def __init__(self, path, line_no, reason):
        self.path = path
        self.line_no = line_no
        self.reason = reason
        where = path if line_no is None else '%s:%d' % (path, line_no)
        super().__init__('%s: %s' % (where, reason))

    def __reduce__(self):
        return (type(self), (self.path, self.line_no, self.reason))


@dataclasses.dataclass(frozen=True, slots=True)
class SWFJob:
    """One job line of an SWF trace.

    Times are seconds, processors are counts, memory is KB (per processor);
    ``-1`` means unknown. Time and memory fields hold an ``int`` when the
    trace wrote an integer, a ``float`` otherwise. ``line_no`` is the 1-based
    line of the file the job came from.
    """

    job_number: int
    submit_time: float
    wait_time: float
    run_time: float
    allocated_procs: int
    avg_cpu_time: float
    used_memory_kb: float
    requested_procs: int
    requested_time: float
    requested_memory_kb: float
    status: int
    user_id: int
    group_id: int
    executable: int
    queue: int
    partition: int
    preceding_job: int
    think_time: float
    line_no: int = 0

    @property
    def procs(self):
        """Processors the job used: allocated if known, else requested,
        else -1.
        """
        if self.allocated_procs >= 0:
            return self.allocated_procs
        return self.requested_procs

    @property
    def is_partial(self):
        """True for a partial-execution record (status 2, 3 or 4)."""
        return self.status in PARTIAL_STATUSES


@dataclasses.dataclass
class SWFTrace:
    """A parsed trace.

    :ivar path: file name (or ``'<stream>'``)
    :ivar header: ``; Key: value`` comments as ``{key: value}`` (strings).
        A key given on several lines (e.g. ``Queue``, ``Note``) has its
        values joined with ``'\\n'``; indented continuation comment lines are
        appended to the previous key's value with a space.
    :ivar jobs: list of :class:`SWFJob`, in file order
    :ivar errors: :class:`SWFError` for every skipped line (only with
        ``skip_invalid=True``; empty otherwise)
    :ivar lines: number of lines read
    :ivar truncated: True if reading stopped at ``max_jobs``
    """

    path: str
    header: dict
    jobs: list
    errors: list = dataclasses.field(default_factory=list)
    lines: int = 0
    truncated: bool = False

    def __len__(self):
        return len(self.jobs)

    def __iter__(self):
        return iter(self.jobs)

    def header_int(self, key):
        """The header value ``key`` as an int, or None if absent or not an
        integer.
        """
        value = self.header.get(key, '').split('\n')[0].strip()
        try:
            return int(value)
        except ValueError:
            return None

    @property
    def max_procs(self):
        """``MaxProcs`` header (processors), else ``MaxNodes``, else None."""
        value = self.header_int('MaxProcs')
        return value if value is not None else self.header_int('MaxNodes')

    @property
    def max_nodes(self):
        """``MaxNodes`` header, or None."""
        return self.header_int('MaxNodes')

    @property
    def unix_start_time(self):
        """``UnixStartTime`` header (seconds since the epoch), or None."""
        return self.header_int('UnixStartTime')

    @property
    def time_zone_string(self):
        """``TimeZoneString`` header (e.g. ``'US/Pacific'``), or None."""
        return self.header.get('TimeZoneString')

    @property
    def span(self):
        """Seconds from the first to the last submit time."""
        if not self.jobs:
            return 0
        return self.jobs[-1].submit_time - self.jobs[0].submit_time


def read_swf(source, skip_invalid=False, max_jobs=None):
    """Read a whole SWF trace.

    :param source: a path (``str`` / ``os.PathLike``) or an open file object
        (binary or text). Gzip is detected by its magic bytes.
    :param skip_invalid: if False (default) the first invalid line raises;
        if True invalid lines are skipped and reported in
        :attr:`SWFTrace.errors`.
    :param max_jobs: stop after this many (valid) jobs; None reads all.
    :returns: :class:`SWFTrace`
    :raises SWFError: on an invalid line (unless ``skip_invalid``), on
        unreadable or corrupt compressed data, or when the trace has no
        (valid) job.
    :raises OSError: if the file cannot be opened.
    :raises ValueError: if ``max_jobs`` < 1.
    """
    header = {}
    errors = []
    state = {}
    jobs = list(iter_swf(source, header=header, errors=errors,
                         skip_invalid=skip_invalid, max_jobs=max_jobs,
                         _state=state))
    path = state['path']
    if not jobs:
        if errors:
            raise SWFError(path, None, 'no valid jobs (%d invalid lines '
                           'skipped, first: %s)' % (len(errors), errors[0]))
        raise SWFError(path, None, 'no jobs in trace')
    return SWFTrace(path, header, jobs, errors, state['lines'],
                    state['truncated'])


def iter_swf(source, header=None, errors=None, skip_invalid=False,
             max_jobs=None, _state=None):
    """Yield the :class:`SWFJob` of a trace one by one (constant memory).

    Same validation as :func:`read_swf`, except that an empty trace is not
    an error here. ``header`` (a dict) is filled with the header comments
    as they are read; ``errors`` (a list) receives the :class:`SWFError` of
    skipped lines when ``skip_invalid`` is True.
    """
    if max_jobs is not None and max_jobs < 1:
        raise ValueError('max_jobs must be >= 1, got %r' % (max_jobs,))
    if header is None:
        header = {}
    if errors is None:
        errors = []
    state = _state if _state is not None else {}
    stream, path, closers = _open(source)
    state.update(path=path, lines=0, truncated=False)
    parser = _Parser(path, header)
    count = 0
    try:
        for line_no, text in _lines(stream, path):
            state['lines'] = line_no
            try:
                if isinstance(text, SWFError):
                    raise text
                job = parser.parse(line_no, text)
            except SWFError as exc:
                if not skip_invalid:
                    raise
                errors.append(exc)
                continue
            if job is None:
                continue
            yield job
            count += 1
            if max_jobs is not None and count >= max_jobs:
                state['truncated'] = True
                break
    finally:
        for opened in closers:
            opened.close()


# -- input ---------------------------------------------------------------


def _name_of(source):
    name = getattr(source, 'name', None)
    if isinstance(name, (str, bytes, os.PathLike)):
        return os.fsdecode(name)
    return '<stream>'


class _Prefixed(io.RawIOBase):
    """A non-seekable binary stream with some already-read bytes put back."""

    def __init__(self, head, stream):
        super().__init__()
        self._head = head
        self._stream = stream

    def readable(self):
        return True

    def readinto(self, buf):
        if self._head:
            n = min(len(buf), len(self._head))
            buf[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._stream.read(len(buf))
        n = len(data)
        buf[:n] = data
        return n


class _TextPrefixed:
    """A text stream with some already-read characters put back."""

    def __init__(self, head, stream):
        self._head = head
        self._stream = stream

    def readline(self, limit=-1):
        if self._head:
            line, newline, rest = self._head.partition('\n')
            self._head = rest
            if newline:
                return line + newline
            return line + self._stream.readline(limit)
        return self._stream.readline(limit)


def _open(source):
    """Return (stream, path, closers): ``stream`` yields lines (bytes of the
    uncompressed data, or str for a text file object); ``closers`` are the
    streams this module opened and must close.
    """
    if isinstance(source, (str, bytes, os.PathLike)):
        path = os.fsdecode(source)
        raw = open(path, 'rb')
        closers = [raw]
    else:
        path = _name_of(source)
        raw = source
        closers = []
        if isinstance(raw, io.TextIOBase):
            return raw, path, closers
    try:
        if hasattr(raw, 'peek'):
            head = raw.peek(2)[:2]
        elif getattr(raw, 'seekable', lambda: False)():
            pos = raw.tell()
            head = raw.read(2)
            raw.seek(pos)
        else:
            head = raw.read(2)
            if isinstance(head, str):
                return _TextPrefixed(head, raw), path, closers
            raw = io.BufferedReader(_Prefixed(head, raw))
        if isinstance(head, str):       # a text stream not derived from io
            return raw, path, closers
        if head == _GZIP_MAGIC:
            raw = gzip.GzipFile(fileobj=raw, mode='rb')
            closers.insert(0, raw)
        return raw, path, closers
    except BaseException:
        for stream in closers:
            stream.close()
        raise


def _readline(stream, path, line_no):
    try:
        return stream.readline(MAX_LINE_BYTES + 1)
    except UnicodeDecodeError as exc:   # a text stream over binary data
        raise SWFError(path, line_no, 'not UTF-8 text (binary data?)'
                       ) from exc
    except (EOFError, OSError, zlib.error) as exc:
        # gzip.BadGzipFile is an OSError; truncated gzip data is EOFError.
        what = ('corrupt compressed data' if isinstance(stream, gzip.GzipFile)
                else 'read error')
        raise SWFError(path, line_no, '%s: %s' % (what, exc)) from exc


def _lines(stream, path):
    """Yield (line_no, str) — or (line_no, SWFError) for a line that is not
    text — without ever holding more than MAX_LINE_BYTES of one line.
    """
    line_no = 0
    while True:
        line_no += 1
        chunk = _readline(stream, path, line_no)
        if not chunk:
            return
        if len(chunk) > MAX_LINE_BYTES and not _ends_line(chunk):
            # Drain the rest of the over-long line.
            while chunk and not _ends_line(chunk):
                chunk = _readline(stream, path, line_no)
            yield line_no, SWFError(path, line_no, 'line longer than %d '
                                    'bytes (binary data?)' % MAX_LINE_BYTES)
            continue
        if isinstance(chunk, bytes):
            try:
                text = chunk.decode('utf-8')
            except UnicodeDecodeError:
                yield line_no, SWFError(path, line_no, 'not UTF-8 text '
                                        '(binary data?)')
                continue
        else:
            text = chunk
        yield line_no, text


def _ends_line(chunk):
    return chunk.endswith(b'\n' if isinstance(chunk, bytes) else '\n')


# -- parsing -------------------------------------------------------------


class _Parser:
    def __init__(self, path, header):
        self.path = path
        self.header = header
        self.last_key = None
        self.last_indent = 0
        self.last_submit = None
        self.last_job = 0

    def error(self, line_no, reason):
        return SWFError(self.path, line_no, reason)

    def parse(self, line_no, text):
        """Return an SWFJob, or None for a comment / blank line."""
        text = text.strip()
        if not text:
            self.last_key = None
            return None
        match = _CONTROL_RE.search(text)
        if match:
            raise self.error(line_no, 'control character 0x%02x (binary '
                             'data?)' % ord(match.group()))
        if text.startswith(';'):
            self._comment(text)
            return None
        self.last_key = None
        tokens = text.split()
        if len(tokens) != NUM_FIELDS:
            raise self.error(line_no, 'expected %d fields, got %d'
                             % (NUM_FIELDS, len(tokens)))
        values = [self._value(line_no, i, tok)
                  for i, tok in enumerate(tokens)]
        job = SWFJob(*values, line_no=line_no)
        if job.is_partial:
            if job.job_number > self.last_job:
                raise self.error(line_no, 'partial-execution record (status '
                                 '%d) of job %d, which has not appeared yet'
                                 % (job.status, job.job_number))
            return job
        if job.job_number <= self.last_job:
            raise self.error(line_no, 'job number %d is not larger than the '
                             'previous job number %d' % (job.job_number,
                                                         self.last_job))
        if self.last_submit is not None and job.submit_time < \
                self.last_submit:
            raise self.error(line_no, 'submit time %s is earlier than the '
                             'previous job\'s (%s); SWF lines are sorted by '
                             'submit time' % (job.submit_time,
                                              self.last_submit))
        self.last_job = job.job_number
        self.last_submit = job.submit_time
        return job

    def _value(self, line_no, index, tok):
        attr, name, integer, lowest, unknown_ok = _FIELDS[index]
        if tok.isascii() and tok.isdigit():
            value = int(tok)
        elif tok == '-1':
            value = -1
        else:
            if not _NUMBER_RE.match(tok):
                raise self.error(line_no, 'field %d (%s) is not a number: %r'
                                 % (index + 1, name, tok))
            value = float(tok)
            if not math.isfinite(value):
                raise self.error(line_no, 'field %d (%s) is out of range: '
                                 '%r' % (index + 1, name, tok))
            if value.is_integer():
                value = int(value)
            elif integer:
                raise self.error(line_no, 'field %d (%s) must be an integer, '
                                 'got %r' % (index + 1, name, tok))
        if value == -1:
            if not unknown_ok:
                raise self.error(line_no, 'field %d (%s) must be known, got '
                                 '-1' % (index + 1, name))
        elif value < lowest:
            raise self.error(line_no, 'field %d (%s) is %s; the lowest '
                             'allowed value is %d%s'
                             % (index + 1, name, tok, lowest,
                                ' (or -1 for unknown)' if unknown_ok
                                else ''))
        if attr == 'status' and value > STATUS_CANCELLED:
            raise self.error(line_no, 'field 11 (status) is %s; SWF status '
                             'is -1 or 0..5' % tok)
        return value

    def _comment(self, text):
        match = _HEADER_RE.match(text)
        body = text[1:].strip()
        if match:
            indent = len(match.group(1).expandtabs())
            if self.last_key is None or indent <= self.last_indent:
                key, value = match.group(2), (match.group(3) or '').strip()
                if key in self.header:
                    self.header[key] += '\n' + value
                else:
                    self.header[key] = value
                self.last_key = key
                self.last_indent = indent
                return
        if not body:
            self.last_key = None
            return
        if self.last_key is not None:
            indent = len(text[1:]) - len(text[1:].lstrip())
            if indent > self.last_indent:
                sep = ' ' if self.header[self.last_key] else ''
                self.header[self.last_key] += sep + body
                return
        # A free-form comment: not part of the header dict.
        self.last_key = None
