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
"""``opie-sched demo``: preemptible backfilling on an all-in-one Nova.

Starts Nova in-process (API, conductor, the opie scheduler, Placement, N fake
compute hosts of 8 vCPU / 16000 MB / 200 GB, sqlite; nova's services in
native threading mode, no test runner), or uses the cloud named with
``--os-cloud``, replays a workload through the compute API with
openstacksdk — by default one it generates itself, or a Standard Workload
Format trace with ``--trace`` — then replays the same workload without its
preemptible requests, and reports requests, failures, preemptions and their
cost, and utilisation with and without preemptible backfilling, whether each
normal request got the same hosts (or failed) in both replays, every failed
normal request with its flavor, time and reason, with a CSV time series and
a PNG plot. The in-process cloud places normal requests transparently
(``[opie_preemption] transparent_normal_placement``) unless
``--normal-placement full-state``. A replay of any length runs to the end (no
timeouts unless ``--wait-timeout``) or stops with one line naming the
request, the server and the cloud. On the in-process cloud, a build nova's
conductor drops is deleted and submitted again once
(:class:`opie_sched.demo.cloud.LostBuilds`); on any cloud, a delete that
nova reverts is asked for again (up to three times).
"""

import logging
import os
import sys
import textwrap
import time

from cliff import columns as cliff_columns

from opie_sched.cmd import cli
from opie_sched.cmd import columns


#: In-process, a victim is always released in the end, however loaded the
#: machine: the scheduler holds a normal request until its victims are gone
#: and a reservation lasts as long as a request may take, instead of
#: proceeding after the production defaults (120 s, 300 s), which a busy
#: machine can reach. A slow machine makes the demo slower, never
#: different.
SLOW_MACHINE_FLAGS = {'opie_preemption': {'release_timeout': 86400.0,
                                          'reservation_timeout': 86400.0}}

#: ``--normal-placement`` choices: value of ``[opie_preemption]
#: transparent_normal_placement`` on the in-process cloud, and the words of
#: the report.
NORMAL_PLACEMENT = {
    'transparent': (True, 'transparent ([opie_preemption] '
                          'transparent_normal_placement = True): normal '
                          'requests filtered and weighed as on a cloud '
                          'without preemptible servers, victims chosen '
                          'afterwards'),
    'full-state': (False, 'full state ([opie_preemption] '
                          'transparent_normal_placement = False, the '
                          'default): normal requests weighed on every '
                          'server, preemptible ones included, to preempt '
                          'less'),
}


def embedded_flags(normal_placement=None):
    """nova.conf settings of the in-process cloud: :data:`SLOW_MACHINE_FLAGS`
    and ``transparent_normal_placement`` as ``--normal-placement`` says
    (default ``transparent``), as ``{group: {name: value}}``.
    """
    flags = {group: dict(opts) for group, opts in SLOW_MACHINE_FLAGS.items()}
    flags['opie_preemption']['transparent_normal_placement'] = \
        NORMAL_PLACEMENT[normal_placement or 'transparent'][0]
    return flags


def _say(msg):
    sys.stderr.write(msg + '\n')
    sys.stderr.flush()


def _requests(args):
    from opie_sched.workload import generator
    from opie_sched.workload import mapping
    from opie_sched.workload import swf
    if args.trace:
        trace = swf.read_swf(args.trace, max_jobs=args.max_jobs)
        policy = mapping.MappingPolicy(
            procs_per_vcpu=args.procs_per_vcpu,
            max_vcpus_per_server=args.max_vcpus_per_server,
            time_compression=args.time_compression,
            preemptible_rule=mapping.parse_rule(args.preemptible)
            if args.preemptible else mapping.MappingPolicy().preemptible_rule)
        requests, info = mapping.map_trace(trace, policy, limit=args.limit)
        source = '%s (%s)' % (os.path.basename(args.trace), info)
    else:
        requests = generator.generate(seed=args.seed, count=args.limit)
        source = 'generated (seed %d)' % args.seed
    return requests, source


