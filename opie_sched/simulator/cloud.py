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
"""Simulated hosts with the dual state of the preemptible-aware scheduler.

López García et al., "An efficient cloud scheduler design supporting
preemptible instances" (Future Generation Computer Systems, 2019, §3):
every host has a **full state** (every instance counted) and a **normal
state** (preemptible instances not counted). :class:`Cloud` keeps both for
every host and answers the three questions of a scheduling pass with the
scheduler's own pure code:

* filtering — :meth:`Cloud.normal_state_fits` is what Placement checks for a
  normal request (the preemptible resource classes are separate inventory,
  see :mod:`opie_sched.common.provider_config`); :meth:`Cloud.full_state_fits`
  is
  ``PreemptibleFullStateFilter`` for a preemptible request;
* ranking — :meth:`Cloud.best_plan` returns the first plan of
  :func:`opie_sched.preemption.planner.rank_hosts` over the filtered hosts,
  as ``PreemptionCostWeigher`` orders them (López García et al., Alg. 4:
  hosts that need no preemption first, then least victim-set cost, then
  host name);
* victims — the chosen plan's victims are those of
  :func:`opie_sched.preemption.planner.plan_host` (Alg. 5, exact).

Hosts are kept in name order, so "first host" and "smallest name" agree.
The hosts, the instances on them and the per-host sums are the simulator's
shared host model (:class:`opie_sched.simcore.hosts.Hosts`, two
measures: ``used``, every instance's resources, and ``preemptible``, the
preemptible instances' only); per-host amounts live in numpy arrays of
shape ``(n_hosts, 3)`` (vCPU, MB, GB, the order of
:data:`opie_sched.preemption.model.DIMENSIONS`), so that the filters are
three vectorised comparisons per request, not a loop over hosts; a
:class:`~opie_sched.preemption.model.HostView` is built only for the hosts
the preemption phase has to plan. Amounts are meant to be
integers (flavor sizes), so the incremental sums are exact and equal to
those of the HostViews.

Simulated time is seconds (float) from :data:`EPOCH`; cost modules see
``launched_at = EPOCH + start`` and ``now = EPOCH + t``.
"""

import dataclasses
import datetime

import numpy as np

from opie_sched.preemption import costs
from opie_sched.preemption import model
from opie_sched.preemption import planner
from opie_sched.simcore import hosts as hosts_mod

#: Simulated time 0, as the datetime cost modules see.
EPOCH = datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc)

_NDIM = len(model.DIMENSIONS)
#: Hosts per block of the first-fit index (a power of two).
_BLOCK_SHIFT = 7
# Relative and absolute margins of the lower-bound pruning in best_plan:
# far larger than the float error of a bound, far smaller than a cost.
_LB_RTOL = 1e-9
_LB_ATOL = 1e-6


def to_datetime(t):
    """The datetime of simulated second ``t`` (UTC, microsecond steps)."""
    return EPOCH + datetime.timedelta(seconds=t)


def _micros(t):
    """Microseconds from :data:`EPOCH` to :func:`to_datetime` ``(t)``."""
    td = datetime.timedelta(seconds=t)
    return (td.days * 86400 + td.seconds) * 1000000 + td.microseconds


@dataclasses.dataclass(frozen=True)
class HostSpec:
    """A host's totals and allocation ratios (as a Nova compute node).

    :param vcpus: physical CPUs (vCPU before the ratio).
    :param memory_mb: RAM, MB.
    :param disk_gb: local disk, GB.
    :param cpu_allocation_ratio: ``[DEFAULT] cpu_allocation_ratio``.
    :param ram_allocation_ratio: ``[DEFAULT] ram_allocation_ratio``.
    :param disk_allocation_ratio: ``[DEFAULT] disk_allocation_ratio``.

    Default: the preemptible-instances paper's 8-CPU hosts, with the demo's
    16000 MB and 200 GB, no overcommit.
    """

    vcpus: float = 8
    memory_mb: float = 16000
    disk_gb: float = 200
    cpu_allocation_ratio: float = 1.0
    ram_allocation_ratio: float = 1.0
    disk_allocation_ratio: float = 1.0

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(
                    value, (int, float)) or not value > 0 or \
                    value == float('inf'):
                raise ValueError('host %s must be a finite number > 0, got '
                                 '%r' % (field.name, value))

    @property
    def capacity(self):
        """Schedulable capacity, ``total × ratio`` per dimension
        (:class:`~opie_sched.preemption.model.Resources`).
        """
        return model.Resources(self.vcpus * self.cpu_allocation_ratio,
                               self.memory_mb * self.ram_allocation_ratio,
                               self.disk_gb * self.disk_allocation_ratio)


