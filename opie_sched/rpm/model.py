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
"""The RPM score: Reconsolidating PlaceMent (thesis Paper IV).

Sedaghat, Hernández-Rodriguez and Elmroth, "Decentralized cloud datacenter
reconsolidation through emergent and topology-aware behavior" (thesis
Paper IV, §4.3.1 and §5.3). A candidate host PM_j for a VM_i gets

    Score = λ1·Risk + λ2·Dist + λ3·E + λ4·DT + λ5·Imb,   Σλ = 1   (eq. 3-4)

each term normalised by its upper bound, **lower is better**. This module
holds the terms, their bounds, the combined score and the over/underload
triggers (§4.2, §5.3). It is pure: no nova imports; the scheduler plugins
(:mod:`opie_sched.scheduler.rpm_terms`) feed it numbers.

Units: resources (``req``, ``unreq``, ``free``) in one unit per dimension
(vCPU or MB); utilisations are fractions of capacity (0.75 = 75 %);
memory sizes in MB, rates and bandwidths in MB/s, times in seconds.
"""

import collections
import enum
import math
import numbers
import random

#: Desired utilisation of a host (Paper IV §5.3: "we aim for 75%").
TARGET_UTILISATION = 0.75
#: Samples of the history window (R_v and the triggers, Paper IV §4.3.1,
#: §5.3: 10 one-minute monitoring steps).
HISTORY_SAMPLES = 10
#: Overload: CPU or memory utilisation above this (§5.3).
OVERLOAD_THRESHOLD = 0.9
#: Underload: CPU and memory utilisation both below this (§5.3).
UNDERLOAD_THRESHOLD = 0.3
#: λ1..λ5 of the evaluation (§5.4: 0.2 each).
DEFAULT_LAMBDAS = (0.2, 0.2, 0.2, 0.2, 0.2)
#: Upper bound of Dist in a three-level tree (§4.3.1: 1 <= Dist <= 3).
MAX_DISTANCE = 3
#: Dist: same server group, same cluster, another cluster (§4.3.1).
SAME_GROUP, SAME_CLUSTER, OTHER_CLUSTER = 1, 2, 3
#: k, the neighbours of a node agent's local view per round (Paper IV
#: §5.2: "each PM at each timestep only knows about k = 20 random
#: neighbors").
NEIGHBOURS = 20
#: Probabilities that a neighbour is drawn from the same server group,
#: from the same cluster, or from the whole data centre (§5.2: 0.6, 0.3,
#: 0.1).
LOCALITY = (0.6, 0.3, 0.1)
#: MaxTTL of Alg. 1, discovery rounds of an event that may wait
#: (underload, new service request). The thesis gives no value; 3 is ours
#: (four rounds of k neighbours in all, see :func:`discover`).
MAX_TTL = 3


class RPMError(ValueError):
    """Invalid input to an RPM term (negative sizes, bad λ's, ...)."""


# -- Risk = R_o × R_v ---------------------------------------------------------

def overbooking_risk(req, unreq, free):
    """R_o of one dimension (Paper IV eq. 7).

    :param req: what the new VM requests (vCPU or MB), >= 0.
    :param unreq: capacity minus what the deployed VMs *requested*.
    :param free: capacity minus what the deployed VMs *actually use*.
    :returns: a float in [0, 1]:

        * 0 when ``req < unreq`` (fits without overbooking);
        * ``(req - unreq) / (free - unreq)`` when ``unreq <= req <= free``
          (fits only in capacity that is requested but unused);
        * 1 when ``req > free`` (the thesis prints this case as
          ``Req < Free``, a typo: it is the complement of the others).

    Boundary cases: ``req == unreq`` gives 0 (nothing overbooked);
    ``unreq == free == req`` (every requested unit is used and the request
    exactly fills the rest) gives 0 as well, the limit of the middle case;
    ``req == free > unreq`` gives 1. When the VMs use more than they
    requested (``free < unreq``) the middle case is empty and R_o is 0 below
    ``unreq`` and 1 from there on.
    :raises RPMError: ``req`` negative or a value is not a finite number.
    """
    for name, value in (('req', req), ('unreq', unreq), ('free', free)):
        _finite(value, name)
    if req < 0:
        raise RPMError('req must be >= 0, got %r' % (req,))
    if req < unreq:
        return 0.0
    if req > free:
        return 1.0
    if free == unreq:
        return 0.0
    return (req - unreq) / (free - unreq)


