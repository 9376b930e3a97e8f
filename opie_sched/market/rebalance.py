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
"""Tabu-search rebalancing: migrations that reduce the allocation error.

Sources:

* Themis -- S. Costache, N. Parlavantzas, C. Morin, S. Kortas, *Themis:
  Economy-based automatic resource scaling for cloud systems*, HPCC'12,
  §III.B "Load Balancing" and Fig. 2 (the VM placement algorithm: pick a
  VM, move it, record ``(vm, host)`` in a tabu list of size 20, keep the
  best solution whose migration cost stays below ``CostMax``).
* Themis SLO policies -- S. Costache et al., *Themis: a spot-market based
  platform for SLO-driven resource management* (the proportional-share
  SLO-policies paper), §2: the heuristic "stops if it cannot improve the
  VM allocation error for the last iterations (i.e. 100 iterations) or if
  reaching a better solution involves a number of migrations higher than
  a threshold".
* Merkat -- S. Costache, N. Parlavantzas, C. Morin, S. Kortas, *Merkat:
  Market-based Autonomous Application and Resource Management in the
  Cloud*, INRIA RR-8343, 2013, §3.1 "Load balancing": at each iteration
  move "the VM with the maximum allocation error among its resources that
  is not in the tabu list to the physical node that minimizes it".

The allocation error of a VM is Merkat §3.1's (:func:`.pricing.
allocation_error`, :func:`.pricing.vm_allocation_error`): its share on its
host against its share of the pool seen as one host. Cluster shares do
not depend on the placement; host shares do (:func:`.pricing.
clear_market` per host, capped by the VMs' requests).

The search, per pool:

1. among the VMs with a negative error (under-served; Themis: "the
   virtual machines that have a negative allocation error") that have a
   destination, take the one with the largest error magnitude (Merkat),
   ties broken by the lower bid first (Themis: "the less valuable virtual
   machines are the first ones selected"), then by a seeded random order;
2. move it to the host, other than its own, that fits its request (every
   resource: the requests on the destination plus this one stay within
   the destination's limit, so a plan never overcommits) and gives the
   smallest placement error; a move back to a host in the tabu list
   (size 20, Themis) is not allowed (when every move is tabu, the oldest
   entry is forgotten); the move is made even when it does not improve
   (that is what lets a tabu search leave a local minimum);
3. the best placement so far is kept when it improves the error and needs
   at most ``max_migrations`` migrations (VMs whose host differs from the
   start: Themis's ``CostMax``);
4. stop after ``non_improving`` iterations without a new best (100, the
   Themis SLO-policies paper; Themis HPCC'12 used 10), when the error is
   at most ``threshold``, when no VM can move, or after ``max_iterations``.

The placement error is the root mean square of the VMs' errors. Themis
HPCC'12 takes their standard deviation; the RMS equals it when the errors
average 0 and, unlike it, does not call a placement where every VM is
under-served by the same amount perfect.

Everything here is pure and deterministic for a given ``seed``; the
repacker runs it as a strategy (:mod:`opie_sched.services.repacker.tabu`).
"""

import collections
import dataclasses
import decimal
from decimal import Decimal
import math
import random

from opie_sched.market import pricing

#: Themis SLO-policies paper: stop after this many non-improving iterations.
NON_IMPROVING_LIMIT = 100
#: Themis HPCC'12 Fig. 2: tabu list size.
TABU_SIZE = 20
#: Safety bound on the iterations of one search.
MAX_ITERATIONS = 10000

ZERO = Decimal(0)


class RebalanceError(ValueError):
    """Bad input to :func:`rebalance` (the message says which)."""


@dataclasses.dataclass(frozen=True)
class Migration:
    """One VM to migrate: ``vm`` (uuid) from ``source`` to
    ``destination`` (host names).
    """
    vm: str
    source: str
    destination: str


@dataclasses.dataclass(frozen=True)
class Result:
    """What :func:`rebalance` found.

    :ivar migrations: list of :class:`Migration` (VMs whose host changes
        between the start and the best placement), by VM order of input.
    :ivar error_before: placement error at the start (RMS of the VMs'
        allocation errors, dimensionless).
    :ivar error_after: placement error of the best placement (never above
        ``error_before``).
    :ivar worst_before: most negative VM error at the start (0 if none).
    :ivar worst_after: the same for the best placement.
    :ivar iterations: iterations run.
    :ivar stopped: why the search stopped: ``non_improving``,
        ``threshold``, ``stuck`` (no VM can move), ``max_iterations``.
    :ivar placement: ``uuid -> host`` of the best placement.
    :ivar errors: ``uuid -> error`` of the best placement.
    """
    migrations: list
    error_before: float
    error_after: float
    worst_before: float
    worst_after: float
    iterations: int
    stopped: str
    placement: dict
    errors: dict


