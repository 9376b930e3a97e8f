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
"""Scenario ``diehard-table2``: Die-Hard vs Proportional vs HRF (thesis
Paper VI Table 2).

The planners of :mod:`opie_sched.diehard` on the thesis topology
(:func:`opie_sched.diehard.topology.thesis_topology`, 61 network / 4 power
domains, 9600 hosts), S_min = 0.9999, T = 80 h, K = 500, 700 and 1000
tasks; the paper's numbers printed next to ours.
"""

import collections

import numpy as np

from opie_sched.diehard import planner as dh_plan
from opie_sched.diehard import reliability as dh_rel
from opie_sched.diehard import topology as dh_topo
from opie_sched.simulator import tables

#: The scenarios' table printer.
_table = tables.text_table


#: Thesis Paper VI Table 2 (S_min = 0.9999, T = 80 h): K -> algorithm ->
#: (extra tasks n, affinity score, reliability).
DIEHARD_TABLE2 = {
    500: {'diehard': (18, 2089, 0.9999), 'proportional': (23, 2274, 0.9999),
          'hrf': (25, 137026, 0.9995)},
    700: {'diehard': (32, 4015, 0.9999), 'proportional': (33, 4476, 0.9999),
          'hrf': (36, 269745, 0.9996)},
    1000: {'diehard': (36, 8280, 0.9999),
           'proportional': (45, 9228.6, 0.9999),
           'hrf': (51, 550725, 0.9996)},
}
#: Thesis Paper VI Table 1 (K = 1000): extra tasks n -> job reliability.
DIEHARD_TABLE1 = collections.OrderedDict([
    (0, 0.9619771697), (16, 0.9884874963), (33, 0.9997473744),
    (51, 0.9999373772), (70, 0.9999376013), (89, 0.9999376019)])
DIEHARD_TARGET = 0.9999
DIEHARD_HOURS = 80.0
_DH_LABELS = {'diehard': 'DH', 'diehard-literal': 'DH (literal trim)',
              'proportional': 'Proportional', 'hrf': 'HRF'}
#: Our rows: the two readings of Die-Hard's trim (Alg. 1 lines 17/24) and
#: the baselines. ``diehard`` is the D'Hondt spread, ``diehard-literal``
#: removes the surplus from the least reliable domains, emptying each.
ROWS = ('diehard', 'diehard-literal', 'proportional', 'hrf')
#: Said in every Paper VI report: what we tuned.
CALIBRATION_NOTE = (
    'Our only tuning: the power wiring of the thesis topology (two power '
    'domains on one PDU, two on a redundant pair) is calibrated so that '
    'the uncoverable power risk over 80 h matches the plateau of Paper VI '
    'Table 1 (1 - 0.9999376); everything else is the text of §4.')
TRIM_NOTE = (
    'Two readings of Alg. 1 line 17 ("Update x after removing N* - N '
    'tasks from the least reliable domains", N* = R n): "DH" keeps every '
    'domain within one task of the others (D\'Hondt; the surplus is one '
    'task from each of the least reliable domains), "DH (literal trim)" '
    'empties the least reliable domains first. Both then trim single '
    'tasks while S >= S_min (§3.2).')


def table2_verdicts(rows):
    """The claims of Paper VI §5.2 on Table 2 judged on our rows: for each
    K and each DH reading, DH needs the fewest extra tasks (no more than
    Proportional), has the lowest affinity score, HRF the highest, and HRF
    at Proportional's n misses S_min. One dict per (K, reading, claim).
    """
    by = {(r['K'], r['algorithm']): r for r in rows}
    out = []
    for k in sorted({r['K'] for r in rows}):
        prop, hrf = by[(k, 'proportional')], by[(k, 'hrf')]
        for reading in ('diehard', 'diehard-literal'):
            dh = by[(k, reading)]
            claims = [
                ('DH n <= Proportional n', dh['extra'] <= prop['extra']),
                ('DH lowest affinity', dh['affinity'] < min(
                    prop['affinity'], hrf['affinity'])),
                ('HRF highest affinity', hrf['affinity'] > max(
                    dh['affinity'], prop['affinity'])),
                ('HRF at Proportional n misses S_min',
                 hrf['reliability_at_proportional_n'] < DIEHARD_TARGET)]
            out.extend({'K': k, 'reading': reading, 'claim': c,
                        'holds': bool(h)} for c, h in claims)
    return out


def table1(topologies, hours=80.0, tasks=1000):
    """Paper VI Table 1: S(x) of K + n tasks spread evenly over the
    network domains (Die-Hard's placement family) for the table's n, mean
    over ``topologies``. The thesis does not state T; ours is Table 2's
    80 h. The plateau (large n) is what the power wiring of
    :func:`~opie_sched.diehard.topology.thesis_topology` is calibrated
    to; the rise before it is not.

    :returns: list of ``{'n', 'ours', 'paper'}``.
    """
    rows = []
    for n, paper in DIEHARD_TABLE1.items():
        values = []
        for topo in topologies:
            ctx = dh_plan._Context(topo, tasks, DIEHARD_TARGET, hours,
                                   dh_rel.DEFAULT_TOLERANCE)
            values.append(ctx.evaluate(dh_plan.spread_placement(
                ctx, tasks + n, 'network')).value)
        rows.append({'n': n, 'ours': float(np.mean(values)),
                     'paper': paper})
    return rows


