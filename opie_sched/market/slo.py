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
"""SLO controllers of the proportional-share spot market (pure code).

An application controller turns a performance signal (progress, time to
finish, queue length) and the market's prices into the bids and the
number of servers of its application. These classes hold only the rules
and their state; the autoscaler
(:mod:`opie_sched.services.autoscaler.policies`)
applies their decisions to real servers and to the market's API, and the
simulator (:mod:`opie_sched.simulator.themis`) to simulated jobs: the two
run the same code.

Sources:

* Themis -- S. V. Costache, N. Parlavantzas, C. Morin, S. Kortas,
  *Themis: Economy-Based Automatic Resource Scaling for Cloud Systems*,
  HPCC 2012: §III.A (budget renewal), Table I (bid_min, bid_max,
  T_diff, limit), Fig. 3 (Scale-One-VM lines 1-20, Scale-Multi-VMs
  lines 22-42), Fig. 4 (Vertical-Deadline lines 1-7,
  Horizontal-Deadline lines 9-13), §IV.A (start, postpone, suspend).
* Themis SLO policies -- S. V. Costache et al., *On the Use of a
  Proportional-Share Market for Application SLO Support in Clouds*
  (Euro-Par 2013): §3 Algorithm 1 (StartResume, Suspend), the four user
  types and their policies, Table 1 (utility functions).
* Merkat -- S. V. Costache et al., *Merkat: Market-based Autonomous
  Application and Resource Management in the Cloud*, INRIA RR-8343,
  2013: §3.2 Algorithm 1 (vertical scaling, CPU and memory), Algorithm 2
  (horizontal scaling), Algorithm 3 (VM upper bound, implemented once in
  :func:`opie_sched.flavormix.merkat_vm_upper_bound` and used here).

Units: a bid is currency per period of the caller's choosing (the market
API's bids are currency per hour; the simulator's, credits per scheduling
period); a price is currency per resource unit and period in the same
time unit; an allocation is in resource units (vCPU, MB, or a fraction of
a core). Every controller raises :class:`SLOError` on bad input and never
returns a bid outside ``[bid_min, bid_max]`` (when ``bid_min <=
bid_max``; otherwise ``bid_max``: what the budget allows wins).
"""

import math
import numbers

from opie_sched import flavormix

#: Themis Table I defaults.
T_DIFF = 0.05
LIMIT = 3


class SLOError(ValueError):
    """A controller input is invalid; the message names it."""


def _num(value, what, minimum=None, positive=False):
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not math.isfinite(value)):
        raise SLOError('%s must be a finite number, got %r' % (what, value))
    value = float(value)
    if positive and value <= 0:
        raise SLOError('%s must be > 0, got %r' % (what, value))
    if minimum is not None and value < minimum:
        raise SLOError('%s must be >= %g, got %r' % (what, minimum, value))
    return value


def _clamp(bid, bid_min, bid_max):
    """``bid`` within ``[bid_min, bid_max]``; ``bid_max`` wins a conflict.
    """
    return min(max(bid, bid_min), bid_max)


# -- budgets ------------------------------------------------------------------

def bid_max(remaining_budget, remaining_time):
    """The largest bid a controller may submit (Themis Table I).

    ``bid_max = Budget_remaining / time``: the remaining budget spread over
    the time it must last (Merkat Alg. 1 takes "the budget to be spent for
    the next time period", i.e. ``remaining_time`` = 1 period).

    :param remaining_budget: currency (>= 0; a negative balance is 0).
    :param remaining_time: periods (> 0).
    :returns: currency per period (float >= 0).
    :raises SLOError: not numbers, ``remaining_time <= 0``.
    """
    budget = _num(remaining_budget, 'remaining_budget')
    time_left = _num(remaining_time, 'remaining_time', positive=True)
    return max(0.0, budget) / time_left