_safe_error = pricing.bounded_allocation_error


class _Pool:
    """Incremental evaluation of one pool's placements."""

    def __init__(self, hosts, vms, reserve, resources):
        self.hosts = {h.name: h for h in hosts}
        self.vms = {vm.uuid: vm for vm in vms}
        self.reserve = reserve
        self.resources = resources
        allocation = pricing.allocate(hosts, vms, reserve)
        self.cluster = {u: allocation.vms[u].cluster for u in self.vms}
        self.request = {
            u: {r: pricing.as_decimal(vm.request.get(r, 0))
                for r in resources} for u, vm in self.vms.items()}

    def host_errors(self, host, members):
        """``uuid -> error`` of the VMs in ``members`` on ``host``."""
        cap = {r: pricing.as_decimal(self.hosts[host].capacity[r])
               for r in self.resources}
        shares = {}
        for r in self.resources:
            bids = {u: pricing.as_decimal(self.vms[u].bids.get(r, 0))
                    for u in members}
            demands = {}
            for u in members:
                asked = self.vms[u].request.get(r)
                demands[u] = (cap[r] if asked is None
                              else min(cap[r], pricing.as_decimal(asked)))
            shares[r] = pricing.clear_market(bids, cap[r], demands,
                                             self.reserve[r]).shares
        return {u: pricing.vm_allocation_error(
            {r: _safe_error(shares[r][u], self.cluster[u][r])
             for r in self.resources}) for u in members}

    def fits(self, host, members, uuid, limits):
        limit = limits.get(host) or self.hosts[host].capacity
        for r in self.resources:
            used = sum((self.request[u][r] for u in members), ZERO)
            if used + self.request[uuid][r] > pricing.as_decimal(
                    limit.get(r, self.hosts[host].capacity[r])):
                return False
        return True


def _objective(errors):
    if not errors:
        return 0.0
    return math.sqrt(sum(float(e) ** 2 for e in errors.values())
                     / len(errors))


def _worst(errors):
    return float(min(list(errors.values()) + [ZERO]))


def _best_move(candidates, current, errors, pools, host_pool, on_host, tabu,
               limits, rng):
    """``(uuid, source, destination, errors after)`` of the iteration's
    move, or None: the first candidate with a feasible, non-tabu
    destination, to the destination of least placement error.
    """
    for uuid in candidates:
        source = current[uuid]
        pool = pools[host_pool[source]]
        options = []
        for host in pool.hosts:
            if host == source or (tabu is not None and (uuid, host) in tabu):
                continue
            if not pool.fits(host, on_host[host], uuid, limits):
                continue
            trial = dict(errors)
            left = [u for u in on_host[source] if u != uuid]
            trial.update(pool.host_errors(source, left))
            trial.update(pool.host_errors(host, on_host[host] + [uuid]))
            options.append((_objective(trial), rng.random(), host, trial))
        if options:
            return (uuid, source) + min(options)[2:]
    return None


