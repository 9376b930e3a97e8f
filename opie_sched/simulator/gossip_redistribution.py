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
"""Scenario ``gossip-redistribution``: thesis Paper III, Figs. 2-5.

Sedaghat, Hernández, Elmroth and Girdzijauskas, "Divide the Task,
Multiply the Outcome: Cooperative VM Consolidation" (CloudCom 2014; thesis
Paper III), §4-5: homogeneous PMs, the six VM types of Table 1 (their
vCPU % and memory % of a PM), interactive VMs whose CPU follows eq. 11
(memory in the type's proportion, eq. 12) plus constant batch VMs with
Poisson arrivals and truncated power-law (exponent 2) lifetimes; 1000
timesteps, demands sampled every 20th; α = 0.9; 175 W idle, 250 W full;
k = 20 random neighbours per cycle.

* **Fig. 2**: average CPU and memory utilisation of the active PMs per
  gossip cycle under a constant load, Merge and Merge+Imb; paper: high
  within 2-3 cycles, converged at the 7th.
* **Figs. 3-4**: Random, Incremental, Merge, Merge+Imb over the run:
  utilisation, active PMs, power, migrations, imbalance, batch
  rejections, overload time. Paper (§5.2): Incremental has the lowest
  utilisation and most active PMs after Random; Merge+Imb vs Merge: 28 %
  fewer rejections, 12.6 % less overload time, 3.2 % less power, 25 %
  more migrations, lower imbalance.
* **Fig. 5**: k = 10, 20, 30, 50 under a static load: larger views
  converge faster, with diminishing effect.

Scale is ours: the paper simulates 100,000 PMs (50,000 for Fig. 5) in
PeerSim; we keep its ratio of two VM requests per PM (half interactive,
half batch; the split is ours) on :data:`FULL` PMs. Where Paper III is
silent we chose (and say so in :data:`FULL`): a timestep is 86.4 s (the
run is one day of eq. 11), batch VMs demand their type's full size, their
lifetimes are at least 20 timesteps, a new VM goes to the most utilised
*active* PM of its entry peer's view (the peer included) that fits
under α (a random one under Random).

The claims of §5.1-5.3 are judged over the paper's 10 runs (seeds
``seed`` .. ``seed + 9``) by :mod:`opie_sched.simulator.verdicts`, and the
Merge+Imb vs Merge claims again under each choice of ours that can flip
them (:data:`SETTINGS`, the paper's text beside each):

* **Placement of a new VM** (``placement``): Paper III does not describe
  it; the only place it wakes an idle PM is Offload (Alg. 3), and it
  reports batch rejections that Merge+Imb lowers by balancing the PMs
  (§5.2), which needs VMs to be refused by the *active* PMs: ``active``
  (ours) rejects a VM that no active PM of the view fits; ``wake`` puts
  it on any PM of the view (a sleeping one when no active one fits), so
  with 21 PMs in a view a VM is practically never rejected.
* **Merge direction** (``merge``): ours empties the peer whose VMs cost
  less memory to move (:data:`MERGE_LESS`); Alg. 2 as printed empties the
  one with more (:data:`MERGE_MORE`, :class:`MergeMoreMemory`).
* **Redistribution trigger** (``trigger``): Alg. 2 redistributes a pair
  only when its CPU *and* memory sums are at least C_PM (third branch;
  eq. 6's φ = 1), :data:`~opie_sched.consolidation.gossip
  .TRIGGER_BOTH_FULL`; the other reading redistributes every pair that
  cannot merge under α, :data:`~opie_sched.consolidation.gossip
  .TRIGGER_NO_MERGE`.

Merge+Imb's redistribution searches single moves either way and
one-for-one swaps only (:class:`opie_sched.consolidation.gossip.Gossip`),
a bounded neighbourhood of the pair's 2-D bin packing.

``run(strategy, vms_per_pm=8.0)`` runs the same experiment on a four
times heavier load.

The data centre (PMs of capacity 1 in CPU and memory, the VMs' placement
and migrations) is the shared core's
:class:`~opie_sched.simcore.hosts.Hosts` and the monitoring epochs
its :class:`~opie_sched.simcore.clock.StepClock`; the protocol
(:class:`opie_sched.consolidation.gossip.Gossip`) decides on its own
virtual mapping, whose plan the scenario then migrates.
"""

