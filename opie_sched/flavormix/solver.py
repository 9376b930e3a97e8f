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
"""The optimal VM set: exact branch and bound, or MILP (Paper V, 3.1).

Sedaghat, Hernandez-Rodriguez, Elmroth, *A Virtual Machine Re-packing
Approach to the Horizontal vs. Vertical Elasticity Trade-off for Cloud
Autoscaling*, CAC'13 (thesis Paper V), section 3.1: the *optimal set* for
a required capacity ``C_req`` is::

    minimise  sum_i n_i * p_i   subject to  sum_i n_i * c_i >= C_req,
                                            n_i in {0, 1, 2, ...}

Optimal-set solvers (``method=``):

``'bnb'`` (default)
    Exact branch-and-bound over integers (all data scaled to integers by
    their common denominators). Types are branched in order of increasing
    price/capacity ratio, the counts of a type from the largest useful
    count down; a branch is cut when its cost plus the remaining capacity
    priced at the best remaining ratio (the LP bound) exceeds the best
    cost found. Branches whose bound *equals* the best cost are kept, so
    every cost-optimal set is seen and the tie-break below is exact.
``'milp'``
    :func:`scipy.optimize.milp` (HiGHS) on the float values, with
    ``mip_rel_gap=0``; a second solve over the cost-optimal face minimises
    (servers started, number of servers). The cost is exact up to HiGHS's
    feasibility tolerances; further ties are as HiGHS returns them
    (deterministic for a given input, but not necessarily the ``'bnb'``
    choice). Needs scipy (not a dependency of opie_sched).

Default by measurement (``python benchmarks/repacking_solvers.py``
prints the mean time per :func:`optimal_set` call of each method on the
thesis Table 2 types and on 12 random types): ``'bnb'`` is faster there
by one to two orders of magnitude; it is also exact and needs no scipy,
hence the default. Its worst case is exponential (many types with equal
price/capacity ratios and a large ``C_req``); use ``'milp'`` there.

Tie-breaking (``'bnb'``, documented and tested): among sets of equal
(exact) cost prefer, in order, (1) fewest servers to start, i.e. the most
reuse of the running set given as ``current`` (``sum_i max(0, n_i -
current_i)``), (2) fewest servers, (3) least total capacity, (4) the count
vector in ascending flavor-name order that is lexicographically smallest.
"""

import fractions
import math

from opie_sched.flavormix.vmtypes import _Catalog
from opie_sched.flavormix.vmtypes import _exact
from opie_sched.flavormix.vmtypes import _lcm_den
from opie_sched.flavormix.vmtypes import RepackingError

Fraction = fractions.Fraction

#: Solver methods for :func:`optimal_set`.
METHODS = ('bnb', 'milp')
DEFAULT_METHOD = 'bnb'


# -- exact branch and bound ---------------------------------------------------

def _ratio_order(iprice, icap):
    """Type indices by price/capacity ascending (ties: index)."""
    return sorted(range(len(iprice)),
                  key=lambda i: (Fraction(iprice[i], icap[i]), i))


def _tie_key(cost, vec, prefer, icap):
    starts = sum(max(0, n - p) for n, p in zip(vec, prefer))
    return (cost, starts, sum(vec),
            sum(n * c for n, c in zip(vec, icap)), tuple(vec))


