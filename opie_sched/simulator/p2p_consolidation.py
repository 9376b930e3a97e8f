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
"""Scenario ``p2p-consolidation``: thesis Paper II, Fig. 2 and Table 2.

Sedaghat, Hernández and Elmroth, "Autonomic Resource Allocation for Cloud
Data Centers: A Peer to Peer Approach" (ICCAC'14; thesis Paper II), §4-5:
2500 nodes of 10 compute units on a Barabási-Albert overlay, ~20000 VM
requests of 1..10 units arriving as a Poisson process over 20000 time
units, normally distributed lifetimes, HTL = 20, re-consolidation of nodes
at or below 40 %. The six policies of Table 1 (central/distributed entry ×
first-fit/least-/most-utilised).

* **Fig. 2** (no re-consolidation): hops, rejection ratio, U_dc, U_node,
  profit per policy. The figure's bars are not in the text; its stated
  findings are the comparison: Central-FF most hops, most rejections and
  lowest U_dc (≈20 %) but high U_node (≈80 %); Dist-FF fewest hops;
  Central-Min second most hops and rejections; distributed entry fewer
  hops and rejections, higher U_dc and lower U_node than central; Dist-Max
  the most profitable.
* **Table 2** (with re-consolidation): nodes put into hibernation by
  re-consolidation. We compare the order of the six policies.
* **Fig. 3**: U_node without and with re-consolidation.
* **Fig. 4** (§5.4): 500-5000 servers, 800-9000 requests never
  terminated, no re-consolidation.

Hops are counted over *placed* requests (§4 metric 3: "the number of
steps required to locate a node that has the capacity required"); the
average over every request (a rejected one counted at the hops it took)
is printed beside it. Paper II gives no power cost, so the profit verdict
is printed over a range of cost_i (:data:`PROFIT_COSTS`).

The overlay is a Barabási-Albert graph with one link per new node
(m = 1): Paper II §4 builds it with the NetLogo Preferential Attachment
model (its reference [13], Wilensky 2005), which attaches every new node
by a single link. With m = 2 (a denser graph) central entry no longer
saturates and Central-FF is no longer the worst policy (run
``simulate(..., attachment=2)``).

Paper II does not give the lifetime distribution's parameters, P_idle,
P_max nor the power cost; ours are in :data:`FULL` and
:class:`opie_sched.consolidation.p2p.PowerModel` (the same for every
policy), and the paper's "time unit" is ours.
"""

import numpy as np

from opie_sched.consolidation import overlay as overlay_mod
from opie_sched.consolidation import p2p
from opie_sched.simcore import clock

#: Paper II Table 2: nodes hibernated by re-consolidation.
PAPER_TABLE2 = {'Central-FF': 35, 'Central-Max': 202, 'Central-Min': 2693,
                'Dist-Max': 1030, 'Dist-FF': 2147, 'Dist-Min': 3679}

#: Paper II §5 / Fig. 2, the findings stated in the text (the bars'
#: values are not in the text): metric -> (policy with the extreme value,
#: 'max' | 'min').
PAPER_FIG2 = {
    'hops': [('Central-FF', 'max'), ('Dist-FF', 'min')],
    'rejection': [('Central-FF', 'max')],
    'u_dc': [('Central-FF', 'min')],
    'profit': [('Dist-Max', 'max'), ('Central-FF', 'min')],
}

#: cost_i values (currency per time unit of a fully utilised server) the
#: profit verdict is printed over: Paper II gives no value; ours
#: (:class:`opie_sched.consolidation.p2p.PowerModel`) is 0.05, a 250 W
#: server at 0.10 $/kWh costs 0.025 $/h.
PROFIT_COSTS = (0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075,
                0.1)

#: Paper II §5.4 (Fig. 4): servers -> VM requests; VMs neither
#: re-consolidated nor terminated (the data centre saturates).
FIG4 = ((500, 800), (1000, 1750), (2500, 4500), (5000, 9000))
FIG4_REDUCED = ((500, 800), (1000, 1750))
#: "remain constant": our tolerance across sizes for the distributed
#: policies: hops within +-FIG4_HOPS (relative), rejection and U_dc within
#: +-FIG4_ABS (absolute fractions).
FIG4_HOPS, FIG4_ABS = 0.2, 0.05

