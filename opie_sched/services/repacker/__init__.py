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

* :mod:`.planner` -- pure: triggers (§5.3), priorities (Table 1), the RPM
  score of each move (§4.3.1, :mod:`opie_sched.rpm.model`), the migration
  budget
  and preemptible-first draining of underloaded hosts;
* :mod:`.collector` -- the planner's input from Nova and Placement
  (openstacksdk) and the utilisation history;
* :mod:`.executor` -- live migrations, one at a time;
* :mod:`.service` -- the periodic loop under a tooz lock;
* :mod:`.opts` -- the ``[opie_repacker]`` options.
"""
