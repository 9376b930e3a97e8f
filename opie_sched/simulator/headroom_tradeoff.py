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
"""Scenario ``headroom-tradeoff``: notice given vs normal requests slowed
vs utilisation given up, at several headroom sizes (issue 31, item 4).

A batch trace of the Parallel Workloads Archive (NASA iPSC/860, HPC2N,
Lublin's model) is replayed as *normal* demand on a cloud of as many
8-vCPU hosts as the trace's machine has processors / 8, and a generated
stream of preemptible servers backfills the idle capacity (offering
``backfill_load`` x the cloud's vCPU, as ``opie-sched simulate --scenario
nasa-backfill``). The same workload is replayed with a headroom of 0 and
of a few fractions of the capacity (:data:`HEADROOM_FRACTIONS`), in two
shapes (:data:`SHAPES`), and each run reports:

* the notice the victims got (p5, p50 and the share with the full
  ``notice_seconds``), seconds;
* the normal requests that found no free room (they had to preempt at
  once, or wait for victims under notice) and, when they wait, how long
  (p50, p95, seconds);
* the utilisation given up for the headroom: vCPU utilisation (normal and
  preemptible) at headroom 0 minus at this headroom, percentage points,
  over the same window (first arrival to the last trace arrival);
* the victims taken, and the extra ones against headroom 0.

The model (what is assumed; each point is a choice the real reconciler
may make differently, and its effect on the table is named):

Time and placement
    The shared engine's pieces: :class:`~opie_sched.simulator.cloud.Cloud`
    (dual host state, Placement's normal-state filter), the simulated
    clock of :mod:`opie_sched.simcore.clock` (departures before arrivals
    at the same second) and :class:`~opie_sched.simulator.engine
    .SimResult` for the utilisation's step integral. A request of
    ``count`` servers is placed all or nothing and fails at once when it
    cannot be (no queue: a cloud's NoValidHost). Trace jobs larger than a
    host are split into servers of at most 8 vCPU
    (:func:`opie_sched.workload.mapping.map_trace`).
Headroom
    ``H`` = the fraction x the cloud's capacity, in vCPU, MB and GB
    alike. The aggregate is the whole simulated cloud. Its *free normal
    capacity* ``F`` is the full-state free room of every host plus the
    room held by victims already under notice (it will be free by their
    deadline). After every event (arrival, departure, deadline) the
    reconciler, idealised to react at once, compares: when ``F < H`` in
    some dimension it chooses, among the preemptible servers not yet under
    notice, the cheapest set that frees ``H - F`` with the project's exact
    selection
    (:func:`opie_sched.preemption.victims.select_victims`, the cost
    modules of ``[opie_preemption] cost_modules``, default
    ``billing_period``) over the pooled candidates of the aggregate, marks
    them at risk and gives them notice: deadline = now +
    ``notice_seconds`` (120 s). When even all of them cannot free
    ``H - F``, nothing is taken (as the reconciler of the ``headroom``
    branch, :mod:`opie_sched.preemption.headroom` there: a best effort,
    never a reason to empty the cloud of its preemptible servers). A
    victim is terminated at its deadline
    (its guest never powers off early: the worst case for whoever waits;
    early release is not modelled). A victim whose own run ends before its
    deadline leaves as it would have anyway and is not counted as a
    victim. Notices are never withdrawn when ``F`` grows back (a departure
    of a normal server), so the extra victims are an upper bound for a
    reconciler that spares them.
Shapes
    ``sum`` is the headroom as issue 31 words it, above. ``slots`` counts
    ``F`` instead as the servers of :data:`SLOT` (the largest server a
    trace job maps to, a whole 8-vCPU host here) that fit each host's
    free room plus its victims under notice, and asks for
    ``ceil(H / 8 vCPU)`` of them; to restore one the reconciler runs the
    scheduler's own choice for a server of :data:`SLOT`
    (:func:`~opie_sched.preemption.planner.rank_hosts` over the hosts
    without a slot, exact victims on the best one; each host holds at most
    one slot here and costs add up, so slot by slot cheapest is the
    cheapest set of hosts, as the ``headroom`` branch's exact
    per-host-then-dynamic-programme choice). The trace jobs are
    gangs of whole-host servers: free room summed over the cloud can be
    crumbs no such server fits (the first table measured showed it).
Preemptible requests
    Filtered on the full state (``PreemptibleFullStateFilter``), first
    fitting host by name, and admitted only when they leave ``F >= H``:
    a preemptible server placed in the headroom would be noticed at once
    (headroom 0 admits as today); with ``slots``, the first host by name
    where it leaves enough slots. ``keep_out=False`` admits them wherever
    the full state fits, as a scheduler without such a filter does; the
    reconciler then notices whoever refills the headroom.
Normal requests
    A server whose request fits the full state of some host takes the
    first such host: *not slowed*. Otherwise ``mode`` says what the
    scheduler does:

    ``cut`` (the scheduler as issue 31 specifies it and the ``headroom``
    branch builds it: beyond the headroom the normal request preempts at
    once)
        the scheduler's ranking
        (:func:`opie_sched.preemption.planner.rank_hosts` over the hosts
        whose normal state fits) picks the host and its exact victims
        (:func:`~opie_sched.preemption.planner.plan_host`), victims under
        notice being ordinary candidates at their cost (the ``headroom``
        branch's ``noticed`` state is a running candidate for every actor
        but the reconciler). They are terminated now: a victim under
        notice got the notice it had so far (its notice is *cut*), any
        other 0 s (a *burst* victim). The request does not wait in
        simulated time; it is counted as *slowed*: it holds a scheduler
        thread while its victims are deleted, as every preempting boot
        does today.
    ``honour``
        the same ranking with victims under notice counted as leaving
        (room on its way): burst victims, if the host needs more, go at
        once with 0 s; the server is claimed at once (its host's full
        state over capacity, as a Nova claim is) and *waits* until enough
        victims under notice reached their deadline: wait = that deadline
        - arrival (at most ``notice_seconds``); a request waits as long
        as its longest-waiting server.

    "Waited" in the table is therefore: a normal request that found no
    host with free room for one of its servers at arrival. Under ``cut``
    its boot is slowed by a victim's deletion (not simulated: about 0.7 s
    on the devcloud, :class:`opie_sched.simulator.preemption_latency
    .RetryStepCosts`); under ``honour`` it waited the seconds shown.
Victims
    Every server terminated by a preemption (headroom or burst); its
    notice is the time from its notice to its termination (0 for a burst
    victim).

The default headroom is chosen by a rule fixed before the table was
measured (:func:`recommend`): the smallest size at which, on every trace,
at least 95 % of the victims get the full ``notice_seconds`` (the issue's
target) and no more normal requests fail than at headroom 0 (of the two
shapes, the one giving up less utilisation). When no size reaches it
(a rule added after the first small runs, 100 and 300 jobs per trace,
showed that none did, and before the full run): the size and shape
buying the most points of full-notice share per point of utilisation
given up, on their worst trace.
"""

