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
"""Prices of preemptible flavors from the opie-market spot market.

Issue 5: a flavor's price ``p_i`` (thesis Paper V, 3: the price of VM type
*i*, currency per **hour**) comes from the applications file, or -- for a
preemptible flavor (extra spec ``opie:preemptible=true``, see
:mod:`opie_sched.common.flavors`) -- from the spot market's current prices, or
from the flavor extra spec ``opie:price``, in this order.

The market (:mod:`opie_sched.market`) publishes, every period, one price
per pool and resource: Merkat eq. 1 (S. Costache et al., *Merkat*, INRIA
RR-8343, 2013, §2.3) with the provider's reserve price as a floor,
``price_r = max(reserve_r, sum(bids_r) / capacity_r)``, in currency per
**unit-hour**: per vCPU-hour for ``vcpus``, per MB-hour for ``memory_mb``
(``GET /v1/prices``, :mod:`opie_sched.services.market.api.app`). A server of
the flavor holds its vCPUs and its RAM (MB), so its spot price is::

    p_i = sum over the pool's resources r of price_r * amount_r
        = price_vcpus * vCPUs + price_memory_mb * RAM_MB   (currency/hour)

the same sum the market charges a server per hour (its engine charges
``sum_r price_r * held_r * period_seconds / 3600`` per period).

:class:`SpotPrices` fetches ``GET <market_url>/prices`` once per round
(:meth:`SpotPrices.new_round`) and URL -- with the market API's one client
(:class:`opie_sched.services.market.client.MarketClient`) over the cloud
connection's keystoneauth session when it has an auth plugin (its token is
sent as ``X-Auth-Token``), else over plain ``requests`` -- and prices
flavors from the answer. ``market_url`` is the market's endpoint (with or
without ``/v1``) or ``catalog`` (:data:`CATALOG`): the ``spot-market``
entry of the connection's Keystone catalog, at the connection's
interface(s) and region (``[service_credentials] valid_interfaces`` and
``region_name``; public and any region when unset). Any problem (market
unreachable, an error answer, a body that is not the prices document, an
unknown pool, a missing resource, a price of 0) raises
:class:`MarketError` saying why; the service then keeps the application's
current set for the round (as for a bad demand). A failed fetch is not
retried within the round.
"""

import dataclasses
import decimal
import math
import threading

from opie_sched.market import pricing
from opie_sched.services.market import client as market_client

#: The market's pool of hosts in no configured aggregate.
DEFAULT_POOL = pricing.DEFAULT_POOL


#: ``market_url`` meaning the ``spot-market`` entry of the Keystone catalog.
CATALOG = 'catalog'


class MarketError(Exception):
    """The market's prices are unavailable or unusable; says why."""


def api_client(session, market_url, timeout=None, catalog=None):
    """The :class:`~opie_sched.services.market.client.MarketClient` of
    ``market_url`` (:data:`CATALOG`: the catalog's ``spot-market``).

    :param session: a keystoneauth1 session, a callable returning one or
        None, or None (plain ``requests``, no token).
    :param catalog: where in the catalog the market is looked up:
        ``{"interface": ..., "region_name": ...}``
        (:func:`opie_sched.services.market.client.connection_catalog`), a
        callable returning it, or None (the public endpoint, any region).
    :raises MarketError: ``catalog`` without an authenticated session.
    """
    if callable(session) and not hasattr(session, 'request'):
        session = session()
    endpoint = market_url
    where = {}
    if market_url == CATALOG:
        if session is None:
            raise MarketError('market_url %s needs an authenticated cloud '
                              'connection (its Keystone catalog)' % CATALOG)
        endpoint = None
        where = (catalog() if callable(catalog) else catalog) or {}
    return market_client.MarketClient(session, endpoint, timeout=timeout,
                                      **where)


