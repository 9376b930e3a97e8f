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
"""The out-of-bid rule and what a server pays: one function for all.

:func:`assess` is the market's one rule, used alike by the ``opie-market``
engine (notices, preemptions, charges: :mod:`.engine`), its REST API
(:mod:`.api.app`) and the scheduler's
:class:`~opie_sched.scheduler.weights.proportional_share.ProportionalShareWeigher`.
For a market (a pool of hosts, or one host) it splits each server's bid
over the resources (:func:`.pricing.split_bid`), clears each resource's
market with work-conserving caps (:func:`.pricing.clear_market`: Merkat
eq. 1 and §3.1 maximum allocations, Themis HPCC'12 §III.B work
conservation, reserve price = Themis ``bid_min``) and reads off, per
server:

* its **share** of each resource (units);
* whether it is **out of bid**: its share of some resource is below its
  *minimum*, defined as its flavor (the vCPU and MB it holds; a nova
  server cannot run on less RAM than its flavor, and Nova gives it its
  whole flavor of vCPUs). With the total demand within the capacity every
  share covers its flavor (prices fall to the reserve), so only a bid
  below the reserve cost of the flavor is then out of bid; under real
  contention the lowest bids per unit lose. Themis §II: a VM is not
  killed because someone else bid more while capacity is idle; the EC2
  rule (killed as soon as the price passes the bid) that the previous
  rule ``bid < price * flavor`` copied is the one Themis contrasts with;
* its **charge** per hour, ``sum_r p*_r * a_r``: what its share costs at
  the clearing price. Themis SLO-policies §2 ("users are charged for the
  cost of used resources, i.e., the VM bids, at each scheduling period")
  and Merkat §2.3 ("VMs are billed based on their bids"): a server whose
  share is ``b_r / p*_r`` pays exactly its bid; a server capped at its
  flavor pays ``p*_r * flavor_r``, less than its bid -- the bid-based
  charge, capped by the work-conserving share. Never more than the bid;
  with idle capacity, the reserve cost of the flavor.

The engine assesses each pool as one market (the *cluster* shares of
Merkat §3.1): the charge and the out-of-bid rule do not depend on which
host of the pool a server landed on; the per-host shares and their
allocation errors are what rebalancing (:mod:`.rebalance`) reduces.

Out-of-bid servers are the first candidates for termination; they are
listed lowest bid *per unit of what they hold* first (:func:`unit_bid`:
the bid over what the server's flavor costs at the clearing prices),
then lowest total bid, then oldest first, then by uuid
(:func:`victim_key`), so that every run on the same data picks the same
victims; :func:`select_victims` takes them in that order only until the
servers left are no longer out of bid (never more than needed). Why per
unit: Merkat eq. 1 gives a VM ``a_i = b_i / p`` of a resource, so the
fraction of its demand it can hold is ``a_i / d_i = b_i / (p * d_i)``;
the server with the lowest bid per unit held is the one whose bid buys
the smallest fraction of its flavor -- the one the market serves least.
Ranking by total bid instead would take a small server that bids more
per vCPU before a big one that bids less per vCPU.

Pending demand: a :class:`Server` with ``pending`` set is a preemptible
request the cloud turned away or has not placed yet (NoValidHost, still
scheduling). It competes in the market with its flavor and bid, so
refused demand raises the price (a scarcity the price must ration) and
can put running servers out of bid, but it holds nothing: it is never
charged and never a victim.
"""

import dataclasses
from decimal import Decimal

from opie_sched.market import pricing

ZERO = Decimal(0)


@dataclasses.dataclass(frozen=True)
class Server:
    """A running preemptible server, as the market sees it.

    :ivar uuid: server id.
    :ivar bid: currency per hour (validated, see :mod:`.bids`).
    :ivar held: mapping ``resource -> units`` it holds (its flavor: vCPU,
        MB); also its minimum in the out-of-bid rule.
    :ivar project: owning project (for :mod:`.budget`).
    :ivar created_at: seconds since the epoch, or None when unknown
        (sorted after every known time).
    :ivar pool: its pool (host aggregate), :data:`.pricing.DEFAULT_POOL`
        by default.
    :ivar charge_per_hour: what it pays per hour (from :func:`assess`),
        currency per hour; None: ``price * held`` (:func:`hourly_cost`).
    :ivar pending: a request the cloud refused or has not placed yet: it
        counts in the demand (its ``held`` is what it asks for) but is
        never charged nor out of bid.
    """
    uuid: str
    bid: Decimal
    held: dict
    project: str = None
    created_at: float = None
    pool: str = pricing.DEFAULT_POOL
    charge_per_hour: Decimal = None
    pending: bool = False


@dataclasses.dataclass(frozen=True)
class Position:
    """A server's position in its market (:func:`assess`).

    :ivar server: the :class:`Server`.
    :ivar bids: ``resource -> bid`` (currency per hour), the split bid.
    :ivar shares: ``resource -> units`` it is entitled to.
    :ivar shortfall: ``resource -> units`` by which its share misses its
        minimum (its flavor); empty when it is not out of bid.
    :ivar charge_per_hour: currency per hour, ``sum_r p*_r * a_r`` (never
        above its bid).
    """
    server: Server
    bids: dict
    shares: dict
    shortfall: dict
    charge_per_hour: Decimal

    @property
    def out_of_bid(self):
        return bool(self.shortfall)


