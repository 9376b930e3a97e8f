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
"""``opie-sched repack``: the repacking autoscaler's planner (thesis Paper V).

``opie-sched repack plan APP.json [-f table|json|...]`` shows the
current set, the optimal set for the demand, their prices and the
repacking decision of :func:`opie_sched.flavormix.plan`.

``opie-sched repack simulate --workload increase|seasonal --strategy NAME``
runs one of the thesis' strategies (``S_base``, ``S_base_Repacked``,
``S_delta``, ``S_delta_Repacked``, ``S_Full``, or ``all``) over a generated
workload on the thesis' Table 2 VM types and lists their total costs.

APP.json is one JSON object (prices in currency per hour, times in hours,
capacities and demand in one application unit, e.g. req/min)::

    {
      "types": [{"name": "small1", "price": 0.18, "capacity": 500},
                {"name": "med1", "price": 0.72, "capacity": 2867}],
      "demand": 20000,
      "current": {"small1": 40},
      "d": 16.67,
      "K": 0.01,
      "repack_time": 0.0667,
      "C_extra": 1.2,
      "budget": 10.0,
      "budget_period": 1.0,
      "method": "bnb"
    }

``types`` (required)
    a list of ``{"name", "price", "capacity"}``, an object ``{name:
    {"price", "capacity"}}``, or ``"table2:A"`` / ``"table2:B"`` for the
    thesis' Table 2 types of application A or B.
``demand`` (required)
    the required capacity ``C_req``, a number >= 0.
``current``
    the running set ``{flavor: count}`` (default: nothing running).
``d``
    expected stability interval, hours > 0 (default 1000/60, the thesis'
    1000 minutes).
``K``
    gain threshold (default 0.01).
``R``, or ``repack_time`` with optional ``C_extra``
    the reconfiguration cost in currency, or the repacking time in hours
    and the extra cost per hour during it (default: the price of the
    servers started). Without any of them R is 0.
``budget``, ``budget_period``
    optional budget in currency per ``budget_period`` hours (default 1):
    the sets are capped at what it buys (Merkat Alg. 3).
``method``
    ``"bnb"`` (default) or ``"milp"``.
"""

import json
import sys

from opie_sched.cmd import cli
from opie_sched.cmd import columns
from opie_sched import flavormix

#: Keys of APP.json and the plan() parameters they fill.
_KEYS = {'types': None, 'demand': 'required', 'current': 'current',
         'd': 'd', 'K': 'K', 'R': 'R', 'C_extra': 'c_extra',
         'repack_time': 'repack_time', 'budget': 'budget',
         'budget_period': 'budget_period', 'method': 'method'}


def load_app(path):
    """APP.json as ``(types, plan keyword arguments)``.

    :raises opie_sched.flavormix.RepackingError: unreadable file, bad JSON,
        missing or unknown keys, bad values.
    """
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as exc:
        raise flavormix.RepackingError('cannot read %s: %s'
                                       % (path, exc.strerror or exc))
    except ValueError as exc:
        raise flavormix.RepackingError('%s is not valid JSON: %s'
                                       % (path, exc))
    if not isinstance(doc, dict):
        raise flavormix.RepackingError('%s must hold a JSON object' % path)
    unknown = sorted(set(doc) - set(_KEYS))
    if unknown:
        raise flavormix.RepackingError('%s: unknown key(s) %s (known: %s)' % (
            path, ', '.join(unknown), ', '.join(_KEYS)))
    missing = [k for k in ('types', 'demand') if k not in doc]
    if missing:
        raise flavormix.RepackingError('%s: missing key(s) %s'
                                       % (path, ', '.join(missing)))
    spec = doc['types']
    if isinstance(spec, str):
        app = spec.split(':', 1)[1] if spec.startswith('table2:') else None
        if app not in ('A', 'B'):
            raise flavormix.RepackingError(
                '%s: types must be a list, an object, "table2:A" or '
                '"table2:B", got %r' % (path, spec))
        types = flavormix.thesis_types(app)
    else:
        types = flavormix.vm_types(spec)
    kwargs = {_KEYS[k]: v for k, v in doc.items() if _KEYS[k]}
    kwargs.setdefault('d', 1000 / 60)
    return types, kwargs