def why(exc, hint=''):
    """The text of a market client error, ``hint`` added to a 404."""
    if isinstance(exc, market_client.MarketAPIError):
        detail = ': %s' % exc.detail if exc.detail else ''
        return '%s %s answered %s%s%s' % (
            exc.method, exc.url, exc.status, detail,
            hint if exc.status == 404 else '')
    return str(exc)


def _decimal(value, what):
    if isinstance(value, bool) or not isinstance(
            value, (int, float, str, decimal.Decimal)):
        raise MarketError('%s: not a number: %r' % (what, value))
    try:
        result = pricing.as_decimal(value.strip() if isinstance(value, str)
                                    else value)
    except (decimal.InvalidOperation, TypeError, ValueError):
        raise MarketError('%s: not a number: %r' % (what, value))
    if not result.is_finite() or result < 0:
        raise MarketError('%s: must be a finite number >= 0, got %r'
                          % (what, value))
    return result


def parse_prices(doc, where='market'):
    """``{pool: {resource: Decimal}}`` from a ``GET /v1/prices`` body.

    :param doc: the parsed JSON body: ``{"period_start", "period_seconds",
        "prices": [{"pool", "resource", "price", "unit"}, ...]}``, prices
        as decimal text (currency per unit-hour).
    :raises MarketError: not that document, a bad row, a duplicate row.
    """
    if not isinstance(doc, dict) or not isinstance(doc.get('prices'), list):
        raise MarketError('%s: not a prices document (expected an object '
                          'with a "prices" list)' % where)
    prices = {}
    for i, row in enumerate(doc['prices']):
        what = '%s: prices[%d]' % (where, i)
        if not isinstance(row, dict):
            raise MarketError('%s: not an object: %r' % (what, row))
        pool, resource = row.get('pool'), row.get('resource')
        for key, value in (('pool', pool), ('resource', resource)):
            if not isinstance(value, str) or not value:
                raise MarketError('%s: %s must be a non-empty string, got '
                                  '%r' % (what, key, value))
        if 'price' not in row:
            raise MarketError('%s: no price' % what)
        price = _decimal(row['price'], '%s.price' % what)
        if resource in prices.get(pool, {}):
            raise MarketError('%s: pool %s has two %s prices'
                              % (what, pool, resource))
        prices.setdefault(pool, {})[resource] = price
    return prices


def flavor_price(pool_prices, vcpus, ram_mb):
    """A server's spot price: ``sum_r price_r * amount_r``, currency/hour.

    :param pool_prices: ``{resource: price}`` of one pool, currency per
        unit-hour (``vcpus`` per vCPU-hour, ``memory_mb`` per MB-hour).
    :param vcpus: the flavor's vCPUs; ``ram_mb`` its RAM in MB.
    :returns: :class:`decimal.Decimal`, currency per hour.
    :raises MarketError: a resource missing from the pool, or one a flavor
        has no amount of (it would be left unpriced).
    """
    amounts = {pricing.VCPUS: vcpus, pricing.MEMORY_MB: ram_mb}
    missing = [r for r in pricing.RESOURCES if r not in pool_prices]
    if missing:
        raise MarketError('no %s price' % ', '.join(missing))
    unknown = sorted(set(pool_prices) - set(amounts))
    if unknown:
        raise MarketError('resource(s) %s have no flavor amount to price'
                          % ', '.join(unknown))
    total = decimal.Decimal(0)
    for resource, amount in amounts.items():
        if isinstance(amount, bool) or not isinstance(amount, int) or (
                amount < 0):
            raise MarketError('the flavor\'s %s amount %r is not an integer '
                              '>= 0' % (resource, amount))
        total += pool_prices[resource] * amount
    return total