import collections

import numpy as np

from opie_sched.consolidation import gossip
from opie_sched.consolidation import overlay as overlay_mod
from opie_sched.simcore import clock
from opie_sched.simcore import hosts as hosts_mod
from opie_sched.simulator import verdicts

#: Paper III Table 1: name -> (vCPU % of a PM, memory % of a PM, GB).
VM_TYPES = {
    'c1.medium': (0.13, 0.06, 7.44), 'c3.xlarge': (0.27, 0.12, 14.88),
    'm2.xlarge': (0.06, 0.13, 17.1), 'm2.2xlarge': (0.12, 0.27, 34.2),
    'm3.medium': (0.03, 0.03, 3.75), 'm3.large': (0.06, 0.06, 7.5),
}

#: Paper III §5.2: Merge+Imb relative to Merge, %.
PAPER_MERGE_IMB = {'rejections': -28.0, 'overload_time': -12.6,
                   'power': -3.2, 'migrations': +25.0}
#: Paper III §5.1.2 eq. 13: messages exchanged per PM and cycle, and the
#: size of one message (bytes); the paper's figure at 100,000 PMs and 7
#: cycles ("160MB = 100,000 x 7 x 2 x 120 byte").
EQ13_MESSAGES, EQ13_BYTES = 2, 120
PAPER_EQ13 = {'pms': 100000, 'cycles': 7, 'megabytes': 160.0}


def eq13_bandwidth(pms, cycles, messages=EQ13_MESSAGES, size=EQ13_BYTES):
    """Paper III eq. 13: the most bytes one consolidation decision
    exchanges (PMs x convergence cycles x messages x message size).
    """
    return float(pms) * cycles * messages * size


#: Paper III §5.1.1: cycles to a high utilisation and to convergence.
PAPER_FIG2 = {'high_within': (2, 3), 'converged_at': 7}
PAPER_FIG5_K = (10, 20, 30, 50)

#: New-VM placement rules (see the module docstring).
PLACE_ACTIVE, PLACE_WAKE = ('active', 'wake')
#: Which peer a Merge empties: ``less`` memory (ours, the cheaper
#: direction of eq. 7-8, :class:`opie_sched.consolidation.gossip.Gossip`)
#: or ``more`` (Alg. 2 as printed: "if m_me(t) >= m_k(t) then add the
#: references of VMs on me to VM_k", :class:`MergeMoreMemory`).
MERGE_LESS, MERGE_MORE = ('less', 'more')
#: The settings of the sensitivity table: (label, trigger, placement,
#: merge direction); the first is the one of the claims.
SETTINGS = (
    ('ours (Alg. 2 trigger, active PMs, Merge empties less memory)',
     gossip.TRIGGER_BOTH_FULL, PLACE_ACTIVE, MERGE_LESS),
    ('new VMs on any PM of the view', gossip.TRIGGER_BOTH_FULL,
     PLACE_WAKE, MERGE_LESS),
    ('Merge empties more memory (Alg. 2 as printed)',
     gossip.TRIGGER_BOTH_FULL, PLACE_ACTIVE, MERGE_MORE),
    ('redistribute whenever no merge', gossip.TRIGGER_NO_MERGE,
     PLACE_ACTIVE, MERGE_LESS),
)
#: The paper's text beside each choice (Paper III §4-5).
SETTING_TEXT = (
    ('new-VM placement', 'not described; the only step that wakes an '
     'idle PM is Offload (Alg. 3), and §5.2 reports "lower rejections of '
     'VM requests" with Merge+Imb'),
    ('Merge direction', 'Alg. 2: "if (m_me(t) >= m_k(t)) then Add the '
     'references of VMs on me to VM_k. Tag me as to-be-idled."'),
    ('redistribution trigger', 'Alg. 2: "else if (c_me(t) + c_k(t) >= '
     'C_PM) & (m_me(t) + m_k(t) >= M_PM) then Select a distribution of '
     'VMs that minimizes the total Imbalance"'),
    ('runs', '§4: "All results presented are the average of 10 '
     'simulation runs with the same configuration"'),
)