class Budget(object):
    """An application's renewable account (Themis §III.A).

    The user transfers an initial budget and a renewal rate; each period
    the account is replenished at that rate, but "the accumulated budget
    cannot exceed the initial amount given by the user".

    :param initial: currency (>= 0), also the ceiling.
    :param renewal: currency per period (>= 0).
    """

    def __init__(self, initial, renewal=0.0):
        self.initial = _num(initial, 'initial budget', minimum=0)
        self.renewal = _num(renewal, 'renewal rate', minimum=0)
        self.balance = self.initial
        self.spent = 0.0

    def renew(self, periods=1.0):
        """Add ``renewal * periods``, capped at the initial amount."""
        periods = _num(periods, 'periods', minimum=0)
        self.balance = min(self.initial,
                           self.balance + self.renewal * periods)
        return self.balance

    def charge(self, amount):
        """Take ``amount`` (currency >= 0) from the balance; it may go
        negative only by what rounding leaves.
        """
        amount = _num(amount, 'amount', minimum=0)
        self.balance -= amount
        self.spent += amount
        return self.balance

    def bid_max(self, periods=1.0):
        """:func:`bid_max` of the current balance over ``periods``."""
        return bid_max(self.balance, periods)


# -- Themis HPCC'12 Fig. 3, lines 1-20 ----------------------------------------

class ScaleOneVM(object):
    """Themis Fig. 3 Scale-One-VM: the vertical scaling rule.

    Raise the bid while the performance metric ``v`` (higher is better,
    e.g. progress per period) is below the reference ``v_ref``, lower it
    while above. The change is proportional to the gap ``T = |(v_ref -
    v) / v_ref|`` (factor ``1 + T``), aggressive (factor 2) once the same
    direction has held ``limit`` periods or ``T >= 2``; no change inside
    the dead band ``T < T_diff`` (Table I: 0.05, limit 3). The bid stays in
    ``[bid_min, bid_max]``.
    """

    def __init__(self, t_diff=T_DIFF, limit=LIMIT):
        self.t_diff = _num(t_diff, 't_diff', minimum=0)
        self.limit = _num(limit, 'limit', minimum=1)
        self.direction = 0
        self.step = 1

    def __call__(self, bid, v, v_ref, bid_min, bid_max):
        """The next bid (currency per period).

        :raises SLOError: non-numbers, negative bids or limits.
        """
        bid = _num(bid, 'bid', minimum=0)
        v = _num(v, 'v')
        v_ref = _num(v_ref, 'v_ref')
        bid_min = _num(bid_min, 'bid_min', minimum=0)
        bid_max = _num(bid_max, 'bid_max', minimum=0)
        if v < v_ref and self.direction != 1:
            self.direction, self.step = 1, 1
        if v > v_ref and self.direction != -1:
            self.direction, self.step = -1, 1
        self.step += 1
        gap = abs((v_ref - v) / v_ref) if v_ref else (0.0 if v == v_ref
                                                      else math.inf)
        if gap < self.t_diff:
            return _clamp(bid, bid_min, bid_max)
        factor = 1 + gap if (self.step < self.limit and gap < 2) else 2.0
        if self.direction > 0:
            return _clamp(min(factor * max(bid, bid_min), bid_max),
                          bid_min, bid_max)
        return _clamp(max(bid / factor, bid_min), bid_min, bid_max)


# -- Themis HPCC'12 Fig. 4, lines 1-7 -----------------------------------------

def reference_progress(length_left, time_left):
    """Themis Fig. 4 line 3: ``p_ref = (length_total - length_current) /
    (deadline - now)``: the progress per unit time the deadline needs.

    :param length_left: remaining computation (e.g. core-seconds, >= 0).
    :param time_left: time to the deadline (same time unit); <= 0 gives
        ``inf`` when work is left (the deadline cannot be met).
    """
    length_left = _num(length_left, 'length_left', minimum=0)
    time_left = _num(time_left, 'time_left')
    if length_left == 0:
        return 0.0
    if time_left <= 0:
        return math.inf
    return length_left / time_left


