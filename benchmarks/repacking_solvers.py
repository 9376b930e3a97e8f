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
"""Benchmark of the repacking planner's optimal-set solvers (Paper V, 3.1).

Usage::

    python benchmarks/repacking_solvers.py [--samples N] [--seed S]

Mean seconds per :func:`opie_sched.flavormix.optimal_set` call of each
method (``'bnb'``, the exact branch and bound, and ``'milp'``,
:func:`scipy.optimize.milp`) on ``N`` random required capacities (seeded):
the thesis Table 2 types of applications A and B (6 flavors, ``C_req`` in
[1, 2 000 000] req/min) and 12 random types (``C_req`` up to 10**6). The
measurement behind ``'bnb'`` being the default.
"""

import argparse
import random
import time

from opie_sched import flavormix
from opie_sched.flavormix import vmtypes


def measure(samples=500, seed=1):
    """Mean seconds per optimal_set solve, {(label, method): seconds}."""
    rng = random.Random(seed)
    cases = {'table2-A': (flavormix.thesis_types('A'), 2_000_000),
             'table2-B': (flavormix.thesis_types('B'), 2_000_000),
             'random-12': (flavormix.vm_types(
                 flavormix.VMType('t%02d' % i, round(rng.uniform(0.05, 5), 3),
                                  rng.randint(100, 50000))
                 for i in range(12)), 1_000_000)}
    out = {}
    for label, (types, top) in cases.items():
        cat = vmtypes._Catalog(types)
        needs = [rng.randint(1, top) for _ in range(samples)]
        for method in flavormix.METHODS:
            t0 = time.perf_counter()
            for need in needs:
                flavormix.optimal_set(cat, need, method=method)
            out[label, method] = (time.perf_counter() - t0) / samples
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--samples', type=int, default=500)
    parser.add_argument('--seed', type=int, default=1)
    args = parser.parse_args(argv)
    for (label, method), sec in sorted(measure(args.samples,
                                               args.seed).items()):
        print('%-10s %-5s %8.3f ms' % (label, method, sec * 1e3))
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
