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
"""Throughput and memory of the simulator (``opie-sched simulate``).

Usage::

    python benchmarks/simulator_throughput.py [--hosts 1000,10000] [--65k]
        [--thesis] [--requests-per-host 20] [--load 1.5] [--policy opie]
        [--seed S] [--quick] [--json PATH] [--no-memory]

For each cloud size: hosts of 8 vCPU / 16000 MB / 200 GB, a generated
workload (:func:`opie_sched.workload.generator.generate`, half of it
preemptible, the paper's three flavors, bounded power-law run times of
10 min to 4 h) of ``requests-per-host × hosts`` requests arriving at the
rate that offers ``load`` × the cloud's vCPU capacity, so the cloud fills
up and normal requests preempt. Prints one row per size: events
(arrivals + departures) per wall second of the simulation loop; the peak
memory of the same run repeated under :mod:`tracemalloc` (workload
generation excluded; tracemalloc slows Python down, hence two runs); and
the counts that show the preemption phase was exercised.
``--65k`` adds a 65,536-host cloud with the same requests per host
(1.3 million requests: long). ``--thesis`` adds the thesis scale: 65,536
hosts and 230,000 requests (target, issue 12: <= 2 minutes on 2 cores).
``--quick``: 1000 hosts, 20 requests per host, no memory run (seconds).
``--json PATH`` also writes the rows.
"""

import argparse
import gc
import json
import os
import platform
import sys
import time
import tracemalloc

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from opie_sched.cmd import simulate  # noqa: E402
from opie_sched.simulator import cloud as cloud_mod  # noqa: E402
from opie_sched.simulator import engine  # noqa: E402
from opie_sched.simulator import policies  # noqa: E402
from opie_sched.workload import generator  # noqa: E402


def require(ok, message):
    """A check that ``python -O`` keeps (unlike ``assert``).

    :raises SystemExit: ``ok`` is false (the run is void).
    """
    if not ok:
        raise SystemExit('benchmark check failed, results void: %s'
                         % message)


def _simulate(hosts, reqs, policy_name, trace_memory):
    policy = policies.make_policy(policy_name)
    gc.collect()
    if trace_memory:
        tracemalloc.start()
    started = time.perf_counter()
    result = engine.Simulator(cloud_mod.Cloud.uniform(hosts),
                              policy).run(reqs)
    wall = time.perf_counter() - started
    peak = None
    if trace_memory:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return result, wall, peak


def run_one(hosts, requests_per_host, load, policy_name, seed, memory=True,
            count=None):
    """One row of the table (a dict): a timed run, then (``memory``) the
    same run under tracemalloc for the peak.

    :param count: number of requests (default ``requests_per_host ×
        hosts``).
    """
    capacity = hosts * cloud_mod.HostSpec().capacity.vcpus
    reqs = generator.generate(
        seed=seed, count=count or requests_per_host * hosts,
        rate_per_hour=simulate.rate_for_load(capacity, load))
    result, wall, _ = _simulate(hosts, reqs, policy_name, False)
    peak = None
    if memory:
        again, _, peak = _simulate(hosts, reqs, policy_name, True)
        require(again.as_dict()['preemption_cost']
                == result.preemption_cost, 'the run with memory tracing '
                'gave another preemption cost')
    return {'hosts': hosts, 'requests': len(reqs), 'events': result.events,
            'wall': wall, 'eps': result.events / wall,
            'peak_mb': float('nan') if peak is None else peak / 2.0 ** 20,
            'preemptions': result.preemptions,
            'decisions': result.preemption_decisions,
            'rejected': result.preemptible_rejected,
            'failed': result.normal_failed,
            'util': result.utilisation()}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--hosts', default='1000,10000',
                   help='comma-separated cloud sizes (default: %(default)s)')
    p.add_argument('--65k', dest='huge', action='store_true',
                   help='also run 65,536 hosts')
    p.add_argument('--requests-per-host', type=int, default=20)
    p.add_argument('--load', type=float, default=1.5)
    p.add_argument('--policy', default='opie', choices=policies.POLICIES)
    p.add_argument('--seed', type=int, default=42)
    p.add_argument('--no-memory', action='store_true',
                   help='skip the tracemalloc run (peak memory)')
    p.add_argument('--thesis', action='store_true',
                   help='also run the thesis scale: 65,536 hosts, 230,000 '
                        'requests')
    p.add_argument('--quick', action='store_true',
                   help='1000 hosts, 20 requests per host, no memory run')
    p.add_argument('--json', metavar='PATH',
                   help='also write the rows to PATH (JSON)')
    args = p.parse_args(argv)
    if args.quick:
        args.hosts, args.requests_per_host = '1000', 20
        args.no_memory = True
    sizes = [(int(h), None) for h in args.hosts.split(',') if h.strip()]
    if args.huge:
        sizes.append((65536, None))
    if args.thesis:
        sizes.append((65536, 230000))
    print('simulator throughput: policy %s, load %g, %d requests per host; '
          '%s, Python %s; events/s from a run without tracemalloc, peak '
          'memory from a second run under it'
          % (args.policy, args.load, args.requests_per_host,
             platform.machine(), platform.python_version()))
    head = ('%7s %9s %9s %8s %10s %9s %11s %10s %9s %8s %6s'
            % ('hosts', 'requests', 'events', 'wall s', 'events/s',
               'peak MB', 'preempted', 'decisions', 'rejected', 'failed',
               'util'))
    print(head)
    print('-' * len(head))
    rows = []
    for hosts, count in sizes:
        print('# %d hosts, %d requests ...' % (
            hosts, count or hosts * args.requests_per_host),
            file=sys.stderr)
        sys.stderr.flush()
        row = run_one(hosts, args.requests_per_host, args.load,
                      args.policy, args.seed,
                      memory=not args.no_memory and count is None,
                      count=count)
        row['thesis'] = count is not None
        rows.append(row)
        print('%(hosts)7d %(requests)9d %(events)9d %(wall)8.1f '
              '%(eps)10.0f %(peak_mb)9.1f %(preemptions)11d %(decisions)10d '
              '%(rejected)9d %(failed)8d %(util)6.2f' % row)
        sys.stdout.flush()
    if args.json:
        with open(args.json, 'w') as out:
            json.dump({'rows': [{k: (None if v != v else v)
                                 for k, v in row.items()} for row in rows],
                       'policy': args.policy, 'load': args.load,
                       'seed': args.seed, 'quick': args.quick}, out,
                      indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main())
