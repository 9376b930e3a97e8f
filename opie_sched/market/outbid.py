"""Out-of-bid servers: whose bid no longer covers the spot price.

A nova server holds a fixed amount of each resource (its flavor), so the
market price of keeping it for one hour is ``sum_r price_r * held_r``
(prices of its pool, Merkat eq. 1, currency per unit-hour; see
:mod:`.pricing`). A server whose bid (currency per hour) is below that
cost is *out of bid* -- the EC2 spot rule that Themis (HPCC'12, §II)
recalls: an instance runs while the price stays below its bid. Out-of-bid
servers are the first candidates for termination; they are listed lowest
bid first, then oldest first, then by uuid (:func:`preemption_key`), so
that every run on the same data picks the same victims.
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
        MB).
    :ivar project: owning project (for :mod:`.budget`).
    :ivar created_at: seconds since the epoch, or None when unknown
        (sorted after every known time).
    :ivar pool: its pool (host aggregate), :data:`.pricing.DEFAULT_POOL`
        by default.
    """
    uuid: str
    bid: Decimal
    held: dict
    project: str = None
    created_at: float = None
    pool: str = pricing.DEFAULT_POOL


@dataclasses.dataclass(frozen=True)
class OutOfBid:
    """An out-of-bid server.

    :ivar server: the :class:`Server`.
    :ivar cost: what it would pay at the current prices, currency per hour.
    :ivar reason: text for the owner (e.g. an instance fault message).
    """
    server: Server
    cost: Decimal
    reason: str


def preemption_key(server):
    """Sort key: lowest bid first, then oldest, then uuid."""
    return (pricing.as_decimal(server.bid), server.created_at is None,
            server.created_at or 0, server.uuid)


def hourly_cost(prices, held):
    """Cost of holding ``held`` for one hour at ``prices``.

    :param prices: mapping ``resource -> price`` (currency per unit-hour).
    :param held: mapping ``resource -> units``; a resource without a price
        costs nothing.
    :returns: Decimal, currency per hour.
    """
    return sum((pricing.as_decimal(prices.get(r, 0)) * pricing.as_decimal(n)
                for r, n in held.items()), ZERO)


def reason_text(server, prices, cost):
    """Why ``server`` is out of bid, for its owner (one line)."""
    parts = []
    for r in pricing.order_resources(server.held):
        unit = pricing.UNITS.get(r, r)
        parts.append('%s %s at %s per %s-hour'
                     % (pricing.pretty(server.held[r]), unit,
                        pricing.pretty(prices.get(r, 0)), unit))
    return ('out of bid: your bid of %s per hour is below the spot price '
            'of the resources the server holds in pool %r, %s per hour (%s)'
            % (pricing.pretty(server.bid), server.pool,
               pricing.pretty(cost),
               ', '.join(parts)))


def out_of_bid(prices, servers):
    """The servers whose bid is below what their resources cost.

    :param prices: mapping ``pool -> {resource: price}`` (currency per
        unit-hour), e.g. from :func:`.pricing.allocate`'s pools.
    :param servers: iterable of :class:`Server`.
    :returns: list of :class:`OutOfBid` in :func:`preemption_key` order. A
        server whose bid equals the cost is not out of bid; a server of a
        pool without prices is never out of bid.
    """
    found = []
    for server in sorted(servers, key=preemption_key):
        pool_prices = prices.get(server.pool)
        if pool_prices is None:
            continue
        cost = hourly_cost(pool_prices, server.held)
        if pricing.as_decimal(server.bid) < cost:
            found.append(OutOfBid(server, cost,
                                  reason_text(server, pool_prices, cost)))
    return found
