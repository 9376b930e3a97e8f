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
"""The one client of the opie-market REST API (service type
``spot-market``).

Every caller of the market API uses :class:`MarketClient`: the
``openstack spot`` plugin (:mod:`.osc`), the Tempest plugin's
``market_client``, the autoscaler's SLO controllers and spot prices
(:mod:`opie_sched.services.autoscaler.spot`, ``.policies``) and the
repacker's tabu strategy (:mod:`opie_sched.services.repacker.tabu`).

It imports only the standard library at module level (keystoneauth1 or
requests when a call is made), never nova: the ``[client]`` extra is
enough for it, the OSC plugin and the Tempest plugin.

Endpoint: an explicit URL (``--os-spot-endpoint``, ``[opie] market_endpoint``
of Tempest, the autoscaler's ``market_url``), else the ``spot-market``
entry of the Keystone catalog through the session
(:func:`catalog_endpoint`), at the interface(s) and region of the caller's
connection (:func:`connection_catalog`; the public endpoint of any region
when nothing is configured). Either may end in ``/v1`` or not.

Microversion: ``api_version`` (``'1.1'``, ``'latest'``, or None for the
server's minimum, 1.0) is sent as ``OpenStack-API-Version: spot-market
<version>`` on every request.

Errors: an answer >= 400 raises :class:`MarketAPIError` with the API-SIG
error's ``status``, ``code``, ``title``, ``detail`` and ``request_id``
(also the pre-1.1 ``{"error": {"message"}}`` body of older servers);
a transport failure raises :class:`MarketConnectionError`. Callers that
want the status instead subclass and override :meth:`MarketClient._result`
(the Tempest client does).

Amounts are JSON text (decimal strings) as the API sends them; parse them
with :class:`decimal.Decimal` (``parse_float=Decimal`` is used for any
number sent as JSON number).
"""

import decimal
import json

#: Service type of the market in the Keystone catalog.
SERVICE_TYPE = 'spot-market'
VERSION_HEADER = 'OpenStack-API-Version'
#: Newest microversion this client knows.
MAX_VERSION = '1.4'


class MarketError(Exception):
    """Any failure of a market API call."""


class MarketConnectionError(MarketError):
    """The market could not be reached (or did not answer in time)."""


class MarketAPIError(MarketError):
    """The market answered an error.

    :ivar status: HTTP status (int).
    :ivar code: API-SIG error code (e.g. ``spot-market.bad-request``).
    :ivar title: HTTP reason phrase.
    :ivar detail: what was wrong (the field, for 400).
    :ivar request_id: the server's request id (for its logs).
    """

    def __init__(self, method, url, status, body):
        self.method = method
        self.url = url
        self.status = status
        self.body = body
        err = {}
        if isinstance(body, dict):
            errors = body.get('errors')
            if isinstance(errors, list) and errors and isinstance(
                    errors[0], dict):
                err = errors[0]
            elif isinstance(body.get('error'), dict):
                old = body['error']
                err = {'detail': old.get('message'),
                       'title': old.get('title')}
        self.code = err.get('code')
        self.title = err.get('title')
        self.detail = err.get('detail') or (
            body if isinstance(body, str) else '')
        self.request_id = err.get('request_id')
        super().__init__('%s %s: HTTP %s: %s' % (method, url, status,
                                                 self.detail))


class Response:
    """One answer: ``status`` (int), ``body`` (parsed JSON or ``{}``),
    ``headers``.
    """

    def __init__(self, status, body, headers, method=None, url=None,
                 is_json=True):
        self.status = status
        self.body = body
        self.headers = headers
        self.method = method
        self.url = url
        self.is_json = is_json

    @property
    def version(self):
        """The microversion the server answered at (``'1.1'``) or None."""
        value = self.headers.get(VERSION_HEADER) if self.headers else None
        if not value:
            return None
        return value.split()[-1]