class VerticalDeadline(object):
    """Themis Fig. 4 Vertical-Deadline: a rigid application's bid.

    With ``p_est`` the predicted progress and ``p_ref`` the progress the
    deadline needs (:func:`reference_progress`): when the estimated
    allocation already exceeds the most the application can use
    (``alloc_est > alloc_ref``, compared with a relative tolerance
    ``tolerance`` because a work-conserving market caps the allocation at
    exactly ``alloc_ref``), halve the bid ("to avoid spending credits with
    no benefit", never below bid_min); else apply :class:`ScaleOneVM` to
    ``(p_est, p_ref)``.
    """

    def __init__(self, t_diff=T_DIFF, limit=LIMIT, tolerance=1e-9):
        self.scale = ScaleOneVM(t_diff, limit)
        self.tolerance = _num(tolerance, 'tolerance', minimum=0)

    def __call__(self, bid, p_est, p_ref, alloc_est, alloc_ref, bid_min,
                 bid_max):
        """The next bid (currency per period)."""
        alloc_est = _num(alloc_est, 'alloc_est', minimum=0)
        alloc_ref = _num(alloc_ref, 'alloc_ref', positive=True)
        if alloc_est >= alloc_ref * (1 - self.tolerance):
            return _clamp(max(_num(bid, 'bid', minimum=0) / 2,
                              _num(bid_min, 'bid_min', minimum=0)),
                          bid_min, _num(bid_max, 'bid_max', minimum=0))
        if p_ref == math.inf:
            p_ref = max(alloc_ref, p_est) * 2 + 1
        return self.scale(bid, p_est, p_ref, bid_min, bid_max)


# -- Themis SLO-policies paper Alg. 1 -----------------------------------------

def initial_bid(price, allocation, bid_min=0.0):
    """SLO paper Alg. 1 line 2 ("compute initial payment"), per VM and
    resource: the bid that buys ``allocation`` units at ``price`` per
    unit, never below ``bid_min``.
    """
    price = _num(price, 'price', minimum=0)
    allocation = _num(allocation, 'allocation', minimum=0)
    return max(_num(bid_min, 'bid_min', minimum=0), price * allocation)


def can_start(bids, bid_max):
    """SLO paper Alg. 1 StartResume, line 4: start (or resume) when the
    initial payment of the application, the sum of ``bids`` (one per VM
    and resource), is within ``bid_max``.

    The paper writes ``<``; paying exactly the budget is allowed here (as
    :func:`opie_sched.flavormix.merkat_vm_upper_bound` does).
    """
    total = sum(_num(b, 'bid', minimum=0) for b in bids)
    return total <= _num(bid_max, 'bid_max', minimum=0) + 1e-12


def postpone_time(time_to_deadline, ideal_left, fraction=0.5, minimum=0.0):
    """Themis §IV.A: how long to postpone a start the price does not allow.

    "a part of the time that remains between the deadline and the ideal
    application execution time": ``fraction * (time_to_deadline -
    ideal_left)``, at least ``minimum``. None when that slack is gone (the
    controller aborts the application).
    """
    slack = (_num(time_to_deadline, 'time_to_deadline')
             - _num(ideal_left, 'ideal_left', minimum=0))
    if slack < 0:
        return None
    return max(_num(minimum, 'minimum', minimum=0),
               _num(fraction, 'fraction', minimum=0) * slack)


class Suspend(object):
    """SLO paper Alg. 1 Suspend (and Themis §IV.A's suspend rule).

    An application whose performance falls short (``short``: value below
    its reference, or an allocation below its minimum) while it already
    bids all it can afford (``at_bid_max``) suspends, but only after
    ``max_iterations`` consecutive such periods, "to avoid cases in which
    all applications would suspend at the same time". Any other period
    resets the count.
    """

    def __init__(self, max_iterations=3):
        if isinstance(max_iterations, bool) or not isinstance(
                max_iterations, int) or max_iterations < 0:
            raise SLOError('max_iterations must be an integer >= 0, got %r'
                           % (max_iterations,))
        self.max_iterations = max_iterations
        self.iterations = 0

    def __call__(self, short, at_bid_max):
        """True when the application should suspend now."""
        if short and at_bid_max:
            if self.iterations < self.max_iterations:
                self.iterations += 1
                return False
            return True
        self.iterations = 0
        return False


# -- Themis HPCC'12 Fig. 3, lines 22-42 ---------------------------------------

