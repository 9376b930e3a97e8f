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
"""Prices, proportional shares and placement of the spot market.

Sources:

* Merkat -- S. Costache, N. Parlavantzas, C. Morin, S. Kortas, *Merkat:
  Market-based Autonomous Application and Resource Management in the
  Cloud*, INRIA RR-8343, 2013: eq. 1 (§2.3, proportional share and price)
  and §3.1 (allocations computed per node after placement; allocation
  error).
* Themis -- S. Costache et al., *Themis: Economy-based automatic resource
  scaling for cloud systems*, HPCC'12, §III.B (worst-fit decreasing
  placement, work conservation) and the companion Themis SLO-policies paper
  (§3, allocation error = maximum over resources).

Units used throughout:

* a resource amount (capacity, request, share) is in the resource's unit:
  ``vcpus`` in vCPU, ``memory_mb`` in MB (see :data:`UNITS`);
* a bid is currency per hour (for one resource, or for a whole server);
* a price is currency per unit-hour (e.g. per vCPU-hour, per MB-hour);
* every number is a :class:`decimal.Decimal` (ints, strings and floats are
  accepted as input; a float is taken at its shortest repr).

Eq. 1 gives ``p = sum(bids) / capacity`` and ``a_i = b_i / p``
(:func:`spot_price`). Merkat §3.1 lets a VM ask for a *maximum
allocation* (its demand ``d_i``; for a nova server, its flavor) and
Themis §III.B keeps the allocation *work-conserving*: capacity a capped
holder cannot use goes to the others in proportion to their bids. The
published price is the price that clears such a market
(:func:`clear_market`), the work-conserving form of eq. 1::

    p* = max(reserve, inf {p > 0 : sum_i min(d_i, b_i / p) <= C})
    a_i = min(d_i, b_i / p*)

When no cap binds it is the eq. 1 price; when the total demand fits in
the capacity it falls to the reserve (Themis HPCC'12, Table I: ``bid_min``
is the provider's reserve price, "the minimum price the users are
charged"). Nobody is squeezed while capacity is idle: Themis §II, "our
resource manager does not forcibly kill virtual machine instances but
instead it diminishes the virtual machine's resource share".

What a share means on a real hypervisor: opie places servers by share
(the market's prices, notices and the scheduler's
:class:`~opie_sched.scheduler.weights.proportional_share.ProportionalShareWeigher`),
but Nova gives every server its whole flavor and enforces no CPU share by
itself. An operator who wants the libvirt/KVM host to enforce
proportional CPU time under contention sets the flavor extra spec
``quota:cpu_shares`` (libvirt ``<cputune><shares>``, the cgroup CPU
weight) on the preemptible flavors, e.g. in proportion to their default
bid per vCPU (``openstack flavor set --property quota:cpu_shares=2048
m1.small.preemptible``); a CPU-bound server then gets CPU time in
proportion to its weight when the host's CPUs are contended, and its
whole flavor when they are not -- the same work-conserving rule. Nova
applies the weight at boot and resize, not when a bid changes: a
per-server bid changes the market position (price, notices, preemption
order), not the cgroup weight of a running server. Memory cannot be
shared this way: a server holds its flavor's RAM, which is why the
minimum a server needs (the out-of-bid rule, :mod:`.outbid`) is its
whole flavor.
"""

import dataclasses
import decimal
from decimal import Decimal
import types

#: Resource names and their units.
VCPUS = 'vcpus'
MEMORY_MB = 'memory_mb'
RESOURCES = (VCPUS, MEMORY_MB)
UNITS = types.MappingProxyType({VCPUS: 'vCPU', MEMORY_MB: 'MB'})

#: Pool of hosts that name none (a pool is e.g. a host aggregate).
DEFAULT_POOL = 'default'

ZERO = Decimal(0)
_EMPTY = types.MappingProxyType({})


def as_decimal(value):
    """A number as :class:`~decimal.Decimal` (float by its shortest repr).

    :raises TypeError: for a bool or a non-number.
    """
    if isinstance(value, Decimal):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TypeError('not a number: %r' % (value,))
    if isinstance(value, float):
        return Decimal(repr(value))
    return Decimal(value)


