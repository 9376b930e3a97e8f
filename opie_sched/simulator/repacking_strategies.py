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
"""The autoscaling strategies of thesis Paper V, section 4 (Table 1).

Sedaghat, Hernandez-Rodriguez, Elmroth, *A Virtual Machine Re-packing
Approach to the Horizontal vs. Vertical Elasticity Trade-off for Cloud
Autoscaling*, CAC'13 (thesis Paper V): S_base, S_delta, S_Full,
S_base_Repacked and S_delta_Repacked run over a demand series, one step of
the simulator's shared clock (:mod:`opie_sched.simcore`) per value,
their per-step sets, prices, reconfiguration costs and unmet demand
recorded in a :class:`~opie_sched.simcore.metrics.Series`. The
decisions are the planner's (:mod:`opie_sched.flavormix`: the exact
optimal set, the gain test, the Merkat budget cap), in exact arithmetic;
costs are currency, times hours. Used by the ``repacking-tables`` and
``repacking-tables45`` scenarios and ``opie-sched repack simulate``.
"""

import abc
import dataclasses
import fractions
import math

from opie_sched.flavormix.gain import _decide
from opie_sched.flavormix.solver import _cover
from opie_sched.flavormix.solver import _max_capacity
from opie_sched.flavormix.solver import DEFAULT_METHOD
from opie_sched.flavormix.solver import METHODS
from opie_sched.flavormix.vmtypes import _Catalog
from opie_sched.flavormix.vmtypes import _exact
from opie_sched.flavormix.vmtypes import RepackingError
from opie_sched.simcore import clock as clock_mod
from opie_sched.simcore import metrics

Fraction = fractions.Fraction

__all__ = ['Simulation', 'Strategy', 'SBase', 'SBaseRepacked',
           'SBaseRepackedSingle', 'SDelta', 'SDeltaRepacked', 'SFull',
           'STRATEGIES', 'make_strategy']


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
        """Simulate over ``demand`` (sequence of numbers >= 0), one step of
        the shared core's :class:`~opie_sched.simcore.clock.StepClock`
        per value, the per-step numbers recorded in a
        :class:`~opie_sched.simcore.metrics.Series`.

        :param step_hours: length of one step, hours, > 0.
        :returns: :class:`Simulation`.
        :raises RepackingError: bad demand or step.
        """
        dt = _exact(step_hours, 'step length', positive=True)
        if isinstance(demand, (str, bytes)):
            raise RepackingError('demand must be a sequence of numbers')
        loads = [_exact(x, 'demand[%d]' % t) for t, x in enumerate(demand)]
        clock = clock_mod.StepClock(dt, start=Fraction(0))
        series = metrics.Series(('set', 'price', 'reconfig_cost', 'unmet'))
        prev = [0] * self._m
        res_total, r_total, n_reconf = Fraction(0), Fraction(0), 0
        for load in loads:
            vec, R, reconf = self.step(load, prev)
            if self.rate is not None and self.cat.price_of(vec) > self.rate:
                vec = _max_capacity(self.cat, self.rate, vec)
            price = self.cat.price_of(vec)
            res_total += price * clock.step
            r_total += R
            n_reconf += bool(reconf)
            series.append((self.cat.counts(vec), float(price), float(R),
                           float(max(Fraction(0),
                                     load - self.cat.cap_of(vec)))))
            prev = vec
            clock.tick()
        return Simulation(
            strategy=self.name, step_hours=float(dt),
            demand=[float(x) for x in loads], sets=series.column('set'),
            prices=series.column('price'),
            reconfig_costs=series.column('reconfig_cost'),
            unmet=series.column('unmet'), reconfigurations=n_reconf,
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


class SBaseRepackedSingle(Strategy):
    """S_base_Repacked with one instance type (Paper V, end of §6.2).

    "We also studied the case when an application owner wants to use only
    one instance type. In this case a new *base instance* is used for
    repacking instead of repacking to optimal [...] the entire resource
    set should be replaced with the new resource set that only uses the
    new *base instance*." Each step: S_base's step (add base instances for
    the shortfall, or drop surplus ones); then Algorithm 1 with ``S_hat``
    the cheapest *homogeneous* set covering the total load (``ceil(load /
    c_i)`` servers of the one type ``i`` of least price, ties towards the
    current base, then the smaller index): switch iff ``P_hat < P`` and
    ``1 - (P_hat*d + R)/(P*d) > K``, paying ``R = C_extra * repacking
    time`` (by default the price of the whole new set, as every server is
    started). After a switch the new type is the base instance that later
    scale-outs add, so the set stays of one type (our reading: the thesis
    does not say which type later scale-outs add; "only one instance type"
    leaves no other). The base instance of the first step is the
    strategy's ``base``.
    """

    name = 'S_base_Repacked_single'

    def __init__(self, types, **kwargs):
        super().__init__(types, **kwargs)
        self._first_base = self.base

    def _homogeneous(self, load):
        """``(type index, vector)``: the cheapest one-type cover."""
        best = None
        for i in range(self._m):
            n = math.ceil(load / self.cat.cap[i])
            key = (n * self.cat.price[i], i != self.base, i)
            if best is None or key < best[0]:
                best = (key, i, n)
        vec = [0] * self._m
        vec[best[1]] = best[2]
        return best[1], vec

    def step(self, load, prev):
        vec = self._base_rule(load, prev)
        i, target = self._homogeneous(load)
        P, P_hat = self.cat.price_of(vec), self.cat.price_of(target)
        if P_hat >= P:
            return vec, Fraction(0), False
        R = self._cost_of(vec, target)
        ok, _, _ = _decide(P, P_hat, self.d, R, self.K)
        if not ok:
            return vec, Fraction(0), False
        self.base = i
        return target, R, True

    def run(self, demand, step_hours=1.0):
        """As :meth:`Strategy.run`, starting from the first base instance.
        """
        self.base = self._first_base
        return super().run(demand, step_hours)


#: Strategy classes by name (Paper V, Table 1, and the one-type repack of
#: §6.2).
STRATEGIES = {cls.name: cls for cls in (
    SBase, SBaseRepacked, SDelta, SDeltaRepacked, SFull,
    SBaseRepackedSingle)}


def make_strategy(name, types, **kwargs):
    """A strategy by name (case-insensitive), see :data:`STRATEGIES`.

    :raises RepackingError: unknown name or bad parameters.
    """
    for key, cls in STRATEGIES.items():
        if key.lower() == str(name).lower():
            return cls(types, **kwargs)
    raise RepackingError('unknown strategy %r (%s)' % (
        name, ', '.join(STRATEGIES)))