class ScaleMultiVMs(object):
    """Themis Fig. 3 Scale-Multi-VMs: the horizontal scaling rule.

    Direction up when ``v < v_low``, down when ``v > v_high`` (``v``
    higher is better); a new direction restarts ``step`` and ``factor``
    at 1. Each decision adds 1 to ``factor`` for the first ``limit``
    steps of a direction and doubles it after (additive, then
    aggressive). The per-VM bid is ``alloc_ref * P`` (line 36: enough for
    the most useful allocation at the current price) and the number of
    VMs stays in ``[1, nvms_max]`` with ``nvms_max = min(floor(bid_max /
    bid), T_nvms)`` (line 37). Inside ``[v_low, v_high]`` the number is
    kept ("increases ... below a given lower limit and decreases ... above
    an upper limit", §III.C; the figure's lines leave this case implicit).
    """

    def __init__(self, limit=LIMIT):
        self.limit = _num(limit, 'limit', minimum=1)
        self.direction = 0
        self.step = 1
        self.factor = 1

    def __call__(self, v, v_low, v_high, nvms, alloc_ref, price, bid_max,
                 t_nvms):
        """``(bid per VM, nvms)`` for the next period.

        :param nvms: current number of VMs (int >= 0).
        :param alloc_ref: most useful allocation per VM (> 0).
        :param price: current price per unit (>= 0).
        :param bid_max: the application's budget per period (all VMs).
        :param t_nvms: the provider's limit of VMs (int >= 1).
        :raises SLOError: bad input, ``v_low > v_high``.
        """
        v = _num(v, 'v')
        v_low, v_high = _num(v_low, 'v_low'), _num(v_high, 'v_high')
        if v_low > v_high:
            raise SLOError('v_low %g > v_high %g' % (v_low, v_high))
        nvms = _count(nvms, 'nvms')
        t_nvms = _count(t_nvms, 't_nvms', 1)
        bid = _num(alloc_ref, 'alloc_ref', positive=True) * _num(
            price, 'price', minimum=0)
        bid_max = _num(bid_max, 'bid_max', minimum=0)
        nvms_max = t_nvms if bid <= 0 else min(int(bid_max // bid), t_nvms)
        if v < v_low and self.direction != 1:
            self.direction, self.step, self.factor = 1, 1, 1
        elif v > v_high and self.direction != -1:
            self.direction, self.step, self.factor = -1, 1, 1
        if v_low <= v <= v_high:
            return bid, max(0, min(nvms, nvms_max))
        self.step += 1
        if self.step < self.limit:
            self.factor += 1
        else:
            self.factor *= 2
        if self.direction > 0:
            nvms = min(nvms + self.factor, nvms_max)
        else:
            nvms = max(nvms - self.factor, 1)
            nvms = min(nvms, max(nvms_max, 0))
        return bid, max(0, nvms)


def _count(value, what, minimum=0):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
            or value < minimum:
        raise SLOError('%s must be an integer >= %d, got %r'
                       % (what, minimum, value))
    return int(value)


def estimated_execution_time(ntasks, t_avg, t_max, nvms):
    """Themis Fig. 4 line 11 (the bound of Verma et al., ARIA):
    ``ceil((ntasks - 1) * T_avg / nvms) + T_max``.

    :param ntasks: remaining tasks (>= 0); 0 gives 0.
    :param t_avg: average task time; ``t_max`` the longest (same unit).
    :param nvms: workers (>= 1).
    """
    ntasks = _count(ntasks, 'ntasks')
    if ntasks == 0:
        return 0.0
    nvms = _count(nvms, 'nvms', 1)
    return (math.ceil((ntasks - 1) * _num(t_avg, 't_avg', minimum=0)
                      / nvms) + _num(t_max, 't_max', minimum=0))


class HorizontalDeadline(object):
    """Themis Fig. 4 Horizontal-Deadline: workers for a deadline.

    The estimated execution time (:func:`estimated_execution_time`) is
    compared with the time left to the deadline: "if the estimated
    execution time is greater than the remaining time to deadline the
    application controller provisions more virtual machines, and
    otherwise releases them" (§IV.A). The metric given to
    :class:`ScaleMultiVMs` is ``v = time_left / execution_time`` (higher
    is better) with thresholds ``v_low = 1`` and ``v_high = headroom``
    (>= 1; 1 is the paper's single threshold).
    """

    def __init__(self, headroom=1.0, limit=LIMIT):
        self.headroom = _num(headroom, 'headroom', minimum=1)
        self.scale = ScaleMultiVMs(limit)

    def __call__(self, ntasks, t_avg, t_max, time_left, nvms, alloc_ref,
                 price, bid_max, t_nvms):
        """``(bid per VM, nvms)``, see :class:`ScaleMultiVMs`."""
        est = estimated_execution_time(ntasks, t_avg, t_max, max(nvms, 1))
        time_left = _num(time_left, 'time_left')
        if est <= 0:
            v = math.inf
        else:
            v = max(time_left, 0.0) / est
        return self.scale(min(v, 1e12), 1.0, self.headroom, nvms, alloc_ref,
                          price, bid_max, t_nvms)


# -- Merkat Algorithm 1 -------------------------------------------------------

class MerkatVertical(object):
    """Merkat §3.2 Algorithm 1: per-resource bids for a target performance.

    ``v`` is a cost-like metric (e.g. the iteration time, or the time the
    application still needs), ``v_ref`` its reference (e.g. the time left
    to the deadline over the iterations left); ``v_low < v_high`` bound a
    dead band (e.g. 75 % and 100 % of ``v_ref``). For each resource ``r``:

    * decrease (budget is preserved) when ``v < v_low`` and the allocation
      is above its minimum, or when the share exceeds the maximum useful
      allocation (line 9; compared with a relative ``tolerance``, as in
      :class:`VerticalDeadline`: a work-conserving market caps the share
      at exactly ``alloc_max``, so a strict ``>`` could never fire);
    * increase when ``v > v_high`` and the allocation is below its
      maximum, or when the allocation is below its minimum (line 14);
    * the factor is ``max(2, 1 + T)`` with ``T = |(v_ref - v) / v|``, and
      ``max(2, (1 + T) / 2)`` when the change reverses the previous one
      (damping, lines 10-11 and 15-16; ``history`` is the last change);
    * a decrease never goes below ``bid_min``;
    * when the bids add up to more than ``bid_max`` (lines 19-25): a
      resource already at its maximum allocation keeps its bid and the
      other gets the rest; otherwise ``bid_max`` is split in proportion to
      the weights ``w_r = 1 - alloc_r / alloc_max_r`` ("a proportional-share
      policy, where the resource weight is the difference between the
      actual and maximum allocation"; line 25 prints ``bid_max / w[r]``,
      which would exceed ``bid_max``: we follow the text).
    """

    def __init__(self, tolerance=1e-9):
        self.history = {}
        self.tolerance = _num(tolerance, 'tolerance', minimum=0)

    def __call__(self, bids, alloc, alloc_min, alloc_max, v, v_ref, v_low,
                 v_high, bid_min, bid_max, share=None):
        """The next bids ``{resource: bid}`` (currency per period).

        :param bids: current ``{resource: bid}``.
        :param alloc: current allocation ``{resource: units}``; ``alloc_min``
            and ``alloc_max`` the same keys.
        :param share: ``{resource: units}`` the market entitles the VM to
            (default ``alloc``).
        :raises SLOError: mismatched keys, bad numbers, ``v_low > v_high``.
        """
        keys = set(bids)
        for what, d in (('alloc', alloc), ('alloc_min', alloc_min),
                        ('alloc_max', alloc_max)):
            if not isinstance(d, dict) or set(d) != keys:
                raise SLOError('%s must name the resources %s' % (
                    what, ', '.join(sorted(keys))))
        share = alloc if share is None else share
        if set(share) != keys:
            raise SLOError('share must name the resources %s'
                           % ', '.join(sorted(keys)))
        v, v_ref = _num(v, 'v'), _num(v_ref, 'v_ref')
        v_low, v_high = _num(v_low, 'v_low'), _num(v_high, 'v_high')
        if v_low > v_high:
            raise SLOError('v_low %g > v_high %g' % (v_low, v_high))
        bid_min = _num(bid_min, 'bid_min', minimum=0)
        bid_max = _num(bid_max, 'bid_max', minimum=0)
        gap = abs((v_ref - v) / v) if v else math.inf
        direction = -1 if v > v_high else (1 if v < v_low else 0)
        new = {}
        for r in sorted(keys):
            bid = _num(bids[r], 'bid of %s' % r, minimum=0)
            a = _num(alloc[r], 'alloc of %s' % r, minimum=0)
            lo = _num(alloc_min[r], 'alloc_min of %s' % r, minimum=0)
            hi = _num(alloc_max[r], 'alloc_max of %s' % r, positive=True)
            s = _num(share[r], 'share of %s' % r, minimum=0)
            hist = self.history.get(r, 0.0)
            out = bid
            if (direction > 0 and a > lo) or s >= hi * (1 - self.tolerance):
                factor = (max(2.0, (1 + gap) / 2) if hist < 0
                          else max(2.0, 1 + gap))
                out = max(bid / factor, bid_min)
            elif (direction < 0 and a < hi) or a < lo:
                factor = (max(2.0, (1 + gap) / 2) if hist > 0
                          else max(2.0, 1 + gap))
                out = max(bid, bid_min) * factor
            new[r] = out
        if sum(new.values()) > bid_max:
            full = [r for r in sorted(keys) if alloc[r] >= alloc_max[r]]
            if full and len(keys) > 1:
                r = full[0]
                new[r] = min(new[r], bid_max)
                rest = [k for k in sorted(keys) if k != r]
                left = max(0.0, bid_max - new[r])
                for k in rest:
                    new[k] = left / len(rest)
            else:
                w = {r: max(0.0, 1 - alloc[r] / alloc_max[r])
                     for r in keys}
                total = sum(w.values())
                if total <= 0:
                    w, total = dict.fromkeys(keys, 1.0), float(len(keys))
                new = {r: bid_max * w[r] / total for r in keys}
        for r in keys:
            self.history[r] = float(bids[r]) - new[r]
        return {r: new[r] for r in sorted(keys)}


# -- Merkat Algorithms 2 and 3 ------------------------------------------------

class MerkatHorizontal(object):
    """Merkat §3.2 Algorithm 2 with Algorithm 3's bound.

    ``v`` is a cost-like metric (e.g. queued tasks, total wait time):
    above ``v_high`` one VM is added, below ``v_low`` one released
    (lines 1-10). Then the most VMs whose maximum allocation the budget
    buys at the current prices, Algorithm 3
    (:func:`opie_sched.flavormix.merkat_vm_upper_bound`), caps the number
    (lines 11-15). Never fewer than ``nvms_min``.
    """

    def __init__(self, nvms_min=1):
        self.nvms_min = _count(nvms_min, 'nvms_min')

    def __call__(self, v, v_low, v_high, nvms, prices, alloc_max, capacity,
                 bid_max, nvms_max):
        """``(nvms, {resource: bid per VM})`` for the next period.

        :param prices: ``{resource: price per unit}`` now.
        :param alloc_max: ``{resource: units}`` per VM.
        :param capacity: ``{resource: units}`` of the market.
        :param bid_max: budget for the next period (all VMs).
        :raises SLOError: bad input (also Algorithm 3's errors).
        """
        v = _num(v, 'v')
        v_low, v_high = _num(v_low, 'v_low'), _num(v_high, 'v_high')
        if v_low > v_high:
            raise SLOError('v_low %g > v_high %g' % (v_low, v_high))
        nvms = _count(nvms, 'nvms')
        nvms_max = _count(nvms_max, 'nvms_max')
        if v > v_high:
            nvms += 1
        elif v < v_low:
            nvms -= 1
        nvms = max(self.nvms_min, min(nvms, nvms_max))
        try:
            bound, total = flavormix.merkat_vm_upper_bound(
                _num(bid_max, 'bid_max', minimum=0), prices, alloc_max,
                capacity, nvms_max)
        except flavormix.RepackingError as exc:
            raise SLOError(str(exc))
        nvms = max(self.nvms_min, min(nvms, bound))
        n = max(bound, 1)
        per_vm = {r: b / n for r, b in total.items()}
        if bound == 0:
            # Not even one VM gets its maximum allocation: what each of the
            # kept VMs can bid within the budget, split like Alg. 3's.
            weights = {r: float(prices[r]) * float(alloc_max[r])
                       for r in prices}
            wsum = sum(weights.values()) or 1.0
            share = float(bid_max) / max(nvms, 1)
            per_vm = {r: share * weights[r] / wsum for r in prices}
        return nvms, per_vm