def host_names(n):
    """``host00001`` ... : zero-padded, so name order is number order."""
    width = max(5, len(str(n)))
    return ['host%0*d' % (width, i + 1) for i in range(n)]


def vector_costs(policy):
    """A numpy form of ``policy.instance_cost`` for the built-in modules.

    :param policy: :class:`~opie_sched.preemption.costs.CostPolicy`.
    :returns: ``f(runtime, res, cap) -> costs`` where ``runtime`` is shape
        ``(m,)`` seconds, ``res`` and ``cap`` are ``(m, 3)`` (each
        instance's resources and its host's capacity) and the result is
        ``(m,)`` in policy units; or None when a module is not one of
        billing_period, runtime, count, waste (then no bound is used).
    """
    terms = []
    for module, multiplier in policy.modules:
        kind = type(module)
        if kind is costs.BillingPeriodCost:
            terms.append((multiplier, 'period', float(module.period)))
        elif kind is costs.RuntimeCost:
            terms.append((multiplier, 'runtime', None))
        elif kind is costs.CountCost:
            terms.append((multiplier, 'count', None))
        elif kind is costs.WasteCost:
            terms.append((multiplier, 'waste', None))
        else:
            return None

    def evaluate(runtime, res, cap):
        total = np.zeros(len(runtime))
        for multiplier, kind, period in terms:
            if kind == 'period':
                value = np.fmod(runtime, period)
            elif kind == 'runtime':
                value = runtime
            elif kind == 'count':
                value = np.ones(len(runtime))
            else:
                safe = np.where(cap > 0, cap, 1.0)
                value = np.where(cap > 0, res / safe, 0.0).sum(axis=1)
            total = total + multiplier * value
        return total

    return evaluate


