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
"""The preemption plans of a normal request, shared by the scheduler's
weighers, the preemption phase and the reconciler.

:func:`cost_policy` is the configured victim-cost policy
(``[opie_preemption] cost_modules``); :func:`plans_for` plans, per
candidate host, which preemptible servers a normal request would
terminate there (López García et al., Alg. 5, in
:func:`opie_sched.preemption.planner.plan_host`).
"""

import threading

from oslo_utils import timeutils

import nova.conf

from opie_sched import conf as opie_conf
from opie_sched.preemption import costs
from opie_sched.preemption import planner
from opie_sched.scheduler import ownership
from opie_sched.scheduler import request_view

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
