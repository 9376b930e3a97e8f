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
"""Die-Hard's planner and the thesis' baselines: how many extra tasks, where.

Thesis Paper VI: :func:`plan_diehard` is Algorithm 1 of §3 (the decision
tree of covered network/power failures, Lemma 2's n at each node, even
placements, bisection of n, then trimming of the least reliable domains);
:func:`plan_proportional` and :func:`plan_hrf` are the Proportional and
Highest-Reliability-First baselines of §5.2. Every planner returns the
smallest n whose placement's S(x) (:mod:`.reliability`) reaches S_min.
"""

import collections
import heapq
import math
import numbers

from opie_sched.diehard import reliability as dh_rel
from opie_sched.diehard import topology as dh_topo

ALGORITHMS = ('diehard', 'proportional', 'hrf')
#: How Die-Hard's even placement drops the N* − N surplus of "n tasks on
#: each of the R domains" (Alg. 1 lines 15-17 and 22-24): ``literal``
#: removes them from the least reliable domains, emptying the least
#: reliable domain first, then the next (the text as printed);
#: ``dhondt`` keeps the domains' shares within one task of each other
#: (D'Hondt with equal weights: the surplus comes one task from each of
#: the least reliable domains), our earlier reading. Both are printed by
#: the ``diehard-table2`` and ``diehard-tables34`` scenarios.
SPREAD_LITERAL, SPREAD_DHONDT = ('literal', 'dhondt')
SPREADS = (SPREAD_DHONDT, SPREAD_LITERAL)


# -- placement families -------------------------------------------------------

def _apportion(total, weights, capacities, rank):
    """D'Hondt apportionment of ``total`` tasks over units with capacities.

    Tasks go one at a time to the unit with room maximising
    weight / (tasks + 1), ties to the lowest ``rank``. Adding a task never
    moves another, so a placement for N + 1 contains the one for N.
    """
    counts = [0] * len(weights)
    heap = [(-weights[u], rank[u], u) for u in range(len(weights))
            if capacities[u] > 0]
    heapq.heapify(heap)
    for _ in range(total):
        if not heap:
            raise dh_topo.PlanError('not enough hosts for %d tasks' % total)
        _, r, u = heapq.heappop(heap)
        counts[u] += 1
        if counts[u] < capacities[u]:
            heapq.heappush(heap, (-weights[u] / (counts[u] + 1), r, u))
    return counts


class _Context(object):
    """One planning problem: topology, K, S_min, T, and memoised S(x)."""

    def __init__(self, topology, tasks, target, hours, tolerance):
        dh_rel.check_tasks(tasks)
        dh_rel.check_hours(hours)
        if not (isinstance(target, numbers.Real) and 0 < target < 1):
            raise dh_topo.PlanError(
                'target must be a probability in (0, 1), got %r' % (target,))
        if tasks > topology.capacity:
            raise dh_topo.PlanError('%d tasks do not fit on %d hosts'
                                    % (tasks, topology.capacity))
        self.topology = topology
        self.tasks, self.target, self.hours = tasks, target, hours
        self.tolerance = tolerance
        self.q_net = [d.failure_probability(hours)
                      for d in topology.network_domains]
        self.q_pow = [d.failure_probability(hours)
                      for d in topology.power_domains]
        self.q_cell = [1 - (1 - self.q_net[topology.network_of(c)]) *
                       (1 - self.q_pow[topology.power_of(c)])
                       for c in range(len(topology.cells))]
        self.cell_rank = _ranks(self.q_cell)
        self.trace = []
        self._memo = {}

    @property
    def max_extra(self):
        return self.topology.capacity - self.tasks

    def evaluate(self, vector):
        vector = tuple(vector)
        if vector not in self._memo:
            self._memo[vector] = dh_rel.reliability(
                self.topology, vector, self.tasks, self.hours,
                tolerance=self.tolerance)
        return self._memo[vector]

    def meets(self, vector):
        return self.evaluate(vector).value >= self.target

    def record(self, stage, extra, vector, network=None, power=None):
        rel = self.evaluate(vector)
        self.trace.append(Step(stage, network, power, extra, rel.value,
                               rel.value >= self.target))
        return rel.value >= self.target


def _ranks(fail_probs):
    """Rank 0 for the most reliable unit, ties by position."""
    order = sorted(range(len(fail_probs)), key=lambda u: (fail_probs[u], u))
    ranks = [0] * len(order)
    for r, u in enumerate(order):
        ranks[u] = r
    return ranks