@dataclasses.dataclass(frozen=True)
class Quote:
    """The current prices of one market (one ``GET /v1/prices``).

    :param url: the market endpoint (``market_url``).
    :param period_start: ISO 8601 start of the priced period, or None.
    :param prices: ``{pool: {resource: Decimal}}``, currency per
        unit-hour.
    """

    url: str
    period_start: str
    prices: dict

    def price(self, pool, vcpus, ram_mb, flavor='the flavor'):
        """``p_i`` of a flavor of ``vcpus`` vCPUs and ``ram_mb`` MB in
        ``pool``: a float > 0, currency per hour.

        :raises MarketError: unknown pool, bad pool prices, or a price of 0
            (no bids and no reserve price: the planner needs p_i > 0).
        """
        if pool not in self.prices:
            if not self.prices:
                raise MarketError('market %s has published no prices yet'
                                  % self.url)
            raise MarketError('market %s has no pool %r (pools: %s)' % (
                self.url, pool, ', '.join(sorted(self.prices))))
        try:
            total = flavor_price(self.prices[pool], vcpus, ram_mb)
        except MarketError as exc:
            raise MarketError('market %s, pool %s: %s' % (self.url, pool,
                                                          exc))
        value = float(total)
        if not math.isfinite(value) or value <= 0:
            raise MarketError('market %s, pool %s: the spot price of %s is '
                              '%s/h (no bids and no reserve price); a price '
                              '> 0 is needed' % (self.url, pool, flavor,
                                                 pricing.pretty(total)))
        return value

    def describe(self, pool):
        """``'market URL pool P period T'``, for logs."""
        return 'market %s pool %s period %s' % (self.url, pool,
                                                self.period_start)


class SpotPrices:
    """The spot market's current prices, fetched once per round and URL.

    :param session: a keystoneauth1 ``Session`` (or anything with its
        ``get(url, ...)``), a callable returning one or None (called at the
        first fetch: the service passes its connection's session lazily),
        or None: plain ``requests`` without authentication.
    :param timeout: seconds one request may take.
    :param catalog: the catalog interface(s) and region of ``market_url``
        ``catalog``, as :func:`api_client` takes it (None: public).
    """

    def __init__(self, session=None, timeout=5.0, catalog=None):
        self._session = session
        self.timeout = timeout
        self._catalog = catalog
        self._quotes = {}
        self._lock = threading.Lock()

    def new_round(self):
        """Forget the fetched prices (and errors): fetch again when asked.
        """
        with self._lock:
            self._quotes.clear()

    @staticmethod
    def prices_url(market_url):
        """``GET`` URL of the current prices of a market endpoint."""
        return market_url.rstrip('/') + '/prices'

    def quote(self, market_url):
        """The market's current :class:`Quote` (fetched once per round).

        :raises MarketError: see the module docstring (the same error again
            for the rest of the round).
        """
        with self._lock:
            cached = self._quotes.get(market_url)
            if cached is None:
                try:
                    cached = self._fetch(market_url)
                except MarketError as exc:
                    cached = exc
                self._quotes[market_url] = cached
        if isinstance(cached, MarketError):
            raise MarketError(str(cached))
        return cached

    def flavor_price(self, market_url, pool, flavor):
        """``(p_i, quote)``: the spot price of ``flavor`` (currency/hour).

        :param flavor: an openstacksdk flavor (``name``, ``vcpus``, ``ram``
            in MB).
        :raises MarketError: see :meth:`Quote.price`.
        """
        quote = self.quote(market_url)
        name = getattr(flavor, 'name', None) or 'the flavor'
        return quote.price(pool, getattr(flavor, 'vcpus', None),
                           getattr(flavor, 'ram', None),
                           'flavor %s' % name), quote

    def _fetch(self, market_url):
        url = self.prices_url(market_url)
        try:
            api = api_client(self._session, market_url, self.timeout,
                             self._catalog)
            url = api.endpoint + '/v1/prices'
            doc = api.prices()
        except market_client.MarketError as exc:
            raise MarketError(why(exc, ' (market_url: the market\'s '
                                       'endpoint, e.g. http://market:8788/'
                                       'v1, or %s)' % CATALOG))
        prices = parse_prices(doc, 'GET %s' % url)
        period = doc.get('period_start')
        return Quote(url=market_url, period_start=period
                     if isinstance(period, str) else None, prices=prices)