def pretty(value):
    """A number for people: an integer as is, else 6 significant digits.
    """
    value = as_decimal(value)
    if value == value.to_integral_value():
        return format(value.to_integral_value(), 'f')
    text = format(value, '.6g')
    if '.' in text and 'e' not in text:
        text = text.rstrip('0')
    return text


def order_resources(names):
    """Resource names in report order: :data:`RESOURCES` first, then sorted.
    """
    names = set(names)
    return (tuple(r for r in RESOURCES if r in names)
            + tuple(sorted(names.difference(RESOURCES))))


# -- Merkat eq. 1 -------------------------------------------------------------

def spot_price(bids, capacity, reserve=0):
    """Price of one unit of a resource for one hour (Merkat eq. 1).

    ``p = max(reserve, sum(bids) / capacity)``.

    :param bids: iterable of bids for this resource, currency per hour.
    :param capacity: units of the resource in the market (> 0).
    :param reserve: reserve price, currency per unit-hour (>= 0).
    :returns: Decimal, currency per unit-hour.
    :raises ValueError: capacity <= 0.
    """
    capacity = as_decimal(capacity)
    if capacity <= 0:
        raise ValueError('capacity must be > 0, got %s' % capacity)
    total = sum((as_decimal(b) for b in bids), ZERO)
    return max(as_decimal(reserve), total / capacity)


def _fill_price(bids, remaining, reserve):
    """The eq. 1 price of ``remaining`` units as a fraction ``(num, den)``
    (never below ``reserve``), or None when there is nothing to share.

    Kept as a fraction so that ``b * den / num`` rounds once.
    """
    if remaining <= 0:
        return None
    total = sum(bids, ZERO)
    if reserve * remaining > total:
        total, remaining = reserve, Decimal(1)
    return (total, remaining) if total > 0 else None


def proportional_shares(bids, capacity, caps=None, reserve=0):
    """Work-conserving proportional shares of one resource.

    Merkat eq. 1, ``a_i = b_i / p``, with per-holder caps (Merkat §3.1: a
    VM asks for a maximum allocation; Themis §III.B: allocations are
    work-conserving). Progressive filling: holders whose share would reach
    their cap get the cap; the rest of the capacity is shared again among
    the others at the eq. 1 price of what remains (never below
    ``reserve``), until no cap binds. When every holder is capped, the
    leftover capacity stays idle.

    :param bids: mapping ``key -> bid`` (currency per hour, >= 0).
    :param capacity: units to share (>= 0).
    :param caps: optional mapping ``key -> most units the holder can use``
        (>= 0); a missing key or None means no cap.
    :param reserve: reserve price, currency per unit-hour (>= 0); a holder
        never gets more than ``b_i / reserve``.
    :returns: dict ``key -> units`` (Decimal), same keys and order as
        ``bids``. A zero bid gets 0 units.
    """
    caps = caps or _EMPTY
    reserve = as_decimal(reserve)
    remaining = as_decimal(capacity)
    active = {k: as_decimal(b) for k, b in bids.items()}
    shares = {}
    while active:
        price = _fill_price(active.values(), remaining, reserve)
        if price is None:
            shares.update(dict.fromkeys(active, ZERO))
            break
        num, den = price
        capped = {}
        for key, bid in active.items():
            cap = caps.get(key)
            if cap is not None and bid * den >= as_decimal(cap) * num:
                capped[key] = as_decimal(cap)
        if not capped:
            shares.update((k, b * den / num) for k, b in active.items())
            break
        for key, cap in capped.items():
            shares[key] = cap
            remaining -= cap
            del active[key]
    return {k: shares[k] for k in bids}


# -- the work-conserving market ----------------------------------------------

@dataclasses.dataclass(frozen=True)
class Clearing:
    """One resource's market, cleared (:func:`clear_market`).

    :ivar price: ``p*``, currency per unit-hour (>= the reserve).
    :ivar shares: ``key -> units`` (Decimal), same keys and order as the
        bids; ``shares[k] <= demands[k]`` and ``sum(shares) <= capacity``.
    :ivar demand: total demand in units, or None when a holder has no cap
        (it would use anything).
    :ivar contended: True when the demand exceeds the capacity (or is
        unbounded): only then can a share fall below a demand for any
        reason but a bid below the reserve.
    """
    price: Decimal
    shares: dict
    demand: Decimal
    contended: bool


