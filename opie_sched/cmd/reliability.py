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
baselines (see :mod:`opie_sched.diehard`). Shows n (the extra tasks), the
tasks per combined failure domain and the achieved reliability S(x).
"""

import argparse

from opie_sched.cmd import cli
from opie_sched.cmd import columns
from opie_sched.diehard import planner as dh_plan
from opie_sched.diehard import topology as dh_topo


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


_PLACEMENT = (('network domain', 'network'), ('power domain', 'power'),
              ('tasks', 'tasks'))


class Plan(cli.ShowOne):
    """Plan extra tasks to survive correlated failures (Die-Hard).

    The extra tasks and their placement that keep K tasks running for T
    hours with probability S_MIN.

    Plans a job of K identical tasks (one per host) with the Die-Hard
    planner of thesis Paper VI or one of its baselines. Fields:
    algorithm, tasks (K), extra_tasks (n), total_tasks, hours, target,
    target_met, reliability (value S(x), error_bound, method),
    affinity_score, placement (tasks per network and power domain),
    network_domains and power_domains (tasks per domain), and with
    --trace every reliability evaluation.
    """

    errors = (dh_topo.TopologyError, dh_topo.PlanError)

    def get_parser(self, prog_name):
        pl = super().get_parser(prog_name)
        pl.add_argument('--tasks', '-k', type=_int_at_least(1),
                        required=True, metavar='K',
                        help='tasks that must keep running')
        pl.add_argument('--target', type=_probability, required=True,
                        metavar='S_MIN',
                        help='required reliability, e.g. 0.9999')
        pl.add_argument('--hours', type=_hours, required=True, metavar='T',
                        help='job duration in hours')
        where = pl.add_mutually_exclusive_group(required=True)
        where.add_argument('--topology', metavar='TOPOLOGY.yaml',
                           help='failure domains and rates (see '
                                'opie_sched.diehard.topology.'
                                'topology_from_dict)')
        where.add_argument('--thesis-topology', action='store_true',
                           help='the thesis\' evaluation cluster: 9600 '
                                'hosts, 61 network and 4 power domains')
        pl.add_argument('--seed', type=int, default=0,
                        help='seed of the thesis topology\'s ToR failure '
                             'rates (default: %(default)s)')
        pl.add_argument('--algorithm', choices=dh_plan.ALGORITHMS,
                        default='diehard')
        pl.add_argument('--max-extra', type=_int_at_least(0), metavar='N',
                        help='largest number of extra tasks to consider '
                             '(default: every free host)')
        pl.add_argument('--trace', action='store_true',
                        help='include every reliability evaluation (the '
                             'trace field)')
        return pl

    def take_action(self, args):
        if args.thesis_topology:
            topology = dh_topo.thesis_topology(seed=args.seed)
        else:
            topology = dh_topo.load_topology(args.topology)
        plan = dh_plan.plan(topology, args.tasks, args.target, args.hours,
                            algorithm=args.algorithm,
                            max_extra=args.max_extra)
        result = plan_result(plan)
        rel = result['reliability']
        shown = {
            'reliability': columns.Text(
                rel, '%.10f (error bound %.1e, %s)'
                % (rel['value'], rel['error_bound'], rel['method'])),
            'placement': columns.Table(result['placement'], _PLACEMENT),
            'network_domains': columns.Mapping(result['network_domains']),
            'power_domains': columns.Mapping(result['power_domains']),
            'trace': columns.Json(result['trace']),
        }
        if not args.trace:
            result.pop('trace')
        return (list(result),
                [shown.get(k, v) for k, v in result.items()])