#: Rows of the results table: (metric, value of a ReplayResult over the
#: common window, printf format).
RESULT_ROWS = (
    ('requests', lambda r, w: r.requests, '%d'),
    ('  normal', lambda r, w: r.normal_requests, '%d'),
    ('  preemptible', lambda r, w: r.preemptible_requests, '%d'),
    ('servers booted', lambda r, w: r.servers_booted, '%d'),
    ('normal requests failed', lambda r, w: r.normal_failed, '%d'),
    ('preemptible rejected (no room)',
     lambda r, w: r.preemptible_rejected, '%d'),
    ('preemption decisions', lambda r, w: r.preemption_decisions, '%d'),
    ('instances preempted', lambda r, w: r.preemptions, '%d'),
    ('total preemption cost (s)', lambda r, w: r.preemption_cost, '%.0f'),
    ('vCPU utilisation, all (%)',
     lambda r, w: 100 * r.utilisation(window=w), '%.1f'),
    ('vCPU utilisation, normal (%)',
     lambda r, w: 100 * r.utilisation(('normal',), window=w), '%.1f'),
    ('vCPU utilisation, preemptible (%)',
     lambda r, w: 100 * r.utilisation(('preemptible',), window=w), '%.1f'),
    ('wall time (s)', lambda r, w: r.wall_seconds, '%.0f'),
)

#: Keys of the machine-readable results, in :data:`RESULT_ROWS` order.
RESULT_KEYS = ('requests', 'normal_requests', 'preemptible_requests',
               'servers_booted', 'normal_failed', 'preemptible_rejected',
               'preemption_decisions', 'preemptions', 'preemption_cost',
               'utilisation', 'utilisation_normal',
               'utilisation_preemptible', 'wall_seconds')


class Results(cliff_columns.FormattableColumn):
    """The replays' results: a table (one column per replay, utilisation
    in %) for people; for machines ``[{"label", "requests", ...,
    "utilisation" (fraction), ...}]``, all over one window (first request
    to the last server's end in either replay).
    """

    def __init__(self, results):
        from opie_sched.demo import report
        window = report.common_window(results)
        rows = []
        for r in results:
            row = {'label': r.label}
            for key, (_, get, _) in zip(RESULT_KEYS, RESULT_ROWS):
                value = get(r, window)
                row[key] = (value / 100.0 if key.startswith('utilisation')
                            else value)
            rows.append(row)
        super().__init__(rows)
        self.lines = [[name] + [fmt % get(r, window) if get(r, window)
                                is not None else 'n/a' for r in results]
                      for name, get, fmt in RESULT_ROWS]
        self.labels = [r.label for r in results]

    def human_readable(self):
        return columns.table(['metric'] + self.labels, self.lines,
                             align=['l'] + ['r'] * len(self.labels))


def _run(cmd, args):
    # Without a test runner nothing captures output; these are only read by
    # nova's test fixtures, which tox's environment may have set.
    for var in ('OS_STDOUT_CAPTURE', 'OS_STDERR_CAPTURE'):
        os.environ[var] = '0'
    logging.getLogger('matplotlib').setLevel(logging.WARNING)
    options = cmd.app.options
    remote = bool(_global_cloud(options))
    if remote and args.hosts is not None:
        raise ValueError('--hosts is for the embedded cloud; a cloud named '
                         'with --os-cloud has its own compute hosts')
    if remote and args.normal_placement is not None:
        raise ValueError('--normal-placement is for the embedded cloud; a '
                         'cloud named with --os-cloud places as its '
                         'nova.conf says ([opie_preemption] '
                         'transparent_normal_placement)')
    # the report's packages (matplotlib) missing: said before replaying
    from opie_sched.demo import report  # noqa: F401

    requests, source = _requests(args)
    if not requests:
        raise ValueError('the workload has no requests to replay')
    n_pre = sum(1 for r in requests if r.preemptible)
    os.makedirs(args.output_dir, exist_ok=True)
    if remote:
        replay_on, where = _remote(args, options)
    else:
        replay_on, where = _embedded(args)
    _say('opie-sched demo: %s; workload: %s; %d requests (%d normal, %d '
         'preemptible)' % (where, source, len(requests),
                           len(requests) - n_pre, n_pre))

    with_pre = replay_on(requests, 'with backfilling')
    baseline = None
    if not args.no_baseline:
        baseline = replay_on(
            [r for r in requests if not r.preemptible], 'normal only')
    return report_fields(
        where, source,
        'as configured on the cloud' if remote else
        NORMAL_PLACEMENT[args.normal_placement or 'transparent'][1],
        with_pre, baseline, args.output_dir, remote=remote)


#: Width of the demo's text values (the table of ``-f table`` is this plus
#: the longest field name and the borders: under 100 columns).
TEXT_WIDTH = 70


def wrapped(text, width=TEXT_WIDTH, indent='  '):
    """``text`` with each line wrapped at ``width`` columns, continuation
    lines indented by ``indent`` (a long item stays visibly one item).
    """
    out = []
    for line in text.splitlines() or ['']:
        out.extend(textwrap.wrap(line, width, subsequent_indent=indent,
                                 break_on_hyphens=False) or [''])
    return '\n'.join(out)