def _floor_div(num, den):
    with decimal.localcontext() as ctx:
        ctx.rounding = decimal.ROUND_FLOOR
        return num / den


def _clearing_fraction(bids, capacity, demands, reserve):
    """Progressive filling of the positive bids.

    :returns: ``(num, den, starved)``: ``p* = num / den`` (None, None when
        no positive bid is left unserved at a positive price) and the keys
        left with nothing because the capacity ran out (only through
        rounding).
    """
    active = {k: b for k, b in bids.items() if b > 0}
    remaining = capacity
    num = den = None
    while active:
        if remaining <= 0:
            return num, den, set(active)
        total = sum(active.values(), ZERO)
        if reserve * remaining > total:
            num, den = reserve, Decimal(1)
        else:
            num, den = total, remaining
        capped = [k for k, b in active.items()
                  if demands.get(k) is not None
                  and b * den >= demands[k] * num]
        if not capped:
            return num, den, set()
        for key in capped:
            remaining -= demands[key]
            del active[key]
    return None, None, set()


def clear_market(bids, capacity, demands=None, reserve=0, price=None):
    """Price and work-conserving proportional shares of one resource.

    Merkat eq. 1 (§2.3) with maximum allocations (§3.1) and work
    conservation (Themis HPCC'12 §III.B), floored at the reserve price
    (Themis Table I, ``bid_min``)::

        p* = max(reserve, inf {p > 0 : sum_i min(d_i, b_i / p) <= C})
        a_i = min(d_i, b_i / p*)

    found by progressive filling (holders whose ``b_i / p`` reaches their
    demand get it; the rest share what is left at the eq. 1 price of the
    remainder). Properties (tested with hypothesis): ``a_i <= d_i``;
    ``sum(a) <= C``; with ``sum(d) <= C`` the price is the reserve and
    every holder whose bid covers ``reserve * d_i`` gets its demand; with
    no binding cap ``p*`` is the eq. 1 price ``sum(b) / C``.

    Zero bids never change the price. At a price of 0 (reserve 0 and every
    positive bidder served) the capacity left over is shared by the zero
    bidders as if they all bid the same (the limit of eq. 1 for equal
    bids; each up to its demand); at a positive price they get 0.

    Shares are rounded toward zero so that the sums above hold exactly.

    :param bids: mapping ``key -> bid`` (currency per hour, >= 0).
    :param capacity: units to share (>= 0).
    :param demands: optional mapping ``key -> most units the holder can
        use`` (>= 0); a missing key or None means no cap.
    :param reserve: reserve price, currency per unit-hour (>= 0).
    :param price: optional ``p*`` published before for this very market
        (e.g. replaying a recorded period): the shares are computed at it
        instead of searching for it.
    :returns: :class:`Clearing`.
    :raises ValueError: a negative bid, demand, capacity, reserve or
        price.
    """
    demands = {k: None if d is None else as_decimal(d)
               for k, d in (demands or _EMPTY).items()}
    bids = {k: as_decimal(b) for k, b in bids.items()}
    capacity = as_decimal(capacity)
    reserve = as_decimal(reserve)
    for what, value in ([('capacity', capacity), ('reserve', reserve)]
                        + [('bid of %r' % (k,), b) for k, b in bids.items()]
                        + [('demand of %r' % (k,), d)
                           for k, d in demands.items() if d is not None]):
        if not value.is_finite() or value < 0:
            raise ValueError('%s must be a finite number >= 0, got %s'
                             % (what, value))
    bounded = all(demands.get(k) is not None for k in bids)
    demand = (sum((demands[k] for k in bids), ZERO) if bounded else None)
    contended = demand is None or demand > capacity
    if price is not None:
        price = as_decimal(price)
        if not price.is_finite() or price < 0:
            raise ValueError('price must be a finite number >= 0, got %s'
                             % price)
        num, den, starved = (price, Decimal(1), set()) if price > 0 else (
            None, None, set())
        reserve = price
    else:
        num, den, starved = _clearing_fraction(bids, capacity, demands,
                                               reserve)
    shares = {}
    if num is None:
        # every positive bidder is served at the reserve: zero bidders
        # share the rest as equal bidders when that price is 0.
        price = reserve
        left = capacity
        zero = {}
        for key, bid in bids.items():
            if bid > 0 and key not in starved:
                cap = demands.get(key)
                shares[key] = max(left, ZERO) if cap is None else cap
                left -= shares[key]
            elif bid > 0:
                shares[key] = ZERO
            else:
                zero[key] = Decimal(1)
        if zero and price == 0:
            with decimal.localcontext() as ctx:
                ctx.rounding = decimal.ROUND_FLOOR
                shares.update(proportional_shares(
                    zero, max(left, ZERO),
                    {k: demands.get(k) for k in zero}))
        else:
            shares.update(dict.fromkeys(zero, ZERO))
    else:
        price = num / den
        for key, bid in bids.items():
            if key in starved:
                shares[key] = ZERO
                continue
            share = _floor_div(bid * den, num)
            cap = demands.get(key)
            shares[key] = share if cap is None else min(cap, share)
    return Clearing(price, {k: shares[k] for k in bids}, demand, contended)


