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
"""Claims of a paper judged on values over seeds, by one set of rules.

Every reproduction that judges a paper's claim does it here (issue 34),
so that "holds" means the same thing on every scenario page.

A :class:`Claim` is what the paper says about one quantity ``x`` (a
difference between two arms, a ratio, a count), measured once per seed.
Ours is the mean of ``x`` over the seeds with a two-sided 95 % Student-t
interval (:func:`estimate`; the seeds are independent runs, the
interval is over them, not over anything inside one run).

The rules (:func:`judge`), written once:

``direction`` (the paper says ``x > reference``, or ``x < reference``
    with ``sign = -1``; a difference claim has reference 0, a bound such
    as "market/EDF >= 0.75" has reference 0.75):

    * **holds** when the interval excludes the reference on the paper's
      side;
    * **fails** when it excludes the reference on the other side;
    * **undecided** when the interval contains the reference (including
      every seed giving exactly the reference, and fewer than 2 seeds).

``magnitude`` (the paper gives a value ``target`` and the claim a
    stated ``band = (low, high)`` around it, e.g. :func:`relative_band`):

    * **holds** when the mean lies in the band;
    * **fails** when the whole interval lies outside the band;
    * **undecided** otherwise (the mean outside, the interval reaching
      into the band), and with fewer than 2 seeds.

Effect size (:attr:`Verdict.effect`, its kind in
:attr:`Verdict.effect_kind`):

* a direction claim given the baseline arm's values (``baseline``):
  the relative difference of the means, ``mean(x) / |mean(baseline)|``
  (``x`` being the per-seed difference arm − baseline);
* a direction claim without one: Cohen's d against the reference,
  ``(mean(x) - reference) / sd(x)`` (one-sample, sd over seeds; None
  when every seed gives the same value);
* a magnitude claim: ours relative to the paper's value,
  ``(mean(x) - target) / |target|``.

Each claim is counted once: :func:`tally` refuses two verdicts with the
same ``(scenario, name)``.
"""

import collections
import dataclasses
import math

import numpy as np
from scipy import stats

from opie_sched.simulator import tables

DIRECTION, MAGNITUDE = 'direction', 'magnitude'
HOLDS, FAILS, UNDECIDED = 'holds', 'fails', 'undecided'
VERDICTS = (HOLDS, FAILS, UNDECIDED)
#: The confidence level of every interval.
CONFIDENCE = 0.95
#: The band of a magnitude claim when the paper states none: within
#: 20 % of the paper's value (fixed for every scenario before judging).
DEFAULT_RELATIVE_BAND = 0.20


class ClaimError(ValueError):
    """A malformed claim or the same claim judged twice."""


def relative_band(target, fraction=DEFAULT_RELATIVE_BAND):
    """``(low, high)`` = ``target`` ± ``fraction`` × ``|target|``."""
    half = abs(float(target)) * fraction
    return float(target) - half, float(target) + half


@dataclasses.dataclass(frozen=True)
class Claim:
    """One claim of a paper about one measured quantity.

    :param scenario: the scenario's name (``diehard-table2``).
    :param name: the claim, unique within the scenario.
    :param paper: the paper's value or direction as it prints it.
    :param source: where the paper says it (section, table, figure).
    :param kind: :data:`DIRECTION` or :data:`MAGNITUDE`.
    :param sign: direction: +1 the paper says ``x > reference``, -1
        ``x < reference``.
    :param reference: direction: the value ``x`` is compared with.
    :param target: magnitude: the paper's value.
    :param band: magnitude: ``(low, high)``, the stated band.
    :param unit: printed after our numbers (``'%'``, ``''``).
    :raises ClaimError: an unknown kind, a sign not +-1, a magnitude
        claim without target or with an empty band.
    """

    scenario: str
    name: str
    paper: str
    source: str
    kind: str = DIRECTION
    sign: int = 1
    reference: float = 0.0
    target: float = None
    band: tuple = None
    unit: str = ''

    def __post_init__(self):
        if self.kind not in (DIRECTION, MAGNITUDE):
            raise ClaimError('claim %r: unknown kind %r' % (self.name,
                                                           self.kind))
        if self.kind == DIRECTION and self.sign not in (1, -1):
            raise ClaimError('claim %r: sign must be +1 or -1, got %r'
                             % (self.name, self.sign))
        if self.kind == MAGNITUDE:
            if self.target is None:
                raise ClaimError('claim %r: a magnitude claim needs the '
                                 "paper's value" % self.name)
            band = self.band or relative_band(self.target)
            if not band[0] <= band[1]:
                raise ClaimError('claim %r: empty band %r' % (self.name,
                                                              band))
            object.__setattr__(self, 'band', (float(band[0]),
                                              float(band[1])))