class Cloud:
    """Hosts, the instances on them, and both states of every host.

    :param specs: one :class:`HostSpec` per host.
    :param names: host names (default :func:`host_names`); they must be
        unique and in increasing order.

    Attributes (numpy, shape ``(n_hosts, 3)``, vCPU / MB / GB):
    ``cap`` capacity; ``used`` full-state usage; ``pre`` held by preemptible
    instances; ``free_full = cap - used``; ``free_normal = free_full + pre``.
    ``hosts`` is the shared core's
    :class:`~opie_sched.simcore.hosts.Hosts` holding the instances
    (``used`` and ``pre`` are its sums); an instance's core id is its slot
    in the vectorised lower bounds of :meth:`best_plan`.
    """

    #: With at most this many candidate hosts needing preemption,
    #: :meth:`best_plan` plans them all; above it, it prunes by a lower
    #: bound (same answer, see :meth:`best_plan`).
    prune_above = 16

    def __init__(self, specs, names=None):
        specs = list(specs)
        n = len(specs)
        if n < 1:
            raise ValueError('a cloud needs at least one host')
        names = list(host_names(n) if names is None else names)
        if len(names) != n:
            raise ValueError('%d host names for %d hosts' % (len(names), n))
        if any(a >= b for a, b in zip(names, names[1:])):
            raise ValueError('host names must be unique and sorted')
        self.names = names
        self.index = {name: i for i, name in enumerate(names)}
        self.capacities = [spec.capacity for spec in specs]
        self.hosts = hosts_mod.Hosts(
            np.array(self.capacities, dtype=float).reshape(n, _NDIM),
            measures=('used', 'preemptible'))
        # Fortran order (the core's): each dimension's column is
        # contiguous, so the filters compare three contiguous vectors (a
        # row-wise .all(axis=1) over (n, 3) was the hot spot of the profile
        # at 5000 hosts).
        self.cap = self.hosts.cap
        self.used = self.hosts.sums['used']
        self.pre = self.hosts.sums['preemptible']
        self.free_full = self.cap.copy(order='F')
        self.free_normal = self.cap.copy(order='F')
        self.n_instances = self.hosts.count
        # First-fit index: per block of 2^_BLOCK_SHIFT hosts (in name
        # order), the largest free amount of each dimension in either
        # state, so a first-fit search tests only the blocks that may hold
        # a fitting host (the whole-cloud vector compare per request was
        # the hot spot at 65,536 hosts).
        n_blocks = (n + (1 << _BLOCK_SHIFT) - 1) >> _BLOCK_SHIFT
        self._bmax_full = np.zeros((n_blocks, _NDIM))
        self._bmax_normal = np.zeros((n_blocks, _NDIM))
        for b in range(n_blocks):
            self._reindex(b)
        self._where = {}            # uuid -> (core id, start seconds)
        self._info = {}             # core id -> InstanceInfo
        # Per core id, for the vectorised lower bounds of best_plan.
        self._s_pre = np.zeros(16, dtype=bool)
        self._s_start = np.zeros(16, dtype=np.int64)
        #: vCPU held by normal / preemptible instances, whole cloud.
        self.normal_vcpus = 0.0
        self.preemptible_vcpus = 0.0

    @classmethod
    def uniform(cls, n_hosts, spec=None):
        """``n_hosts`` identical hosts (default :class:`HostSpec`)."""
        return cls([spec or HostSpec()] * n_hosts)

    @property
    def n_hosts(self):
        return len(self.names)

    @property
    def active_hosts(self):
        """Hosts running at least one instance."""
        return self.hosts.active_hosts

    @property
    def capacity_vcpus(self):
        """vCPU capacity of the cloud (allocation ratios applied)."""
        return float(self.cap[:, 0].sum())

    # -- instances ---------------------------------------------------------

    def __contains__(self, uuid):
        return uuid in self._where

    def instances(self, host):
        """The :class:`~opie_sched.preemption.model.InstanceInfo` on a host
        (by index), in arrival order.
        """
        info = self._info
        return [info[vm] for vm in self.hosts.vms_on(host)]

    def _changed(self, host, res, preemptible, sign):
        """Both states of ``host`` after the core placed (``sign`` 1) or
        removed (-1) an instance of ``res``.
        """
        # Element by element (same float operations as the row form
        # cap - used, free + pre; a few times faster for three numbers
        # than numpy's row operations).
        used, pre, cap = self.used, self.pre, self.cap
        free_full, free_normal = self.free_full, self.free_normal
        for k in range(_NDIM):
            f = cap[host, k] - used[host, k]
            free_full[host, k] = f
            free_normal[host, k] = f + pre[host, k]
        if preemptible:
            self.preemptible_vcpus += sign * res[0]
        else:
            self.normal_vcpus += sign * res[0]
        block = host >> _BLOCK_SHIFT
        if sign > 0:
            self._reindex(block)
        else:
            # room only grew: the block maxima can only rise to this host
            np.maximum(self._bmax_full[block], free_full[host],
                       out=self._bmax_full[block])
            np.maximum(self._bmax_normal[block], free_normal[host],
                       out=self._bmax_normal[block])

    def add(self, host, uuid, resources, preemptible, t):
        """Start an instance on host ``host`` (index) at simulated ``t``.

        :param resources: :class:`~opie_sched.preemption.model.Resources`.
        :returns: its :class:`~opie_sched.preemption.model.InstanceInfo`.
        """
        info = model.InstanceInfo(uuid, model.Resources(*resources),
                                  bool(preemptible), to_datetime(t))
        self.restore(host, info, t)
        return info

    def restore(self, host, info, t):
        """Put back an instance :meth:`remove` returned (same start)."""
        if info.uuid in self._where:
            raise ValueError('instance %s is already running' % info.uuid)
        res = info.resources
        vm = self.hosts.register(
            used=res, preemptible=res if info.preemptible else 0.0)
        if vm >= len(self._s_pre):
            size = max(len(self.hosts.host), vm + 1)
            grow = size - len(self._s_pre)
            self._s_pre = np.concatenate([self._s_pre,
                                          np.zeros(grow, bool)])
            self._s_start = np.concatenate([self._s_start,
                                            np.zeros(grow, np.int64)])
        self._s_pre[vm] = info.preemptible
        self._s_start[vm] = _micros(t)
        self._where[info.uuid] = (vm, t)
        self._info[vm] = info
        self.hosts.place(vm, host)
        self._changed(host, res, info.preemptible, +1)

    def remove(self, uuid):
        """Stop an instance; ``(host index, InstanceInfo, start seconds)``.
        """
        vm, t = self._where.pop(uuid)
        info = self._info.pop(vm)
        host = self.hosts.remove(vm)
        self.hosts.release(vm)
        self._s_pre[vm] = False
        self._changed(host, info.resources, info.preemptible, -1)
        return host, info, t

    def start_time(self, uuid):
        """Simulated second at which ``uuid`` started."""
        return self._where[uuid][1]

    # -- the dual state ----------------------------------------------------

    def view(self, host):
        """The :class:`~opie_sched.preemption.model.HostView` of a host
        (by index), as the scheduler plugins build it.
        """
        return model.HostView(self.names[host], self.capacities[host],
                              model.Resources(*self.used[host].tolist()),
                              self.instances(host))

    def _reindex(self, block):
        lo = block << _BLOCK_SHIFT
        hi = lo + (1 << _BLOCK_SHIFT)
        self._bmax_full[block] = self.free_full[lo:hi].max(axis=0)
        self._bmax_normal[block] = self.free_normal[lo:hi].max(axis=0)

    def _first_fit(self, free, bmax, request):
        r0, r1, r2 = request
        ok = (bmax[:, 0] >= r0) & (bmax[:, 1] >= r1) & (bmax[:, 2] >= r2)
        size = 1 << _BLOCK_SHIFT
        b = int(ok.argmax())
        while ok[b]:
            lo = b << _BLOCK_SHIFT
            rows = free[lo:lo + size]
            hit = (rows[:, 0] >= r0) & (rows[:, 1] >= r1) & (rows[:, 2] >= r2)
            i = int(hit.argmax())
            if hit[i]:
                return lo + i
            # the block maxima came from different hosts: try the next
            b += 1
            if b == len(ok):
                break
            b += int(ok[b:].argmax())
        return None

    def first_full_fit(self, request):
        """Index of the first host (by name) whose full state fits
        ``request``, or None; same answer as
        ``first(full_state_fits(request))``, without comparing every
        host.
        """
        return self._first_fit(self.free_full, self._bmax_full, request)

    def first_normal_fit(self, request):
        """Index of the first host whose normal state fits ``request``,
        or None (``first(normal_state_fits(request))``).
        """
        return self._first_fit(self.free_normal, self._bmax_normal, request)

    def choose(self, request, preemptible, policy, t):
        """The scheduler's choice for one server: ``(host index,
        HostPlan)`` or None.

        A preemptible request takes the first host whose full state fits
        (``PreemptibleFullStateFilter``; ties in name order) and never
        preempts. A normal request is :meth:`best_plan` over the hosts
        whose normal state fits: the first host whose full state fits when
        there is one (then no vector over all hosts is built), else the
        least-cost preemption.
        """
        host = self.first_full_fit(request)
        if host is not None:
            return host, planner.HostPlan(self.names[host],
                                          needs_preemption=False,
                                          feasible=True)
        if preemptible:
            return None
        return self.best_plan(request, self.normal_state_fits(request),
                              policy, t)

    @staticmethod
    def _fits(free, request):
        mask = free[:, 0] >= request[0]
        for k in range(1, _NDIM):
            mask &= free[:, k] >= request[k]
        return mask

    def normal_state_fits(self, request):
        """Bool array ``(n_hosts,)``: ``request`` fits the normal state
        (what Placement admits for a normal request).
        """
        return self._fits(self.free_normal, request)

    def full_state_fits(self, request):
        """Bool array ``(n_hosts,)``: ``request`` fits the full state
        (``PreemptibleFullStateFilter``).
        """
        return self._fits(self.free_full, request)

    @staticmethod
    def first(mask):
        """Index of the first True host of ``mask``, or None."""
        i = int(np.argmax(mask))
        return i if mask[i] else None

    def plan_on(self, host, request, policy, t):
        """:func:`~opie_sched.preemption.planner.plan_host` on one host."""
        return planner.plan_host(self.view(host), request, policy,
                                 to_datetime(t))

    def best_plan(self, request, mask, policy, t):
        """The best host of ``mask`` for ``request``, as ranked by
        :func:`~opie_sched.preemption.planner.rank_hosts`.

        :param request: :class:`~opie_sched.preemption.model.Resources`.
        :param mask: bool array ``(n_hosts,)``, the hosts that passed the
            filters.
        :param policy: :class:`~opie_sched.preemption.costs.CostPolicy`.
        :param t: simulated seconds.
        :returns: ``(host index, HostPlan)``, or None when the mask is empty
            or its best plan is not feasible.

        The answer is ``rank_hosts([views of the mask's hosts])[0]``.
        Hosts whose full state fits need no preemption, and the first of
        them by name wins without planning. Otherwise every host needs
        preemption: with more than :attr:`prune_above` of them and cost
        modules :func:`vector_costs` knows, hosts are planned in order of a
        lower bound on their victims' cost — ``max(cheapest candidate,
        max_k deficit_k × least cost per unit of dimension k)``, which any
        victim set costs at least — and planning stops once the bound
        exceeds the best cost found by more than the tie margin of
        :meth:`~opie_sched.preemption.planner.HostPlan.sort_key`, so the
        hosts left out cannot rank first.
        """
        host = self.first(mask & self.full_state_fits(request))
        if host is not None:
            return host, planner.HostPlan(self.names[host],
                                          needs_preemption=False,
                                          feasible=True)
        idx = np.flatnonzero(mask)
        if not idx.size:
            return None
        now = to_datetime(t)
        bounds = None
        if idx.size > self.prune_above:
            bounds = self._lower_bounds(idx, np.asarray(request, float),
                                        policy, t)
        if bounds is None:
            plans = planner.rank_hosts([self.view(int(i)) for i in idx],
                                       request, policy, now)
            best = plans[0]
        else:
            best = None
            for pos in np.lexsort((idx, bounds)):
                if best is not None and best.feasible and (
                        bounds[pos] * (1 - _LB_RTOL) - best.total_cost
                        > _LB_ATOL * max(1.0, abs(best.total_cost))):
                    break
                plan = planner.plan_host(self.view(int(idx[pos])), request,
                                         policy, now)
                if best is None or plan.sort_key() < best.sort_key():
                    best = plan
        if not best.feasible:
            return None
        return self.index[best.host], best

    def _lower_bounds(self, idx, req, policy, t):
        """Lower bounds ``(len(idx),)`` on each host's victim-set cost, or
        None when the policy has modules :func:`vector_costs` lacks.
        """
        evaluate = vector_costs(policy)
        if evaluate is None:
            return None
        pos_of = np.full(self.n_hosts, -1, dtype=np.int64)
        pos_of[idx] = np.arange(idx.size)
        n_ids = len(self.hosts.host)
        s_host = np.maximum(self.hosts.host, 0)     # unplaced: not _s_pre
        s_pre = self._s_pre[:n_ids]
        slots = np.flatnonzero(s_pre & (pos_of[s_host] >= 0))
        pos = pos_of[s_host[slots]]
        res = self.hosts.values['used'][slots]
        runtime = np.maximum((_micros(t) - self._s_start[slots]) / 1e6, 0.0)
        cost = evaluate(runtime, res, self.cap[s_host[slots]])
        deficit = np.clip(req - self.free_full[idx], 0.0, None)
        bound = np.full(idx.size, np.inf)
        np.minimum.at(bound, pos, cost)
        for k in range(_NDIM):
            has = res[:, k] > 0
            per_unit = np.full(idx.size, np.inf)
            np.minimum.at(per_unit, pos[has], cost[has] / res[has, k])
            need = deficit[:, k]
            with np.errstate(invalid='ignore'):
                term = np.where(need > 0, need * per_unit, 0.0)
            bound = np.maximum(bound, term)
        return bound
