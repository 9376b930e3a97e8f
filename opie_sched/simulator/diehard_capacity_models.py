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

Claims (issue 34): §5.2's claims on Tables 3 and 4 (:func:`claims`)
are judged over the 10 topologies by :mod:`opie_sched.simulator.verdicts`,
each once, on the ``background`` model (:data:`JUDGED_MODEL`, the §4
hosts) with the D'Hondt trim, and again under the other capacity models
and the literal trim (:data:`SETTINGS`), the sensitivity table.
"""

import collections

import numpy as np

from opie_sched.diehard import planner as dh_plan
from opie_sched.diehard import reliability as dh_rel
from opie_sched.diehard import topology as dh_topo
from opie_sched.simulator import diehard_redundancy
from opie_sched.simulator import tables
from opie_sched.simulator import verdicts

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


#: Scenario name of the claims (:mod:`opie_sched.simulator.verdicts`).
SCENARIO = 'diehard-tables34'
#: The capacity model the claims are judged on: the §4 hosts with their
#: background load (the thesis' described setup; chosen before judging).
JUDGED_MODEL = 'background'
#: The judged setting and the choices of ours that can flip a verdict:
#: (label, capacity model, DH row (trim reading), the thesis on it).
SETTINGS = [
    ('background, D\'Hondt trim (ours)', 'background', 'diehard',
     '§4: "Each machines has 4 CPU cores and 16 GB of memory, and a '
     'background load that is a random value uniformly chosen within the '
     'available capacity range"; tasks "uniformly chosen from 1 to 4 '
     'cores ... and 1 to 16 GB" (ours: 1 core, 1 GB, the most room for '
     'HRF)'),
    ('free (one task per host)', 'free', 'diehard',
     'one task per host, no background load: not §4\'s hosts, the most '
     'even capacity'),
    ('whole-domain', 'whole-domain', 'diehard',
     'Table 3: HRF affinity 124251 = 499 x 498 / 2, 499 of the 500 '
     'tasks in one domain (no 160-host domain can hold them)'),
    ('background, literal trim', 'background', 'diehard-literal',
     'Alg. 1 line 17: "Update x after removing N* - N tasks from the '
     'least reliable domains"'),
]
#: The thesis' n of HRF (Tables 3 and 4) at which its S is judged.
SOURCE = 'Paper VI §5.2, Tables 3 and 4'


def claims(per_seed, dh='diehard', scenario=SCENARIO):
    """Paper VI §5.2's claims on Tables 3 and 4, judged over the
    topologies (:func:`opie_sched.simulator.verdicts.judge`), each once.

    Per duration T: Proportional needs more extra tasks than DH (the
    per-seed difference n_Prop - n_DH > 0); DH's and Proportional's n
    and affinity score as the table (magnitude, the default 20 % band).
    At 80 h HRF with the thesis' n = 0 meets S_min (S - S_min > 0); at
    168 h HRF with the thesis' n = 25 misses it (S - S_min < 0); DH needs
    more extra tasks at 168 h than at 80 h.

    :param per_seed: ``{hours: {algorithm: [row of _one per topology]}}``
        for the hours of :data:`TABLES34`.
    :param dh: the DH row judged (``diehard`` or ``diehard-literal``).
    :returns: list of :class:`~opie_sched.simulator.verdicts.Verdict`.
    """
    v = verdicts
    out = []

    def vals(hours, alg, key):
        return [r[key] for r in per_seed[hours][alg]]

    for hours, paper in TABLES34.items():
        d, p = paper['diehard'], paper['proportional']
        out.append(v.judge(v.Claim(
            scenario, 'T=%g h: Proportional needs more extra tasks than DH'
            % hours, '"the proportional placement algorithm requires more '
            'extra tasks than the DH algorithm" (Prop %d > DH %d)'
            % (p[0], d[0]), SOURCE),
            [a - b for a, b in zip(vals(hours, 'proportional', 'extra'),
                                   vals(hours, dh, 'extra'))],
            baseline=vals(hours, dh, 'extra')))
        for name, alg, key, target in (
                ('DH extra tasks n', dh, 'extra', d[0]),
                ('Proportional extra tasks n', 'proportional', 'extra',
                 p[0]),
                ('DH affinity score', dh, 'affinity', d[1]),
                ('Proportional affinity score', 'proportional', 'affinity',
                 p[1])):
            out.append(v.judge(v.Claim(
                scenario, 'T=%g h: %s as the table' % (hours, name),
                '%g' % target, SOURCE, v.MAGNITUDE, target=target),
                vals(hours, alg, key)))
    hrf80, hrf168 = TABLES34[80.0]['hrf'], TABLES34[168.0]['hrf']
    out.append(v.judge(v.Claim(
        scenario, 'T=80 h: HRF with n = %d meets S_min (S - S_min > 0)'
        % hrf80[0], '"deploying all the tasks on any failure domain with '
        'higher reliability ... satisfies the constraint with no extra '
        'tasks" (S %g)' % hrf80[2], SOURCE),
        [s - TARGET for s in vals(80.0, 'hrf', 's_at_paper_n')]))
    out.append(v.judge(v.Claim(
        scenario, 'T=168 h: HRF with n = %d misses S_min (S - S_min < 0)'
        % hrf168[0], '"for long running jobs ... distributing the tasks '
        'over different failure domains ... is necessary" (S %g)'
        % hrf168[2], SOURCE, sign=-1),
        [s - TARGET for s in vals(168.0, 'hrf', 's_at_paper_n')]))
    out.append(v.judge(v.Claim(
        scenario, 'DH needs more extra tasks at 168 h than at 80 h',
        '"the longer the job, the more probable to have more failures" '
        '(DH %d -> %d)' % (TABLES34[80.0]['diehard'][0],
                           TABLES34[168.0]['diehard'][0]), SOURCE),
        [b - a for a, b in zip(vals(80.0, dh, 'extra'),
                               vals(168.0, dh, 'extra'))],
        baseline=vals(80.0, dh, 'extra')))
    return out


def experiment(reduced=False, seed=0):
    """Every capacity model of :data:`MODELS` on the same topologies
    (seeds ``seed``..``seed + 9``, the thesis' 10 runs; reduced 2), both
    durations: the JSON-serialisable result with ``per_seed`` (``{model:
    {hours: {algorithm: [row per topology]}}}``, hours as text),
    ``rows`` (their means beside the thesis' values), ``capacity``,
    ``claims`` (the judged setting's verdicts) and ``settings`` (each
    setting's verdicts by claim).
    """
    runs = 2 if reduced else 10
    result = {'scenario': SCENARIO, 'reduced': reduced,
              'seed': seed, 'runs': runs, 'target': TARGET, 'tasks': TASKS,
              'rows': [], 'capacity': {}, 'per_seed': {}}
    for model, (task, background) in MODELS.items():
        topos = [dh_topo.thesis_topology(seed + r, task, background)
                 for r in range(runs)]
        biggest = [max(c.hosts for c in t.cells) for t in topos]
        result['capacity'][model] = {
            'slots': float(np.mean([t.capacity for t in topos])),
            'largest_domain': float(np.mean(biggest))}
        result['per_seed'][model] = {}
        for hours in TABLES34:
            per = [_one(t, hours) for t in topos]
            result['per_seed'][model]['%g' % hours] = {
                alg: [p[alg] for p in per] for alg in ROWS + ('dual',)}
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
    result['settings'] = []
    for label, model, dh, paper in SETTINGS:
        found = claims(_by_hours(result, model), dh)
        if model == JUDGED_MODEL and dh == 'diehard':
            result['claims'] = [x.as_dict() for x in found]
            result['tally'] = dict(verdicts.tally(found)[SCENARIO])
        result['settings'].append({
            'label': label, 'model': model, 'dh': dh, 'paper': paper,
            'verdicts': {x.claim.name: x.verdict for x in found}})
    return result


def _by_hours(result, model):
    return {hours: result['per_seed'][model]['%g' % hours]
            for hours in TABLES34}


def report(result):
    """The text of :func:`experiment`'s ``result``: the means beside the
    thesis' Tables 3 and 4, the claims judged on the judged setting, the
    tally, the sensitivity table with the thesis' text.
    """
    runs, seed = result['runs'], result['seed']
    rows = []
    for row in result['rows']:
        alg, hours = row['algorithm'], row['hours']
        label = ('DH over dual-homed (evidence)' if alg == 'dual'
                 else LABELS[alg])
        extra = ('%.1f' % row['extra'] if alg != 'dual'
                 else '%d (set)' % row['extra'])
        hrf_at = ''
        if alg == 'hrf':
            hrf_at = 'S %.5f, aff %.0f' % (
                row['s_at_paper_n'], row['affinity_at_paper_n'])
        rows.append([row['model'], '%g h' % hours, label, extra,
                     row['paper_extra'], '%.5f' % row['reliability'],
                     '%g' % row['paper_reliability'],
                     '%.0f' % row['affinity'],
                     '%g' % row['paper_affinity'], hrf_at])
    caps = ', '.join('%s %.0f slots (largest domain %.0f)'
                     % (m, c['slots'], c['largest_domain'])
                     for m, c in result['capacity'].items())
    judged = claims(_by_hours(result, JUDGED_MODEL))
    names = [x.claim.name for x in judged]
    sens = []
    for name in names:
        sens.append([name] + [s['verdicts'][name]
                              for s in result['settings']])
    counts = []
    for s in result['settings']:
        c = collections.Counter(s['verdicts'].values())
        counts.append('%d/%d/%d' % (c[verdicts.HOLDS], c[verdicts.FAILS],
                                    c[verdicts.UNDECIDED]))
    sens.append(['hold/fail/undecided'] + counts)
    return '\n'.join([
        'diehard-tables34: thesis Paper VI Tables 3 and 4 (S_min = %g, '
        'K = %d), thesis topology, mean of %d topologies (seeds %d..%d)%s'
        % (TARGET, TASKS, runs, seed, seed + runs - 1,
           ' (reduced)' if result['reduced'] else ''),
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
        diehard_redundancy.CALIBRATION_NOTE,
        '',
        'Paper VI §5.2 claims on Tables 3 and 4, judged over the %d '
        'topologies on the "%s" capacity model with the D\'Hondt trim '
        '(the §4 hosts; chosen before judging):' % (runs, JUDGED_MODEL),
        verdicts.claims_table(judged),
        verdicts.tally_text(judged),
        verdicts.RULES_TEXT,
        '',
        'Sensitivity: the same claims, same topologies, under each choice '
        'of ours that can flip a verdict:',
        tables.text_table(['claim'] + [s['label']
                                       for s in result['settings']], sens),
        'The thesis on these choices:'] + [
            '  %s: %s' % (s['label'], s['paper'])
            for s in result['settings'] if s['paper']])


def diehard_capacity_models(reduced=False, seed=0):
    """Scenario ``diehard-tables34`` (Paper VI Tables 3 and 4):
    ``(result, text)`` -- :func:`experiment`, then :func:`report`.
    """
    result = experiment(reduced=reduced, seed=seed)
    return result, report(result)
