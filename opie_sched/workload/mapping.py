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
"""Turn trace jobs into server requests for a cloud.

A rigid parallel job of an SWF trace (:mod:`opie_sched.workload.swf`)
becomes one :class:`ServerRequest`: ``count`` identical servers booted
together at the job's submit time and deleted after its run time. The job's
processors become vCPUs (``procs_per_vcpu`` processors per vCPU, rounded
up); a job larger than ``max_vcpus_per_server`` is split into the fewest
servers of at most that size, of equal size (so the total may be rounded up
by less than one vCPU per server: 20 vCPUs at most 8 per server become 3
servers of 7). Memory and disk are proportional to the vCPUs, as in the
flavors of the preemptible-instances paper (1 vCPU / 2000 MB / 20 GB,
2 / 4000 / 40, 4 / 8000 / 80); the trace's memory fields are not used (most
traces leave them unknown).

Which jobs are preemptible is a :class:`PreemptibleRule`, written as a
string for the command line (:func:`parse_rule`):

``none`` / ``all``
    no job / every job.
``queue:N[,N...]``
    jobs whose SWF queue field (15) is one of the numbers.
``partition:N[,N...]``
    jobs whose SWF partition field (16) is one of the numbers.
``fraction:F[@SEED]``
    a share ``F`` (0..1) of the jobs, chosen by a seeded hash of the job
    number (default seed 0): reproducible, independent of the order or the
    subset of jobs mapped, and usable for traces without queues.

The default rule is ``fraction:0.5``. Reason: the traces at hand carry no
usable queue or partition. The NASA Ames iPSC/860 log (cleaned, 18,239
jobs) has ``-1`` in both fields for every job, although its header lists two
queues (0 interactive, 1 batch) and notes that "there is no data about batch
queues"; the Lublin model trace has queue 0 for every job and no partition.
A queue rule would therefore mark no job or every job preemptible, whereas
an even hashed split gives the demo both classes on any trace. For a trace
with real queues, pass e.g. ``queue:1`` (the batch queue of traces that
number interactive as 0, as NASA's header does).

Jobs that cannot be mapped are skipped and counted by reason
(:data:`SKIP_REASONS`): partial-execution records (status 2, 3, 4: the
job's own line already covers them), cancelled jobs (status 5), unknown run
time, unknown or zero processors, and jobs outside ``start`` / ``window``.
"""

import collections
import collections.abc
import dataclasses
import hashlib
import math

from opie_sched.workload import swf

SKIP_PARTIAL = 'partial execution record'
SKIP_CANCELLED = 'cancelled'
SKIP_NO_RUNTIME = 'unknown run time'
SKIP_NO_PROCS = 'unknown processors'
SKIP_BEFORE_START = 'before start'
SKIP_AFTER_WINDOW = 'after window'
#: Why :func:`map_trace` skips a job, in the order the checks are made.
SKIP_REASONS = (SKIP_PARTIAL, SKIP_CANCELLED, SKIP_BEFORE_START,
                SKIP_AFTER_WINDOW, SKIP_NO_RUNTIME, SKIP_NO_PROCS)

_RULE_KINDS = ('none', 'all', 'queue', 'partition', 'fraction')
DEFAULT_RULE = 'fraction:0.5'


@dataclasses.dataclass(frozen=True)
class ServerRequest:
    """``count`` identical servers requested together.

    :ivar job_id: trace job number (or the generator's request number)
    :ivar submit: seconds from the start of the workload, after time
        compression
    :ivar runtime: seconds each server runs, after time compression
    :ivar vcpus: vCPUs per server
    :ivar memory_mb: MB of RAM per server
    :ivar disk_gb: GB of root disk per server
    :ivar count: number of servers
    :ivar preemptible: True for a preemptible (spot) request
    :ivar source_line: trace line of the job, or None if generated
    """

    job_id: int
    submit: float
    runtime: float
    vcpus: int
    memory_mb: int
    disk_gb: int
    count: int = 1
    preemptible: bool = False
    source_line: int = None

    @property
    def total_vcpus(self):
        """vCPUs of all the request's servers."""
        return self.vcpus * self.count


@dataclasses.dataclass(frozen=True)
class PreemptibleRule:
    """Which trace jobs are preemptible; see the module docstring.

    Build with :func:`parse_rule`; call with an :class:`~.swf.SWFJob` to
    classify it. ``str(rule)`` gives back the rule's text.
    """

    kind: str
    values: frozenset = frozenset()
    fraction: float = 0.0
    seed: int = 0

    def __call__(self, job):
        if self.kind == 'all':
            return True
        if self.kind == 'queue':
            return job.queue in self.values
        if self.kind == 'partition':
            return job.partition in self.values
        if self.kind == 'fraction':
            return hashed_unit(job.job_number, self.seed) < self.fraction
        return False

    def __str__(self):
        if self.kind in ('queue', 'partition'):
            return '%s:%s' % (self.kind, ','.join(
                str(v) for v in sorted(self.values)))
        if self.kind == 'fraction':
            text = 'fraction:%g' % self.fraction
            return text + ('@%d' % self.seed if self.seed else '')
        return self.kind


