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
"""Scenario ``rpm-vs-ffd``: RPM vs FFD-sum (thesis Paper IV §6.1, Table 4).

Sedaghat, Hernández-Rodriguez and Elmroth, "Decentralized cloud datacenter
reconsolidation through emergent and topology-aware behavior" (thesis
Paper IV). A data centre of 16 ECU / 64 GB hosts in a three-level tree
(§5) runs the §5.1 load: interactive services present for the whole run
(CPU demand eq. 14, memory eq. 15) and batch jobs with power-law
lifetimes, service:batch (SB) ratio 0.4, as many requests per host as the
thesis (230000 requests on 65536 hosts, "a maximum approximate
utilization of 90 % if all VMs are accepted and fully utilize their
reserved capacity").

The two policies share everything but the ranking of candidate hosts:

* **Discovery** (§4.3, Alg. 1, :func:`opie_sched.rpm.model.discover`): a new
  request enters at a random host; that host and, each round, ``k`` = 20
  neighbours from the topology-aware overlay (§5.2: 0.6 same group, 0.3
  same cluster, 0.1 anywhere, :class:`opie_sched.rpm.model.Overlay`) are the
  candidates. Batch requests and overloads take the first round's best;
  service requests and underloads keep a candidate per round up to MaxTTL.
  A request without a host at MaxTTL is *pending* (rejected, §6.1).
  ``discovery='global'`` makes every host a candidate instead.
* **Capacity**: a host is a candidate when the request fits in its *used*
  capacity below α = 0.9 (eq. 2) and its reservations stay within
  :data:`OVERBOOK` × capacity (both policies may overbook).
* **Triggers** (§5.3): every 10 minutes, overload (CPU or memory > 90 % in
  each of the last 10 one-minute samples) and underload (both < 30 %);
  an underload is processed 10 minutes later and only if the host is still
  underloaded (the waiting time of §5.3).
* **Victims**: an overload moves VMs in the order of the migration planner
  of §4.2 (cheapest data transfer first: cold batch jobs, then live
  services, smaller memory first) until the host is back below 90 %; an
  underload moves every VM (largest FFD-sum volume first) to other active
  hosts, all or nothing.
* **Ranking**: RPM the lowest :func:`opie_sched.rpm.model.score` (eq. 3, λ =
  0.2 each, §5.4); FFD-sum the first candidate in the fixed host order
  (§6.1: "places each VM on the first PM with sufficient capacity"), the
  requests of a minute taken in decreasing FFD-sum volume (eq. 19) with
  the scarcity weights of eq. 20 (:func:`ffd_sum_weights`) -- the same
  arrival order for both policies.

Units: ECU and GB for sizes, MB for data transfer inside the model (GB in
the results), minutes for the time step.

The hosts, the VMs' placement and its accounting are the simulator's
shared core (:class:`opie_sched.simulator.core.hosts.Hosts`, measures
``reserved`` and ``used``, each (ECU, GB)); time is its
:class:`~opie_sched.simulator.core.clock.StepClock` (one-minute steps) and
the arrivals its :class:`~opie_sched.simulator.core.clock.Arrivals`.
"""

import collections
import math
import random

import numpy as np

from opie_sched.rpm import model as rpm
from opie_sched.simulator.core import clock
from opie_sched.simulator.core import hosts as hosts_mod
from opie_sched.simulator import tables
from opie_sched.workload import generator

