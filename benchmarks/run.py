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
"""Run opie_sched's benchmarks and print one table of ratios (issue 12).

Usage (``tox -e bench -- ARGS`` runs this)::

    python benchmarks/run.py [--quick] [--only PART[,PART]] [--out PATH]
        [--compare OLD.json] [--nodes 100,1000] [--repeat N] [--cells N]

Parts, each a script of this directory run in its own process (nova's
fixtures change process-wide state):

``victim``
    ``victim_selection.py``: exact victim selection (López García et al.,
    Alg. 5) against the brute-force oracle, then alone at n = 32..64.
``sched``
    ``scheduling_latency.py``: one ``select_destinations`` of opie-scheduler
    versus stock Nova 34 on the same hosts, in-process Nova (see that
    script for the scenarios a, b and c).
``burst``
    ``scheduling_latency.py --burst-only``: N = 10 and 50 concurrent normal
    requests on two opie scheduler workers, on free room and where each
    must preempt: throughput, p50/p99, lost and timed-out requests.
``sim``
    ``simulator_throughput.py``: the simulator's events per second, and
    (full run) the thesis scale of 65,536 hosts and 230,000 requests.
``e2e``
    ``end_to_end.py``: create to ACTIVE on a running cloud, opie vs stock
    on free room vs the aardvark-style retry; the full run adds opie with
    a headroom and the demand within it (create to ACTIVE against free
    room, target <= 1.1; victims given the whole notice, target >= 95 %;
    about 3 minutes per repetition). On the
    clouds given (``--devcloud`` and ``--stock-devcloud``, or
    ``--os-cloud`` and ``--stock-cloud``); with none given and
    ``--devcloud-cli`` (``tox -e bench`` passes the tempest
    environment's ``opie-sched``), on two devclouds this run starts in a
    temporary directory (``opie-sched devcloud up --notifications``, and
    ``up --stock-scheduler --notifications`` for the stock columns: the
    two together, ~1.5-2.5 min on 2 cores; started again one after the
    other when either fails) and always takes down; they need the local
    MariaDB and RabbitMQ (see doc/source/install/devcloud.rst). Without
    either, the part is left out and the plan says why.

The scheduling part runs at 1000 and 5000 nodes by default (``--huge``
adds 10,000) and prints the growth exponent of each series: the slope of
log(time) against log(nodes), least squares over the scales run (1 =
linear in the number of hosts). ``--cells N`` is passed to it: every
scale's nodes spread over N cells.

It prints the plan (what runs, roughly how long on 2 cores), each part's
own output as it goes (progress), then ONE table: every ratio or figure
with its target, and a legend of what a, b and c mean. Results go to a JSON
file (``--out``, default ``bench-results.json`` in the current directory)
so that two runs, e.g. of two commits, can be compared side by side with
``--compare OLD.json`` (old, new and new/old per row).
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

#: Legend printed under the table.
LEGEND = (
    'a = one normal request, no preemption needed (the request fits a '
    'host\'s full state); opie vs stock Nova\'s pass on the same hosts.',
    'b = one normal request on hosts full of preemptibles: opie\'s '
    'decision (filters, weighers planning victims, claim) vs stock\'s pass '
    'on the same hosts; "b total" adds terminating the victims and waiting '
    'for their deletion.',
    'c = the scheduling side of a retry design (NoValidHost, victims '
    'deleted through nova\'s compute API and waited for as opie does, '
    'schedule again) vs opie\'s total (the same termination steps); the '
    'full retry design is benchmarks/end_to_end.py (--os-cloud).',
    'growth exponent = k of time ~ nodes^k, least squares over the scales '
    'run (1 = linear).',
    'burst = N concurrent normal requests on two opie scheduler workers '
    '(one process, green threads under nova\'s eventlet mode); "lost or '
    'timed out" counts failed requests and latencies above '
    'rpc_response_timeout.',
    'Wall times on a shared machine are noisy: the CPU-time rows are '
    'less sensitive to load.',
)


class Part:
    """One benchmark script: its arguments, time estimate and rows."""

    def __init__(self, key, script, title, quick_args, full_args,
                 quick_estimate, full_estimate):
        self.key = key
        self.script = script
        self.title = title
        self.quick_args = quick_args
        self.full_args = full_args
        self.quick_estimate = quick_estimate
        self.full_estimate = full_estimate

    def args(self, quick):
        return list(self.quick_args if quick else self.full_args)

    def estimate(self, quick):
        return self.quick_estimate if quick else self.full_estimate


def _tail(path, lines=20):
    """The last ``lines`` lines of a text file ('' when unreadable)."""
    try:
        with open(path, errors='replace') as f:
            return ''.join(f.readlines()[-lines:])
    except OSError:
        return ''


class Devclouds:
    """The two devclouds of the end-to-end part when no cloud is given.

    ``opie`` runs opie-scheduler, ``stock`` stock nova-scheduler; both
    ``up --notifications`` (the retry design reads nova's notifications),
    with state directories under ``root``. Each ``up`` logs to
    ``root/NAME.log``.

    :param cli: path of an ``opie-sched`` whose environment has the
        devcloud's services (keystone, glance, neutron: tox's tempest env).
    :param log: callable printing one progress line.
    :param run: ``subprocess.run`` (tests replace it).
    :param popen: ``subprocess.Popen`` (tests replace it).
    """

    NAMES = ('opie', 'stock')
    #: seconds before an ``up`` / a ``down`` is given up
    UP_TIMEOUT = 900
    DOWN_TIMEOUT = 300

    def __init__(self, cli, root, log, run=subprocess.run,
                 popen=subprocess.Popen):
        self.cli = cli
        self.root = root
        self.log = log
        self.run = run
        self.popen = popen
        self.dirs = {name: os.path.join(root, name) for name in self.NAMES}
        self.started = []

    def _cmd(self, action, name):
        cmd = [self.cli, 'devcloud', action, '--state-dir', self.dirs[name]]
        if action == 'up':
            cmd.append('--notifications')
            if name == 'stock':
                cmd.append('--stock-scheduler')
        return cmd

    def _up(self, names):
        """Start ``names`` together; ``{name: error text}`` of those that
        did not come up.
        """
        procs = {}
        logs = {}
        failed = {}
        for name in names:
            logs[name] = open(self.dirs[name] + '.log', 'a')
            try:
                procs[name] = self.popen(
                    self._cmd('up', name), stdout=logs[name],
                    stderr=subprocess.STDOUT, cwd=self.root)
            except OSError as exc:
                logs[name].close()
                failed[name] = 'could not run %s: %s' % (self.cli, exc)
                continue
            self.started.append(name)
        for name, proc in procs.items():
            try:
                code = proc.wait(timeout=self.UP_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                code = 'timeout after %d s' % self.UP_TIMEOUT
            logs[name].close()
            if code:
                failed[name] = (
                    'devcloud %s did not come up (%s); last lines of %s:\n%s'
                    % (name, 'exit %s' % code if isinstance(code, int)
                       else code, self.dirs[name] + '.log',
                       _tail(self.dirs[name] + '.log')))
        return failed

    def up(self):
        """Start both clouds; returns None, or the error text of a cloud
        that did not come up (every cloud started is then taken down).

        Both start together; when either fails (e.g. a port the other
        took meanwhile), both are taken down and started again one after
        the other.
        """
        if shutil.which(self.cli) is None:
            return 'cannot run %s: not an executable file' % self.cli
        started = time.monotonic()
        self.log('  starting devclouds opie and stock (%s)' % self.root)
        failed = self._up(self.NAMES)
        if failed:
            self.log('  devclouds: %s failed together; taken down, started '
                     'again one after the other' % ', '.join(sorted(failed)))
            self.down()
            if self.started:
                return ('devclouds %s could not be taken down after a failed '
                        'start: %s' % (', '.join(self.started), '; '.join(
                            failed.values())))
            for name in self.NAMES:
                failed = self._up([name])
                if failed:
                    self.down()
                    return failed[name]
        self.log('  devclouds opie and stock up in %.0f s (%s)'
                 % (time.monotonic() - started, self.root))
        return None

    def down(self):
        """Take down every cloud started (errors are logged, not raised);
        those that could not be taken down stay in :attr:`started`.
        """
        left = []
        for name in reversed(self.started):
            try:
                proc = self.run(self._cmd('down', name),
                                stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT,
                                universal_newlines=True,
                                timeout=self.DOWN_TIMEOUT)
                ok = proc.returncode == 0
                detail = (proc.stdout or '')[-2000:]
            except (OSError, subprocess.SubprocessError) as exc:
                ok, detail = False, str(exc)
            if not ok:
                left.append(name)
                self.log('!!! devcloud %s could not be taken down; run: %s\n%s'
                         % (name, ' '.join(self._cmd('down', name)), detail))
        self.started = left


def parts_for(args):
    nodes = args.nodes
    cells = ['--cells', str(args.cells)] if args.cells != 1 else []
    e2e_up = E2E_UP if getattr(args, 'managed', False) else 0
    return [
        Part('victim', 'victim_selection.py',
             'victim selection (exact, Alg. 5), n = 12..64',
             ['--quick'], [], 10, 60),
        Part('sched', 'scheduling_latency.py',
             'select_destinations opie vs stock, in-process Nova 34',
             ['--quick'] + cells,
             ['--nodes', nodes, '--repeat', str(args.repeat)]
             + ([] if args.with_retry else ['--skip-retry']) + cells,
             40, _sched_estimate(nodes, args.repeat)),
        Part('burst', 'scheduling_latency.py',
             'burst of N = 10, 50 concurrent requests on 2 opie workers, '
             'free room vs preemption',
             ['--nodes', '100', '--burst', '10,50', '--burst-only'],
             ['--nodes', '100', '--burst', '10,50', '--burst-only'],
             60, 90),
        Part('sim', 'simulator_throughput.py',
             'simulator throughput; full run adds the thesis scale '
             '(65,536 hosts, 230,000 requests)',
             ['--quick'],
             ['--hosts', '1000,10000', '--no-memory', '--thesis'],
             15, 150),
        Part('e2e', 'end_to_end.py',
             'create to ACTIVE on %s: opie, stock on free room, '
             'aardvark-style retry; full run adds opie with a headroom' % (
                 'two devclouds started for this run (opie-scheduler, '
                 'stock nova-scheduler)' if getattr(args, 'managed', False)
                 else 'cloud %s' % (args.devcloud or args.os_cloud,)),
             _e2e_args(args, E2E_QUICK_REPEAT),
             _e2e_args(args, args.e2e_repeat) + ['--headroom'],
             e2e_up + 30 + 15 * E2E_QUICK_REPEAT,
             e2e_up + 30 + (15 + E2E_HEADROOM_REP) * args.e2e_repeat),
    ]


#: Seconds to start and take down the two devclouds of the end-to-end part
#: when this run starts them (105 s up together, ~10 s down, 2 cores).
E2E_UP = 120
#: Seconds of one repetition of the end-to-end part's headroom design (a
#: reconciler round, 60 s, and the headroom notice, 120 s, with the
#: product's defaults; then the fill's top-up and one create).
E2E_HEADROOM_REP = 210
#: Repetitions of the end-to-end part in a quick run (~15 s each: one
#: create per design; a single one is mostly the clouds' first-create
#: noise).
E2E_QUICK_REPEAT = 3


def _e2e_args(args, repeat):
    if args.devcloud:
        out = ['--devcloud', args.devcloud]
    else:
        out = ['--os-cloud', str(args.os_cloud)]
    out += ['--repeat', str(repeat)]
    if args.stock_devcloud:
        out += ['--stock-devcloud', args.stock_devcloud]
    elif args.stock_cloud:
        out += ['--stock-cloud', args.stock_cloud]
    return out


def growth_exponent(points):
    """Least-squares slope of log(time) against log(hosts).

    :param points: ``[(hosts, seconds)]``, at least two distinct host
        counts, every value > 0.
    :returns: the exponent k of time ~ hosts^k, or None when it cannot be
        fitted.
    """
    import math
    pts = [(math.log(n), math.log(t)) for n, t in points if n > 0 and t > 0]
    if len({x for x, _ in pts}) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    return (sum((x - mx) * (y - my) for x, y in pts)
            / sum((x - mx) ** 2 for x, _ in pts))


def _sched_estimate(nodes, repeat):
    """Seconds: twice what 2 idle cores took on 2026-11-26 (1000 and 5000
    nodes, 5 repetitions, scenario c skipped: 63 s): ~15 s of Nova
    start-up per scale, ~0.01 s per node of bulk set-up and ~0.001 s per
    node per repetition.
    """
    total = 0
    for n in (int(x) for x in nodes.split(',') if x.strip()):
        total += 15 + 0.01 * n + repeat * 0.001 * n
    return int(total)


def _fmt_duration(seconds):
    seconds = int(seconds)
    if seconds < 120:
        return '~%d s' % seconds
    return '~%d min' % round(seconds / 60.0)


def run_part(part, quick, workdir, log):
    """Run one part; its stdout and stderr go through (progress).

    :returns: ``(data from its --json file or None, wall seconds, error
        text or None)``.
    """
    out = os.path.join(workdir, part.key + '.json')
    cmd = [sys.executable, os.path.join(HERE, part.script),
           '--json', out] + part.args(quick)
    log('\n=== %s: %s' % (part.key, ' '.join(cmd[1:])))
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT)
    wall = time.monotonic() - started
    if proc.returncode:
        return None, wall, '%s exited %d' % (part.script, proc.returncode)
    try:
        with open(out) as f:
            return json.load(f), wall, None
    except (OSError, ValueError) as exc:
        return None, wall, 'no results from %s: %s' % (part.script, exc)


def run_on_devclouds(devclouds, part, quick, workdir, log, run=None):
    """:func:`run_part` on the two devclouds this run starts: up, the
    part, down (always, whatever happened); their directory is removed
    when both went down cleanly.

    :returns: as :func:`run_part` (the wall time includes up and down).
    """
    run = run or run_part
    started = time.monotonic()
    data = None
    try:
        err = devclouds.up()
        if err is None:
            data, _, err = run(part, quick, workdir, log)
    finally:
        devclouds.down()
    if not devclouds.started:
        shutil.rmtree(devclouds.root, ignore_errors=True)
    return data, time.monotonic() - started, err


def ratio_rows(results):
    """``[{key, label, value, unit, target, ok}]`` of one run.

    ``target`` is ``(op, bound)`` with op ``'<='`` or ``'>='``, or None.
    """
    rows = []

    def add(key, label, value, unit='x', target=None):
        ok = None
        if target is not None and value is not None:
            op, bound = target
            ok = value <= bound if op == '<=' else value >= bound
        rows.append({'key': key, 'label': label, 'value': value,
                     'unit': unit, 'target': list(target) if target else
                     None, 'ok': ok})

    sched = (results.get('sched') or {}).get('rows') or {}
    for n in sorted(sched, key=int):
        r = sched[n]
        add('sched.%s.a' % n, 'a opie / stock, %s nodes' % n,
            r['a_opie'] / r['a_stock'], target=('<=', 1.05))
        add('sched.%s.b_decide' % n, 'b opie decision / stock, %s nodes' % n,
            r['b_decide'] / r['b_stock'], target=('<=', 1.3))
        add('sched.%s.b_total' % n,
            'b opie total (+terminate, wait) / stock, %s nodes' % n,
            r['b_opie'] / r['b_stock'])
        if r.get('c_retry') == r.get('c_retry'):  # not NaN: c ran
            add('sched.%s.c' % n, 'c retry (scheduling only) / opie total, '
                '%s nodes' % n, r['c_retry'] / r['b_opie'])
        if r.get('a_stock_cpu') and r.get('b_stock_cpu'):
            add('sched.%s.a_cpu' % n, 'a opie / stock, CPU time, %s nodes'
                % n, r['a_opie_cpu'] / r['a_stock_cpu'],
                target=('<=', 1.05))
            add('sched.%s.b_decide_cpu' % n, 'b opie decision / stock, CPU '
                'time, %s nodes' % n, r['b_decide_cpu'] / r['b_stock_cpu'],
                target=('<=', 1.3))
    for key, label in (('a_opie', 'a opie'), ('a_stock', 'a stock'),
                       ('b_decide', 'b opie decision'),
                       ('b_stock', 'b stock'),
                       ('a_opie_cpu', 'a opie, CPU'),
                       ('a_stock_cpu', 'a stock, CPU'),
                       ('b_decide_cpu', 'b opie decision, CPU'),
                       ('b_stock_cpu', 'b stock, CPU')):
        k = growth_exponent([(int(n), r[key]) for n, r in sched.items()
                             if r.get(key)])
        if k is not None:
            add('sched.growth.%s' % key, 'growth exponent, %s (%s nodes)'
                % (label, ','.join(sorted(sched, key=int))), k, 'exp')
    bursts = (results.get('burst') or {}).get('bursts') or {}
    for n in sorted(bursts, key=int):
        free = {b['n']: b for b in bursts[n] if b['state'] == 'free room'}
        for b in bursts[n]:
            if b['state'] != 'preemption':
                continue
            add('burst.%d.lost' % b['n'], 'burst N = %d: requests lost or '
                'timed out (of %d)' % (b['n'], b['n']),
                b['lost'] + b['timed_out'], 'n', ('<=', 0))
            f = free.get(b['n'])
            if f and f['ok'] and b['ok']:
                add('burst.%d.throughput' % b['n'], 'burst N = %d: '
                    'throughput preemption / free room' % b['n'],
                    (b['ok'] / b['wall']) / (f['ok'] / f['wall']),
                    target=('>=', 0.5))
    e2e = (results.get('e2e') or {}).get('medians') or {}
    if e2e.get('free') and e2e.get('opie'):
        add('e2e.opie_free', 'end to end opie / stock on free room',
            e2e['opie'] / e2e['free'], target=('<=', 1.5))
    if e2e.get('retry') and e2e.get('opie'):
        add('e2e.retry_opie', 'end to end aardvark-style retry / opie',
            e2e['retry'] / e2e['opie'], target=('>=', 2.0))
    if e2e.get('retry') and e2e.get('free'):
        # the most any design could reach: one that preempts at no cost
        # over a create on free room (below 2, the target above is out of
        # reach on that cloud whatever opie does)
        add('e2e.retry_free', 'end to end aardvark-style retry / stock on '
            'free room (ceiling of the ratio above)',
            e2e['retry'] / e2e['free'])
    if e2e.get('headroom') and e2e.get('free'):
        add('e2e.headroom_free', 'end to end opie with a headroom, demand '
            'within it / stock on free room', e2e['headroom'] / e2e['free'],
            target=('<=', 1.1))
    for n, b in sorted(((results.get('e2e') or {}).get('bursts')
                        or {}).items(), key=lambda kv: int(kv[0])):
        add('e2e.burst.%s.failed' % n, 'end to end burst N = %s beyond '
            'the headroom: normal servers failed' % n, b['failed'], 'n',
            ('<=', 0))
        if e2e.get('free'):
            add('e2e.burst.%s' % n, 'end to end burst N = %s beyond the '
                'headroom, median / stock on free room' % n,
                b['total'] / e2e['free'])
    notice = (results.get('e2e') or {}).get('notice') or {}
    if notice.get('victims'):
        add('e2e.headroom_notice', 'end to end headroom: victims given the '
            'whole notice (%d s)' % notice['target'],
            notice['given'] / notice['victims'], 'share',
            ('>=', 0.95))
    victim = (results.get('victim') or {}).get('rows') or []
    for r in victim:
        if r['n'] == 64:
            add('victim.64', 'victim selection median, n = 64',
                r['ours_ms'], 'ms', ('<=', 2.0))
    for r in victim:
        if r.get('brute_ms'):
            add('victim.%d.speedup' % r['n'],
                'brute force / ours, n = %d' % r['n'],
                r['brute_ms'] / r['ours_ms'])
    sim = (results.get('sim') or {}).get('rows') or []
    for r in sim:
        if r.get('thesis'):
            add('sim.thesis', 'simulator, thesis scale (%d hosts, %d '
                'requests), wall' % (r['hosts'], r['requests']),
                r['wall'], 's', ('<=', 120.0))
        else:
            add('sim.%d.eps' % r['hosts'], 'simulator events/s, %d hosts, '
                '%d requests' % (r['hosts'], r['requests']), r['eps'],
                'ev/s')
            add('sim.%d.wall' % r['hosts'], 'simulator wall, %d hosts'
                % r['hosts'], r['wall'], 's')
    return rows


def _value(v, unit):
    if v is None:
        return '-'
    if unit == 'ev/s':
        return '%.0f' % v
    if unit == 'n':
        return '%d' % v
    if unit == 'exp':
        return '%.2f' % v
    if unit in ('s', 'ms'):
        return '%.2f %s' % (v, unit)
    return '%.2f' % v


def print_table(rows, old=None, out=sys.stdout):
    """The table; with ``old`` (rows of an earlier run) side by side."""
    old_by_key = {r['key']: r for r in (old or [])}
    head = ['what', 'value', 'target', 'ok']
    if old is not None:
        head = ['what', 'old', 'new', 'new/old', 'target', 'ok']
    lines = []
    for r in rows:
        target = ''
        if r['target']:
            target = '%s %s' % (r['target'][0],
                                _value(r['target'][1], r['unit']))
        ok = {True: 'yes', False: 'NO', None: ''}[r['ok']]
        if old is None:
            lines.append([r['label'], _value(r['value'], r['unit']),
                          target, ok])
        else:
            o = old_by_key.get(r['key'])
            ov = o['value'] if o else None
            rel = ('%.2f' % (r['value'] / ov)
                   if ov and r['value'] is not None else '-')
            lines.append([r['label'], _value(ov, r['unit']),
                          _value(r['value'], r['unit']), rel, target, ok])
    if old is not None:
        for o in old:
            if o['key'] not in {r['key'] for r in rows}:
                lines.append([o['label'], _value(o['value'], o['unit']),
                              '-', '-', '', ''])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *lines)]
    fmt = '  '.join('%%-%ds' % w if i == 0 else '%%%ds' % w
                    for i, w in enumerate(widths))
    print(fmt % tuple(head), file=out)
    print('  '.join('-' * w for w in widths), file=out)
    for line in lines:
        print(fmt % tuple(line), file=out)
    print(file=out)
    for text in LEGEND:
        print(textwrap.fill(text, 78, subsequent_indent='    '), file=out)


def _commit():
    try:
        return subprocess.run(
            ['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            universal_newlines=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--quick', action='store_true',
                   help='small sizes for every part (under 5 minutes)')
    p.add_argument('--only', default='victim,sched,burst,sim,e2e',
                   help='comma-separated parts (default: %(default)s)')
    p.add_argument('--out', default='bench-results.json',
                   help='JSON file for the results (default: %(default)s)')
    p.add_argument('--compare', metavar='OLD.json',
                   help='print this earlier run side by side')
    p.add_argument('--nodes', default='1000,5000',
                   help='node counts of the scheduling part, full run '
                        '(default: %(default)s)')
    p.add_argument('--with-retry', action='store_true',
                   help='full run: also scenario c at every scale (moving '
                        'every preemptible\'s allocation between resource '
                        'classes costs minutes at 5000 nodes)')
    p.add_argument('--huge', action='store_true',
                   help='add 10000 nodes to the scheduling part (about '
                        '15 minutes more on 2 loaded cores, several GB of '
                        'RAM)')
    p.add_argument('--os-cloud', metavar='NAME',
                   help='a running cloud with opie-scheduler (clouds.yaml '
                        'name, admin): adds the end-to-end part')
    p.add_argument('--stock-cloud', metavar='NAME',
                   help='with --os-cloud: a stock-Nova cloud for the free-'
                        'room column of the end-to-end part')
    p.add_argument('--devcloud', metavar='STATE_DIR',
                   help='a devcloud up with --notifications: adds the '
                        'end-to-end part')
    p.add_argument('--stock-devcloud', metavar='STATE_DIR',
                   help='with --devcloud: a devcloud up with '
                        '--stock-scheduler --notifications for the stock '
                        'and retry columns of the end-to-end part')
    p.add_argument('--devcloud-cli', metavar='PATH',
                   help='an opie-sched whose environment runs devclouds '
                        '(tox -e bench passes the tempest env\'s): with no '
                        'cloud given, the end-to-end part starts two '
                        'devclouds (opie-scheduler; stock nova-scheduler) '
                        'in a temporary directory and takes them down')
    p.add_argument('--e2e-repeat', type=int, default=3,
                   help='repetitions of the end-to-end part (default: '
                        '%(default)s)')
    p.add_argument('--repeat', type=int, default=5,
                   help='repetitions of the scheduling part, full run '
                        '(default: %(default)s)')
    p.add_argument('--cells', type=int, default=1,
                   help='the scheduling part\'s nodes spread over this many '
                        'cells (default: %(default)s)')
    args = p.parse_args(argv)
    if args.cells < 1:
        p.error('--cells must be >= 1')
    old = None
    if args.compare:
        try:
            with open(args.compare) as f:
                old = json.load(f)
            old_rows = old['ratios']
        except (OSError, ValueError, KeyError, TypeError) as exc:
            p.error('--compare %s: not a results file of this script (%s)'
                    % (args.compare, exc))
    if args.huge and '10000' not in args.nodes.split(','):
        args.nodes += ',10000'
    wanted = [x.strip() for x in args.only.split(',') if x.strip()]
    args.managed = False
    no_e2e = None
    if not (args.os_cloud or args.devcloud) and 'e2e' in wanted:
        if args.devcloud_cli:
            args.managed = True
        elif args.only != p.get_default('only'):
            p.error('--only e2e needs --os-cloud, --devcloud or '
                    '--devcloud-cli')
        else:
            wanted.remove('e2e')
            no_e2e = ('end-to-end part left out: no cloud given (--devcloud'
                      ', --os-cloud) and no --devcloud-cli to start '
                      'devclouds with (tox -e bench gives one)')
    devclouds = None
    if args.managed:
        root = tempfile.mkdtemp(prefix='opie-bench-devclouds-')
        args.devcloud = os.path.join(root, 'opie')
        args.stock_devcloud = os.path.join(root, 'stock')
    parts = parts_for(args)
    unknown = set(wanted) - {pt.key for pt in parts}
    if unknown or not wanted:
        p.error('--only: unknown part(s) %s; choose from %s' % (
            ', '.join(sorted(unknown)) or '(none)',
            ', '.join(pt.key for pt in parts)))
    if args.repeat < 1:
        p.error('--repeat must be >= 1')
    parts = [pt for pt in parts if pt.key in wanted]

    def log(msg):
        print(msg)
        sys.stdout.flush()

    total = sum(pt.estimate(args.quick) for pt in parts)
    log('opie_sched benchmarks (%s run), %d cores, %s, Python %s, load %s'
        % ('quick' if args.quick else 'full', os.cpu_count(),
           platform.machine(), platform.python_version(),
           ' '.join('%.1f' % x for x in os.getloadavg())))
    log('plan (times are rough, for 2 otherwise idle cores):')
    for i, pt in enumerate(parts, 1):
        log('  %d. %-7s %s: %s' % (i, pt.key, _fmt_duration(
            pt.estimate(args.quick)), pt.title))
    if no_e2e:
        log('  (%s)' % no_e2e)
    if args.managed:
        devclouds = Devclouds(args.devcloud_cli, root, log)
    log('  total %s; results to %s%s' % (
        _fmt_duration(total), args.out,
        '; compared with %s' % args.compare if args.compare else ''))
    results = {}
    walls = {}
    errors = {}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix='opie-bench-') as workdir:
        for i, pt in enumerate(parts, 1):
            log('\n[%d/%d] %s (%s expected; %.0f s elapsed)' % (
                i, len(parts), pt.key, _fmt_duration(pt.estimate(
                    args.quick)), time.monotonic() - started))
            if pt.key == 'e2e' and devclouds is not None:
                data, wall, err = run_on_devclouds(
                    devclouds, pt, args.quick, workdir, log)
            else:
                data, wall, err = run_part(pt, args.quick, workdir, log)
            walls[pt.key] = wall
            if err:
                errors[pt.key] = err
                log('!!! %s failed: %s' % (pt.key, err))
            else:
                results[pt.key] = data
            log('[%d/%d] %s done in %.0f s' % (i, len(parts), pt.key, wall))
    rows = ratio_rows(results)
    doc = {'version': 1, 'commit': _commit(),
           'date': datetime.datetime.now(datetime.timezone.utc).isoformat(),
           'quick': args.quick, 'cores': os.cpu_count(),
           'python': platform.python_version(), 'parts': results,
           'walls': walls, 'errors': errors, 'ratios': rows}
    with open(args.out, 'w') as f:
        json.dump(doc, f, indent=1)
    log('\n' + '=' * 78)
    log('RESULTS (%s run, commit %s, %.0f s)%s' % (
        'quick' if args.quick else 'full', doc['commit'] or '?',
        time.monotonic() - started,
        '; old: %s (commit %s)' % (args.compare, old.get('commit') or '?')
        if old else ''))
    print_table(rows, old_rows if old else None)
    if errors:
        log('failed parts: %s' % '; '.join(
            '%s: %s' % kv for kv in sorted(errors.items())))
    log('results written to %s' % args.out)
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
