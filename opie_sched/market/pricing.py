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

The price of a resource is ``p = max(reserve, sum(bids) / capacity)``
(Merkat eq. 1 with a floor: Themis's ``bid_min``, Table I, is the
provider's reserve price). A holder's
share is ``a_i = b_i / p``, except that nobody gets more than it asked for
or than one host has: capacity that a capped holder cannot use goes to the
others in proportion to their bids (work conservation, Themis §III.B).
When a cap binds, the shares are no longer ``b_i / p`` for the published
``p``: the published price stays the eq. 1 price.
"""

import dataclasses
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

def split_bid(bid, capacity, request=None):
    """One server bid as a bid per resource.

    Merkat VMs bid per resource (§3.1); a nova server carries one bid
    (``opie:bid``, currency per hour). The bid is split in proportion to
    the fraction of the capacity the server requests of each resource,
    ``w_r = request_r / capacity_r``, ``b_r = bid * w_r / sum(w)``; with no
    (or an all-zero) request, equally. The parts add up to ``bid`` exactly
    (the last resource takes the rounding remainder).

    :param bid: currency per hour (>= 0).
    :param capacity: mapping ``resource -> units`` (> 0), e.g. the pool's.
    :param request: optional mapping ``resource -> units`` (>= 0).
    :returns: dict ``resource -> bid`` in :func:`order_resources` order.
    """
    bid = as_decimal(bid)
    names = order_resources(capacity)
    if not names:
        return {}
    request = request or _EMPTY
    weights = {r: as_decimal(request.get(r, 0)) / as_decimal(capacity[r])
               for r in names}
    total = sum(weights.values(), ZERO)
    if total == 0:
        weights = dict.fromkeys(names, Decimal(1))
        total = Decimal(len(names))
    parts = {r: bid * weights[r] / total for r in names[:-1]}
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
    """A pool's market: capacity, sum of bids and eq. 1 prices.

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
    :class:`PoolPrices` plus the host's pool and VMs (uuids)."""
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
    """(bids, prices, shares) of a group of VMs sharing ``capacity``."""
    bids, prices, shares = {}, {}, {}
    for r in resources:
        by_vm = _bids_of(vms, r)
        bids[r] = sum(by_vm.values(), ZERO)
        prices[r] = spot_price(by_vm.values(), capacity[r], reserve[r])
        shares[r] = proportional_shares(
            by_vm, capacity[r], _caps_of(vms, r, limits[r]), reserve[r])
    return bids, prices, shares


def allocate(hosts, vms, reserve=None):
    """Prices, shares and allocation errors of a whole market.

    Each pool is one market. VMs without a host are placed first by
    :func:`worst_fit_decreasing` (on top of the bids already on each host).
    Per pool and resource: the eq. 1 price and each VM's *cluster* share,
    computed as if the pool were one host but capped at the largest host
    (Merkat §3.1's "not enforceable" allocations). Per host: the eq. 1
    price of the host and each VM's *host* share (Merkat §3.1). Caps are
    the VMs' requests (:func:`proportional_shares`).

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
        errors = {r: allocation_error(h[r], c[r]) for r in resources}
        vm_results[vm.uuid] = VMShares(
            vm.uuid, host.name, host.pool,
            {r: as_decimal(vm.bids.get(r, 0)) for r in resources},
            c, h, errors, vm_allocation_error(errors), vm.host is None)
    return Allocation(resources, pools, host_results, vm_results)