FULL = dict(pms=200, steps=1000, monitor_every=20, view=20,
            seconds_per_step=86.4, max_cycles=15, min_lifetime=20.0,
            runs=10, vms_per_pm=2.0, trigger=gossip.TRIGGER_BOTH_FULL,
            placement=PLACE_ACTIVE, merge=MERGE_LESS)
REDUCED = dict(pms=40, steps=200, monitor_every=20, view=10,
               seconds_per_step=432.0, max_cycles=10, min_lifetime=20.0,
               runs=2, vms_per_pm=2.0, trigger=gossip.TRIGGER_BOTH_FULL,
               placement=PLACE_ACTIVE, merge=MERGE_LESS)


class MergeMoreMemory(gossip.Gossip):
    """The protocol with Alg. 2's Merge as printed: of a pair that fits
    under α, the peer with *more* memory is emptied (ties: ``me``).
    Everything else is :class:`~opie_sched.consolidation.gossip.Gossip`.
    """

    def _merge_direction(self, me, k):
        return (me, k) if self.m[me] >= self.m[k] else (k, me)


ORDER = (gossip.RANDOM, gossip.INCREMENTAL, gossip.MERGE, gossip.MERGE_IMB)
_LABEL = {gossip.RANDOM: 'Random', gossip.INCREMENTAL: 'Incremental',
          gossip.MERGE: 'Merge', gossip.MERGE_IMB: 'Merge+Imb'}


class Workload:
    """The VMs of one run (same for every strategy of a seed).

    ``cpu_at(t)``/``mem_at(t)`` give every VM's demand at timestep ``t``
    (fractions of a PM; 0 when the VM is not alive).
    """

    def __init__(self, pms, steps, seconds_per_step, min_lifetime, seed,
                 vms_per_pm=2.0):
        rng = np.random.default_rng(seed)
        names = sorted(VM_TYPES)
        n_int = int(round(pms * vms_per_pm / 2))
        n_batch = n_int
        count = n_int + n_batch
        kinds = rng.integers(0, len(names), count)
        self.cpu_nominal = np.array([VM_TYPES[names[k]][0] for k in kinds])
        self.mem_nominal = np.array([VM_TYPES[names[k]][1] for k in kinds])
        self.gb_nominal = np.array([VM_TYPES[names[k]][2] for k in kinds])
        self.interactive = np.arange(count) < n_int
        self.u = rng.uniform(0, 1, count)
        self.s = rng.uniform(0, 1, count)
        self.start = np.zeros(count)
        self.end = np.full(count, float(steps) + 1)
        # Batch: Poisson arrivals over the run; truncated power-law
        # lifetimes (exponent 2, at least ``min_lifetime``).
        arrivals = np.sort(rng.uniform(0, steps, n_batch))
        life = np.minimum(min_lifetime / (1 - rng.uniform(0, 1, n_batch)),
                          float(steps))
        self.start[n_int:] = arrivals
        self.end[n_int:] = arrivals + life
        self.seconds = seconds_per_step

    def factor(self, t):
        """Eq. 11's (1 + u sin(2πt/86400 − 2πs)) / 2 per VM (1 for batch
        VMs: their demand is constant).
        """
        f = 0.5 * (1 + self.u * np.sin(2 * np.pi * t * self.seconds / 86400
                                       - 2 * np.pi * self.s))
        return np.where(self.interactive, f, 1.0)

    def alive(self, t):
        return (self.start <= t) & (self.end > t)

    def demand(self, t):
        f = self.factor(t)
        return self.cpu_nominal * f, self.mem_nominal * f, \
            self.gb_nominal * f