def host_overbooking_risk(req_cpu, unreq_cpu, free_cpu,
                          req_mem, unreq_mem, free_mem):
    """R_o = max(R_o(CPU), R_o(Memory)) (Paper IV eq. 6); see
    :func:`overbooking_risk` for the arguments (vCPU, then MB).
    """
    return max(overbooking_risk(req_cpu, unreq_cpu, free_cpu),
               overbooking_risk(req_mem, unreq_mem, free_mem))


def coefficient_of_variation(samples):
    """R_v: coefficient of variation (population std-dev / mean) of a
    host's load over its recent samples (Paper IV §4.3.1, last 10 steps).

    :param samples: non-negative numbers (utilisations); the caller passes
        the last :data:`HISTORY_SAMPLES`.
    :returns: >= 0; 0 with fewer than two samples or a zero mean (an idle
        host does not vary). At most ``sqrt(len(samples) - 1)``
        (:func:`max_coefficient_of_variation`).
    :raises RPMError: a negative or non-finite sample.
    """
    values = [float(_finite(s, 'sample')) for s in samples]
    if any(v < 0 for v in values):
        raise RPMError('samples must be >= 0, got %r' % (values,))
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    if mean <= 0:
        return 0.0
    var = sum((v - mean) ** 2 for v in values) / len(values)
    return math.sqrt(var) / mean


def max_coefficient_of_variation(count=HISTORY_SAMPLES):
    """Upper bound of :func:`coefficient_of_variation` over ``count``
    non-negative samples: ``sqrt(count - 1)`` (all load in one sample);
    3 for the thesis' 10 samples.
    """
    return math.sqrt(max(count, 2) - 1)


def host_load_variation(cpu_samples, mem_samples):
    """R_v of a host: the larger coefficient of variation of its CPU and
    its memory utilisation (the thesis names one "load"; taking the max
    mirrors eq. 6).
    """
    return max(coefficient_of_variation(cpu_samples),
               coefficient_of_variation(mem_samples))


def risk(r_o, r_v):
    """Risk_j = R_o × R_v (Paper IV eq. 5). Unnormalised: [0, sqrt(n-1)]."""
    return r_o * r_v


# -- Dist ---------------------------------------------------------------------

class Location(collections.namedtuple('Location', 'host group cluster')):
    """Where a host sits in the three-level tree (Paper IV §3, Fig. 1):
    ``group`` (edge switch / server group) and ``cluster`` (aggregation
    level). Either may be None when unknown.
    """


def distance(a, b):
    """Dist between two hosts (Paper IV §4.3.1): levels a message climbs.

    :param a: :class:`Location`.
    :param b: :class:`Location`.
    :returns: 1 same server group (or the same host), 2 same cluster,
        3 another cluster. Unknown placement is explicit: a host whose
        group is unknown is at 2 from a host of the same known cluster and
        at 3 otherwise; unknown clusters count as different clusters, so a
        host without topology is never preferred as "near".
    """
    if a.host is not None and a.host == b.host:
        return SAME_GROUP
    if (a.group is not None and a.group == b.group and
            (a.cluster == b.cluster or a.cluster is None
             or b.cluster is None)):
        return SAME_GROUP
    if a.cluster is not None and a.cluster == b.cluster:
        return SAME_CLUSTER
    return OTHER_CLUSTER


def nearest_distance(candidate, references):
    """min Dist from ``candidate`` to any of ``references``; None when there
    is no reference (the term is then neutral).
    """
    refs = list(references)
    if not refs:
        return None
    return min(distance(candidate, r) for r in refs)


# -- E ------------------------------------------------------------------------