@dataclasses.dataclass(frozen=True)
class Estimate:
    """Mean of ``n`` per-seed values with its interval (``low``,
    ``high``; both None below 2 values) and standard deviation ``sd``.
    """

    n: int
    mean: float
    low: float
    high: float
    sd: float


def estimate(values, confidence=CONFIDENCE):
    """Mean and two-sided Student-t interval over seeds.

    :param values: one number per seed (at least one).
    :returns: :class:`Estimate`; with one value, no interval.
    :raises ClaimError: no value, or a value that is not finite.
    """
    x = np.asarray(list(values), dtype=float)
    if x.size == 0:
        raise ClaimError('no value to estimate')
    if not np.all(np.isfinite(x)):
        raise ClaimError('values must be finite, got %r' % (x.tolist(),))
    mean = float(x.mean())
    if x.size < 2:
        return Estimate(1, mean, None, None, None)
    sd = float(x.std(ddof=1))
    half = float(stats.t.ppf(0.5 + confidence / 2, x.size - 1)) * sd \
        / math.sqrt(x.size)
    return Estimate(int(x.size), mean, mean - half, mean + half, sd)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """A claim judged: ``verdict`` one of :data:`VERDICTS`, ``reason``
    one line saying which rule decided.
    """

    claim: Claim
    estimate: Estimate
    verdict: str
    reason: str
    effect: float = None
    effect_kind: str = ''
    values: tuple = ()

    def as_dict(self):
        e = self.estimate
        return {'scenario': self.claim.scenario, 'claim': self.claim.name,
                'paper': self.claim.paper, 'source': self.claim.source,
                'kind': self.claim.kind, 'n': e.n, 'mean': e.mean,
                'ci_low': e.low, 'ci_high': e.high, 'sd': e.sd,
                'effect': self.effect, 'effect_kind': self.effect_kind,
                'verdict': self.verdict, 'reason': self.reason,
                'band': list(self.claim.band) if self.claim.band else None,
                'reference': self.claim.reference,
                'values': list(self.values)}


def _direction(claim, e):
    ref = claim.reference
    if e.low is None:
        return UNDECIDED, 'fewer than 2 seeds: no interval'
    side = '>' if claim.sign > 0 else '<'
    if e.low > ref if claim.sign > 0 else e.high < ref:
        return HOLDS, 'interval excludes %g, on the paper\'s side (%s)' % (
            ref, side)
    if e.high < ref if claim.sign > 0 else e.low > ref:
        return FAILS, 'interval excludes %g, on the other side' % ref
    return UNDECIDED, 'interval contains %g' % ref


def _magnitude(claim, e):
    low, high = claim.band
    if low <= e.mean <= high:
        return HOLDS, 'mean within the band %g..%g' % (low, high)
    if e.low is None:
        return UNDECIDED, 'fewer than 2 seeds: no interval'
    if e.high < low or e.low > high:
        return FAILS, 'interval outside the band %g..%g' % (low, high)
    return UNDECIDED, 'mean outside the band %g..%g, interval reaches it' \
        % (low, high)