def hashed_unit(job_number, seed=0):
    """A number in [0, 1) determined by ``(seed, job_number)`` alone
    (BLAKE2b, so stable across processes and Python versions).
    """
    digest = hashlib.blake2b(b'%d:%d' % (seed, job_number),
                             digest_size=8).digest()
    return int.from_bytes(digest, 'big') / 2.0 ** 64


def parse_rule(text):
    """Parse a preemptible rule (``none``, ``all``, ``queue:2,3``,
    ``partition:1``, ``fraction:0.5``, ``fraction:0.5@7``).

    :returns: :class:`PreemptibleRule`
    :raises ValueError: naming the problem and the accepted forms.
    """
    if isinstance(text, PreemptibleRule):
        return text
    if not isinstance(text, str):
        raise ValueError('preemptible rule must be a string, got %r'
                         % (text,))
    forms = ('expected one of none, all, queue:N[,N...], '
             'partition:N[,N...], fraction:F[@SEED]')
    kind, colon, arg = text.strip().partition(':')
    kind = kind.strip().lower()
    arg = arg.strip()
    if kind not in _RULE_KINDS:
        raise ValueError('unknown preemptible rule %r: %s' % (text, forms))
    if kind in ('none', 'all'):
        if colon:
            raise ValueError('preemptible rule %r: %r takes no argument'
                             % (text, kind))
        return PreemptibleRule(kind)
    if not arg:
        raise ValueError('preemptible rule %r: %r needs an argument (%s)'
                         % (text, kind, forms))
    if kind == 'fraction':
        value, at, seed = arg.partition('@')
        try:
            fraction = float(value)
        except ValueError:
            raise ValueError('preemptible rule %r: fraction %r is not a '
                             'number' % (text, value)) from None
        if not 0.0 <= fraction <= 1.0:
            raise ValueError('preemptible rule %r: fraction must be between '
                             '0 and 1' % (text,))
        try:
            seed = int(seed) if at else 0
        except ValueError:
            raise ValueError('preemptible rule %r: seed %r is not an '
                             'integer' % (text, seed)) from None
        return PreemptibleRule(kind, fraction=fraction, seed=seed)
    values = set()
    for item in arg.split(','):
        item = item.strip()
        try:
            number = int(item)
        except ValueError:
            raise ValueError('preemptible rule %r: %s %r is not an integer'
                             % (text, kind, item)) from None
        if number < 0:
            raise ValueError('preemptible rule %r: %s numbers are >= 0'
                             % (text, kind))
        values.add(number)
    return PreemptibleRule(kind, values=frozenset(values))


