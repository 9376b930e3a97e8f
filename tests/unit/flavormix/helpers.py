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
"""Oracles and problem builders shared by the flavormix unit tests."""

import fractions
import itertools
import math

from hypothesis import strategies as st

from opie_sched import flavormix as rp


F = fractions.Fraction

try:
    from scipy import optimize as _optimize
    HAVE_SCIPY = _optimize.milp is not None
except ImportError:  # pragma: no cover
    HAVE_SCIPY = False


# -- oracles ------------------------------------------------------------------

def brute_force(types, need, current=None, upper=None):
    """Every count vector, exact Fractions, the documented tie-break.

    The last type's count is the least that covers what the others leave
    (any more would cost more); every other count is enumerated.
    """
    types = sorted(types, key=lambda t: t.name)
    need = F(need)
    current = current or {}
    upper = upper or {}

    def top(t, rem):
        n = math.ceil(rem / F(t.capacity)) if rem > 0 else 0
        return min(n, upper[t.name]) if t.name in upper else n

    ranges = [range(top(t, need) + 1) for t in types[:-1]]
    last = types[-1]
    best = None
    for head in itertools.product(*ranges):
        rem = need - sum(n * F(t.capacity) for n, t in zip(head, types))
        vec = head + (top(last, rem),)
        cap = sum(n * F(t.capacity) for n, t in zip(vec, types))
        if cap < need:
            continue
        cost = sum(n * F(t.price) for n, t in zip(vec, types))
        starts = sum(max(0, n - current.get(t.name, 0))
                     for n, t in zip(vec, types))
        key = (cost, starts, sum(vec), cap, vec)
        if best is None or key < best[0]:
            best = (key, {t.name: n for n, t in zip(vec, types) if n})
    return None if best is None else best[1]


def dp_cost(types, need):
    """Min cost to cover an integer need with integer capacities (DP)."""
    caps = [int(t.capacity) for t in types]
    prices = [F(t.price) for t in types]
    den = math.lcm(*(p.denominator for p in prices))
    iprices = [int(p * den) for p in prices]
    cost = [0] * (need + 1)
    for x in range(1, need + 1):
        cost[x] = min(p + cost[max(0, x - c)]
                      for p, c in zip(iprices, caps))
    return F(cost[need], den)


def exact_price(types, counts):
    by = {t.name: t for t in types}
    return sum((n * F(by[k].price) for k, n in counts.items()), F(0))


def exact_cap(types, counts):
    by = {t.name: t for t in types}
    return sum((n * F(by[k].capacity) for k, n in counts.items()), F(0))


# -- strategies ---------------------------------------------------------------

PRICE = st.one_of(st.integers(1, 6),
                  st.sampled_from([0.1, 0.2, 0.3, 0.25, 0.7, 1.5, 2.0]))
CAPACITY = st.one_of(st.integers(1, 12), st.sampled_from([0.5, 1.5, 2.5]))


@st.composite
def instances(draw, max_types=4, max_need=30):
    n = draw(st.integers(1, max_types))
    names = draw(st.lists(st.text('abc', min_size=1, max_size=2),
                          min_size=n, max_size=n, unique=True))
    types = [rp.VMType(name, draw(PRICE), draw(CAPACITY)) for name in names]
    # Keep the brute force small: at most ~3000 vectors.
    sizes = sorted(F(t.capacity) for t in types)[:-1]
    while max_need > 1 and math.prod(max_need / c + 2 for c in sizes) > 3000:
        max_need -= 1
    need = draw(st.one_of(st.integers(0, max_need),
                          st.sampled_from([0.5, 3.7, 10.25])))
    current = {name: c for name in names
               for c in [draw(st.integers(0, 3))] if c}
    return types, need, current
