"""Replay a workload through the Nova API of an embedded cloud.

Time is virtual: events (server requests and their ends) are processed in
trace order, as fast as Nova serves them, and the report measures
utilisation in trace time. So that cost modules see the trace's runtimes,
every running instance's ``launched_at`` is set to the wall-clock time that
corresponds to its virtual start before each normal request is scheduled.
"""

import collections
import dataclasses
import datetime
import heapq
import time

from oslo_utils import timeutils

from nova import context as nova_context
from nova import objects

from opie_sched import flavors
from opie_sched.scheduler import actions


@dataclasses.dataclass
class Sample:
    """Cloud state right after an event, in virtual seconds and vCPU."""

    t: float
    normal_vcpus: float
    preemptible_vcpus: float


@dataclasses.dataclass
class ReplayResult:
    """What one replay measured.

    Times are virtual seconds; utilisation is the time-weighted share of
    the cloud's vCPU capacity in use (0..1).
    """

    label: str
    capacity_vcpus: float
    requests: int = 0
    normal_requests: int = 0
    preemptible_requests: int = 0
    normal_failed: int = 0
    preemptible_rejected: int = 0
    servers_booted: int = 0
    preemptions: int = 0
    preemption_cost: float = 0.0
    preemption_decisions: int = 0
    wall_seconds: float = 0.0
    samples: list = dataclasses.field(default_factory=list)
    failures: list = dataclasses.field(default_factory=list)

    def utilisation(self, kinds=('normal', 'preemptible'), window=None):
        """Time-weighted vCPU utilisation (0..1).

        :param kinds: which classes count (``'normal'``, ``'preemptible'``).
        :param window: ``(start, end)`` in virtual seconds; default the
            replay's own first to last sample. Comparing two replays needs
            one window: after the last sample nothing runs.
        """
        if len(self.samples) < 2 or self.capacity_vcpus <= 0:
            return 0.0
        start, end = window or (self.samples[0].t, self.samples[-1].t)
        area = 0.0
        for a, b in zip(self.samples, self.samples[1:]):
            lo, hi = max(a.t, start), min(b.t, end)
            if hi <= lo:
                continue
            used = ((a.normal_vcpus if 'normal' in kinds else 0)
                    + (a.preemptible_vcpus if 'preemptible' in kinds else 0))
            area += used * (hi - lo)
        span = end - start
        return area / (span * self.capacity_vcpus) if span > 0 else 0.0


class Replayer:
    """Drive an embedded cloud (:class:`~opie_sched.demo.cloud.EmbeddedCloud`)
    with a list of :class:`~opie_sched.workload.mapping.ServerRequest`."""

    def __init__(self, cloud, requests, label, progress=None,
                 progress_every=10):
        self.cloud = cloud
        self.requests = sorted(requests, key=lambda r: (r.submit, r.job_id))
        self.label = label
        self.progress = progress
        self.progress_every = progress_every
        self._flavors = {}
        self._running = {}          # server uuid -> (request, virtual start)
        self._notes_seen = 0

    # -- flavors ---------------------------------------------------------

    def flavor_id(self, req):
        key = (req.vcpus, req.memory_mb, req.disk_gb, req.preemptible)
        if key not in self._flavors:
            name = 'demo.c%dm%dd%d%s' % (req.vcpus, req.memory_mb,
                                         req.disk_gb, '.preemptible'
                                         if req.preemptible else '')
            specs = (flavors.preemptible_extra_specs(
                req.vcpus, req.memory_mb, req.disk_gb)
                if req.preemptible else None)
            self._flavors[key] = self.cloud.create_flavor(
                name, req.vcpus, req.memory_mb, req.disk_gb, specs)
        return self._flavors[key]

    # -- virtual time ----------------------------------------------------

    def _sync_launched_at(self, vnow):
        """Make every running instance look ``vnow - start`` seconds old."""
        if not self._running:
            return
        wall = timeutils.utcnow()
        ctx = nova_context.get_admin_context()
        with nova_context.target_cell(ctx, self.cloud.cell) as cctxt:
            insts = objects.InstanceList.get_by_filters(
                cctxt, {'uuid': list(self._running), 'deleted': False})
            for inst in insts:
                _, vstart = self._running[inst.uuid]
                inst.launched_at = wall - datetime.timedelta(
                    seconds=max(vnow - vstart, 0))
                inst.save()

    # -- the loop --------------------------------------------------------

    def run(self):
        result = ReplayResult(self.label, self.cloud.capacity_vcpus)
        started = time.monotonic()
        events = []
        for seq, req in enumerate(self.requests):
            heapq.heappush(events, (req.submit, 1, seq, 'start', req, None))
        seq = len(self.requests)
        done = 0
        while events:
            vnow, _, _, kind, req, uuids = heapq.heappop(events)
            if kind == 'end':
                for uuid in uuids:
                    if uuid in self._running:
                        del self._running[uuid]
                        self.cloud.delete_server(uuid)
            else:
                done += 1
                result.requests += 1
                if req.preemptible:
                    result.preemptible_requests += 1
                else:
                    result.normal_requests += 1
                    self._sync_launched_at(vnow)
                ok, failed = self.cloud.boot(
                    'job%s' % req.job_id, self.flavor_id(req), req.count)
                result.servers_booted += len(ok)
                if failed:
                    if req.preemptible:
                        result.preemptible_rejected += 1
                    else:
                        result.normal_failed += 1
                        result.failures.append((req.job_id, failed))
                for uuid in ok:
                    self._running[uuid] = (req, vnow)
                if ok:
                    seq += 1
                    heapq.heappush(events, (vnow + req.runtime, 0, seq,
                                            'end', req, ok))
                self._collect_preemptions(result)
            result.samples.append(self._sample(vnow))
            if self.progress and kind == 'start' and (
                    done % self.progress_every == 0
                    or done == len(self.requests)):
                self.progress(self._progress_line(result, done, vnow))
        result.wall_seconds = time.monotonic() - started
        return result

    def _collect_preemptions(self, result):
        notes = self.cloud.notifications()
        for note in notes[self._notes_seen:]:
            if note['event_type'] != actions.EVENT_TYPE:
                continue
            data = note['payload']['nova_object.data']
            result.preemption_decisions += 1
            result.preemption_cost += data['total_cost']
            for victim in data['victims']:
                result.preemptions += 1
                self._running.pop(victim['uuid'], None)
        self._notes_seen = len(notes)

    def _sample(self, vnow):
        use = collections.Counter()
        for req, _ in self._running.values():
            use['preemptible' if req.preemptible else 'normal'] += req.vcpus
        return Sample(vnow, use['normal'], use['preemptible'])

    def _progress_line(self, result, done, vnow):
        s = result.samples[-1] if result.samples else Sample(0, 0, 0)
        cap = self.cloud.capacity_vcpus or 1
        return ('[%s %4d/%d] t=%s running: normal %3g vCPU, preemptible '
                '%3g vCPU (%3.0f%% of %g) preemptions %d' % (
                    self.label, done, len(self.requests),
                    _hms(vnow), s.normal_vcpus, s.preemptible_vcpus,
                    100.0 * (s.normal_vcpus + s.preemptible_vcpus) / cap,
                    cap, result.preemptions))


def _hms(seconds):
    seconds = int(seconds)
    return '%d:%02d:%02d' % (seconds // 3600, seconds // 60 % 60,
                             seconds % 60)