def diehard_table2(reduced=False, seed=0):
    """Die-Hard, Proportional and HRF for the K of thesis Table 2.

    Averages over ``runs`` topologies (the thesis averages 10 runs; each of
    ours draws the ToR failure rates of
    :func:`~opie_sched.diehard.topology.thesis_topology` with seed
    ``seed + run``).
    For each algorithm: the smallest n reaching S_min, S and the affinity
    score of that placement. HRF is also evaluated at the thesis' own
    setting, the n Proportional needs ("HRF cannot even satisfy the
    reliability constraint with the same upper bound value n"): column
    ``S(HRF at n_prop)``.

    Reduced: K = 500 only, 2 topologies.
    """
    ks = (500,) if reduced else (500, 700, 1000)
    runs = 2 if reduced else 10
    topologies = [dh_topo.thesis_topology(seed + r) for r in range(runs)]
    result = {'scenario': 'diehard-table2', 'reduced': reduced,
              'seed': seed, 'runs': runs, 'target': DIEHARD_TARGET,
              'hours': DIEHARD_HOURS, 'rows': [],
              'paper': {str(k): {a: dict(zip(('extra', 'affinity',
                                              'reliability'), v))
                                 for a, v in algs.items()}
                        for k, algs in DIEHARD_TABLE2.items()}}
    rows = []
    for k in ks:
        per = {a: collections.defaultdict(list) for a in ROWS}
        for topo in topologies:
            prop_n = None
            for alg in ROWS:
                plan = dh_plan.plan(
                    topo, k, DIEHARD_TARGET, DIEHARD_HOURS,
                    algorithm='diehard' if alg.startswith('diehard')
                    else alg,
                    spread=(dh_plan.SPREAD_LITERAL
                            if alg == 'diehard-literal'
                            else dh_plan.SPREAD_DHONDT))
                acc = per[alg]
                acc['extra'].append(plan.extra)
                acc['reliability'].append(plan.reliability.value)
                acc['affinity'].append(plan.affinity_score)
                acc['met'].append(plan.met)
                if alg == 'proportional':
                    prop_n = plan.extra
            capped = dh_plan.plan(topo, k, DIEHARD_TARGET, DIEHARD_HOURS,
                                  algorithm='hrf', max_extra=prop_n)
            per['hrf']['s_at_prop_n'].append(capped.reliability.value)
        for alg in ROWS:
            acc = per[alg]
            paper = DIEHARD_TABLE2[k][alg.split('-')[0]]
            row = {'K': k, 'algorithm': alg,
                   'extra': float(np.mean(acc['extra'])),
                   'extra_min': min(acc['extra']),
                   'extra_max': max(acc['extra']),
                   'reliability': float(np.mean(acc['reliability'])),
                   'affinity': float(np.mean(acc['affinity'])),
                   'met_all': all(acc['met']),
                   'paper_extra': paper[0], 'paper_affinity': paper[1],
                   'paper_reliability': paper[2]}
            if alg == 'hrf':
                row['reliability_at_proportional_n'] = float(
                    np.mean(acc['s_at_prop_n']))
            result['rows'].append(row)
            rows.append([
                k if alg == 'diehard' else '', _DH_LABELS[alg],
                '%.1f [%d-%d]' % (row['extra'], row['extra_min'],
                                  row['extra_max']),
                paper[0], '%.6f' % row['reliability'], '%g' % paper[2],
                '%.0f' % row['affinity'], '%g' % paper[1],
                '%.6f' % row['reliability_at_proportional_n']
                if alg == 'hrf' else ''])
    verdicts = table2_verdicts(result['rows'])
    result['verdicts'] = verdicts
    t1 = table1(topologies)
    result['table1'] = t1
    text = '\n'.join([
        'diehard-table2: thesis Paper VI Table 2 (S_min = %g, T = %g h), '
        'thesis topology (61 network / 4 power domains, 9600 hosts), mean '
        'of %d topologies (seeds %d..%d)' % (
            DIEHARD_TARGET, DIEHARD_HOURS, runs, seed, seed + runs - 1),
        '',
        _table(['K', 'algorithm', 'extra n (ours) [min-max]',
                'n (Table 2)', 'S (ours)', 'S (Table 2)',
                'affinity (ours)', 'affinity (Table 2)',
                'S(HRF at n_prop)'], rows),
        '',
        'Ours: each algorithm\'s smallest n reaching S_min. The thesis '
        'prints HRF at about the n of the others (S 0.9995-0.9996 < S_min); '
        'our HRF column "S(HRF at n_prop)" is that comparison, and HRF\'s '
        'own n is what filling the most reliable domains needs to reach '
        'S_min.',
        TRIM_NOTE,
        '',
        'Paper VI §5.2 claims for Table 2, judged on every K and both '
        'readings of DH (%d of %d hold):' % (
            sum(v['holds'] for v in verdicts), len(verdicts)),
        _table(['K', 'DH reading', 'claim', 'holds'],
               [[v['K'], _DH_LABELS[v['reading']], v['claim'],
                 'yes' if v['holds'] else 'NO'] for v in verdicts]),
        CALIBRATION_NOTE,
        '',
        'Paper VI Table 1 (K = 1000, T = 80 h: ours, the thesis does not '
        'state T): S(x) of K + n tasks spread evenly over the network '
        'domains, mean of the same topologies; the plateau is our '
        'calibration (above), the rise is not:',
        _table(['n', 'S (ours)', 'S (Table 1)', 'ours - paper'],
               [[r['n'], '%.10f' % r['ours'], '%.10f' % r['paper'],
                 '%+.2e' % (r['ours'] - r['paper'])] for r in t1])])
    return result, text