# -- Merkat §3.1: allocation error -------------------------------------------

def allocation_error(host_share, cluster_share):
    """Allocation error of one VM for one resource (Merkat §3.1).

    ``e_r = (a_r^host - a_r^cluster) / a_r^host``: ``a_r^host`` is the
    share computed from the capacity of the VM's host, ``a_r^cluster`` the
    share computed as if the whole pool were one host. Negative when the VM
    gets less where it is than the market entitles it to.

    :param host_share: units (>= 0).
    :param cluster_share: units (>= 0).
    :returns: Decimal (dimensionless); 0 when both shares are 0.
    :raises ValueError: the host share is 0 but the cluster share is not
        (the error is unbounded).
    """
    host_share = as_decimal(host_share)
    cluster_share = as_decimal(cluster_share)
    if host_share == 0:
        if cluster_share == 0:
            return ZERO
        raise ValueError('allocation error undefined: host share 0, '
                         'cluster share %s' % cluster_share)
    return (host_share - cluster_share) / host_share


def bounded_allocation_error(host_share, cluster_share):
    """:func:`allocation_error`, with −1 where it is unbounded.

    A VM whose host gives it nothing (host share 0) while the pool entitles
    it to a positive cluster share gets none of its entitlement: −1, the
    largest deficit a share can show, instead of an error (e.g. a server
    whose bid was unset, on a host where others outbid it).

    :param host_share: units (>= 0).
    :param cluster_share: units (>= 0).
    :returns: Decimal in [−1, 1] for shares >= 0.
    """
    try:
        return allocation_error(host_share, cluster_share)
    except ValueError:
        return Decimal(-1)


def vm_allocation_error(errors):
    """A VM's allocation error: the maximum over its resources.

    Themis SLO-policies paper §3 and Merkat §3.1 take ``max_r e_r``; since
    ``e_r`` is signed, the maximum is taken by magnitude and the sign kept
    (a deficit of 50% on RAM is not hidden by a surplus of 10% on vCPU).
    On equal magnitudes the deficit wins.

    :param errors: mapping ``resource -> e_r`` (from
        :func:`allocation_error`).
    :returns: Decimal; 0 for no resources.
    """
    if not errors:
        return ZERO
    return max(errors.values(), key=lambda e: (abs(e), e < 0))


# -- Themis §III.B: placement ------------------------------------------------

def worst_fit_decreasing(bids, hosts, assigned=None):
    """Worst-fit decreasing placement by bid (Themis §III.B).

    Requests are taken by bid, highest first (ties: by key), and each goes
    to the host whose sum of already assigned bids is smallest (ties: the
    first in ``hosts``). Themis assumes homogeneous hosts.

    :param bids: mapping ``key -> bid`` (currency per hour; for several
        resources, the server's total bid).
    :param hosts: host names (sequence), in tie-break order.
    :param assigned: optional mapping ``host -> sum of bids already on it``.
    :returns: dict ``key -> host`` in placement order.
    :raises ValueError: requests but no hosts, or a duplicate host.
    """
    hosts = list(hosts)
    if len(set(hosts)) != len(hosts):
        raise ValueError('duplicate host names: %s' % hosts)
    if bids and not hosts:
        raise ValueError('no hosts to place %d request(s) on' % len(bids))
    assigned = assigned or _EMPTY
    load = {h: as_decimal(assigned.get(h, 0)) for h in hosts}
    order = sorted(bids, key=lambda k: (-as_decimal(bids[k]), str(k)))
    placement = {}
    for key in order:
        host = min(hosts, key=load.__getitem__)
        placement[key] = host
        load[host] += as_decimal(bids[key])
    return placement