def _text(value):
    """A text value: the same for machines, :func:`wrapped` for people."""
    return columns.Text(value, wrapped(value))


def report_fields(where, source, placement, with_pre, baseline, output_dir,
                  remote=False):
    """``(fields, values)`` of the demo's report (a cliff ShowOne).

    :param where: the cloud, in words; ``source``: the workload, in words;
        ``placement``: how normal requests are placed, in words.
    :param with_pre: :class:`~opie_sched.demo.replay.ReplayResult` of the
        replay with preemptible requests; ``baseline`` the one without
        (or None).
    :param output_dir: where the CSV time series and the PNG plot go.

    Long texts are wrapped at :data:`TEXT_WIDTH` columns in their human
    form (``-f table``), unchanged in the machine formats.
    """
    from opie_sched.demo import report
    results = [with_pre] + ([baseline] if baseline else [])
    fields = ['cloud', 'workload', 'normal placement', 'results']
    values = [_text(where), _text(source), _text(placement),
              Results(results)]
    if baseline:
        fields.append('conclusion')
        values.append(_text(report.conclusion(with_pre, baseline)))
        fields.append('normal outcomes')
        values.append(_text(report.comparison_text(with_pre, baseline)))
    fields.append('failed normal requests')
    values.append(_text('\n'.join(report.failure_report(results))))
    if remote:
        fields.append('note')
        values.append(_text(
            'on a remote cloud the preemption cost is not '
            'published, and cost modules see the servers\' real '
            'ages, not trace time'))
    fields += ['time_series', 'plot']
    values += [
        report.write_csv(os.path.join(output_dir, 'utilisation.csv'),
                         results),
        report.plot(os.path.join(output_dir, 'utilisation.png'),
                    with_pre, baseline,
                    title='opie_sched demo (%s): %s' % (where, source))]
    return fields, values


def _global_cloud(options):
    """The ``--os-cloud NAME`` option, when given on the command line
    (``OS_CLOUD`` in the environment alone does not send the demo to a
    cloud).
    """
    name = getattr(options, 'os_cloud', None)
    return name if name and name != os.environ.get('OS_CLOUD') else None


def _embedded(args):
    """``(replay(requests, label), description)`` on a new in-process
    cloud per replay.
    """
    from opie_sched.demo import cloud as cloud_mod
    threading = cloud_mod.use_native_threading()
    from opie_sched.demo import replay
    from opie_sched.demo import targets

    hosts = 4 if args.hosts is None else args.hosts
    if hosts < 1:
        raise ValueError('--hosts must be at least 1, got %d' % hosts)
    log_file = os.path.abspath(os.path.join(args.output_dir, 'nova.log'))
    if os.path.exists(log_file):
        os.remove(log_file)
    host = cloud_mod.HOST
    # One nova.conf for both replays: only the workload differs.
    flags = embedded_flags(args.normal_placement)

    def replay_on(reqs, label):
        _say('starting Nova in-process for replay "%s" (%s; its log: %s) '
             '...' % (label, 'native threads' if threading else 'eventlet',
                      log_file))
        t0 = time.monotonic()
        cloud = cloud_mod.EmbeddedCloud(hosts=hosts, log_file=log_file,
                                        extra_flags=flags)
        try:
            cloud.start()
            _say('Nova is up (%.1f s)' % (time.monotonic() - t0))
            target = targets.EmbeddedTarget(cloud, wait=args.wait_timeout,
                                            warn=_say)
            return replay.Replayer(target, reqs, label, progress=_say,
                                   progress_every=args.progress_every).run()
        except targets.ReplayError as exc:
            raise targets.ReplayError('%s (nova\'s log: %s)'
                                      % (exc, log_file)) from None
        finally:
            cloud.stop()

    where = '%d hosts x (%d vCPU, %d MB, %d GB) in-process' % (
        hosts, host['vcpus'], host['memory_mb'], host['disk_gb'])
    return replay_on, where


def _remote(args, options):
    """``(replay(requests, label), description)`` on the cloud named by
    ``--os-cloud`` (clouds.yaml), through openstacksdk.
    """
    from opie_sched.demo import replay
    from opie_sched.demo import targets

    conn = cli.connect(options)
    name = options.os_cloud

    def new_target():
        return targets.OpenStackTarget(
            conn, name, image=args.image, network=args.network,
            flavor_prefix=args.flavor_prefix, wait=args.wait_timeout,
            interval=args.poll_interval,
            capacity_vcpus=args.capacity_vcpus, warn=_say)

    capacity = new_target().capacity_vcpus

    def replay_on(reqs, label):
        _say('replay "%s" on cloud %s ...' % (label, name))
        target = new_target()
        try:
            return replay.Replayer(target, reqs, label, progress=_say,
                                   progress_every=args.progress_every).run()
        except BaseException:
            # leave nothing behind on someone's cloud
            try:
                target.cleanup()
            except targets.ReplayError as exc:
                _say('opie-sched demo: cleaning up failed: %s' % exc)
            raise

    return replay_on, 'cloud %s (%g vCPU)' % (name, capacity)


