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
"""Scheduling policies of the simulator, selectable like nova.conf.

``opie``
    The preemptible-aware scheduler of López García et al.
    ("An efficient cloud scheduler design supporting preemptible
    instances", 2019, §3, Alg. 2 and 6), as
    opie_sched runs it in Nova: a normal request is filtered on the normal
    state (Placement), ranked by
    :func:`~opie_sched.preemption.planner.rank_hosts` on the full state
    (``PreemptionCostWeigher``, Alg. 4) and, on the chosen host, the victims
    of :func:`~opie_sched.preemption.planner.plan_host` are terminated
    (Alg. 5). A preemptible request is filtered on the full state
    (``PreemptibleFullStateFilter``) and never preempts. One scheduling
    pass per request. Costs come from cost modules with multipliers
    (``[opie_preemption] cost_modules``, e.g. ``billing_period:1,count:60``).
``stock``
    Nova without opie_sched: preemptible instances are ordinary instances,
    every request is filtered on the full state, nothing is ever preempted,
    so a normal request fails when preemptible instances fill the hosts.
``first-fit``
    Preemption without the ranking: a normal request goes to the first host
    (by name) whose normal state fits, preempting there if needed (victims
    still chosen by :func:`~opie_sched.preemption.planner.plan_host`), even
    when another host has free room. Preemptible requests as ``opie``.
``retry``
    The paper's retry scheduler (§3 and §4.5, the baseline of Figure 2): a
    first pass on the full state as ``stock``; when a normal request gets
    NoValidHost, the preemptible instances are terminated as ``opie``
    chooses them and the request is scheduled again. Same placements as
    ``opie``, but two scheduling passes for every normal request that
    needs (or fails after trying) preemption.

In all policies hosts that tie are taken in name order (Nova would pick at
random among equal weights), and a request of ``count`` servers is placed
all or nothing, like a Nova multi-create: if one server finds no host,
nothing is started and no victim terminated.
"""

import dataclasses

from opie_sched.preemption import costs
from opie_sched.preemption import model
from opie_sched.preemption import planner

#: Policy names, in help order.
POLICIES = ('opie', 'stock', 'first-fit', 'retry')
DEFAULT_POLICY = 'opie'
DEFAULT_COST = 'billing_period'


@dataclasses.dataclass
class Outcome:
    """What scheduling one request did.

    :ivar ok: all its servers were placed.
    :ivar placements: ``[(uuid, host index, HostPlan)]``, one per server.
    :ivar victims: ``[(host index, InstanceInfo, cost, start seconds)]``
        terminated for it.
    :ivar passes: scheduling passes run (1, or 2 for ``retry``).
    :ivar blocked_by_preemptible: a failed normal request for which the
        normal state had room (so only preemptible instances were in the
        way); never True under ``opie``.
    """

    ok: bool
    placements: list = dataclasses.field(default_factory=list)
    victims: list = dataclasses.field(default_factory=list)
    passes: int = 1
    blocked_by_preemptible: bool = False


def request_resources(request):
    """:class:`~opie_sched.preemption.model.Resources` of one server of a
    :class:`~opie_sched.workload.mapping.ServerRequest`.
    """
    return model.Resources(request.vcpus, request.memory_mb,
                           request.disk_gb)


class Policy:
    """Base class: subclasses choose a host (and victims) per server.

    :param cost_policy: :class:`~opie_sched.preemption.costs.CostPolicy`
        for the preemption phase (unused by ``stock``).
    """

    name = ''
    #: whether the policy ever preempts.
    preempts = True

    def __init__(self, cost_policy):
        self.cost_policy = cost_policy

    def choose(self, cloud, res, preemptible, t):
        """``(host index, HostPlan)`` for one server, or None."""
        raise NotImplementedError

    def schedule(self, cloud, request, uuids, t):
        """Place the servers ``uuids`` of ``request`` at simulated ``t``.

        :returns: :class:`Outcome`; on success the servers run on
            ``cloud`` and the victims are gone, on failure ``cloud`` is
            unchanged.
        """
        return self._one_pass(cloud, request, uuids, t, self.choose)

    def _one_pass(self, cloud, request, uuids, t, choose):
        res = request_resources(request)
        undo = []
        outcome = Outcome(ok=True)
        for uuid in uuids:
            choice = choose(cloud, res, request.preemptible, t)
            if choice is None:
                blocked = (not request.preemptible
                           and cloud.first_normal_fit(res) is not None)
                for step in reversed(undo):
                    if step[0] == 'added':
                        cloud.remove(step[1])
                    else:
                        cloud.restore(*step[1:])
                return Outcome(ok=False, blocked_by_preemptible=blocked)
            host, plan = choice
            for inst, cost in plan.victims:
                where, info, start = cloud.remove(inst.uuid)
                undo.append(('removed', where, info, start))
                outcome.victims.append((where, info, cost, start))
            cloud.add(host, uuid, res, request.preemptible, t)
            undo.append(('added', uuid))
            outcome.placements.append((uuid, host, plan))
        return outcome


def _first_fit(cloud, res):
    """The first host (by name) whose full state fits ``res``."""
    host = cloud.first_full_fit(res)
    if host is None:
        return None
    return host, planner.HostPlan(cloud.names[host], needs_preemption=False,
                                  feasible=True)


class OpiePolicy(Policy):
    """Dual state, preemption-cost ranking and exact victims (see the
    module docstring).
    """

    name = 'opie'

    def choose(self, cloud, res, preemptible, t):
        return cloud.choose(res, preemptible, self.cost_policy, t)


class StockPolicy(Policy):
    """No preemptible class: full state for all, never preempts."""

    name = 'stock'
    preempts = False

    def choose(self, cloud, res, preemptible, t):
        return _first_fit(cloud, res)


class FirstFitPolicy(Policy):
    """Normal state, first host by name, preempting there if needed."""

    name = 'first-fit'

    def choose(self, cloud, res, preemptible, t):
        if preemptible:
            return _first_fit(cloud, res)
        host = cloud.first_normal_fit(res)
        if host is None:
            return None
        plan = cloud.plan_on(host, res, self.cost_policy, t)
        return (host, plan) if plan.feasible else None


class RetryPolicy(Policy):
    """``stock`` first; on NoValidHost for a normal request, ``opie``."""

    name = 'retry'

    def __init__(self, cost_policy):
        super().__init__(cost_policy)
        self._stock = StockPolicy(cost_policy)
        self._opie = OpiePolicy(cost_policy)

    def schedule(self, cloud, request, uuids, t):
        first = self._stock.schedule(cloud, request, uuids, t)
        if first.ok or request.preemptible:
            return first
        second = self._opie.schedule(cloud, request, uuids, t)
        second.passes = first.passes + second.passes
        return second


_CLASSES = {cls.name: cls for cls in (OpiePolicy, StockPolicy,
                                      FirstFitPolicy, RetryPolicy)}


def make_policy(name=DEFAULT_POLICY, cost=DEFAULT_COST,
                billing_period=3600):
    """Build a policy by name.

    :param name: one of :data:`POLICIES`.
    :param cost: cost modules with multipliers, ``name[:mult],...``
        (stevedore namespace ``opie_sched.preemption.costs``).
    :param billing_period: seconds, for the ``billing_period`` module.
    :raises ValueError: unknown policy name.
    :raises opie_sched.preemption.costs.CostModuleError: bad cost spec.
    """
    if name not in _CLASSES:
        raise ValueError('unknown policy %r: expected one of %s'
                         % (name, ', '.join(POLICIES)))
    return _CLASSES[name](costs.load_policy(cost, period=billing_period))
