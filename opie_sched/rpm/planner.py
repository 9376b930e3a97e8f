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
"""The repacker's migration planner (thesis Paper IV, pure: no nova, no sdk).

Source: Sedaghat, Hernández-Rodriguez and Elmroth, "Decentralized cloud
datacenter reconsolidation through emergent and topology-aware behavior"
(thesis Paper IV). The node agent of §4.2 profiles its host over a sliding
window, raises an *overload* or *underload* trigger (§5.3: CPU or memory
above 90 % for 10 consecutive samples; both below 30 % for 10 samples),
processes the triggers by priority (Table 1: overload before underload)
and, for each VM to move, ranks the destinations with the RPM score
(§4.3.1, :mod:`opie_sched.rpm.model`); its *migration planner* picks the VMs.
This module makes that decision for every triggered host, once per
period. Where each node agent looks is :attr:`Policy.discovery`:

* ``'local'`` (default): Alg. 1's discovery (§4.3,
  :func:`opie_sched.rpm.model.discover`): each round the topology-aware peer
  sampling service (§4.1, §5.2, :class:`opie_sched.rpm.model.Overlay`) gives
  the source host ``k`` = 20 new random neighbours (0.6 same server
  group, 0.3 same cluster, 0.1 anywhere); the best-scored neighbour with
  room is taken at once for an overload and, for an underload, added to
  a candidate list for MaxTTL rounds, the lowest score winning. A host
  outside every round's view is never a destination; an instance whose
  discovery finds nothing is unplaced (the drain is called off, the
  overload stays). Random draws come from :attr:`Policy.seed`.
* ``'global'``: every host is a neighbour (a centralised planner; the
  same as ``'local'`` when ``k`` >= hosts - 1).

Steps:

1. **Triggers** (:func:`host_triggers`):
   :func:`opie_sched.rpm.model.host_trigger`
   on each host's history, thresholds of :class:`Policy`.
2. **Order** (:func:`ordered_events`): :func:`opie_sched.rpm.model.prioritise`;
   overloaded hosts most loaded first, underloaded hosts least loaded
   first (the emptiest host is the cheapest to drain).
3. **Overload** (:func:`relieve_overload`): while the host's projected
   utilisation is above the overload threshold in CPU or memory, move the
   (instance, destination) pair of lowest score (the score holds DT, so
   the cheap-to-move VMs go first, Paper IV §4.2 "migration planner";
   an overload is urgent: one discovery round per instance).
4. **Underload** (:func:`drain_underload`): empty the host, **preemptible
   instances first** (the seed paper's future work: defragment the
   preemptible capacity), each to its lowest-score destination. A host
   that cannot be emptied entirely is left alone (half a drain frees
   nothing); the moves beyond the budget wait for the next period.
5. **Budget**: at most ``Policy.max_migrations`` moves per plan.

Every decision is applied to a projected state, so later moves see the
earlier ones. A host that receives an instance in this plan is not drained
in the same plan, and a drained host receives nothing.

Units: vCPU and MB for sizes, fractions of capacity for utilisations
(0.9 = 90 %), MB/s for rates, seconds for times. Bad input raises
:class:`PlanError` (a :class:`ValueError`) naming the value.
"""

import dataclasses
import math
import numbers

from opie_sched.rpm import model as rpm

#: Reasons of a :class:`Move`.
OVERLOAD = 'overload'
UNDERLOAD = 'underload'
#: Values of :attr:`Policy.discovery`.
LOCAL, GLOBAL = 'local', 'global'
DISCOVERY_MODES = (LOCAL, GLOBAL)


class PlanError(ValueError):
    """Invalid input to the planner (message names the value)."""


def _number(value, what, minimum=0.0, positive=False):
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not math.isfinite(value)):
        raise PlanError('%s must be a finite number, got %r' % (what, value))
    if value < minimum or (positive and value <= 0):
        raise PlanError('%s must be %s %g, got %r' % (
            what, '>' if positive else '>=', minimum, value))
    return float(value)


def _fraction(value, what):
    value = _number(value, what)
    if value > 1:
        raise PlanError('%s must be a fraction in [0, 1], got %r'
                        % (what, value))
    return value


