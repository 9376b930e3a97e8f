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
"""FFD-sum vs RPM window by window over the simulated day (utilisation,
migrations, data transferred): scenario ``rpm-fig3`` (thesis Paper IV
§6.1, Fig. 3).

Fig. 3 plots, over the simulated day, (a) the average CPU and memory
utilisation, (b) the migrations and (c) the data transferred for services
and batch jobs, FFD-sum vs RPM. Its values are not in the text; the text's
findings are: "RPM improved the average CPU and memory utilization by
reducing the number of active PMs"; "the durable scheduling decisions made
by RPM reduced the number of migrations"; RPM "reduced the number of
service migrations and the volume of service data transferred". Each is
judged on every (load reading, seed) run of the ``rpm-vs-ffd`` data centre
(:mod:`opie_sched.simulator.rpm_vs_ffd`, local discovery), and the
per-window curves of the first seed are printed. Utilisation is that of
the active hosts (the text ties it to fewer active PMs).
"""

from opie_sched.simulator import rpm_vs_ffd
from opie_sched.simulator import rpm_weights
from opie_sched.simulator import tables

#: The text's findings on Fig. 3: (key, label, metric, RPM's direction).
CLAIMS = (
    ('cpu', 'RPM higher mean CPU utilisation (3a)', 'avg_cpu', 1),
    ('mem', 'RPM higher mean memory utilisation (3a)', 'avg_mem', 1),
    ('active', 'RPM fewer active PMs (3a text)', 'active_servers', -1),
    ('migrations', 'RPM fewer migrations (3b)', 'migrations', -1),
    ('service_migrations', 'RPM fewer service migrations (3c text)',
     'service_migrations', -1),
    ('service_data', 'RPM less service data (3c)', 'service_data_gb', -1),
)


def judge(ffd, rpm):
    """``{claim key: bool}`` for one pair of runs (metric dicts of
    :func:`~opie_sched.simulator.rpm_vs_ffd.run_policy`).
    """
    out = {}
    for key, _, metric, direction in CLAIMS:
        diff = rpm[metric] - ffd[metric]
        out[key] = diff * direction > 0
    return out


def rpm_vs_ffd_timeline(reduced=False, seed=0, discovery='local',
                        seeds=None, count=None):
    """Paper IV Fig. 3: FFD-sum vs RPM over time, both load readings.

    Full: 256 hosts (groups of 64), 24 h, ``count`` seeds (default the
    thesis' 10 runs, :data:`~opie_sched.simulator.rpm_weights.
    THESIS_RUNS`), 2-hour windows; reduced: 64 hosts (groups of 32), 6 h,
    1 seed, 1-hour windows. ``seeds`` (a list) overrides ``seed`` and
    ``count``.
    """
    if reduced:
        n_hosts, hours, default, group_size, every = 64, 6.0, 1, 32, 60
    else:
        n_hosts, hours, default, group_size, every = (
            256, 24.0, rpm_weights.THESIS_RUNS, rpm_vs_ffd.GROUP_SIZE, 120)
    count = default if count is None else count
    seeds = list(seeds or range(seed, seed + count))
    result = {'scenario': 'rpm-fig3', 'reduced': reduced, 'seeds': seeds,
              'hosts': n_hosts, 'hours': hours, 'group_size': group_size,
              'discovery': discovery, 'window_minutes': every, 'runs': [],
              'verdicts': []}
    rows, curves = [], []
    for load in rpm_vs_ffd.LOADS:
        for s in seeds:
            vms = rpm_vs_ffd.thesis_load(n_hosts, hours, s, load)
            pair = {p: rpm_vs_ffd.run_policy(
                p, n_hosts, vms, hours, s, discovery,
                group_size=group_size, series_every=every)
                for p in rpm_vs_ffd.POLICIES}
            holds = judge(pair['ffd'], pair['rpm'])
            result['runs'].append({'load': load, 'seed': s, 'runs': pair,
                                   'claims': holds})
            for key, label, metric, _ in CLAIMS:
                result['verdicts'].append({'load': load, 'seed': s,
                                           'claim': key,
                                           'holds': holds[key]})
            rows.append([load, s] + [
                '%.3g / %.3g' % (pair['ffd'][m], pair['rpm'][m])
                for _, _, m, _ in CLAIMS])
            if s == seeds[0]:
                for p in rpm_vs_ffd.POLICIES:
                    for what, fmt in (('cpu', '%.2f'), ('mem', '%.2f'),
                                      ('migrations', '%d'),
                                      ('service_data_gb', '%.0f'),
                                      ('batch_data_gb', '%.0f')):
                        curves.append(
                            [load, p, what] + [fmt % e[what]
                                               for e in pair[p]['series']])
    verdict_rows = []
    for key, label, _, _ in CLAIMS:
        mine = [v for v in result['verdicts'] if v['claim'] == key]
        n = sum(v['holds'] for v in mine)
        verdict_rows.append([label, '%d of %d' % (n, len(mine)),
                             ', '.join('%s/%d' % (v['load'], v['seed'])
                                       for v in mine if not v['holds'])
                             or '-'])
    n_all = sum(v['holds'] for v in result['verdicts'])
    windows = int(hours * 60 // every)
    text = '\n'.join([
        'rpm-fig3: thesis Paper IV section 6.1 Fig. 3 (FFD-sum vs RPM over '
        'time), %d hosts (groups of %d), %g h, seeds %s, %s discovery, '
        'loads "total" and "table4" (rpm-vs-ffd)%s'
        % (n_hosts, group_size, hours, ', '.join(map(str, seeds)),
           discovery, ' (reduced)' if reduced else ''),
        'Paper: the figure\'s values are not in the text; its findings '
        '(RPM higher utilisation with fewer active PMs, fewer migrations, '
        'fewer service migrations and less service data) are judged.',
        '',
        'FFD-sum / RPM per run',
        tables.text_table(['load', 'seed'] + [c[2] for c in CLAIMS], rows),
        '',
        'Curves, seed %d, per %d-min window (%d windows): utilisation of '
        'active hosts, migrations and GB moved in the window'
        % (seeds[0], every, windows),
        tables.text_table(['load', 'policy', 'series'] + [
            '%gh' % ((i + 1) * every / 60.0) for i in range(windows)],
            curves),
        '',
        'The text\'s findings vs ours, on every run (%d of %d hold):'
        % (n_all, len(result['verdicts'])),
        tables.text_table(['finding', 'runs', 'fails on (load/seed)'],
                          verdict_rows)])
    return result, text
