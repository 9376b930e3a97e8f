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
"""``opie-autoscaler``: the repacking autoscaler service (issue 5).

Source: thesis Paper V (M. Sedaghat, F. Hernandez-Rodriguez, E. Elmroth,
*A Virtual Machine Re-packing Approach to the Horizontal vs. Vertical
Elasticity Trade-off for Cloud Autoscaling*, CAC'13) for the planner and the
make-before-break transitions, and Merkat's Algorithm 3 for the budget cap;
the planning itself is :mod:`opie_sched.flavormix`.

Modules:

* :mod:`.app` -- application declarations (applications file, prices).
* :mod:`.spot` -- prices of preemptible flavors from the opie-market spot
  market (Merkat eq. 1 prices per unit-hour -> ``p_i`` per hour).
* :mod:`.demand` -- demand sources (stevedore namespace
  ``opie_sched.autoscaler.demand``: ``static``, ``file``, ``http``).
* :mod:`.executor` -- make-before-break execution through openstacksdk.
* :mod:`.service` -- the periodic loop, one tooz lock per application.

The ``[opie_autoscaler]`` oslo.config options are in
:mod:`opie_sched.conf.autoscaler` (options live below the services).
"""
