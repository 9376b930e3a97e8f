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
"""The preemption phase: rank hosts by preemption cost and choose victims.

López García et al., "An efficient cloud scheduler design supporting
preemptible instances" (Future Generation Computer Systems, 2019): hosts
are ranked on their full state, hosts that need no preemption first, then by
the cost of the victims they would need (Alg. 4); on the chosen host the
victims are the minimal-cost set of preemptible instances freeing enough vCPU,
RAM and disk (Alg. 5, solved exactly by :mod:`.victims`).

The same functions serve the scheduler weighers and manager, the reconciler,
the what-if CLI and the simulator.
"""

import dataclasses


from opie_sched.preemption import model
from opie_sched.preemption import victims as victims_mod


@dataclasses.dataclass(frozen=True)
class HostPlan:
    """What placing a request on one host would take.

    :param host: host name.
    :param needs_preemption: False when the request fits the full state.
    :param feasible: False when even terminating every preemptible instance
        would not free enough (``victims`` is then empty).
    :param victims: tuple of ``(InstanceInfo, cost)``, sorted by uuid.
    :param total_cost: sum of the victims' costs (policy units).
    :param deficit: :class:`~.model.Resources` preemption must free.
    :param reason: human-readable explanation when not feasible.
    """

    host: str
    needs_preemption: bool
    feasible: bool
    victims: tuple = ()
    total_cost: float = 0.0
    deficit: model.Resources = model.ZERO
    reason: str = ''

    def sort_key(self):
        """No preemption first, then least total cost, then host name."""
        return (not self.feasible, self.needs_preemption,
                round(self.total_cost, 9), self.host)


def instance_costs(host, policy, now, instances=None):
    """``[(InstanceInfo, cost)]`` for the host's candidate victims.

    :param host: :class:`~.model.HostView`.
    :param policy: :class:`~.costs.CostPolicy`.
    :param now: timezone-aware UTC datetime.
    :param instances: restrict to these (default: every preemptible
        instance of the host that is not already leaving).
    :raises opie_sched.preemption.costs.CostModuleError: on a bad cost.
    """
    if instances is None:
        instances = host.preemptible_instances
    return [(inst, policy.instance_cost(inst, host, now))
            for inst in instances]


def plan_host(host, request, policy, now):
    """Plan the placement of ``request`` on ``host``.

    :param host: :class:`~.model.HostView` (its ``used`` already includes
        the request when ``request`` is ``model.ZERO``).
    :param request: :class:`~.model.Resources` still to be placed.
    :param policy: :class:`~.costs.CostPolicy`.
    :param now: timezone-aware UTC datetime.
    :returns: :class:`HostPlan`.
    """
    deficit = host.deficit(request)
    if deficit.is_zero():
        return HostPlan(host.name, needs_preemption=False, feasible=True)
    candidates = instance_costs(host, policy, now)
    selection = victims_mod.select_victims(candidates, deficit)
    if selection is None:
        held = model.Resources.total(i.resources for i, _ in candidates)
        return HostPlan(
            host.name, needs_preemption=True, feasible=False,
            deficit=deficit,
            reason=('needs %s but its %d preemptible instances hold only %s'
                    % (_fmt(deficit), len(candidates), _fmt(held))))
    return HostPlan(host.name, needs_preemption=True, feasible=True,
                    victims=selection.victims,
                    total_cost=selection.total_cost, deficit=deficit)


def rank_hosts(hosts, request, policy, now):
    """Plans for every host, best first (see :meth:`HostPlan.sort_key`).

    :param hosts: iterable of :class:`~.model.HostView`.
    :returns: list of :class:`HostPlan`.
    """
    return sorted((plan_host(h, request, policy, now) for h in hosts),
                  key=HostPlan.sort_key)


def overcommit_plans(hosts, policy, now):
    """Victims that bring each overcommitted host back within capacity.

    Used by the reconciler: a host whose projected full state (leaving
    instances excluded) exceeds its capacity gets a plan; the others none.

    :returns: list of :class:`HostPlan`, one per overcommitted host, in host
        name order.
    """
    plans = []
    for host in sorted(hosts, key=lambda h: h.name):
        plan = plan_host(host, model.ZERO, policy, now)
        if plan.needs_preemption:
            plans.append(plan)
    return plans


def _fmt(res):
    return ', '.join('%g %s' % (v, model.UNITS[d])
                     for d, v in zip(model.DIMENSIONS, res))


def describe_plan(plan):
    """One log line for a decision: host, victims with costs, total."""
    if not plan.needs_preemption:
        return 'host %s fits without preemption' % plan.host
    if not plan.feasible:
        return 'host %s cannot be freed: %s' % (plan.host, plan.reason)
    victims = ', '.join('%s (cost %g)' % (inst.uuid, cost)
                        for inst, cost in plan.victims)
    return ('host %s: preempting %d instance(s) to free %s: %s; total cost '
            '%g' % (plan.host, len(plan.victims), _fmt(plan.deficit),
                    victims, plan.total_cost))