@dataclasses.dataclass(frozen=True)
class Market:
    """One market assessed (:func:`assess`).

    :ivar capacity: ``resource -> units``.
    :ivar reserve: ``resource -> reserve price`` (currency per unit-hour).
    :ivar prices: ``resource -> p*`` (currency per unit-hour).
    :ivar demand: ``resource -> units`` asked by all servers.
    :ivar contended: ``resource -> bool``, demand above capacity.
    :ivar positions: ``uuid -> Position``, in input order.
    """
    capacity: dict
    reserve: dict
    prices: dict
    demand: dict
    contended: dict
    positions: dict


@dataclasses.dataclass(frozen=True)
class OutOfBid:
    """An out-of-bid server.

    :ivar server: the :class:`Server`.
    :ivar cost: what its flavor costs per hour at the market's prices,
        ``sum_r p*_r * held_r``, currency per hour.
    :ivar reason: text for the owner (e.g. an instance fault message).
    :ivar position: its :class:`Position`, or None.
    """
    server: Server
    cost: Decimal
    reason: str
    position: Position = None


def preemption_key(server):
    """Sort key: lowest bid first, then oldest, then uuid."""
    return (pricing.as_decimal(server.bid), server.created_at is None,
            server.created_at or 0, server.uuid)


_INFINITY = Decimal('Infinity')


def unit_bid(server, prices):
    """The server's bid per unit of what it holds: its bid over what its
    flavor costs at ``prices`` (dimensionless; 1 buys the whole flavor).

    Merkat eq. 1 (§2.3): ``a_i / d_i = b_i / (p * d_i)``, summed over the
    resources by their cost. Infinity when the flavor costs nothing.

    :param server: :class:`Server`.
    :param prices: ``resource -> price`` (currency per unit-hour).
    :returns: Decimal.
    """
    cost = hourly_cost(prices, server.held)
    if cost <= 0:
        return _INFINITY
    return pricing.as_decimal(server.bid) / cost


def victim_key(server, prices):
    """Sort key of the victims: lowest :func:`unit_bid` first, then
    :func:`preemption_key` (lowest total bid, oldest, uuid).
    """
    return (unit_bid(server, prices),) + preemption_key(server)


def hourly_cost(prices, held):
    """Cost of holding ``held`` for one hour at ``prices``.

    :param prices: mapping ``resource -> price`` (currency per unit-hour).
    :param held: mapping ``resource -> units``; a resource without a price
        costs nothing.
    :returns: Decimal, currency per hour.
    """
    return sum((pricing.as_decimal(prices.get(r, 0)) * pricing.as_decimal(n)
                for r, n in held.items()), ZERO)


def _charge(bid, share, demand, price):
    """What one resource's share costs per hour: the bid when the share is
    ``bid / p*`` (not capped), ``p* * demand`` when the demand caps it;
    exact, whatever the rounding of the share.
    """
    if share <= 0:
        return ZERO
    if share < demand:
        return bid
    return min(bid, price * demand)


def assess(servers, capacity, reserve=None, prices=None):
    """The market rule: shares, out-of-bid servers and charges.

    See the module docstring for the rule and its sources.

    :param servers: iterable of :class:`Server` sharing one market (a pool,
        or one host); their ``held`` is both their demand (work-conserving
        cap) and their minimum. Resources not in ``capacity`` are ignored.
    :param capacity: mapping ``resource -> units`` (> 0).
    :param reserve: optional mapping ``resource -> reserve price``
        (currency per unit-hour, >= 0), default 0.
    :param prices: optional mapping ``resource -> p*`` published before
        for this market (a replayed period): shares are computed at these
        prices instead of clearing the market again.
    :returns: :class:`Market`.
    :raises ValueError: duplicate uuids, a capacity <= 0, negative
        amounts.
    """
    servers = list(servers)
    names = pricing.order_resources(capacity)
    capacity = {r: pricing.as_decimal(capacity[r]) for r in names}
    for r, units in capacity.items():
        if units <= 0:
            raise ValueError('capacity of %s must be > 0, got %s'
                             % (r, units))
    reserve = {r: pricing.as_decimal((reserve or {}).get(r, 0))
               for r in names}
    by_uuid = {}
    for srv in servers:
        if srv.uuid in by_uuid:
            raise ValueError('duplicate server %r' % srv.uuid)
        by_uuid[srv.uuid] = srv
    held = {s.uuid: {r: pricing.as_decimal(s.held.get(r, 0))
                     for r in names} for s in servers}
    contended = pricing.contended_resources(capacity, held.values())
    split = {s.uuid: pricing.split_bid(s.bid, capacity, held[s.uuid],
                                       reserve, contended)
             for s in servers}
    cleared = {}
    for r in names:
        cleared[r] = pricing.clear_market(
            {u: split[u][r] for u in by_uuid}, capacity[r],
            {u: held[u][r] for u in by_uuid}, reserve[r],
            None if prices is None else prices.get(r, reserve[r]))
    market_prices = {r: cleared[r].price for r in names}
    positions = {}
    for uuid, srv in by_uuid.items():
        shares = {r: cleared[r].shares[uuid] for r in names}
        shortfall = {r: held[uuid][r] - shares[r] for r in names
                     if shares[r] < held[uuid][r]}
        if srv.pending:
            charge = ZERO
        else:
            charge = sum((_charge(split[uuid][r], shares[r],
                                  held[uuid][r], market_prices[r])
                          for r in names), ZERO)
        positions[uuid] = Position(srv, split[uuid], shares, shortfall,
                                   min(charge, pricing.as_decimal(srv.bid)))
    return Market(capacity, reserve, market_prices,
                  {r: cleared[r].demand for r in names},
                  {r: cleared[r].contended for r in names}, positions)