# -- one server bid -> a bid per resource ------------------------------------

def contended_resources(capacity, requests):
    """The resources whose total request exceeds the capacity.

    :param capacity: mapping ``resource -> units`` of one market.
    :param requests: iterable of mappings ``resource -> units`` (each
        holder's demand, e.g. its flavor).
    :returns: frozenset of resource names.
    """
    demand = dict.fromkeys(capacity, ZERO)
    for request in requests:
        for r in demand:
            demand[r] += as_decimal(request.get(r, 0))
    return frozenset(r for r, units in demand.items()
                     if units > as_decimal(capacity[r]))


def split_bid(bid, capacity, request=None, reserve=None, contended=None):
    """One server bid as a bid per resource.

    Merkat VMs bid per resource (§3.1); a nova server carries one bid
    (``opie:bid``, currency per hour). The bid is split in proportion to
    the fraction of the capacity the server requests of each resource,
    ``w_r = request_r / capacity_r``, ``b_r = bid * w_r / sum(w)``; with no
    (or an all-zero) request, equally. With reserve prices, each resource
    first gets the reserve cost of the request, ``reserve_r * request_r``
    (Themis Table I: ``bid_min``), and only the rest is split by ``w_r``,
    so that a bid covering the reserve cost of the whole flavor covers it
    for every resource; a smaller bid is split in proportion to those
    reserve costs. The parts add up to ``bid`` exactly (the last resource
    takes the rounding remainder).

    ``contended`` (the resources whose demand exceeds the capacity,
    :func:`contended_resources`): when given and the server requests some
    of them, the rest of the bid above the reserve costs goes to those
    resources only (``w_r = 0`` for the others). An uncontended resource
    is priced at its reserve (:func:`clear_market`), which the reserve
    cost already pays, so the whole surplus bids where there is scarcity:
    a memory-heavy server does not spend its bid on idle memory while it
    competes for vCPUs (Merkat §3.1 lets a VM bid per resource; a user
    would bid nothing above the reserve on a resource nobody else wants).

    :param bid: currency per hour (>= 0).
    :param capacity: mapping ``resource -> units`` (> 0), e.g. the pool's.
    :param request: optional mapping ``resource -> units`` (>= 0).
    :param reserve: optional mapping ``resource -> reserve price``
        (currency per unit-hour, >= 0).
    :param contended: optional iterable of resource names.
    :returns: dict ``resource -> bid`` in :func:`order_resources` order.
    """
    bid = as_decimal(bid)
    names = order_resources(capacity)
    if not names:
        return {}
    request = request or _EMPTY
    reserve = reserve or _EMPTY
    weighed = request
    if contended is not None:
        contended = set(contended)
        if any(r in contended and as_decimal(request.get(r, 0)) > 0
               for r in names):
            weighed = {r: (request.get(r, 0) if r in contended else 0)
                       for r in names}
    floor = {r: as_decimal(reserve.get(r, 0)) * as_decimal(
        request.get(r, 0)) for r in names}
    floor_total = sum(floor.values(), ZERO)
    if floor_total > 0 and bid <= floor_total:
        weights, total, base, rest = floor, floor_total, None, bid
    else:
        # w_r times the product of the capacities: exact for integers
        weights = {}
        for r in names:
            weights[r] = as_decimal(weighed.get(r, 0))
            for other in names:
                if other != r:
                    weights[r] *= as_decimal(capacity[other])
        total = sum(weights.values(), ZERO)
        base, rest = floor, bid - floor_total
    if total == 0:
        weights = dict.fromkeys(names, Decimal(1))
        total = Decimal(len(names))
    parts = {r: (base[r] if base else ZERO) + rest * weights[r] / total
             for r in names[:-1]}
    parts[names[-1]] = bid - sum(parts.values(), ZERO)
    return parts


# -- a whole market ----------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Host:
    """A host of the market.

    :ivar name: host name (unique).
    :ivar capacity: mapping ``resource -> units`` (> 0).
    :ivar pool: pool name (e.g. a host aggregate); each pool is a market.
    """
    name: str
    capacity: dict
    pool: str = DEFAULT_POOL


