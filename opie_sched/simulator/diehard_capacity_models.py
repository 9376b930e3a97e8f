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
"""The replica planners under three capacity models of the failure
domains, at two job durations: scenario ``diehard-tables34`` (thesis Paper
VI Tables 3 and 4).

Sedaghat et al., "Die-Hard: Reliable Scheduling to Survive Correlated
Failures in Cloud Data Centers" (thesis Paper VI), §5.2: S_min = 0.999,
K = 500, job durations 80 h (Tables 3 and 4) and 168 h (Table 4); DH,
Proportional and HRF (:func:`opie_sched.diehard.planner.plan`) on the thesis
topology (:func:`opie_sched.diehard.topology.thesis_topology`) under three
capacity models, because HRF's rows depend on how many tasks a domain
holds:

* ``free``: one task per host, no background load (9600 slots, 160 per
  dual-homed network domain);
* ``background``: the §4 hosts (4 cores, 16 GB) with a background load
  uniform within the capacity, tasks of 1 core / 1 GB (the smallest of
  §4's range, the most room HRF can get);
* ``whole-domain``: the same tasks on idle hosts (640 per dual-homed
  domain): one network domain holds the whole job, as the thesis' HRF
  affinity scores imply (124251 = 499·498/2: 499 of the 500 tasks share
  one domain).

For each: every algorithm's smallest n reaching S_min, and S of HRF at
the thesis' n (0 at 80 h, 25 at 168 h). The ``DH over dual-homed``
row is evidence, not a planner: K + n tasks (n = the thesis' DH n) spread
evenly over the 59 dual-homed network domains only.
"""

import collections

import numpy as np

from opie_sched.diehard import planner as dh_plan
from opie_sched.diehard import reliability as dh_rel
from opie_sched.diehard import topology as dh_topo
from opie_sched.simulator import diehard_redundancy
from opie_sched.simulator import tables

#: Thesis Paper VI Tables 3 and 4 (S_min = 0.999, K = 500): hours ->
#: algorithm -> (extra tasks n, affinity score, reliability).
TABLES34 = collections.OrderedDict([
    (80.0, collections.OrderedDict([
        ('diehard', (9, 2022, 0.9995)), ('proportional', (12, 2170.6,
                                                          0.9995)),
        ('hrf', (0, 124251, 0.9995))])),
    (168.0, collections.OrderedDict([
        ('diehard', (18, 2058, 0.9995)), ('proportional', (21, 2247,
                                                           0.9992)),
        ('hrf', (25, 137026, 0.998))])),
])
TARGET = 0.999
TASKS = 500
#: Capacity models: name -> (task (cores, GB) or None, background load).
MODELS = collections.OrderedDict([
    ('free', (None, False)),
    ('background', ((1, 1), True)),
    ('whole-domain', ((1, 1), False)),
])
LABELS = {'diehard': 'DH', 'diehard-literal': 'DH (literal trim)',
          'proportional': 'Proportional', 'hrf': 'HRF'}
#: Our planner rows (see :data:`opie_sched.simulator.diehard_redundancy.ROWS`).
ROWS = ('diehard', 'diehard-literal', 'proportional', 'hrf')


def dual_homed_spread(topology, total):
    """``total`` tasks spread evenly (round robin, in order) over the cells
    of the network domains with two or more ToR switches (evidence for the
    thesis' DH rows).
    """
    cells = [c for c in range(len(topology.cells))
             if len(topology.network_domains[
                 topology.network_of(c)].failure_rates) > 1]
    vector = [0] * len(topology.cells)
    for k in range(total):
        vector[cells[k % len(cells)]] += 1
    return vector