def reason_text(position, market):
    """Why ``position``'s server is out of bid, for its owner (one line).
    """
    srv = position.server
    parts = []
    below_reserve = True
    for r in pricing.order_resources(position.shortfall):
        unit = pricing.UNITS.get(r, r)
        parts.append('%s of the %s %s it holds' % (
            pricing.pretty(position.shares[r]), pricing.pretty(
                srv.held.get(r, 0)), unit))
        below_reserve = below_reserve and not market.contended[r]
    cost = hourly_cost(market.prices, srv.held)
    if below_reserve:
        return ('out of bid: your bid of %s per hour is below the reserve '
                'price of the resources the server holds in pool %r, %s per '
                'hour (it buys %s)' % (
                    pricing.pretty(srv.bid), srv.pool, pricing.pretty(cost),
                    ', '.join(parts)))
    return ('out of bid: pool %r is contended (%s); at the spot prices '
            '(%s) your bid of %s per hour buys %s' % (
                srv.pool, ', '.join(
                    '%s %s demanded of %s' % (
                        pricing.pretty(market.demand[r]),
                        pricing.UNITS.get(r, r),
                        pricing.pretty(market.capacity[r]))
                    for r in pricing.order_resources(position.shortfall)
                    if market.contended[r] and market.demand[r] is not None),
                ', '.join('%s per %s-hour' % (
                    pricing.pretty(market.prices[r]), pricing.UNITS.get(r, r))
                    for r in pricing.order_resources(market.prices)),
                pricing.pretty(srv.bid), ', '.join(parts)))


def out_of_bid(market):
    """The out-of-bid running servers of an assessed market (pending
    requests are never out of bid: they hold nothing to take).

    :param market: a :class:`Market` from :func:`assess`.
    :returns: list of :class:`OutOfBid` in :func:`victim_key` order.
    """
    found = []
    for position in sorted(market.positions.values(),
                           key=lambda p: victim_key(p.server,
                                                    market.prices)):
        if position.out_of_bid and not position.server.pending:
            found.append(OutOfBid(
                position.server,
                hourly_cost(market.prices, position.server.held),
                reason_text(position, market), position))
    return found


def select_victims(servers, capacity, reserve=None, prices=None):
    """Out-of-bid servers to preempt, never more than needed.

    The market is assessed (:func:`assess`); the out-of-bid server first
    in :func:`victim_key` order (lowest bid per unit held, then lowest
    bid, then oldest) is chosen;
    the market is cleared again without it, and so on until nobody left
    is out of bid. Removing one server can only raise the others' shares,
    so the servers that stay have shares covering their flavors.

    Pending requests (:attr:`Server.pending`) rank with the running
    servers: one first in that order is the request the market would
    serve least, so it is dropped (never a victim, it holds nothing) and
    the market cleared again (on an equal bid per unit the pending
    request goes first). A pending request thus displaces only running
    servers that bid less per unit than it does.

    :param servers: iterable of :class:`Server` of one market.
    :param capacity: ``resource -> units``. :param reserve: optional
        ``resource -> reserve price``. :param prices: optional recorded
        prices of the first assessment (see :func:`assess`).
    :returns: list of :class:`OutOfBid`, in preemption order; each
        ``reason`` and ``position`` from the market it was chosen in.
    """
    left = list(servers)
    chosen = []
    market = assess(left, capacity, reserve, prices)
    while True:
        # on an equal bid per unit the pending request yields: a
        # refused boot never displaces a server that bids as much
        ranked = sorted((p for p in market.positions.values()
                         if p.out_of_bid),
                        key=lambda p: (unit_bid(p.server, market.prices),
                                       not p.server.pending,
                                       victim_key(p.server,
                                                  market.prices)))
        if all(p.server.pending for p in ranked):
            return chosen
        first = ranked[0]
        if not first.server.pending:
            chosen.append(OutOfBid(
                first.server, hourly_cost(market.prices, first.server.held),
                reason_text(first, market), first))
        left = [s for s in left if s.uuid != first.server.uuid]
        market = assess(left, capacity, reserve)