def _place(vms, dc, cpu, mem, pms, sampling, rng, strategy, initial,
           placement=PLACE_ACTIVE):
    """Place ``vms`` (ids) one by one on ``dc`` (the core's
    :class:`~opie_sched.simcore.hosts.Hosts`, sums up to date);
    the number rejected. ``placement``: :data:`PLACE_ACTIVE` or
    :data:`PLACE_WAKE` (the initial placement is random over all PMs).
    """
    c = dc.sums['size'][:, 0]
    m = dc.sums['size'][:, 1]
    rejected = 0
    a = gossip.ALPHA
    for vm in vms:
        if initial:
            cands = np.arange(pms)
        else:
            entry = int(rng.integers(pms))
            cands = np.concatenate(([entry], sampling.view(entry)))
        fit = (c[cands] + cpu[vm] <= a + 1e-9) & \
            (m[cands] + mem[vm] <= a + 1e-9)
        busy = (c[cands] > 1e-9) | (m[cands] > 1e-9)
        if not initial and (placement == PLACE_ACTIVE or
                            (fit & busy).any()):
            fit &= busy
        cands = cands[fit]
        if not len(cands):
            rejected += 1
            continue
        if initial or strategy == gossip.RANDOM:
            pm = int(cands[int(rng.integers(len(cands)))])
        else:
            pm = int(cands[int(np.argmax(c[cands] + m[cands]))])
        dc.place(vm, pm)
    return rejected


def _used(host, cpu, mem, pms):
    """CPU and memory used per PM by a mapping ``host`` (the protocol's
    virtual one), from scratch.
    """
    c = np.zeros(pms)
    m = np.zeros(pms)
    on = host >= 0
    np.add.at(c, host[on], cpu[on])
    np.add.at(m, host[on], mem[on])
    return c, m


def run(strategy, seed=0, trace=None, **params):
    """One run of ``strategy``; dict of means over the monitoring epochs
    (``cpu``, ``mem``, ``active``, ``power``, ``imbalance``) and totals
    (``migrations``, ``rejections`` of batch VMs, ``arrivals``: VMs
    placed or rejected after the initial placement, ``overload_time`` in
    PM-timesteps, ``cycles``). ``params`` override :data:`FULL`, among
    them ``merge``: :data:`MERGE_LESS` or :data:`MERGE_MORE`.

    :param trace: optional list receiving, for the first epoch, one
        ``metrics`` dict per gossip cycle (Fig. 2).
    """
    cfg = dict(FULL, **params)
    pms = cfg['pms']
    k = cfg['view']
    work = Workload(pms, cfg['steps'], cfg['seconds_per_step'],
                    cfg['min_lifetime'], seed, cfg['vms_per_pm'])
    rng = np.random.default_rng(seed + 7)
    sampling = overlay_mod.PeerSampling(pms, k, seed=seed + 11)
    dc = hosts_mod.Hosts(np.ones((pms, 2)))
    dc.register_many(len(work.cpu_nominal))
    host = dc.host
    every = cfg['monitor_every']
    totals = {'migrations': 0, 'rejections': 0, 'overload_time': 0,
              'cycles': 0, 'arrivals': 0}
    protocol = (MergeMoreMemory if cfg.get('merge') == MERGE_MORE
                else gossip.Gossip)
    samples = []
    placed_before = np.zeros(len(host), dtype=bool)
    epochs = len(range(0, cfg['steps'], every))
    for epoch, t in clock.StepClock(every).steps(epochs):
        cpu, mem, gb = work.demand(t)
        alive = work.alive(t)
        gone = np.flatnonzero(~alive & (host >= 0))
        if gone.size:
            dc.remove_many(gone)
        new = np.nonzero(alive & ~placed_before & (host < 0))[0]
        placed_before |= alive
        dc.values['size'][:, 0] = cpu
        dc.values['size'][:, 1] = mem
        dc.refresh()
        rejected = _place(new, dc, cpu, mem, pms, sampling, rng, strategy,
                          initial=(epoch == 0),
                          placement=cfg['placement'])
        dc.refresh()
        if epoch > 0:
            totals['rejections'] += rejected
            totals['arrivals'] += len(new)
        cpu = np.where(host >= 0, cpu, 0.0)
        mem = np.where(host >= 0, mem, 0.0)
        proto = protocol(pms, cpu, mem, gb, host, sampling,
                         strategy=strategy, rng=rng,
                         trigger=cfg['trigger'])
        over = [int(sum(proto.overloaded(p) for p in range(pms)))]

        def on_cycle(n, g, epoch=epoch):
            over.append(int(sum(g.overloaded(p) for p in range(pms))))
            if trace is not None and epoch == 0:
                c, m = _used(g.assign, cpu, mem, pms)
                trace.append(gossip.metrics(pms, c, m))

        if trace is not None and epoch == 0:
            trace.append(gossip.metrics(pms, dc.sums['size'][:, 0],
                                        dc.sums['size'][:, 1]))
        cycles = 0
        if strategy != gossip.RANDOM:
            cycles = proto.converge(cfg['max_cycles'], on_cycle)
        totals['cycles'] += cycles
        # a PM overloaded before a cycle stays so for that timestep; the
        # ones left after the protocol for the rest of the epoch.
        totals['overload_time'] += sum(over[:-1]) + over[-1] * max(
            0, every - cycles)
        plan = proto.plan()
        totals['migrations'] += len(plan)
        for vm, _, destination in plan:
            dc.migrate(vm, destination)
        dc.refresh()
        samples.append(gossip.metrics(pms, dc.sums['size'][:, 0],
                                      dc.sums['size'][:, 1]))
    out = {key: float(np.mean([s[key] for s in samples]))
           for key in ('cpu', 'mem', 'active', 'power', 'imbalance')}
    out.update(totals)
    return out


