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
"""Repacking autoscaler: the planner of thesis Paper V, plus Merkat budgets.

Source: M. Sedaghat, F. Hernandez-Rodriguez, E. Elmroth, *A Virtual
Machine Re-packing Approach to the Horizontal vs. Vertical Elasticity
Trade-off for Cloud Autoscaling*, CAC'13 -- Paper V of Sedaghat's thesis
(cited below as "Paper V"), and Merkat's horizontal scaling policy
(Algorithms 2-3 of the Merkat paper, budget-capped number of VMs).

An application can run on VM types ``i`` (flavors), each with a price
``p_i`` (currency per **hour**) and an application capacity ``c_i`` (any
unit, e.g. requests per minute; the same unit as the demand). Paper V, 3.1:
the *optimal set* for a required capacity ``C_req`` is::

    minimise  sum_i n_i * p_i   subject to  sum_i n_i * c_i >= C_req,
                                            n_i in {0, 1, 2, ...}

and (Paper V, 3 and 3.4, Algorithm 1) a running set of price ``P`` is
replaced by an optimal set of price ``P_hat`` only when::

    P_hat < P   and   1 - (P_hat * d + R) / (P * d) > K

with ``d`` the expected stability interval (hours), ``R = C_extra *
repacking time`` the reconfiguration cost (Paper V, 3.3) and ``K`` the gain
threshold (Paper V uses ``K = 1%``). Transitions are make-before-break
(Paper V, 3.2): the servers to start are started while the old set keeps
serving, then the surplus is stopped; running servers are reused wherever
the target set has servers of their flavor.

Conventions used throughout:

* A *VM set* is a mapping ``{flavor name: count}`` (int >= 0). Results are
  plain dicts holding only non-zero counts, keys sorted by flavor name.
* All decisions are taken in exact rational arithmetic
  (:class:`fractions.Fraction` of the values given; a float is taken at
  its exact binary value), so a boundary such as ``gain == K`` is decided
  exactly; reported numbers are floats.
* Bad input raises :class:`RepackingError` (a :class:`ValueError`) with a
  message naming the offending value.

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

Default by measurement (``python -m opie_sched.repacking`` repeats it;
this machine, Python 3.11, scipy 1.17 / HiGHS, 500 random ``C_req`` per
case, mean time per :func:`optimal_set` call): on the thesis Table 2 types
(6 flavors) with ``C_req`` in [1, 2 000 000] req/min, ``'bnb'`` took
0.087 ms (App A) and 0.079 ms (App B) against 16.2 ms and 14.0 ms for
``'milp'`` (7.5 ms and 6.7 ms for its first HiGHS solve alone); with 12
random types and ``C_req`` up to 10**6, 0.12 ms against 2.4 ms.
``'bnb'`` is also exact and needs no scipy, hence the default. Its worst
case is exponential (many types with equal price/capacity ratios and a
large ``C_req``); use ``'milp'`` there.

Tie-breaking (``'bnb'``, documented and tested): among sets of equal
(exact) cost prefer, in order, (1) fewest servers to start, i.e. the most
reuse of the running set given as ``current`` (``sum_i max(0, n_i -
current_i)``), (2) fewest servers, (3) least total capacity, (4) the count
vector in ascending flavor-name order that is lexicographically smallest.
"""

import abc
import dataclasses
import fractions
import math
import numbers
import random
import time

__all__ = [
    'RepackingError', 'VMType', 'vm_types', 'thesis_types',
    'set_price', 'set_capacity', 'optimal_set', 'max_capacity_set',
    'cap_to_budget', 'budget_capped_set', 'affordable_servers',
    'merkat_vm_upper_bound', 'transition', 'reconfiguration_cost', 'gain',
    'decide', 'RepackPlan', 'plan', 'METHODS', 'DEFAULT_METHOD',
    'Simulation', 'Strategy', 'SBase', 'SBaseRepacked', 'SDelta',
    'SDeltaRepacked', 'SFull', 'STRATEGIES', 'make_strategy',
    'WORKLOADS', 'workload', 'increase', 'seasonal', 'stable', 'on_off',
]

Fraction = fractions.Fraction

#: Solver methods for :func:`optimal_set`.
METHODS = ('bnb', 'milp')
DEFAULT_METHOD = 'bnb'


class RepackingError(ValueError):
    """Invalid input to the repacking planner (message says which value)."""


# -- numbers ------------------------------------------------------------------

