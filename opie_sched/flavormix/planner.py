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
"""One repacking decision for a running set (Paper V, Algorithm 1).

:func:`plan` combines the horizontal step (the running set plus the
optimal set for its shortfall), the optimal set for the total load
(:mod:`~opie_sched.flavormix.solver`), an optional budget cap
(:mod:`~opie_sched.flavormix.budget`, Merkat Alg. 2-3), the
make-before-break transition and the gain test
(:mod:`~opie_sched.flavormix.gain`).
"""

import dataclasses
import fractions

from opie_sched.flavormix.gain import _decide
from opie_sched.flavormix.gain import _reconfig
from opie_sched.flavormix.gain import transition
from opie_sched.flavormix.solver import _cover
from opie_sched.flavormix.solver import _max_capacity
from opie_sched.flavormix.solver import DEFAULT_METHOD
from opie_sched.flavormix.vmtypes import _Catalog
from opie_sched.flavormix.vmtypes import _exact
from opie_sched.flavormix.vmtypes import RepackingError

Fraction = fractions.Fraction


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
