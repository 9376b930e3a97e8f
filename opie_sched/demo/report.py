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
"""The demo's report: a summary table, a CSV time series and a PNG plot."""

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


def summary(with_pre, baseline, cost_unit='s'):
    """Text table comparing the replay with and without backfilling.

    :param with_pre: :class:`~opie_sched.demo.replay.ReplayResult` of the
        replay with preemptible instances.
    :param baseline: the same replay with normal requests only, or None.

    Utilisation is measured over one window for both replays: from the
    first request to the last server's end in either of them.
    """
    results = [with_pre] + ([baseline] if baseline else [])
    window = common_window(results)
    rows = [
        ('requests (normal / preemptible)', lambda r: '%d (%d / %d)' % (
            r.requests, r.normal_requests, r.preemptible_requests)),
        ('servers booted', lambda r: '%d' % r.servers_booted),
        ('normal requests failed', lambda r: '%d' % r.normal_failed),
        ('preemptible requests rejected (no room)',
         lambda r: '%d' % r.preemptible_rejected),
        ('preemption decisions', lambda r: '%d' % r.preemption_decisions),
        ('instances preempted', lambda r: '%d' % r.preemptions),
        ('total preemption cost (%s)' % cost_unit,
         lambda r: 'n/a' if r.preemption_cost is None
         else '%.0f' % r.preemption_cost),
        ('vCPU utilisation, all', lambda r: '%.1f %%' % (
            100 * r.utilisation(window=window))),
        ('vCPU utilisation, normal', lambda r: '%.1f %%' % (
            100 * r.utilisation(('normal',), window=window))),
        ('vCPU utilisation, preemptible', lambda r: '%.1f %%' % (
            100 * r.utilisation(('preemptible',), window=window))),
        ('wall time (s)', lambda r: '%.0f' % r.wall_seconds),
    ]
    head = ['%-42s' % ''] + ['%24s' % r.label for r in results]
    lines = [''.join(head), '-' * len(''.join(head))]
    for name, fmt in rows:
        lines.append('%-42s' % name + ''.join('%24s' % fmt(r)
                                              for r in results))
    if baseline:
        gain = 100 * (with_pre.utilisation(window=window)
                      - baseline.utilisation(window=window))
        lines.append('')
        lines.append('preemptible backfilling adds %.1f points of vCPU '
                     'utilisation; normal requests failed: %d with '
                     'backfilling vs %d without'
                     % (gain, with_pre.normal_failed,
                        baseline.normal_failed))
    return '\n'.join(lines)


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
