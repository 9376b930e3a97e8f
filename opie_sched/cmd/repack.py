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

``opie-sched repack plan APP.json [--format table|json]`` prints the
current set, the optimal set for the demand, their prices and the
repacking decision of :func:`opie_sched.repacking.plan`.

``opie-sched repack simulate --workload increase|seasonal --strategy NAME``
runs one of the thesis' strategies (``S_base``, ``S_base_Repacked``,
``S_delta``, ``S_delta_Repacked``, ``S_Full``, or ``all``) over a generated
workload on the thesis' Table 2 VM types and prints the total cost.

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

from opie_sched import repacking

#: Keys of APP.json and the plan() parameters they fill.
_KEYS = {'types': None, 'demand': 'required', 'current': 'current',
         'd': 'd', 'K': 'K', 'R': 'R', 'C_extra': 'c_extra',
         'repack_time': 'repack_time', 'budget': 'budget',
         'budget_period': 'budget_period', 'method': 'method'}


def load_app(path):
    """APP.json as ``(types, plan keyword arguments)``.

    :raises opie_sched.repacking.RepackingError: unreadable file, bad JSON,
        missing or unknown keys, bad values.
    """
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as exc:
        raise repacking.RepackingError('cannot read %s: %s'
                                       % (path, exc.strerror or exc))
    except ValueError as exc:
        raise repacking.RepackingError('%s is not valid JSON: %s'
                                       % (path, exc))
    if not isinstance(doc, dict):
        raise repacking.RepackingError('%s must hold a JSON object' % path)
    unknown = sorted(set(doc) - set(_KEYS))
    if unknown:
        raise repacking.RepackingError('%s: unknown key(s) %s (known: %s)' % (
            path, ', '.join(unknown), ', '.join(_KEYS)))
    missing = [k for k in ('types', 'demand') if k not in doc]
    if missing:
        raise repacking.RepackingError('%s: missing key(s) %s'
                                       % (path, ', '.join(missing)))
    spec = doc['types']
    if isinstance(spec, str):
        app = spec.split(':', 1)[1] if spec.startswith('table2:') else None
        if app not in ('A', 'B'):
            raise repacking.RepackingError(
                '%s: types must be a list, an object, "table2:A" or '
                '"table2:B", got %r' % (path, spec))
        types = repacking.thesis_types(app)
    else:
        types = repacking.vm_types(spec)
    kwargs = {_KEYS[k]: v for k, v in doc.items() if _KEYS[k]}
    kwargs.setdefault('d', 1000 / 60)
    return types, kwargs


def _set_text(counts):
    return ', '.join('%s x%d' % kv for kv in sorted(counts.items())) or '-'


def format_plan(result):
    """Human-readable table of a :meth:`RepackPlan.as_dict` result."""
    lines = ['%-12s %-44s %10s %12s'
             % ('set', 'servers', 'price/h', 'capacity')]
    rows = [('current', result['current'], result['current_price'],
             result['current_capacity']),
            ('baseline', result['baseline'], result['baseline_price'],
             result['baseline_capacity']),
            ('optimal', result['optimal'], result['optimal_price'],
             result['optimal_capacity'])]
    for label, counts, price, cap in rows:
        lines.append('%-12s %-44s %10.4g %12g' % (
            label, _set_text(counts), price, cap))
    lines.append('')
    lines.append('required capacity: %g' % result['required'])
    if result['scaled_out']:
        lines.append('scale-out first:   %s' % _set_text(result['scaled_out']))
    lines.append('start: %s; stop: %s; keep: %s' % (
        _set_text(result['start']), _set_text(result['stop']),
        _set_text(result['keep'])))
    lines.append('R = %g, d = %g h, K = %g, gain = %s' % (
        result['reconfig_cost'], result['d'], result['K'],
        '-' if result['gain'] is None else '%.6g' % result['gain']))
    lines.append('decision: %s' % result['reason'])
    return '\n'.join(lines)


def _plan(args):
    types, kwargs = load_app(args.app)
    if args.method:
        kwargs['method'] = args.method
    result = repacking.plan(types, **kwargs).as_dict()
    if args.format == 'json':
        sys.stdout.write(json.dumps(result, indent=2, sort_keys=True) + '\n')
    else:
        sys.stdout.write(format_plan(result) + '\n')
    return 0


def _simulate(args):
    types = repacking.thesis_types(args.app)
    demand, step = repacking.workload(args.workload, seed=args.seed)
    names = (list(repacking.STRATEGIES) if args.strategy == 'all'
             else [args.strategy])
    results = []
    for name in names:
        sim = repacking.make_strategy(
            name, types, d=args.d_minutes / 60.0, K=args.K,
            repack_time=args.repack_minutes / 60.0, budget=args.budget
        ).run(demand, step)
        results.append({'strategy': sim.strategy,
                        'total_cost': sim.total_cost,
                        'resource_cost': sim.resource_cost,
                        'reconfig_cost': sim.reconfig_cost,
                        'reconfigurations': sim.reconfigurations,
                        'unmet_steps': sum(1 for u in sim.unmet if u > 0)})
    if args.format == 'json':
        out = {'workload': args.workload, 'seed': args.seed,
               'app': args.app, 'steps': len(demand), 'step_hours': step,
               'results': results}
        sys.stdout.write(json.dumps(out, indent=2) + '\n')
        return 0
    sys.stdout.write('workload %s (seed %d, %d steps of %g min), app %s\n'
                     % (args.workload, args.seed, len(demand), step * 60,
                        args.app))
    sys.stdout.write('%-18s %12s %10s %8s\n' % ('strategy', 'total cost',
                                                'R paid', 'repacks'))
    for r in results:
        sys.stdout.write('%-18s %12.2f %10.2f %8d\n' % (
            r['strategy'], r['total_cost'], r['reconfig_cost'],
            r['reconfigurations']))
    return 0


def register(subparsers):
    parser = subparsers.add_parser(
        'repack', help='repacking autoscaler planner (optimal VM sets)')
    sub = parser.add_subparsers(dest='repack_command', metavar='COMMAND')
    sub.required = True
    pl = sub.add_parser(
        'plan', help='optimal set for a demand and whether to repack the '
                     'running set to it')
    pl.add_argument('app', metavar='APP.json')
    pl.add_argument('--format', choices=['table', 'json'], default='table')
    pl.add_argument('--method', choices=list(repacking.METHODS),
                    help='optimal-set solver (default: APP.json\'s, '
                         'else %s)' % repacking.DEFAULT_METHOD)
    pl.set_defaults(func=_plan, errors=(repacking.RepackingError,))

    sim = sub.add_parser(
        'simulate', help='total cost of a scaling strategy over a '
                         'generated workload (thesis Table 2 types)')
    sim.add_argument('--workload', required=True,
                     choices=sorted(repacking.WORKLOADS))
    sim.add_argument('--strategy', required=True,
                     choices=list(repacking.STRATEGIES) + ['all'])
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
    sim.add_argument('--format', choices=['table', 'json'], default='table')
    sim.set_defaults(func=_simulate, errors=(repacking.RepackingError,))
