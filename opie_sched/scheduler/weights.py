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
"""Scheduler weighers of opie_sched (ranking on the full state).

Enable in nova.conf::

    [filter_scheduler]
    weight_classes = nova.scheduler.weights.all_weighers,
        opie_sched.scheduler.weights.all_weighers

Both weighers read the instances of all candidate hosts in one bulk query
per cell (see :mod:`opie_sched.scheduler.cell_reads`), never one per
host.
"""

import abc
import threading

from oslo_log import log as logging
from oslo_utils import timeutils

import nova.conf
from nova.scheduler import utils as scheduler_utils
from nova.scheduler import weights

from opie_sched import conf as opie_conf
from opie_sched.preemption import costs
from opie_sched.preemption import planner
from opie_sched.scheduler import ownership
from opie_sched.scheduler import request_view
from opie_sched.scheduler import transparent

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF
opie_conf.register_opts(CONF)

_policy_lock = threading.Lock()
_policy_cache = {}


def cost_policy():
    """The :class:`~opie_sched.preemption.costs.CostPolicy` configured in
    ``[opie_preemption] cost_modules`` (cached per configuration value).

    :raises opie_sched.preemption.costs.CostModuleError: on a bad value.
    """
    key = (tuple(CONF.opie_preemption.cost_modules),
           CONF.opie_preemption.billing_period)
    with _policy_lock:
        policy = _policy_cache.get(key)
        if policy is None:
            policy = costs.load_policy(list(key[0]), conf=CONF)
            _policy_cache.clear()
            _policy_cache[key] = policy
    return policy


def plans_for(host_states, spec_obj):
    """``{(host, node): HostPlan}`` of a normal request on each host."""
    view = request_view.view_for(spec_obj)
    request = ownership.request_resources(spec_obj)
    policy = cost_policy()
    now = timeutils.utcnow(with_timezone=True)
    return {key: planner.plan_host(hv, request, policy, now)
            for key, hv in view.host_views(host_states,
                                           request=request).items()}


class _BulkWeigher(weights.BaseHostWeigher):
    """Computes every host's weight in one pass over the candidate list."""

    @abc.abstractmethod
    def _weigh_all(self, host_states, spec_obj):
        """``[weight]`` in host order."""

    def weigh_objects(self, weighed_obj_list, weight_properties):
        host_states = [w.obj for w in weighed_obj_list]
        try:
            result = self._weigh_all(host_states, weight_properties)
        except Exception:
            # Never break scheduling: every host gets the same weight, so
            # this weigher simply does not influence the order.
            LOG.exception('%s failed; ignoring it for this request',
                          type(self).__name__)
            result = [0.0] * len(host_states)
        return result

    def _weigh_object(self, host_state, weight_properties):
        return self._weigh_all([host_state], weight_properties)[0]


class PreemptionCostWeigher(_BulkWeigher):
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
        plans = plans_for(host_states, spec_obj)
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


class PreemptibleCountWeigher(_BulkWeigher):
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


def all_weighers():
    """The weigher classes of opie_sched (for ``weight_classes``)."""
    return [PreemptionCostWeigher, PreemptibleCountWeigher]