import dataclasses
import math
import os
import time

import numpy as np

from opie_sched.preemption import costs
from opie_sched.preemption import model
from opie_sched.preemption import planner
from opie_sched.preemption import victims as victims_mod
from opie_sched.simcore import clock
from opie_sched.simcore import metrics
from opie_sched.simulator import cloud as cloud_mod
from opie_sched.simulator import engine
from opie_sched.simulator import tables
from opie_sched.workload import generator
from opie_sched.workload import mapping
from opie_sched.workload import swf

#: Headroom sizes tried, fractions of the cloud's capacity.
HEADROOM_FRACTIONS = (0.0, 0.025, 0.05, 0.10, 0.20)
#: ``[opie_preemption] notice_seconds`` where headroom allows (issue 31).
NOTICE_SECONDS = 120.0
#: What a normal request does with room held by victims under notice.
MODES = ('cut', 'honour')
#: How the headroom is counted: ``sum`` (free room summed over the
#: aggregate, as issue 31 words it) or ``slots`` (servers of :data:`SLOT`
#: that fit a host's free room).
SHAPES = ('sum', 'slots')
#: One slot: the largest server a trace job maps to (8 vCPU, 2000 MB and
#: 20 GB per vCPU, :class:`opie_sched.workload.mapping.MappingPolicy`).
SLOT = model.Resources(8, 16000, 160)
#: The traces: (file in the traces directory, short name).
TRACES = (
    ('NASA-iPSC-1993-3.1-cln.swf.gz', 'NASA iPSC/860'),
    ('HPC2N-2002-2.2-cln.swf.gz', 'HPC2N'),
    ('lublin_256.swf.gz', 'Lublin 256'),
)
#: Trace jobs replayed per trace: the full run's prefix and the reduced
#: one's. Each workload is replayed 17 times (headroom 0, then 4 sizes x
#: 2 shapes x 2 modes); these prefixes took about ten minutes per trace on
#: the shared 2-core machine (the docs page gives the measured times).
FULL_JOBS = {
    'NASA-iPSC-1993-3.1-cln.swf.gz': 1000,
    'HPC2N-2002-2.2-cln.swf.gz': 200,
    'lublin_256.swf.gz': 300,
}
REDUCED_JOBS = 60
#: vCPU offered by the preemptible backfill, fraction of capacity.
BACKFILL_LOAD = 1.0
#: The share of victims that must get the full notice (issue 31 targets).
TARGET_SHARE = 0.95
#: Job numbers of the generated backfill start above this.
BACKFILL_JOB_BASE = 1000000000
HOST_SPEC = cloud_mod.HostSpec()


class TraceMissing(Exception):
    """A trace file is not there (that trace is skipped)."""