def convergence(strategy, k, seed=0, **params):
    """Fig. 2 / Fig. 5 under a constant load: the first epoch's gossip
    from the random initial placement. ``(cycles, migrations, trace)``.
    """
    cfg = dict(FULL, **params)
    trace = []
    cfg2 = dict(cfg, steps=cfg['monitor_every'], view=k)
    res = run(strategy, seed=seed, trace=trace, **cfg2)
    return res['cycles'], res['migrations'], trace


def _mean(rows, key):
    return float(np.mean([r[key] for r in rows]))


SCENARIO = 'gossip-redistribution'
_SRC = 'Paper III §5.2'
#: Merge+Imb vs Merge claims: metric -> (sign of Merge+Imb - Merge, the
#: paper's words).
_DIRECTIONS = collections.OrderedDict([
    ('rejections', (-1, '28% lower rejections')),
    ('overload_time', (-1, '12.6 % faster offload')),
    ('power', (-1, '3.2 % lower power consumption')),
    ('migrations', (+1, '25% more migration')),
    ('imbalance', (-1, 'lower imbalance (Fig. 4a)')),
])


def _pct(imb, merge):
    """Per-seed relative difference, % (None when a Merge value is 0)."""
    if any(m == 0 for m in merge):
        return None
    return [100.0 * (i - m) / m for i, m in zip(imb, merge)]


def merge_imb_claims(merge, imb, scenario=SCENARIO):
    """Paper III §5.2's Merge+Imb vs Merge claims judged over the seeds:
    per metric a direction claim on the per-seed difference (baseline
    Merge) and, where the paper gives a percentage, a magnitude claim on
    the per-seed relative difference (default 20 % band). A magnitude
    whose Merge value is 0 on a seed (no rejections at all) is not
    judged. ``merge``/``imb``: lists of :func:`run` dicts, same seeds.
    """
    out = []
    for key, (sign, words) in _DIRECTIONS.items():
        m = [r[key] for r in merge]
        i = [r[key] for r in imb]
        out.append(verdicts.judge(verdicts.Claim(
            scenario, 'Merge+Imb %s than Merge: %s' % (
                'more' if sign > 0 else 'less', key),
            words, _SRC, sign=sign),
            [a - b for a, b in zip(i, m)], baseline=m))
        if key in PAPER_MERGE_IMB:
            rel = _pct(i, m)
            if rel is not None:
                out.append(verdicts.judge(verdicts.Claim(
                    scenario, 'Merge+Imb vs Merge: %s %+g %%' % (
                        key, PAPER_MERGE_IMB[key]),
                    '%+g %%' % PAPER_MERGE_IMB[key], _SRC,
                    verdicts.MAGNITUDE, target=PAPER_MERGE_IMB[key],
                    unit=' %'), rel))
    return out