ORDER = ('Central-FF', 'Central-Min', 'Central-Max', 'Dist-FF', 'Dist-Min',
         'Dist-Max')

#: The paper's set-up (§4) and our choices where it is silent.
FULL = dict(nodes=2500, capacity=10.0, requests=20000, duration=20000.0,
            lifetime_mean=4000.0, lifetime_sd=1000.0, htl=p2p.HTL,
            attachment=1, reconsolidate_every=250.0, sample_every=100.0,
            warmup=0.25)
REDUCED = dict(nodes=250, capacity=10.0, requests=2000, duration=2000.0,
               lifetime_mean=400.0, lifetime_sd=100.0, htl=p2p.HTL,
               attachment=1, reconsolidate_every=50.0, sample_every=20.0,
               warmup=0.25)


def simulate(policy, reconsolidation, seed=0, power=None, **params):
    """One run of one Table 1 policy.

    :param policy: a key of :data:`opie_sched.consolidation.p2p.POLICIES`.
    :param reconsolidation: run Alg. 2 every ``reconsolidate_every``.
    :param params: overrides of :data:`FULL`.
    :returns: dict of means over the sampled times after warm-up: ``hops``
        (per *placed* request: §4 metric 3, "the number of steps required
        to locate a node that has the capacity required"), ``hops_all``
        (per request, each rejected one counted at the hops it took: our
        earlier reading, kept beside it), ``rejection`` (eq. 6), ``u_dc``
        (eq. 1), ``u_node`` (eq. 5), ``active`` nodes, ``profit`` (eq. 3,
        currency per time unit, at ``power.cost``), ``income`` and
        ``power_units`` (eq. 3's two terms: profit at any cost_i is
        ``income - power_units * cost_i``), plus ``hibernated`` and
        ``migrations`` (re-consolidation totals).
    :raises KeyError: unknown policy.
    """
    cfg = dict(FULL, **params)
    entry_kind, heuristic = p2p.POLICIES[policy]
    power = power or p2p.PowerModel()
    rng = np.random.default_rng(seed)
    # The same overlay and workload for every policy of a seed.
    net = overlay_mod.ScaleFreeOverlay(cfg['nodes'], cfg['attachment'],
                                       seed=seed)
    work = np.random.default_rng(seed + 1)
    gaps = work.exponential(cfg['duration'] / cfg['requests'],
                            cfg['requests'])
    arrivals = np.cumsum(gaps)
    demands = work.integers(1, int(cfg['capacity']) + 1, cfg['requests'])
    lifetimes = np.maximum(1.0, work.normal(cfg['lifetime_mean'],
                                            cfg['lifetime_sd'],
                                            cfg['requests']))
    entries = work.integers(0, cfg['nodes'], cfg['requests'])
    hub = net.hub()
    cluster = p2p.Cluster(cfg['nodes'], cfg['capacity'])
    # Event kinds, also their order at equal times: sample, arrival,
    # re-consolidation, departure (then by request number).
    events = clock.EventQueue()
    for j in range(cfg['requests']):
        if arrivals[j] < cfg['duration']:
            events.push(float(arrivals[j]), (1, j), priority=(1, j))
    t = cfg['sample_every']
    while t < cfg['duration']:
        events.push(t, (0, -1), priority=(0, -1))
        t += cfg['sample_every']
    if reconsolidation:
        t = cfg['reconsolidate_every']
        while t < cfg['duration']:
            events.push(t, (2, -2), priority=(2, -2))
            t += cfg['reconsolidate_every']
    warm = cfg['warmup'] * cfg['duration']
    hops, placed_hops, demanded, served = [], [], 0.0, 0.0
    samples = {'u_dc': [], 'u_node': [], 'active': [], 'profit': [],
               'income': [], 'power_units': []}
    hibernated = migrations = 0
    for now, (kind, j) in events.drain():
        if kind == 3:
            cluster.remove(j)
        elif kind == 1:
            entry = hub if entry_kind == 'central' else int(entries[j])
            walk = p2p.allocate(cluster, net, heuristic, float(demands[j]),
                                entry, rng, htl=cfg['htl'])
            if now >= warm:
                hops.append(walk.hops)
                demanded += demands[j]
            if walk.node is not None:
                cluster.place(j, float(demands[j]), walk.node)
                events.push(now + lifetimes[j], (3, j), priority=(3, j))
                if now >= warm:
                    served += demands[j]
                    placed_hops.append(walk.hops)
        elif kind == 2:
            moved, slept = p2p.reconsolidate(cluster, net, rng,
                                             htl=cfg['htl'])
            migrations += moved
            hibernated += slept
        elif now >= warm:
            samples['u_dc'].append(p2p.data_centre_utilisation(cluster))
            samples['u_node'].append(p2p.node_utilisation(cluster))
            samples['active'].append(int(cluster.active().sum()))
            samples['profit'].append(power.profit(cluster))
            samples['income'].append(power.income(cluster))
            samples['power_units'].append(power.power_units(cluster))
    out = {k: float(np.mean(v)) if v else 0.0 for k, v in samples.items()}
    out.update(hops=float(np.mean(placed_hops)) if placed_hops else 0.0,
               hops_all=float(np.mean(hops)) if hops else 0.0,
               rejection=(demanded - served) / demanded if demanded else 0.0,
               hibernated=hibernated, migrations=migrations)
    return out