def efficiency(cpu_util, mem_util, req_cpu_util, req_mem_util,
               target=TARGET_UTILISATION, formula='distance'):
    """E of placing a VM on a host (Paper IV eq. 10-11).

    :param cpu_util: the host's CPU utilisation c_i (fraction).
    :param mem_util: its memory utilisation m_i (fraction).
    :param req_cpu_util: the VM's CPU as a fraction of the host's capacity.
    :param req_mem_util: the VM's memory as a fraction of the capacity.
    :param target: Max_CPU = Max_Mem, the desired utilisation (0.75).
    :param formula: ``'literal'`` is eq. 10-11 as printed,
        ``max(target - (c + cpu), target - (m + mem))`` in
        [target - 1, target] for utilisations up to 1; its ranking does not
        depend on the target (it is ``target - min(c', m')``): fuller is
        always better. ``'distance'`` (default) reads "the maximum
        difference between the PM's utilisation after deploying VM_j and
        the desired utilisation" as an absolute difference,
        ``max(|target - (c + cpu)|, |target - (m + mem)|)`` in
        [0, max(target, 1 - target)], so the target matters.
    :raises RPMError: unknown formula, target outside [0, 1].
    """
    if not 0 <= target <= 1:
        raise RPMError('target must be in [0, 1], got %r' % (target,))
    cpu_diff = target - (cpu_util + req_cpu_util)
    mem_diff = target - (mem_util + req_mem_util)
    if formula == 'literal':
        return max(cpu_diff, mem_diff)
    if formula == 'distance':
        return max(abs(cpu_diff), abs(mem_diff))
    raise RPMError("formula must be 'distance' or 'literal', got %r"
                   % (formula,))


def efficiency_bounds(target=TARGET_UTILISATION, formula='distance'):
    """``(lower, upper)`` of :func:`efficiency` for utilisations in
    [0, 1].
    """
    if formula == 'literal':
        return target - 1.0, target
    return 0.0, max(target, 1.0 - target)


# -- DT -----------------------------------------------------------------------

def precopy_rounds(memory, dirty_rate, bandwidth, switchover_time,
                   progress_threshold, max_rounds=30):
    """n, the pre-copy rounds of a live migration (Paper IV eq. 9).

    ``n = min(log_{R/L}(T·L/M), log_{R/L}(X·R/(M·(L−R))))`` rounded up and
    clamped to [0, ``max_rounds``].

    :param memory: M, MB. :param dirty_rate: R, MB/s.
    :param bandwidth: L, MB/s. :param switchover_time: T, seconds (vMotion's
        switch-over time). :param progress_threshold: X, MB (vMotion's
        sufficient-progress threshold).
    :returns: int. 0 when nothing is dirtied (R = 0); ``max_rounds`` when
        pre-copy cannot converge (R >= L).
    :raises RPMError: non-positive M or L, negative R, T or X.
    """
    _positive(memory, 'memory')
    _positive(bandwidth, 'bandwidth')
    for value, name in ((dirty_rate, 'dirty_rate'),
                        (switchover_time, 'switchover_time'),
                        (progress_threshold, 'progress_threshold')):
        if _finite(value, name) < 0:
            raise RPMError('%s must be >= 0, got %r' % (name, value))
    if dirty_rate == 0:
        return 0
    ratio = dirty_rate / bandwidth
    if ratio >= 1:
        return max_rounds
    candidates = []
    for arg in (switchover_time * bandwidth / memory,
                progress_threshold * dirty_rate /
                (memory * (bandwidth - dirty_rate))):
        if arg > 0:
            candidates.append(math.log(arg) / math.log(ratio))
    if not candidates:
        return max_rounds
    return int(min(max_rounds, max(0, math.ceil(min(candidates)))))


