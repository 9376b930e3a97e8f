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
"""Interruption history: rates per period and a survival curve.

Input: servers' lifetimes (:class:`opie_sched.services.market.db.models.
Lifetime` as dicts): ``started_at``, ``ended_at`` (None: still running)
and ``end`` (``interrupted``, or a censoring end: ``deleted`` by the
owner, ``left`` the market's view). Drills never end a lifetime, so they
count nowhere.

* :func:`survival_curve`: the Kaplan-Meier estimate of S(t), the
  probability that a server runs longer than t seconds without being
  interrupted, lifetimes ending otherwise (and running ones, at ``now``)
  right-censored. Computed by :func:`scipy.stats.ecdf` on
  :class:`scipy.stats.CensoredData` (Kaplan & Meier, J. Am. Stat. Assoc.
  53, 1958: S(t) = prod over event times t_i <= t of (1 - d_i / n_i),
  d_i interruptions at t_i, n_i servers still at risk just before), with
  its 95 % confidence interval (scipy's Greenwood, log-log method).
* :func:`interruption_rates`: per period of ``period_seconds``,
  ``interruptions`` (lifetimes interrupted in it), ``servers`` (lifetimes
  that ran at some moment of it), ``rate`` = interruptions / servers
  and ``per_server_hour`` = interruptions / server-hours run in it.
"""

import math
import warnings

END_INTERRUPTED = 'interrupted'


def _duration(lt, now):
    end = lt['ended_at'] if lt['ended_at'] is not None else now
    return max(0.0, float(end) - float(lt['started_at']))


def survival_curve(lifetimes, now):
    """Kaplan-Meier survival curve of ``lifetimes`` (see the module).

    :param now: epoch seconds; open lifetimes are censored there.
    :returns: dict ``servers`` (lifetimes used), ``interruptions``,
        ``censored``, ``points``: ``[{"seconds", "survival", "low",
        "high"}]`` (S and its 95 % interval just after each distinct
        lifetime length, ascending; ``low``/``high`` None where scipy
        gives none), ``median_seconds`` (the first time S <= 0.5, or
        None).
    """
    events, censored = [], []
    for lt in lifetimes:
        d = _duration(lt, now)
        (events if lt.get('end') == END_INTERRUPTED else censored).append(d)
    doc = {'servers': len(events) + len(censored),
           'interruptions': len(events), 'censored': len(censored),
           'points': [], 'median_seconds': None}
    if not events:
        # no interruption: S(t) = 1 up to the longest lifetime
        if censored:
            doc['points'] = [{'seconds': max(censored), 'survival': 1.0,
                              'low': None, 'high': None}]
        return doc
    from scipy import stats
    data = stats.CensoredData(uncensored=events, right=censored)
    sf = stats.ecdf(data).sf
    try:
        with warnings.catch_warnings():
            # undefined where S = 0 or 1: given as None below
            warnings.simplefilter('ignore', RuntimeWarning)
            ci = sf.confidence_interval(0.95)
        lows, highs = ci.low.probabilities, ci.high.probabilities
    except Exception:
        lows = highs = [None] * len(sf.quantiles)

    def clean(v):
        return None if v is None or not math.isfinite(v) else float(v)
    for t, s, lo, hi in zip(sf.quantiles, sf.probabilities, lows, highs):
        doc['points'].append({'seconds': float(t), 'survival': float(s),
                              'low': clean(lo), 'high': clean(hi)})
        if doc['median_seconds'] is None and s <= 0.5:
            doc['median_seconds'] = float(t)
    return doc


def interruption_rates(lifetimes, start, end, period_seconds):
    """Interruption rate per period in ``[start, end)`` (see the module).

    :param start: epoch seconds, the first period's start.
    :param end: epoch seconds (exclusive).
    :param period_seconds: length of a period (> 0).
    :returns: ``[{"period_start", "servers", "interruptions", "rate",
        "server_hours", "per_server_hour"}]`` (epoch seconds; rates None
        when nothing ran).
    :raises ValueError: ``period_seconds`` <= 0.
    """
    if period_seconds <= 0:
        raise ValueError('period_seconds must be > 0')
    rows = []
    p = float(start)
    while p < end:
        q = min(p + period_seconds, end)
        servers = interruptions = 0
        seconds = 0.0
        for lt in lifetimes:
            s = float(lt['started_at'])
            e = float(lt['ended_at']) if lt['ended_at'] is not None else end
            if s >= q or e < p:
                continue
            servers += 1
            seconds += max(0.0, min(e, q) - max(s, p))
            if (lt.get('end') == END_INTERRUPTED
                    and lt['ended_at'] is not None and p <= e < q):
                interruptions += 1
        hours = seconds / 3600.0
        rows.append({
            'period_start': p, 'servers': servers,
            'interruptions': interruptions,
            'rate': interruptions / servers if servers else None,
            'server_hours': hours,
            'per_server_hour': interruptions / hours if hours else None})
        p = q
    return rows


def plot(history, path):
    """Write ``history`` (the API's ``interruption_history`` document) as
    a PNG at ``path``: the survival curve (step, with its 95 % band) over
    hours, and the interruption rate per period. Needs matplotlib.
    """
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot
    fig, (ax1, ax2) = pyplot.subplots(1, 2, figsize=(10, 4))
    # the client parses JSON numbers as Decimal
    points = [{k: None if v is None else float(v) for k, v in p.items()}
              for p in history['survival']['points']]
    xs = [0.0] + [p['seconds'] / 3600.0 for p in points]
    ys = [1.0] + [p['survival'] for p in points]
    ax1.step(xs, ys, where='post', label='Kaplan-Meier S(t)')
    lows = [1.0] + [p['low'] if p['low'] is not None else p['survival']
                    for p in points]
    highs = [1.0] + [p['high'] if p['high'] is not None else p['survival']
                     for p in points]
    ax1.fill_between(xs, lows, highs, step='post', alpha=0.2,
                     label='95 % interval')
    ax1.set_ylim(0, 1.05)
    ax1.set_xlabel('hours since the server started')
    ax1.set_ylabel('probability of no interruption')
    ax1.set_title('%s: survival (%d servers, %d interrupted)' % (
        history['flavor'], history['survival']['servers'],
        history['survival']['interruptions']))
    ax1.legend(loc='lower left')
    rates = history['rates']
    ax2.bar(range(len(rates)), [float(r['rate'] or 0) for r in rates])
    ax2.set_xticks(range(len(rates)))
    ax2.set_xticklabels([r['period_start'][:16] for r in rates],
                        rotation=45, ha='right', fontsize=7)
    ax2.set_ylabel('interrupted / servers that ran')
    ax2.set_title('interruption rate per %s s' % history['period_seconds'])
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    pyplot.close(fig)