def catalog_endpoint(session, interface='public', region_name=None,
                     service_type=SERVICE_TYPE):
    """The market's URL from the Keystone catalog of ``session`` (a
    keystoneauth1 session with an auth plugin).

    :raises MarketError: no such entry.
    """
    try:
        url = session.get_endpoint(service_type=service_type,
                                   interface=interface,
                                   region_name=region_name)
    except Exception as exc:
        raise MarketError('no %s endpoint in the catalog: %s'
                          % (service_type, exc))
    if not url:
        raise MarketError('no %s endpoint (interface %s) in the catalog'
                          % (service_type, interface))
    return url


def connection_catalog(conn):
    """The catalog options of the market API in an openstacksdk
    Connection's configuration: ``{"interface": ..., "region_name": ...}``
    for :class:`MarketClient`.

    ``interface`` is ``conn.config.get_interface('spot-market')`` (a name
    or a list of names in order of preference, e.g. ``['internal']`` from
    ``[service_credentials] valid_interfaces``), ``'public'`` when unset;
    ``region_name`` is ``conn.config.get_region_name('spot-market')``
    (``[service_credentials] region_name``, a clouds.yaml entry's
    ``region_name``), None (any region) when unset.

    :param conn: ``openstack.connection.Connection`` or None (the
        defaults).
    """
    config = getattr(conn, 'config', None)
    interface = region = None
    if config is not None:
        interface = config.get_interface(SERVICE_TYPE)
        region = config.get_region_name(SERVICE_TYPE)
    if not (isinstance(interface, str) or (
            isinstance(interface, list) and interface)):
        interface = 'public'
    return {'interface': interface,
            'region_name': region if isinstance(region, str) and region
            else None}


def root_url(endpoint):
    """The API root of an endpoint URL (without a trailing ``/v1``)."""
    url = endpoint.rstrip('/')
    if url.endswith('/v1'):
        url = url[:-3]
    return url