# -- input --------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Instance:
    """A server as the planner sees it.

    :param id: server id (non-empty str). :param name: display name.
    :param vcpus: requested vCPUs (flavor), > 0.
    :param memory_mb: requested RAM (flavor), MB, > 0.
    :param preemptible: a preemptible instance (moved first when draining).
    :param cpu_used: vCPUs actually used; None = ``vcpus`` (allocations).
    :param memory_used_mb: MB actually used; None = ``memory_mb``.
    :param live: live (pre-copy) migration, the interactive-service case of
        Paper IV eq. 8; False: the data moved is the memory (cold case).
    :param dirty_rate: page dirty rate R, MB/s (live migrations).
    :param movable: False for servers that must stay (not ACTIVE, ...):
        they count in the load but are never moved.
    :raises PlanError: on any other value.
    """

    id: str
    name: str = ''
    vcpus: float = 1
    memory_mb: float = 1
    preemptible: bool = False
    cpu_used: float = None
    memory_used_mb: float = None
    live: bool = True
    dirty_rate: float = 0.0
    movable: bool = True

    def __post_init__(self):
        if not isinstance(self.id, str) or not self.id:
            raise PlanError('instance id must be a non-empty string, got %r'
                            % (self.id,))
        what = 'instance %s' % self.id
        _number(self.vcpus, what + ' vcpus', positive=True)
        _number(self.memory_mb, what + ' memory_mb', positive=True)
        _number(self.dirty_rate, what + ' dirty_rate')
        for attr in ('cpu_used', 'memory_used_mb'):
            if getattr(self, attr) is not None:
                _number(getattr(self, attr), '%s %s' % (what, attr))

    @property
    def cpu(self):
        """vCPUs actually used."""
        return self.vcpus if self.cpu_used is None else self.cpu_used

    @property
    def memory(self):
        """MB actually used."""
        return (self.memory_mb if self.memory_used_mb is None
                else self.memory_used_mb)


@dataclasses.dataclass(frozen=True)
class Host:
    """A compute host.

    :param name: the compute service host (the live-migration target).
    :param vcpus: CPU capacity, vCPU (total × allocation ratio), > 0.
    :param memory_mb: RAM capacity, MB, > 0.
    :param instances: tuple of :class:`Instance` on the host.
    :param cpu_history: CPU utilisation samples, fractions, oldest first.
    :param mem_history: memory utilisation samples, same length.
    :param group: server group / edge switch (Paper IV §3), or None.
    :param cluster: cluster / aggregation switch, or None.
    :param accepts: False for a host that must receive nothing (disabled,
        down); it is still profiled and may be relieved or drained.
    :param cpu_limit: vCPUs Nova lets instances request (capacity ×
        allocation ratio); None = ``vcpus``. Requests above ``vcpus`` but
        within the limit are overbooking: R_o of eq. 7 prices them.
    :param memory_limit_mb: likewise for RAM, MB; None = ``memory_mb``.
    :raises PlanError: bad capacity or limit, histories of different
        lengths, a sample outside [0, 10] (a sample is a utilisation
        fraction; allocation ratios can take it above 1).
    """

    name: str
    vcpus: float
    memory_mb: float
    instances: tuple = ()
    cpu_history: tuple = ()
    mem_history: tuple = ()
    group: str = None
    cluster: str = None
    accepts: bool = True
    cpu_limit: float = None
    memory_limit_mb: float = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise PlanError('host name must be a non-empty string, got %r'
                            % (self.name,))
        _number(self.vcpus, 'host %s vcpus' % self.name, positive=True)
        _number(self.memory_mb, 'host %s memory_mb' % self.name,
                positive=True)
        for attr in ('cpu_limit', 'memory_limit_mb'):
            if getattr(self, attr) is not None:
                _number(getattr(self, attr), 'host %s %s' % (self.name, attr),
                        positive=True)
        if len(self.cpu_history) != len(self.mem_history):
            raise PlanError('host %s: %d CPU samples but %d memory samples'
                            % (self.name, len(self.cpu_history),
                               len(self.mem_history)))
        for sample in tuple(self.cpu_history) + tuple(self.mem_history):
            value = _number(sample, 'host %s sample' % self.name)
            if value > 10:
                raise PlanError('host %s: sample %r is not a utilisation '
                                'fraction' % (self.name, sample))
        for inst in self.instances:
            if not isinstance(inst, Instance):
                raise PlanError('host %s: instances must be Instance, got %r'
                                % (self.name, inst))

    @property
    def cpu_allowed(self):
        """vCPUs instances may request (:attr:`cpu_limit` or capacity)."""
        return self.vcpus if self.cpu_limit is None else self.cpu_limit

    @property
    def memory_allowed(self):
        """MB instances may request."""
        return (self.memory_mb if self.memory_limit_mb is None
                else self.memory_limit_mb)

    @property
    def location(self):
        """:class:`opie_sched.rpm.model.Location` of the host."""
        return rpm.Location(self.name, self.group, self.cluster)


