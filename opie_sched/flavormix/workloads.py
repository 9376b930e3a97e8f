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
"""Synthetic demand series of Paper V, section 5 (after Mao and Humphrey).

Paper V's four series (its Figure 1: 168, 182, 215 and 338 hours) are not
published as data; these generators follow the shapes its section 5
describes (Increasing, Seasonal, Stable, On-and-Off), so absolute costs
differ from its Tables 3-6. Loads are ints in capacity units, one per
step of ``step_minutes``.
"""

import math
import random

from opie_sched.flavormix.vmtypes import _exact
from opie_sched.flavormix.vmtypes import RepackingError


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


def increase(hours=168, step_minutes=5, start=2000, peak=80000, seed=0,
             noise=0.02):
    """An *Increasing* workload (Paper V, section 5).

    "Slow growth followed by small oscillations that become larger as the
    service becomes popular": a logistic trend from ``start`` to ``peak``
    (mid-point at 60% of the run), a daily cycle whose amplitude is 15% of
    the trend's growth, and ``noise`` (a fraction, default 2 %) Gaussian
    noise on every step.

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
        load = (trend + osc) * (1.0 + noise * rng.gauss(0.0, 1.0))
        out.append(max(0, int(round(load))))
    return out


def seasonal(hours=182, step_minutes=5, low=5000, high=60000, period=24.0,
             seed=0, noise=0.02):
    """A *Seasonal* (cycle/bursting) workload (Paper V, section 5).

    Load repeating with ``period`` hours: a smooth daily peak between
    ``low`` and ``high`` (each cycle's peak height varies +-10% at random),
    a weekly dip of 30% on two cycles out of seven, and ``noise`` (default
    2 %) Gaussian noise on every step.

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
        load *= 1.0 + noise * rng.gauss(0.0, 1.0)
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


#: Paper V's four series (§6.1: "two synthetic workloads of each type
#: ... different in volume and duration with 168, 182, 215 and 338 hours
#: length"): name -> (generator, parameters). The thesis does not say
#: which length is which series nor give the volumes: ours give Increase1
#: and Seasonal1 the first two lengths and our default volumes, Increase2
#: and Seasonal2 the other two and a third of the volume (its Table 3
#: costs them far below their first series). No per-step noise: the
#: shapes §5 describes are smooth (a daily cycle, a trend); 2 % noise on
#: every 5-minute step changes the demand, and with it the set, on every
#: step.
THESIS_SERIES = {
    'Increase1': ('increase', dict(hours=168, noise=0.0)),
    'Seasonal1': ('seasonal', dict(hours=182, noise=0.0)),
    'Increase2': ('increase', dict(hours=215, start=700, peak=26000,
                                   noise=0.0)),
    'Seasonal2': ('seasonal', dict(hours=338, low=1700, high=20000,
                                   noise=0.0)),
}


def thesis_series(name, seed=0, **overrides):
    """One of :data:`THESIS_SERIES` as ``(demand, step_hours)``;
    ``overrides`` replace its parameters (e.g. a shorter ``hours``).

    :raises RepackingError: unknown name or bad parameters.
    """
    if name not in THESIS_SERIES:
        raise RepackingError('unknown series %r (%s)' % (
            name, ', '.join(sorted(THESIS_SERIES))))
    kind, params = THESIS_SERIES[name]
    return workload(kind, seed=seed, **dict(params, **overrides))


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
