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
"""Exact victim selection: the cheapest preemptible instances to terminate.

Source: López García et al., "An efficient cloud scheduler design supporting
preemptible instances" (Future Generation Computer Systems, 2019),
Algorithm 5. On the chosen host, among all subsets of the preemptible
instances whose termination frees at least the missing vCPU, RAM and disk,
pick one of minimal total cost. The paper enumerates the 2^n
subsets; :func:`select_victims` gives the same answer without enumerating.

Problem
    A 3-dimensional covering knapsack: ``min Σ c_i x_i`` subject to
    ``Σ r_ik x_i >= need_k`` for k in (vCPU, MB, GB), ``x_i`` in {0, 1}.

Ties (deterministic, independent of the input order)
    Let ``c*`` be the minimal total cost. A feasible set *ties* with the
    optimum when ``cost - c* <= 1e-9 × max(1, c*)``. Among the tied sets the
    one with the fewest victims wins, then the one whose sorted tuple of
    uuids is lexicographically smallest. Total costs are the correctly
    rounded sums of the candidates' costs (:func:`math.fsum`), and "frees
    enough" is decided on exact sums, so the answer is the same whatever the
    order of the candidates.

Method for up to ENUMERATE_MAX (8) useful candidates: every subset
    The usual host holds a few preemptible instances: all 2^n subsets of
    the candidates that free some of the need are summed exactly (one
    addition per subset), the minimal cost and then the tie rule picked
    directly (a few tens of microseconds at n = 4, where the branch and
    bound's set-up cost several times more).

Method: two depth-first branch-and-bound passes on exact integers
    Every float is a dyadic rational, so each resource dimension and the
    costs are scaled by a power of two to exact Python integers; sums and
    comparisons are exact, only the bounds use floats (with a safety margin).

    Reductions: an instance's resources are clipped to the need; instances
    that free nothing the need asks for are dropped (the tie rule prefers
    fewer victims, so they are never in the answer). Dominance: when
    instance ``i`` frees at least as much as ``j`` in every dimension and is
    not dearer (``c_i <= c_j`` with ``uuid_i < uuid_j``, or ``c_i`` cheaper
    by more than any tie tolerance), the answer never holds ``j`` without
    ``i`` (swapping ``j`` for ``i`` gives a set that is no dearer, as small
    and lexicographically smaller), so excluding ``i`` excludes ``j``: among
    instances of one flavor the search mostly tries "the k cheapest" only.

    Pass 1 finds ``c*``: items in order of cost per fraction of the need
    they cover, include-first (the first leaf is the greedy solution), a
    node pruned when its cost plus a lower bound reaches the incumbent. The
    bound is, over the dimensions, the largest fractional (LP) cover of the
    remaining need by the undecided items taken in order of cost per unit
    of that dimension; costs being integers after scaling, it is rounded up.

    Pass 2 finds the tie-break winner among the sets of cost at most the
    largest tied cost: items in uuid order, include-first, so that among
    sets of one size the first leaf reached is the lexicographically
    smallest; a node is pruned when the same cost bound exceeds the budget
    or when its victims plus the fewest further instances that could cover
    the remaining need (largest first, per dimension) reach the best size
    found (starting from the size of pass 1's set).

Speed: at most a few milliseconds up to 128 candidates (measured with
``benchmarks/victim_selection.py``; figures in the contributor guide,
"Benchmarks").
"""

import bisect
import dataclasses
import itertools
import math
import numbers

from opie_sched.preemption import model

#: Relative tolerance of the tie rule (see the module docstring).
TIE_RTOL = 1e-9
#: brute_force_victims refuses more candidates than this.
BRUTE_FORCE_MAX = 24

_NDIM = len(model.DIMENSIONS)
# Safety margin of the float bounds (their rounding error is ~1e-15).
_BOUND_SLACK = 1.0 - 1e-12


