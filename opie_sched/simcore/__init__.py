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
"""The shared simulation core: simulated time, hosts and VMs, metrics.

Every scenario of :mod:`opie_sched.simulator` runs on these three pieces;
the science (preemption planner, RPM terms, pricing, consolidation
strategies, repacking solver) stays in its own package and is called by the
scenarios.

* :mod:`.clock` -- simulated time: an :class:`~.clock.EventQueue` of
  timed events, a workload's :class:`~.clock.Arrivals`, their merge in time
  order (:func:`~.clock.merge`) and a :class:`~.clock.StepClock` for
  fixed-step models;
* :mod:`.hosts` -- :class:`~.hosts.Hosts`: hosts of ``d`` resource
  dimensions, the VMs placed on them, per-host sums of the VMs' measures,
  and the accounting of placements, removals and migrations;
* :mod:`.metrics` -- :class:`~.metrics.Series`: recorded samples (a step
  function of time, or one row per step).

Nothing here imports Nova; numpy is the only dependency.
"""