@dataclasses.dataclass(frozen=True)
class Policy:
    """Thresholds, λ's and limits of a plan (defaults: the thesis').

    :param overload: overload threshold, fraction (Paper IV §5.3: 0.9).
    :param underload: underload threshold, fraction (§5.3: 0.3).
    :param window: consecutive samples of a trigger (§5.3: 10).
    :param target: desired utilisation of the efficiency term (0.75).
    :param alpha: a destination's used CPU and RAM after a move stay
        <= alpha (eq. 2); default the overload threshold.
    :param lambdas: λ1..λ5 (Risk, Dist, E, DT, Imb), Σ = 1 (eq. 3-4).
    :param efficiency_formula: ``'distance'`` or ``'literal'``
        (:func:`opie_sched.rpm.model.efficiency`).
    :param max_migrations: the per-period budget, int >= 0.
    :param bandwidth: L, MB/s of the migration link (eq. 8-9).
    :param switchover_time: T, seconds (eq. 9).
    :param progress_threshold: X, MB (eq. 9).
    :param max_rounds: cap of the pre-copy rounds n.
    :param discovery: ``'local'`` (Paper IV Alg. 1, the default) or
        ``'global'`` (every host is a candidate), see the module doc.
    :param neighbours: k, neighbours per discovery round (§5.2: 20).
    :param locality: probabilities of a neighbour from the same server
        group, the same cluster, anywhere (§5.2: 0.6, 0.3, 0.1).
    :param max_ttl: MaxTTL of Alg. 1, rounds of an underload's discovery
        (int >= 0; the thesis gives no value, ours is 3).
    :param seed: seed (int or str) of the neighbour draws: the same hosts,
        policy and seed give the same plan; None draws a fresh seed from
        the operating system each plan.
    :raises PlanError: on bad values.
    """

    overload: float = rpm.OVERLOAD_THRESHOLD
    underload: float = rpm.UNDERLOAD_THRESHOLD
    window: int = rpm.HISTORY_SAMPLES
    target: float = rpm.TARGET_UTILISATION
    alpha: float = rpm.OVERLOAD_THRESHOLD
    lambdas: tuple = rpm.DEFAULT_LAMBDAS
    efficiency_formula: str = 'distance'
    max_migrations: int = 5
    bandwidth: float = 125.0
    switchover_time: float = 0.5
    progress_threshold: float = 50.0
    max_rounds: int = 30
    discovery: str = 'local'
    neighbours: int = rpm.NEIGHBOURS
    locality: tuple = rpm.LOCALITY
    max_ttl: int = rpm.MAX_TTL
    seed: object = None

    def __post_init__(self):
        for attr in ('overload', 'underload', 'target', 'alpha'):
            _fraction(getattr(self, attr), 'policy ' + attr)
        if self.underload >= self.overload:
            raise PlanError('underload threshold %g must be below the '
                            'overload threshold %g'
                            % (self.underload, self.overload))
        for attr in ('window', 'max_migrations', 'max_rounds',
                     'neighbours', 'max_ttl'):
            value = getattr(self, attr)
            least = 1 if attr in ('window', 'neighbours') else 0
            if (isinstance(value, bool)
                    or not isinstance(value, numbers.Integral)
                    or value < least):
                raise PlanError('policy %s must be an integer >= %d, got %r'
                                % (attr, least, value))
        if self.discovery not in DISCOVERY_MODES:
            raise PlanError('policy discovery must be one of %s, got %r'
                            % (', '.join(DISCOVERY_MODES), self.discovery))
        if self.seed is not None and (
                isinstance(self.seed, bool)
                or not isinstance(self.seed, (numbers.Integral, str))):
            raise PlanError('policy seed must be an int, a str or None, '
                            'got %r' % (self.seed,))
        _number(self.bandwidth, 'policy bandwidth', positive=True)
        _number(self.switchover_time, 'policy switchover_time')
        _number(self.progress_threshold, 'policy progress_threshold')
        try:
            rpm.check_lambdas(self.lambdas)
            rpm.check_locality(self.locality)
            rpm.efficiency_bounds(self.target, self.efficiency_formula)
            rpm.efficiency(0, 0, 0, 0, self.target, self.efficiency_formula)
        except rpm.RPMError as exc:
            raise PlanError('policy: %s' % exc)