def other_claims(by_seed, fig2_runs, fig5_runs, scenario=SCENARIO):
    """The remaining claims over the seeds: Incremental has the lowest
    utilisation and the most active PMs after Random (Fig. 3a-c: per
    seed, against the better of Merge and Merge+Imb); Fig. 2, Merge+Imb
    reaches a high utilisation (90 % of its final CPU) within 2-3 cycles
    and converges at the 7th (magnitudes, the paper's band 2-3 and our
    default band around 7); Fig. 5, k = 50 converges in fewer cycles than
    k = 10.
    """
    inc, mer, imb = (by_seed[gossip.INCREMENTAL], by_seed[gossip.MERGE],
                     by_seed[gossip.MERGE_IMB])
    out = [
        verdicts.judge(verdicts.Claim(
            scenario, 'Incremental CPU utilisation below Merge and '
            'Merge+Imb', 'lowest after Random (Fig. 3a)', 'Paper III §5.2',
            sign=-1),
            [a['cpu'] - max(b['cpu'], c['cpu'])
             for a, b, c in zip(inc, mer, imb)],
            baseline=[max(b['cpu'], c['cpu']) for b, c in zip(mer, imb)]),
        verdicts.judge(verdicts.Claim(
            scenario, 'Incremental active PMs above Merge and Merge+Imb',
            'most after Random (Fig. 3c)', 'Paper III §5.2'),
            [a['active'] - max(b['active'], c['active'])
             for a, b, c in zip(inc, mer, imb)],
            baseline=[max(b['active'], c['active'])
                      for b, c in zip(mer, imb)]),
    ]
    if fig2_runs:
        out += [
            verdicts.judge(verdicts.Claim(
                scenario, 'Fig. 2: Merge+Imb at 90 % of its final CPU '
                'within 2-3 cycles', '2 to 3 cycles', 'Paper III §5.1.1',
                verdicts.MAGNITUDE, target=2.5, band=(2.0, 3.0)),
                [r['cycle_to_90pct_of_final_cpu'] for r in fig2_runs]),
            verdicts.judge(verdicts.Claim(
                scenario, 'Fig. 2: Merge+Imb converges at cycle 7',
                '7th cycle', 'Paper III §5.1.1', verdicts.MAGNITUDE,
                target=PAPER_FIG2['converged_at']),
                [r['cycles'] for r in fig2_runs])]
    if fig5_runs and len(fig5_runs) > 1:
        ks = sorted(fig5_runs)
        out.append(verdicts.judge(verdicts.Claim(
            scenario, 'Fig. 5: k=%d converges in fewer cycles than k=%d'
            % (ks[-1], ks[0]), 'larger view converges faster',
            'Paper III §5.3', sign=-1),
            [a - b for a, b in zip(fig5_runs[ks[-1]], fig5_runs[ks[0]])],
            baseline=fig5_runs[ks[0]]))
    return out


def _fig2(strategy, params, seed):
    cycles, moved, trace = convergence(strategy, params['view'], seed=seed,
                                       **params)
    final = trace[-1]
    high = next((i for i, tr in enumerate(trace)
                 if tr['cpu'] >= 0.9 * final['cpu']), len(trace) - 1)
    return {'cycles': cycles, 'migrations': moved,
            'cycle_to_90pct_of_final_cpu': high,
            'cpu': [tr['cpu'] for tr in trace],
            'mem': [tr['mem'] for tr in trace]}