@dataclasses.dataclass(frozen=True)
class MappingPolicy:
    """How trace jobs become server requests.

    :ivar procs_per_vcpu: trace processors per vCPU (default 1; e.g. 4 maps
        a 128-processor job to 32 vCPUs)
    :ivar max_vcpus_per_server: largest server, in vCPUs (default 8, one
        demo host); larger jobs are split into several equal servers
    :ivar memory_mb_per_vcpu: MB of RAM per vCPU (default 2000)
    :ivar disk_gb_per_vcpu: GB of disk per vCPU (default 20)
    :ivar time_compression: trace seconds per replay second (default 1.0;
        60 replays a trace hour in a minute); divides submit and run times
    :ivar preemptible_rule: a :class:`PreemptibleRule` or its text (parsed
        on construction); default ``fraction:0.5``, see the module docstring
    :raises ValueError: on a non-positive size or compression, or a bad
        rule.
    """

    procs_per_vcpu: float = 1
    max_vcpus_per_server: int = 8
    memory_mb_per_vcpu: int = 2000
    disk_gb_per_vcpu: int = 20
    time_compression: float = 1.0
    preemptible_rule: PreemptibleRule = dataclasses.field(
        default_factory=lambda: parse_rule(DEFAULT_RULE))

    def __post_init__(self):
        for name in ('procs_per_vcpu', 'time_compression'):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value)
                    and value > 0):
                raise ValueError('%s must be a positive number, got %r'
                                 % (name, value))
        for name, lowest in (('max_vcpus_per_server', 1),
                             ('memory_mb_per_vcpu', 1),
                             ('disk_gb_per_vcpu', 0)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or \
                    value < lowest:
                raise ValueError('%s must be an integer >= %d, got %r'
                                 % (name, lowest, value))
        object.__setattr__(self, 'preemptible_rule',
                           parse_rule(self.preemptible_rule))

    def servers(self, procs):
        """(count, vcpus per server) for a job of ``procs`` processors."""
        total = max(1, math.ceil(procs / self.procs_per_vcpu))
        count = math.ceil(total / self.max_vcpus_per_server)
        return count, math.ceil(total / count)


@dataclasses.dataclass
class MappingSummary:
    """What :func:`map_trace` did.

    :ivar jobs_read: jobs looked at
    :ivar requests: requests produced
    :ivar preemptible: of which preemptible
    :ivar servers: servers in all requests
    :ivar vcpus: vCPUs in all requests
    :ivar skipped: ``Counter`` reason -> jobs (see :data:`SKIP_REASONS`)
    :ivar limited: True if mapping stopped at ``limit``
    """

    jobs_read: int = 0
    requests: int = 0
    preemptible: int = 0
    servers: int = 0
    vcpus: int = 0
    skipped: collections.Counter = dataclasses.field(
        default_factory=collections.Counter)
    limited: bool = False

    def __str__(self):
        text = '%d jobs read, %d mapped (%d preemptible)' % (
            self.jobs_read, self.requests, self.preemptible)
        skipped = [(r, self.skipped[r]) for r in SKIP_REASONS
                   if self.skipped[r]]
        if skipped:
            text += '; skipped %s' % ', '.join(
                '%d %s' % (n, r) for r, n in skipped)
        if self.limited:
            text += '; stopped at the limit'
        return text


def map_job(job, policy, origin=0.0):
    """Map one job whose run time and processors are known.

    :returns: :class:`ServerRequest` with ``submit`` counted from
        ``origin`` (trace seconds), both times divided by the policy's
        compression.
    """
    count, vcpus = policy.servers(job.procs)
    return ServerRequest(
        job_id=job.job_number,
        submit=(job.submit_time - origin) / policy.time_compression,
        runtime=job.run_time / policy.time_compression,
        vcpus=vcpus,
        memory_mb=vcpus * policy.memory_mb_per_vcpu,
        disk_gb=vcpus * policy.disk_gb_per_vcpu,
        count=count,
        preemptible=bool(policy.preemptible_rule(job)),
        source_line=job.line_no or None)


def map_trace(trace, policy=None, limit=None, start=None, window=None):
    """Map the jobs of a trace to server requests.

    :param trace: :class:`~.swf.SWFTrace` or any iterable of
        :class:`~.swf.SWFJob` in submit order
    :param policy: :class:`MappingPolicy` (default: ``MappingPolicy()``)
    :param limit: at most this many requests (None: all)
    :param start: ignore jobs submitted before this trace time (seconds, in
        the trace's own submit-time scale); it is also time 0 of the result.
        Default: no lower bound, and time 0 is the earliest submit time (of
        a sequence; of the first job for other iterables).
    :param window: ignore jobs submitted ``window`` trace seconds or more
        after ``start`` (None: no end)
    :returns: ``(requests, summary)``: the list of :class:`ServerRequest`
        sorted by ``(submit, job_id)`` and a :class:`MappingSummary`
    :raises ValueError: on a negative ``limit`` or ``window``.
    """
    if policy is None:
        policy = MappingPolicy()
    if limit is not None and limit < 0:
        raise ValueError('limit must be >= 0, got %r' % (limit,))
    if window is not None and window < 0:
        raise ValueError('window must be >= 0, got %r' % (window,))
    summary = MappingSummary()
    requests = []
    jobs = trace.jobs if isinstance(trace, swf.SWFTrace) else trace
    origin = start
    if origin is None and isinstance(jobs, collections.abc.Sequence):
        origin = min((j.submit_time for j in jobs if not j.is_partial),
                     default=None)
    end = None
    for job in jobs:
        if limit is not None and len(requests) >= limit:
            summary.limited = True
            break
        summary.jobs_read += 1
        if origin is None:
            origin = job.submit_time
        if end is None and window is not None:
            end = origin + window
        reason = None
        if job.is_partial:
            reason = SKIP_PARTIAL
        elif job.status == swf.STATUS_CANCELLED:
            reason = SKIP_CANCELLED
        elif start is not None and job.submit_time < start:
            reason = SKIP_BEFORE_START
        elif end is not None and job.submit_time >= end:
            reason = SKIP_AFTER_WINDOW
        elif job.run_time < 0:
            reason = SKIP_NO_RUNTIME
        elif job.procs <= 0:
            reason = SKIP_NO_PROCS
        if reason:
            summary.skipped[reason] += 1
            continue
        req = map_job(job, policy, origin)
        requests.append(req)
        summary.requests += 1
        summary.preemptible += req.preemptible
        summary.servers += req.count
        summary.vcpus += req.total_vcpus
    requests.sort(key=lambda r: (r.submit, r.job_id))
    return requests, summary
