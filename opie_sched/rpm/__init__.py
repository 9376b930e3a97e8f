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
"""Risk-aware, topology-aware packing (RPM; Sedaghat, PhD thesis, Paper IV).

Pure algorithms, no Nova imports:

* :mod:`.model` -- every term of the placement score (risk, distance,
  efficiency, downtime, imbalance), their normalisation and the triggers.
* :mod:`.planner` -- the migration planner: Alg. 1 with its local view of
  the cloud (k neighbours, locality, MaxTTL) or a global view.

Used by the scheduler's RPM weighers (:mod:`opie_sched.scheduler.rpm_terms`),
the ``opie-repacker`` service and the simulator.
"""
