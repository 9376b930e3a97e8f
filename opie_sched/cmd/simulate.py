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
"""``opie-sched simulate``: the preemption code on a simulated data centre.

Runs a workload on N simulated hosts with the scheduler's own pure
preemption code (:mod:`opie_sched.simulator`), no Nova needed::

    opie-sched simulate --trace NASA-iPSC-1993-3.1-cln.swf.gz --hosts 16
    opie-sched simulate --generate 5000 --hosts 64 --policy retry
    opie-sched simulate --generate 2000 --policy all     # policies compared
    opie-sched simulate --scenario nasa-backfill --limit 1000

It prints progress on standard error, shows the results through cliff's
formatters (``-f table|json|yaml|value|shell``, ``-c FIELD``) and writes
``simulation.csv`` (time series) and ``simulation.png`` to
``--output-dir``.

The ``nasa-backfill`` scenario is §5.1 of López García et al., "An
efficient cloud scheduler design supporting preemptible instances": an HPC
system's batch jobs (the NASA Ames iPSC/860 trace, all normal) with its idle
slots backfilled by cloud jobs run as preemptible instances (a generated
stream offering ``--backfill-load`` × the cloud's vCPU capacity), compared
with the same trace without backfilling. The trace is looked up in
``../shared/traces`` next to the repository (or ``--traces-dir``); without
it the scenario is skipped with a message.
"""

import dataclasses
import inspect
import math
import os
import sys
import time

from cliff import columns as cliff_columns

from opie_sched.cmd import cli
from opie_sched.cmd import columns
from opie_sched.simulator import cloud as cloud_mod
from opie_sched.simulator import engine
from opie_sched.simulator import policies
from opie_sched.simulator import scenarios as named
from opie_sched.workload import generator
from opie_sched.workload import mapping
from opie_sched.workload import swf

SCENARIOS = ('nasa-backfill',) + tuple(named.SCENARIOS)
NASA_TRACE = 'NASA-iPSC-1993-3.1-cln.swf.gz'
#: Named scenarios that take ``--discovery``.
DISCOVERY_SCENARIOS = ('rpm-vs-ffd',)
#: Named scenarios that take ``--seed-count`` (their full run defaults to
#: the papers' 10 runs).
SEED_COUNT_SCENARIOS = ('rpm-weights', 'rpm-fig3', 'gossip-redistribution',
                        'themis-value', 'rpm-vs-ffd')
#: Named scenarios that replay the shared traces and take ``--traces-dir``
#: and ``--limit`` (trace jobs per trace).
TRACE_SCENARIOS = ('headroom-tradeoff', 'score-replay')
#: Job numbers of the generated backfill start above this, so they never
#: collide with a trace's.
BACKFILL_JOB_BASE = 1000000000