def _level_units(ctx, level):
    """Cells grouped by network or power domain, with the domains' failure
    probabilities.
    """
    topo = ctx.topology
    of = topo.network_of if level == 'network' else topo.power_of
    probs = ctx.q_net if level == 'network' else ctx.q_pow
    groups = [[] for _ in probs]
    for c in range(len(topo.cells)):
        groups[of(c)].append(c)
    return groups, probs


def spread_placement(ctx, total, level, spread=SPREAD_DHONDT):
    """Die-Hard's even placement of ``total`` tasks (Paper VI §3.2).

    Tasks are spread evenly over the ``level`` ('network' or 'power')
    domains within their capacity, i.e. n = ceil(total / R) per domain
    with the surplus trimmed from the least reliable domains (``spread``,
    one of :data:`SPREADS`, says how); each domain's share is spread
    evenly over its cells.
    """
    groups, probs = _level_units(ctx, level)
    caps = [sum(ctx.topology.cells[c].hosts for c in g) for g in groups]
    if spread == SPREAD_LITERAL:
        shares = _literal_shares(total, caps, probs)
    else:
        shares = _apportion(total, [1.0] * len(groups), caps,
                            _ranks(probs))
    vector = [0] * len(ctx.topology.cells)
    for group, share in zip(groups, shares):
        counts = _apportion(share, [1.0] * len(group),
                            [ctx.topology.cells[c].hosts for c in group],
                            [ctx.cell_rank[c] for c in group])
        for c, x in zip(group, counts):
            vector[c] = x
    return vector