# -- output -------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Move:
    """One planned migration.

    :param server: server id. :param name: its name.
    :param source: source host. :param destination: destination host.
    :param reason: :data:`OVERLOAD` or :data:`UNDERLOAD`.
    :param score: RPM score of the destination, [0, 1], lower is better.
    :param terms: the normalised :class:`opie_sched.rpm.model.Terms`.
    :param data_transfer_mb: DT of the move, MB (eq. 8).
    :param preemptible: whether the server is preemptible.
    """

    server: str
    name: str
    source: str
    destination: str
    reason: str
    score: float
    terms: rpm.Terms
    data_transfer_mb: float
    preemptible: bool

    def as_dict(self):
        """JSON-friendly dict of the move."""
        out = dataclasses.asdict(self)
        out['terms'] = dict(self.terms._asdict())
        return out


@dataclasses.dataclass
class Plan:
    """An ordered plan.

    :param moves: list of :class:`Move`, in execution order.
    :param triggers: ``{host: 'overload' | 'underload'}``.
    :param skipped: ``{host: reason}`` for triggered hosts with no move.
    :param budget_left: migrations of the budget not used.
    """

    moves: list
    triggers: dict
    skipped: dict
    budget_left: int

    def as_dict(self):
        return {'moves': [m.as_dict() for m in self.moves],
                'triggers': dict(self.triggers),
                'skipped': dict(self.skipped),
                'budget_left': self.budget_left}


# -- rules --------------------------------------------------------------------

def host_triggers(hosts, policy):
    """``{host name: rpm.Event}`` of the hosts with a trigger (Paper IV
    §4.2 PM state profiler, §5.3 thresholds); hosts with fewer than
    ``policy.window`` samples never trigger.
    """
    found = {}
    for host in hosts:
        event = rpm.host_trigger(host.cpu_history, host.mem_history,
                                 policy.overload, policy.underload,
                                 policy.window)
        if event is not None:
            found[host.name] = event
    return found


class _State:
    """Projected state of the hosts while a plan is built."""

    def __init__(self, hosts, overlay=None, rng=None):
        self.hosts = {h.name: h for h in hosts}
        self.placed = {h.name: list(h.instances) for h in hosts}
        self.received = set()
        self.drained = set()
        #: :class:`opie_sched.rpm.model.Overlay` (local discovery) or None.
        self.overlay = overlay
        self.rng = rng

    def requested(self, name):
        """``(vCPU, MB)`` requested on a host now."""
        insts = self.placed[name]
        return (sum(i.vcpus for i in insts), sum(i.memory_mb for i in insts))

    def used(self, name):
        """``(vCPU, MB)`` actually used on a host now."""
        insts = self.placed[name]
        return (sum(i.cpu for i in insts), sum(i.memory for i in insts))

    def utilisation(self, name):
        """``(cpu, mem)`` used fractions of a host now."""
        host = self.hosts[name]
        cpu, mem = self.used(name)
        return cpu / host.vcpus, mem / host.memory_mb

    def move(self, inst, source, destination):
        self.placed[source].remove(inst)
        self.placed[destination].append(inst)
        self.received.add(destination)


def data_transfer(inst, policy):
    """DT of moving ``inst``, MB (Paper IV eq. 8-9 through
    :func:`opie_sched.rpm.model.data_transfer`): the memory for a cold move,
    pre-copy rounds for a live one.
    """
    memory = inst.memory_mb
    if not inst.live:
        return rpm.data_transfer(memory)
    rounds = rpm.precopy_rounds(memory, inst.dirty_rate, policy.bandwidth,
                                policy.switchover_time,
                                policy.progress_threshold, policy.max_rounds)
    return rpm.data_transfer(memory, True, inst.dirty_rate,
                             policy.bandwidth, rounds)


def data_transfer_upper_bound(hosts, policy):
    """The DT bound of the plan, MB: the largest
    :func:`opie_sched.rpm.model.data_transfer_bound` over every instance (so DT
    compares instances with each other; 1 MB when there is none).
    """
    bounds = [rpm.data_transfer_bound(i.memory_mb, i.live, i.dirty_rate,
                                      policy.bandwidth, policy.max_rounds)
              for h in hosts for i in h.instances]
    return max(bounds + [1.0])