def fig4(sizes, seed=0):
    """Paper II Fig. 4: hops, rejection and U_dc per policy and size, no
    re-consolidation, lifetimes longer than the run (never terminated).

    :returns: ``{policy: [{'nodes', 'requests', 'hops', 'rejection',
        'u_dc'}]}`` and the verdicts ``[{'policy', 'claim', 'holds'}]``.
    """
    curves = {p: [] for p in ORDER}
    for nodes, requests in sizes:
        params = dict(FULL, nodes=nodes, requests=requests,
                      lifetime_mean=1e12, lifetime_sd=0.0, warmup=0.0)
        for policy in ORDER:
            out = simulate(policy, False, seed=seed, **params)
            curves[policy].append({'nodes': nodes, 'requests': requests,
                                   'hops': out['hops'],
                                   'rejection': out['rejection'],
                                   'u_dc': out['u_dc']})
    verdicts = []
    for policy in ORDER:
        rows = curves[policy]
        if policy.startswith('Dist'):
            hops = [r['hops'] for r in rows]
            mid = (max(hops) + min(hops)) / 2 or 1.0
            verdicts.append({
                'policy': policy, 'claim': 'hops constant (+-%d %%)'
                % (100 * FIG4_HOPS),
                'holds': (max(hops) - min(hops)) / 2 <= FIG4_HOPS * mid})
            for key in ('rejection', 'u_dc'):
                vals = [r[key] for r in rows]
                verdicts.append({
                    'policy': policy, 'claim': '%s constant (+-%g)'
                    % (key, FIG4_ABS),
                    'holds': (max(vals) - min(vals)) / 2 <= FIG4_ABS})
        elif policy == 'Central-FF':
            rej = [r['rejection'] for r in rows]
            verdicts.append({
                'policy': policy, 'claim': 'rejection grows with size',
                'holds': all(b > a for a, b in zip(rej, rej[1:]))})
    return curves, verdicts


def power_cost():
    """Our cost_i (:class:`opie_sched.consolidation.p2p.PowerModel`)."""
    return p2p.PowerModel().cost


def _rank(values):
    """Policy names ordered by decreasing value."""
    return [k for k, _ in sorted(values.items(), key=lambda kv: -kv[1])]


def _spearman(a, b):
    """Spearman rank correlation of two equal-keyed dicts."""
    keys = sorted(a)
    ra = np.argsort(np.argsort([a[k] for k in keys]))
    rb = np.argsort(np.argsort([b[k] for k in keys]))
    return float(np.corrcoef(ra, rb)[0, 1])