def data_transfer(memory, live=False, dirty_rate=0.0, bandwidth=None,
                  rounds=0):
    """DT, MB moved by migrating a VM (Paper IV §4.3.1, eq. 8).

    Cold migration (batch jobs): ``M``. Live pre-copy (interactive
    services): ``M + M·(1 − (R/L)^(n+1)) / (1 − R/L)`` as printed (when
    R = L the fraction's limit ``n + 1`` is used).

    :param memory: M, MB. :param dirty_rate: R, MB/s.
    :param bandwidth: L, MB/s (required for live). :param rounds: n, see
        :func:`precopy_rounds`.
    :raises RPMError: negative M, missing or non-positive L for live.
    """
    if _finite(memory, 'memory') < 0:
        raise RPMError('memory must be >= 0, got %r' % (memory,))
    if not live:
        return float(memory)
    _positive(bandwidth, 'bandwidth')
    ratio = dirty_rate / bandwidth
    if ratio == 1:
        series = rounds + 1.0
    else:
        series = (1 - ratio ** (rounds + 1)) / (1 - ratio)
    return memory + memory * series


def data_transfer_bound(memory, live=False, dirty_rate=0.0, bandwidth=None,
                        max_rounds=30):
    """Upper bound of :func:`data_transfer` for a VM: ``M`` cold;
    live, the formula at ``max_rounds`` rounds (the series grows with n).
    """
    return data_transfer(memory, live, dirty_rate, bandwidth, max_rounds)


# -- Imb ----------------------------------------------------------------------

#: Upper bound of :func:`imbalance` for a migration (two terms <= 1).
MAX_IMBALANCE = 2.0
#: Upper bound for a new request (the source term is 0, §4.3.1).
MAX_PLACEMENT_IMBALANCE = 1.0


def imbalance(dst_cpu, dst_mem, vm_cpu, vm_mem, src_cpu=None, src_mem=None):
    """Imb of moving (or placing) a VM (Paper IV eq. 12-13).

    ``|(Src_CPU − CPU_i) − (Src_Mem − Mem_i)|
    + |(Dst_CPU + CPU_i) − (Dst_Mem + Mem_i)|``, all utilisations
    (fractions of the respective host's capacity). For a new request the
    source term is 0 (pass ``src_cpu=src_mem=None``).
    """
    dst = abs((dst_cpu + vm_cpu) - (dst_mem + vm_mem))
    if src_cpu is None and src_mem is None:
        return dst
    return abs((src_cpu - vm_cpu) - (src_mem - vm_mem)) + dst


# -- normalisation and the score ----------------------------------------------

def normalise(value, upper, lower=0.0):
    """``(value − lower) / (upper − lower)`` clamped to [0, 1]: a term
    "normalized against its upper bound" (Paper IV §4.3.1). A zero-width
    range gives 0.
    """
    if upper <= lower:
        return 0.0
    return min(1.0, max(0.0, (value - lower) / (upper - lower)))


class Terms(collections.namedtuple('Terms',
                                   'risk distance efficiency data_transfer '
                                   'imbalance')):
    """The five terms of one candidate, each normalised to [0, 1]."""


def check_lambdas(lambdas, tolerance=1e-6):
    """λ1..λ5 as a tuple of floats.

    :raises RPMError: not five values, a negative one, or a sum that
        differs from 1 by more than ``tolerance`` (eq. 4).
    """
    values = tuple(float(_finite(v, 'lambda')) for v in lambdas)
    if len(values) != 5:
        raise RPMError('five lambdas are needed, got %d' % len(values))
    if any(v < 0 for v in values):
        raise RPMError('lambdas must be >= 0, got %r' % (values,))
    if abs(sum(values) - 1.0) > tolerance:
        raise RPMError('lambdas must add up to 1 (Paper IV eq. 4), got '
                       '%r (sum %g)' % (values, sum(values)))
    return values


def score(terms, lambdas=DEFAULT_LAMBDAS):
    """Score = Σ λ_k × term_k (Paper IV eq. 3) of normalised
    :class:`Terms`; in [0, 1], lower is better.

    :raises RPMError: see :func:`check_lambdas`.
    """
    lambdas = check_lambdas(lambdas)
    return sum(lam * term for lam, term in zip(lambdas, terms))


# -- local discovery (Alg. 1) ------------------------------------------------

