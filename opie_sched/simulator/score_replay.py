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
"""Scenario ``score-replay``: how often the placement score's answer was
what the scheduler then did (issue 32, "Must show").

A prefix of the NASA iPSC/860 trace is replayed as normal demand with the
generated preemptible backfill of ``headroom-tradeoff``
(:func:`opie_sched.simulator.headroom_tradeoff.trace_workload`) under the
``opie`` policy (:class:`opie_sched.simulator.policies.OpiePolicy`). At
each request's arrival the product's own
:func:`opie_sched.services.market.score.classify` is asked about that
request (its flavor, its ``count``, its class) on
:class:`~opie_sched.services.market.score.HostState` values built from the
simulated hosts by :func:`host_states` (a thin adapter), and the
scheduler's outcome is recorded:

``placed_free``
    every server placed without a victim;
``placed_preempting``
    placed, some server by preempting;
``failed``
    not placed (the engine has no queue: a request never *waits*, it
    fails at once as a cloud's NoValidHost).

The score's answer is *right* when ``fits_now`` meets ``placed_free``,
``preempting`` meets ``placed_preempting`` (a normal request) or
``failed`` (a preemptible one: the score's ``preempting`` then says the
boot is refused now and room comes only when the market gives cheaper
servers notice), and ``no_room`` meets ``failed``.

When the score is asked (:data:`ASKED`):

``pass``
    just before the request's scheduling pass (after the departures and
    the earlier arrivals of the same second): the score and the scheduler
    see the same state, a check of the adapter and of the score's rule;
``L s before``
    at second ``t - L`` before that second's events (``L = 0``: the
    start of the arrival's second, so the departures and the other
    arrivals of the same second come between the answer and the pass).

A wrong answer is explained by comparing it with the ``pass`` answer:
*room taken since* (asked ``fits_now``, the pass saw no free room:
arrivals in between took it), *room freed since* (the answer was not
``fits_now``, the pass found free room: departures in between), *other
change since* (the answer differed from the pass's otherwise), *score and
scheduler disagree* (the pass's own answer was wrong).

The model's simplifications: the simulator has no market, so no price
(``price_per_hour`` None, hence never ``out_of_bid``) and every
preemptible server bids the same (:data:`SIM_BID`); preemptible servers
use the hosts' one inventory (``preemptible_capacity`` = capacity).
"""

import bisect
import decimal
import os
import time

from opie_sched.services.market import score
from opie_sched.simcore import clock
from opie_sched.simulator import cloud as cloud_mod
from opie_sched.simulator import headroom_tradeoff
from opie_sched.simulator import policies
from opie_sched.simulator import tables

#: The trace replayed (file in the traces directory, short name).
TRACE = ('NASA-iPSC-1993-3.1-cln.swf.gz', 'NASA iPSC/860')
#: Trace jobs replayed: the full run's prefix and the reduced one's.
FULL_JOBS = 300
REDUCED_JOBS = 30
#: Lags, seconds, at which the score is asked before the arrival.
LAGS = (0, 60, 600)
#: The ``pass`` row's name in :data:`ASKED` order.
PASS = 'pass'
#: The bid of every simulated preemptible server (no market here).
SIM_BID = decimal.Decimal('0')

PLACED_FREE = 'placed_free'
PLACED_PREEMPTING = 'placed_preempting'
FAILED = 'failed'
OUTCOMES = (PLACED_FREE, PLACED_PREEMPTING, FAILED)

#: Reasons a wrong answer is given.
TAKEN = 'room taken since'
FREED = 'room freed since'
CHANGED = 'other change since'
DISAGREE = 'score and scheduler disagree'
REASONS = (TAKEN, FREED, CHANGED, DISAGREE)


def asked(lags=LAGS):
    """The rows' names: ``pass`` then ``L s before`` per lag."""
    return [PASS] + ['%g s before' % lag for lag in lags]


def host_states(cloud):
    """The :class:`~opie_sched.services.market.score.HostState` of every
    host of a :class:`~opie_sched.simulator.cloud.Cloud`, in name order.

    ``capacity`` = the host's capacity; ``normal_used`` = full-state usage
    minus the preemptible instances'; ``preemptible_used`` = theirs;
    ``preemptible_capacity`` = the capacity (one inventory); ``running`` =
    one :class:`~opie_sched.services.market.score.Running` per
    preemptible instance, bid :data:`SIM_BID`.
    """
    out = []
    for i, name in enumerate(cloud.names):
        cap = tuple(cloud.cap[i].tolist())
        pre = tuple(cloud.pre[i].tolist())
        used = tuple(cloud.used[i].tolist())
        running = ()
        if pre[0] or pre[1] or pre[2]:
            running = tuple(
                score.Running(SIM_BID, info.resources.vcpus,
                              info.resources.memory_mb)
                for info in cloud.instances(i) if info.preemptible)
        out.append(score.HostState(
            host=name, capacity=cap,
            normal_used=tuple(u - p for u, p in zip(used, pre)),
            preemptible_used=pre, preemptible_capacity=cap,
            running=running))
    return out


