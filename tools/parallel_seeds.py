#!/usr/bin/env python3
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
"""A seed-judged scenario's full run, its seeds computed in parallel.

    python tools/parallel_seeds.py NAME WORKERS [full|reduced] [SEEDS] \\
        [KEEP_DIR] > NAME.json

NAME is ``themis-value``, ``gossip-redistribution``, ``rpm-vs-ffd`` or
``rpm-weights``. Worker processes compute the scenario's expensive calls
seed by seed (``themis.compare`` and ``themis.market_only``,
``gossip_redistribution.run`` and ``convergence``,
``rpm_vs_ffd.seed_run``, ``rpm_weights.seed_run``), each kept under its
arguments. The parent
then runs the scenario function itself, seed 42 and SEEDS seeds (default
10), with those results preloaded. Each call is
a deterministic function of its arguments, so the result is the one
``opie-sched simulate --scenario NAME --seed-count SEEDS -f json``
computes. On the reduced configuration the two reports were compared
and are identical. The JSON has the same ``report`` and ``runtime_s``
fields (wall time of the whole), and ``parallel`` says how many workers
ran and how many calls the parent reused or computed.
``doc/tools/refresh_reference.py --results DIR`` reads it. With
KEEP_DIR, each finished task's calls are pickled there (files this tool
wrote itself) and a run started again skips them, so an interrupted run
resumes.

The shared machine's rule still holds: run it under ``nice -n 10``.
"""

import copy
import hashlib
import inspect
import json
import multiprocessing
import os
import pickle
import sys
import time

from opie_sched.simulator import gossip_redistribution as gossip_mod
from opie_sched.simulator import rpm_vs_ffd
from opie_sched.simulator import rpm_weights
from opie_sched.simulator import scenarios
from opie_sched.simulator import themis

FIRST_SEED = 42
#: One line on standard error per finished task (set by :func:`main`).
PROGRESS = False
#: The memoised calls: (module, function name, the function itself).
ORIGINALS = [(mod, name, getattr(mod, name))
             for mod, names in ((themis, ('compare', 'market_only')),
                                (gossip_mod, ('run', 'convergence')),
                                (rpm_vs_ffd, ('seed_run',)),
                                (rpm_weights, ('seed_run',)))
             for name in names]


def call_key(fn, name, args, kwargs):
    """A hashable key of one call: its bound arguments, without the trace
    path (the same file in every process) and without ``runs`` (the seed
    count, which no single run reads).
    """
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    out = [name]
    for key, value in bound.arguments.items():
        if key in ('path', 'trace'):
            continue
        if isinstance(value, dict):
            value = tuple(sorted((a, b) for a, b in value.items()
                                 if a != 'runs'))
        elif isinstance(value, themis.PerHostShares):
            value = ('per-host', len(value.count), value.cores)
        out.append((key, value))
    return tuple(out)


def install(store, stats=None):
    """Replace the memoised functions by ones that look ``store`` up
    first (a deep copy is returned: callers may change their rows).
    """
    for mod, name, orig in ORIGINALS:
        def wrapped(*args, _orig=orig, _name=name, **kwargs):
            key = call_key(_orig, _name, args, kwargs)
            if key not in store:
                if stats is not None:
                    stats['computed'] += 1
                store[key] = _orig(*args, **kwargs)
            elif stats is not None:
                stats['reused'] += 1
            return copy.deepcopy(store[key])
        setattr(mod, name, wrapped)


def work(task):
    """One worker task; returns the calls it made, by key."""
    store = {}
    install(store)
    started = time.process_time()
    if task[0] == 'themis-seed':
        _, seed, count, factors = task
        themis.fig5b_over_seeds(themis.trace_path(), seed, count, factors,
                                [seed])
    elif task[0] == 'themis-call':
        # one of the four calls fig5b_over_seeds makes per (factor, seed)
        _, what, seed, count, factor = task
        path = themis.trace_path()
        if what == 'compare':
            themis.compare(path, factor, seed, count=count)
        elif what == 'budget':
            themis.compare(path, factor, seed, count=count,
                           budget_rule=themis.BUDGET_DEADLINE)
        else:
            themis.market_only(path, factor, seed, count,
                               themis.PerHostShares()
                               if what == 'per-host' else
                               themis.PerHostShares(themis.CORES, 1.0))
    elif task[0] == 'themis-table':
        _, seed, count, factor, mixed, memory = task
        themis.compare(themis.trace_path(), factor, seed, mixed, memory,
                       count)
    elif task[0] == 'rpm-call':
        rpm_vs_ffd.seed_run(**task[1])
    elif task[0] == 'rpm-weights-call':
        rpm_weights.seed_run(**task[1])
    elif task[0] == 'gossip-call':
        _, name, args, kwargs = task
        getattr(gossip_mod, name)(*args, **kwargs)
    else:
        _, seed, reduced = task
        gossip_mod.gossip_redistribution(reduced=reduced, seed=seed,
                                         count=1)
    if PROGRESS:
        print('done %r in %.1f CPU s' % (task,
                                          time.process_time() - started),
              file=sys.stderr, flush=True)
    return task, store


