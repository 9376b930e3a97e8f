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
"""``PreemptibleCountWeigher``: hosts that fit without preemption first,
then by the fewest preemptible servers (López García et al., Alg. 3).

In :func:`~opie_sched.scheduler.weights.all_weighers`, with
:class:`~opie_sched.scheduler.weights.preemption_cost.
PreemptionCostWeigher`.
"""

import nova.conf
from nova.scheduler import utils as scheduler_utils

from opie_sched import conf as opie_conf
from opie_sched.scheduler import ownership
from opie_sched.scheduler import request_view
from opie_sched.scheduler import transparent
from opie_sched.scheduler.weights import base

CONF = nova.conf.CONF
opie_conf.register_opts(CONF)


class PreemptibleCountWeigher(base.BulkWeigher):
    """Hosts that fit without preemption first, then by fewest preemptible
    instances.

    López García et al., Alg. 3 (the simplest rank): a host that does not
    fit the request in its full state gets a negative weight, minus the
    number of preemptible instances it runs; a host that fits gets 0.
    Preemptible requests, and normal requests placed on the normal state
    (``[opie_preemption] transparent_normal_placement``): every host gets
    0.
    """

    def weight_multiplier(self, host_state):
        return scheduler_utils.get_weight_multiplier(
            host_state, 'preemptible_count_weight_multiplier',
            CONF.opie_preemption.preemptible_count_weight_multiplier)

    def _weigh_all(self, host_states, spec_obj):
        if (ownership.request_is_preemptible(spec_obj)
                or transparent.is_normal_view(host_states)):
            return [0.0] * len(host_states)
        view = request_view.view_for(spec_obj)
        request = ownership.request_resources(spec_obj)
        views = view.host_views(host_states, request=request)
        result = []
        for hs in host_states:
            hv = views[(hs.host, hs.nodename)]
            if hv.fits(request):
                result.append(0.0)
            else:
                result.append(-1.0 - len(hv.preemptible_instances))
        return result