def rebalance(hosts, vms, reserve=None, max_migrations=None,
              non_improving=NON_IMPROVING_LIMIT, tabu_size=TABU_SIZE,
              threshold=0.0, seed=0, limits=None,
              max_iterations=MAX_ITERATIONS):
    """Migrations that reduce the allocation error (see the module doc).

    :param hosts: sequence of :class:`.pricing.Host` (capacity in units,
        same resources each); VMs move only within their host's pool.
    :param vms: sequence of :class:`.pricing.VM`, each with its current
        ``host``; ``bids`` per resource (currency per hour, e.g. from
        :func:`.pricing.split_bid`), ``request`` its flavor (units).
    :param reserve: optional ``resource -> reserve price`` (currency per
        unit-hour).
    :param max_migrations: most migrations of the returned plan (int >=
        0), None: no bound.
    :param non_improving: stop after this many iterations without a new
        best placement (int >= 1).
    :param tabu_size: length of the tabu list (int >= 0).
    :param threshold: stop once the placement error is at most this.
    :param seed: seed of the tie-breaking order (int or str): the same
        input and seed give the same result.
    :param limits: optional ``host -> {resource: units}`` that the
        requests on a host may not exceed (default: its capacity).
    :param max_iterations: safety bound (int >= 1).
    :returns: :class:`Result`.
    :raises RebalanceError: a VM without a host, bad numbers, or what
        :func:`.pricing.allocate` rejects.
    """
    hosts = list(hosts)
    vms = list(vms)
    for name, value, least in (('non_improving', non_improving, 1),
                               ('tabu_size', tabu_size, 0),
                               ('max_iterations', max_iterations, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or (
                value < least):
            raise RebalanceError('%s must be an integer >= %d, got %r'
                                 % (name, least, value))
    if max_migrations is not None and (
            isinstance(max_migrations, bool)
            or not isinstance(max_migrations, int) or max_migrations < 0):
        raise RebalanceError('max_migrations must be an integer >= 0 or '
                             'None, got %r' % (max_migrations,))
    for vm in vms:
        if vm.host is None:
            raise RebalanceError('VM %r has no host: rebalancing moves '
                                 'placed VMs only' % vm.uuid)
    try:
        resources = pricing._check_hosts(hosts)
    except ValueError as exc:
        raise RebalanceError(str(exc))
    reserve = {r: pricing.as_decimal((reserve or {}).get(r, 0))
               for r in resources}
    limits = limits or {}
    rng = random.Random(seed)
    by_pool = collections.defaultdict(list)
    for h in hosts:
        by_pool[h.pool].append(h)
    host_pool = {h.name: h.pool for h in hosts}
    pools = {}
    try:
        for pool, members in by_pool.items():
            names = {h.name for h in members}
            pool_vms = [vm for vm in vms if vm.host in names]
            pools[pool] = _Pool(members, pool_vms, reserve, resources)
        unknown = [vm.uuid for vm in vms if vm.host not in host_pool]
        if unknown:
            raise ValueError('VMs on unknown hosts: %s'
                             % ', '.join(sorted(map(str, unknown))))
    except (ValueError, decimal.InvalidOperation) as exc:
        raise RebalanceError(str(exc))

    start = {vm.uuid: vm.host for vm in vms}
    current = dict(start)
    on_host = collections.defaultdict(list)
    for vm in vms:
        on_host[vm.host].append(vm.uuid)
    errors = {}
    for host, members in on_host.items():
        errors.update(pools[host_pool[host]].host_errors(host, members))
    order = list(start)
    rng.shuffle(order)
    rank = {u: i for i, u in enumerate(order)}
    bid_of = {vm.uuid: vm.total_bid() for vm in vms}

    before = _objective(errors)
    first_errors = dict(errors)
    best = (before, dict(current), dict(errors))
    tabu = collections.deque(maxlen=tabu_size) if tabu_size else None
    idle = iterations = 0
    stopped = 'threshold' if before <= threshold else None
    while stopped is None:
        if iterations >= max_iterations:
            stopped = 'max_iterations'
            break
        if idle >= non_improving:
            stopped = 'non_improving'
            break
        iterations += 1
        candidates = sorted(
            (u for u, e in errors.items() if e < 0),
            key=lambda u: (errors[u], bid_of[u], rank[u]))
        move = None
        while True:
            move = _best_move(candidates, current, errors, pools, host_pool,
                              on_host, tabu, limits, rng)
            if move is not None or not tabu:
                break
            tabu.popleft()  # every move is tabu: forget the oldest entry
        if move is None:
            stopped = 'stuck'
            break
        uuid, source, host, trial = move
        on_host[source].remove(uuid)
        on_host[host].append(uuid)
        current[uuid] = host
        errors = trial
        if tabu is not None:
            tabu.append((uuid, source))
        score = _objective(errors)
        cost = sum(1 for u in current if current[u] != start[u])
        if score < best[0] - 1e-12 and (max_migrations is None
                                        or cost <= max_migrations):
            best = (score, dict(current), dict(errors))
            idle = 0
            if score <= threshold:
                stopped = 'threshold'
        else:
            idle += 1

    after, placement, best_errors = best
    migrations = [Migration(vm.uuid, start[vm.uuid], placement[vm.uuid])
                  for vm in vms if placement[vm.uuid] != start[vm.uuid]]
    return Result(migrations, before, after, _worst(first_errors),
                  _worst(best_errors), iterations, stopped, placement,
                  best_errors)
