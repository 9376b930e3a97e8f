"""``opie-sched demo``: preemptible backfilling on an all-in-one Nova.

Starts Nova in-process (API, conductor, the opie scheduler, Placement, N fake
compute hosts of 8 vCPU / 16000 MB / 200 GB, sqlite), replays a workload
through the Nova API — by default one it generates itself, or a Standard
Workload Format trace with ``--trace`` — then replays the same workload
without its preemptible requests, and reports requests, failures,
preemptions and their cost, and utilisation with and without preemptible
backfilling, with a CSV time series and a PNG plot.
"""

import logging
import os
import sys
import time


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
    # nova's fixtures capture stdout when these are set (tox sets them for
    # the tests); the demo prints its progress.
    for var in ('OS_STDOUT_CAPTURE', 'OS_STDERR_CAPTURE'):
        os.environ[var] = '0'
    # nova's fixtures leave the root logger at DEBUG; the plot would log
    # every font matplotlib considers.
    logging.getLogger('matplotlib').setLevel(logging.WARNING)
    # ... and nova's thread pools report their shutdown at each teardown.
    logging.getLogger('nova.thread_pool_factory').setLevel(logging.WARNING)
    from opie_sched.demo import cloud as cloud_mod
    from opie_sched.demo import replay
    from opie_sched.demo import report

    requests, source = _requests(args)
    if not requests:
        _say('opie-sched demo: the workload has no requests to replay')
        return 1
    n_pre = sum(1 for r in requests if r.preemptible)
    _say('opie-sched demo: %d hosts x (8 vCPU, 16000 MB, 200 GB); '
         'workload: %s; %d requests (%d normal, %d preemptible)'
         % (args.hosts, source, len(requests), len(requests) - n_pre,
            n_pre))
    os.makedirs(args.output_dir, exist_ok=True)

    def replay_on_new_cloud(reqs, label):
        _say('starting Nova in-process for replay "%s" ...' % label)
        t0 = time.monotonic()
        cloud = cloud_mod.EmbeddedCloud(hosts=args.hosts).start()
        _say('Nova is up (%.1f s)' % (time.monotonic() - t0))
        try:
            return replay.Replayer(cloud, reqs, label, progress=_say,
                                   progress_every=args.progress_every).run()
        finally:
            cloud.stop()

    with_pre = replay_on_new_cloud(requests, 'with backfilling')
    baseline = None
    if not args.no_baseline:
        baseline = replay_on_new_cloud(
            [r for r in requests if not r.preemptible], 'normal only')
    _say('')
    _say(report.summary(with_pre, baseline))
    results = [with_pre] + ([baseline] if baseline else [])
    csv_path = report.write_csv(
        os.path.join(args.output_dir, 'utilisation.csv'), results)
    png_path = report.plot(
        os.path.join(args.output_dir, 'utilisation.png'), with_pre,
        baseline, title='opie_sched demo: %s' % source)
    _say('')
    _say('time series: %s' % csv_path)
    _say('plot:        %s' % png_path)
    return 0


def register(subparsers):
    p = subparsers.add_parser(
        'demo', help='replay a workload on an all-in-one in-process Nova '
                     'with preemptible backfilling')
    p.add_argument('--hosts', type=int, default=4,
                   help='fake compute hosts (default: %(default)s)')
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
    p.set_defaults(func=_run, errors=(ValueError, OSError))
