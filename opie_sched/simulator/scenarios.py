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
"""The registry of named experiments that print the papers' figures next
to ours (issue 6).

Each scenario is a function ``f(reduced=False, seed=0)`` returning
``(result, text)``: ``result`` a JSON-serialisable dict of the numbers we
measured (and the paper's), ``text`` a table that quotes the paper's
figures, with their table reference, next to ours. ``reduced=True`` is a
small version of the same experiment that runs in a few seconds (the unit
tests, ``opie-sched simulate --scenario NAME --reduced``). Each lives in
its own module of :mod:`opie_sched.simulator` and runs on the shared core
(:mod:`opie_sched.simcore`) where it simulates.

Scenarios (:data:`SCENARIOS`, in the order of issue 6):

``diehard-table2``
    Die-Hard vs Proportional vs HRF on the thesis topology, S_min =
    0.9999, T = 80 h, K = 500, 700, 1000; thesis Paper VI Table 2
    (:mod:`opie_sched.simulator.diehard_redundancy`).
``repacking-tables``
    S_base, S_delta, S_Full and the repacked variants on the Increase and
    Seasonal workloads, apps A and B, cheap (4 min) and expensive (20 min)
    reconfigurations, d = 1000 min, K = 1 %; thesis Paper V Tables 3 and 6
    (:mod:`opie_sched.simulator.repacking_costs`).
``themis-value``
    Themis' proportional-share market (the :mod:`opie_sched.market.slo`
    controllers, shares from :mod:`opie_sched.market.pricing`) vs FCFS
    and EDF on the first 1000 HPC2N jobs, and Merkat vs a batch scheduler
    (:mod:`opie_sched.simulator.themis`); Themis HPCC'12 Fig. 5, the SLO
    paper's Fig. 2, Merkat §5.4.3.
``rpm-vs-ffd``
    RPM vs FFD-sum with Alg. 1's local discovery on the thesis' load,
    §6.1's claims judged over 10 seeds with their sensitivity to our
    choices (:mod:`opie_sched.simulator.rpm_vs_ffd`); thesis Paper IV
    Tables 4 and 5.
``diehard-tables34``
    Die-Hard, Proportional and HRF at S_min = 0.999, K = 500, 80 h and
    168 h under three capacity models (one task per host, the thesis'
    background load, a domain holding the whole job); thesis Paper VI
    Tables 3 and 4 (:mod:`opie_sched.simulator.diehard_capacity_models`).
``repacking-tables45``
    S_delta_Repacked with a short and a long stability interval d, cheap
    and expensive reconfigurations, and the realised stability interval of
    each repack; thesis Paper V Tables 4 and 5
    (:mod:`opie_sched.simulator.repacking_stability_interval`).
``preemption-latency``
    Scheduling latency of opie vs the unmodified scheduler vs the retry
    design (López García et al. Fig. 2), via
    ``benchmarks/scheduling_latency.py``
    (:mod:`opie_sched.simulator.preemption_latency`).
``p2p-consolidation``
    Paper II's six allocation policies on a scale-free overlay, with and
    without re-consolidation (:mod:`opie_sched.simulator
    .p2p_consolidation`); thesis Paper II Fig. 2 and Table 2.
``gossip-redistribution``
    Random, Incremental, Merge and Merge+Imb gossip consolidation
    (:mod:`opie_sched.simulator.gossip_redistribution`); thesis Paper III
    Figs. 2-5.
``merkat-fig6``
    Merkat Alg. 1 scaling one VM's bid against four best-effort VMs on a
    4-core node for deadlines of 200, 150 and 100 min
    (:mod:`opie_sched.simulator.vertical_scaling`); Merkat §5.4.1 Fig. 6.
``themis-fig6``
    An elastic master-worker application under Horizontal-Deadline, 1075
    tasks and a burst of 1500 (:mod:`opie_sched.simulator
    .themis_elastic`); Themis HPCC'12 Fig. 6.
``repacking-single-type``
    S_base_Repacked repacking to the cheapest one-type set instead of the
    optimal one, beside S_base and the repack-to-optimal strategies
    (:mod:`opie_sched.simulator.repacking_single`); thesis Paper V, end
    of §6.2.
``rpm-weights``
    RPM with one factor of eq. 3 weighted 0.0 and 0.8
    (:mod:`opie_sched.simulator.rpm_weights`); thesis Paper IV Tables
    6-10 and Fig. 4.
``rpm-fig3``
    FFD-sum vs RPM over the simulated day, both load readings
    (:mod:`opie_sched.simulator.rpm_vs_ffd_timeline`); thesis Paper IV
    Fig. 3.
``gossip-fig5``
    Merge+Imb convergence for k = 10, 20, 30, 50 on 50,000 PMs
    (:mod:`opie_sched.simulator.gossip_view_size`); thesis Paper III Fig. 5.
``headroom-tradeoff``
    Notice given to victims vs normal requests slowed vs utilisation given
    up, at several headroom sizes on the NASA, HPC2N and Lublin traces
    (:mod:`opie_sched.simulator.headroom_tradeoff`); issue 31, no paper.
``score-replay``
    How often the placement score's answer (``fits_now``, ``preempting``,
    ``no_room``) was what the scheduler then did, asked at the pass and
    0, 60 and 600 s before, on a NASA iPSC/860 prefix with preemptible
    backfill (:mod:`opie_sched.simulator.score_replay`); issue 32, no
    paper.
"""