def fits(state, inst, destination, policy, consolidate=False):
    """Whether ``inst`` may go to ``destination``: the host accepts
    instances and is not being drained, the requested vCPU and MB stay
    within what Nova allows (:attr:`Host.cpu_allowed`, nothing is
    preempted by the move) and
    the used CPU and RAM stay <= ``policy.alpha`` (Paper IV eq. 2). With
    ``consolidate`` (draining an underloaded host) an empty host is no
    destination: moving there frees no host.
    """
    host = state.hosts[destination]
    if not host.accepts or destination in state.drained:
        return False
    if consolidate and not state.placed[destination]:
        return False
    return admits(host, state.requested(destination),
                  state.used(destination), inst, policy.alpha)


def admits(host, requested, used, inst, alpha):
    """RPM's admission rule (Paper IV eq. 2) for ``inst`` on ``host``: the
    requested vCPU and MB stay within what Nova allows
    (:attr:`Host.cpu_allowed`, :attr:`Host.memory_allowed`) and the used
    CPU and RAM stay <= ``alpha`` of the host's capacity.

    :param requested: ``(vCPU, MB)`` the host's instances request now.
    :param used: ``(CPU, MB)`` they use now.
    :param alpha: the utilisation bound, a fraction (0..1].
    """
    cpu_req, mem_req = requested
    if (cpu_req + inst.vcpus > host.cpu_allowed + 1e-9
            or mem_req + inst.memory_mb > host.memory_allowed + 1e-9):
        return False
    cpu, mem = used
    return ((cpu + inst.cpu) / host.vcpus <= alpha + 1e-9
            and (mem + inst.memory) / host.memory_mb <= alpha + 1e-9)


def move_terms(state, inst, source, destination, policy, dt_bound):
    """Normalised :class:`opie_sched.rpm.model.Terms` of moving ``inst`` from
    ``source`` to ``destination`` (Paper IV §4.3.1), and its DT in MB.

    Risk = R_o (eq. 6-7, the instance's request against the destination's
    Unreq and Free) × R_v (the destination's history, last ``window``
    samples), over sqrt(window − 1); Dist between the two hosts over 3;
    E (eq. 10-11) with the instance's used share of the destination over
    its bounds; DT over ``dt_bound``; Imb (eq. 12-13) of the source after
    and the destination after, over 2.
    """
    src, dst = state.hosts[source], state.hosts[destination]
    cpu_req, mem_req = state.requested(destination)
    cpu_used, mem_used = state.used(destination)
    r_o = rpm.host_overbooking_risk(
        inst.vcpus, dst.vcpus - cpu_req, dst.vcpus - cpu_used,
        inst.memory_mb, dst.memory_mb - mem_req, dst.memory_mb - mem_used)
    window = policy.window
    r_v = rpm.host_load_variation(dst.cpu_history[-window:],
                                  dst.mem_history[-window:])
    dst_cpu, dst_mem = state.utilisation(destination)
    src_cpu, src_mem = state.utilisation(source)
    vm_cpu, vm_mem = inst.cpu / dst.vcpus, inst.memory / dst.memory_mb
    eff = rpm.efficiency(dst_cpu, dst_mem, vm_cpu, vm_mem, policy.target,
                         policy.efficiency_formula)
    low, high = rpm.efficiency_bounds(policy.target,
                                      policy.efficiency_formula)
    # eq. 12-13 with the instance's share of each host (hosts may differ).
    imb = (rpm.imbalance(src_cpu, src_mem, -inst.cpu / src.vcpus,
                         -inst.memory / src.memory_mb)
           + rpm.imbalance(dst_cpu, dst_mem, vm_cpu, vm_mem))
    dt = data_transfer(inst, policy)
    terms = rpm.Terms(
        risk=rpm.normalise(rpm.risk(r_o, r_v),
                           rpm.max_coefficient_of_variation(window)),
        distance=rpm.normalise(rpm.distance(src.location, dst.location),
                               rpm.MAX_DISTANCE),
        efficiency=rpm.normalise(eff, high, low),
        data_transfer=rpm.normalise(dt, dt_bound),
        imbalance=rpm.normalise(imb, rpm.MAX_IMBALANCE))
    return terms, dt