#: Columns of ``repack simulate`` (every strategy's result).
SIMULATE_COLUMNS = ('strategy', 'total_cost', 'resource_cost',
                    'reconfig_cost', 'reconfigurations', 'unmet_steps')


class Plan(cli.ShowOne):
    """Show the optimal VM set for a demand and whether to repack to it.

    The repacking decision of thesis Paper V, Algorithm 1.

    APP.json gives the VM types, the demand and the running set (see the
    module documentation of opie_sched.cmd.repack). Fields: the current,
    baseline and optimal sets ({flavor: count}) with their prices
    (currency per hour) and capacities, scaled_out, start/stop/keep, R
    (reconfig_cost, currency), d (hours), K, the gain and the decision
    (repack, reason); target is the set to run.
    """

    errors = (flavormix.RepackingError,)

    def get_parser(self, prog_name):
        pl = super().get_parser(prog_name)
        pl.add_argument('app', metavar='APP.json')
        pl.add_argument('--method', choices=list(flavormix.METHODS),
                        help='optimal-set solver (default: APP.json\'s, '
                             'else %s)' % flavormix.DEFAULT_METHOD)
        return pl

    def take_action(self, args):
        types, kwargs = load_app(args.app)
        if args.method:
            kwargs['method'] = args.method
        result = flavormix.plan(types, **kwargs).as_dict()
        shown = []
        for key, value in sorted(result.items()):
            if isinstance(value, dict):
                value = columns.Counts(value)
            elif isinstance(value, float) or value is None and key == 'gain':
                value = columns.Number(value, '%.6g')
            shown.append(value)
        return sorted(result), shown


class Simulate(cli.Lister):
    """List the total cost of scaling strategies over a workload.

    The workload is generated; the VM types are the thesis' Table 2.

    Runs one of the thesis' strategies (S_base, S_base_Repacked, S_delta,
    S_delta_Repacked, S_Full, and S_base_Repacked_single, the one-type
    repack of Paper V §6.2), or all, over a generated workload. Costs
    are currency; unmet_steps counts the steps whose demand the set did
    not cover. The workload (steps, step length) is described on
    standard error.
    """

    errors = (flavormix.RepackingError,)

    def get_parser(self, prog_name):
        # the strategies run on the simulator's core (opie_sched[sim])
        from opie_sched.simulator import repacking_strategies
        sim = super().get_parser(prog_name)
        sim.add_argument('--workload', required=True,
                         choices=sorted(flavormix.WORKLOADS))
        sim.add_argument('--strategy', required=True,
                         choices=list(repacking_strategies.STRATEGIES)
                         + ['all'])
        sim.add_argument('--seed', type=int, default=0)
        sim.add_argument('--app', choices=['A', 'B'], default='A',
                         help='Table 2 application (default: %(default)s)')
        sim.add_argument('--repack-minutes', type=float, default=4.0,
                         help='repacking time (default: %(default)s; the '
                              'thesis uses 4 and 20)')
        sim.add_argument('--d-minutes', type=float, default=1000.0,
                         help='stability interval (default: %(default)s)')
        sim.add_argument('--K', type=float, default=0.01,
                         help='gain threshold (default: %(default)s)')
        sim.add_argument('--budget', type=float,
                         help='budget, currency per hour (default: none)')
        return sim

    def take_action(self, args):
        from opie_sched.simulator import repacking_strategies
        types = flavormix.thesis_types(args.app)
        demand, step = flavormix.workload(args.workload, seed=args.seed)
        names = (list(repacking_strategies.STRATEGIES)
                 if args.strategy == 'all' else [args.strategy])
        sys.stderr.write('workload %s (seed %d, %d steps of %g min), app '
                         '%s\n' % (args.workload, args.seed, len(demand),
                                   step * 60, args.app))
        rows = []
        for name in names:
            sim = repacking_strategies.make_strategy(
                name, types, d=args.d_minutes / 60.0, K=args.K,
                repack_time=args.repack_minutes / 60.0, budget=args.budget
            ).run(demand, step)
            rows.append([sim.strategy,
                         columns.Number(sim.total_cost, '%.2f'),
                         columns.Number(sim.resource_cost, '%.2f'),
                         columns.Number(sim.reconfig_cost, '%.2f'),
                         sim.reconfigurations,
                         sum(1 for u in sim.unmet if u > 0)])
        return SIMULATE_COLUMNS, rows