def check_locality(locality):
    """The three locality probabilities as a tuple of floats.

    :raises RPMError: not three values, a negative one, or a sum that
        differs from 1 by more than 1e-6.
    """
    values = tuple(float(_finite(v, 'locality')) for v in locality)
    if len(values) != 3 or any(v < 0 for v in values):
        raise RPMError('locality must be three probabilities >= 0 (same '
                       'group, same cluster, anywhere), got %r' % (values,))
    if abs(sum(values) - 1.0) > 1e-6:
        raise RPMError('locality probabilities must add up to 1, got %r'
                       % (values,))
    return values


class Overlay(object):
    """The topology-aware peer sampling service of Paper IV §4.1 and §5.2
    (a newscast variant): each round a node agent gets ``k`` distinct
    random neighbours, each drawn from its own server group with
    probability ``locality[0]``, from its cluster (another group) with
    ``locality[1]`` and from the whole data centre with ``locality[2]``.

    When the chosen tier has no host left the draw falls back to the next
    wider tier (group -> cluster -> anywhere), so a small group or a host
    without topology still gets ``min(k, hosts - 1)`` neighbours; with
    ``k >= hosts - 1`` the view is every other host (the global view).

    :param locations: iterable of :class:`Location` (unique hosts).
    :param k: neighbours per round, int >= 1.
    :param locality: three probabilities adding up to 1.
    :raises RPMError: bad ``k``, ``locality`` or duplicate hosts.
    """

    def __init__(self, locations, k=NEIGHBOURS, locality=LOCALITY):
        if (isinstance(k, bool) or not isinstance(k, numbers.Integral)
                or k < 1):
            raise RPMError('k must be an integer >= 1, got %r' % (k,))
        self.k = int(k)
        self.locality = check_locality(locality)
        self.locations = {}
        for loc in locations:
            if loc.host in self.locations:
                raise RPMError('duplicate host %r' % (loc.host,))
            self.locations[loc.host] = loc
        self.hosts = sorted(self.locations, key=str)
        self._groups = collections.defaultdict(list)
        self._clusters = collections.defaultdict(list)
        for name in self.hosts:
            loc = self.locations[name]
            if loc.group is not None:
                self._groups[(loc.cluster, loc.group)].append(name)
            if loc.cluster is not None:
                self._clusters[loc.cluster].append(name)

    def _tiers(self, source):
        loc = self.locations[source]
        group = (self._groups.get((loc.cluster, loc.group), [])
                 if loc.group is not None else [])
        cluster = (self._clusters.get(loc.cluster, [])
                   if loc.cluster is not None else [])
        in_group = set(group)
        return (group, [h for h in cluster if h not in in_group],
                self.hosts)

    def sample(self, rng, source):
        """One round of neighbours of ``source`` (list of host names, in
        drawing order).

        :param rng: a :class:`random.Random` (the caller seeds it).
        :raises RPMError: unknown source host.
        """
        if source not in self.locations:
            raise RPMError('unknown host %r' % (source,))
        tiers = [[h for h in tier if h != source]
                 for tier in self._tiers(source)]
        wanted = min(self.k, len(tiers[2]))
        chosen, seen = [], {source}
        while len(chosen) < wanted:
            draw, acc, tier = rng.random(), 0.0, 2
            for index, p in enumerate(self.locality):
                acc += p
                if draw < acc:
                    tier = index
                    break
            for pool in tiers[tier:]:
                left = [h for h in pool if h not in seen]
                if left:
                    pick = left[rng.randrange(len(left))]
                    chosen.append(pick)
                    seen.add(pick)
                    break
        return chosen


class Discovery(collections.namedtuple('Discovery',
                                       'best score rounds candidates')):
    """Outcome of :func:`discover`: the chosen host (None: the event is
    pending), its score, the rounds used and the candidate list.
    """


