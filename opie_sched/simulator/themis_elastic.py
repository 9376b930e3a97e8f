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
"""Scenario ``themis-fig6``: Themis HPCC'12 §IV.C, Fig. 6 (elastic
master-worker).

S. V. Costache et al., *Themis: Economy-Based Automatic Resource Scaling
for Cloud Systems*, HPCC 2012: "an elastic master-worker application that
applies the horizontal policy ... has 1075 tasks to process in an time
interval of 643.25 minutes, with each task having an uniform execution
time between 1 and 40 minutes. After the first 85 minutes of execution,
an additional workload of 1500 tasks is generated." The paper's findings:
about 44 VMs before the burst; then more, "first incrementally, and then
more and more aggressively", an overestimate corrected down to an
equilibrium of 116 VMs; idle VMs shut down near the end; the deadline
met.

The controller is the product's :class:`opie_sched.market.slo
.HorizontalDeadline` (Themis Fig. 3/4: the ARIA bound on the remaining
tasks' average and longest time against the time left), every 5-minute
period. Ours where the paper is silent (:data:`PARAMS`): one VM to start
with, a new VM works from the next period, the master hands the queued
tasks to idle workers in order, a release stops idle workers first (a
busy one's task goes back to the queue), the price stays at the reserve
(the application is alone on the 240 hosts), the budget never binds.
"""

import collections
import enum
import random
import statistics

from opie_sched.market import slo
from opie_sched.simulator import tables

#: HPCC'12 §IV.C and our choices.
PARAMS = dict(tasks=1075, burst_tasks=1500, burst_minute=85.0,
              deadline=643.25, task_min=1.0, task_max=40.0, period=5.0,
              hosts=240, start_vms=1, budget=1e6)
#: The paper's numbers (text of §IV.C).
PAPER = {'vms_before_burst': 44, 'vms_equilibrium': 116}


class Worker(enum.Enum):
    """A worker VM running no task (a busy one holds, instead, the minutes
    left of its task, a float).
    """

    #: Booted, waiting for a task from the master.
    IDLE = 'idle'
    #: Started this period; works from the next one.
    BOOTING = 'booting'


def _busy(worker):
    return not isinstance(worker, Worker)


def run(seed=0, **overrides):
    """One run: per period ``(minute, VMs, queued, running)`` and the
    outcome (``finish`` minute, ``met``).
    """
    p = dict(PARAMS, **overrides)
    rng = random.Random(seed)

    def draw(n):
        return [rng.uniform(p['task_min'], p['task_max']) for _ in range(n)]

    queue = collections.deque(draw(p['tasks']))
    burst = draw(p['burst_tasks'])
    # per VM: a Worker state, or the minutes left of its task
    workers = [Worker.IDLE] * p['start_vms']
    ctl = slo.HorizontalDeadline()
    trace = []
    minute, finish, burst_done = 0.0, None, False
    step = 1.0
    per_period = int(round(p['period'] / step))
    k = 0
    while finish is None and minute < 4 * p['deadline']:
        if not burst_done and minute >= p['burst_minute']:
            queue.extend(burst)
            burst_done = True
        if k % per_period == 0:
            left = list(queue) + [w for w in workers if _busy(w)]
            if left:
                _, n = ctl(len(left), statistics.mean(left), max(left),
                           p['deadline'] - minute, len(workers), 1.0, 1.0,
                           p['budget'], p['hosts'])
                n = max(1, n)
                if n > len(workers):
                    workers += [Worker.BOOTING] * (n - len(workers))
                elif n < len(workers):
                    idle = [i for i, w in enumerate(workers)
                            if w is Worker.IDLE]
                    drop = set(idle[:len(workers) - n])
                    busy = [i for i, w in enumerate(workers) if _busy(w)]
                    for i in busy[:len(workers) - n - len(drop)]:
                        queue.appendleft(workers[i])
                        drop.add(i)
                    workers = [w for i, w in enumerate(workers)
                               if i not in drop]
            trace.append((minute, len(workers), len(queue),
                          sum(1 for w in workers if _busy(w))))
            # VMs started now work from the next period
        for i, w in enumerate(workers):
            if w is Worker.IDLE and queue:
                workers[i] = queue.popleft()
        for i, w in enumerate(workers):
            if not _busy(w):
                continue
            if w <= step + 1e-9:
                workers[i] = Worker.IDLE
            else:
                workers[i] = w - step
        minute += step
        k += 1
        if k % per_period == 0:
            workers = [Worker.IDLE if w is Worker.BOOTING else w
                       for w in workers]
        if burst_done and not queue and not any(map(_busy, workers)):
            finish = minute
    return {'trace': trace, 'finish': finish,
            'met': finish is not None and finish <= p['deadline'] + 1e-9}


