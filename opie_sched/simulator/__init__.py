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
"""An event-driven data-centre simulator for preemptible instances.

``opie-sched simulate`` replays a workload (a Standard Workload Format trace
mapped by :mod:`opie_sched.workload.mapping`, or a workload drawn by
:mod:`opie_sched.workload.generator`) on a simulated cloud, with the *same*
pure preemption code the Nova scheduler plugins run
(:mod:`opie_sched.preemption`): the dual host state of López García et al.,
"An efficient cloud scheduler design supporting preemptible instances"
(Future Generation Computer Systems, 2019, §3), the ranking of
:func:`~opie_sched.preemption.planner.rank_hosts` (Alg. 4) and the exact
victim selection of :func:`~opie_sched.preemption.planner.plan_host`
(Alg. 5).

Every model runs on one shared core, :mod:`.core` (simulated time, the
hosts and VMs with their placement / removal / migration accounting, the
recorded metrics):

* :mod:`.core` -- :mod:`.core.clock`, :mod:`.core.hosts`,
  :mod:`.core.metrics`;
* :mod:`.cloud` — hosts (the core's), their full and normal states, the
  filters and the ranking;
* :mod:`.policies` — the scheduling policies (``opie`` and the baselines
  ``stock``, ``first-fit`` and ``retry``);
* :mod:`.engine` — event-driven time (arrivals, departures, preemptions) and
  the recorded time series;
* :mod:`.report` — summary table, CSV and PNG;
* :mod:`.verdicts` — a paper's claims judged over seeds by one set of
  rules (mean, 95 % interval, effect size, verdict, tally);
* :mod:`.scenarios` — the registry of the named paper scenarios, one module
  each: :mod:`.diehard_redundancy`, :mod:`.diehard_capacity_models`,
  :mod:`.repacking_costs`, :mod:`.repacking_stability_interval` (both on
  :mod:`.repacking_strategies`, Paper V's strategies), :mod:`.themis`,
  :mod:`.rpm_vs_ffd`, :mod:`.preemption_latency`,
  :mod:`.p2p_consolidation`, :mod:`.gossip_redistribution`.

Nothing here imports Nova.
"""
