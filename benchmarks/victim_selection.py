#!/usr/bin/env python
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
"""Benchmark of exact victim selection (López García et al., Alg. 5).

Usage::

    python benchmarks/victim_selection.py [--repeat N] [--seed S] [--milp]
        [--quick] [--json PATH]

Random realistic hosts (seeded): n preemptible instances of the default
flavors small 1 vCPU/2000 MB/20 GB, medium 2/4000/40 and large 4/8000/80,
mixed; each costs ``runtime mod 3600`` s (billing-period cost module) with a
random runtime of up to three days; the need is a medium or large flavor's
size minus a little free room. For n = 12..24 it runs
:func:`~opie_sched.preemption.victims.select_victims` and the brute-force
oracle on the same hosts, checks that they agree (total cost and uuids) and
prints median times (brute force: the vectorised numpy oracle, its
fastest form); then the branch and bound alone at n = 32, 48, 64.
``--milp`` adds the time of ``scipy.optimize.milp`` (HiGHS) solving the same
minimal-cost problem (cost only, no tie rule), checked against ours.
``--quick`` runs n = 12..20 against the oracle and 32, 48, 64 alone with
few hosts (seconds). ``--json PATH`` also writes the medians, as
``{"rows": [{"n", "hosts", "ours_ms", "ours_p95_ms", "brute_ms"}]}``.
Target (issue 12): median at n = 64 <= 2 ms.
"""

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
import uuid as uuid_mod

from opie_sched.preemption import model
from opie_sched.preemption import victims

FLAVORS = (model.Resources(1, 2000, 20), model.Resources(2, 4000, 40),
           model.Resources(4, 8000, 80))
PERIOD = 3600.0


def require(ok, message):
    """A check that ``python -O`` keeps (unlike ``assert``).

    :raises SystemExit: ``ok`` is false (the run is void).
    """
    if not ok:
        raise SystemExit('benchmark check failed, results void: %s'
                         % message)


def random_host(rng, n):
    """``(candidates, need)`` for one random host with n candidates."""
    candidates = []
    for _ in range(n):
        flavor = rng.choice(FLAVORS)
        runtime = rng.uniform(0, 3 * 86400)
        inst = model.InstanceInfo(str(uuid_mod.UUID(int=rng.getrandbits(128))),
                                  flavor, True)
        candidates.append((inst, runtime % PERIOD))
    flavor = rng.choice(FLAVORS[1:])
    room = model.Resources(rng.randint(0, 1), rng.randint(0, 1500),
                           rng.randint(0, 15))
    return candidates, (flavor - room).clip_negative()


def timed(func, *args):
    start = time.perf_counter()
    result = func(*args)
    return (time.perf_counter() - start) * 1000.0, result


def milp_cost(candidates, need):
    import numpy as np
    from scipy import optimize
    costs = np.array([c for _, c in candidates])
    a = np.array([list(i.resources) for i, _ in candidates]).T
    res = optimize.milp(
        costs, integrality=np.ones(len(costs)),
        bounds=optimize.Bounds(0, 1),
        constraints=optimize.LinearConstraint(a, lb=list(need)))
    return res.fun if res.success else None


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--repeat', type=int, default=30,
                        help='hosts per n for n <= 20 (a third of it, at '
                             'least 2, for n = 22, 24; 5x for n >= 32); '
                             'default 30')
    parser.add_argument('--seed', type=int, default=42)
    parser.add_argument('--milp', action='store_true',
                        help='also time scipy.optimize.milp (HiGHS)')
    parser.add_argument('--quick', action='store_true',
                        help='n <= 20 against the oracle, then 32..64, '
                             'few hosts each (seconds)')
    parser.add_argument('--json', metavar='PATH',
                        help='also write the medians to PATH (JSON)')
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error('--repeat must be >= 1')
    small = (12, 14, 16, 18, 20, 22, 24)
    if args.quick:
        args.repeat = min(args.repeat, 6)
        small = (12, 16, 20)
    rows = []
    rng = random.Random(args.seed)
    print('machine: %d cores (os.cpu_count), %s, Python %s'
          % (os.cpu_count(), platform.machine(), platform.python_version()))
    print('seed %d, repeat %d' % (args.seed, args.repeat))
    print()
    head = '%4s %5s %12s %14s %10s' % ('n', 'hosts', 'ours med ms',
                                       'brute med ms', 'brute/ours')
    if args.milp:
        head += ' %12s' % 'milp med ms'
    print(head)
    for n in small:
        reps = args.repeat if n < 22 else max(2, args.repeat // 3)
        ours, brute, milp = [], [], []
        for _ in range(reps):
            candidates, need = random_host(rng, n)
            t1, a = timed(victims.select_victims, candidates, need)
            t2, b = timed(victims.brute_force_victims, candidates, need,
                          'numpy')
            if a is None or b is None:
                require(a is None and b is None, 'n=%d need=%s: one of ours '
                        'and the oracle found no selection' % (n, need))
            else:
                require(a.total_cost == b.total_cost and a.uuids == b.uuids,
                        'n=%d: ours %s differs from the oracle %s'
                        % (n, a, b))
            ours.append(t1)
            brute.append(t2)
            if args.milp:
                t3, c = timed(milp_cost, candidates, need)
                if a is not None:
                    require(abs(c - a.total_cost) <= 1e-6 * max(
                        1, a.total_cost), 'MILP cost %s != ours %s'
                        % (c, a.total_cost))
                milp.append(t3)
        mo, mb = statistics.median(ours), statistics.median(brute)
        rows.append({'n': n, 'hosts': reps, 'ours_ms': mo,
                     'ours_p95_ms': percentile(ours, 0.95), 'brute_ms': mb})
        line = '%4d %5d %12.3f %14.2f %10.1f' % (n, reps, mo, mb, mb / mo)
        if args.milp:
            line += ' %12.3f' % statistics.median(milp)
        print(line)
        sys.stdout.flush()
    print()
    head = '%4s %5s %12s %12s %12s' % ('n', 'hosts', 'ours med ms',
                                       'ours p95 ms', 'ours max ms')
    if args.milp:
        head += ' %12s' % 'milp med ms'
    print(head)
    for n in (32, 48, 64):
        reps = args.repeat * 5
        ours, milp = [], []
        for _ in range(reps):
            candidates, need = random_host(rng, n)
            t1, a = timed(victims.select_victims, candidates, need)
            ours.append(t1)
            if args.milp:
                t3, c = timed(milp_cost, candidates, need)
                require(abs(c - a.total_cost) <= 1e-6 * max(
                    1, a.total_cost), 'MILP cost %s != ours %s'
                    % (c, a.total_cost))
                milp.append(t3)
        rows.append({'n': n, 'hosts': reps,
                     'ours_ms': statistics.median(ours),
                     'ours_p95_ms': percentile(ours, 0.95), 'brute_ms': None})
        line = '%4d %5d %12.3f %12.3f %12.3f' % (
            n, reps, statistics.median(ours), percentile(ours, 0.95),
            max(ours))
        if args.milp:
            line += ' %12.3f' % statistics.median(milp)
        print(line)
        sys.stdout.flush()
    if args.json:
        with open(args.json, 'w') as out:
            json.dump({'rows': rows, 'seed': args.seed,
                       'repeat': args.repeat, 'quick': args.quick}, out,
                      indent=1)
    return rows


if __name__ == '__main__':
    main()
