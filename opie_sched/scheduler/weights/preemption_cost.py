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
"""``PreemptionCostWeigher``: hosts needing no preemption first, then by
the least cost of the servers preemption would terminate there.

Enable in nova.conf (with :class:`~opie_sched.scheduler.weights.
preemptible_count.PreemptibleCountWeigher`, both are in
:func:`~opie_sched.scheduler.weights.all_weighers`)::

    [filter_scheduler]
    weight_classes = nova.scheduler.weights.all_weighers,
        opie_sched.scheduler.weights.all_weighers

It reads the instances of all candidate hosts in one bulk query per cell
(see :mod:`opie_sched.scheduler.cell_reads`), never one per host.
"""

import nova.conf
from nova.scheduler import utils as scheduler_utils

from opie_sched import conf as opie_conf
from opie_sched.scheduler import ownership
from opie_sched.scheduler import preemption_plans
from opie_sched.scheduler import transparent
from opie_sched.scheduler.weights import base

CONF = nova.conf.CONF
opie_conf.register_opts(CONF)


class PreemptionCostWeigher(base.BulkWeigher):
    """Hosts needing no preemption first, then by least victim-set cost.

    López García et al., Alg. 4, with the victims chosen exactly (Alg. 5)
    under ``[opie_preemption] cost_modules``. Weights are already in
    [0, 1]: 1.0 when the request fits the full state; for hosts that need
    preemption ``0.1 + 0.4 × (1 − cost / max cost among them)`` (so at most
    0.5); 0.0 when even every preemptible instance would not free enough.
    Preemptible requests never preempt, and a normal request placed on
    the normal state (``[opie_preemption] transparent_normal_placement``)
    is not steered: every host gets 1.0.
    """

    minval = 0.0
    maxval = 1.0

    def weight_multiplier(self, host_state):
        return scheduler_utils.get_weight_multiplier(
            host_state, 'preemption_cost_weight_multiplier',
            CONF.opie_preemption.preemption_cost_weight_multiplier)

    def _weigh_all(self, host_states, spec_obj):
        if (ownership.request_is_preemptible(spec_obj)
                or transparent.is_normal_view(host_states)):
            return [1.0] * len(host_states)
        plans = preemption_plans.plans_for(host_states, spec_obj)
        ordered = [plans[(hs.host, hs.nodename)] for hs in host_states]
        costs_ = [p.total_cost for p in ordered
                  if p.needs_preemption and p.feasible]
        max_cost = max(costs_) if costs_ else 0.0
        result = []
        for plan in ordered:
            if not plan.needs_preemption:
                result.append(1.0)
            elif not plan.feasible:
                result.append(0.0)
            elif max_cost > 0:
                result.append(0.1 + 0.4 * (1 - plan.total_cost / max_cost))
            else:
                result.append(0.5)
        return result