def gossip_redistribution(reduced=False, seed=0, table=None, count=None):
    """Paper III Figs. 2-5, paper vs ours, claims judged over ``runs``
    seeds (``seed`` .. ``seed + runs - 1``; full: the paper's 10 runs)
    and the sensitivity of the Merge+Imb claims to our choices
    (:data:`SETTINGS`); ``(result, text)``. ``count``: seeds instead of
    the configuration's ``runs`` (e.g. 10 on the reduced configuration).
    """
    if table is None:
        from opie_sched.simulator.tables import text_table as table
    params = dict(REDUCED if reduced else FULL)
    if count is not None:
        if count < 1:
            raise ValueError('count must be >= 1, got %r' % (count,))
        params['runs'] = count
    runs = params['runs']
    seeds = list(range(seed, seed + runs))
    cache = {}

    def per_seed(strategy, trigger, placement, merge):
        # Merge (and Random, Incremental) never redistribute: the trigger
        # cannot change them; only Merge and Merge+Imb merge.
        if strategy != gossip.MERGE_IMB:
            trigger = params['trigger']
        if strategy not in (gossip.MERGE, gossip.MERGE_IMB):
            merge = params['merge']
        key = (strategy, trigger, placement, merge)
        if key not in cache:
            cache[key] = [run(strategy, seed=s,
                              **dict(params, trigger=trigger,
                                     placement=placement, merge=merge))
                          for s in seeds]
        return cache[key]

    def averaged(rows):
        return {k: _mean(rows, k) for k in rows[0]}

    base = (params['trigger'], params['placement'], params['merge'])
    by_seed = {s: per_seed(s, *base) for s in ORDER}
    by = {s: averaged(rows) for s, rows in by_seed.items()}
    # Fig. 2, every seed
    fig2_runs = {s: [_fig2(s, params, x) for x in seeds]
                 for s in (gossip.MERGE, gossip.MERGE_IMB)}
    fig2 = {s: dict(rows[0], seed=seed) for s, rows in fig2_runs.items()}
    # Fig. 5
    fig5, fig5_runs = {}, {}
    for k in PAPER_FIG5_K:
        if k >= params['pms']:
            continue
        rows = [convergence(gossip.MERGE_IMB, k, seed=x, **params)
                for x in seeds]
        fig5_runs[k] = [float(r[0]) for r in rows]
        fig5[k] = {'cycles': float(np.mean([r[0] for r in rows])),
                   'migrations': float(np.mean([r[1] for r in rows]))}
    merge, imb = by[gossip.MERGE], by[gossip.MERGE_IMB]

    def rel(key):
        return (100.0 * (imb[key] - merge[key]) / merge[key]
                if merge[key] else None)

    compare = {key: rel(key) for key in PAPER_MERGE_IMB}
    judged = merge_imb_claims(by_seed[gossip.MERGE],
                              by_seed[gossip.MERGE_IMB])
    judged += other_claims(by_seed, fig2_runs[gossip.MERGE_IMB], fig5_runs)
    cycles_imb = fig2[gossip.MERGE_IMB]['cycles']
    eq13 = {'pms': params['pms'], 'cycles': cycles_imb,
            'bytes': eq13_bandwidth(params['pms'], cycles_imb),
            'bytes_at_paper_pms': eq13_bandwidth(PAPER_EQ13['pms'],
                                                 cycles_imb),
            'paper': PAPER_EQ13}
    readings = []
    for label, trigger, placement, direction in SETTINGS:
        m_rows = per_seed(gossip.MERGE, trigger, placement, direction)
        i_rows = per_seed(gossip.MERGE_IMB, trigger, placement, direction)
        m, i = averaged(m_rows), averaged(i_rows)
        mine = merge_imb_claims(m_rows, i_rows, scenario=label)
        readings.append({
            'setting': label, 'trigger': trigger, 'placement': placement,
            'merge_direction': direction, 'merge': m, 'merge_imb': i,
            'ours': {key: (100.0 * (i[key] - m[key]) / m[key]
                           if m[key] else None)
                     for key in PAPER_MERGE_IMB},
            'rejected_share': {
                'merge': m['rejections'] / m['arrivals']
                if m['arrivals'] else None,
                'merge_imb': i['rejections'] / i['arrivals']
                if i['arrivals'] else None},
            'verdicts': {v.claim.name: v.verdict for v in mine},
            'tally': dict(verdicts.tally(mine)[label])})
    result = {'scenario': SCENARIO, 'reduced': reduced,
              'seed': seed, 'seeds': seeds, 'seed_count': runs,
              'params': dict(params),
              'strategies': by,
              'merge_imb_vs_merge': {'paper': PAPER_MERGE_IMB,
                                     'ours': compare},
              'fig2': fig2, 'fig5': fig5, 'readings': readings,
              'eq13': eq13, 'claims': [j.as_dict() for j in judged],
              'tally': {k: dict(c)
                        for k, c in verdicts.tally(judged).items()}}

    def pct(v):
        return '-' if v is None else '%+.1f %%' % v

    claim_names = [v for v in readings[0]['verdicts']]
    short = {}
    for name in claim_names:
        if name.startswith('Merge+Imb vs Merge: '):
            short[name] = name.split(': ')[1].split(' ')[0] + ' mag.'
        else:
            short[name] = name.rsplit(': ', 1)[1] + ' dir.'
    text = [
        'Paper III Figs. 3-4 (%d PMs, %d VMs, k=%d, mean of %d runs, seeds '
        '%d..%d; the paper: 100,000 PMs, 200,000 VMs, mean of 10 runs): '
        'ours' % (params['pms'], int(params['vms_per_pm'] * params['pms']),
                  params['view'], runs, seeds[0], seeds[-1]),
        table(['strategy', 'CPU %', 'mem %', 'active PMs', 'power W',
               'imbalance', 'migrations', 'rejections', 'overload t'],
              [[_LABEL[s], '%.1f' % (100 * by[s]['cpu']),
                '%.1f' % (100 * by[s]['mem']), '%.1f' % by[s]['active'],
                '%.0f' % by[s]['power'], '%.4f' % by[s]['imbalance'],
                '%.0f' % by[s]['migrations'], '%.1f' % by[s]['rejections'],
                '%.0f' % by[s]['overload_time']] for s in ORDER]),
        '',
        'Merge+Imb relative to Merge (Paper III §5.2), ratio of the means:',
        table(['metric', 'paper', 'ours'],
              [[key, pct(PAPER_MERGE_IMB[key]), pct(compare[key])]
               for key in PAPER_MERGE_IMB]),
        '',
        'Paper III claims judged over the %d seeds (magnitudes on the '
        'per-seed relative difference Merge+Imb vs Merge):' % runs,
        verdicts.claims_table(judged),
        verdicts.tally_text(judged),
        verdicts.RULES_TEXT,
        '',
        'Sensitivity: the Merge+Imb vs Merge claims under each of our '
        'choices, same seeds (relative differences of the means; '
        'rejected = batch VMs rejected / batch VMs arriving after the '
        'initial placement, Merge / Merge+Imb):',
        table(['setting', 'rejections', 'overload t', 'power',
               'migrations', 'rejected M / M+I']
              + [short[n] for n in claim_names] + ['hold/fail/undec.'],
              [[r['setting']]
               + [pct(r['ours'][key]) for key in PAPER_MERGE_IMB]
               + ['%s / %s' % tuple(
                   '-' if x is None else '%.0f %%' % (100 * x)
                   for x in (r['rejected_share']['merge'],
                             r['rejected_share']['merge_imb']))]
               + [r['verdicts'].get(n, '-') for n in claim_names]
               + ['%d/%d/%d' % (r['tally']['holds'], r['tally']['fails'],
                                r['tally']['undecided'])]
               for r in readings]),
        'The paper on these choices:',
    ] + ['  %s: %s' % t for t in SETTING_TEXT] + [
        '',
        'Paper III Fig. 2 (constant load, from a random placement; seed '
        '%d shown, every seed judged above): paper high utilisation '
        'within 2-3 cycles, converged at cycle 7' % seed,
        table(['strategy', 'cycle >= 90 % of final CPU', 'converged at',
               'CPU % per cycle'],
              [[_LABEL[s], fig2[s]['cycle_to_90pct_of_final_cpu'],
                fig2[s]['cycles'],
                ' '.join('%.0f' % (100 * v) for v in fig2[s]['cpu'])]
               for s in fig2]),
        '',
        'Paper III Fig. 5 (Merge+Imb, static load, mean over the seeds): '
        'paper larger k converges faster, less and less so',
        table(['k', 'cycles', 'migrations'],
              [[k, '%.1f' % v['cycles'], '%.0f' % v['migrations']]
               for k, v in sorted(fig5.items())]),
        '',
        'Paper III eq. 13 (PMs x cycles x %d messages x %d bytes): ours '
        '%.3f MB (%d PMs, Merge+Imb converged in %d cycles, Fig. 2 run of '
        'seed %d); at the paper\'s 100,000 PMs with our cycles %.0f MB; '
        'paper %.0f MB (100,000 PMs, 7 cycles)' % (
            EQ13_MESSAGES, EQ13_BYTES, eq13['bytes'] / 1e6, eq13['pms'],
            eq13['cycles'], seed, eq13['bytes_at_paper_pms'] / 1e6,
            PAPER_EQ13['megabytes']),
    ]
    return result, '\n'.join(text)