def _one(topology, hours):
    out = {}
    for alg in ROWS:
        paper = TABLES34[hours][alg.split('-')[0]]
        plan = dh_plan.plan(
            topology, TASKS, TARGET, hours,
            algorithm='diehard' if alg.startswith('diehard') else alg,
            spread=(dh_plan.SPREAD_LITERAL if alg == 'diehard-literal'
                    else dh_plan.SPREAD_DHONDT))
        row = {'extra': plan.extra, 'reliability': plan.reliability.value,
               'affinity': plan.affinity_score, 'met': plan.met,
               'largest_domain': max(plan.placement.values())}
        if alg == 'hrf':
            at = dh_plan.plan(topology, TASKS, TARGET, hours,
                              algorithm='hrf', max_extra=paper[0])
            row['s_at_paper_n'] = at.reliability.value
            row['affinity_at_paper_n'] = at.affinity_score
        out[alg] = row
    dh_n = TABLES34[hours]['diehard'][0]
    vec = dual_homed_spread(topology, TASKS + dh_n)
    out['dual'] = {'extra': dh_n,
                   'reliability': dh_rel.reliability(
                       topology, vec, TASKS, hours).value,
                   'affinity': dh_rel.affinity_score(vec)}
    return out


def diehard_capacity_models(reduced=False, seed=0):
    """Tables 3 and 4 of Paper VI, paper vs ours.

    Full: 10 topologies (seeds ``seed``..``seed + 9``, as the thesis'
    10 runs). Reduced: 2 topologies.

    :returns: ``(result, text)``; ``result['rows']`` one dict per (model,
        hours, algorithm) with the means and the paper's values.
    """
    runs = 2 if reduced else 10
    result = {'scenario': 'diehard-tables34', 'reduced': reduced,
              'seed': seed, 'runs': runs, 'target': TARGET, 'tasks': TASKS,
              'rows': [], 'capacity': {}}
    rows = []
    for model, (task, background) in MODELS.items():
        topos = [dh_topo.thesis_topology(seed + r, task, background)
                 for r in range(runs)]
        biggest = [max(c.hosts for c in t.cells) for t in topos]
        result['capacity'][model] = {
            'slots': float(np.mean([t.capacity for t in topos])),
            'largest_domain': float(np.mean(biggest))}
        for hours in TABLES34:
            per = [_one(t, hours) for t in topos]
            for alg in ROWS + ('dual',):
                vals = [p[alg] for p in per]
                paper = TABLES34[hours].get(alg.split('-')[0],
                                            TABLES34[hours]['diehard'])
                row = {'model': model, 'hours': hours, 'algorithm': alg,
                       'paper_extra': paper[0], 'paper_affinity': paper[1],
                       'paper_reliability': paper[2]}
                for key in vals[0]:
                    row[key] = float(np.mean([v[key] for v in vals]))
                if alg != 'dual':
                    row['met_all'] = all(v['met'] for v in vals)
                result['rows'].append(row)
                label = ('DH over dual-homed (evidence)' if alg == 'dual'
                         else LABELS[alg])
                extra = ('%.1f' % row['extra'] if alg != 'dual'
                         else '%d (set)' % row['extra'])
                hrf_at = ''
                if alg == 'hrf':
                    hrf_at = 'S %.5f, aff %.0f' % (
                        row['s_at_paper_n'], row['affinity_at_paper_n'])
                rows.append([model, '%g h' % hours, label, extra,
                             paper[0], '%.5f' % row['reliability'],
                             '%g' % paper[2], '%.0f' % row['affinity'],
                             '%g' % paper[1], hrf_at])
    caps = ', '.join('%s %.0f slots (largest domain %.0f)'
                     % (m, c['slots'], c['largest_domain'])
                     for m, c in result['capacity'].items())
    text = '\n'.join([
        'diehard-tables34: thesis Paper VI Tables 3 and 4 (S_min = %g, '
        'K = %d), thesis topology, mean of %d topologies (seeds %d..%d)'
        % (TARGET, TASKS, runs, seed, seed + runs - 1),
        'capacity: ' + caps,
        '',
        tables.text_table(['capacity', 'T', 'algorithm', 'n (ours)',
                           'n (thesis)', 'S (ours)', 'S (thesis)',
                           'affinity (ours)', 'affinity (thesis)',
                           'HRF at the thesis\' n'], rows),
        '',
        'n (ours): the smallest n whose placement reaches S_min. The '
        'thesis\' HRF at 168 h (n 25, S 0.998) does not reach S_min; '
        'compare the last column.',
        diehard_redundancy.TRIM_NOTE,
        diehard_redundancy.CALIBRATION_NOTE])
    return result, text