def _rank(state, inst, source, policy, dt_bound, consolidate, names):
    """The :class:`Move` of ``inst`` to the lowest-score host among
    ``names`` that fits (ties: host name), or None.
    """
    best = None
    for name in sorted(names):
        if name == source or not fits(state, inst, name, policy,
                                      consolidate):
            continue
        terms, dt = move_terms(state, inst, source, name, policy, dt_bound)
        value = rpm.score(terms, policy.lambdas)
        if best is None or value < best.score - 1e-12:
            best = Move(inst.id, inst.name, source, name, None, value, terms,
                        dt, inst.preemptible)
    return best


def best_destination(state, inst, source, policy, dt_bound,
                     consolidate=False):
    """The :class:`Move` of ``inst`` to its lowest-score destination, or
    None when nothing fits (see :func:`fits`).

    Global discovery (no overlay in ``state``): over every host, ties by
    host name. Local discovery: :func:`opie_sched.rpm.model.discover` over the
    overlay's rounds of neighbours of ``source``; urgent (one round when
    something fits) unless ``consolidate`` (an underload, MaxTTL rounds).
    """
    if state.overlay is None:
        return _rank(state, inst, source, policy, dt_bound, consolidate,
                     state.hosts)
    found = {}

    def rank(names):
        move = _rank(state, inst, source, policy, dt_bound, consolidate,
                     names)
        if move is None:
            return None
        found[move.destination] = move
        return move.destination, move.score

    result = rpm.discover(state.rng, state.overlay, source, rank,
                          urgent=not consolidate, max_ttl=policy.max_ttl)
    return None if result.best is None else found[result.best]


def ordered_events(triggers, state):
    """``[(rpm.Event, host)]`` by priority (Paper IV Table 1 through
    :func:`opie_sched.rpm.model.prioritise`): overloaded hosts most loaded
    first, then underloaded hosts least loaded first; ties by name.
    """
    def load(name):
        return max(state.utilisation(name))

    over = sorted((n for n, e in triggers.items()
                   if e == rpm.Event.OVERLOAD), key=lambda n: (-load(n), n))
    under = sorted((n for n, e in triggers.items()
                    if e == rpm.Event.UNDERLOAD), key=lambda n: (load(n), n))
    return rpm.prioritise([(rpm.Event.UNDERLOAD, n) for n in under]
                          + [(rpm.Event.OVERLOAD, n) for n in over])


def _overloaded_now(state, name, policy):
    return max(state.utilisation(name)) > policy.overload + 1e-9


def relieve_overload(state, name, policy, budget, dt_bound):
    """Moves bringing host ``name`` back to <= the overload threshold in
    CPU and memory: each step the (movable instance, destination) pair of
    lowest score. Stops when resolved, when ``budget`` moves are planned
    or when nothing fits; returns ``(moves, reason or None)``.
    """
    moves = []
    while _overloaded_now(state, name, policy):
        if len(moves) >= budget:
            return moves, 'migration budget exhausted'
        best = None
        for inst in list(state.placed[name]):
            if not inst.movable:
                continue
            cand = best_destination(state, inst, name, policy, dt_bound)
            if cand is not None and (best is None
                                     or cand.score < best[1].score - 1e-12):
                best = (inst, cand)
        if best is None:
            return moves, 'no instance fits on another host'
        inst, move = best
        state.move(inst, name, move.destination)
        moves.append(dataclasses.replace(move, reason=OVERLOAD))
    return moves, None


def drain_order(instances):
    """Instances in draining order: preemptible first (defragment the
    preemptible capacity), then the larger first (the hardest to place
    while there is most room), then by id.
    """
    return sorted(instances, key=lambda i: (not i.preemptible, -i.vcpus,
                                            -i.memory_mb, i.id))


