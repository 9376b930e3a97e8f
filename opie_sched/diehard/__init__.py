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
"""Die-Hard: placing a job's tasks to survive correlated failures.

The model, reliability function and planner of thesis Paper VI (Sedaghat et
al., "Die-Hard: Reliable Scheduling to Survive Correlated Failures in Cloud
Data Centers", in M. Sedaghat's thesis on cluster scheduling). A job needs
``K`` identical tasks, one per host, running throughout ``T`` hours; it
deploys ``N = K + n`` tasks so that at least ``K`` survive with probability
at least ``S_min``.

* :mod:`.topology` -- the failure model (§2.1): network and power failure
  domains of redundant nodes, the combined domains ("cells") of hosts, a
  YAML topology file with field-by-field validation, the thesis' evaluation
  cluster (§4); the errors ``TopologyError`` and ``PlanError``.
* :mod:`.reliability` -- S(x), the probability that a placement keeps K
  tasks running (eqs. 4-6: exact, or truncated with an error bound),
  Lemmas 1-2 of §3.1 and the affinity score (eq. 9).
* :mod:`.planner` -- Die-Hard (Algorithm 1 of §3: the decision tree of
  covered failures, bisection, trimming) and the Proportional and
  Highest-Reliability-First baselines of §5.2.

Units: durations in hours, failure rates per hour, probabilities in [0, 1].

No nova imports: a pure library used by the ReliabilityWeigher
(:mod:`opie_sched.scheduler.reliability_plan`), ``opie-sched reliability`` and
the simulator.
"""