def ask(states, req):
    """``score.classify`` for one request: its status."""
    need = (req.vcpus, req.memory_mb, req.disk_gb)
    return score.classify(states, need, req.count, req.preemptible)['status']


def outcome_of(result):
    """The :data:`OUTCOMES` value of a policy's
    :class:`~opie_sched.simulator.policies.Outcome`.
    """
    if not result.ok:
        return FAILED
    if result.victims:
        return PLACED_PREEMPTING
    return PLACED_FREE


def right(status, outcome, preemptible):
    """Whether the score's ``status`` was what the scheduler did."""
    if status == score.FITS_NOW:
        return outcome == PLACED_FREE
    if status == score.PREEMPTING:
        return outcome == (FAILED if preemptible else PLACED_PREEMPTING)
    return outcome == FAILED


def _reason(status, at_pass, outcome, preemptible):
    if not right(at_pass, outcome, preemptible):
        return DISAGREE
    if status == score.FITS_NOW:
        return TAKEN
    if at_pass == score.FITS_NOW:
        return FREED
    return CHANGED


class ScoreReplay:
    """Replay requests under ``opie`` and score every arrival.

    :param cloud: a new :class:`~opie_sched.simulator.cloud.Cloud`.
    :param lags: seconds before the arrival at which the score is asked.
    """

    def __init__(self, cloud, lags=LAGS):
        self.cloud = cloud
        self.lags = tuple(lags)
        self.policy = policies.make_policy('opie')
        self.records = []
        # state after the events of each second: times and HostStates
        self._times = []
        self._states = []
        self._empty = host_states(cloud)

    def _before(self, s):
        """HostStates before the events of second ``s``."""
        k = bisect.bisect_left(self._times, s)
        return self._states[k - 1] if k else self._empty

    def run(self, requests):
        """Replay ``requests``; fills :attr:`records`, one dict per
        request: ``job_id``, ``preemptible``, ``outcome`` and ``asked``
        (row name -> status).
        """
        cloud = self.cloud
        arrivals = clock.Arrivals(requests, key=lambda r: (r.submit,
                                                           r.job_id),
                                  time=lambda r: r.submit)
        departures = clock.EventQueue()
        last = None
        for kind, t, item in clock.merge(arrivals, departures):
            if last is not None and t != last:
                self._times.append(last)
                self._states.append(host_states(cloud))
            last = t
            if kind is clock.EVENT:
                if item in cloud:
                    cloud.remove(item)
                continue
            i, req = item
            answers = {PASS: ask(host_states(cloud), req)}
            for lag, name in zip(self.lags, asked(self.lags)[1:]):
                answers[name] = ask(self._before(t - lag), req)
            uuids = ['r%08d-%03d' % (i, k) for k in range(req.count)]
            result = self.policy.schedule(cloud, req, uuids, t)
            if result.ok:
                for uuid in uuids:
                    departures.push(t + max(req.runtime, 0.0), uuid)
            self.records.append({'job_id': req.job_id,
                                 'preemptible': req.preemptible,
                                 'outcome': outcome_of(result),
                                 'asked': answers})
        return self.records


def tally(records, lags=LAGS):
    """``{row: {'table': {(class, status): {outcome: n}}, 'right': n,
    'total': n, 'fits_now': n, 'fits_now_right': n, 'reasons': {reason:
    n}}}`` for each row of :func:`asked`; ``class`` is ``normal`` or
    ``preemptible``.
    """
    out = {}
    for row in asked(lags):
        table, reasons = {}, dict.fromkeys(REASONS, 0)
        n_right = n_fits = n_fits_right = 0
        for rec in records:
            status = rec['asked'][row]
            kind = 'preemptible' if rec['preemptible'] else 'normal'
            cell = table.setdefault((kind, status),
                                    dict.fromkeys(OUTCOMES, 0))
            cell[rec['outcome']] += 1
            ok = right(status, rec['outcome'], rec['preemptible'])
            n_right += ok
            if status == score.FITS_NOW:
                n_fits += 1
                n_fits_right += ok
            if not ok:
                reasons[_reason(status, rec['asked'][PASS], rec['outcome'],
                                rec['preemptible'])] += 1
        out[row] = {'table': table, 'right': n_right, 'total': len(records),
                    'fits_now': n_fits, 'fits_now_right': n_fits_right,
                    'reasons': reasons}
    return out