def _exact(value, what, positive=False):
    """``value`` as an exact Fraction; finite and >= 0 (> 0 if positive)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise RepackingError('%s must be a number, got %r' % (what, value))
    if isinstance(value, numbers.Rational):
        exact = Fraction(int(value.numerator), int(value.denominator))
    else:
        value = float(value)
        if not math.isfinite(value):
            raise RepackingError('%s must be finite, got %r' % (what, value))
        exact = Fraction(value)
    if exact < 0 or (positive and exact == 0):
        raise RepackingError('%s must be %s, got %r' % (
            what, 'positive' if positive else 'non-negative', value))
    return exact


def _lcm_den(values):
    den = 1
    for v in values:
        den = den * v.denominator // math.gcd(den, v.denominator)
    return den


# -- VM types and sets --------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class VMType:
    """A VM type (flavor) as the repacking planner sees it (Paper V, 3).

    :param name: flavor name, a non-empty str.
    :param price: ``p_i``, currency per hour, a finite number > 0.
    :param capacity: ``c_i``, application capacity of one server (any unit,
        the same as the demand), a finite number > 0.
    :raises RepackingError: on any other value.
    """

    name: str
    price: float
    capacity: float

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise RepackingError('VM type name must be a non-empty string, '
                                 'got %r' % (self.name,))
        _exact(self.price, 'price of %s' % self.name, positive=True)
        _exact(self.capacity, 'capacity of %s' % self.name, positive=True)


def vm_types(spec):
    """Validated VM types, sorted by name.

    :param spec: an iterable of :class:`VMType` or of dicts ``{"name",
        "price", "capacity"}``, or a dict ``{name: {"price", "capacity"}}``.
    :returns: tuple of :class:`VMType`, sorted by name.
    :raises RepackingError: empty, duplicate names, missing/extra keys or
        bad values.
    """
    if isinstance(spec, dict):
        items = []
        for name, entry in spec.items():
            if not isinstance(entry, dict):
                raise RepackingError('VM type %r must be an object with '
                                     'price and capacity' % (name,))
            items.append(dict(entry, name=name))
        spec = items
    if isinstance(spec, (str, bytes)) or not hasattr(spec, '__iter__'):
        raise RepackingError('VM types must be a list or an object, got %r'
                             % (spec,))
    out = []
    for entry in spec:
        if isinstance(entry, VMType):
            out.append(entry)
            continue
        if not isinstance(entry, dict):
            raise RepackingError('VM type must be an object, got %r'
                                 % (entry,))
        missing = {'name', 'price', 'capacity'} - set(entry)
        extra = set(entry) - {'name', 'price', 'capacity'}
        if missing or extra:
            raise RepackingError('VM type %r: %s' % (
                entry.get('name'), '; '.join(
                    filter(None, [
                        missing and 'missing ' + ', '.join(sorted(missing)),
                        extra and 'unknown ' + ', '.join(sorted(extra))]))))
        out.append(VMType(entry['name'], entry['price'], entry['capacity']))
    if not out:
        raise RepackingError('at least one VM type is needed')
    names = [t.name for t in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise RepackingError('duplicate VM type name(s): %s' % ', '.join(dup))
    return tuple(sorted(out, key=lambda t: t.name))


#: Paper V, Table 2: 6 flavors, price $/min and capacity req/min for
#: applications A and B. Prices are converted to $/hour (x 60) here.
_TABLE2 = {
    'A': ((0.003, 500), (0.006, 1197), (0.012, 2867), (0.024, 6868),
          (0.048, 16449), (0.090, 39396)),
    'B': ((0.003, 500), (0.006, 1310), (0.012, 3434), (0.024, 9000),
          (0.048, 23588), (0.090, 61819)),
}
_TABLE2_NAMES = ('small1', 'small2', 'med1', 'med2', 'large1', 'large2')


def thesis_types(app='A'):
    """The VM types of Paper V, Table 2, for application ``'A'`` or ``'B'``.

    Prices are Table 2's $/min times 60 (so $/hour, exact decimal values:
    0.18, 0.36, 0.72, 1.44, 2.88, 5.4); capacities are req/min.

    :raises RepackingError: unknown application.
    """
    if app not in _TABLE2:
        raise RepackingError('unknown application %r (A or B)' % (app,))
    return vm_types(
        VMType(name, round(price * 60, 6), cap)
        for name, (price, cap) in zip(_TABLE2_NAMES, _TABLE2[app]))


class _Catalog:
    """Exact per-type data of validated types (internal)."""

    def __init__(self, types):
        if isinstance(types, _Catalog):
            types = types.types
        types = vm_types(types)
        self.types = types
        self.names = tuple(t.name for t in types)
        self.index = {n: i for i, n in enumerate(self.names)}
        self.price = tuple(_exact(t.price, t.name) for t in types)
        self.cap = tuple(_exact(t.capacity, t.name) for t in types)
        self.price_den = _lcm_den(self.price)
        self.iprice = tuple(int(p * self.price_den) for p in self.price)

    def vector(self, counts, what='VM set'):
        """A count vector (list of int) for a ``{name: count}`` mapping."""
        vec = [0] * len(self.names)
        if counts is None:
            return vec
        if not isinstance(counts, dict):
            raise RepackingError('%s must be an object {flavor: count}, '
                                 'got %r' % (what, counts))
        for name, n in counts.items():
            if name not in self.index:
                raise RepackingError('%s: unknown flavor %r (known: %s)' % (
                    what, name, ', '.join(self.names)))
            if (isinstance(n, bool) or not isinstance(n, numbers.Integral)
                    or n < 0):
                raise RepackingError('%s: count of %s must be an integer '
                                     '>= 0, got %r' % (what, name, n))
            vec[self.index[name]] = int(n)
        return vec

    def counts(self, vec):
        return {n: c for n, c in zip(self.names, vec) if c}

    def price_of(self, vec):
        return sum((n * p for n, p in zip(vec, self.price)), Fraction(0))

    def cap_of(self, vec):
        return sum((n * c for n, c in zip(vec, self.cap)), Fraction(0))


def set_price(types, counts):
    """Price of a VM set, currency per hour (float).

    :raises RepackingError: bad types, unknown flavor or bad count.
    """
    cat = _Catalog(types)
    return float(cat.price_of(cat.vector(counts)))


def set_capacity(types, counts):
    """Total capacity of a VM set (float, the unit of the capacities).

    :raises RepackingError: bad types, unknown flavor or bad count.
    """
    cat = _Catalog(types)
    return float(cat.cap_of(cat.vector(counts)))


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


def cap_to_budget(types, counts, budget_per_hour):
    """``counts`` itself if affordable, else its best affordable subset.

    The horizontal budget cap of Merkat (Alg. 2 lines 11-13: release the
    VMs above the upper bound), generalised to heterogeneous sets: the
    subset of largest capacity whose price per hour is at most the budget
    (ties as in :func:`max_capacity_set`). For a set of one flavor it
    keeps ``floor(budget / price)`` servers, the bound of Merkat Alg. 3 at
    fixed prices.

    :raises RepackingError: bad input.
    """
    cat = _Catalog(types)
    vec = cat.vector(counts)
    rate = _exact(budget_per_hour, 'budget per hour')
    if cat.price_of(vec) <= rate:
        return cat.counts(vec)
    return cat.counts(_max_capacity(cat, rate, vec))


def budget_capped_set(types, required, budget_per_hour, current=None,
                      method=DEFAULT_METHOD):
    """The optimal set within a budget; ``(set, limited)``.

    The cheapest set covering ``required`` if it costs at most
    ``budget_per_hour``; otherwise (``limited`` True) the set of largest
    capacity the budget buys (:func:`max_capacity_set`): the application
    reduces its demand to what its budget allows (Merkat, 3.2, "react when
    the SLO is not met due to budget limitations").

    :returns: ``({flavor: count}, bool)``.
    :raises RepackingError: bad input.
    """
    cat = _Catalog(types)
    target = optimal_set(cat, required, current=current, method=method)
    rate = _exact(budget_per_hour, 'budget per hour')
    if cat.price_of(cat.vector(target)) <= rate:
        return target, False
    return cat.counts(_max_capacity(cat, rate, [None] * len(cat.names))), True


def affordable_servers(budget, price, period_hours=1.0, nvms_max=None):
    """How many servers of one price a budget per period buys.

    Merkat Alg. 3 at fixed ("current") prices: the largest ``N`` in
    ``[0, nvms_max]`` with ``N * price * period_hours <= budget``.

    :param budget: currency per period, >= 0.
    :param price: currency per hour per server, > 0.
    :param period_hours: the budget period in hours, > 0.
    :param nvms_max: optional upper limit on ``N`` (int >= 0).
    :returns: int.
    :raises RepackingError: bad input.
    """
    b = _exact(budget, 'budget')
    p = _exact(price, 'price', positive=True)
    t = _exact(period_hours, 'budget period', positive=True)
    n = math.floor(b / (p * t))
    if nvms_max is not None:
        n = min(n, _count(nvms_max, 'nvms_max'))
    return n


def _count(value, what):
    if (isinstance(value, bool) or not isinstance(value, numbers.Integral)
            or value < 0):
        raise RepackingError('%s must be an integer >= 0, got %r'
                             % (what, value))
    return int(value)


def merkat_vm_upper_bound(budget, unit_price, alloc_max, capacity,
                          nvms_max):
    """Merkat Alg. 3: the VM number upper bound in a proportional-share market.

    For ``N`` VMs each receiving ``alloc_max[r]`` of resource ``r``, the
    bid needed for ``r`` is ``P[r] * a[r] * N / (1 - a[r] * N / Cap[r])``
    (Merkat eq. 1 with the application's own bid in the price). Binary
    search (the bid grows with ``N``) for the largest ``N`` in
    ``[1, nvms_max]`` whose total bid fits the budget. Merkat writes the
    test as ``< bid_max``; here spending exactly the budget is affordable
    (``<=``), consistent with :func:`affordable_servers`.

    :param budget: ``bid_max``, the budget for the next period, >= 0.
    :param unit_price: ``{resource: P[r]}``, price per unit, >= 0.
    :param alloc_max: ``{resource: a_max[r]}``, per-VM allocation, > 0.
    :param capacity: ``{resource: Capacity[r]}``, > 0 (infrastructure).
    :param nvms_max: int >= 0.
    :returns: ``(N, {resource: bid})``; ``(0, {r: 0.0})`` when not even one
        VM is affordable.
    :raises RepackingError: bad input or mismatched resource keys.
    """
    b = _exact(budget, 'budget')
    nmax = _count(nvms_max, 'nvms_max')
    if not isinstance(unit_price, dict) or not unit_price:
        raise RepackingError('unit_price must be a non-empty object')
    keys = set(unit_price)
    for what, d in (('alloc_max', alloc_max), ('capacity', capacity)):
        if not isinstance(d, dict) or set(d) != keys:
            raise RepackingError('%s must name the resources %s'
                                 % (what, ', '.join(sorted(map(str, keys)))))
    res = sorted(keys, key=str)
    P = {r: _exact(unit_price[r], 'unit price of %s' % r) for r in res}
    a = {r: _exact(alloc_max[r], 'alloc_max of %s' % r, positive=True)
         for r in res}
    cap = {r: _exact(capacity[r], 'capacity of %s' % r, positive=True)
           for r in res}

    def bids(n):
        out = {}
        for r in res:
            share = a[r] * n / cap[r]
            if share >= 1:
                return None  # the whole resource cannot be bought
            out[r] = P[r] * a[r] * n / (1 - share)
        return out

    def fits(n):
        bn = bids(n)
        return bn is not None and sum(bn.values()) <= b

    lo, hi = 0, nmax  # invariant: lo fits (0 trivially), answer <= hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    final = bids(lo) if lo else {r: Fraction(0) for r in res}
    return lo, {r: float(v) for r, v in final.items()}


# -- transitions and the gain test --------------------------------------------

def transition(current, target):
    """Make-before-break plan from ``current`` to ``target`` (Paper V, 3.2).

    Running servers are reused where the target has their flavor.

    :param current: ``{flavor: count}``.
    :param target: ``{flavor: count}``.
    :returns: ``(keep, start, stop)``, each ``{flavor: count}``: start
        ``start`` first, then stop ``stop``; ``keep`` runs throughout.
    """
    names = sorted(set(current or {}) | set(target or {}))
    keep, start, stop = {}, {}, {}
    for n in names:
        c, t = (current or {}).get(n, 0), (target or {}).get(n, 0)
        for d, v in ((keep, min(c, t)), (start, t - min(c, t)),
                     (stop, c - min(c, t))):
            if v:
                d[n] = v
    return keep, start, stop


def reconfiguration_cost(types, start, repack_time, c_extra=None):
    """``R = C_extra * repacking time`` (Paper V, 3.3), currency.

    :param start: the servers started by the transition ``{flavor: n}``.
    :param repack_time: hours, >= 0.
    :param c_extra: currency per hour, >= 0; default the price per hour of
        the servers started (make-before-break: they run beside the old set
        for the repacking time). When nothing is started (only stops), the
        default is 0.
    :returns: float.
    :raises RepackingError: bad input.
    """
    return float(_reconfig(_Catalog(types), start, repack_time, c_extra))


def _reconfig(cat, start, repack_time, c_extra):
    t = _exact(repack_time, 'repacking time')
    if c_extra is None:
        extra = cat.price_of(cat.vector(start, 'started servers'))
    else:
        extra = _exact(c_extra, 'C_extra')
    return extra * t


def gain(current_price, new_price, d, reconfig_cost):
    """``1 - (P_hat*d + R) / (P*d)`` (Paper V, eq. 1), float.

    :raises RepackingError: ``P`` or ``d`` not positive, or bad numbers.
    """
    return float(_gain(_exact(current_price, 'P', positive=True),
                       _exact(new_price, 'P_hat'),
                       _exact(d, 'd', positive=True),
                       _exact(reconfig_cost, 'R')))


def _gain(P, P_hat, d, R):
    return 1 - (P_hat * d + R) / (P * d)


def decide(current_price, new_price, d, reconfig_cost, K):
    """Paper V, Algorithm 1: reconfigure or not; ``(bool, gain, reason)``.

    Reconfigure iff ``P_hat < P`` and ``1 - (P_hat*d + R)/(P*d) > K``
    (strictly), decided in exact arithmetic on the values given.

    :param current_price: ``P``, currency per hour, >= 0.
    :param new_price: ``P_hat``, currency per hour, >= 0.
    :param d: stability interval, hours, > 0.
    :param reconfig_cost: ``R``, currency, >= 0.
    :param K: gain threshold (fraction, e.g. 0.01), >= 0.
    :returns: ``(reconfigure, gain or None, reason)``; gain is None when
        ``P_hat >= P`` (Algorithm 1 stops there).
    :raises RepackingError: bad input.
    """
    return _decide(_exact(current_price, 'P'), _exact(new_price, 'P_hat'),
                   _exact(d, 'd', positive=True),
                   _exact(reconfig_cost, 'R'), _exact(K, 'K'))


def _decide(P, P_hat, d, R, K):
    if P_hat >= P:
        return False, None, ('keep: the optimal set (%g/h) is not cheaper '
                             'than the current one (%g/h)' % (P_hat, P))
    g = _gain(P, P_hat, d, R)
    if g > K:
        return True, float(g), (
            'repack: gain %.6g > K=%g (P=%g/h, P_hat=%g/h, d=%gh, R=%g)'
            % (g, K, P, P_hat, d, R))
    return False, float(g), (
        'keep: gain %.6g <= K=%g (P=%g/h, P_hat=%g/h, d=%gh, R=%g)'
        % (g, K, P, P_hat, d, R))


@dataclasses.dataclass
class RepackPlan:
    """The result of :func:`plan` (prices currency/hour, R currency)."""

    required: float
    current: dict
    baseline: dict
    scaled_out: dict
    optimal: dict
    keep: dict
    start: dict
    stop: dict
    current_price: float
    current_capacity: float
    baseline_price: float
    optimal_price: float
    baseline_capacity: float
    optimal_capacity: float
    reconfig_cost: float
    d: float
    K: float
    gain: float
    repack: bool
    reason: str
    budget_limited: bool

    @property
    def target(self):
        """The set to run: ``optimal`` if repacking, else ``baseline``."""
        return self.optimal if self.repack else self.baseline

    def as_dict(self):
        """JSON-ready dict of every field plus ``"target"``."""
        out = dataclasses.asdict(self)
        out['target'] = self.target
        return out


def plan(types, required, current=None, d=1.0, K=0.01, R=None,
         c_extra=None, repack_time=None, budget=None, budget_period=1.0,
         method=DEFAULT_METHOD):
    """One repacking decision (Paper V, Algorithm 1) for a running set.

    1. Baseline ``S``: the running set ``current``; if it is short of
       ``required``, plus the optimal set for the shortfall (what the
       horizontal autoscaler S_delta would add, ``scaled_out``); if it
       over-provisions, it is kept as is (scale-in is the autoscaler's
       business). ``P`` is its price.
    2. Optimal ``S_hat`` for ``required`` (ties towards reusing ``S``) and
       its price ``P_hat``.
    3. Transition ``S -> S_hat`` (make-before-break, reuse), ``R``: given,
       or ``C_extra * repack_time`` (``C_extra`` defaulting to the price of
       the servers started, see :func:`reconfiguration_cost`), or 0 when
       neither is given.
    4. Decision: :func:`decide`.

    With ``budget`` (currency per ``budget_period`` hours), both sets are
    capped at ``budget / budget_period`` per hour (:func:`cap_to_budget`,
    :func:`budget_capped_set`); ``budget_limited`` says whether the cap
    bound.

    :param required: ``C_req`` >= 0.
    :param current: ``{flavor: count}`` running now (default none).
    :param d: stability interval, hours, > 0.
    :param K: gain threshold >= 0.
    :param R: reconfiguration cost, currency (exclusive with ``c_extra``
        and ``repack_time``).
    :param c_extra: currency per hour (needs ``repack_time``).
    :param repack_time: hours.
    :returns: :class:`RepackPlan`.
    :raises RepackingError: bad or contradictory input.
    """
    cat = _Catalog(types)
    need = _exact(required, 'required capacity')
    cur_vec = cat.vector(current, 'current set')
    d_x = _exact(d, 'd', positive=True)
    K_x = _exact(K, 'K')
    if R is not None and (c_extra is not None or repack_time is not None):
        raise RepackingError('give either R or C_extra/repack_time, not both')
    if c_extra is not None and repack_time is None:
        raise RepackingError('C_extra needs repack_time')
    rate = None
    if budget is not None:
        rate = (_exact(budget, 'budget')
                / _exact(budget_period, 'budget period', positive=True))

    base_vec = list(cur_vec)
    short = need - cat.cap_of(cur_vec)
    added = [0] * len(base_vec)
    if short > 0:
        added = _cover(cat, short, [None] * len(base_vec), [0] * len(
            base_vec), method)
        base_vec = [a + b for a, b in zip(base_vec, added)]
    limited = False
    if rate is not None and cat.price_of(base_vec) > rate:
        base_vec = _max_capacity(cat, rate, base_vec)
        limited = True
    opt_vec = _cover(cat, need, [None] * len(base_vec), base_vec, method)
    if rate is not None and cat.price_of(opt_vec) > rate:
        opt_vec = _max_capacity(cat, rate, [None] * len(base_vec))
        limited = True

    baseline, optimal = cat.counts(base_vec), cat.counts(opt_vec)
    keep, start, stop = transition(baseline, optimal)
    if R is not None:
        R_x = _exact(R, 'R')
    elif repack_time is not None:
        R_x = _reconfig(cat, start, repack_time, c_extra)
    else:
        R_x = Fraction(0)
    P, P_hat = cat.price_of(base_vec), cat.price_of(opt_vec)
    repack, g, reason = _decide(P, P_hat, d_x, R_x, K_x)
    if limited:
        reason += '; budget %g/h limits the capacity' % float(rate)
    return RepackPlan(
        required=float(need), current=cat.counts(cur_vec),
        baseline=baseline, scaled_out=cat.counts(added), optimal=optimal,
        keep=keep, start=start, stop=stop,
        current_price=float(cat.price_of(cur_vec)),
        current_capacity=float(cat.cap_of(cur_vec)),
        baseline_price=float(P), optimal_price=float(P_hat),
        baseline_capacity=float(cat.cap_of(base_vec)),
        optimal_capacity=float(cat.cap_of(opt_vec)),
        reconfig_cost=float(R_x), d=float(d_x), K=float(K_x), gain=g,
        repack=repack, reason=reason, budget_limited=limited)


# -- strategies (Paper V, section 4 and Table 1) ------------------------------

@dataclasses.dataclass
class Simulation:
    """A strategy's run over a demand series (currency, hours).

    ``sets[t]`` is the set run during step ``t``; ``unmet[t]`` the demand
    it did not cover (non-zero only under a budget); ``reconfig_costs[t]``
    the R paid at step ``t``.
    """

    strategy: str
    step_hours: float
    demand: list
    sets: list
    prices: list
    reconfig_costs: list
    unmet: list
    reconfigurations: int
    resource_cost: float
    reconfig_cost: float
    total_cost: float


class Strategy(metaclass=abc.ABCMeta):
    """Base class of the autoscaling strategies of Paper V, section 4.

    Each step ``t`` of a demand series (``demand[t]`` the total load, in
    capacity units) the strategy turns the previous set ``S_{t-1}`` into
    ``S_t``, run for the whole step: cost ``price(S_t) * step_hours``. A
    step that both starts and stops servers is a *reconfiguration* and pays
    ``R = C_extra * repack_time`` (``C_extra`` by default the price of the
    servers started); pure scale-out or scale-in is free, as in the thesis
    where S_delta and S_base cost the same for cheap and expensive R --
    except for :class:`SFull`, whose every change is a reconfiguration.

    Shared scale-in rule: when ``S_{t-1}`` over-provisions, keep the
    cheapest subset of it that still covers the load (exact, ties as
    :func:`optimal_set`).

    :param types: VM types.
    :param d: stability interval for the gain test, hours (> 0).
    :param K: gain threshold.
    :param repack_time: repacking time, hours (Paper V: 4 or 20 minutes).
    :param c_extra: currency per hour; default the started servers' price.
    :param base: S_base's base instance (flavor name); default the type of
        median capacity (upper median), an a-priori choice.
    :param budget: optional currency per ``budget_period`` hours; each set
        is capped with :func:`cap_to_budget` (Merkat Alg. 2-3).
    :raises RepackingError: bad parameters.
    """

    name = None

    def __init__(self, types, d=1000 / 60, K=0.01, repack_time=0.0,
                 c_extra=None, base=None, budget=None, budget_period=1.0,
                 method=DEFAULT_METHOD):
        self.cat = _Catalog(types)
        self.d = _exact(d, 'd', positive=True)
        self.K = _exact(K, 'K')
        self.repack_time = _exact(repack_time, 'repacking time')
        self.c_extra = None if c_extra is None else _exact(c_extra,
                                                           'C_extra')
        if base is None:
            by_cap = sorted(range(len(self.cat.names)),
                            key=lambda i: (self.cat.cap[i], i))
            base = self.cat.names[by_cap[len(by_cap) // 2]]
        if base not in self.cat.index:
            raise RepackingError('unknown base instance %r (known: %s)'
                                 % (base, ', '.join(self.cat.names)))
        self.base = self.cat.index[base]
        self.rate = None
        if budget is not None:
            self.rate = (_exact(budget, 'budget') / _exact(
                budget_period, 'budget period', positive=True))
        if method not in METHODS:
            raise RepackingError('unknown method %r (%s)' % (
                method, ', '.join(METHODS)))
        self.method = method
        self._m = len(self.cat.names)

    # helpers
    def _none(self):
        return [None] * self._m

    def _optimal(self, need, prefer):
        return _cover(self.cat, need, self._none(), prefer, self.method)

    def _scale_in(self, need, prev):
        return _cover(self.cat, need, list(prev), prev, self.method)

    def _delta(self, load, prev):
        """S_delta's rule: add the optimal set for the shortfall."""
        short = load - self.cat.cap_of(prev)
        if short > 0:
            add = self._optimal(short, [0] * self._m)
            return [a + b for a, b in zip(prev, add)]
        if short < 0:
            return self._scale_in(load, prev)
        return list(prev)

    def _base_rule(self, load, prev):
        """S_base's rule: add base instances for the shortfall."""
        short = load - self.cat.cap_of(prev)
        if short > 0:
            vec = list(prev)
            vec[self.base] += math.ceil(short / self.cat.cap[self.base])
            return vec
        if short < 0:
            return self._scale_in(load, prev)
        return list(prev)

    def _repack(self, load, vec):
        """Paper V, Algorithm 1 on ``vec``: (new vec, R, repacked)."""
        opt = self._optimal(load, vec)
        P, P_hat = self.cat.price_of(vec), self.cat.price_of(opt)
        if P_hat >= P:
            return vec, Fraction(0), False
        R = self._cost_of(vec, opt)
        ok, _, _ = _decide(P, P_hat, self.d, R, self.K)
        return (opt, R, True) if ok else (vec, Fraction(0), False)

    def _cost_of(self, old, new, scaling_is_free=True):
        started = [max(0, b - a) for a, b in zip(old, new)]
        stopped = any(a > b for a, b in zip(old, new))
        if not any(started) or (scaling_is_free and not stopped):
            return Fraction(0)  # pure scale-out or scale-in: free
        extra = (self.cat.price_of(started) if self.c_extra is None
                 else self.c_extra)
        return extra * self.repack_time

    @abc.abstractmethod
    def step(self, load, prev):
        """``(S_t, R_t, reconfigured)`` from ``S_{t-1}`` (vectors)."""

    def run(self, demand, step_hours=1.0):
        """Simulate over ``demand`` (sequence of numbers >= 0).

        :param step_hours: length of one step, hours, > 0.
        :returns: :class:`Simulation`.
        :raises RepackingError: bad demand or step.
        """
        dt = _exact(step_hours, 'step length', positive=True)
        if isinstance(demand, (str, bytes)):
            raise RepackingError('demand must be a sequence of numbers')
        loads = [_exact(x, 'demand[%d]' % t) for t, x in enumerate(demand)]
        prev = [0] * self._m
        sets, prices, rcosts, unmet = [], [], [], []
        res_total, r_total, n_reconf = Fraction(0), Fraction(0), 0
        for load in loads:
            vec, R, reconf = self.step(load, prev)
            if self.rate is not None and self.cat.price_of(vec) > self.rate:
                vec = _max_capacity(self.cat, self.rate, vec)
            price = self.cat.price_of(vec)
            res_total += price * dt
            r_total += R
            n_reconf += bool(reconf)
            sets.append(self.cat.counts(vec))
            prices.append(float(price))
            rcosts.append(float(R))
            unmet.append(float(max(Fraction(0), load - self.cat.cap_of(vec))))
            prev = vec
        return Simulation(
            strategy=self.name, step_hours=float(dt),
            demand=[float(x) for x in loads], sets=sets, prices=prices,
            reconfig_costs=rcosts, unmet=unmet, reconfigurations=n_reconf,
            resource_cost=float(res_total), reconfig_cost=float(r_total),
            total_cost=float(res_total + r_total))


class SDelta(Strategy):
    """S_delta (Paper V, 4.1): input delta load, optimal set, never repacks.

    Shortfall ``load - capacity(S_{t-1}) > 0``: add the optimal set for the
    shortfall alone. Surplus: shared scale-in rule. Small steps in load add
    small (price-inefficient) servers, so the set drifts from optimal.
    """

    name = 'S_delta'

    def step(self, load, prev):
        return self._delta(load, prev), Fraction(0), False


class SBase(Strategy):
    """S_base (Paper V, 4.2): input delta load, base instance, never repacks.

    Shortfall: add ``ceil(shortfall / c_base)`` base instances. Surplus:
    shared scale-in rule (for an all-base set: drop whole base servers).
    """

    name = 'S_base'

    def step(self, load, prev):
        return self._base_rule(load, prev), Fraction(0), False


class SFull(Strategy):
    """S_Full (Paper V, 4.3): input total load, optimal set, always repacks.

    Every step runs the optimal set for the total load (ties towards
    reusing ``S_{t-1}``) without a cost-benefit test. Its scaling is
    reconfiguration: "the cost of running the application with this
    strategy is the sum of the resource set cost plus the cost of
    reconfigurations at each timestep" (Paper V §4, item 3). So every step
    whose set differs from ``S_{t-1}`` counts as a reconfiguration and
    pays ``R = C_extra × repacking time`` for the servers it starts, a
    pure scale-out included (the Δload strategies add servers outside any
    reconfiguration, free); a pure scale-in starts nothing and pays 0.
    ``scaling_is_free=True`` restores the old accounting (only steps that
    start *and* stop servers pay and count), for comparison.
    """

    name = 'S_Full'

    def __init__(self, types, scaling_is_free=False, **kwargs):
        super().__init__(types, **kwargs)
        self.scaling_is_free = bool(scaling_is_free)

    def step(self, load, prev):
        vec = self._optimal(load, prev)
        R = self._cost_of(prev, vec, self.scaling_is_free)
        grew = any(b > a for a, b in zip(prev, vec))
        shrank = any(a > b for a, b in zip(prev, vec))
        changed = (grew and shrank) if self.scaling_is_free else (
            grew or shrank)
        return vec, R, changed


class SDeltaRepacked(Strategy):
    """S_delta_Repacked (Paper V, 4.4): S_delta, then repack when beneficial.

    ``S' =`` S_delta's step; then Algorithm 1 on ``S'``: switch to the
    optimal set for the total load (reusing ``S'``) iff ``P_hat < P`` and
    ``1 - (P_hat*d + R)/(P*d) > K``, paying R.
    """

    name = 'S_delta_Repacked'

    def step(self, load, prev):
        return self._repack(load, self._delta(load, prev))


class SBaseRepacked(Strategy):
    """S_base_Repacked (Paper V, 4.4): S_base, then repack when beneficial.

    As :class:`SDeltaRepacked` with S_base's step first.
    """

    name = 'S_base_Repacked'

    def step(self, load, prev):
        return self._repack(load, self._base_rule(load, prev))


#: Strategy classes by name (Paper V, Table 1).
STRATEGIES = {cls.name: cls for cls in (
    SBase, SBaseRepacked, SDelta, SDeltaRepacked, SFull)}


def make_strategy(name, types, **kwargs):
    """A strategy by name (case-insensitive), see :data:`STRATEGIES`.

    :raises RepackingError: unknown name or bad parameters.
    """
    for key, cls in STRATEGIES.items():
        if key.lower() == str(name).lower():
            return cls(types, **kwargs)
    raise RepackingError('unknown strategy %r (%s)' % (
        name, ', '.join(STRATEGIES)))


# -- workloads (Paper V, section 5, after Mao and Humphrey) -------------------
# Paper V's four series (its Figure 1: 168, 182, 215 and 338 hours) are not
# published as data; these generators follow the shapes its section 5
# describes, so absolute costs differ from its Tables 3-6.

def _steps(hours, step_minutes):
    h = _exact(hours, 'hours', positive=True)
    s = _exact(step_minutes, 'step minutes', positive=True)
    n = math.floor(h * 60 / s)
    if n < 1:
        raise RepackingError('the workload has no step: %g h at %g min'
                             % (h, s))
    return n, float(s) / 60.0


def _level(value, what):
    return float(_exact(value, what))


def increase(hours=168, step_minutes=5, start=2000, peak=80000, seed=0):
    """An *Increasing* workload (Paper V, section 5).

    "Slow growth followed by small oscillations that become larger as the
    service becomes popular": a logistic trend from ``start`` to ``peak``
    (mid-point at 60% of the run), a daily cycle whose amplitude is 15% of
    the trend's growth, and 2% Gaussian noise.

    :returns: list of int loads (capacity units), one per step of
        ``step_minutes``, ``floor(hours * 60 / step_minutes)`` long.
    :raises RepackingError: bad parameters.
    """
    n, dt = _steps(hours, step_minutes)
    lo, hi = _level(start, 'start'), _level(peak, 'peak')
    rng = random.Random(seed)
    total = n * dt
    out = []
    for k in range(n):
        t = k * dt
        grow = 1.0 / (1.0 + math.exp(-10.0 * (t / total - 0.6)))
        trend = lo + (hi - lo) * grow
        osc = 0.15 * (hi - lo) * grow * math.sin(2 * math.pi * t / 24.0)
        load = (trend + osc) * (1.0 + 0.02 * rng.gauss(0.0, 1.0))
        out.append(max(0, int(round(load))))
    return out


def seasonal(hours=182, step_minutes=5, low=5000, high=60000, period=24.0,
             seed=0):
    """A *Seasonal* (cycle/bursting) workload (Paper V, section 5).

    Load repeating with ``period`` hours: a smooth daily peak between
    ``low`` and ``high`` (each cycle's peak height varies +-10% at random),
    a weekly dip of 30% on two cycles out of seven, and 2% noise.

    :returns: list of int loads, one per step of ``step_minutes``.
    :raises RepackingError: bad parameters.
    """
    n, dt = _steps(hours, step_minutes)
    lo, hi = _level(low, 'low'), _level(high, 'high')
    per = float(_exact(period, 'period', positive=True))
    rng = random.Random(seed)
    heights = {}
    out = []
    for k in range(n):
        t = k * dt
        cycle = int(t // per)
        if cycle not in heights:
            weekly = 0.7 if cycle % 7 in (5, 6) else 1.0
            heights[cycle] = weekly * (1.0 + 0.1 * rng.uniform(-1.0, 1.0))
        phase = (t % per) / per
        shape = 0.5 - 0.5 * math.cos(2 * math.pi * phase)
        load = lo + (hi - lo) * heights[cycle] * shape ** 2
        load *= 1.0 + 0.02 * rng.gauss(0.0, 1.0)
        out.append(max(0, int(round(load))))
    return out


def stable(hours=168, step_minutes=5, level=20000, seed=0):
    """A *Stable* workload (Paper V, section 5): constant ``level`` +-1%.

    :returns: list of int loads.
    """
    n, _ = _steps(hours, step_minutes)
    lv = _level(level, 'level')
    rng = random.Random(seed)
    return [max(0, int(round(lv * (1 + 0.01 * rng.gauss(0.0, 1.0)))))
            for _ in range(n)]


def on_off(hours=168, step_minutes=5, level=20000, on_hours=8,
           off_hours=16, seed=0):
    """An *On-and-Off* workload (Paper V, section 5).

    ``level`` (+-1%) for ``on_hours``, then 0 for ``off_hours``, repeated.

    :returns: list of int loads.
    """
    n, dt = _steps(hours, step_minutes)
    lv = _level(level, 'level')
    on = float(_exact(on_hours, 'on hours', positive=True))
    off = float(_exact(off_hours, 'off hours'))
    rng = random.Random(seed)
    out = []
    for k in range(n):
        noise = 1 + 0.01 * rng.gauss(0.0, 1.0)
        active = (k * dt) % (on + off) < on
        out.append(max(0, int(round(lv * noise))) if active else 0)
    return out


#: Workload generators by name.
WORKLOADS = {'increase': increase, 'seasonal': seasonal, 'stable': stable,
             'on_off': on_off}


def workload(name, seed=0, **kwargs):
    """A named workload ``(demand, step_hours)``.

    :raises RepackingError: unknown name or bad parameters.
    """
    if name not in WORKLOADS:
        raise RepackingError('unknown workload %r (%s)' % (
            name, ', '.join(WORKLOADS)))
    demand = WORKLOADS[name](seed=seed, **kwargs)
    step = kwargs.get('step_minutes', 5)
    return demand, float(_exact(step, 'step minutes', positive=True)) / 60


# -- measurement --------------------------------------------------------------

def _measure(samples=500, seed=1):
    """Mean seconds per optimal_set solve, {(label, method): seconds}."""
    rng = random.Random(seed)
    cases = {'table2-A': (thesis_types('A'), 2_000_000),
             'table2-B': (thesis_types('B'), 2_000_000),
             'random-12': (vm_types(
                 VMType('t%02d' % i, round(rng.uniform(0.05, 5), 3),
                        rng.randint(100, 50000)) for i in range(12)),
                 1_000_000)}
    out = {}
    for label, (types, top) in cases.items():
        cat = _Catalog(types)
        needs = [rng.randint(1, top) for _ in range(samples)]
        for method in METHODS:
            t0 = time.perf_counter()
            for need in needs:
                optimal_set(cat, need, method=method)
            out[label, method] = (time.perf_counter() - t0) / samples
    return out


if __name__ == '__main__':  # pragma: no cover
    for (label, method), sec in sorted(_measure().items()):
        print('%-10s %-5s %8.3f ms' % (label, method, sec * 1e3))
