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
"""Total cost and reconfigurations of Paper V's provisioning strategies,
repacked or not, on the Increase and Seasonal workloads: scenario
``repacking-tables`` (thesis Paper V Tables 3 and 6).

S_base, S_delta, S_Full and the repacked variants
(:mod:`opie_sched.simulator.repacking_strategies`, on the shared core) on
the Increase and Seasonal workloads (:mod:`opie_sched.flavormix.workloads`),
applications A and B, cheap (4 min) and expensive (20 min)
reconfigurations, d = 1000 min, K = 1 %.
"""

from opie_sched import flavormix
from opie_sched.simulator import repacking_strategies
from opie_sched.simulator import tables

#: The scenarios' table printer.
_table = tables.text_table


#: Thesis Paper V Table 3, total cost ($), d = 1000: workload -> strategy
#: -> (App A cheap, App A expensive, App B cheap, App B expensive).
REPACKING_TABLE3 = {
    'Increase1': {'S_base': (1797.62, 1797.62, 1598.3, 1598.3),
                  'S_base_Repacked': (1428.86, 1518.42, 1218.03, 1296.65),
                  'S_delta': (1989.62, 1989.62, 1630.12, 1630.12),
                  'S_delta_Repacked': (1283.17, 1475.6, 1020.55, 1189.86),
                  'S_Full': (1488.69, 1819.13, 1224.64, 1472.33)},
    'Increase2': {'S_base': (576.27, 576.27, 544.86, 544.86),
                  'S_base_Repacked': (456.84, 495.73, 443.18, 490.94),
                  'S_delta': (838.31, 838.31, 838.29, 838.29),
                  'S_delta_Repacked': (407.32, 455.56, 373.43, 433.09),
                  'S_Full': (488.79, 545.9, 454.06, 542.85)},
    'Seasonal1': {'S_base': (21393.74, 21393.74, 16961.23, 16961.23),
                  'S_base_Repacked': (20732.84, 20969.79, 16502.5, 16517.3),
                  'S_delta': (22801.98, 22801.98, 19152.16, 19152.16),
                  'S_delta_Repacked': (20579.89, 21193.29, 16476.5,
                                       17003.44),
                  'S_Full': (24740.29, 25936.8, 19839.8, 20857.36)},
    'Seasonal2': {'S_base': (993.19, 993.19, 894.91, 894.91),
                  'S_base_Repacked': (743.83, 820.75, 730.58, 791.78),
                  'S_delta': (1745.86, 1745.86, 1744.65, 1744.65),
                  'S_delta_Repacked': (681.06, 824.12, 645.35, 769.06),
                  'S_Full': (835.6, 1043.87, 784.48, 970.67)},
}
#: Thesis Paper V Table 6: savings of S_delta_Repacked over S_delta, %:
#: workload -> (A cheap, B cheap, A expensive, B expensive).
REPACKING_TABLE6 = {
    'Increase1': (35.51, 37.39, 25.84, 27.01),
    'Increase2': (51.41, 55.45, 45.66, 48.34),
    'Seasonal1': (9.74, 13.97, 7.06, 11.22),
    'Seasonal2': (60.99, 63.04, 52.8, 55.92),
}
#: Reconfiguration (repacking) times of Paper V §6.1, minutes.
REPACK_MINUTES = {'cheap': 4.0, 'expensive': 20.0}
#: Stability interval d of Tables 3 and 6, minutes.
REPACK_D_MINUTES = 1000.0
REPACK_K = 0.01
_STRATEGY_ORDER = ('S_base', 'S_base_Repacked', 'S_delta',
                   'S_delta_Repacked', 'S_Full')
#: The thesis' four series, each ours from
#: :data:`opie_sched.flavormix.workloads.THESIS_SERIES`.
SERIES = ('Increase1', 'Increase2', 'Seasonal1', 'Seasonal2')