def _literal_shares(total, caps, probs):
    """Alg. 1 lines 15-17 as printed: n = ceil(total / R) tasks on each of
    the R domains with room (capped by capacity), then the N* − N surplus
    removed from the least reliable domains, each emptied before the next;
    a shortfall left by full domains goes to the most reliable domains
    with room.
    """
    live = [u for u in range(len(caps)) if caps[u] > 0]
    if not live or sum(caps) < total:
        raise dh_topo.PlanError('not enough hosts for %d tasks' % total)
    per = -(-total // len(live))
    shares = [min(per, caps[u]) if caps[u] > 0 else 0
              for u in range(len(caps))]
    surplus = sum(shares) - total
    for u in sorted(live, key=lambda u: (-probs[u], -u)):
        if surplus <= 0:
            break
        take = min(surplus, shares[u])
        shares[u] -= take
        surplus -= take
    if surplus < 0:
        more = _apportion(-surplus, [1.0] * len(caps),
                          [c - x for c, x in zip(caps, shares)],
                          _ranks(probs))
        shares = [x + m for x, m in zip(shares, more)]
    return shares


def proportional_placement(ctx, total):
    """Tasks over cells in proportion to their reliability (Paper VI §5.2).

    The thesis says "in proportion to their probabilities of failure" and
    that the result is biased towards reliable domains; we weight each cell
    by 1 / (failure probability over T), so a cell half as likely to fail
    gets twice the tasks, apportioned with D'Hondt (capacity-capped).
    """
    weights = [1.0 / q if q > 0 else math.inf for q in ctx.q_cell]
    caps = [c.hosts for c in ctx.topology.cells]
    return _apportion(total, weights, caps, ctx.cell_rank)


def hrf_placement(ctx, total):
    """Highest-Reliability-First (Paper VI §5.2): fill the most reliable
    cells to capacity first.
    """
    vector = [0] * len(ctx.topology.cells)
    left = total
    for c in sorted(range(len(vector)), key=lambda c: ctx.cell_rank[c]):
        vector[c] = min(left, ctx.topology.cells[c].hosts)
        left -= vector[c]
    if left:
        raise dh_topo.PlanError('not enough hosts for %d tasks' % total)
    return vector


# -- planners -----------------------------------------------------------------

class Step(collections.namedtuple(
        'Step', 'stage network_failures power_failures extra value met')):
    """One reliability evaluation of a planner: ``stage`` is 'root',
    'node' (a Die-Hard (i, j) tree node), 'bisect', 'trim' or 'search'.
    """


class Plan(collections.namedtuple(
        'Plan', 'algorithm tasks extra placement reliability target hours '
                'trace')):
    """A planner's result.

    ``extra``: n, the extra tasks; ``placement``: ``{(network, power):
    tasks}`` for the used cells (``K + n`` tasks in all);
    ``reliability``: the :class:`~.reliability.Reliability` S(x) of that
    placement; ``target``: S_min; ``hours``: T; ``trace``: tuple of
    :class:`Step`.
    """

    @property
    def met(self):
        """Whether S(x) (its lower bound) reaches the target."""
        return self.reliability.value >= self.target

    @property
    def total(self):
        return self.tasks + self.extra

    @property
    def affinity_score(self):
        return dh_rel.affinity_score(self.placement.values())

    def per_network_domain(self):
        """``{network domain: tasks}`` for the used domains."""
        return _sum_by(self.placement, 0)

    def per_power_domain(self):
        """``{power domain: tasks}`` for the used domains."""
        return _sum_by(self.placement, 1)


def _sum_by(placement, position):
    out = collections.OrderedDict()
    for key, x in placement.items():
        out[key[position]] = out.get(key[position], 0) + x
    return out


def plan(topology, tasks, target, hours, algorithm='diehard', max_extra=None,
         tolerance=dh_rel.DEFAULT_TOLERANCE, spread=SPREAD_DHONDT):
    """Plan ``tasks`` (K) tasks for ``hours`` (T) at reliability ``target``
    (S_min) with one of :data:`ALGORITHMS`.

    :param max_extra: largest n to consider (default: every free host).
    :param spread: Die-Hard's reading of the surplus removal, one of
        :data:`SPREADS` (ignored by the baselines).
    :returns: :class:`Plan`; ``plan.met`` is False when no n up to
        ``max_extra`` reaches the target (the plan then shows the largest n
        tried).
    :raises opie_sched.diehard.topology.PlanError: K < 1 or more than the
        hosts, S_min not in (0, 1), T < 0, unknown algorithm or spread.
    """
    planners = {'diehard': plan_diehard, 'proportional': plan_proportional,
                'hrf': plan_hrf}
    if algorithm not in planners:
        raise dh_topo.PlanError('unknown algorithm %r (known: %s)'
                                % (algorithm, ', '.join(ALGORITHMS)))
    if algorithm == 'diehard':
        return plan_diehard(topology, tasks, target, hours,
                            max_extra=max_extra, tolerance=tolerance,
                            spread=spread)
    return planners[algorithm](topology, tasks, target, hours,
                               max_extra=max_extra, tolerance=tolerance)


def _limit(ctx, max_extra):
    if max_extra is None:
        return ctx.max_extra
    if isinstance(max_extra, bool) or not isinstance(
            max_extra, numbers.Integral) or max_extra < 0:
        raise dh_topo.PlanError('max_extra must be an integer >= 0, got %r'
                                % (max_extra,))
    return min(max_extra, ctx.max_extra)


def _result(ctx, algorithm, extra, vector):
    return Plan(algorithm, ctx.tasks, extra,
                ctx.topology.placement_dict(vector), ctx.evaluate(vector),
                ctx.target, ctx.hours, tuple(ctx.trace))


def _bisect(ctx, family, low, high):
    """Smallest n in (low, high] whose placement meets the target, given
    that ``family(high)`` does and ``family(low)`` does not (low may be
    -1). S grows with n because every family only ever adds tasks.
    """
    while high - low > 1:
        mid = (low + high) // 2
        if ctx.record('bisect', mid, family(mid)):
            high = mid
        else:
            low = mid
    return high


def plan_diehard(topology, tasks, target, hours, max_extra=None,
                 tolerance=dh_rel.DEFAULT_TOLERANCE, spread=SPREAD_DHONDT):
    """The Die-Hard planner (Paper VI §3, Algorithm 1).

    Walks the decision tree of covered failures (i network, j power): from
    (0, 1) it expands along the network branch (1, 0), (2, 0), ... when
    covering one power failure reaches S_min, else along the power branch
    (0, 2), (0, 3), ... At each node n is Lemma 2's n = ceil(K·i/(R−i))
    (resp. W, j) and the K + n tasks are spread evenly over the network
    (resp. power) domains, the surplus trimmed from the least reliable ones.
    The first node reaching S_min and the last one below it bracket n,
    which is then bisected; finally single tasks are trimmed from the least
    reliable domains while S_min still holds (§3.2). ``spread`` (one of
    :data:`SPREADS`) is how the even placement drops its surplus; with
    ``literal`` a larger n need not contain the placement of a smaller
    one, so the bisection finds *a* boundary n, not necessarily the least.

    See :func:`plan` for the parameters and errors.
    """
    if spread not in SPREADS:
        raise dh_topo.PlanError('unknown spread %r (known: %s)'
                                % (spread, ', '.join(SPREADS)))
    ctx = _Context(topology, tasks, target, hours, tolerance)
    limit = _limit(ctx, max_extra)
    network = _Family(ctx, 'network', spread)
    if ctx.record('root', 0, network(0), 0, 0):
        return _result(ctx, 'diehard', 0, network(0))
    found = _walk(ctx, network, _Family(ctx, 'power', spread), limit)
    if found is None:
        # No tree node reached S_min within the limit: fall back to the
        # smallest n of the even network placement, if any.
        return _search(ctx, 'diehard', network, limit, start=network.failing)
    family, low, high = found
    extra = _bisect(ctx, family, low, high)
    extra, vector = _trim(ctx, extra, family(extra), family.level)
    return _result(ctx, 'diehard', extra, vector)


class _Family(object):
    """Die-Hard's even placements over one level, by extra task count."""

    def __init__(self, ctx, level, spread=SPREAD_DHONDT):
        self.ctx, self.level, self.spread = ctx, level, spread
        self.failing = -1  # largest n known to miss the target

    def __call__(self, extra):
        return spread_placement(self.ctx, self.ctx.tasks + extra, self.level,
                                self.spread)

    def visit(self, stage, extra, i, j):
        met = self.ctx.record(stage, extra, self(extra), i, j)
        if not met:
            self.failing = max(self.failing, extra)
        return met


def _domain_count(ctx, level):
    groups, _ = _level_units(ctx, level)
    return sum(1 for g in groups
               if any(ctx.topology.cells[c].hosts for c in g))


def _walk(ctx, network, power, limit):
    """Algorithm 1's tree walk. Returns (family, low, high) bracketing n,
    or None when no node up to ``limit`` extra tasks reaches the target.
    """
    network.failing = 0  # the root missed the target
    R, W = _domain_count(ctx, 'network'), _domain_count(ctx, 'power')
    power_n = None
    if W >= 2:
        power_n = min(dh_rel.lemma_extra_tasks(ctx.tasks, W, 1), limit)
        if not power.visit('node', power_n, 0, 1):
            return _power_branch(ctx, power, W, limit)
    for i in range(1, R):
        n = min(dh_rel.lemma_extra_tasks(ctx.tasks, R, i), limit)
        if power_n is not None and n >= power_n:
            break
        if network.visit('node', n, i, 0):
            return network, network.failing, n
        if n == limit:
            return None
    if power_n is None:
        return None
    return power, power.failing, power_n


def _power_branch(ctx, power, W, limit):
    previous = dh_rel.lemma_extra_tasks(ctx.tasks, W, 1)
    for j in range(2, W):
        n = min(dh_rel.lemma_extra_tasks(ctx.tasks, W, j), limit)
        if n == previous:
            return None
        if power.visit('node', n, 0, j):
            return power, power.failing, n
        previous = n
    return None


def _trim(ctx, extra, vector, level):
    """Remove single tasks from the least reliable non-empty domain (its
    least reliable cell) while the target still holds (§3.2).
    """
    groups, probs = _level_units(ctx, level)
    order = sorted(range(len(groups)), key=lambda u: (-probs[u], -u))
    vector = list(vector)
    while extra > 0:
        domain = next(u for u in order if any(vector[c] for c in groups[u]))
        cell = max((c for c in groups[domain] if vector[c]),
                   key=lambda c: ctx.cell_rank[c])
        candidate = list(vector)
        candidate[cell] -= 1
        if not ctx.record('trim', extra - 1, candidate):
            break
        vector, extra = candidate, extra - 1
    return extra, vector


def _search(ctx, algorithm, family, limit, start=0):
    """Smallest n <= limit meeting the target for a family of placements
    that only adds tasks as n grows: gallop from ``start`` (a failing n, or
    0), then bisect.
    """
    if start == 0 and ctx.record('search', 0, family(0)):
        return _result(ctx, algorithm, 0, family(0))
    low, high = start, max(1, 2 * start)
    while True:
        high = min(high, limit)
        if ctx.record('search', high, family(high)):
            break
        if high == limit:
            return _result(ctx, algorithm, high, family(high))
        low, high = high, high * 2
    extra = _bisect(ctx, family, low, high)
    return _result(ctx, algorithm, extra, family(extra))


def plan_proportional(topology, tasks, target, hours, max_extra=None,
                      tolerance=dh_rel.DEFAULT_TOLERANCE):
    """The Proportional baseline (Paper VI §5.2): the smallest n whose
    :func:`proportional_placement` reaches S_min. See :func:`plan`.
    """
    ctx = _Context(topology, tasks, target, hours, tolerance)
    return _search(ctx, 'proportional',
                   lambda n: proportional_placement(ctx, tasks + n),
                   _limit(ctx, max_extra))


def plan_hrf(topology, tasks, target, hours, max_extra=None,
             tolerance=dh_rel.DEFAULT_TOLERANCE):
    """The Highest-Reliability-First baseline (Paper VI §5.2): the smallest
    n whose :func:`hrf_placement` reaches S_min. See :func:`plan`.
    """
    ctx = _Context(topology, tasks, target, hours, tolerance)
    return _search(ctx, 'hrf', lambda n: hrf_placement(ctx, tasks + n),
                   _limit(ctx, max_extra))