def _task_file(directory, task):
    digest = hashlib.sha1(repr(task).encode()).hexdigest()[:16]
    return os.path.join(directory, '%s.pickle' % digest)


def gossip_calls(reduced, seeds):
    """gossip-redistribution's calls, one task each, duplicates dropped
    (the scenario's per_seed, Fig. 2 and Fig. 5 calls, in its argument
    order).
    """
    g = gossip_mod.gossip
    params = dict(gossip_mod.REDUCED if reduced else gossip_mod.FULL)
    base = (params['trigger'], params['placement'], params['merge'])
    wanted = []
    for s in seeds:
        for strategy in gossip_mod.ORDER:
            wanted.append((strategy,) + base + (s,))
        for _, trigger, placement, direction in gossip_mod.SETTINGS:
            for strategy in (g.MERGE, g.MERGE_IMB):
                wanted.append((strategy, trigger, placement, direction, s))
    out, seen = [], set()

    def add(name, args, kwargs):
        fn = dict((n, f) for _, n, f in ORIGINALS)[name]
        key = call_key(fn, name, args, kwargs)
        if key not in seen:
            seen.add(key)
            out.append(('gossip-call', name, args, kwargs))

    for strategy, trigger, placement, merge, s in wanted:
        if strategy != g.MERGE_IMB:
            trigger = params['trigger']
        if strategy not in (g.MERGE, g.MERGE_IMB):
            merge = params['merge']
        add('run', (strategy,), dict(params, seed=s, trigger=trigger,
                                     placement=placement, merge=merge))
    for s in seeds:
        for strategy in (g.MERGE, g.MERGE_IMB):
            add('convergence', (strategy, params['view']),
                dict(params, seed=s))
        for k in gossip_mod.PAPER_FIG5_K:
            if k < params['pms']:
                add('convergence', (g.MERGE_IMB, k), dict(params, seed=s))
    return out


def tasks(name, reduced, seeds):
    """The workers' tasks: gossip-redistribution, rpm-vs-ffd and
    rpm-weights one call each (duplicates dropped); themis-value
    one call each (its single-seed tables, one per experiment and factor,
    then the four calls of each factor and seed of the Fig. 5(b) claims).
    """
    if name == 'gossip-redistribution':
        return gossip_calls(reduced, seeds)
    if name == 'rpm-vs-ffd':
        out, seen = [], set()
        for _, _, _, kw in rpm_vs_ffd.planned_runs(reduced, seeds):
            key = tuple(sorted(kw.items()))
            if key not in seen:
                seen.add(key)
                out.append(('rpm-call', kw))
        return out
    if name == 'rpm-weights':
        return [('rpm-weights-call', kw)
                for _, _, _, kw in rpm_weights.planned_runs(reduced, seeds)]
    count = 150 if reduced else themis.JOBS
    factors = (0.1, 1.0) if reduced else themis.CLAIM_FACTORS
    experiments = ((False, False),) if reduced else (
        (False, False), (False, True), (True, True))
    table_factors = (0.1, 1.0) if reduced else themis.FACTORS
    return [('themis-table', FIRST_SEED, count, f, mixed, memory)
            for mixed, memory in experiments for f in table_factors] + [
        ('themis-call', what, s, count, f)
        for what in ('budget', 'per-host', 'per-host-240', 'compare')
        for s in seeds for f in factors
        if not (what == 'compare' and s == FIRST_SEED and f in table_factors)]


def main(argv=None):
    global PROGRESS
    PROGRESS = True
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2 or argv[0] not in ('themis-value',
                                         'gossip-redistribution',
                                         'rpm-vs-ffd', 'rpm-weights'):
        raise SystemExit(__doc__.split('\n\n')[1])
    name, workers = argv[0], int(argv[1])
    reduced = len(argv) > 2 and argv[2] == 'reduced'
    count = int(argv[3]) if len(argv) > 3 else 10
    keep = argv[4] if len(argv) > 4 else None
    seeds = list(range(FIRST_SEED, FIRST_SEED + count))
    start = time.monotonic()
    store, todo = {}, []
    for task in tasks(name, reduced, seeds):
        path = keep and _task_file(keep, task)
        if path and os.path.exists(path):
            with open(path, 'rb') as f:
                store.update(pickle.load(f))
        else:
            todo.append(task)
    with multiprocessing.Pool(workers) as pool:
        for task, part in pool.imap_unordered(work, todo):
            store.update(part)
            if keep:
                with open(_task_file(keep, task), 'wb') as f:
                    pickle.dump(part, f)
    stats = {'computed': 0, 'reused': 0}
    install(store, stats)
    result, text = scenarios.SCENARIOS[name](reduced=reduced,
                                             seed=FIRST_SEED, count=count)
    result.update(runtime_s=time.monotonic() - start, report=text,
                  parallel=dict(stats, workers=workers))
    json.dump(result, sys.stdout, default=str)
    print('memo: %r' % stats, file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