def p2p_consolidation(reduced=False, seed=0, table=None):
    """Paper II Fig. 2 and Table 2, paper vs ours.

    :param table: the formatter ``table(header, rows)`` (default: the
        scenarios module's).
    :returns: ``(result, text)``.
    """
    if table is None:
        from opie_sched.simulator.tables import text_table as table
    params = REDUCED if reduced else FULL
    fig2, tab2 = {}, {}
    for policy in ORDER:
        fig2[policy] = simulate(policy, False, seed=seed, **params)
        tab2[policy] = simulate(policy, True, seed=seed, **params)
    hibernated = {p: tab2[p]['hibernated'] for p in ORDER}
    f4, f4_verdicts = fig4(FIG4_REDUCED if reduced else FIG4, seed=seed)
    # Fig. 3: U_node with re-consolidation vs without
    gain = {p: tab2[p]['u_node'] - fig2[p]['u_node'] for p in ORDER}
    fig3 = {'u_node_without': {p: fig2[p]['u_node'] for p in ORDER},
            'u_node_with': {p: tab2[p]['u_node'] for p in ORDER},
            'gain': gain,
            'verdicts': [
                {'claim': 'a Least-utilised policy gains the most',
                 'holds': max(gain, key=gain.get).endswith('-Min')},
                {'claim': 'a Most-utilised policy gains the least',
                 'holds': min(gain, key=gain.get).endswith('-Max')},
                {'claim': 'gain up to 10 points (largest <= 0.10)',
                 'holds': 0 < max(gain.values()) <= 0.10 + 1e-9}]}
    checks = []
    # hops: the paper's reading (placed requests, §4 metric 3) and ours
    # before (every request) side by side.
    readings = [('hops', 'hops'), ('hops_all', 'hops (all requests)')]
    for metric, claims in PAPER_FIG2.items():
        for key, label in (readings if metric == 'hops' else
                           [(metric, metric)]):
            values = {p: fig2[p][key] for p in ORDER}
            for policy, extreme in claims:
                pick = (max if extreme == 'max' else min)(
                    values, key=values.get)
                checks.append({'metric': label, 'paper': '%s %s' % (
                    policy, extreme), 'ours': pick,
                    'holds': pick == policy})
    curve = []
    for cost in PROFIT_COSTS:
        values = {p: fig2[p]['income'] - fig2[p]['power_units'] * cost
                  for p in ORDER}
        curve.append({'cost': cost, 'profit': values,
                      'max': max(values, key=values.get),
                      'min': min(values, key=values.get)})
    for row in curve:
        row['holds'] = (row['max'] == 'Dist-Max'
                        and row['min'] == 'Central-FF')
    entry_checks = []
    for h in ('FF', 'Min', 'Max'):
        c, d = fig2['Central-' + h], fig2['Dist-' + h]
        entry_checks.append({
            'heuristic': h,
            'fewer_hops': d['hops'] <= c['hops'],
            'fewer_rejections': d['rejection'] <= c['rejection'],
            'higher_u_dc': d['u_dc'] >= c['u_dc'],
            'lower_u_node': d['u_node'] <= c['u_node']})
    result = {
        'scenario': 'p2p-consolidation', 'reduced': reduced, 'seed': seed,
        'params': dict(params), 'fig2': fig2,
        'table2': {'paper': PAPER_TABLE2, 'ours': hibernated,
                   'paper_order': _rank(PAPER_TABLE2),
                   'ours_order': _rank(hibernated),
                   'spearman': _spearman(PAPER_TABLE2, hibernated)},
        'fig2_checks': checks, 'entry_checks': entry_checks,
        'profit_curve': curve, 'fig4': f4, 'fig4_verdicts': f4_verdicts,
        'fig3': fig3}
    rows = [[p, '%.2f' % fig2[p]['hops'], '%.2f' % fig2[p]['hops_all'],
             '%.1f' % (100 * fig2[p]['rejection']),
             '%.1f' % (100 * fig2[p]['u_dc']),
             '%.1f' % (100 * fig2[p]['u_node']),
             '%.0f' % fig2[p]['active'], '%.2f' % fig2[p]['profit']]
            for p in ORDER]
    text = ['Paper II Fig. 2 (no re-consolidation; %d nodes, %d requests, '
            'HTL %d%s): ours' % (params['nodes'], params['requests'],
                                 params['htl'],
                                 ', reduced' if reduced else ''),
            table(['policy', 'hops', 'hops all', 'reject %', 'U_dc %',
                   'U_node %', 'active', 'profit/t'], rows),
            '',
            '"hops" counts placed requests (§4 metric 3: "the number of '
            'steps required to locate a node that has the capacity '
            'required"); "hops all" also counts each rejected request at '
            'the hops it took (our earlier reading). profit/t at cost_i = '
            '%.3f (ours; the paper gives none).' % power_cost(),
            '',
            'Fig. 2 findings stated in the paper (§5.1-5.2) vs ours:',
            table(['metric', 'paper', 'ours', 'holds'],
                  [[c['metric'], c['paper'], c['ours'],
                    'yes' if c['holds'] else 'NO'] for c in checks]),
            table(['entry: Dist vs Central', 'fewer hops', 'fewer rej.',
                   'higher U_dc', 'lower U_node'],
                  [[e['heuristic']] + ['yes' if e[k] else 'NO' for k in (
                      'fewer_hops', 'fewer_rejections', 'higher_u_dc',
                      'lower_u_node')] for e in entry_checks]),
            '',
            'Profit (eq. 3) over cost_i, the power cost of a fully utilised '
            'server per time unit (not in the paper); paper: Dist-Max most, '
            'Central-FF least profitable:',
            table(['cost_i'] + list(ORDER) + ['most', 'least', 'holds'],
                  [['%.3f' % c['cost']] + ['%.2f' % c['profit'][p]
                                           for p in ORDER]
                   + [c['max'], c['min'], 'yes' if c['holds'] else 'NO']
                   for c in curve]),
            'the profit finding holds at %d of %d cost_i values (%s)' % (
                sum(c['holds'] for c in curve), len(curve),
                ', '.join('%.3f' % c['cost'] for c in curve
                          if c['holds']) or 'none'),
            '',
            'Paper II Table 2: nodes hibernated by re-consolidation '
            '(threshold 40 %)',
            table(['policy', 'paper', 'ours', 'migrations'],
                  [[p, PAPER_TABLE2[p], hibernated[p],
                    tab2[p]['migrations']] for p in ORDER]),
            'order paper: %s' % ' > '.join(result['table2']['paper_order']),
            'order ours:  %s' % ' > '.join(result['table2']['ours_order']),
            'Spearman rank correlation paper/ours: %.2f'
            % result['table2']['spearman'],
            '',
            'Paper II Fig. 3: U_node without / with re-consolidation (paper: '
            'up to +10 %, Least-utilised gain most, Most-utilised least)',
            table(['policy', 'U_node without %', 'U_node with %',
                   'gain (points)'],
                  [[p, '%.1f' % (100 * fig2[p]['u_node']),
                    '%.1f' % (100 * tab2[p]['u_node']),
                    '%+.1f' % (100 * gain[p])] for p in ORDER]),
            table(['Fig. 3 claim', 'holds'],
                  [[v['claim'], 'yes' if v['holds'] else 'NO']
                   for v in fig3['verdicts']]),
            '',
            'Paper II Fig. 4 (§5.4: servers / requests %s, no '
            're-consolidation, VMs never terminated): hops (placed '
            'requests), rejection %%, U_dc %%' % ', '.join(
                '%d/%d' % s for s in (FIG4_REDUCED if reduced else FIG4)),
            table(['policy'] + ['%d nodes' % r['nodes']
                                for r in f4[ORDER[0]]],
                  [[p] + ['%.2f / %.1f / %.1f' % (
                      r['hops'], 100 * r['rejection'], 100 * r['u_dc'])
                      for r in f4[p]] for p in ORDER]),
            'paper: distributed entry keeps hops, rejection and U_dc '
            'constant as the servers grow; Central-FF rejects more and '
            'more. Ours (%d of %d hold):' % (
                sum(v['holds'] for v in f4_verdicts), len(f4_verdicts)),
            table(['policy', 'claim', 'holds'],
                  [[v['policy'], v['claim'], 'yes' if v['holds'] else 'NO']
                   for v in f4_verdicts])]
    return result, '\n'.join(text)