@dataclasses.dataclass(frozen=True)
class VictimSelection:
    """The victims chosen on one host.

    :param victims: tuple of ``(InstanceInfo, cost)`` pairs, sorted by
        instance uuid; ``cost`` is the float the caller gave (policy units).
    :param total_cost: correctly rounded sum of the victims' costs (float,
        policy units); 0.0 when nothing has to go.
    :param freed: :class:`~.model.Resources` the victims hold (vCPU, MB, GB).
    """

    victims: tuple = ()
    total_cost: float = 0.0
    freed: model.Resources = model.ZERO

    @property
    def uuids(self):
        """Tuple of the victims' uuids, sorted."""
        return tuple(inst.uuid for inst, _ in self.victims)


class _Item:
    __slots__ = ('idx', 'bit', 'inst', 'cost', 'cost_int', 'res', 'res_int')

    def __init__(self, idx, inst, cost, cost_int, res, res_int):
        self.idx = idx
        self.bit = 1 << idx
        self.inst = inst
        self.cost = cost
        self.cost_int = cost_int
        self.res = res
        self.res_int = res_int


class _Problem:
    """Validated input in canonical (uuid) order, with exact integers."""

    def __init__(self, items, need, need_int, res_scales, cost_scale):
        self.items = items
        self.need = need
        self.need_int = need_int
        self.res_scales = res_scales
        self.cost_scale = cost_scale

    def cost_float(self, cost_int):
        """Correctly rounded value of a scaled integer cost."""
        return cost_int / self.cost_scale

    def tied(self, cost_int, best_int):
        """The tie rule, on exact sums: does cost tie with the optimum?"""
        best = self.cost_float(best_int)
        return (self.cost_float(cost_int) - best
                <= TIE_RTOL * max(1.0, best))

    def selection(self, idxs):
        chosen = [self.items[i] for i in sorted(idxs)]
        if not chosen:
            return VictimSelection()
        return VictimSelection(
            victims=tuple((it.inst, it.cost) for it in chosen),
            total_cost=math.fsum(it.cost for it in chosen),
            freed=model.Resources(*(
                math.fsum(it.res[k] for it in chosen)
                for k in range(_NDIM))))


def _number(value, what, *args):
    """``value`` as a finite float >= 0; ``what % args`` names it in the
    error (formatted only then: this runs once per amount and cost).
    """
    if type(value) is float or type(value) is int:
        # Fast path; int may overflow float, hence the try below.
        pass
    elif isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError('%s must be a number, got %r'
                         % (what % args, value))
    try:
        value = float(value)
    except OverflowError:
        value = math.inf
    if not 0 <= value < math.inf:
        raise ValueError('%s must be a finite number >= 0, got %r'
                         % (what % args, value))
    return value


#: Types and bound of the amounts :func:`_prepare` checks inline (what
#: :func:`_number` accepts unchanged: a float or int in [0, 2^53)).
_PLAIN = (float, int)
_PLAIN_MAX = 2 ** 53