def drain_underload(state, name, policy, budget, dt_bound):
    """Moves emptying host ``name`` (every instance, :func:`drain_order`),
    each to its lowest-score destination; ``(moves, reason or None)``.

    All or nothing: when an instance cannot move (not movable, nothing
    fits) no move is planned. Only the first ``budget`` moves are kept;
    the rest waits for the next period (the host stays underloaded).
    """
    if name in state.received:
        return [], 'received instances in this plan'
    instances = drain_order(state.placed[name])
    if not instances:
        return [], 'already empty'
    pinned = [i.id for i in instances if not i.movable]
    if pinned:
        return [], 'instance(s) %s cannot move' % ', '.join(pinned)
    trial = _State(state.hosts.values(), state.overlay, state.rng)
    trial.placed = {k: list(v) for k, v in state.placed.items()}
    trial.received, trial.drained = set(state.received), set(state.drained)
    trial.drained.add(name)
    moves = []
    for inst in instances:
        move = best_destination(trial, inst, name, policy, dt_bound,
                                consolidate=True)
        if move is None:
            return [], 'instance %s fits on no other host' % inst.id
        trial.move(inst, name, move.destination)
        moves.append(dataclasses.replace(move, reason=UNDERLOAD))
    kept = moves[:budget]
    inst_by_id = {i.id: i for i in instances}
    state.drained.add(name)
    for move in kept:
        state.move(inst_by_id[move.server], name, move.destination)
    return kept, (None if len(kept) == len(moves) else
                  'migration budget exhausted (%d of %d moves planned)'
                  % (len(kept), len(moves)))


def _check_hosts(hosts):
    hosts = list(hosts)
    names, ids = set(), set()
    for host in hosts:
        if not isinstance(host, Host):
            raise PlanError('hosts must be Host, got %r' % (host,))
        if host.name in names:
            raise PlanError('duplicate host %r' % host.name)
        names.add(host.name)
        for inst in host.instances:
            if inst.id in ids:
                raise PlanError('instance %s is on two hosts' % inst.id)
            ids.add(inst.id)
    return hosts


def plan(hosts, policy=None):
    """The ordered migration plan of one period.

    :param hosts: iterable of :class:`Host` (unique names, each instance
        on one host).
    :param policy: :class:`Policy` (default: the thesis' thresholds).
    :returns: :class:`Plan`; its moves are in execution order.
    :raises PlanError: bad hosts or policy.
    """
    if policy is None:
        policy = Policy()
    if not isinstance(policy, Policy):
        raise PlanError('policy must be a Policy, got %r' % (policy,))
    hosts = _check_hosts(hosts)
    triggers = host_triggers(hosts, policy)
    state = _State(hosts)
    if policy.discovery == LOCAL:
        state.overlay = rpm.Overlay((h.location for h in hosts),
                                    policy.neighbours, policy.locality)
        state.rng = rpm.seeded_rng(policy.seed)
    dt_bound = data_transfer_upper_bound(hosts, policy)
    budget = policy.max_migrations
    moves, skipped = [], {}
    for event, name in ordered_events(triggers, state):
        rule = (relieve_overload if event == rpm.Event.OVERLOAD
                else drain_underload)
        found, reason = rule(state, name, policy, budget - len(moves),
                             dt_bound)
        moves.extend(found)
        if reason:
            skipped[name] = reason
    return Plan(moves=moves,
                triggers={n: (OVERLOAD if e == rpm.Event.OVERLOAD
                              else UNDERLOAD) for n, e in triggers.items()},
                skipped=skipped, budget_left=budget - len(moves))


def format_plan(result, hosts=None):
    """A text table of a :class:`Plan` (and of the hosts' state when
    ``hosts`` is given): one line per move, in order.
    """
    lines = []
    if hosts:
        lines.append('%-16s %6s %6s %8s  %s'
                     % ('host', 'cpu%', 'mem%', 'samples', 'trigger'))
        for host in sorted(hosts, key=lambda h: h.name):
            cpu = sum(i.cpu for i in host.instances) / host.vcpus
            mem = sum(i.memory for i in host.instances) / host.memory_mb
            lines.append('%-16s %6.1f %6.1f %8d  %s' % (
                host.name, cpu * 100, mem * 100, len(host.cpu_history),
                result.triggers.get(host.name, '-')))
        lines.append('')
    lines.append('%-3s %-36s %-14s %-5s %-12s %-12s %-9s %6s %9s' % (
        '#', 'server', 'name', 'kind', 'source', 'destination', 'reason',
        'score', 'DT MB'))
    for n, move in enumerate(result.moves, 1):
        lines.append('%-3d %-36s %-14s %-5s %-12s %-12s %-9s %6.3f %9.0f' % (
            n, move.server, (move.name or '')[:14],
            'pre' if move.preemptible else 'norm', move.source,
            move.destination, move.reason, move.score,
            move.data_transfer_mb))
    if not result.moves:
        lines.append('(no migration)')
    for name, reason in sorted(result.skipped.items()):
        lines.append('%s: %s' % (name, reason))
    lines.append('budget left: %d' % result.budget_left)
    return '\n'.join(lines)