def judge(claim, values, baseline=None):
    """Judge ``claim`` on ``values`` (one per seed) by the module's rules.

    :param baseline: optional, direction claims on a difference: the
        baseline arm's values (same seeds), for the relative effect.
    :returns: :class:`Verdict`.
    :raises ClaimError: see :func:`estimate`.

    A baseline whose mean is 0 gives no relative effect (None).
    """
    values = [float(v) for v in values]
    e = estimate(values)
    if claim.kind == DIRECTION:
        verdict, reason = _direction(claim, e)
        if baseline is not None:
            base = float(np.mean(list(baseline)))
            effect = e.mean / abs(base) if base else None
            kind = 'rel. diff'
        elif e.sd:
            effect, kind = (e.mean - claim.reference) / e.sd, 'Cohen d'
        else:
            effect, kind = None, 'Cohen d'
    else:
        verdict, reason = _magnitude(claim, e)
        effect, kind = None, 'vs paper'
        if claim.target:
            effect = (e.mean - claim.target) / abs(claim.target)
    return Verdict(claim, e, verdict, reason, effect, kind, tuple(values))


def tally(verdicts):
    """``{scenario: {'holds': n, 'fails': n, 'undecided': n}}``.

    :raises ClaimError: a claim judged twice (same scenario and name).
    """
    seen = set()
    out = collections.OrderedDict()
    for v in verdicts:
        key = (v.claim.scenario, v.claim.name)
        if key in seen:
            raise ClaimError('claim %r of %s counted twice' % key[::-1])
        seen.add(key)
        counts = out.setdefault(v.claim.scenario,
                                collections.OrderedDict(
                                    (k, 0) for k in VERDICTS))
        counts[v.verdict] += 1
    return out


def _num(x, unit=''):
    if x is None:
        return '-'
    a = abs(x)
    if a and (a >= 1e5 or a < 1e-3):
        text = '%.3g' % x
    elif a >= 100:
        text = '%.0f' % x
    elif a >= 10:
        text = '%.1f' % x
    elif a >= 1:
        text = '%.2f' % x
    else:
        text = '%.4f' % x
    return text + unit


def interval_text(e, unit=''):
    """``mean [low, high]`` (or just the mean with one seed)."""
    if e.low is None:
        return '%s (1 seed)' % _num(e.mean, unit)
    return '%s [%s, %s]' % (_num(e.mean, unit), _num(e.low),
                            _num(e.high))


def effect_text(v):
    if v.effect is None:
        return '%s n/a' % v.effect_kind
    if v.effect_kind == 'Cohen d':
        return 'd = %.2f' % v.effect
    return '%+.1f %% %s' % (100 * v.effect, v.effect_kind)


def claims_table(verdicts):
    """The per-claim table: claim, paper's value, ours with the 95 %
    interval, the effect's size, the verdict.
    """
    rows = []
    for v in verdicts:
        c = v.claim
        want = c.paper
        if c.kind == MAGNITUDE:
            want = '%s (band %s..%s)' % (c.paper, _num(c.band[0]),
                                         _num(c.band[1]))
        rows.append([c.name, want, interval_text(v.estimate, c.unit),
                     effect_text(v), v.verdict])
    return tables.text_table(['claim', 'paper', 'ours: mean [95 % CI]',
                              'effect size', 'verdict'], rows)


def tally_text(verdicts):
    """One line per scenario: ``NAME: h hold, f fail, u undecided (of
    n claims, each counted once)``.
    """
    lines = []
    for scenario, c in tally(verdicts).items():
        lines.append('%s: %d hold, %d fail, %d undecided (of %d claims, '
                     'each counted once)' % (scenario, c[HOLDS], c[FAILS],
                                             c[UNDECIDED], sum(c.values())))
    return '\n'.join(lines)


RULES_TEXT = (
    'Verdicts (opie_sched.simulator.verdicts, the same rules on every '
    'scenario): ours = mean over seeds [95 % Student-t interval over '
    'seeds]. A direction claim holds when the interval excludes the '
    'reference on the paper\'s side, fails when it excludes it on the '
    'other side, is undecided when it contains it. A magnitude claim '
    'holds when the mean lies in the stated band (20 % of the paper\'s '
    'value unless the paper gives one), fails when the whole interval '
    'lies outside, is undecided otherwise. Effect size: relative '
    'difference of the means vs the baseline arm ("rel. diff"), '
    'Cohen\'s d against the reference for a bound, ours vs the paper\'s '
    'value ("vs paper") for a magnitude.')
