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
"""Replay a workload through the compute API of a cloud.

Time is virtual: events (server requests and their ends) are processed in
trace order, as fast as the cloud serves them, and the report measures
utilisation in trace time. On the embedded cloud, so that cost modules see
the trace's runtimes, every running instance's ``launched_at`` is set to the
wall-clock time that corresponds to its virtual start before each normal
request is scheduled (a remote cloud's cost modules see real ages).
"""

import collections
import dataclasses
import heapq
import time

from opie_sched.demo import targets
from opie_sched.simcore import metrics


@dataclasses.dataclass
class Sample:
    """Cloud state right after an event, in virtual seconds and vCPU."""

    t: float
    normal_vcpus: float
    preemptible_vcpus: float


@dataclasses.dataclass
class NormalOutcome:
    """What became of one normal request.

    :ivar job_id: the workload's job id. :ivar t: virtual seconds.
    :ivar size: ``(vCPU, MB, GB)`` of its flavor. :ivar count: servers.
    :ivar hosts: the host of each server, sorted, None for a server that
        failed (sorted last).
    """

    job_id: object
    t: float
    size: tuple
    count: int
    hosts: tuple

    @property
    def failed(self):
        """Servers of the request that failed."""
        return sum(1 for h in self.hosts if h is None)


@dataclasses.dataclass
class NormalFailure:
    """A normal request that failed and why.

    :ivar job_id: the workload's job id. :ivar t: virtual seconds.
    :ivar size: ``(vCPU, MB, GB)`` of its flavor. :ivar count: servers
        asked for. :ivar failed: servers that failed.
    :ivar fault: the failed server's fault message (Nova's), or None.
    :ivar room: ``{host: (vCPU, MB, GB)}`` free in the normal state
        (Placement's standard classes) right after the failure, or None
        where the cloud does not tell.
    """

    job_id: object
    t: float
    size: tuple
    count: int
    failed: int
    fault: object = None
    room: object = None


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
    #: in the cost module's unit; None where the cloud does not tell
    preemption_cost: float = 0.0
    preemption_decisions: int = 0
    wall_seconds: float = 0.0
    samples: list = dataclasses.field(default_factory=list)
    #: [NormalFailure], in replay order
    failures: list = dataclasses.field(default_factory=list)
    #: [NormalOutcome], one per normal request, in replay order
    normal_outcomes: list = dataclasses.field(default_factory=list)

    def utilisation(self, kinds=('normal', 'preemptible'), window=None):
        """Time-weighted vCPU utilisation (0..1): the integral of the vCPU
        in use (:func:`opie_sched.simcore.metrics.step_integral`, the
        simulator's too) over ``(end - start) * capacity_vcpus``.

        :param kinds: which classes count (``'normal'``, ``'preemptible'``).
        :param window: ``(start, end)`` in virtual seconds; default the
            replay's own first to last sample. Comparing two replays needs
            one window (:func:`opie_sched.demo.report.common_window`).

        The default window differs from the simulator's on purpose: a
        replay runs every server to its end (its last sample is an empty
        cloud, at the last server's end), so first request to last end is
        the whole run; the simulator stops its default window at the last
        arrival (:meth:`opie_sched.simulator.engine.SimResult.window`).
        """
        if len(self.samples) < 2 or self.capacity_vcpus <= 0:
            return 0.0
        start, end = window or (self.samples[0].t, self.samples[-1].t)
        if end <= start:
            return 0.0
        t = [s.t for s in self.samples]
        area = sum(metrics.step_integral(
            t, [getattr(s, '%s_vcpus' % kind) for s in self.samples],
            start, end) for kind in kinds)
        return area / ((end - start) * self.capacity_vcpus)