def _positive(text):
    value = float(text)
    if value <= 0:
        raise ValueError('must be positive')
    return value


class Demo(cli.ShowOne):
    """Replay a workload with preemptible backfilling on an in-process Nova.

    Or on a cloud, with --os-cloud.

    Replays the workload, then the same workload without its preemptible
    requests, and shows requests, failures, preemptions and their cost,
    and utilisation with and without preemptible backfilling (the
    results field, one column per replay), whether each normal request
    got the same hosts (or failed) in both replays, every failed normal
    request and why, with the paths of a CSV time series and a PNG plot.
    Progress goes to standard error.
    """

    @property
    def errors(self):
        from opie_sched.demo import targets
        return (ValueError, OSError, targets.ReplayError, RuntimeError)

    def get_parser(self, prog_name):
        p = super().get_parser(prog_name)
        p.add_argument('--hosts', type=int, default=None,
                       help='fake compute hosts of the in-process cloud '
                            '(default: 4)')
        p.add_argument('--trace', metavar='FILE.swf',
                       help='Standard Workload Format trace (gzip or plain); '
                            'default: a generated workload')
        p.add_argument('--limit', type=int, default=None,
                       help='replay at most this many jobs (default: all of a '
                            'trace; 100 generated)')
        p.add_argument('--max-jobs', type=int, default=None,
                       help='read at most this many trace lines')
        p.add_argument('--seed', type=int, default=42,
                       help='seed of the generated workload')
        p.add_argument('--preemptible', metavar='RULE',
                       help='which trace jobs are preemptible: queue:N[,N], '
                            'partition:N, fraction:F, all, none')
        p.add_argument('--procs-per-vcpu', type=int, default=1)
        p.add_argument('--max-vcpus-per-server', type=int, default=8)
        p.add_argument('--time-compression', type=float, default=1.0,
                       help='trace seconds per replay second')
        p.add_argument('--normal-placement', choices=sorted(
            NORMAL_PLACEMENT), default=None,
            help='how the in-process cloud places normal requests: '
                 'transparent (default here: as without preemptible '
                 'servers, so the normal outcomes of both replays are the '
                 'same) or full-state (nova.conf\'s default: weighed on '
                 'every server, to preempt less); see [opie_preemption] '
                 'transparent_normal_placement')
        p.add_argument('--no-baseline', action='store_true',
                       help='skip the replay without preemptible requests')
        p.add_argument('--progress-every', type=int, default=10)
        p.add_argument('--output-dir', default='demo-output')
        p.add_argument('--wait-timeout', type=_positive, default=None,
                       metavar='SECONDS',
                       help='fail when a server takes longer than this to '
                            'become ACTIVE or deleted (default: wait as long '
                            'as it takes; a slow machine makes the demo '
                            'slower, never wrong)')
        real = p.add_argument_group(
            'replay on a cloud', 'With --os-cloud NAME (clouds.yaml, as the '
            'openstack client reads it; admin credentials: the demo creates '
            'its flavors and their preemptible twins when missing, reads '
            'Placement and server events) the workload is replayed through '
            'openstacksdk on that cloud instead of an in-process Nova. Every '
            'server it boots is deleted at the end.')
        real.add_argument('--image', help='image name or ID to boot (default: '
                                          'the first active image)')
        real.add_argument('--network', default='none',
                          help='none (no port), auto, or a network name or ID '
                               '(default: %(default)s)')
        real.add_argument('--flavor-prefix', default='demo.',
                          help='prefix of the demo flavors\' names, e.g. '
                               'demo.c2m4000d40 and '
                               'demo.c2m4000d40.preemptible (default: '
                               '%(default)s)')
        real.add_argument('--capacity-vcpus', type=_positive, default=None,
                          help='the cloud\'s vCPU capacity for utilisation '
                               '(default: VCPU inventories in Placement)')
        real.add_argument('--poll-interval', type=_positive, default=2.0,
                          metavar='SECONDS',
                          help='seconds between status polls of a server '
                               '(default: %(default)s)')
        return p

    def take_action(self, args):
        return _run(self, args)