#: Thesis Paper IV Table 4 (FFD-sum vs RPM, 10 runs, SE in brackets of
#: the thesis): metric -> (FFD-sum, RPM).
TABLE4 = collections.OrderedDict([
    ('active_servers', (40504, 29859.6)),
    ('data_transfer_gb', (351962.2, 141554)),
    ('migrations', (33187, 11092)),
    ('batch_migrations', (11756, 9797)),
    ('service_migrations', (21431, 1295)),
    ('rejected', (10657, 6254.8)),
    ('batch_data_gb', (169781.24, 129834.11)),
    ('service_data_gb', (182186.15, 11722.67)),
    ('triggers', (26574, 10873.8)),
    ('overload', (29, 73.8)),
    ('unresolved', (278, 18.8)),
])
LABELS = collections.OrderedDict([
    ('active_servers', 'active servers (time mean)'),
    ('data_transfer_gb', 'data transferred (GB)'),
    ('migrations', 'migrations'),
    ('batch_migrations', '  batch migrations'),
    ('service_migrations', '  service migrations'),
    ('rejected', 'rejected (pending) requests'),
    ('batch_data_gb', 'batch data (GB)'),
    ('service_data_gb', 'service data (GB)'),
    ('triggers', 'sub-optimal state triggers'),
    ('overload', '  overload triggers'),
    ('underload', '  underload triggers'),
    ('unresolved', 'unresolved triggers'),
    ('dist1', 'migrations, same group'),
    ('dist2', 'migrations, same cluster'),
    ('dist3', 'migrations, other cluster'),
])
#: Host capacity, ECU and GB (§5: 8 cores × 2 ECU, 64 GB).
HOST_CPU, HOST_MEM = 16.0, 64.0
#: Thesis load: requests per host over 24 h (230000 / 65536) and the SB
#: ratio of Table 4 (services / batch jobs).
REQUESTS_PER_HOST_DAY = 230000.0 / 65536.0
SB_RATIO = 0.4
#: Both policies: reservations of a host may reach this × capacity while
#: the used capacity stays <= :data:`ALPHA` (eq. 2).
OVERBOOK = 1.2
ALPHA = rpm.OVERLOAD_THRESHOLD
#: Live migration of services: link L (MB/s, Table 2's bandwidth column),
#: dirty rate as a fraction of L, switch-over T (s), progress X (MB).
BANDWIDTH = 125.0
DIRTY = 0.1
SWITCHOVER, PROGRESS = 0.5, 64.0
#: Profiler period and underload waiting time, minutes (§5, §5.3).
PROFILE_EVERY = 10
UNDERLOAD_WAIT = 10
#: Topology of the scaled-down data centre: hosts per group and clusters
#: (thesis: 1024 and 2); the groups are split evenly over the clusters.
GROUP_SIZE, CLUSTERS = 16, 2
POLICIES = ('ffd', 'rpm')


def ffd_sum_weights(demand_cpu, demand_mem, capacity_cpu, capacity_mem):
    """Scarcity weights of FFD-sum (Paper IV eq. 20): w_i = Σ r_i / h_i,
    the total demand of resource i over the total capacity.

    :param demand_cpu: total requested ECU (>= 0).
    :param demand_mem: total requested GB (>= 0).
    :param capacity_cpu: total ECU of the hosts (> 0).
    :param capacity_mem: total GB (> 0).
    :returns: ``(w_cpu, w_mem)``.
    :raises ValueError: a negative demand or a non-positive capacity.
    """
    if demand_cpu < 0 or demand_mem < 0:
        raise ValueError('demand must be >= 0, got %r, %r'
                         % (demand_cpu, demand_mem))
    if capacity_cpu <= 0 or capacity_mem <= 0:
        raise ValueError('capacity must be > 0, got %r, %r'
                         % (capacity_cpu, capacity_mem))
    return demand_cpu / capacity_cpu, demand_mem / capacity_mem


def ffd_sum_volume(weights, cpu, mem):
    """Volume(V) = Σ w_i × r_i (Paper IV eq. 19) of a VM of ``cpu`` ECU
    and ``mem`` GB, each normalised by the host capacity so that the
    dimensions are comparable.
    """
    w_cpu, w_mem = weights
    return w_cpu * cpu / HOST_CPU + w_mem * mem / HOST_MEM


def thesis_load(n_hosts, hours, seed):
    """The §5.1 load scaled to ``n_hosts``: services (present all run)
    and Poisson batch arrivals so that the run has the thesis' requests
    per host and SB ratio (:func:`opie_sched.workload.generator.
    thesis_vm_workload`).
    """
    per_host = REQUESTS_PER_HOST_DAY * hours / 24.0
    services = int(round(n_hosts * REQUESTS_PER_HOST_DAY * SB_RATIO
                         / (1 + SB_RATIO)))
    batch = per_host * n_hosts - services
    rate = max(batch, 0.0) / (hours * 60.0)
    return generator.thesis_vm_workload(
        seed=seed, hours=hours, services=services, batch_rate_per_min=rate)