def default_traces_dir():
    """``<repository>/../shared/traces``."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    return os.path.join(root, '..', 'shared', 'traces')


def _mean_generated_request(runtime_min=600.0, runtime_max=4 * 3600.0,
                            exponent=2.0):
    """Mean (vCPU, run time in s) of a default generated request (flavors
    small/medium/large equally likely, bounded power-law run time).
    """
    vcpus = sum(f[0] for f in generator.FLAVORS.values()) / len(
        generator.FLAVORS)
    a, b = runtime_min, runtime_max
    if abs(exponent - 1.0) < 1e-12:
        mean = (b - a) / math.log(b / a)
    elif abs(exponent - 2.0) < 1e-12:
        mean = math.log(b / a) / (1.0 / a - 1.0 / b)
    else:
        k = 1.0 - exponent
        mean = ((k / (k + 1)) * (b ** (k + 1) - a ** (k + 1))
                / (b ** k - a ** k))
    return vcpus, mean


def rate_for_load(capacity_vcpus, load):
    """Requests per hour of :func:`~opie_sched.workload.generator.generate`
    (default sizes) that offer ``load`` × ``capacity_vcpus`` vCPU.
    """
    vcpus, runtime = _mean_generated_request()
    return load * capacity_vcpus / (vcpus * runtime / 3600.0)


def backfill_requests(horizon, capacity_vcpus, load=1.0, seed=42):
    """Generated preemptible requests arriving in ``[0, horizon]`` s that
    offer ``load`` × ``capacity_vcpus`` vCPU (job numbers above
    :data:`BACKFILL_JOB_BASE`).
    """
    if horizon <= 0 or load <= 0:
        return []
    rate = rate_for_load(capacity_vcpus, load)
    count = int(math.ceil(rate * horizon / 3600.0)) + 1
    reqs = generator.generate(seed=seed, count=count, rate_per_hour=rate,
                              preemptible_fraction=1.0)
    return [dataclasses.replace(r, job_id=BACKFILL_JOB_BASE + r.job_id)
            for r in reqs if r.submit <= horizon]


def nasa_backfill(trace_path, hosts=16, limit=1000, policy=None,
                  spec=None, backfill_load=1.0, seed=42,
                  preemptible_rule='none', mapping_policy=None,
                  progress=None, progress_every=None):
    """The ``nasa-backfill`` scenario (see the module docstring).

    :param trace_path: the NASA trace (any SWF trace works).
    :param limit: map at most this many jobs (None: the whole trace).
    :param policy: a :class:`~opie_sched.simulator.policies.Policy`
        (default ``opie``, billing-period cost).
    :param preemptible_rule: which trace jobs are preemptible too
        (:func:`~opie_sched.workload.mapping.parse_rule`; default none).
    :param progress: callable taking a line of text, or None.
    :param progress_every: arrivals between progress lines (default: a
        fifth of the workload; 0: none).
    :returns: ``(with_backfill, without_backfill, info)``: two
        :class:`~opie_sched.simulator.engine.SimResult` measured over the
        same window (first arrival to the trace's last job) and the trace's
        :class:`~opie_sched.workload.mapping.MappingSummary`.
    """
    if policy is None:
        policy = policies.make_policy()
    if mapping_policy is None:
        mapping_policy = mapping.MappingPolicy(
            preemptible_rule=preemptible_rule)
    trace, info = mapping.map_trace(swf.iter_swf(trace_path),
                                    mapping_policy, limit=limit)
    if not trace:
        raise ValueError('%s: no job to replay (%s)' % (trace_path, info))
    horizon = max(r.submit for r in trace)
    capacity = cloud_mod.Cloud.uniform(hosts, spec).capacity_vcpus
    workload = trace + backfill_requests(horizon, capacity, backfill_load,
                                         seed)
    results = []
    for label, reqs in (('with backfilling', workload),
                        ('without backfilling',
                         [r for r in workload if not r.preemptible])):
        every = (max(1, len(reqs) // 5) if progress_every is None
                 else progress_every)
        sim = engine.Simulator(cloud_mod.Cloud.uniform(hosts, spec), policy,
                               progress=progress, progress_every=every)
        results.append(sim.run(reqs, label=label, horizon=horizon))
    return results[0], results[1], info


def scenario_text(with_bf, without_bf):
    """The scenario's one-paragraph conclusion."""
    return ('vCPU utilisation %.1f %% without backfilling, %.1f %% with '
            '(%+.1f points; preemptible %.1f %%); normal requests failed: '
            '%d without, %d with (%d blocked by preemptibles); %d '
            'instances preempted in %d decisions, total cost %.0f'
            % (100 * without_bf.utilisation(), 100 * with_bf.utilisation(),
               100 * (with_bf.utilisation() - without_bf.utilisation()),
               100 * with_bf.utilisation(('preemptible',)),
               without_bf.normal_failed, with_bf.normal_failed,
               with_bf.normal_blocked_by_preemptible, with_bf.preemptions,
               with_bf.preemption_decisions, with_bf.preemption_cost))


def _say(msg):
    """Progress and narrative: standard error (standard output is the
    formatter's).
    """
    sys.stderr.write(msg + '\n')
    sys.stderr.flush()


def _spec(args):
    return cloud_mod.HostSpec(
        vcpus=args.host_vcpus, memory_mb=args.host_memory_mb,
        disk_gb=args.host_disk_gb,
        cpu_allocation_ratio=args.cpu_allocation_ratio,
        ram_allocation_ratio=args.ram_allocation_ratio,
        disk_allocation_ratio=args.disk_allocation_ratio)


def _mapping_policy(args, default_rule):
    return mapping.MappingPolicy(
        procs_per_vcpu=args.procs_per_vcpu,
        max_vcpus_per_server=args.max_vcpus_per_server,
        time_compression=args.time_compression,
        preemptible_rule=args.preemptible or default_rule)


def _workload(args, spec):
    if args.trace:
        trace = swf.read_swf(args.trace, max_jobs=args.max_jobs)
        reqs, info = mapping.map_trace(
            trace, _mapping_policy(args, mapping.DEFAULT_RULE),
            limit=args.limit)
        return reqs, '%s (%s)' % (os.path.basename(args.trace), info)
    capacity = args.hosts * spec.capacity.vcpus
    rate = args.rate or rate_for_load(capacity, args.load)
    reqs = generator.generate(
        seed=args.seed, count=args.generate, rate_per_hour=rate,
        preemptible_fraction=args.preemptible_fraction)
    return reqs, ('generated: %d requests, seed %d, %.1f/h, %g preemptible'
                  % (args.generate, args.seed, rate,
                     args.preemptible_fraction))


def _write(args, results, title):
    """The CSV time series and the PNG plot: ``[(field, path), ...]``."""
    os.makedirs(args.output_dir, exist_ok=True)
    from opie_sched.simulator import report
    files = [('time_series', report.write_csv(
        os.path.join(args.output_dir, 'simulation.csv'), results))]
    if not args.no_plot:
        files.append(('plot', report.plot(
            os.path.join(args.output_dir, 'simulation.png'), results,
            title=title)))
    return files


def _progress_every(args, n):
    if args.progress_every is not None:
        return args.progress_every
    return max(1, n // 5)


#: Rows of the results table: (metric, key of SimResult.as_dict() or
#: callable(as_dict) -> value, printf format).
RESULT_ROWS = (
    ('policy', 'policy', '%s'),
    ('hosts', 'hosts', '%d'),
    ('vCPU capacity', 'capacity_vcpus', '%g'),
    ('requests', 'requests', '%d'),
    ('  normal', 'normal_requests', '%d'),
    ('  preemptible', 'preemptible_requests', '%d'),
    ('servers requested', 'servers_requested', '%d'),
    ('servers booted', 'servers_booted', '%d'),
    ('normal requests failed', 'normal_failed', '%d'),
    ('  of which blocked by preemptibles', 'normal_blocked_by_preemptible',
     '%d'),
    ('preemptible requests rejected', 'preemptible_rejected', '%d'),
    ('preemption decisions', 'preemption_decisions', '%d'),
    ('instances preempted', 'preemptions', '%d'),
    ('total preemption cost', 'preemption_cost', '%.0f'),
    ('preempted work (vCPU h)', lambda r: r['lost_vcpu_seconds'] / 3600.0,
     '%.1f'),
    ('scheduling passes', 'scheduling_passes', '%d'),
    ('  extra passes', 'extra_passes', '%d'),
    ('vCPU utilisation, all (%)', lambda r: 100 * r['utilisation'], '%.1f'),
    ('vCPU utilisation, normal (%)',
     lambda r: 100 * r['utilisation_normal'], '%.1f'),
    ('vCPU utilisation, preemptible (%)',
     lambda r: 100 * r['utilisation_preemptible'], '%.1f'),
    ('mean active hosts', 'mean_active_hosts', '%.1f'),
    ('utilisation window (h)', lambda r: '%.1f-%.1f' % tuple(
        x / 3600.0 for x in r['window_seconds']), '%s'),
    ('events', 'events', '%d'),
    ('events per wall second', 'events_per_second', '%.0f'),
)


class Results(cliff_columns.FormattableColumn):
    """Simulation results: a table of :data:`RESULT_ROWS` (one column per
    run) for people, the list of ``SimResult.as_dict()`` for machines.
    """

    def human_readable(self):
        header = ['metric'] + [r['label'] for r in self._value]
        rows = []
        for name, get, fmt in RESULT_ROWS:
            rows.append([name] + [
                fmt % (get(r) if callable(get) else r[get])
                for r in self._value])
        return columns.table(header, rows)


def _results_fields(results, **extra):
    """``(fields, values)``: ``extra`` then ``results``."""
    fields = list(extra) + ['results']
    values = list(extra.values()) + [
        Results([r.as_dict() for r in results])]
    return fields, values


def _discovery_kwargs(args):
    """The scenario's keyword arguments for ``--discovery``."""
    if args.discovery is None:
        return {}
    if args.scenario not in DISCOVERY_SCENARIOS:
        raise cli.UsageError('--discovery is for --scenario %s'
                             % ', '.join(DISCOVERY_SCENARIOS))
    return {'discovery': args.discovery}


def _seed_count_kwargs(args):
    """The scenario's keyword arguments for ``--seed-count``."""
    if args.seed_count is None:
        return {}
    if args.scenario not in SEED_COUNT_SCENARIOS:
        raise cli.UsageError('--seed-count is for --scenario %s'
                             % ', '.join(SEED_COUNT_SCENARIOS))
    if args.seed_count < 1:
        raise cli.UsageError('--seed-count must be >= 1, got %d'
                             % args.seed_count)
    return {'count': args.seed_count}


def _trace_kwargs(args):
    """The scenario's keyword arguments for ``--traces-dir`` and
    ``--limit`` (:data:`TRACE_SCENARIOS` only; nasa-backfill reads them
    itself).
    """
    if args.scenario not in TRACE_SCENARIOS:
        return {}
    kwargs = {}
    if args.traces_dir is not None:
        kwargs['directory'] = args.traces_dir
    if args.limit is not None:
        if args.limit < 1:
            raise cli.UsageError('--limit must be >= 1, got %d'
                                 % args.limit)
        kwargs['jobs'] = args.limit
    return kwargs


def _run_registered(name, reduced, seed, **kwargs):
    """``(result, text, seconds)`` of a scenario of the registry, with
    ``kwargs`` (e.g. ``discovery``) passed to the scenario's function.

    While :func:`opie_sched.simulator.scenarios.run` takes only
    ``reduced`` and ``seed``, a scenario given more is called from the
    registry's table (:data:`.scenarios.SCENARIOS`) here.
    """
    params = inspect.signature(named.run).parameters
    if not kwargs or set(kwargs) <= set(params) or any(
            p.kind is p.VAR_KEYWORD for p in params.values()):
        return named.run(name, reduced=reduced, seed=seed, **kwargs)
    start = time.monotonic()
    result, text = named.SCENARIOS[name](reduced=reduced, seed=seed,
                                         **kwargs)
    return result, text, time.monotonic() - start


def _run_named(args):
    """A scenario of :mod:`opie_sched.simulator.scenarios`: its result's
    fields, ``runtime_s`` and ``report`` (the paper's table next to
    ours). Nested fields (lists, mappings) are shown with ``--long`` and
    always in the json and yaml formats.
    """
    kwargs = _discovery_kwargs(args)
    kwargs.update(_seed_count_kwargs(args))
    kwargs.update(_trace_kwargs(args))
    result, text, seconds = _run_registered(
        args.scenario, args.reduced, args.seed, **kwargs)
    nested = args.long or args.formatter in ('json', 'yaml')
    fields, values = [], []
    for key, value in result.items():
        if isinstance(value, (dict, list, tuple)):
            if not nested:
                continue
            value = columns.Json(value)
        else:
            value = columns.plain(value)
        fields.append(key)
        values.append(value)
    fields += ['runtime_s', 'report']
    values += [columns.Number(seconds, '%.1f'), text]
    return fields, values


def _run_scenario(args):
    if args.scenario in named.SCENARIOS:
        return _run_named(args)
    _discovery_kwargs(args)
    _seed_count_kwargs(args)
    traces = args.traces_dir or default_traces_dir()
    path = os.path.join(traces, NASA_TRACE)
    if not os.path.isfile(path):
        reason = ('trace %s not found (expected in %s; use --traces-dir)'
                  % (NASA_TRACE, os.path.abspath(traces)))
        _say('opie-sched simulate: skipping scenario nasa-backfill: %s'
             % reason)
        return ('scenario', 'skipped', 'reason'), (args.scenario, True,
                                                   reason)
    spec = _spec(args)
    policy = policies.make_policy(args.policy if args.policy != 'all'
                                  else policies.DEFAULT_POLICY,
                                  args.cost, args.billing_period)
    limit = args.limit if args.limit is not None else 1000
    _say('opie-sched simulate: scenario nasa-backfill: %s, first %d jobs, '
         '%d hosts x %s, policy %s, cost %s, backfill load %g'
         % (NASA_TRACE, limit, args.hosts, tuple(spec.capacity), policy.name,
            args.cost, args.backfill_load))
    with_bf, without_bf, info = nasa_backfill(
        path, hosts=args.hosts, limit=limit, policy=policy, spec=spec,
        backfill_load=args.backfill_load, seed=args.seed,
        preemptible_rule=args.preemptible or 'none',
        mapping_policy=_mapping_policy(args, 'none'), progress=_say,
        progress_every=args.progress_every)
    files = _write(args, [with_bf, without_bf],
                   'nasa-backfill: %s, %d hosts' % (NASA_TRACE, args.hosts))
    fields, values = _results_fields(
        [with_bf, without_bf], scenario=args.scenario, trace=str(info),
        conclusion=scenario_text(with_bf, without_bf))
    return fields + [f for f, _ in files], values + [p for _, p in files]


class Simulate(cli.ShowOne):
    """Simulate a data centre running the preemption code on a workload.

    The workload is a trace or generated.

    Runs a workload on N simulated hosts with the scheduler's own pure
    preemption code, no Nova needed, and shows the results (one column
    per policy) with the paths of simulation.csv (time series) and
    simulation.png; progress goes to standard error. A named scenario
    (--scenario) shows the paper's table next to ours (the report field)
    and the scenario's result.
    """

    errors = (ValueError, OSError)

    def get_parser(self, prog_name):
        p = super().get_parser(prog_name)
        src = p.add_mutually_exclusive_group()
        src.add_argument('--trace', metavar='FILE.swf',
                         help='Standard Workload Format trace (gzip or plain)')
        src.add_argument('--generate', metavar='N', type=int, default=1000,
                         help='generate N requests (default: %(default)s)')
        src.add_argument('--scenario', choices=SCENARIOS,
                         help='a named scenario: nasa-backfill replays the '
                              'NASA trace with and without preemptible '
                              'backfilling; the others show a paper\'s table '
                              'next to ours (opie_sched.simulator.scenarios)')
        p.add_argument('--reduced', action='store_true',
                       help='named scenarios other than nasa-backfill: the '
                            'small version run by the unit tests')
        p.add_argument('--hosts', type=int, default=16,
                       help='simulated hosts (default: %(default)s)')
        p.add_argument('--host-vcpus', type=float, default=8)
        p.add_argument('--host-memory-mb', type=float, default=16000)
        p.add_argument('--host-disk-gb', type=float, default=200)
        p.add_argument('--cpu-allocation-ratio', type=float, default=1.0)
        p.add_argument('--ram-allocation-ratio', type=float, default=1.0)
        p.add_argument('--disk-allocation-ratio', type=float, default=1.0)
        p.add_argument('--policy', default=policies.DEFAULT_POLICY,
                       choices=policies.POLICIES + ('all',),
                       help='scheduling policy, or all of them side by side '
                            '(default: %(default)s)')
        p.add_argument('--cost', default=policies.DEFAULT_COST,
                       metavar='MODULE[:MULT],...',
                       help='cost modules with multipliers, as '
                            '[opie_preemption] cost_modules (default: '
                            '%(default)s)')
        p.add_argument('--billing-period', type=float, default=3600,
                       help='seconds, for the billing_period cost module')
        p.add_argument('--seed', type=int, default=42,
                       help='seed of generated workloads')
        p.add_argument('--rate', type=float, default=None,
                       help='generated requests per hour (default: what '
                            'offers --load x the cloud\'s vCPU)')
        p.add_argument('--load', type=float, default=1.2,
                       help='offered load of a generated workload, as a '
                            'fraction of vCPU capacity (default: %(default)s)')
        p.add_argument('--preemptible-fraction', type=float, default=0.5,
                       help='share of generated requests that are preemptible')
        p.add_argument('--limit', type=int, default=None,
                       help='map at most this many trace jobs (nasa-backfill: '
                            'default 1000; headroom-tradeoff: per trace, '
                            'default its full run\'s prefix)')
        p.add_argument('--max-jobs', type=int, default=None,
                       help='read at most this many trace lines')
        p.add_argument('--preemptible', metavar='RULE',
                       help='which trace jobs are preemptible: none, all, '
                            'queue:N, partition:N, fraction:F (default '
                            '%s; nasa-backfill: none)' % mapping.DEFAULT_RULE)
        p.add_argument('--procs-per-vcpu', type=float, default=1)
        p.add_argument('--max-vcpus-per-server', type=int, default=8)
        p.add_argument('--time-compression', type=float, default=1.0,
                       help='trace seconds per simulated second')
        p.add_argument('--backfill-load', type=float, default=1.0,
                       help='nasa-backfill: vCPU offered by the preemptible '
                            'backfill, as a fraction of capacity')
        p.add_argument('--traces-dir', default=None,
                       help='nasa-backfill, headroom-tradeoff: where the '
                            'traces are (default: ../shared/traces next to '
                            'the repository)')
        p.add_argument('--progress-every', type=int, default=None,
                       help='print progress every N arrivals (0: never)')
        p.add_argument('--no-plot', action='store_true', help='skip the PNG')
        p.add_argument('--output-dir', default='simulate-output',
                       help='where simulation.csv and simulation.png go '
                            '(default: %(default)s)')
        p.add_argument('--discovery', choices=('local', 'global'),
                       help='--scenario rpm-vs-ffd: which hosts RPM\'s '
                            'placement looks at, a random group of '
                            'neighbours (local, Alg. 1, the default) or '
                            'every host (global)')
        p.add_argument('--seed-count', type=int, default=None, metavar='N',
                       help='--scenario %s: runs (seeds --seed .. --seed + '
                            'N - 1) averaged or judged; default: the '
                            'papers\' 10 (fewer with --reduced)'
                            % ', '.join(SEED_COUNT_SCENARIOS))
        p.add_argument('--long', action='store_true',
                       help='named scenarios: also show the result\'s '
                            'nested fields in the table and value formats '
                            '(json and yaml always have them)')
        return p

    def take_action(self, args):
        if args.hosts < 1:
            raise ValueError('--hosts must be >= 1, got %d' % args.hosts)
        if args.scenario:
            return _run_scenario(args)
        if args.discovery is not None:
            _discovery_kwargs(args)
        if args.seed_count is not None:
            _seed_count_kwargs(args)
        spec = _spec(args)
        reqs, source = _workload(args, spec)
        if not reqs:
            raise ValueError('the workload has no requests')
        names = policies.POLICIES if args.policy == 'all' else (args.policy,)
        n_pre = sum(1 for r in reqs if r.preemptible)
        _say('opie-sched simulate: %d hosts x %s (vCPU, MB, GB); workload: '
             '%s; %d requests (%d normal, %d preemptible); cost %s'
             % (args.hosts, tuple(spec.capacity), source, len(reqs),
                len(reqs) - n_pre, n_pre, args.cost))
        results = []
        for name in names:
            policy = policies.make_policy(name, args.cost,
                                          args.billing_period)
            sim = engine.Simulator(
                cloud_mod.Cloud.uniform(args.hosts, spec), policy,
                progress=_say,
                progress_every=_progress_every(args, len(reqs)))
            results.append(sim.run(reqs, label=name))
        files = _write(args, results, 'opie-sched simulate: %s' % source)
        fields, values = _results_fields(results, workload=source)
        return fields + [f for f, _ in files], values + [p for _, p in files]