def _bnb_cover(iprice, icap, need, upper, prefer):
    """Exact min-cost cover over integers; None if infeasible."""
    m = len(iprice)
    if need <= 0:
        return [0] * m
    order = _ratio_order(iprice, icap)
    # Largest capacity reachable from level k on (None: unbounded).
    reach = [0] * (m + 1)
    for k in range(m - 1, -1, -1):
        i = order[k]
        if reach[k + 1] is None or upper[i] is None:
            reach[k] = None
        else:
            reach[k] = reach[k + 1] + upper[i] * icap[i]
    best = [None, None]  # key, vector
    vec = [0] * m

    def visit(k, rem, cost):
        if rem <= 0:
            key = _tie_key(cost, vec, prefer, icap)
            if best[0] is None or key < best[0]:
                best[0], best[1] = key, list(vec)
            return
        if k == m or (reach[k] is not None and rem > reach[k]):
            return
        i = order[k]
        p, c = iprice[i], icap[i]
        # LP bound: the rest priced at the best remaining ratio p/c.
        if best[0] is not None and cost * c + rem * p > best[0][0] * c:
            return
        nmax = -(-rem // c)
        if upper[i] is not None:
            nmax = min(nmax, upper[i])
        for n in range(nmax, -1, -1):
            vec[i] = n
            visit(k + 1, rem - n * c, cost + n * p)
        vec[i] = 0

    visit(0, need, 0)
    return best[1]


def _bnb_max_capacity(iprice, icap, budget, upper):
    """Max capacity with cost <= budget (ints); ties: cost, count, vector."""
    m = len(iprice)
    order = sorted(range(m), key=lambda i: (-Fraction(icap[i], iprice[i]), i))
    best = [None, None]
    vec = [0] * m

    def visit(k, left, cap, cost):
        if k == m:
            key = (-cap, cost, sum(vec), tuple(vec))
            if best[0] is None or key < best[0]:
                best[0], best[1] = key, list(vec)
            return
        i = order[k]
        p, c = iprice[i], icap[i]
        # Bound: the remaining budget spent at the best remaining ratio.
        if best[0] is not None and cap * p + left * c < -best[0][0] * p:
            return
        nmax = left // p
        if upper[i] is not None:
            nmax = min(nmax, upper[i])
        for n in range(nmax, -1, -1):
            vec[i] = n
            visit(k + 1, left - n * p, cap + n * c, cost + n * p)
        vec[i] = 0

    visit(0, budget, 0, 0)
    return best[1]


# -- MILP ---------------------------------------------------------------------

def _milp_cover(cat, need, upper, prefer):
    try:
        import numpy as np
        from scipy import optimize
    except ImportError as exc:
        raise RepackingError("method 'milp' needs scipy: %s" % exc)
    m = len(cat.names)
    price = np.array([float(p) for p in cat.price])
    cap = np.array([float(c) for c in cat.cap])
    ub = np.array([np.inf if u is None else u for u in upper], dtype=float)
    opts = {'mip_rel_gap': 0.0}
    res = optimize.milp(
        price, integrality=np.ones(m),
        bounds=optimize.Bounds(np.zeros(m), ub),
        constraints=optimize.LinearConstraint(cap[None, :], float(need),
                                              np.inf),
        options=opts)
    if res.x is None:
        return None
    first = _repair(cat, [int(round(x)) for x in res.x], need, upper)
    if first is None:
        return None
    # Tie-break solve: variables n (m) and s (m) with s_i >= n_i - prefer_i;
    # minimise W*sum(s) + sum(n) over cost <= the optimal cost.
    w = sum(first) + 1
    zeros, eye = np.zeros(m), np.eye(m)
    obj = np.concatenate([np.ones(m), np.full(m, float(w))])
    best_cost = float(cat.price_of(first))
    cons = [
        optimize.LinearConstraint(np.concatenate([cap, zeros])[None, :],
                                  float(need), np.inf),
        optimize.LinearConstraint(np.concatenate([price, zeros])[None, :],
                                  -np.inf, best_cost * (1 + 1e-12)),
        optimize.LinearConstraint(np.hstack([eye, -eye]), -np.inf,
                                  np.array(prefer, dtype=float)),
    ]
    res2 = optimize.milp(
        obj, integrality=np.ones(2 * m),
        bounds=optimize.Bounds(np.zeros(2 * m),
                               np.concatenate([ub, np.full(m, np.inf)])),
        constraints=cons, options=opts)
    if res2.x is not None:
        second = _repair(cat, [int(round(x)) for x in res2.x[:m]], need,
                         upper)
        if second is not None and cat.price_of(second) <= cat.price_of(
                first):
            return second
    return first


def _repair(cat, vec, need, upper):
    """Rounded MILP answer, feasible in exact arithmetic, or None."""
    vec = [max(0, n) for n in vec]
    if cat.cap_of(vec) >= need:
        return vec
    # Float tolerance left it just short: add the cheapest fitting server.
    for i in sorted(range(len(vec)), key=lambda j: cat.price[j]):
        if upper[i] is None or vec[i] < upper[i]:
            trial = list(vec)
            trial[i] += 1
            if cat.cap_of(trial) >= need:
                return trial
    return None


# -- optimal sets -------------------------------------------------------------

def _upper_vector(cat, upper):
    if upper is None:
        return [None] * len(cat.names)
    vec = cat.vector(upper, 'upper')
    return [vec[i] if name in upper else None
            for i, name in enumerate(cat.names)]


def _cover(cat, need, upper_vec, prefer_vec, method):
    if method not in METHODS:
        raise RepackingError('unknown method %r (%s)' % (
            method, ', '.join(METHODS)))
    if need <= 0:
        return [0] * len(cat.names)
    if method == 'milp':
        return _milp_cover(cat, need, upper_vec, prefer_vec)
    cap_den = _lcm_den(list(cat.cap) + [need])
    icap = [int(c * cap_den) for c in cat.cap]
    ineed = int(need * cap_den)
    return _bnb_cover(cat.iprice, icap, ineed, upper_vec, prefer_vec)


def optimal_set(types, required, current=None, upper=None,
                method=DEFAULT_METHOD):
    """The cheapest VM set giving at least ``required`` capacity.

    Paper V, 3.1: ``min sum n_i p_i`` s.t. ``sum n_i c_i >= required``,
    ``n_i`` natural numbers (solved exactly, see the module docstring for
    the methods and the tie-break).

    :param types: VM types (see :func:`vm_types`).
    :param required: ``C_req``, capacity unit, a number >= 0.
    :param current: the running set ``{flavor: count}``; only used to
        break ties towards reusing running servers.
    :param upper: optional per-flavor maximum counts ``{flavor: max}``
        (flavors not named are unbounded); e.g. the running set itself to
        pick the cheapest subset of it that still covers ``required``.
    :param method: ``'bnb'`` (default) or ``'milp'``.
    :returns: ``{flavor: count}`` (non-zero counts only).
    :raises RepackingError: bad input, or ``upper`` makes ``required``
        unreachable.
    """
    cat = _Catalog(types)
    need = _exact(required, 'required capacity')
    upper_vec = _upper_vector(cat, upper)
    vec = _cover(cat, need, upper_vec, cat.vector(current, 'current set'),
                 method)
    if vec is None:
        raise RepackingError('required capacity %g cannot be reached within '
                             'the upper bounds %r' % (float(need), upper))
    return cat.counts(vec)


def _max_capacity(cat, rate, upper_vec):
    budget = math.floor(rate * cat.price_den)  # cost <= rate, exactly
    den = _lcm_den(cat.cap)
    return _bnb_max_capacity(cat.iprice, [int(c * den) for c in cat.cap],
                             budget, upper_vec)


def max_capacity_set(types, budget_per_hour, upper=None):
    """The VM set of largest capacity costing at most ``budget_per_hour``.

    Ties: cheapest, then fewest servers, then the count vector (ascending
    flavor names) lexicographically smallest. Exact branch-and-bound.

    :param budget_per_hour: currency per hour, >= 0 (cost <= budget is
        affordable).
    :param upper: optional per-flavor maximum counts, as in
        :func:`optimal_set`.
    :returns: ``{flavor: count}``; empty when nothing is affordable.
    :raises RepackingError: bad input.
    """
    cat = _Catalog(types)
    rate = _exact(budget_per_hour, 'budget per hour')
    return cat.counts(_max_capacity(cat, rate, _upper_vector(cat, upper)))