def summary(result, params=None):
    """Numbers to compare with the paper: VMs just before the burst, the
    largest count, the median count between one hour after the burst and
    one hour before the end (the equilibrium), the last count.
    """
    p = dict(PARAMS, **(params or {}))
    trace = result['trace']
    before = [n for t, n, _, _ in trace if t < p['burst_minute']]
    end = result['finish'] or trace[-1][0]
    mid = [n for t, n, _, _ in trace
           if p['burst_minute'] + 60 <= t <= end - 60]
    return {'vms_before_burst': before[-1] if before else None,
            'vms_max': max(n for _, n, _, _ in trace),
            'vms_equilibrium': statistics.median(mid) if mid else None,
            'vms_last': trace[-1][1],
            'finish': result['finish'], 'met': result['met']}


def experiment(reduced=False, seed=0):
    """Run Fig. 6's application and judge the paper's findings: the
    scenario's JSON-serialisable result (``seeds``, ``summaries`` of
    :func:`summary`, ``verdicts`` ``[{'seed', 'claim', 'holds'}]``, the
    first seed's ``trace``). Full: 5 seeds; reduced: 1.
    """
    seeds = [seed] if reduced else list(range(seed, seed + 5))
    runs = [run(s) for s in seeds]
    sums = [summary(r) for r in runs]
    verdicts = []
    for s, sm in zip(seeds, sums):
        verdicts += [
            {'seed': s, 'claim': 'more VMs after the burst than before',
             'holds': (sm['vms_equilibrium'] or 0)
             > (sm['vms_before_burst'] or 0)},
            {'claim': 'overestimate, then down to the equilibrium',
             'seed': s, 'holds': sm['vms_max']
             > (sm['vms_equilibrium'] or 0)},
            {'seed': s, 'claim': 'idle VMs shut down near the end',
             'holds': sm['vms_last'] < (sm['vms_equilibrium'] or 0)},
            {'seed': s, 'claim': 'deadline %.2f min met' % PARAMS['deadline'],
             'holds': sm['met']}]
    return {'scenario': 'themis-fig6', 'reduced': reduced, 'seeds': seeds,
            'params': dict(PARAMS), 'paper': PAPER, 'summaries': sums,
            'verdicts': verdicts,
            'trace': [list(x) for x in runs[0]['trace']]}


def report(result):
    """The text of :func:`experiment`'s ``result``: the paper's numbers
    beside ours per seed, the VM count every 30 min, the findings judged.
    """
    seeds, sums, verdicts = (result['seeds'], result['summaries'],
                             result['verdicts'])
    rows = [[s, sm['vms_before_burst'], PAPER['vms_before_burst'],
             sm['vms_max'], '%g' % (sm['vms_equilibrium'] or 0),
             PAPER['vms_equilibrium'], sm['vms_last'],
             '-' if sm['finish'] is None else '%.0f' % sm['finish'],
             'yes' if sm['met'] else 'NO'] for s, sm in zip(seeds, sums)]
    curve = ' '.join('%d' % n for _, n, _, _ in result['trace'][::6])
    return '\n'.join([
        'themis-fig6: Themis HPCC\'12 Fig. 6, elastic master-worker with '
        'Horizontal-Deadline (opie_sched.market.slo), %d tasks + %d at %g '
        'min, tasks U(%g, %g) min, deadline %.2f min, %g-min periods; '
        'seeds %s' % (PARAMS['tasks'], PARAMS['burst_tasks'],
                      PARAMS['burst_minute'], PARAMS['task_min'],
                      PARAMS['task_max'], PARAMS['deadline'],
                      PARAMS['period'], ', '.join(map(str, seeds))),
        '',
        tables.text_table(['seed', 'VMs before burst', 'paper', 'max VMs',
                           'equilibrium VMs', 'paper', 'last VMs',
                           'finished (min)', 'met'], rows),
        'VMs every 30 min (seed %d): %s' % (seeds[0], curve),
        '',
        'Fig. 6 findings stated in the paper vs ours (%d of %d hold):' % (
            sum(v['holds'] for v in verdicts), len(verdicts)),
        tables.text_table(['seed', 'claim', 'holds'],
                          [[v['seed'], v['claim'],
                            'yes' if v['holds'] else 'NO']
                           for v in verdicts])])


def themis_elastic(reduced=False, seed=0):
    """Scenario ``themis-fig6`` (Themis Fig. 6), paper vs ours:
    ``(result, text)`` -- :func:`experiment`, then :func:`report`.
    """
    result = experiment(reduced=reduced, seed=seed)
    return result, report(result)