class MarketClient:
    """Calls the market API.

    :param session: a keystoneauth1 session (adds the token; needed for
        the catalog), anything with its ``request(url, method, **kw)``, or
        None: plain ``requests`` without a token.
    :param endpoint: the market URL; None: the catalog's ``spot-market``.
    :param api_version: microversion to send (``'1.0'``, ``'1.1'``,
        ``'latest'``) or None (the server's minimum).
    :param interface: catalog interface (``public``, ``internal``...) or a
        list of them in order of preference; None: ``public``.
    :param region_name: catalog region; None: any.
    :param timeout: seconds per request, or None.
    """

    def __init__(self, session=None, endpoint=None, api_version=None,
                 interface='public', region_name=None, timeout=None):
        self.session = session
        self._endpoint = endpoint
        self.api_version = api_version
        self.interface = interface or 'public'
        self.region_name = region_name
        self.timeout = timeout

    @property
    def endpoint(self):
        """The API root (looked up in the catalog at first use)."""
        if not self._endpoint:
            if self.session is None:
                raise MarketError('no market endpoint and no session to '
                                  'look up %s in the catalog' % SERVICE_TYPE)
            self._endpoint = catalog_endpoint(
                self.session, self.interface, self.region_name)
        return root_url(self._endpoint)

    # -- transport ---------------------------------------------------------

    def request(self, method, path, body=None, params=None, version=None):
        """One call of ``<root>/v1<path>`` (``path`` ``''`` or ``/...``;
        an absolute ``/`` root path with ``path=None``): a
        :class:`Response` whatever the status.

        :raises MarketConnectionError: the market is unreachable.
        """
        url = self.endpoint + ('/' if path is None else '/v1' + path)
        headers = {'Accept': 'application/json'}
        version = version or self.api_version
        if version:
            headers[VERSION_HEADER] = '%s %s' % (SERVICE_TYPE, version)
        kwargs = {'headers': headers}
        if body is not None:
            kwargs['json'] = body
        if params:
            kwargs['params'] = {k: v for k, v in params.items()
                                if v is not None}
        if self.timeout is not None:
            kwargs['timeout'] = self.timeout
        try:
            resp = self._send(method, url, kwargs)
        except MarketError:
            raise
        except Exception as exc:
            # keystoneauth1 ConnectFailure/..., requests exceptions
            raise MarketConnectionError('%s %s failed: %s' % (
                method, url, ' '.join(str(exc).split())))
        text = getattr(resp, 'text', '') or ''
        is_json = True
        try:
            data = json.loads(text, parse_float=decimal.Decimal) \
                if text else {}
        except ValueError as exc:
            data, is_json = text, exc
        return Response(resp.status_code, data,
                        dict(getattr(resp, 'headers', {}) or {}), method,
                        url, is_json)

    def _send(self, method, url, kwargs):
        if self.session is None:
            import requests
            return requests.request(method, url, **kwargs)
        return self.session.request(url, method, raise_exc=False, **kwargs)

    def _result(self, resp, method, path, key=None):
        """The body (or its ``key``) of a success; raises
        :class:`MarketAPIError` otherwise. Subclasses may return something
        else (the Tempest client returns ``(status, body)``).
        """
        url = resp.url or path
        if resp.status >= 400 or resp.status < 200:
            raise MarketAPIError(method, url, resp.status, resp.body)
        if resp.is_json is not True:
            raise MarketError('%s %s: the answer is not JSON: %s'
                              % (method, url, resp.is_json))
        if key is None:
            return resp.body
        try:
            return resp.body[key]
        except (KeyError, TypeError):
            raise MarketError('%s %s: unexpected answer without %r: %r'
                              % (method, url, key, resp.body))

    def _call(self, method, path, key=None, body=None, params=None,
              version=None):
        resp = self.request(method, path, body, params, version)
        return self._result(resp, method, path, key)

    # -- resources ---------------------------------------------------------

    def versions(self):
        """The versions document (``GET /``, no token needed)."""
        resp = self.request('GET', None)
        return self._result(resp, 'GET', '/', 'versions')

    def prices(self):
        """``{"period_start", "period_seconds", "prices": [{"pool",
        "resource", "price", "unit"}]}`` of the newest period (currency
        per unit-hour).
        """
        return self._call('GET', '/prices')

    def price_history(self, start=None, end=None, pool=None, resource=None,
                      limit=None, marker=None):
        """Rows of ``GET /v1/prices/history`` (``limit``/``marker`` need
        1.1).
        """
        return self._call('GET', '/prices/history', 'history', params={
            'start': start, 'end': end, 'pool': pool, 'resource': resource,
            'limit': limit, 'marker': marker})

    def flavor_prices(self, vcpus, memory_mb, hours=None):
        """What a flavor of ``vcpus`` vCPUs and ``memory_mb`` MB costs per
        hour, now and over the last ``hours``, per pool and zone (1.1).
        """
        return self._call('GET', '/flavor-prices', 'flavor_prices',
                          params={'vcpus': vcpus, 'memory_mb': memory_mb,
                                  'hours': hours}, version=self._at_least(
                                      '1.1'))

    def get_bid(self, server_id):
        """The server's bid document (``bid`` decimal text or None)."""
        return self._call('GET', '/servers/%s/bid' % server_id, 'bid')

    def set_bid(self, server_id, bid):
        """Set the server's bid (currency per hour, decimal text)."""
        return self._call('PUT', '/servers/%s/bid' % server_id, 'bid',
                          body={'bid': bid})

    def unset_bid(self, server_id):
        """Remove the server's own bid (1.1)."""
        return self._call('DELETE', '/servers/%s/bid' % server_id, 'bid',
                          version=self._at_least('1.1'))

    def account(self, project_id=None):
        """The project's account (own project by default)."""
        return self._call('GET', '/account', 'account',
                          params={'project_id': project_id})

    def ledger(self, project_id=None, since=None, limit=None, marker=None):
        """Ledger entries, oldest first."""
        return self._call('GET', '/account/ledger', 'ledger', params={
            'project_id': project_id, 'since': since, 'limit': limit,
            'marker': marker})

    def notices(self, project_id=None, state=None, limit=None,
                marker=None):
        """The project's preemption notices (1.1)."""
        return self._call('GET', '/notices', 'notices', params={
            'project_id': project_id, 'state': state, 'limit': limit,
            'marker': marker}, version=self._at_least('1.1'))

    def placement_score(self, flavor, count=None, zone=None, bid=None):
        """Would ``count`` servers of ``flavor`` (name or ID) fit now, per
        availability zone (1.2): ``{"flavor", "count", "preemptible",
        "bid", "zones": [{"availability_zone", "status", "fit_now",
        "fit_preempting", "at_bid", "price_per_hour", "hosts"}]}``.
        """
        return self._call('GET', '/placement-score', 'placement_score',
                          params={'flavor': flavor, 'count': count,
                                  'zone': zone, 'bid': bid},
                          version=self._at_least('1.2'))

    def interruption_history(self, flavor, zone=None, since=None,
                             period_seconds=None):
        """Interruption rates per period and the survival curve of
        ``flavor``'s servers (1.2).
        """
        return self._call('GET', '/interruption-history',
                          'interruption_history', params={
                              'flavor': flavor, 'zone': zone,
                              'since': since,
                              'period_seconds': period_seconds},
                          version=self._at_least('1.2'))

    def events(self, project_id=None, server_id=None, limit=None,
               marker=None):
        """The project's event history, oldest first (1.2)."""
        return self._call('GET', '/events', 'events', params={
            'project_id': project_id, 'server_id': server_id,
            'limit': limit, 'marker': marker},
            version=self._at_least('1.2'))

    def interruption_drill(self, server_id, notice_seconds=None):
        """Send one's own preemptible server through an interruption
        drill (1.3): ``{"server_id", "project_id", "kind", "state",
        "noticed_at", "deadline", "notice_seconds", "action", "reason"}``.
        A 429 (the project's drill limit) raises :class:`MarketAPIError`
        whose ``detail`` says when to retry.
        """
        body = {}
        if notice_seconds is not None:
            body['notice_seconds'] = int(notice_seconds)
        return self._call('POST', '/servers/%s/interruption-drill'
                          % server_id, 'interruption_drill', body=body,
                          version=self._at_least('1.3'))

    def interruption_ack(self, server_id):
        """Acknowledge the preemption notice pending on one's own server
        (1.4): its interruption runs now. ``{"server_id", "project_id",
        "notice" ("market" or "scheduler"), "kind", "noticed_at",
        "deadline" (null for the scheduler's), "acknowledged_at",
        "action"}``. No notice pending: :class:`MarketAPIError` 409.
        """
        return self._call('POST', '/servers/%s/interruption-ack'
                          % server_id, 'interruption_ack', body={},
                          version=self._at_least('1.4'))

    def credit(self, project_id, amount, note=None):
        """Grant ``amount`` (currency) to a project (admin)."""
        body = {'amount': amount}
        if note:
            body['note'] = note
        return self._call('POST', '/accounts/%s/credit' % project_id,
                          'entry', body=body)

    def shares(self):
        """``GET /v1/shares`` (admin, service)."""
        return self._call('GET', '/shares')

    def set_reserve_prices(self, prices, pool=None):
        """Set reserve prices ``{resource: price}`` (admin)."""
        body = {'reserve_price': prices}
        if pool:
            body['pool'] = pool
        return self._call('PUT', '/reserve-price', 'reserve_price',
                          body=body)

    def all_pages(self, method, *args, **kwargs):
        """Every row of a paginated list method (``ledger``, ``notices``,
        ``price_history``, ``events``), following markers.
        """
        rows = []
        marker = kwargs.pop('marker', None)
        while True:
            page = getattr(self, method)(*args, marker=marker, **kwargs)
            rows.extend(page)
            if not page or not kwargs.get('limit') or \
                    len(page) < int(kwargs['limit']) or \
                    'id' not in page[-1]:
                return rows
            marker = page[-1]['id']

    def _at_least(self, version):
        """The microversion to send for a call that needs ``version``:
        the configured one when it is as new (``latest`` included),
        ``version`` when none is configured.

        :raises MarketError: the configured microversion is older.
        """
        mine = self.api_version
        if not mine:
            return version
        if mine == 'latest' or _tuple(mine) >= _tuple(version):
            return mine
        raise MarketError('this call needs spot-market API microversion '
                          '%s or later (asked: %s)' % (version, mine))


def _tuple(version):
    try:
        major, minor = version.split('.', 1)
        return int(major), int(minor)
    except ValueError:
        raise MarketError('not a microversion X.Y: %r' % (version,))