def discover(rng, overlay, source, rank, urgent, max_ttl=MAX_TTL):
    """The discovery of Paper IV Alg. 1 for one event of host ``source``.

    Each round the overlay gives new neighbours (:meth:`Overlay.sample`)
    and ``rank`` returns the best of them with capacity, ``(host, score)``,
    or None. An *urgent* event (overload, new batch request: lines 10-12)
    is placed on the first round's best peer; otherwise (underload, new
    service request: lines 6-9) the best peer of each round joins the
    candidate list for ``max_ttl`` rounds and the candidate of lowest score
    is chosen when the lifetime reaches MaxTTL (§4.2: "the placement
    candidate with the lowest score value will then be selected"). A round
    without a peer only ages the event (lines 18-20); at MaxTTL without any
    candidate the event is pending (lines 14-16).

    :param rng: :class:`random.Random`. :param overlay: :class:`Overlay`.
    :param rank: callable ``rank(hosts) -> (host, score) or None``.
    :param urgent: bool, see above. :param max_ttl: int >= 0.
    :returns: :class:`Discovery`; ties keep the earlier candidate.
    """
    candidates = []
    life = 0
    rounds = 0
    while True:
        rounds += 1
        best = rank(overlay.sample(rng, source))
        if best is not None:
            candidates.append(best)
            if urgent or life >= max_ttl:
                break
            life += 1
            continue
        if life >= max_ttl:
            break
        life += 1
    if not candidates:
        return Discovery(None, None, rounds, ())
    host, value = candidates[0]
    for cand in candidates[1:]:
        if cand[1] < value - 1e-12:
            host, value = cand
    return Discovery(host, value, rounds, tuple(candidates))


def seeded_rng(seed):
    """A :class:`random.Random` for ``seed`` (int or str); None: seeded
    from the operating system (not reproducible).
    """
    if seed is None:
        return random.Random(random.SystemRandom().getrandbits(64))
    return random.Random(seed)


# -- triggers -----------------------------------------------------------------

class Event(enum.IntEnum):
    """Events of a node agent, valued by priority (Paper IV Table 1:
    lower value first).
    """

    OVERLOAD = 1
    NEW_REQUEST = 2
    UNDERLOAD = 3


def is_overloaded(cpu_samples, mem_samples, threshold=OVERLOAD_THRESHOLD,
                  window=HISTORY_SAMPLES):
    """Overload trigger (Paper IV §5.3): in each of the last ``window``
    consecutive samples the CPU *or* the memory utilisation exceeds
    ``threshold``. False with fewer samples.
    """
    pairs = _last_pairs(cpu_samples, mem_samples, window)
    return pairs is not None and all(c > threshold or m > threshold
                                     for c, m in pairs)


def is_underloaded(cpu_samples, mem_samples, threshold=UNDERLOAD_THRESHOLD,
                   window=HISTORY_SAMPLES):
    """Underload trigger (Paper IV §5.3): in each of the last ``window``
    consecutive samples both CPU and memory utilisation are below
    ``threshold``. False with fewer samples.
    """
    pairs = _last_pairs(cpu_samples, mem_samples, window)
    return pairs is not None and all(c < threshold and m < threshold
                                     for c, m in pairs)


def host_trigger(cpu_samples, mem_samples, overload=OVERLOAD_THRESHOLD,
                 underload=UNDERLOAD_THRESHOLD, window=HISTORY_SAMPLES):
    """:attr:`Event.OVERLOAD`, :attr:`Event.UNDERLOAD` or None for a host's
    history (the PM state profiler of §4.2).
    """
    if is_overloaded(cpu_samples, mem_samples, overload, window):
        return Event.OVERLOAD
    if is_underloaded(cpu_samples, mem_samples, underload, window):
        return Event.UNDERLOAD
    return None


def prioritise(events):
    """Events sorted by priority, overload > new request > underload
    (Paper IV Table 1, Alg. 1 line 1); stable within a priority.

    :param events: iterables of ``(Event, payload)`` pairs.
    """
    return sorted(events, key=lambda e: int(e[0]))


# -- helpers ------------------------------------------------------------------

def _last_pairs(cpu_samples, mem_samples, window):
    cpu, mem = list(cpu_samples), list(mem_samples)
    if window < 1 or len(cpu) < window or len(mem) < window:
        return None
    return list(zip(cpu[-window:], mem[-window:]))


def _finite(value, name):
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not math.isfinite(value)):
        raise RPMError('%s must be a finite number, got %r' % (name, value))
    return value


def _positive(value, name):
    if value is None or _finite(value, name) <= 0:
        raise RPMError('%s must be > 0, got %r' % (name, value))
    return value
