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
"""Event-driven simulated time: arrivals, departures and preemptions.

A workload is a list of :class:`~opie_sched.workload.mapping.ServerRequest`
(from a trace via :func:`opie_sched.workload.mapping.map_trace`, or from
:func:`opie_sched.workload.generator.generate`). Each request arrives at its
``submit`` second and asks for ``count`` servers at once; a placed server
departs ``runtime`` seconds later unless it is preempted first. A request
that finds no host fails at once (a cloud's NoValidHost; there is no queue).
Events at the same second are handled departures first, then arrivals in
``(submit, job_id)`` order. Victims are terminated at the arrival that
preempts them, before its servers start (the opie scheduler holds the
request until its victims are gone, see :mod:`opie_sched.scheduler.manager`).

Time, the instances' placement and the samples are the shared core's
(:mod:`opie_sched.simcore`): the arrivals and the departure queue
are merged by :func:`opie_sched.simcore.clock.merge`, the cloud's
hosts are a :class:`opie_sched.simcore.hosts.Hosts` and the samples
a :class:`opie_sched.simcore.metrics.Series`.

After every event the engine records a sample (one per distinct time) of
vCPU in use by normal and preemptible instances, active hosts, and the
running totals of failed normal requests, rejected preemptible requests,
preemptions and their cost: a step function of time, see
:class:`SimResult`.
"""

import dataclasses
import math
import time

from opie_sched.simcore import clock
from opie_sched.simcore import metrics
from opie_sched.simulator import cloud as cloud_mod
from opie_sched.simulator import policies as policies_mod

#: Columns of :attr:`SimResult.series`, in order, with their units.
SERIES = (
    ('t', 's'),
    ('normal_vcpus', 'vCPU'),
    ('preemptible_vcpus', 'vCPU'),
    ('active_hosts', 'hosts'),
    ('normal_failed', 'requests'),
    ('preemptible_rejected', 'requests'),
    ('preemptions', 'instances'),
    ('preemption_cost', 'policy units'),
)


@dataclasses.dataclass
class Decision:
    """One placed server (kept only with ``record_decisions``).

    :ivar t: simulated seconds.
    :ivar job_id: the request's job number.
    :ivar uuid: the server.
    :ivar host: host name.
    :ivar preemptible: the server's class.
    :ivar victims: uuids terminated to make room for it.
    :ivar cost: their total cost (policy units).
    """

    t: float
    job_id: int
    uuid: str
    host: str
    preemptible: bool
    victims: tuple = ()
    cost: float = 0.0