class Replayer:
    """Drive a cloud with a list of
    :class:`~opie_sched.workload.mapping.ServerRequest`.

    :param target: where to replay: an
        :class:`~opie_sched.demo.targets.OpenStackTarget` (any cloud through
        openstacksdk) or :class:`~opie_sched.demo.targets.EmbeddedTarget`.
    :param requests: the workload.
    :param label: the replay's name in the report.
    :param progress: callable given a progress line every
        ``progress_every`` requests, or None.
    """

    def __init__(self, target, requests, label, progress=None,
                 progress_every=10):
        self.target = target
        self.requests = sorted(requests, key=lambda r: (r.submit, r.job_id))
        self.label = label
        self.progress = progress
        self.progress_every = progress_every
        self._running = {}          # server uuid -> (request, virtual start)

    # -- the loop --------------------------------------------------------

    def run(self):
        """Replay every request; servers still running at the end are
        deleted.

        :returns: :class:`ReplayResult`.
        :raises opie_sched.demo.targets.ReplayError: a request failed for
            another reason than the cloud refusing it (the message names
            the request and the cloud).
        """
        result = ReplayResult(self.label, self.target.capacity_vcpus)
        if not self.target.virtual_launch_times:
            result.preemption_cost = None
        started = time.monotonic()
        try:
            self._loop(result)
        finally:
            result.wall_seconds = time.monotonic() - started
        self.target.cleanup()
        return result

    def _loop(self, result):
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
                        self.target.delete_server(uuid)
            else:
                done += 1
                ok = self._start(result, req, vnow)
                if ok:
                    seq += 1
                    heapq.heappush(events, (vnow + req.runtime, 0, seq,
                                            'end', req, ok))
            result.samples.append(self._sample(vnow))
            if self.progress and kind == 'start' and (
                    done % self.progress_every == 0
                    or done == len(self.requests)):
                self.progress(self._progress_line(result, done, vnow))

    def _start(self, result, req, vnow):
        result.requests += 1
        if req.preemptible:
            result.preemptible_requests += 1
        else:
            result.normal_requests += 1
            self.target.sync_launched_at(
                {u: start for u, (_, start) in self._running.items()}, vnow)
        try:
            ok, failed = self.target.boot(
                self.target.server_name(req.job_id),
                self.target.flavor_id(req), req.count)
        except targets.ReplayError as exc:
            raise targets.ReplayError('request of job %s at t=%s (%d x %d '
                                      'vCPU, %s): %s' % (
                                          req.job_id, _hms(vnow), req.count,
                                          req.vcpus, 'preemptible'
                                          if req.preemptible else 'normal',
                                          exc)) from None
        result.servers_booted += len(ok)
        size = (req.vcpus, req.memory_mb, req.disk_gb)
        if not req.preemptible:
            result.normal_outcomes.append(NormalOutcome(
                req.job_id, vnow, size, req.count, tuple(sorted(
                    (self.target.hosts.get(u) or '?' for u in ok)))
                + (None,) * len(failed)))
        if failed:
            if req.preemptible:
                result.preemptible_rejected += 1
            else:
                result.normal_failed += 1
                faults = [self.target.faults.get(u) for u in failed]
                result.failures.append(NormalFailure(
                    req.job_id, vnow, size, req.count, len(failed),
                    next((f for f in faults if f), None),
                    self.target.normal_room()))
        for uuid in ok:
            self._running[uuid] = (req, vnow)
        self._collect_preemptions(result)
        return ok

    def _collect_preemptions(self, result):
        for decision in self.target.collect_preemptions(
                list(self._running)):
            result.preemption_decisions += 1
            if decision.cost is not None and \
                    result.preemption_cost is not None:
                result.preemption_cost += decision.cost
            for uuid in decision.victims:
                result.preemptions += 1
                self._running.pop(uuid, None)

    def _sample(self, vnow):
        use = collections.Counter()
        for req, _ in self._running.values():
            use['preemptible' if req.preemptible else 'normal'] += req.vcpus
        return Sample(vnow, use['normal'], use['preemptible'])

    def _progress_line(self, result, done, vnow):
        s = result.samples[-1] if result.samples else Sample(0, 0, 0)
        cap = self.target.capacity_vcpus or 1
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