def peak_reservation(vms, n_hosts):
    """``(cpu, mem)`` fractions: every request's reservation over the
    data centre's capacity (the thesis' "maximum approximate utilization
    ... if all VMs are accepted").
    """
    return (sum(v['cpu'] for v in vms) / (n_hosts * HOST_CPU),
            sum(v['mem'] for v in vms) / (n_hosts * HOST_MEM))


def _live_dt_mb(mem_gb):
    mem_mb = mem_gb * 1024.0
    rate = DIRTY * BANDWIDTH
    rounds = rpm.precopy_rounds(mem_mb, rate, BANDWIDTH, SWITCHOVER,
                                PROGRESS)
    return rpm.data_transfer(mem_mb, True, rate, BANDWIDTH, rounds)


class DataCentre(object):
    """Hosts, VMs and counters of one run (one-minute steps).

    VM ``i`` of ``vms`` is id ``i`` of the core's
    :class:`~opie_sched.simulator.core.hosts.Hosts` (:attr:`hosts`);
    ``host``, ``cpu``/``mem`` (reservations), ``use_cpu``/``use_mem``
    (current use) and the per-host sums ``rc``/``rm``/``uc``/``um`` and
    ``count`` are views of its arrays.

    :param n_hosts: hosts (a multiple of :data:`GROUP_SIZE`).
    :param vms: requests of :func:`thesis_load`.
    :param policy: ``'ffd'`` or ``'rpm'``.
    :param discovery: ``'local'`` or ``'global'``.
    :param seed: seed of the entry hosts and neighbour draws.
    :param max_ttl: MaxTTL of Alg. 1.
    """

    def __init__(self, n_hosts, vms, policy, discovery='local', seed=0,
                 max_ttl=rpm.MAX_TTL, neighbours=rpm.NEIGHBOURS):
        if policy not in POLICIES:
            raise ValueError('policy must be one of %s, got %r'
                             % (POLICIES, policy))
        if discovery not in ('local', 'global'):
            raise ValueError('discovery must be local or global, got %r'
                             % (discovery,))
        self.n = n_hosts
        self.policy = policy
        self.discovery = discovery
        self.max_ttl = max_ttl
        self.vms = vms
        self.hosts = hosts_mod.Hosts(np.tile([HOST_CPU, HOST_MEM],
                                             (n_hosts, 1)),
                                     measures=('reserved', 'used'))
        reserved = np.array([(v['cpu'], v['mem']) for v in vms],
                            dtype=float).reshape(len(vms), 2)
        self.hosts.register_many(len(vms), reserved=reserved,
                                 used=reserved)
        self.host = self.hosts.host
        self.cpu = self.hosts.values['reserved'][:, 0]
        self.mem = self.hosts.values['reserved'][:, 1]
        self.use_cpu = self.hosts.values['used'][:, 0]
        self.use_mem = self.hosts.values['used'][:, 1]
        self.rc = self.hosts.sums['reserved'][:, 0]
        self.rm = self.hosts.sums['reserved'][:, 1]
        self.uc = self.hosts.sums['used'][:, 0]
        self.um = self.hosts.sums['used'][:, 1]
        self.count = self.hosts.count
        self.service = np.array([v['kind'] == 'service' for v in vms])
        self.u = np.array([v['u'] for v in vms])
        self.s = np.array([v['s'] for v in vms])
        self.dt_mb = np.where(self.service,
                              [_live_dt_mb(m) for m in self.mem],
                              self.mem * 1024.0)
        self.dt_bound = rpm.data_transfer_bound(
            HOST_MEM * 1024.0, True, DIRTY * BANDWIDTH, BANDWIDTH)
        self.hist_cpu = np.zeros((n_hosts, 0))
        self.hist_mem = np.zeros((n_hosts, 0))
        self.counts = collections.Counter()
        per_cluster = max(1, -(-n_hosts // GROUP_SIZE) // CLUSTERS)
        groups = [h // GROUP_SIZE for h in range(n_hosts)]
        self.loc = [rpm.Location(h, groups[h], groups[h] // per_cluster)
                    for h in range(n_hosts)]
        self.overlay = rpm.Overlay(self.loc, neighbours)
        self.rng = random.Random('%s-%s-discovery' % (seed, discovery))

    # -- state ----------------------------------------------------------------

    def demand(self, t):
        """Usage of every VM at ``t`` seconds (services: eq. 14-15 with
        β = the type's memory / CPU; batch: the reservation).
        """
        svc = self.service
        frac = 0.5 * (1 + self.u[svc] * np.sin(
            2 * math.pi * t / 86400.0 - 2 * math.pi * self.s[svc]))
        self.use_cpu[svc] = self.cpu[svc] * frac
        self.use_mem[svc] = self.mem[svc] * frac
        self.hosts.refresh()

    def depart(self, t, ends):
        """Take off the placed VMs whose lifetime ended by ``t``."""
        gone = np.flatnonzero((self.host >= 0) & (ends <= t))
        if gone.size:
            self.hosts.remove_many(gone)

    def utilisation(self, h):
        return self.uc[h] / HOST_CPU, self.um[h] / HOST_MEM

    def fits(self, vm, h):
        """Eq. 2 on the used capacity, reservations within
        :data:`OVERBOOK` (both policies).
        """
        return (self.uc[h] + self.use_cpu[vm] <= ALPHA * HOST_CPU + 1e-9
                and self.um[h] + self.use_mem[vm] <= ALPHA * HOST_MEM + 1e-9
                and self.rc[h] + self.cpu[vm] <= OVERBOOK * HOST_CPU + 1e-9
                and self.rm[h] + self.mem[vm] <= OVERBOOK * HOST_MEM + 1e-9)

    # -- ranking --------------------------------------------------------------

    def score(self, vm, h, source):
        """RPM score of ``vm`` on host ``h`` (eq. 3); ``source`` None for
        a new request (no Dist, DT or source imbalance, §4.3.1).
        """
        req_c, req_m = self.cpu[vm], self.mem[vm]
        r_o = rpm.host_overbooking_risk(
            req_c, HOST_CPU - self.rc[h], HOST_CPU - self.uc[h],
            req_m, HOST_MEM - self.rm[h], HOST_MEM - self.um[h])
        r_v = rpm.host_load_variation(self.hist_cpu[h], self.hist_mem[h])
        risk = rpm.normalise(r_o * r_v, rpm.max_coefficient_of_variation(
            max(self.hist_cpu.shape[1], 2)))
        c, m = self.utilisation(h)
        vc, vm_ = self.use_cpu[vm] / HOST_CPU, self.use_mem[vm] / HOST_MEM
        low, high = rpm.efficiency_bounds()
        eff = rpm.normalise(rpm.efficiency(c, m, vc, vm_), high, low)
        if source is None:
            dist = dt = 0.0
            imb = rpm.normalise(rpm.imbalance(c, m, vc, vm_),
                                rpm.MAX_PLACEMENT_IMBALANCE)
        else:
            dist = rpm.normalise(rpm.distance(self.loc[source], self.loc[h]),
                                 rpm.MAX_DISTANCE)
            dt = rpm.normalise(self.dt_mb[vm], self.dt_bound)
            sc, sm = self.utilisation(source)
            imb = rpm.normalise(rpm.imbalance(c, m, vc, vm_, sc, sm),
                                rpm.MAX_IMBALANCE)
        return rpm.score(rpm.Terms(risk, dist, eff, dt, imb))

    def rank(self, vm, hosts, source, active_only):
        """Best of ``hosts`` for ``vm``: ``(host, score)`` or None."""
        best = None
        for h in sorted(set(hosts)):
            if h == source or not self.fits(vm, h):
                continue
            if active_only and self.count[h] == 0:
                continue
            if self.policy == 'ffd':
                return h, float(h)      # first fit in the host order
            value = self.score(vm, h, source)
            if best is None or value < best[1] - 1e-12:
                best = (h, value)
        return best

    def choose(self, vm, origin, urgent, migrating, active_only=False):
        """Destination of ``vm`` discovered from host ``origin`` (the
        entry host of a request, the source of a migration), or None.
        """
        source = origin if migrating else None
        if self.discovery == 'global':
            found = self.rank(vm, range(self.n), source, active_only)
            return None if found is None else found[0]
        extra = [] if migrating else [origin]

        def rank(names):
            return self.rank(vm, list(names) + extra, source, active_only)

        found = rpm.discover(self.rng, self.overlay, origin, rank, urgent,
                             self.max_ttl)
        return found.best

    def migrate(self, vm, dst):
        src = self.host[vm]
        self.counts['dist%d' % rpm.distance(self.loc[src], self.loc[dst])] \
            += 1
        self.hosts.migrate(vm, dst)
        kind = 'service' if self.service[vm] else 'batch'
        gb = self.dt_mb[vm] / 1024.0
        self.counts['migrations'] += 1
        self.counts[kind + '_migrations'] += 1
        self.counts['data_transfer_gb'] += gb
        self.counts[kind + '_data_gb'] += gb
        return gb


def overload_victims(dc, h):
    """VMs of host ``h`` in the migration planner's order (§4.2, both
    policies): cheapest data transfer first (cold batch before live
    services), then smaller memory, then index.
    """
    vms = np.flatnonzero(dc.host == h)
    return sorted((int(v) for v in vms),
                  key=lambda v: (dc.dt_mb[v], dc.mem[v], v))


def drain_order(dc, h, weights):
    """VMs of host ``h`` by decreasing FFD-sum volume (both policies)."""
    vms = np.flatnonzero(dc.host == h)
    return sorted((int(v) for v in vms),
                  key=lambda v: (-ffd_sum_volume(weights, dc.cpu[v],
                                                 dc.mem[v]), v))


def _weights(dc):
    on = dc.host >= 0
    return ffd_sum_weights(dc.cpu[on].sum(), dc.mem[on].sum(),
                           dc.n * HOST_CPU, dc.n * HOST_MEM)


def _resolve_overload(dc, h):
    moved = 0.0
    for vm in overload_victims(dc, h):
        if max(dc.utilisation(h)) <= rpm.OVERLOAD_THRESHOLD:
            break
        dst = dc.choose(vm, h, urgent=True, migrating=True)
        if dst is not None:
            moved += dc.migrate(vm, dst)
    if max(dc.utilisation(h)) > rpm.OVERLOAD_THRESHOLD:
        dc.counts['unresolved'] += 1
    return moved


def _resolve_underload(dc, h):
    vms = drain_order(dc, h, _weights(dc))
    done = []
    for vm in vms:
        dst = dc.choose(vm, h, urgent=False, migrating=True,
                        active_only=True)
        if dst is None:
            break
        done.append((vm, int(dc.host[vm])))
        dc.hosts.relocate(vm, dst)      # what-if, undone below
    if len(done) < len(vms):
        for vm, src in reversed(done):
            dc.hosts.relocate(vm, src)
        dc.counts['unresolved'] += 1
        return 0.0
    moved = 0.0
    for vm, src in done:
        dst = int(dc.host[vm])
        dc.hosts.relocate(vm, src)
        moved += dc.migrate(vm, dst)
    return moved


def run_policy(policy, n_hosts, vms, hours, seed=0, discovery='local',
               max_ttl=rpm.MAX_TTL):
    """One run; returns the metric dict (keys of :data:`LABELS`)."""
    dc = DataCentre(n_hosts, vms, policy, discovery, seed, max_ttl)
    steps = int(round(hours * 60))
    entry_rng = random.Random('%s-entry' % seed)
    arrivals = clock.Arrivals(range(len(vms)),
                              key=lambda k: vms[k]['arrival'])
    ends = np.array([math.inf if v['end'] is None else v['end']
                     for v in vms])
    hist_c, hist_m = [], []
    pending_under = {}
    active_sum = 0
    peak = 0.0
    trigger_data = 0.0
    for minute, t in clock.StepClock(60.0).steps(steps):
        dc.depart(t, ends)
        dc.demand(t)
        new = arrivals.due(t)
        weights = _weights(dc)
        new.sort(key=lambda v: (-ffd_sum_volume(weights, dc.cpu[v],
                                                dc.mem[v]), v))
        for vm in new:
            entry = entry_rng.randrange(n_hosts)
            dst = dc.choose(vm, entry, urgent=not dc.service[vm],
                            migrating=False)
            if dst is None:
                dc.counts['rejected'] += 1
            else:
                dc.hosts.place(vm, dst)
        hist_c.append(np.minimum(dc.uc / HOST_CPU, 2.0))
        hist_m.append(np.minimum(dc.um / HOST_MEM, 2.0))
        del hist_c[:-rpm.HISTORY_SAMPLES], hist_m[:-rpm.HISTORY_SAMPLES]
        dc.hist_cpu = np.array(hist_c).T
        dc.hist_mem = np.array(hist_m).T
        active_sum += int((dc.count > 0).sum())
        peak = max(peak, dc.rc.sum() / (n_hosts * HOST_CPU))
        if (minute % PROFILE_EVERY == PROFILE_EVERY - 1
                and len(hist_c) == rpm.HISTORY_SAMPLES):
            trigger_data += _profile(dc, minute, pending_under)
    out = {k: 0.0 for k in LABELS}
    out.update({k: float(v) for k, v in dc.counts.items()})
    out['active_servers'] = active_sum / float(steps)
    out['peak_reserved_cpu'] = peak
    out['data_per_trigger_gb'] = (trigger_data / out['triggers']
                                  if out['triggers'] else 0.0)
    return out


def _profile(dc, minute, pending_under):
    """PM state profiler (§4.2, §5.3); returns GB moved."""
    events = []
    for h in np.flatnonzero(dc.count > 0):
        h = int(h)
        ev = rpm.host_trigger(dc.hist_cpu[h], dc.hist_mem[h])
        if ev == rpm.Event.OVERLOAD:
            events.append((ev, h))
        elif ev == rpm.Event.UNDERLOAD:
            if h not in pending_under:
                pending_under[h] = minute
                dc.counts['triggers'] += 1
                dc.counts['underload'] += 1
    moved = 0.0
    for ev, h in rpm.prioritise(events):
        dc.counts['triggers'] += 1
        dc.counts['overload'] += 1
        moved += _resolve_overload(dc, h)
    for h, since in sorted(pending_under.items()):
        if minute - since < UNDERLOAD_WAIT:
            continue
        del pending_under[h]
        if dc.count[h] == 0:
            continue
        if rpm.host_trigger(dc.hist_cpu[h], dc.hist_mem[h]) != \
                rpm.Event.UNDERLOAD:
            continue            # resolved by new placements (§5.3)
        moved += _resolve_underload(dc, h)
    return moved


def _mean_se(values):
    arr = np.array(values, dtype=float)
    if arr.size < 2:
        return float(arr.mean()), 0.0
    return float(arr.mean()), float(arr.std(ddof=1) / math.sqrt(arr.size))


def _fmt_pct(value, digits=1):
    return '-' if value is None else '%+.*f %%' % (digits, value)


def _pct(new, old):
    return None if not old else 100.0 * (new - old) / old


def rpm_vs_ffd(reduced=False, seed=0, discovery='local', seeds=None):
    """RPM vs FFD-sum, several seeds, mean and standard error.

    Full: 256 hosts (2 clusters × 8 groups × 16), 24 h, 5 seeds.
    Reduced: 64 hosts (2 × 2 × 16), 6 h, 2 seeds.

    :returns: ``(result dict, text)``; ``result['ffd']``/``['rpm']`` map
        each metric to its mean, ``result['se']`` to its standard error,
        ``result['runs']`` holds every run.
    """
    if reduced:
        n_hosts, hours, count = 64, 6.0, 2
    else:
        n_hosts, hours, count = 256, 24.0, 5
    seeds = list(seeds or range(seed, seed + count))
    runs = {p: [] for p in POLICIES}
    peaks = []
    for s in seeds:
        vms = thesis_load(n_hosts, hours, s)
        peaks.append(peak_reservation(vms, n_hosts))
        for p in POLICIES:
            runs[p].append(run_policy(p, n_hosts, vms, hours, s, discovery))
    keys = list(LABELS) + ['data_per_trigger_gb', 'peak_reserved_cpu']
    mean = {p: {} for p in POLICIES}
    se = {p: {} for p in POLICIES}
    for p in POLICIES:
        for k in keys:
            mean[p][k], se[p][k] = _mean_se([r[k] for r in runs[p]])
    result = {'scenario': 'rpm-vs-ffd', 'reduced': reduced,
              'seeds': seeds, 'hosts': n_hosts, 'hours': hours,
              'discovery': discovery,
              'requests_per_host_day': REQUESTS_PER_HOST_DAY,
              'sb_ratio': SB_RATIO,
              'peak_reservation': [float(np.mean([p[0] for p in peaks])),
                                   float(np.mean([p[1] for p in peaks]))],
              'ffd': mean['ffd'], 'rpm': mean['rpm'], 'se': se,
              'runs': runs, 'change_pct': {},
              'paper': {k: {'ffd': v[0], 'rpm': v[1],
                            'change_pct': _pct(v[1], v[0])}
                        for k, v in TABLE4.items()}}
    rows = []
    for key, label in LABELS.items():
        ours = _pct(mean['rpm'][key], mean['ffd'][key])
        result['change_pct'][key] = ours
        paper = TABLE4.get(key)
        rows.append([label,
                     '%.1f ± %.1f' % (mean['ffd'][key], se['ffd'][key]),
                     '%.1f ± %.1f' % (mean['rpm'][key], se['rpm'][key]),
                     _fmt_pct(ours),
                     '-' if paper is None else '%g / %g' % paper,
                     '-' if paper is None else
                     _fmt_pct(_pct(paper[1], paper[0]), 0)])
    rows.append(['data per trigger (GB)',
                 '%.2f' % mean['ffd']['data_per_trigger_gb'],
                 '%.2f' % mean['rpm']['data_per_trigger_gb'],
                 _fmt_pct(_pct(mean['rpm']['data_per_trigger_gb'],
                               mean['ffd']['data_per_trigger_gb'])),
                 '- / 12.73 (Table 5)', '-'])
    n_req = len(thesis_load(n_hosts, hours, seeds[0]))
    text = '\n'.join([
        'rpm-vs-ffd: thesis Paper IV Table 4 (FFD-sum vs RPM); %d hosts '
        '(16 ECU, 64 GB; %d clusters × %d groups × %d), %g h, %s '
        'discovery (k = %d, 0.6/0.3/0.1, MaxTTL %d), SB ratio %g, '
        '%.2f requests per host per day (%d in seed %d); all requests\' '
        'reservations = %.0f %% of the CPU / %.0f %% of the memory (the '
        'thesis\' "90 %% if all VMs are accepted"), highest concurrent '
        'reservation %.0f %% CPU (FFD-sum); seeds %s, mean ± SE'
        % (n_hosts, CLUSTERS, n_hosts // GROUP_SIZE // CLUSTERS,
           GROUP_SIZE, hours, discovery, rpm.NEIGHBOURS, rpm.MAX_TTL,
           SB_RATIO, REQUESTS_PER_HOST_DAY, n_req, seeds[0],
           100 * result['peak_reservation'][0],
           100 * result['peak_reservation'][1],
           100 * mean['ffd']['peak_reserved_cpu'],
           ', '.join(map(str, seeds))),
        '',
        tables.text_table(['metric', 'FFD-sum', 'RPM', 'RPM vs FFD (ours)',
                           'Table 4 FFD / RPM', 'Table 4 change'], rows),
        '',
        'Table 4: 65536 hosts, 24 h, 230000 requests, 10 runs. Absolute '
        'counts scale with the data centre; compare the change columns.'])
    return result, text