@dataclasses.dataclass
class SimResult:
    """What one simulation measured.

    Counts are of requests (a request holds ``count`` servers) unless they
    say servers or instances; times are simulated seconds; costs are in the
    cost policy's unit (seconds for ``billing_period``).

    :ivar series: dict column -> numpy array ``(n_samples,)``, columns and
        units in :data:`SERIES`; each sample holds from its ``t`` until the
        next one's.
    :ivar horizon: end of the default utilisation window (the last
        arrival, unless the caller set it).
    """

    label: str
    policy: str
    n_hosts: int
    capacity_vcpus: float
    requests: int = 0
    normal_requests: int = 0
    preemptible_requests: int = 0
    servers_requested: int = 0
    servers_booted: int = 0
    normal_failed: int = 0
    normal_blocked_by_preemptible: int = 0
    preemptible_rejected: int = 0
    preemption_decisions: int = 0
    preemptions: int = 0
    preemption_cost: float = 0.0
    lost_vcpu_seconds: float = 0.0
    scheduling_passes: int = 0
    events: int = 0
    wall_seconds: float = 0.0
    horizon: float = 0.0
    series: dict = dataclasses.field(default_factory=dict)
    decisions: list = dataclasses.field(default_factory=list)

    @property
    def extra_passes(self):
        """Scheduling passes beyond one per request (``retry``)."""
        return self.scheduling_passes - self.requests

    @property
    def events_per_second(self):
        return self.events / self.wall_seconds if self.wall_seconds else 0.0

    def window(self):
        """``(start, end)`` of the default utilisation window: first sample
        to :attr:`horizon` (to the last sample if the horizon is not
        later than the start).

        The horizon is the last arrival: after it the cloud only drains,
        and a window running to the last departure would report the
        drain's emptying cloud as the policy's utilisation. The demo's
        replay, which measures a whole run against a baseline, integrates
        the same step function (:func:`opie_sched.simcore.metrics.
        step_integral`) from the first request to the last server's end.
        """
        t = self.series.get('t')
        if t is None or not len(t):
            return 0.0, 0.0
        start = float(t[0])
        end = self.horizon if self.horizon > start else float(t[-1])
        return start, end

    def _integral(self, column, start, end):
        return metrics.step_integral(self.series['t'], self.series[column],
                                     start, end)

    def utilisation(self, kinds=('normal', 'preemptible'), start=None,
                    end=None):
        """Time-weighted vCPU utilisation (0..1) of the cloud's capacity.

        :param kinds: which classes count (``'normal'``, ``'preemptible'``).
        :param start: window start, seconds (default :meth:`window`).
        :param end: window end, seconds (default :meth:`window`).
        """
        d_start, d_end = self.window()
        start = d_start if start is None else start
        end = d_end if end is None else end
        if end <= start or self.capacity_vcpus <= 0:
            return 0.0
        area = sum(self._integral('%s_vcpus' % kind, start, end)
                   for kind in kinds)
        return area / ((end - start) * self.capacity_vcpus)

    def mean_active_hosts(self, start=None, end=None):
        """Time-weighted mean number of hosts running an instance."""
        d_start, d_end = self.window()
        start = d_start if start is None else start
        end = d_end if end is None else end
        if end <= start:
            return 0.0
        return self._integral('active_hosts', start, end) / (end - start)

    def as_dict(self):
        """The counters and utilisations, JSON-ready (no time series)."""
        start, end = self.window()
        return {
            'label': self.label, 'policy': self.policy,
            'hosts': self.n_hosts, 'capacity_vcpus': self.capacity_vcpus,
            'requests': self.requests,
            'normal_requests': self.normal_requests,
            'preemptible_requests': self.preemptible_requests,
            'servers_requested': self.servers_requested,
            'servers_booted': self.servers_booted,
            'normal_failed': self.normal_failed,
            'normal_blocked_by_preemptible':
                self.normal_blocked_by_preemptible,
            'preemptible_rejected': self.preemptible_rejected,
            'preemption_decisions': self.preemption_decisions,
            'preemptions': self.preemptions,
            'preemption_cost': self.preemption_cost,
            'lost_vcpu_seconds': self.lost_vcpu_seconds,
            'scheduling_passes': self.scheduling_passes,
            'extra_passes': self.extra_passes,
            'window_seconds': [start, end],
            'utilisation': self.utilisation(),
            'utilisation_normal': self.utilisation(('normal',)),
            'utilisation_preemptible': self.utilisation(('preemptible',)),
            'mean_active_hosts': self.mean_active_hosts(),
            'events': self.events,
            'wall_seconds': self.wall_seconds,
            'events_per_second': self.events_per_second,
        }


