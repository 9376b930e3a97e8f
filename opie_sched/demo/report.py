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
"""The demo's report: its sentences, a CSV time series and a PNG plot
(the table is :func:`opie_sched.cmd.demo.report_fields`).
"""

import csv
import os
import textwrap

import matplotlib

matplotlib.use('Agg')
from matplotlib import pyplot  # noqa: E402


def common_window(results):
    """``(start, end)`` virtual seconds covering every replay's samples."""
    spans = [(r.samples[0].t, r.samples[-1].t) for r in results if r.samples]
    if not spans:
        return None
    return min(s for s, _ in spans), max(e for _, e in spans)


def conclusion(with_pre, baseline):
    """The replays compared in one sentence: the vCPU utilisation
    backfilling adds (percentage points, over :func:`common_window`) and
    the normal requests failed in each.
    """
    window = common_window([with_pre, baseline])
    gain = 100 * (with_pre.utilisation(window=window)
                  - baseline.utilisation(window=window))
    return ('preemptible backfilling adds %.1f points of vCPU utilisation; '
            'normal requests failed: %d with backfilling vs %d without'
            % (gain, with_pre.normal_failed, baseline.normal_failed))


def size_text(size):
    """``(vCPU, MB, GB)`` as ``4 vCPU / 8000 MB / 80 GB``."""
    return '%g vCPU / %g MB / %g GB' % tuple(size)


_DIMENSIONS = ('vCPU', 'RAM', 'disk')


def failure_reason(failure):
    """Why a normal request failed, in one line, from Nova's fault message
    and the normal state's room right after the failure.

    :param failure: :class:`~opie_sched.demo.replay.NormalFailure`.

    Nova's fault tells two cases apart: ``No valid host was found.`` alone
    (Placement returned no allocation candidates: no host had the
    request's room in the normal state, which preemptible servers never
    hold) and ``... There are not enough hosts available.`` (Placement
    offered hosts, the scheduler's filters refused them all).
    """
    fault = ' '.join((failure.fault or '').split())
    need = tuple(failure.size)
    if 'There are not enough hosts available' in fault:
        why = ('every host Placement offered was refused by the '
               'scheduler\'s filters')
    elif fault.startswith('No valid host was found'):
        why = ('no allocation candidates: no host had %s free in the '
               'normal state' % size_text(need))
    elif fault:
        why = fault
    else:
        why = 'no fault recorded'
    room = failure.room
    if not room:
        return why
    short = [name for d, name in enumerate(_DIMENSIONS)
             if all(r[d] < need[d] for r in room.values())]
    fits = sorted(h for h, r in room.items()
                  if all(f >= n for f, n in zip(r, need)))
    if fits:
        detail = 'room for it afterwards on %s' % ', '.join(fits)
    elif short:
        detail = 'short of %s on every host' % (
            ' and '.join(short) if len(short) < 3
            else '%s and %s' % (', '.join(short[:-1]), short[-1]))
    else:
        detail = ('each host short of one of vCPU, RAM or disk: the '
                  'normal state is fragmented')
    best = sorted(room.items(), key=lambda kv: (-kv[1][0], kv[0]))[:3]
    return '%s (%s; most room: %s)' % (why, detail, ', '.join(
        '%s %s' % (h, size_text(r)) for h, r in best))


def failure_lines(result):
    """One line per failed normal request of a replay: job, virtual time,
    servers x flavor size, and :func:`failure_reason`.
    """
    return ['job %s at t=%s, %d x %s%s: %s' % (
        f.job_id, hms(f.t), f.count, size_text(f.size),
        ' (%d failed)' % f.failed if f.count > 1 else '',
        failure_reason(f)) for f in result.failures]


def failure_report(results):
    """Lines naming every failed normal request of the replays, each
    prefixed with its replay's label; a request that failed alike (same
    servers, same reason) in every replay is named once, prefixed
    ``every replay``. ``['none']`` when no normal request failed.
    """
    per_replay = [list(zip(((f.job_id, f.t) for f in r.failures),
                           failure_lines(r))) for r in results]
    lines = []
    for i, r in enumerate(results):
        for key, line in per_replay[i]:
            if len(results) > 1 and all(
                    (key, line) in p for p in per_replay):
                if i == 0:
                    lines.append('every replay: ' + line)
            else:
                lines.append('%s: %s' % (r.label, line))
    return lines or ['none']


