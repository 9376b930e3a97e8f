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
"""Reports of simulations: summary table, JSON, CSV time series, PNG plot.

Every function takes one or more :class:`~opie_sched.simulator.engine.
SimResult` and shows them side by side (e.g. one per policy, or a workload
with and without preemptible backfilling).
"""

import csv
import json
import os

import matplotlib

matplotlib.use('Agg')
from matplotlib import pyplot  # noqa: E402

from opie_sched.simulator import engine  # noqa: E402

#: Rows of :func:`summary`: (label, formatter of a SimResult).
_ROWS = (
    ('policy', lambda r: r.policy),
    ('hosts (vCPU capacity)', lambda r: '%d (%g)' % (r.n_hosts,
                                                     r.capacity_vcpus)),
    ('requests (normal / preemptible)', lambda r: '%d (%d / %d)' % (
        r.requests, r.normal_requests, r.preemptible_requests)),
    ('servers booted / requested', lambda r: '%d / %d' % (
        r.servers_booted, r.servers_requested)),
    ('normal requests failed', lambda r: '%d' % r.normal_failed),
    ('  of which blocked by preemptibles',
     lambda r: '%d' % r.normal_blocked_by_preemptible),
    ('preemptible requests rejected', lambda r: '%d' % r.preemptible_rejected),
    ('preemption decisions', lambda r: '%d' % r.preemption_decisions),
    ('instances preempted', lambda r: '%d' % r.preemptions),
    ('total preemption cost', lambda r: '%.0f' % r.preemption_cost),
    ('preempted work (vCPU h)', lambda r: '%.1f' % (
        r.lost_vcpu_seconds / 3600.0)),
    ('scheduling passes (extra)', lambda r: '%d (%d)' % (
        r.scheduling_passes, r.extra_passes)),
    ('vCPU utilisation, all', lambda r: '%.1f %%' % (100 * r.utilisation())),
    ('vCPU utilisation, normal', lambda r: '%.1f %%' % (
        100 * r.utilisation(('normal',)))),
    ('vCPU utilisation, preemptible', lambda r: '%.1f %%' % (
        100 * r.utilisation(('preemptible',)))),
    ('mean active hosts', lambda r: '%.1f' % r.mean_active_hosts()),
    ('utilisation window (h)', lambda r: '%.1f-%.1f' % tuple(
        x / 3600.0 for x in r.window())),
    ('events (per wall second)', lambda r: '%d (%.0f)' % (
        r.events, r.events_per_second)),
)


def summary(results):
    """A text table, one column per result."""
    results = list(results)
    width = max([22] + [len(r.label) + 2 for r in results])
    head = '%-36s' % '' + ''.join('%*s' % (width, r.label) for r in results)
    lines = [head, '-' * len(head)]
    for name, fmt in _ROWS:
        lines.append('%-36s' % name + ''.join('%*s' % (width, fmt(r))
                                              for r in results))
    return '\n'.join(lines)


def to_json(results, **extra):
    """JSON text: ``{"results": [SimResult.as_dict(), ...], **extra}``."""
    doc = dict(extra)
    doc['results'] = [r.as_dict() for r in results]
    return json.dumps(doc, indent=2, sort_keys=True)


def write_csv(path, results):
    """One row per sample: ``label`` then the :data:`~.engine.SERIES`
    columns and ``capacity_vcpus``. Returns ``path``.
    """
    names = [name for name, _ in engine.SERIES]
    with open(path, 'w', newline='') as f:
        w = csv.writer(f)
        w.writerow(['label'] + names + ['capacity_vcpus'])
        for r in results:
            cols = [r.series[name] for name in names]
            for row in zip(*cols):
                w.writerow([r.label] + ['%.6g' % v for v in row]
                           + ['%g' % r.capacity_vcpus])
    return path


def plot(path, results, title='opie_sched simulation'):
    """PNG: vCPU utilisation (normal stacked under preemptible) of the
    first result with the others' totals as lines, and below it the
    running totals of preemptions and failed normal requests. Returns
    ``path``.
    """
    results = list(results)
    fig, (ax, ax2) = pyplot.subplots(
        2, 1, figsize=(10, 6.5), sharex=True,
        gridspec_kw={'height_ratios': [2, 1]})
    first = results[0]
    cap = first.capacity_vcpus or 1.0

    def hours(r):
        return r.series['t'] / 3600.0

    normal = 100.0 * first.series['normal_vcpus'] / cap
    total = normal + 100.0 * first.series['preemptible_vcpus'] / cap
    ax.fill_between(hours(first), 0, normal, step='post', alpha=0.6,
                    label='normal (%s)' % first.label)
    ax.fill_between(hours(first), normal, total, step='post', alpha=0.5,
                    label='preemptible (%s)' % first.label)
    for r in results[1:]:
        used = r.series['normal_vcpus'] + r.series['preemptible_vcpus']
        ax.step(hours(r), 100.0 * used / (r.capacity_vcpus or 1.0),
                where='post', linewidth=1.0, label='all (%s)' % r.label)
    ax.set_ylabel('vCPU in use (% of cloud)')
    ax.set_ylim(0, 105)
    ax.set_title(title)
    ax.legend(loc='lower right', fontsize='small')
    ax.grid(alpha=0.3)
    for r in results:
        ax2.step(hours(r), r.series['preemptions'], where='post',
                 label='preempted (%s)' % r.label)
        ax2.step(hours(r), r.series['normal_failed'], where='post',
                 linestyle='--', label='normal failed (%s)' % r.label)
    ax2.set_xlabel('simulated time (hours)')
    ax2.set_ylabel('running total')
    ax2.legend(loc='upper left', fontsize='small')
    ax2.grid(alpha=0.3)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100)
    pyplot.close(fig)
    return path