class Simulator:
    """Run workloads on a :class:`~opie_sched.simulator.cloud.Cloud`.

    :param cloud: the cloud (changed by :meth:`run`; use a new one per run).
    :param policy: a :class:`~opie_sched.simulator.policies.Policy`.
    :param record_decisions: keep a :class:`Decision` per placed server.
    :param progress: callable taking one line of text, or None.
    :param progress_every: report every this many arrivals (0: never).
    """

    def __init__(self, cloud, policy, record_decisions=False, progress=None,
                 progress_every=0):
        self.cloud = cloud
        self.policy = policy
        self.record_decisions = record_decisions
        self.progress = progress
        self.progress_every = progress_every

    def run(self, requests, label=None, horizon=None):
        """Simulate ``requests`` from an empty cloud until the last
        departure.

        :param requests: iterable of
            :class:`~opie_sched.workload.mapping.ServerRequest`.
        :param label: the result's name (default: the policy's name).
        :param horizon: end of the default utilisation window, seconds
            (default: the last arrival).
        :returns: :class:`SimResult`.
        """
        cloud = self.cloud
        arrivals = clock.Arrivals(requests, key=lambda r: (r.submit,
                                                           r.job_id),
                                  time=lambda r: r.submit)
        result = SimResult(label or self.policy.name, self.policy.name,
                           cloud.n_hosts, cloud.capacity_vcpus)
        last = arrivals.last_time()
        result.horizon = (horizon if horizon is not None
                          else (last if last is not None else 0.0))
        series = metrics.Series(name for name, _ in SERIES)
        departures = clock.EventQueue()
        n = arrivals.total
        started = time.perf_counter()
        for kind, t, item in clock.merge(arrivals, departures):
            if kind is clock.EVENT:
                if item not in cloud:
                    continue            # preempted earlier
                cloud.remove(item)
            else:
                i, req = item
                uuids = ['r%08d-%03d' % (i, k) for k in range(req.count)]
                outcome = self.policy.schedule(cloud, req, uuids, t)
                self._account(result, req, outcome, t)
                if outcome.ok:
                    end = t + max(req.runtime, 0.0)
                    for uuid in uuids:
                        departures.push(end, uuid)
                i += 1
                if self.progress and self.progress_every and (
                        i % self.progress_every == 0 or i == n):
                    self.progress(self._progress_line(result, i, n, t))
            result.events += 1
            series.record((t, cloud.normal_vcpus, cloud.preemptible_vcpus,
                           cloud.active_hosts, result.normal_failed,
                           result.preemptible_rejected, result.preemptions,
                           result.preemption_cost))
        result.wall_seconds = time.perf_counter() - started
        result.series = series.arrays()
        return result

    def _account(self, result, req, outcome, t):
        cloud = self.cloud
        result.requests += 1
        result.servers_requested += req.count
        result.scheduling_passes += outcome.passes
        if req.preemptible:
            result.preemptible_requests += 1
        else:
            result.normal_requests += 1
        if not outcome.ok:
            if req.preemptible:
                result.preemptible_rejected += 1
            else:
                result.normal_failed += 1
                result.normal_blocked_by_preemptible += \
                    outcome.blocked_by_preemptible
            return
        result.servers_booted += req.count
        for _, info, cost, start in outcome.victims:
            result.preemptions += 1
            result.preemption_cost += cost
            result.lost_vcpu_seconds += info.resources.vcpus * max(
                t - start, 0.0)
        result.preemption_decisions += sum(
            1 for _, _, plan in outcome.placements if plan.victims)
        if self.record_decisions:
            for uuid, host, plan in outcome.placements:
                result.decisions.append(Decision(
                    t, req.job_id, uuid, cloud.names[host], req.preemptible,
                    tuple(inst.uuid for inst, _ in plan.victims),
                    plan.total_cost))

    def _progress_line(self, result, done, total, t):
        cloud = self.cloud
        cap = cloud.capacity_vcpus or 1.0
        return ('[%s %*d/%d] t=%s in use: normal %g vCPU, preemptible %g '
                'vCPU (%.0f%% of %g); failed %d, rejected %d, preempted %d'
                % (result.label, len(str(total)), done, total, _hms(t),
                   cloud.normal_vcpus, cloud.preemptible_vcpus,
                   100.0 * (cloud.normal_vcpus + cloud.preemptible_vcpus)
                   / cap, cap, result.normal_failed,
                   result.preemptible_rejected, result.preemptions))


def simulate(requests, n_hosts=16, policy=None, spec=None, label=None,
             horizon=None, record_decisions=False, progress=None,
             progress_every=0):
    """Build a uniform cloud and run ``requests`` on it.

    :param n_hosts: number of hosts.
    :param policy: a :class:`~opie_sched.simulator.policies.Policy` or a
        policy name (default ``opie`` with the ``billing_period`` cost).
    :param spec: :class:`~opie_sched.simulator.cloud.HostSpec` of every
        host (default 8 vCPU / 16000 MB / 200 GB).
    :returns: :class:`SimResult`.
    """
    if policy is None or isinstance(policy, str):
        policy = policies_mod.make_policy(policy or
                                          policies_mod.DEFAULT_POLICY)
    sim = Simulator(cloud_mod.Cloud.uniform(n_hosts, spec), policy,
                    record_decisions=record_decisions, progress=progress,
                    progress_every=progress_every)
    return sim.run(requests, label=label, horizon=horizon)


def _hms(seconds):
    if not math.isfinite(seconds):
        return str(seconds)
    seconds = int(seconds)
    return '%d:%02d:%02d' % (seconds // 3600, seconds // 60 % 60,
                             seconds % 60)