def compare_normal(with_pre, baseline):
    """``(same, total, differences)`` of the normal requests of two
    replays of one workload: how many got the same hosts (or failed alike)
    in both, how many there are, and ``[(outcome, other outcome)]`` for
    the others (:class:`~opie_sched.demo.replay.NormalOutcome`; a request
    missing from one replay is paired with None).
    """
    other = {(o.job_id, o.t): o for o in baseline.normal_outcomes}
    same, differences = 0, []
    seen = set()
    for o in with_pre.normal_outcomes:
        key = (o.job_id, o.t)
        seen.add(key)
        b = other.get(key)
        if b is not None and b.hosts == o.hosts:
            same += 1
        else:
            differences.append((o, b))
    differences += [(None, b) for k, b in other.items() if k not in seen]
    return same, same + len(differences), differences


def comparison_text(with_pre, baseline, limit=10):
    """:func:`compare_normal` in words (at most ``limit`` differences)."""
    same, total, differences = compare_normal(with_pre, baseline)
    if not differences:
        return ('identical: each of the %d normal requests got the same '
                'hosts, or failed, in both replays' % total)

    def hosts(o):
        if o is None:
            return 'not replayed'
        return '+'.join(h or 'FAILED' for h in o.hosts)

    lines = ['%d of %d normal requests differ:' % (len(differences), total)]
    for a, b in differences[:limit]:
        o = a or b
        lines.append('job %s at t=%s: %s with backfilling, %s without' % (
            o.job_id, hms(o.t), hosts(a), hosts(b)))
    if len(differences) > limit:
        lines.append('... and %d more' % (len(differences) - limit))
    return '\n'.join(lines)


def hms(seconds):
    """Virtual seconds as ``H:MM:SS``."""
    seconds = int(seconds)
    return '%d:%02d:%02d' % (seconds // 3600, seconds // 60 % 60,
                             seconds % 60)


def write_csv(path, results):
    """One row per sample: replay label, virtual seconds, vCPU in use."""
    with open(path, 'w', newline='') as f:
        w = csv.writer(f)
        w.writerow(['replay', 't_seconds', 'normal_vcpus',
                    'preemptible_vcpus', 'capacity_vcpus'])
        for r in results:
            for s in r.samples:
                w.writerow([r.label, '%.1f' % s.t, s.normal_vcpus,
                            s.preemptible_vcpus, r.capacity_vcpus])
    return path


def plot(path, with_pre, baseline=None, title='opie_sched demo'):
    """Utilisation over (virtual) time, stacked normal/preemptible."""
    fig, ax = pyplot.subplots(figsize=(10, 4.5))
    cap = with_pre.capacity_vcpus or 1

    def steps(result, attr):
        ts = [s.t / 3600.0 for s in result.samples]
        ys = [100.0 * sum(getattr(s, a) for a in attr) / cap
              for s in result.samples]
        return ts, ys

    t, normal = steps(with_pre, ['normal_vcpus'])
    _, total = steps(with_pre, ['normal_vcpus', 'preemptible_vcpus'])
    ax.fill_between(t, 0, normal, step='post', alpha=0.6,
                    label='normal (with backfilling)')
    ax.fill_between(t, normal, total, step='post', alpha=0.5,
                    label='preemptible backfilling')
    if baseline is not None:
        tb, nb = steps(baseline, ['normal_vcpus'])
        ax.step(tb, nb, where='post', color='black', linewidth=1.2,
                label='normal only (no backfilling)')
    ax.set_xlabel('trace time (hours)')
    ax.set_ylabel('vCPU in use (% of cloud)')
    ax.set_ylim(0, 105)
    ax.set_title('\n'.join(textwrap.wrap(title, 90)), fontsize=10)
    ax.legend(loc='lower right', fontsize='small')
    ax.grid(alpha=0.3)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    pyplot.close(fig)
    return path