import collections
import time

from opie_sched.simulator import diehard_capacity_models
from opie_sched.simulator import diehard_redundancy
from opie_sched.simulator import gossip_redistribution
from opie_sched.simulator import gossip_view_size
from opie_sched.simulator import headroom_tradeoff
from opie_sched.simulator import p2p_consolidation
from opie_sched.simulator import preemption_latency
from opie_sched.simulator import repacking_costs
from opie_sched.simulator import repacking_single
from opie_sched.simulator import repacking_stability_interval
from opie_sched.simulator import rpm_vs_ffd
from opie_sched.simulator import rpm_vs_ffd_timeline
from opie_sched.simulator import rpm_weights
from opie_sched.simulator import score_replay
from opie_sched.simulator import themis
from opie_sched.simulator import themis_elastic
from opie_sched.simulator import vertical_scaling

#: Scenario name -> function(reduced=False, seed=0) -> (result, text).
SCENARIOS = collections.OrderedDict([
    ('diehard-table2', diehard_redundancy.diehard_redundancy),
    ('repacking-tables', repacking_costs.repacking_costs),
    ('themis-value', themis.themis_value),
    ('rpm-vs-ffd', rpm_vs_ffd.rpm_vs_ffd),
    ('diehard-tables34', diehard_capacity_models.diehard_capacity_models),
    ('repacking-tables45',
     repacking_stability_interval.repacking_stability_interval),
    ('preemption-latency', preemption_latency.preemption_latency),
    ('p2p-consolidation', p2p_consolidation.p2p_consolidation),
    ('gossip-redistribution', gossip_redistribution.gossip_redistribution),
    ('merkat-fig6', vertical_scaling.vertical_scaling),
    ('themis-fig6', themis_elastic.themis_elastic),
    ('repacking-single-type', repacking_single.repacking_single_type),
    ('rpm-weights', rpm_weights.rpm_weights),
    ('rpm-fig3', rpm_vs_ffd_timeline.rpm_vs_ffd_timeline),
    ('gossip-fig5', gossip_view_size.gossip_view_size),
    ('headroom-tradeoff', headroom_tradeoff.headroom_tradeoff),
    ('score-replay', score_replay.score_replay),
])

#: Scenario name -> the paper's figure or table it reproduces (the module
#: of each is named by what it computes; the scenario names users type
#: keep the figure).
SOURCES = collections.OrderedDict([
    ('diehard-table2', 'thesis Paper VI Tables 1 and 2'),
    ('repacking-tables', 'thesis Paper V Tables 3 and 6'),
    ('themis-value', 'Themis HPCC\'12 Fig. 5; SLO paper Fig. 2; '
                     'Merkat §5.4.3'),
    ('rpm-vs-ffd', 'thesis Paper IV Table 4'),
    ('diehard-tables34', 'thesis Paper VI Tables 3 and 4'),
    ('repacking-tables45', 'thesis Paper V Tables 4 and 5'),
    ('preemption-latency', 'López García et al. 2019 Fig. 2'),
    ('p2p-consolidation', 'thesis Paper II Fig. 2 and Table 2'),
    ('gossip-redistribution', 'thesis Paper III Figs. 2-5'),
    ('merkat-fig6', 'Merkat §5.4.1 Fig. 6'),
    ('themis-fig6', 'Themis HPCC\'12 Fig. 6'),
    ('repacking-single-type', 'thesis Paper V §6.2'),
    ('rpm-weights', 'thesis Paper IV Tables 6-10 and Fig. 4'),
    ('rpm-fig3', 'thesis Paper IV Fig. 3'),
    ('gossip-fig5', 'thesis Paper III Fig. 5'),
    ('headroom-tradeoff', 'no paper (issue 31)'),
    ('score-replay', 'no paper (issue 32)'),
])


def run(name, reduced=False, seed=0):
    """Run scenario ``name``: ``(result, text, seconds)``.

    :raises KeyError: unknown name.
    """
    if name not in SCENARIOS:
        raise KeyError('unknown scenario %r (known: %s)'
                       % (name, ', '.join(SCENARIOS)))
    start = time.monotonic()
    result, text = SCENARIOS[name](reduced=reduced, seed=seed)
    return result, text, time.monotonic() - start
