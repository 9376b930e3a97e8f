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
cost, and utilisation with and without preemptible backfilling, with a CSV
time series and a PNG plot. A replay of any length runs to the end (no
timeouts unless ``--wait-timeout``) or stops with one line naming the
request, the server and the cloud.
"""

import logging
import os
import sys
import time


#: In-process, a victim is always released in the end, however loaded the
#: machine: the scheduler holds a normal request until its victims are gone
#: and a reservation lasts as long as a request may take, instead of
#: proceeding after the production defaults (120 s, 300 s), which a busy
#: machine can reach. A slow machine makes the demo slower, never
#: different.
SLOW_MACHINE_FLAGS = {'opie_preemption': {'release_timeout': 86400.0,
                                          'reservation_timeout': 86400.0}}


def _say(msg):
    sys.stdout.write(msg + '\n')
    sys.stdout.flush()


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


def _run(args):
    # Without a test runner nothing captures output; these are only read by
    # nova's test fixtures, which tox's environment may have set.
    for var in ('OS_STDOUT_CAPTURE', 'OS_STDERR_CAPTURE'):
        os.environ[var] = '0'
    logging.getLogger('matplotlib').setLevel(logging.WARNING)
    if args.demo_cloud:
        # the sub-command's --os-cloud wins over the global one
        args.os_cloud = args.demo_cloud
    remote = bool(args.demo_cloud or _global_cloud(args))
    if remote and args.hosts is not None:
        raise ValueError('--hosts is for the embedded cloud; a cloud named '
                         'with --os-cloud has its own compute hosts')
    from opie_sched.demo import report

    requests, source = _requests(args)
    if not requests:
        _say('opie-sched demo: the workload has no requests to replay')
        return 1
    n_pre = sum(1 for r in requests if r.preemptible)
    os.makedirs(args.output_dir, exist_ok=True)
    if remote:
        replay_on, where = _remote(args)
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
    _say('')
    _say(report.summary(with_pre, baseline))
    if remote:
        _say('(on a remote cloud the preemption cost is not published, and '
             'cost modules see the servers\' real ages, not trace time)')
    results = [with_pre] + ([baseline] if baseline else [])
    csv_path = report.write_csv(
        os.path.join(args.output_dir, 'utilisation.csv'), results)
    png_path = report.plot(
        os.path.join(args.output_dir, 'utilisation.png'), with_pre,
        baseline, title='opie_sched demo (%s): %s' % (where, source))
    _say('')
    _say('time series: %s' % csv_path)
    _say('plot:        %s' % png_path)
    return 0


def _global_cloud(args):
    """The global ``opie-sched --os-cloud NAME demo`` option, when given on
    the command line (``OS_CLOUD`` in the environment alone does not send
    the demo to a cloud)."""
    name = getattr(args, 'os_cloud', None)
    return name if name and name != os.environ.get('OS_CLOUD') else None


def _embedded(args):
    """``(replay(requests, label), description)`` on a new in-process
    cloud per replay."""
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

    def replay_on(reqs, label):
        _say('starting Nova in-process for replay "%s" (%s; its log: %s) '
             '...' % (label, 'native threads' if threading else 'eventlet',
                      log_file))
        t0 = time.monotonic()
        cloud = cloud_mod.EmbeddedCloud(hosts=hosts, log_file=log_file,
                                        extra_flags=SLOW_MACHINE_FLAGS)
        try:
            cloud.start()
            _say('Nova is up (%.1f s)' % (time.monotonic() - t0))
            target = targets.EmbeddedTarget(cloud, wait=args.wait_timeout)
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


def _remote(args):
    """``(replay(requests, label), description)`` on the cloud named by
    ``--os-cloud`` (clouds.yaml), through openstacksdk."""
    from opie_sched.cmd import cli
    from opie_sched.demo import replay
    from opie_sched.demo import targets

    conn = cli.connect(args)
    name = args.os_cloud

    def new_target():
        return targets.OpenStackTarget(
            conn, name, image=args.image, network=args.network,
            flavor_prefix=args.flavor_prefix, wait=args.wait_timeout,
            interval=args.poll_interval,
            capacity_vcpus=args.capacity_vcpus)

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


def register(subparsers):
    from opie_sched.demo import targets

    p = subparsers.add_parser(
        'demo', help='replay a workload with preemptible backfilling on an '
                     'all-in-one in-process Nova, or on a cloud '
                     '(--os-cloud)')
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
    real.add_argument('--os-cloud', dest='demo_cloud', metavar='NAME',
                      help='replay on this cloud (default: in-process)')
    real.add_argument('--image', help='image name or ID to boot (default: '
                                      'the first active image)')
    real.add_argument('--network', default='none',
                      help='none (no port), auto, or a network name or ID '
                           '(default: %(default)s)')
    real.add_argument('--flavor-prefix', default='demo.',
                      help='prefix of the demo flavors\' names, e.g. '
                           'demo.c2m4000d40 and demo.c2m4000d40.preemptible '
                           '(default: %(default)s)')
    real.add_argument('--capacity-vcpus', type=_positive, default=None,
                      help='the cloud\'s vCPU capacity for utilisation '
                           '(default: VCPU inventories in Placement)')
    real.add_argument('--poll-interval', type=_positive, default=2.0,
                      metavar='SECONDS',
                      help='seconds between status polls of a server '
                           '(default: %(default)s)')
    p.set_defaults(func=_run, errors=(ValueError, OSError,
                                      targets.ReplayError, RuntimeError))