@dataclasses.dataclass(frozen=True)
class VM:
    """A preemptible VM (server) in the market.

    :ivar uuid: unique id.
    :ivar bids: mapping ``resource -> bid`` (currency per hour); a missing
        resource bids 0. See :func:`split_bid` for one server bid.
    :ivar host: host name, or None to be placed by
        :func:`worst_fit_decreasing`.
    :ivar request: mapping ``resource -> most units it can use`` (its
        flavor); a missing resource is uncapped.
    :ivar pool: pool to place it in when ``host`` is None.
    """
    uuid: str
    bids: dict
    host: str = None
    request: dict = dataclasses.field(default_factory=dict)
    pool: str = DEFAULT_POOL

    def total_bid(self):
        """The VM's bid over all resources, currency per hour."""
        return sum((as_decimal(b) for b in self.bids.values()), ZERO)


@dataclasses.dataclass(frozen=True)
class PoolPrices:
    """A pool's market: capacity, sum of bids and clearing prices
    (:func:`clear_market`).

    ``capacity`` in units, ``bids`` in currency per hour and ``prices`` in
    currency per unit-hour, each a mapping by resource.
    """
    pool: str
    capacity: dict
    bids: dict
    prices: dict


@dataclasses.dataclass(frozen=True)
class HostShares:
    """A host's local market (Merkat §3.1): same fields as
    :class:`PoolPrices` plus the host's pool and VMs (uuids).
    """
    name: str
    pool: str
    capacity: dict
    bids: dict
    prices: dict
    vms: tuple


@dataclasses.dataclass(frozen=True)
class VMShares:
    """A VM's shares and allocation errors.

    :ivar cluster: ``resource -> units`` computed on the pool as one host.
    :ivar host_shares: ``resource -> units`` computed on its host.
    :ivar errors: ``resource -> e_r`` (:func:`allocation_error`).
    :ivar error: :func:`vm_allocation_error` of ``errors``.
    :ivar placed: True when :func:`worst_fit_decreasing` chose the host.
    """
    uuid: str
    host: str
    pool: str
    bids: dict
    cluster: dict
    host_shares: dict
    errors: dict
    error: Decimal
    placed: bool


@dataclasses.dataclass(frozen=True)
class Allocation:
    """Result of :func:`allocate`; dicts keep input order."""
    resources: tuple
    pools: dict
    hosts: dict
    vms: dict


def _check_hosts(hosts):
    if not hosts:
        raise ValueError('no hosts')
    resources = order_resources(hosts[0].capacity)
    seen = set()
    for host in hosts:
        if host.name in seen:
            raise ValueError('duplicate host %r' % host.name)
        seen.add(host.name)
        if order_resources(host.capacity) != resources:
            raise ValueError('host %r has resources %s, expected %s (every '
                             'host must have the same resources)'
                             % (host.name, sorted(host.capacity),
                                sorted(resources)))
        for r in resources:
            if as_decimal(host.capacity[r]) <= 0:
                raise ValueError('host %r: capacity of %s must be > 0'
                                 % (host.name, r))
    return resources


def _check_vms(vms, hosts_by_name, resources):
    seen = set()
    for vm in vms:
        if vm.uuid in seen:
            raise ValueError('duplicate VM %r' % vm.uuid)
        seen.add(vm.uuid)
        if vm.host is not None and vm.host not in hosts_by_name:
            raise ValueError('VM %r: unknown host %r' % (vm.uuid, vm.host))
        unknown = set(vm.bids).union(vm.request).difference(resources)
        if unknown:
            raise ValueError('VM %r: unknown resources %s'
                             % (vm.uuid, sorted(unknown)))


def _place(vms, hosts):
    """``uuid -> host`` for every VM, placing host-less ones per pool."""
    placement = {vm.uuid: vm.host for vm in vms if vm.host is not None}
    load = {}
    for vm in vms:
        if vm.host is not None:
            load[vm.host] = load.get(vm.host, ZERO) + vm.total_bid()
    pools = {}
    for vm in vms:
        if vm.host is None:
            pools.setdefault(vm.pool, {})[vm.uuid] = vm.total_bid()
    for pool, bids in pools.items():
        names = [h.name for h in hosts if h.pool == pool]
        if not names:
            raise ValueError('no hosts in pool %r to place %s on'
                             % (pool, ', '.join(sorted(bids))))
        placement.update(worst_fit_decreasing(bids, names, load))
    return placement