def _pct(num, den):
    return '%.2f %%' % (100.0 * num / den) if den else '-'


def table_text(counts, lags=LAGS):
    """The confusion tables of :func:`tally`, one per row of
    :func:`asked`.
    """
    parts = []
    for row in asked(lags):
        c = counts[row]
        rows = []
        for kind in ('normal', 'preemptible'):
            for status in score.STATUSES:
                cell = c['table'].get((kind, status))
                if cell is None:
                    continue
                n = sum(cell.values())
                good = sum(v for o, v in cell.items()
                           if right(status, o, kind == 'preemptible'))
                rows.append(['%s %s' % (kind, status)]
                            + [cell[o] for o in OUTCOMES]
                            + [n, _pct(good, n)])
        parts.append('asked %s: right %d of %d (%s); "fits now" right %d '
                     'of %d (%s)\n%s\nwrong: %s' % (
                         row, c['right'], c['total'],
                         _pct(c['right'], c['total']), c['fits_now_right'],
                         c['fits_now'],
                         _pct(c['fits_now_right'], c['fits_now']),
                         tables.text_table(
                             ['score said'] + list(OUTCOMES)
                             + ['n', 'right'], rows),
                         ', '.join('%s %d' % (r, n) for r, n in
                                   c['reasons'].items() if n) or 'none'))
    return '\n\n'.join(parts)


def replay(requests, n_hosts, lags=LAGS):
    """``(records, counts)`` of ``requests`` on ``n_hosts`` hosts of the
    default :class:`~opie_sched.simulator.cloud.HostSpec`.
    """
    sim = ScoreReplay(cloud_mod.Cloud.uniform(n_hosts), lags)
    records = sim.run(requests)
    return records, tally(records, lags)


def score_replay(reduced=False, seed=0, directory=None, jobs=None,
                 lags=LAGS):
    """The scenario.

    :param reduced: the first :data:`REDUCED_JOBS` trace jobs instead of
        :data:`FULL_JOBS`.
    :param seed: seed of the backfill (0 is replaced by 42).
    :param directory: the traces' directory (default
        :func:`~opie_sched.simulator.headroom_tradeoff.traces_dir`).
    :param jobs: trace jobs replayed (overrides ``reduced``).
    :returns: ``(result, text)``; a missing trace gives ``skipped`` with
        its reason and no table.
    """
    name, short = TRACE
    count = jobs or (REDUCED_JOBS if reduced else FULL_JOBS)
    result = {'scenario': 'score-replay', 'reduced': bool(reduced),
              'trace': short, 'jobs': count, 'lags_s': list(lags)}
    directory = directory or headroom_tradeoff.traces_dir()
    try:
        path = headroom_tradeoff.trace_path(name, directory)
    except headroom_tradeoff.TraceMissing as exc:
        result['skipped'] = str(exc)
        return result, 'score-replay: skipped: %s' % exc
    reqs, n_hosts, horizon, summary = headroom_tradeoff.trace_workload(
        path, count, seed=seed or 42)
    started = time.perf_counter()
    records, counts = replay(reqs, n_hosts, lags)
    wall = time.perf_counter() - started
    result.update(
        hosts=n_hosts, requests=len(reqs),
        normal_requests=sum(1 for r in reqs if not r.preemptible),
        horizon_s=horizon, mapping=str(summary), wall_seconds=wall,
        rows={row: {'right': c['right'], 'total': c['total'],
                    'fits_now': c['fits_now'],
                    'fits_now_right': c['fits_now_right'],
                    'reasons': c['reasons'],
                    'table': {'%s %s' % k: v
                              for k, v in c['table'].items()}}
              for row, c in counts.items()})
    head = ('score-replay: %s, first %d jobs (%s) as normal requests + '
            'preemptible backfill: %d requests (%d normal) on %d hosts x 8 '
            'vCPU, %.1f h; opie policy; score = score.classify on the '
            'simulated host states; %.1f s of replay (%s)' % (
                short, count, summary, len(reqs),
                result['normal_requests'], n_hosts, horizon / 3600.0, wall,
                os.path.basename(path)))
    return result, head + '\n\n' + table_text(counts, lags)
