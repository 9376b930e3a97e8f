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
"""opie-repacker: RPM reconsolidation of running servers (thesis Paper IV).

The planning itself is pure and lives outside this package:
:mod:`opie_sched.rpm.planner` (triggers of Paper IV §5.3, priorities of
Table 1, the RPM score of each move of §4.3.1 from
:mod:`opie_sched.rpm.model`, the migration budget and preemptible-first
draining of underloaded hosts). This package wires it to a cloud:

* :mod:`.strategies` -- the ``[opie_repacker] strategy`` plugins (``rpm``,
  ``p2p``, ``gossip``, ``tabu``), each turning hosts into a plan;
* :mod:`.tabu` -- the tabu-search rebalancing strategy (spot market);
* :mod:`.collector` -- the planner's input from Nova and Placement
  (openstacksdk) and the utilisation history;
* :mod:`.executor` -- live migrations, one at a time;
* :mod:`.service` -- the periodic loop under a tooz lock;
* the ``[opie_repacker]`` options are in :mod:`opie_sched.conf.repacker`.

Not to be confused with :mod:`opie_sched.flavormix` (thesis Paper V: the
autoscaler's choice of a cheaper mix of flavors, no migration).
"""