def _bids_of(vms, resource):
    return {vm.uuid: as_decimal(vm.bids.get(resource, 0)) for vm in vms}


def _caps_of(vms, resource, limit):
    """Each VM's cap: what it asked for, never more than ``limit``."""
    caps = {}
    for vm in vms:
        asked = vm.request.get(resource)
        caps[vm.uuid] = (limit if asked is None
                         else min(limit, as_decimal(asked)))
    return caps


def _market(vms, capacity, limits, resources, reserve):
    """(bids, prices, shares) of a group of VMs sharing ``capacity``
    (:func:`clear_market` per resource).
    """
    bids, prices, shares = {}, {}, {}
    for r in resources:
        by_vm = _bids_of(vms, r)
        bids[r] = sum(by_vm.values(), ZERO)
        cleared = clear_market(by_vm, capacity[r],
                               _caps_of(vms, r, limits[r]), reserve[r])
        prices[r] = cleared.price
        shares[r] = cleared.shares
    return bids, prices, shares


def allocate(hosts, vms, reserve=None):
    """Prices, shares and allocation errors of a whole market.

    Each pool is one market. VMs without a host are placed first by
    :func:`worst_fit_decreasing` (on top of the bids already on each host).
    Per pool and resource: the clearing price (:func:`clear_market`: the
    eq. 1 price under contention, the reserve when the demand fits) and
    each VM's *cluster* share,
    computed as if the pool were one host but capped at the largest host
    (Merkat §3.1's "not enforceable" allocations). Per host: the clearing
    price of the host and each VM's *host* share (Merkat §3.1). Caps are
    the VMs' requests.

    :param hosts: sequence of :class:`Host` (same resources each).
    :param vms: sequence of :class:`VM`.
    :param reserve: optional mapping ``resource -> reserve price``
        (currency per unit-hour), default 0.
    :returns: :class:`Allocation`.
    :raises ValueError: duplicate or unknown names, a host capacity <= 0,
        hosts with different resources, a pool without hosts for a VM to
        be placed.
    """
    hosts = list(hosts)
    vms = list(vms)
    resources = _check_hosts(hosts)
    by_name = {h.name: h for h in hosts}
    _check_vms(vms, by_name, resources)
    reserve = {r: as_decimal((reserve or _EMPTY).get(r, 0))
               for r in resources}
    placement = _place(vms, hosts)

    pools = {}
    cluster = {}
    for pool in dict.fromkeys(h.pool for h in hosts):
        members = [h for h in hosts if h.pool == pool]
        names = {h.name for h in members}
        pool_vms = [vm for vm in vms if placement[vm.uuid] in names]
        capacity = {r: sum((as_decimal(h.capacity[r]) for h in members),
                           ZERO) for r in resources}
        largest = {r: max(as_decimal(h.capacity[r]) for h in members)
                   for r in resources}
        bids, prices, cluster[pool] = _market(
            pool_vms, capacity, largest, resources, reserve)
        pools[pool] = PoolPrices(pool, capacity, bids, prices)

    host_results = {}
    local = {}
    for host in hosts:
        here = [vm for vm in vms if placement[vm.uuid] == host.name]
        capacity = {r: as_decimal(host.capacity[r]) for r in resources}
        bids, prices, local[host.name] = _market(
            here, capacity, capacity, resources, reserve)
        host_results[host.name] = HostShares(
            host.name, host.pool, capacity, bids, prices,
            tuple(vm.uuid for vm in here))

    vm_results = {}
    for vm in vms:
        host = by_name[placement[vm.uuid]]
        c = {r: cluster[host.pool][r][vm.uuid] for r in resources}
        h = {r: local[host.name][r][vm.uuid] for r in resources}
        errors = {r: bounded_allocation_error(h[r], c[r])
                  for r in resources}
        vm_results[vm.uuid] = VMShares(
            vm.uuid, host.name, host.pool,
            {r: as_decimal(vm.bids.get(r, 0)) for r in resources},
            c, h, errors, vm_allocation_error(errors), vm.host is None)
    return Allocation(resources, pools, host_results, vm_results)