def _scale(values):
    """Exact integers ``v × scale`` for floats ``values``; scale = 2^e."""
    ints = list(map(int, values))
    if ints == values:
        # whole amounts (vCPU, MB, GB, whole-second costs): scale 1
        return ints, 1
    ratios = [v.as_integer_ratio() for v in values]
    scale = max((den for _, den in ratios), default=1)
    return [num * (scale // den) for num, den in ratios], scale


def _prepare(candidates, need):
    try:
        need = tuple(need)
    except TypeError:
        raise ValueError('need must be a Resources (vcpus, memory_mb, '
                         'disk_gb), got %r' % (need,))
    if len(need) != _NDIM:
        raise ValueError('need must have %d dimensions (vcpus, memory_mb, '
                         'disk_gb), got %r' % (_NDIM, need))
    need = model.Resources(*(
        _number(v, 'need.%s (%s)', dim, model.UNITS[dim])
        for v, dim in zip(need, model.DIMENSIONS)))
    pairs = []
    seen = set()
    for pos, pair in enumerate(candidates):
        try:
            inst, cost = pair
        except (TypeError, ValueError):
            raise ValueError('candidate #%d must be an (InstanceInfo, cost) '
                             'pair, got %r' % (pos, pair))
        uuid = getattr(inst, 'uuid', None)
        if not isinstance(uuid, str):
            raise ValueError('candidate #%d is not an InstanceInfo with a '
                             'str uuid: %r' % (pos, inst))
        if not inst.preemptible:
            raise ValueError('instance %s is a normal (non-preemptible) '
                             'instance and can never be a victim' % uuid)
        if getattr(inst, 'leaving', False):
            raise ValueError('instance %s is already leaving and cannot be '
                             'chosen as a victim' % uuid)
        if getattr(inst, 'pinned', False):
            raise ValueError('instance %s is being moved by its owner and '
                             'cannot be chosen as a victim' % uuid)
        if uuid in seen:
            raise ValueError('duplicate candidate uuid %s' % uuid)
        seen.add(uuid)
        if type(cost) is float and 0.0 <= cost < math.inf:
            pass                    # the common case, checked inline
        else:
            cost = _number(cost, 'cost of instance %s', uuid)
        res = tuple(inst.resources)
        if len(res) != _NDIM:
            raise ValueError('instance %s resources must have %d dimensions'
                             % (uuid, _NDIM))
        r0, r1, r2 = res
        if (type(r0) in _PLAIN and type(r1) in _PLAIN
                and type(r2) in _PLAIN and 0 <= r0 < _PLAIN_MAX
                and 0 <= r1 < _PLAIN_MAX and 0 <= r2 < _PLAIN_MAX):
            # the common case (ints or finite floats), checked inline
            res = (float(r0), float(r1), float(r2))
        else:
            res = tuple(
                _number(v, 'resources.%s (%s) of instance %s', dim,
                        model.UNITS[dim], uuid)
                for v, dim in zip(res, model.DIMENSIONS))
        pairs.append((uuid, inst, cost, res))
    pairs.sort(key=lambda p: p[0])
    if not math.isfinite(math.fsum(p[2] for p in pairs)):
        raise ValueError('the candidates\' costs must have a finite sum')
    cost_ints, cost_scale = _scale([p[2] for p in pairs])
    need_int = []
    res_scales = []
    res_cols = []
    for k in range(_NDIM):
        ints, scale = _scale([need[k]] + [p[3][k] for p in pairs])
        need_int.append(ints[0])
        res_cols.append(ints[1:])
        res_scales.append(scale)
    items = [_Item(i, p[1], p[2], cost_int, p[3], res_int)
             for i, (p, cost_int, res_int) in enumerate(
                 zip(pairs, cost_ints, zip(*res_cols)))]
    return _Problem(items, need, tuple(need_int), tuple(res_scales),
                    cost_scale)


def _infeasible(problem):
    return any(sum(it.res_int[k] for it in problem.items)
               < problem.need_int[k] for k in range(_NDIM))


# --------------------------------------------------------------------------
# Branch and bound
# --------------------------------------------------------------------------


def _suffix_masks(items):
    """``masks[pos]``: the bits of ``items[pos:]`` OR-ed together
    (``len(items) + 1`` ints, the last 0).
    """
    masks = [0] * (len(items) + 1)
    for pos in range(len(items) - 1, -1, -1):
        masks[pos] = masks[pos + 1] | items[pos].bit
    return masks


def _sorted_group(group):
    group = sorted(group, key=lambda it: (it.cost, it.idx))
    costs = [it.cost for it in group]
    prefix = [0]
    for it in group:
        prefix.append(prefix[-1] | it.bit)
    suffix = _suffix_masks(group)
    return group, costs, prefix, suffix


def _dominance(items, clear):
    """``(dominates, dominated_by)``: dicts idx -> bit mask.

    ``a`` dominates ``b`` when its clipped resources are >= ``b``'s in every
    dimension and either ``a.cost < b.cost - clear`` or ``a.cost <= b.cost``
    with ``a.idx < b.idx``. Each direction may be computed with slightly
    different float rounding of the ``clear`` margin; both stay true
    dominances since ``clear`` is 10x the largest tie tolerance.
    """
    groups = {}
    for it, clip in items:
        groups.setdefault(clip, []).append(it)
    groups = {clip: _sorted_group(g) for clip, g in groups.items()}
    dominates = {it.idx: 0 for it, _ in items}
    dominated_by = dict(dominates)
    for va, (ga, ca, prea, _) in groups.items():
        for vb, (gb, cb, _, sufb) in groups.items():
            if not (va[0] >= vb[0] and va[1] >= vb[1] and va[2] >= vb[2]):
                continue
            for b in gb:
                lo = bisect.bisect_left(ca, b.cost - clear)
                mask = prea[lo]
                for a in ga[lo:bisect.bisect_right(ca, b.cost)]:
                    if a.idx < b.idx:
                        mask |= a.bit
                dominated_by[b.idx] |= mask
            for a in ga:
                hi = bisect.bisect_right(cb, a.cost + clear)
                mask = sufb[hi]
                for b in gb[bisect.bisect_left(cb, a.cost):hi]:
                    if b.idx > a.idx:
                        mask |= b.bit
                dominates[a.idx] |= mask
    return dominates, dominated_by


class _Solver:
    """Both passes of the branch and bound on one prepared problem."""

    def __init__(self, problem):
        self.p = problem
        need_int = problem.need_int
        self.dims = [k for k in range(_NDIM) if need_int[k] > 0]
        items = []
        for it in problem.items:
            clipped = tuple(min(it.res_int[k], need_int[k])
                            if need_int[k] > 0 else 0 for k in range(_NDIM))
            if any(clipped):
                items.append((it, clipped))
        self.items = items
        bits = {it.idx: it.bit for it, _ in items}
        self.clip = {it.idx: c for it, c in items}
        # Fractional-cover lists, per dimension: (bit, size, cost, cost per
        # unit of the dimension), cheapest per unit first.
        self.lp = []
        self.big = []
        for k in range(_NDIM):
            scale = problem.res_scales[k]
            rows = [(it.cost / (c[k] / scale), it.idx, it.bit, c[k],
                     it.cost) for it, c in items if c[k] > 0]
            rows.sort()
            self.lp.append([(b, r, cost, ratio)
                            for ratio, _, b, r, cost in rows])
            rows = sorted((-c[k], it.idx, it.bit) for it, c in items
                          if c[k] > 0)
            self.big.append([(b, -neg) for neg, _, b in rows])
        # Dominance (see the module docstring), between groups of items
        # with the same clipped resources, by bisection on sorted costs.
        total = math.fsum(it.cost for it, _ in items)
        clear = 10 * TIE_RTOL * max(1.0, total)
        self.dominates, self.dominated_by = _dominance(items, clear)
        self.bits = bits
        cs = problem.cost_scale
        self.cost_scale_f = float(cs) if cs.bit_length() < 1000 else None

    # -- bounds ----------------------------------------------------------

    def cost_lb(self, avail, rem):
        """Lower bound (float, policy units) on the cost of covering
        ``rem`` (scaled ints) with the items in the ``avail`` bit mask;
        None when they cannot cover it.
        """
        best = 0.0
        scales = self.p.res_scales
        for k in self.dims:
            need = rem[k]
            if need <= 0:
                continue
            acc = 0
            lb = 0.0
            for bit, size, cost, ratio in self.lp[k]:
                if avail & bit:
                    if acc + size >= need:
                        lb += (need - acc) / scales[k] * ratio
                        break
                    acc += size
                    lb += cost
            else:
                return None
            if lb > best:
                best = lb
        return best

    def count_lb(self, avail, rem):
        """Fewest items of ``avail`` that could cover ``rem`` (or None)."""
        best = 0
        for k in self.dims:
            need = rem[k]
            if need <= 0:
                continue
            acc = 0
            count = 0
            for bit, size in self.big[k]:
                if avail & bit:
                    acc += size
                    count += 1
                    if acc >= need:
                        break
            else:
                return None
            if count > best:
                best = count
        return best

    def reaches(self, lb, budget_int):
        """True when a float cost bound ``lb`` proves that any completion
        costs at least ``budget_int`` (scaled integer).
        """
        if self.cost_scale_f is not None:
            units = lb * self.cost_scale_f * _BOUND_SLACK
            if units == math.inf:
                return True
            return math.ceil(units) >= budget_int
        return lb * _BOUND_SLACK >= budget_int / self.p.cost_scale

    # -- pass 1: minimal cost --------------------------------------------

    def min_cost(self):
        dims = self.dims

        def efficiency(entry):
            it, c = entry
            frac = math.fsum(c[k] / self.p.need_int[k] for k in dims)
            return (it.cost / frac, it.idx)

        order = [it for it, _ in sorted(self.items, key=efficiency)]
        suffix = _suffix_masks(order)
        state = {'ub': sum(it.cost_int for it in order) + 1, 'best': None}
        clip = self.clip
        dominates = self.dominates
        dominated_by = self.dominated_by
        n = len(order)

        def dfs(pos, rem, cost, inc, exc):
            while pos < n:
                it = order[pos]
                bit = it.bit
                pos += 1
                if exc & bit:
                    continue
                if not dominated_by[it.idx] & exc:
                    c = cost + it.cost_int
                    if c < state['ub']:
                        sz = clip[it.idx]
                        new = tuple(rem[k] - sz[k] for k in range(_NDIM))
                        if all(v <= 0 for v in new):
                            state['ub'] = c
                            state['best'] = inc | bit
                        else:
                            lb = self.cost_lb(suffix[pos] & ~exc, new)
                            if lb is not None and not self.reaches(
                                    lb, state['ub'] - c):
                                dfs(pos, new, c, inc | bit, exc)
                if dominates[it.idx] & inc:
                    return
                exc |= bit | dominates[it.idx]
                lb = self.cost_lb(suffix[pos] & ~exc, rem)
                if lb is None or self.reaches(lb, state['ub'] - cost):
                    return

        dfs(0, self.p.need_int, 0, 0, 0)
        return state['ub'], state['best']

    # -- pass 2: tie-break -----------------------------------------------

    def tie_budget(self, best_int):
        """Largest scaled integer cost that ties with ``best_int``."""
        return _tie_budget(self.p, best_int)

    def tie_break(self, budget, max_size):
        order = [it for it, _ in sorted(self.items, key=lambda e: e[0].idx)]
        suffix = _suffix_masks(order)
        state = {'limit': max_size + 1, 'best': None}
        clip = self.clip
        dominates = self.dominates
        dominated_by = self.dominated_by
        n = len(order)

        def hopeless(avail, rem, cost, size):
            count = self.count_lb(avail, rem)
            if count is None or size + count >= state['limit']:
                return True
            lb = self.cost_lb(avail, rem)
            return lb is None or self.reaches(lb, budget - cost + 1)

        def dfs(pos, rem, cost, inc, exc, size):
            while pos < n:
                it = order[pos]
                bit = it.bit
                pos += 1
                if exc & bit:
                    continue
                if not dominated_by[it.idx] & exc:
                    c = cost + it.cost_int
                    if c <= budget and size + 1 < state['limit']:
                        sz = clip[it.idx]
                        new = tuple(rem[k] - sz[k] for k in range(_NDIM))
                        if all(v <= 0 for v in new):
                            state['limit'] = size + 1
                            state['best'] = inc | bit
                        elif not hopeless(suffix[pos] & ~exc, new, c,
                                          size + 1):
                            dfs(pos, new, c, inc | bit, exc, size + 1)
                if dominates[it.idx] & inc:
                    return
                exc |= bit | dominates[it.idx]
                if hopeless(suffix[pos] & ~exc, rem, cost, size):
                    return

        dfs(0, self.p.need_int, 0, 0, 0, 0)
        return state['best']

    def solve(self):
        best_int, mask = self.min_cost()
        budget = self.tie_budget(best_int)
        mask = self.tie_break(budget, bin(mask).count('1'))
        return [i for i in self.bits if mask & self.bits[i]]


def _tie_budget(problem, best_int):
    """Largest scaled integer cost that ties with ``best_int``.

    ``tied`` is monotone in the cost, so the boundary is found by
    galloping from the float estimate ``best + tolerance`` (a few steps
    whatever the scale) and bisecting the last gap.
    """
    tied = problem.tied
    best = problem.cost_float(best_int)
    guess = best_int
    if problem.cost_scale.bit_length() < 1000:   # else: gallop from c*
        guess += int(TIE_RTOL * max(1.0, best) * problem.cost_scale)
    if tied(guess, best_int):
        lo, step = guess, 1          # tied(lo)
        while tied(lo + step, best_int):
            lo += step
            step *= 2
        hi = lo + step               # not tied(hi)
    else:
        hi, step = guess, 1          # not tied(hi); tied(best_int)
        while hi - step > best_int and not tied(hi - step, best_int):
            hi -= step
            step *= 2
        lo = max(best_int, hi - step)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if tied(mid, best_int):
            lo = mid
        else:
            hi = mid
    return lo


#: Up to this many useful candidates (ones freeing some of the need),
#: :func:`select_victims` enumerates every subset instead of branching:
#: 2^n exact sums cost less than the branch and bound's set-up there.
ENUMERATE_MAX = 8


def _enumerate(problem):
    """Exact answer by enumerating the subsets of the useful items.

    Same rule as the branch and bound: minimal exact cost, then among the
    sets that tie with it the fewest victims, then the smallest sorted
    uuid tuple (items are in uuid order, so the smallest index tuple).
    Items that free nothing the need asks for are never in the answer
    (dropping one gives a set as cheap and smaller).
    Returns the chosen item indices, or None when more than
    :data:`ENUMERATE_MAX` items are useful.

    The 2^n subset sums are built by doubling (subset ``m`` holds useful
    item ``i`` when bit ``i`` of ``m`` is set): one list comprehension
    per item and dimension.
    """
    need = problem.need_int
    dims = [k for k in range(_NDIM) if need[k] > 0]
    useful = [it for it in problem.items
              if any(it.res_int[k] for k in dims)]
    n = len(useful)
    if n > ENUMERATE_MAX:
        return None
    cost = [0]
    for it in useful:
        c = it.cost_int
        cost += [x + c for x in cost]
    covers = None
    for k in dims:
        col = [0]
        for it in useful:
            r = it.res_int[k]
            col += [x + r for x in col]
        target = need[k]
        if covers is None:
            covers = [v >= target for v in col]
        else:
            covers = [a and v >= target for a, v in zip(covers, col)]
    best = min(c for c, ok in zip(cost, covers) if ok)
    budget = _tie_budget(problem, best)
    win = None
    for m, c in enumerate(cost):
        if c <= budget and covers[m]:
            key = (m.bit_count(), [i for i in range(n) if m >> i & 1])
            if win is None or key < win:
                win = key
    return [useful[i].idx for i in win[1]]


def select_victims(candidates, need):
    """The minimal-cost set of victims freeing at least ``need``.

    López García et al., Alg. 5, solved exactly by branch and bound (see the
    module docstring for the method, the tie rule and the measurements).

    :param candidates: sequence of ``(InstanceInfo, cost)`` pairs: the
        host's preemptible, non-leaving instances and the cost (finite float
        >= 0, in the cost policy's units) of terminating each. Their
        ``resources`` are in vCPU, MB and GB.
    :param need: :class:`~.model.Resources` (vCPU, MB, GB), each >= 0, that
        the victims must free together in every dimension.
    :returns: the :class:`VictimSelection` of minimal total cost, ties broken
        by fewest victims then by the lexicographically smallest sorted uuid
        tuple; an empty selection (cost 0.0) when ``need`` is zero in every
        dimension; None when all candidates together cannot free ``need``.
        The result does not depend on the order of ``candidates``.
    :raises ValueError: when a candidate is a normal (non-preemptible) or
        leaving instance, two candidates share a uuid, a cost is negative,
        NaN or infinite (or the costs overflow when summed), a resource
        amount or a dimension of ``need`` is negative, NaN or infinite, or
        the arguments are not shaped as above.
    """
    problem = _prepare(candidates, need)
    if all(v <= 0 for v in problem.need_int):
        return VictimSelection()
    if _infeasible(problem):
        return None
    idxs = _enumerate(problem)
    if idxs is None:
        idxs = _Solver(problem).solve()
    return problem.selection(idxs)


# --------------------------------------------------------------------------
# Oracle
# --------------------------------------------------------------------------


def brute_force_victims(candidates, need, method='auto'):
    """Alg. 5 as the paper states it: try every subset of the candidates.

    For tests and benchmarks only. Same arguments, result, tie rule and
    errors as :func:`select_victims`.

    :param method: ``'python'`` (itertools over all subsets, by size then in
        lexicographic uuid order), ``'numpy'`` (all 2^n subset sums as
        int64 arrays, meet-in-the-middle, in chunks) or ``'auto'`` (numpy
        from 13 candidates on when the scaled integers fit in int64).
    :raises ValueError: as :func:`select_victims`, and when there are more
        than ``BRUTE_FORCE_MAX`` (24) candidates.
    """
    problem = _prepare(candidates, need)
    n = len(problem.items)
    if n > BRUTE_FORCE_MAX:
        raise ValueError('brute force refuses %d candidates (at most %d: it '
                         'enumerates 2^n subsets)' % (n, BRUTE_FORCE_MAX))
    if all(v <= 0 for v in problem.need_int):
        return VictimSelection()
    if _infeasible(problem):
        return None
    fits = (all(max(sum(it.res_int[k] for it in problem.items),
                    problem.need_int[k]) < 2 ** 62 for k in range(_NDIM))
            and sum(it.cost_int for it in problem.items) < 2 ** 62
            and problem.cost_scale.bit_length() < 960)
    if method == 'auto':
        method = 'numpy' if n > 12 and fits else 'python'
    if method == 'numpy' and not fits:
        method = 'python'
    if method == 'numpy':
        idxs = _brute_numpy(problem)
    elif method == 'python':
        idxs = _brute_python(problem)
    else:
        raise ValueError('unknown brute force method %r' % (method,))
    return problem.selection(idxs)


def _brute_python(problem):
    items = problem.items
    n = len(items)
    need = problem.need_int

    def covers(combo):
        return all(sum(items[i].res_int[k] for i in combo) >= need[k]
                   for k in range(_NDIM))

    def cost(combo):
        return sum(items[i].cost_int for i in combo)

    best = min(cost(combo) for size in range(n + 1)
               for combo in itertools.combinations(range(n), size)
               if covers(combo))
    for size in range(n + 1):
        for combo in itertools.combinations(range(n), size):
            if covers(combo) and problem.tied(cost(combo), best):
                return combo
    raise AssertionError('unreachable: the optimum ties with itself')


def _brute_numpy(problem):
    import numpy as np

    items = problem.items
    n = len(items)
    # Item of uuid rank i is bit (n - 1 - i) of a subset mask, so that among
    # subsets of one size the lexicographically smallest sorted uuid tuple
    # is the largest mask.
    low = n // 2
    high = n - low

    def half(ranks):
        cols = [np.zeros(1, dtype=np.int64) for _ in range(_NDIM + 2)]
        for j, rank in enumerate(ranks):
            it = items[rank]
            vals = list(it.res_int) + [it.cost_int, 1]
            cols = [np.concatenate([c, c + v]) for c, v in zip(cols, vals)]
        return cols

    # low half: bits 0..low-1 are ranks n-1 .. n-low.
    lo = half([n - 1 - b for b in range(low)])
    hi = half([n - 1 - (low + b) for b in range(high)])
    need = problem.need_int
    rows = max(1, (1 << 18) >> low)

    def chunks():
        for start in range(0, len(hi[0]), rows):
            sl = slice(start, start + rows)
            ok = np.ones((len(hi[0][sl]), len(lo[0])), dtype=bool)
            for k in range(_NDIM):
                ok &= (hi[k][sl, None] + lo[k][None, :]) >= need[k]
            cost = hi[_NDIM][sl, None] + lo[_NDIM][None, :]
            yield start, ok, cost

    best = None
    for _, ok, cost in chunks():
        if ok.any():
            m = int(cost[ok].min())
            best = m if best is None else min(best, m)
    best_f = problem.cost_float(best)
    tol = TIE_RTOL * max(1.0, best_f)
    scale = float(problem.cost_scale)
    win = None  # (size, mask)
    lo_idx = np.arange(len(lo[0]), dtype=np.int64)
    for start, ok, cost in chunks():
        tied = ok & ((cost.astype(np.float64) / scale) - best_f <= tol)
        if not tied.any():
            continue
        r, c = np.nonzero(tied)
        sizes = hi[_NDIM + 1][start + r] + lo[_NDIM + 1][c]
        masks = ((start + r).astype(np.int64) << low) | lo_idx[c]
        size = int(sizes.min())
        mask = int(masks[sizes == size].max())
        if win is None or (size, -mask) < (win[0], -win[1]):
            win = (size, mask)
    return [n - 1 - b for b in range(n) if win[1] >> b & 1]
