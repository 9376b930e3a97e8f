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
"""Budget caps on a VM set: Merkat's horizontal scaling policy.

Merkat (Costache, Parlavantzas, Morin, Kortas), Algorithms 2-3: the
number of VMs an application's budget buys, at fixed prices
(:func:`affordable_servers`) and in a proportional-share market
(:func:`merkat_vm_upper_bound`, Alg. 3 on Merkat eq. 1); and the cap of
a heterogeneous set to a budget (:func:`cap_to_budget`,
:func:`budget_capped_set`). Prices are currency per hour.
"""

import fractions
import math
import numbers

from opie_sched.flavormix.solver import _max_capacity
from opie_sched.flavormix.solver import DEFAULT_METHOD
from opie_sched.flavormix.solver import optimal_set
from opie_sched.flavormix.vmtypes import _Catalog
from opie_sched.flavormix.vmtypes import _exact
from opie_sched.flavormix.vmtypes import RepackingError

Fraction = fractions.Fraction


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