def repacking_costs(reduced=False, seed=0, noise=None):
    """Paper V Tables 3 and 6 on our four series.

    Workloads: :func:`~opie_sched.flavormix.thesis_series` (Increase1
    168 h, Increase2 215 h, Seasonal1 182 h, Seasonal2 338 h; smooth
    shapes, ``noise`` per step if given), 5-minute steps, seeded with
    ``seed``; the thesis' four series are not published, so absolute
    costs differ; the savings % (Table 6: 1 − S_delta_Repacked / S_delta)
    are the comparable figure. Reduced: 24 h of each, 15-minute steps.
    """
    if reduced:
        kwargs = {'hours': 24, 'step_minutes': 15}
    else:
        kwargs = {}
    if noise is not None:
        kwargs['noise'] = noise
    result = {'scenario': 'repacking-tables', 'reduced': reduced,
              'seed': seed, 'd_minutes': REPACK_D_MINUTES, 'K': REPACK_K,
              'repack_minutes': REPACK_MINUTES, 'costs': [], 'savings': [],
              'paper_table3': REPACKING_TABLE3,
              'paper_table6': REPACKING_TABLE6}
    cost_rows, save_rows = [], []
    for wl in SERIES:
        demand, step = flavormix.thesis_series(wl, seed=seed, **kwargs)
        runs = {}
        for app in ('A', 'B'):
            types = flavormix.thesis_types(app)
            for rc, minutes in REPACK_MINUTES.items():
                for name in _STRATEGY_ORDER:
                    sim = repacking_strategies.make_strategy(
                        name, types, d=REPACK_D_MINUTES / 60.0,
                        K=REPACK_K, repack_time=minutes / 60.0).run(
                            demand, step)
                    runs[app, rc, name] = sim
                    result['costs'].append({
                        'workload': wl, 'app': app, 'reconfig': rc,
                        'strategy': name, 'total_cost': sim.total_cost,
                        'resource_cost': sim.resource_cost,
                        'reconfig_cost': sim.reconfig_cost,
                        'reconfigurations': sim.reconfigurations})
        for name in _STRATEGY_ORDER:
            ours = [runs[app, rc, name] for app in ('A', 'B')
                    for rc in ('cheap', 'expensive')]
            cost_rows.append(
                [wl if name == 'S_base' else '', name]
                + ['%.2f (%d)' % (s.total_cost, s.reconfigurations)
                   for s in ours]
                + ['%.2f' % REPACKING_TABLE3[wl][name][k]
                   for k in range(4)])
        for rc in ('cheap', 'expensive'):
            for app in ('A', 'B'):
                base = runs[app, rc, 'S_delta'].total_cost
                row = {'workload': wl, 'app': app, 'reconfig': rc}
                for name, plain in (('S_delta_Repacked', 'S_delta'),
                                    ('S_base_Repacked', 'S_base'),
                                    ('S_Full', 'S_delta')):
                    new = runs[app, rc, name].total_cost
                    old = runs[app, rc, plain].total_cost
                    row['%s_vs_%s' % (name, plain)] = 100 * (1 - new / old)
                k = (0 if app == 'A' else 1) + (0 if rc == 'cheap' else 2)
                row['paper'] = REPACKING_TABLE6[wl][k]
                result['savings'].append(row)
                save_rows.append([
                    wl, app, rc,
                    '%.2f %%' % row['S_delta_Repacked_vs_S_delta'],
                    '%.2f %%' % REPACKING_TABLE6[wl][k],
                    '%.2f %%' % row['S_base_Repacked_vs_S_base'],
                    '%.2f %%' % row['S_Full_vs_S_delta'],
                    '%.2f' % base])
    text = '\n'.join([
        'repacking-tables: thesis Paper V, d = %g min, K = %g %%, repacking '
        'time %g min (cheap) / %g min (expensive), workloads seeded %d%s'
        % (REPACK_D_MINUTES, 100 * REPACK_K, REPACK_MINUTES['cheap'],
           REPACK_MINUTES['expensive'], seed,
           ' (reduced: 24 h, 15-min steps)' if reduced else
           ' (Increase1 168 h, Increase2 215 h, Seasonal1 182 h, '
           'Seasonal2 338 h, 5-min steps)'),
        '',
        'Total cost ($) and reconfigurations: ours vs thesis Table 3 '
        '(absolute costs depend on the unpublished series)',
        _table(['workload', 'strategy', 'A cheap', 'A expensive',
                'B cheap', 'B expensive', 'T3 A cheap', 'T3 A exp',
                'T3 B cheap', 'T3 B exp'], cost_rows),
        '',
        'Savings of repacking (1 - S_delta_Repacked / S_delta, thesis Table '
        '6), plus S_base_Repacked vs S_base and S_Full vs S_delta',
        _table(['workload', 'app', 'R', 'S_delta_Rep (ours)',
                'Table 6', 'S_base_Rep vs S_base',
                'S_Full vs S_delta', 'S_delta cost'], save_rows)])
    return result, text
