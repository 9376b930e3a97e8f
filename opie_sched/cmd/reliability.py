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
"""``opie-sched reliability plan``: how many extra tasks, placed where.

Plans a job of K identical tasks (one per host) that must keep K tasks
running for T hours with probability S_min despite correlated network and
power failures, with the Die-Hard planner of thesis Paper VI or one of its
baselines (see :mod:`opie_sched.diehard`). Prints n (the extra tasks), the
tasks per combined failure domain and the achieved reliability S(x).
"""

import argparse
import json
import sys

from opie_sched import diehard


def _probability(text):
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not 0 < value < 1:
        raise argparse.ArgumentTypeError(
            'must be a probability strictly between 0 and 1, got %r' % text)
    return value


def _int_at_least(minimum):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(
                'must be an integer >= %d, got %r' % (minimum, text))
        return value
    return parse


def _hours(text):
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not 0 <= value < float('inf'):
        raise argparse.ArgumentTypeError(
            'must be a number of hours >= 0, got %r' % text)
    return value


def plan_result(plan):
    """The plan as a JSON-ready dict.

    ``{"algorithm", "tasks", "extra_tasks", "total_tasks", "hours",
    "target", "target_met", "reliability": {"value", "error_bound",
    "method"}, "affinity_score", "placement": [{"network", "power",
    "tasks"}], "network_domains": {name: tasks}, "power_domains": {name:
    tasks}, "trace": [...]}``.
    """
    rel = plan.reliability
    return {
        'algorithm': plan.algorithm, 'tasks': plan.tasks,
        'extra_tasks': plan.extra, 'total_tasks': plan.total,
        'hours': plan.hours, 'target': plan.target,
        'target_met': plan.met,
        'reliability': {'value': rel.value, 'error_bound': rel.error_bound,
                        'method': rel.method},
        'affinity_score': plan.affinity_score,
        'placement': [{'network': net, 'power': power, 'tasks': x}
                      for (net, power), x in plan.placement.items()],
        'network_domains': dict(plan.per_network_domain()),
        'power_domains': dict(plan.per_power_domain()),
        'trace': [step._asdict() for step in plan.trace],
    }


def format_table(result):
    lines = [
        'algorithm:      %s' % result['algorithm'],
        'tasks (K):      %d' % result['tasks'],
        'extra tasks:    %d (total %d)' % (result['extra_tasks'],
                                           result['total_tasks']),
        'reliability:    %.10f (error bound %.1e, %s) for %g h'
        % (result['reliability']['value'],
           result['reliability']['error_bound'],
           result['reliability']['method'], result['hours']),
        'target:         %g (%s)' % (result['target'],
                                     'met' if result['target_met']
                                     else 'NOT met'),
        'affinity score: %d' % result['affinity_score'],
        '',
        '%-20s %-20s %6s' % ('network domain', 'power domain', 'tasks'),
    ]
    for cell in result['placement']:
        lines.append('%-20s %-20s %6d' % (cell['network'], cell['power'],
                                          cell['tasks']))
    lines.append('')
    lines.append('%-20s %6s' % ('power domain', 'tasks'))
    for name, tasks in result['power_domains'].items():
        lines.append('%-20s %6d' % (name, tasks))
    return '\n'.join(lines)


def _plan(args):
    if args.thesis_topology:
        topology = diehard.thesis_topology(seed=args.seed)
    else:
        topology = diehard.load_topology(args.topology)
    plan = diehard.plan(topology, args.tasks, args.target, args.hours,
                        algorithm=args.algorithm, max_extra=args.max_extra)
    result = plan_result(plan)
    if args.format == 'json':
        if not args.trace:
            result.pop('trace')
        sys.stdout.write(json.dumps(result, indent=2) + '\n')
    else:
        sys.stdout.write(format_table(result) + '\n')
    return 0


def register(subparsers):
    parser = subparsers.add_parser(
        'reliability', help='plan extra tasks to survive correlated '
                            'failures (Die-Hard)')
    sub = parser.add_subparsers(dest='reliability_command',
                                metavar='COMMAND')
    sub.required = True
    pl = sub.add_parser(
        'plan', help='the extra tasks and their placement that keep K tasks '
                     'running for T hours with probability S_MIN')
    pl.add_argument('--tasks', '-k', type=_int_at_least(1), required=True,
                    metavar='K', help='tasks that must keep running')
    pl.add_argument('--target', type=_probability, required=True,
                    metavar='S_MIN', help='required reliability, e.g. 0.9999')
    pl.add_argument('--hours', type=_hours, required=True, metavar='T',
                    help='job duration in hours')
    where = pl.add_mutually_exclusive_group(required=True)
    where.add_argument('--topology', metavar='TOPOLOGY.yaml',
                       help='failure domains and rates (see '
                            'opie_sched.diehard.topology_from_dict)')
    where.add_argument('--thesis-topology', action='store_true',
                       help='the thesis\' evaluation cluster: 9600 hosts, '
                            '61 network and 4 power domains')
    pl.add_argument('--seed', type=int, default=0,
                    help='seed of the thesis topology\'s ToR failure rates '
                         '(default: %(default)s)')
    pl.add_argument('--algorithm', choices=diehard.ALGORITHMS,
                    default='diehard')
    pl.add_argument('--max-extra', type=_int_at_least(0), metavar='N',
                    help='largest number of extra tasks to consider '
                         '(default: every free host)')
    pl.add_argument('--format', choices=['table', 'json'], default='table')
    pl.add_argument('--trace', action='store_true',
                    help='include every reliability evaluation in the JSON '
                         'output')
    pl.set_defaults(func=_plan,
                    errors=(diehard.TopologyError, diehard.PlanError))