def traces_dir():
    """``<repository>/../shared/traces``."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    return os.path.normpath(os.path.join(root, '..', 'shared', 'traces'))


def trace_path(name, directory=None):
    """Path of a trace file; :class:`TraceMissing` when absent."""
    directory = directory or traces_dir()
    path = os.path.join(directory, name)
    if not os.path.isfile(path):
        raise TraceMissing('trace %s not found in %s' % (name, directory))
    return path


def _percentile(values, q):
    return float(np.percentile(values, q)) if len(values) else None


@dataclasses.dataclass
class HeadroomRun:
    """What one replay measured.

    Seconds of simulated time; counts of requests unless they say victims.

    :ivar fraction: headroom, fraction of capacity.
    :ivar headroom: :class:`~opie_sched.preemption.model.Resources`.
    :ivar mode: one of :data:`MODES`.
    :ivar sim: :class:`~opie_sched.simulator.engine.SimResult` (counters
        and the utilisation's time series).
    :ivar notices: notice (s) of every victim, in termination order.
    :ivar victim_ids: their uuids, in the same order.
    :ivar headroom_victims: victims chosen by the headroom (noticed).
    :ivar burst_victims: victims taken by a normal request at once.
    :ivar cut_victims: headroom victims whose notice a normal request cut.
    :ivar finished_under_notice: noticed servers that ended on their own
        before their deadline (not victims).
    :ivar normal_slowed: normal requests that found no free room.
    :ivar normal_cut: of those, the ones that cut a notice (``cut``) or
        waited for one (``honour``).
    :ivar normal_burst: of those, the ones that preempted fresh victims.
    :ivar waits: seconds waited per waiting request (``honour``; empty
        under ``cut``).
    :ivar preemptible_kept_out: preemptible requests refused because they
        would have used the headroom.
    """

    fraction: float
    headroom: model.Resources
    mode: str
    sim: engine.SimResult
    shape: str = 'sum'
    notices: list = dataclasses.field(default_factory=list)
    victim_ids: list = dataclasses.field(default_factory=list)
    headroom_victims: int = 0
    burst_victims: int = 0
    cut_victims: int = 0
    finished_under_notice: int = 0
    normal_slowed: int = 0
    normal_cut: int = 0
    normal_burst: int = 0
    waits: list = dataclasses.field(default_factory=list)
    preemptible_kept_out: int = 0

    @property
    def victims(self):
        return len(self.notices)

    def full_notice_share(self, notice=NOTICE_SECONDS):
        """Share (0..1) of victims with at least ``notice`` s, None when
        there was no victim.
        """
        if not self.notices:
            return None
        return sum(1 for n in self.notices if n >= notice - 1e-9) / float(
            len(self.notices))

    def as_dict(self):
        sim = self.sim
        return {
            'headroom_fraction': self.fraction,
            'headroom': list(self.headroom), 'mode': self.mode,
            'shape': self.shape,
            'normal_requests': sim.normal_requests,
            'normal_failed': sim.normal_failed,
            'normal_slowed': self.normal_slowed,
            'normal_cut': self.normal_cut,
            'normal_burst': self.normal_burst,
            'wait_p50_s': _percentile(self.waits, 50),
            'wait_p95_s': _percentile(self.waits, 95),
            'waited': len(self.waits),
            'victims': self.victims,
            'headroom_victims': self.headroom_victims,
            'burst_victims': self.burst_victims,
            'cut_victims': self.cut_victims,
            'finished_under_notice': self.finished_under_notice,
            'notice_p5_s': _percentile(self.notices, 5),
            'notice_p50_s': _percentile(self.notices, 50),
            'full_notice_share': self.full_notice_share(),
            'preemptible_requests': sim.preemptible_requests,
            'preemptible_rejected': sim.preemptible_rejected,
            'preemptible_kept_out': self.preemptible_kept_out,
            'utilisation': sim.utilisation(),
            'utilisation_normal': sim.utilisation(('normal',)),
            'wall_seconds': sim.wall_seconds,
        }


class _Noticed:
    __slots__ = ('since', 'deadline', 'resources', 'host')

    def __init__(self, since, deadline, resources, host):
        self.since, self.deadline = since, deadline
        self.resources, self.host = resources, host


class HeadroomSimulator:
    """Replay a workload with a headroom (see the module docstring).

    :param cloud: a fresh :class:`~opie_sched.simulator.cloud.Cloud`.
    :param cost_policy: :class:`~opie_sched.preemption.costs.CostPolicy`.
    :param fraction: headroom, fraction of the cloud's capacity (0..1).
    :param mode: one of :data:`MODES`.
    :param notice: notice given by the headroom, seconds.
    :param shape: one of :data:`SHAPES`.
    :param slot: :class:`~opie_sched.preemption.model.Resources` of one
        slot (``shape='slots'``; default :data:`SLOT`).
    :param keep_out: keep preemptible requests out of the headroom (the
        model's assumption: the room of victims under notice counts as
        free, as the reconciler counts it); ``'filter'`` keeps them out by
        :class:`opie_sched.scheduler.filters.headroom.HeadroomFilter`'s
        rule (the full state only, each host's negatives as 0: room under
        notice is not free yet); False admits them wherever the full
        state fits, as a scheduler without such a filter would, and the
        reconciler notices again whoever refills it.
    :raises ValueError: a fraction outside 0..1, an unknown mode or shape
        or a negative notice.
    """

    def __init__(self, cloud, cost_policy, fraction=0.0, mode='cut',
                 notice=NOTICE_SECONDS, shape='sum', slot=None,
                 keep_out=True):
        if not 0.0 <= fraction <= 1.0:
            raise ValueError('headroom fraction must be in 0..1, got %r'
                             % (fraction,))
        if mode not in MODES:
            raise ValueError('unknown mode %r: expected one of %s'
                             % (mode, ', '.join(MODES)))
        if not notice >= 0:
            raise ValueError('notice must be >= 0 s, got %r' % (notice,))
        if shape not in SHAPES:
            raise ValueError('unknown shape %r: expected one of %s'
                             % (shape, ', '.join(SHAPES)))
        self.shape = shape
        if keep_out not in (True, False, 'filter'):
            raise ValueError("keep_out must be True, False or 'filter', "
                             "got %r" % (keep_out,))
        self.keep_out = bool(keep_out)
        self.filter_rule = keep_out == 'filter'
        self.slot = model.Resources(*(slot or SLOT))
        self._slot = np.asarray(self.slot, dtype=float)
        self.cloud = cloud
        self.policy = cost_policy
        self.fraction = float(fraction)
        self.mode = mode
        self.notice = float(notice)
        self.cap_total = cloud.cap.sum(axis=0)
        self.headroom = model.Resources(*(self.cap_total
                                          * self.fraction).tolist())
        self._h = np.asarray(self.headroom, dtype=float)
        #: slots the headroom asks for (``shape='slots'``).
        self.slots_wanted = int(math.ceil(
            self.headroom.vcpus / self.slot.vcpus - 1e-9)) if \
            self.fraction else 0
        self.noticed = {}
        self._noticed_sum = np.zeros(3)
        self._noticed_host = np.zeros((cloud.n_hosts, 3))

    # -- the aggregate -----------------------------------------------------

    def free_normal(self):
        """``F``: full-state free room of every host plus the room of the
        victims under notice, numpy ``(3,)``.
        """
        return (self.cap_total - self.cloud.used.sum(axis=0)
                + self._noticed_sum)

    def host_slots(self):
        """Slots of room per host, numpy ``(n_hosts,)``: how many servers
        of :attr:`slot` fit the full-state free room plus the room of the
        host's victims under notice.
        """
        room = self.cloud.free_full + self._noticed_host
        return self._slots_in(room)

    def _slots_in(self, room):
        slot = self._slot
        ratio = np.where(slot > 0, room / np.where(slot > 0, slot, 1.0),
                         np.inf)
        return np.clip(np.floor(ratio.min(axis=-1) + 1e-9), 0, None)

    def _give_notice(self, uuid, res, t, queue, host):
        self.noticed[uuid] = _Noticed(t, t + self.notice, res, host)
        self._noticed_sum += res
        self._noticed_host[host] += res
        queue.push(t + self.notice, ('deadline', uuid))

    def _forget(self, uuid):
        entry = self.noticed.pop(uuid)
        self._noticed_sum -= entry.resources
        self._noticed_host[entry.host] -= entry.resources
        return entry

    def _restore_headroom(self, t, queue, run):
        """Notice the cheapest victims restoring ``H`` (one pass)."""
        if not self.fraction:
            return
        if self.shape == 'slots':
            return self._restore_slots(t, queue, run)
        deficit = np.clip(self._h - self.free_normal(), 0.0, None)
        if not (deficit > 1e-9).any():
            return
        cloud = self.cloud
        now = cloud_mod.to_datetime(t)
        candidates, where = [], {}
        for host in np.flatnonzero(cloud.pre[:, 0] > 0):
            view = self._view(int(host), True)
            mine = planner.instance_costs(view, self.policy, now)
            candidates.extend(mine)
            where.update((inst.uuid, int(host)) for inst, _ in mine)
        if not candidates:
            return
        held = np.asarray(model.Resources.total(
            i.resources for i, _ in candidates), dtype=float)
        if (held < deficit - 1e-9).any():
            # every candidate cannot free the deficit: nothing is taken
            # (a best effort ahead of demand, never a reason to empty the
            # cloud of its preemptible servers)
            return
        selection = victims_mod.select_victims(
            candidates, model.Resources(*deficit.tolist()))
        if selection is None:
            return
        for inst, _ in selection.victims:
            self._give_notice(inst.uuid, np.asarray(inst.resources, float),
                              t, queue, where[inst.uuid])
            run.headroom_victims += 1

    def _restore_slots(self, t, queue, run):
        """Notice, host by host, the victims the scheduler would take for
        a server of :attr:`slot` (its own ranking and exact selection)
        until :attr:`slots_wanted` slots are free or under notice.
        """
        cloud = self.cloud
        now = None
        while True:
            per_host = self.host_slots()
            if per_host.sum() >= self.slots_wanted:
                return
            idx = np.flatnonzero((per_host < 1)
                                 & cloud.normal_state_fits(self.slot))
            if not idx.size:
                return
            now = now or cloud_mod.to_datetime(t)
            best = planner.rank_hosts(
                [self._view(int(i), True) for i in idx], self.slot,
                self.policy, now)[0]
            if not best.feasible or not best.victims:
                return
            host = cloud.index[best.host]
            for inst, _ in best.victims:
                self._give_notice(inst.uuid,
                                  np.asarray(inst.resources, float), t,
                                  queue, host)
                run.headroom_victims += 1

    # -- requests ----------------------------------------------------------

    def _terminate(self, uuid, t, run, undo, cut):
        cloud = self.cloud
        entry = self.noticed.get(uuid)
        host, info, start = cloud.remove(uuid)
        if entry is not None:
            self._forget(uuid)
            notice = t - entry.since
        else:
            notice = 0.0
        lost = info.resources.vcpus * max(t - start, 0.0)
        undo.append(('removed', host, info, start, uuid, entry, lost, cut))
        run.notices.append(notice)
        run.victim_ids.append(uuid)
        if cut:
            run.cut_victims += 1
        elif entry is None:
            run.burst_victims += 1
        run.sim.preemptions += 1
        run.sim.lost_vcpu_seconds += lost

    def _undo(self, undo, run):
        cloud = self.cloud
        for step in reversed(undo):
            if step[0] == 'added':
                cloud.remove(step[1])
                continue
            _, host, info, start, uuid, entry, lost, cut = step
            cloud.restore(host, info, start)
            run.notices.pop()
            run.victim_ids.pop()
            run.sim.preemptions -= 1
            run.sim.lost_vcpu_seconds -= lost
            if cut:
                run.cut_victims -= 1
            elif entry is None:
                run.burst_victims -= 1
            if entry is not None:
                self.noticed[uuid] = entry
                self._noticed_sum += entry.resources
                self._noticed_host[entry.host] += entry.resources

    def _view(self, host, noticed_leaving):
        """The host's :class:`~opie_sched.preemption.model.HostView`, its
        victims under notice shown leaving (the reconciler's view, and the
        scheduler's under ``honour``) or as ordinary candidates (the
        scheduler's under ``cut``).
        """
        view = self.cloud.view(host)
        if noticed_leaving and self.noticed:
            view.instances = [
                dataclasses.replace(i, leaving=True)
                if i.uuid in self.noticed else i for i in view.instances]
        return view

    def _place_normal(self, res, uuid, t, run, undo):
        """One normal server; ``(ok, slowed kind, wait seconds)``."""
        cloud = self.cloud
        host = cloud.first_full_fit(res)
        if host is not None:
            cloud.add(host, uuid, res, False, t)
            undo.append(('added', uuid))
            return True, None, 0.0
        idx = np.flatnonzero(cloud.normal_state_fits(res))
        if not idx.size:
            return False, None, 0.0
        now = cloud_mod.to_datetime(t)
        honour = self.mode == 'honour'
        plans = planner.rank_hosts([self._view(int(i), honour) for i in idx],
                                   res, self.policy, now)
        best = plans[0]
        if not best.feasible:
            return False, None, 0.0
        host = cloud.index[best.host]
        kinds = set()
        for inst, _ in best.victims:
            cut = inst.uuid in self.noticed
            kinds.add('cut' if cut else 'burst')
            self._terminate(inst.uuid, t, run, undo, cut=cut)
        wait = 0.0
        missing = np.clip(np.asarray(res, float) - cloud.free_full[host],
                          0.0, None)
        if honour and (missing > 1e-9).any():
            # the room of victims under notice: wait for their deadlines
            kinds.add('cut')
            freed = np.zeros(3)
            noticed = [i for i in cloud.instances(host)
                       if i.uuid in self.noticed]
            for inst in sorted(noticed, key=lambda i: (
                    self.noticed[i.uuid].deadline, i.uuid)):
                freed += np.asarray(inst.resources, float)
                wait = self.noticed[inst.uuid].deadline - t
                if (freed >= missing - 1e-9).all():
                    break
        kind = 'burst' if 'burst' in kinds else (
            'cut' if kinds else None)
        if kinds == {'burst', 'cut'}:
            kind = 'both'
        cloud.add(host, uuid, res, False, t)
        undo.append(('added', uuid))
        return True, kind, wait

    def _preemptible_host(self, res):
        """``(host or None, kept out)``: the first host whose full state
        fits ``res`` and where it leaves the headroom whole; kept out is
        True when a host fits but only by using the headroom.
        """
        cloud = self.cloud
        if not self.fraction or not self.keep_out:
            return cloud.first_full_fit(res), False
        need = np.asarray(res, float)
        if self.shape == 'sum':
            host = cloud.first_full_fit(res)
            if host is None:
                return None, False
            if self.filter_rule:
                free = np.clip(cloud.free_full, 0, None).sum(axis=0)
            else:
                free = self.free_normal()
            if (free - need < self._h - 1e-9).any():
                return None, True
            return host, False
        fits = cloud.full_state_fits(res)
        if not fits.any():
            return None, False
        room = cloud.free_full if self.filter_rule else \
            cloud.free_full + self._noticed_host
        before = self._slots_in(room)
        after = self._slots_in(room - need)
        ok = fits & (before.sum() - before + after >= self.slots_wanted)
        host = cloud.first(ok)
        return host, host is None

    def _schedule(self, req, uuids, t, run):
        cloud = self.cloud
        res = model.Resources(req.vcpus, req.memory_mb, req.disk_gb)
        undo = []
        if req.preemptible:
            for uuid in uuids:
                host, kept_out = self._preemptible_host(res)
                if host is None:
                    self._undo(undo, run)
                    run.preemptible_kept_out += kept_out
                    return False
                cloud.add(host, uuid, res, True, t)
                undo.append(('added', uuid))
            return True
        kinds, waits = set(), [0.0]
        for uuid in uuids:
            ok, kind, wait = self._place_normal(res, uuid, t, run, undo)
            if not ok:
                self._undo(undo, run)
                return False
            if kind == 'both':
                kinds.update(('burst', 'cut'))
            elif kind:
                kinds.add(kind)
            waits.append(wait)
        if kinds:
            run.normal_slowed += 1
            run.normal_burst += 'burst' in kinds
            run.normal_cut += 'cut' in kinds
            if self.mode == 'honour' and max(waits) > 0:
                run.waits.append(max(waits))
        return True

    # -- the loop ----------------------------------------------------------

    def run(self, requests, horizon=None, label=None):
        """Replay ``requests`` from an empty cloud to the last departure.

        :param requests: :class:`~opie_sched.workload.mapping
            .ServerRequest` list.
        :param horizon: end of the utilisation window, seconds (default
            the last arrival).
        :returns: :class:`HeadroomRun`.
        """
        cloud = self.cloud
        arrivals = clock.Arrivals(requests, key=lambda r: (r.submit,
                                                           r.job_id),
                                  time=lambda r: r.submit)
        sim = engine.SimResult(label or 'headroom %g' % self.fraction,
                               'opie', cloud.n_hosts, cloud.capacity_vcpus)
        last = arrivals.last_time()
        sim.horizon = (horizon if horizon is not None
                       else (last if last is not None else 0.0))
        run = HeadroomRun(self.fraction, self.headroom, self.mode, sim,
                          self.shape)
        series = metrics.Series(name for name, _ in engine.SERIES)
        queue = clock.EventQueue()
        started = time.perf_counter()
        for kind, t, item in clock.merge(arrivals, queue):
            if kind is clock.EVENT:
                what, uuid = item
                if uuid in cloud:
                    if what == 'end':
                        if uuid in self.noticed:
                            self._forget(uuid)
                            run.finished_under_notice += 1
                        cloud.remove(uuid)
                    elif uuid in self.noticed and \
                            self.noticed[uuid].deadline <= t:
                        entry = self._forget(uuid)
                        _, info, start = cloud.remove(uuid)
                        run.notices.append(t - entry.since)
                        run.victim_ids.append(uuid)
                        sim.preemptions += 1
                        sim.lost_vcpu_seconds += info.resources.vcpus * \
                            max(t - start, 0.0)
            else:
                i, req = item
                uuids = ['r%08d-%03d' % (i, k) for k in range(req.count)]
                sim.requests += 1
                sim.servers_requested += req.count
                if req.preemptible:
                    sim.preemptible_requests += 1
                else:
                    sim.normal_requests += 1
                if self._schedule(req, uuids, t, run):
                    sim.servers_booted += req.count
                    end = t + max(req.runtime, 0.0)
                    for uuid in uuids:
                        queue.push(end, ('end', uuid))
                elif req.preemptible:
                    sim.preemptible_rejected += 1
                else:
                    sim.normal_failed += 1
            self._restore_headroom(t, queue, run)
            sim.events += 1
            series.record((t, cloud.normal_vcpus, cloud.preemptible_vcpus,
                           cloud.active_hosts, sim.normal_failed,
                           sim.preemptible_rejected, sim.preemptions,
                           sim.preemption_cost))
        sim.wall_seconds = time.perf_counter() - started
        sim.series = series.arrays()
        return run


# -- workloads ----------------------------------------------------------------

def _mean_backfill_request(runtime_min=600.0, runtime_max=4 * 3600.0):
    """Mean (vCPU, run time s) of a request of
    :func:`~opie_sched.workload.generator.generate` with its defaults:
    flavors equally likely; run time of density ~ t^-2 on [a, b], whose
    mean is ln(b/a) / (1/a - 1/b).
    """
    vcpus = sum(f[0] for f in generator.FLAVORS.values()) / float(
        len(generator.FLAVORS))
    a, b = runtime_min, runtime_max
    return vcpus, math.log(b / a) / (1.0 / a - 1.0 / b)


def backfill(horizon, capacity_vcpus, load=BACKFILL_LOAD, seed=42):
    """Generated preemptible requests in ``[0, horizon]`` s offering
    ``load`` x ``capacity_vcpus`` vCPU (job numbers above
    :data:`BACKFILL_JOB_BASE`).
    """
    if horizon <= 0 or load <= 0:
        return []
    vcpus, runtime = _mean_backfill_request()
    rate = load * capacity_vcpus / (vcpus * runtime / 3600.0)
    count = int(math.ceil(rate * horizon / 3600.0)) + 1
    reqs = generator.generate(seed=seed, count=count, rate_per_hour=rate,
                              preemptible_fraction=1.0)
    return [dataclasses.replace(r, job_id=BACKFILL_JOB_BASE + r.job_id)
            for r in reqs if r.submit <= horizon]


def trace_workload(path, jobs, seed=42, load=BACKFILL_LOAD):
    """``(requests, n_hosts, horizon, summary)`` of one trace: its first
    ``jobs`` jobs as normal requests, the backfill, and a cloud of
    ``ceil(MaxProcs / 8)`` hosts of :data:`HOST_SPEC`.
    """
    trace = swf.read_swf(path, skip_invalid=True, max_jobs=jobs * 2)
    procs = trace.max_procs or max(j.procs for j in trace.jobs)
    n_hosts = max(1, int(math.ceil(procs / HOST_SPEC.vcpus)))
    normal, summary = mapping.map_trace(
        trace, mapping.MappingPolicy(preemptible_rule='none'), limit=jobs)
    if not normal:
        raise ValueError('%s: no job to replay (%s)' % (path, summary))
    horizon = max(r.submit for r in normal)
    capacity = n_hosts * HOST_SPEC.capacity.vcpus
    return (normal + backfill(horizon, capacity, load, seed), n_hosts,
            horizon, summary)


def replay(requests, n_hosts, horizon, fractions=HEADROOM_FRACTIONS,
           modes=MODES, shapes=SHAPES, cost='billing_period',
           notice=NOTICE_SECONDS, progress=None):
    """``{(shape, mode, fraction): HeadroomRun}`` of one workload (headroom
    0 is run once: it notices nobody, so every shape and mode is the same
    run).
    """
    policy = costs.load_policy(cost, period=3600)
    runs = {}
    base = None
    for shape in shapes:
        for mode in modes:
            for fraction in fractions:
                if fraction == 0.0 and base is not None:
                    runs[shape, mode, fraction] = base
                    continue
                sim = HeadroomSimulator(
                    cloud_mod.Cloud.uniform(n_hosts, HOST_SPEC), policy,
                    fraction, mode, notice, shape)
                run = sim.run(requests, horizon=horizon)
                runs[shape, mode, fraction] = run
                if fraction == 0.0:
                    base = run
                if progress:
                    progress('  %s %s headroom %g: %.1f s' % (
                        shape, mode, fraction, run.sim.wall_seconds))
    return runs


# -- the table ----------------------------------------------------------------

def rows(runs, fractions=HEADROOM_FRACTIONS, shapes=SHAPES, n_hosts=None):
    """Rows ``{(shape, fraction): dict}`` of one trace's table: the
    ``cut`` run's numbers with the ``honour`` run's waits, and the
    differences against headroom 0.
    """
    base = runs[shapes[0], 'cut', 0.0]
    u0 = base.sim.utilisation()
    out = {}
    for shape in shapes:
        for fraction in fractions:
            if fraction == 0.0 and shape != shapes[0]:
                continue
            run = runs[shape, 'cut', fraction]
            row = run.as_dict()
            row['utilisation_given_up_pts'] = 100.0 * (
                u0 - run.sim.utilisation())
            row['extra_victims'] = row['victims'] - base.victims
            if shape == 'slots' and fraction:
                row['slots'] = int(math.ceil(
                    fraction * (n_hosts or 0) * HOST_SPEC.capacity.vcpus
                    / SLOT.vcpus - 1e-9))
            honour = runs.get((shape, 'honour', fraction))
            if honour is not None:
                h = honour.as_dict()
                row['honour'] = {k: h[k] for k in (
                    'waited', 'wait_p50_s', 'wait_p95_s', 'victims',
                    'full_notice_share', 'normal_failed', 'normal_slowed',
                    'utilisation')}
            out[shape if fraction else 'none', fraction] = row
    return out


def _fmt(value, fmt='%.0f'):
    return '-' if value is None else fmt % value


def table_text(name, table):
    """One trace's table (the rows of :func:`rows`)."""
    header = ['headroom', 'shape', 'victims', 'extra', 'notice p5 s',
              'p50 s', '>=120 s', 'normal slowed', 'of which cut',
              'failed', 'honour: waited', 'wait p50 s', 'p95 s',
              'util. given up']
    body = []
    for (shape, fraction), r in sorted(table.items(),
                                       key=lambda kv: (kv[0][0] != 'none',
                                                       kv[0][0] != 'sum',
                                                       kv[0][1])):
        h = r.get('honour') or {}
        share = r['full_notice_share']
        body.append([
            '%g %%' % (100 * fraction),
            shape + (' (%d)' % r['slots'] if 'slots' in r else ''),
            r['victims'], '%+d' % r['extra_victims'],
            _fmt(r['notice_p5_s']), _fmt(r['notice_p50_s']),
            _fmt(None if share is None else 100 * share, '%.1f %%'),
            '%d / %d' % (r['normal_slowed'], r['normal_requests']),
            r['normal_cut'], r['normal_failed'],
            h.get('waited', '-'), _fmt(h.get('wait_p50_s')),
            _fmt(h.get('wait_p95_s')),
            '%.2f pts' % r['utilisation_given_up_pts']])
    return '%s\n%s' % (name, tables.text_table(header, body))


def recommend(tables_by_trace, target=TARGET_SHARE, shapes=SHAPES):
    """The default headroom by the rule of the module docstring.

    :param tables_by_trace: ``{trace: rows()}``.
    :returns: ``(shape or None, fraction or None, reason)``: per shape,
        the smallest size at which every trace gives at least ``target``
        of its victims the full notice with no more normal requests
        failing than at headroom 0; of the shapes that reach it, the one
        giving up the least utilisation on its worst trace.
    """
    if not tables_by_trace:
        return None, None, 'no trace was replayed'
    found = []
    for shape in shapes:
        keys = set.intersection(*[set(t) for t in tables_by_trace.values()])
        for fraction in sorted(f for s, f in keys if s == shape and f):
            ok, cost = True, 0.0
            for table in tables_by_trace.values():
                r, base = table[shape, fraction], table['none', 0.0]
                share = r['full_notice_share']
                if share is None:
                    share = 1.0        # no victim: nobody lost notice
                if share < target or \
                        r['normal_failed'] > base['normal_failed']:
                    ok = False
                    break
                cost = max(cost, r['utilisation_given_up_pts'])
            if ok:
                found.append((cost, shape, fraction))
                break
    if not found:
        return _most_notice_per_point(tables_by_trace, target, shapes)
    cost, shape, fraction = min(found)
    return shape, fraction, (
        'smallest size at which every trace gives at least %.0f %% of '
        'victims the full notice without more normal requests failing '
        'than at headroom 0; it gives up at most %.2f points of '
        'utilisation (worst trace)' % (100 * target, cost))


def _most_notice_per_point(tables_by_trace, target, shapes):
    """The fall-back rule: the size and shape that buy the most points of
    full-notice share per point of utilisation given up, on the worst
    trace (``min`` over traces of the ratio, maximised; ties go to the
    smaller size).
    """
    best = None
    keys = set.intersection(*[set(t) for t in tables_by_trace.values()])
    for shape, fraction in sorted(keys):
        if not fraction or shape not in shapes:
            continue
        ratios = []
        for table in tables_by_trace.values():
            r, base = table[shape, fraction], table['none', 0.0]
            gain = 100.0 * ((r['full_notice_share'] or 0.0)
                            - (base['full_notice_share'] or 0.0))
            ratios.append(gain / max(r['utilisation_given_up_pts'], 0.01))
        # ties: the smaller size (then the shape's name)
        key = (round(min(ratios), 9), -fraction, shape)
        if best is None or key > best[0]:
            best = (key, shape, fraction)
    if best is None:
        return None, None, 'no headroom size was replayed'
    (score, _, _), shape, fraction = best
    return shape, fraction, (
        'no size or shape tried gives %.0f %% of victims the full notice '
        'on every trace; this one buys the most: %.1f points of victims '
        'with full notice per point of utilisation given up, on its worst '
        'trace' % (100 * target, score))


def headroom_tradeoff(reduced=False, seed=0, directory=None, jobs=None,
                      fractions=HEADROOM_FRACTIONS, modes=MODES,
                      shapes=SHAPES, progress=None):
    """The scenario: every trace of :data:`TRACES` at every headroom size,
    shape and mode.

    :param reduced: the first :data:`REDUCED_JOBS` jobs of each trace
        instead of its :data:`FULL_JOBS`.
    :param seed: seed of the backfill (0 is replaced by 42, the
        simulator's default seed).
    :param directory: the traces' directory (default :func:`traces_dir`).
    :param jobs: trace jobs per trace (overrides ``reduced``).
    :param progress: callable taking a line of text, or None.
    :returns: ``(result, text)``; a missing trace is listed under
        ``skipped`` with its reason, the others still run.
    """
    directory = directory or traces_dir()
    result = {'scenario': 'headroom-tradeoff', 'reduced': bool(reduced),
              'notice_seconds': NOTICE_SECONDS,
              'fractions': list(fractions), 'modes': list(modes),
              'shapes': list(shapes), 'slot': list(SLOT),
              'backfill_load': BACKFILL_LOAD, 'traces': {}, 'skipped': {}}
    texts, tables_by_trace = [], {}
    for name, short in TRACES:
        count = jobs or (REDUCED_JOBS if reduced else FULL_JOBS[name])
        try:
            path = trace_path(name, directory)
        except TraceMissing as exc:
            result['skipped'][short] = str(exc)
            texts.append('%s: skipped: %s' % (short, exc))
            continue
        reqs, n_hosts, horizon, summary = trace_workload(
            path, count, seed=seed or 42)
        if progress:
            progress('%s: %d hosts, %d requests' % (short, n_hosts,
                                                   len(reqs)))
        runs = replay(reqs, n_hosts, horizon, fractions, modes, shapes,
                      progress=progress)
        table = rows(runs, fractions, shapes, n_hosts)
        tables_by_trace[short] = table
        wall = sum({id(r): r.sim.wall_seconds for r in runs.values()}
                   .values())
        result['traces'][short] = {
            'file': name, 'jobs': count, 'hosts': n_hosts,
            'horizon_s': horizon, 'mapping': str(summary),
            'requests': len(reqs), 'wall_seconds': wall,
            'rows': {'%s %g' % k: r for k, r in table.items()}}
        texts.append(table_text(
            '%s: first %d jobs (%s), %d hosts x 8 vCPU, %d requests with '
            'the backfill, %.1f days; %.0f s of replays'
            % (short, count, summary, n_hosts, len(reqs),
               horizon / 86400.0, wall), table))
    shape, fraction, reason = recommend(tables_by_trace, shapes=shapes)
    result.update(recommended_shape=shape, recommended_fraction=fraction,
                  recommendation=reason,
                  skipped_any=bool(result['skipped']))
    head = ('headroom-tradeoff: notice %g s; shape sum = free room summed '
            'over the cloud, slots (N) = N free hosts\' worth of %g vCPU '
            'servers; normal slowed = found no free room at arrival (cut: '
            'preempted at once, cutting notices or taking 0 s victims; '
            'honour: waited for the notice); utilisation given up in '
            'points against headroom 0' % (NOTICE_SECONDS, SLOT.vcpus))
    tail = 'Recommended default: %s (%s).' % (
        'none' if fraction is None else '%g %% (%s)' % (100 * fraction,
                                                      shape), reason)
    return result, '\n\n'.join([head] + texts + [tail])
