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
"""The opie-market REST API (service type ``spot-market``).

Resources (JSON; money, bids and prices as decimal text -- bids in
currency per hour, prices in currency per unit-hour; times ISO 8601 UTC)::

    GET    /                            versions document (no token)
    GET    /v1                          this version (no token)
    GET    /v1/prices                   prices of the newest period
    GET    /v1/prices/history?start=&end=[&pool=][&resource=]
    GET    /v1/flavor-prices?vcpus=&memory_mb=[&hours=24]        (1.1)
    GET    /v1/servers/{server_id}/bid  the server's bid
    PUT    /v1/servers/{server_id}/bid  {"bid": "0.5"}
    DELETE /v1/servers/{server_id}/bid  back to the flavor/default bid (1.1)
    GET    /v1/account[?project_id=]    own account (admin: any)
    GET    /v1/account/ledger[?project_id=][&since=][&limit=][&marker=]
    GET    /v1/notices[?project_id=][&state=][&limit=][&marker=]  (1.1)
    POST   /v1/accounts/{project_id}/credit   {"amount": "10", "note": ""}
    GET    /v1/shares                   per-host shares and allocation
                                        errors (admin, service; Merkat §3.1)
    PUT    /v1/reserve-price            {"reserve_price": {"vcpus": "0.01"},
                                         "pool": "*"}   (admin)
    GET    /v1/placement-score?flavor=[&count=1][&zone=][&bid=]   (1.2)
    GET    /v1/interruption-history?flavor=[&zone=][&since=]
                                    [&period_seconds=86400]       (1.2)
    GET    /v1/events[?project_id=][&server_id=][&limit=][&marker=] (1.2)
    POST   /v1/servers/{server_id}/interruption-drill
                                    [{"notice_seconds": 60}]      (1.3)
    POST   /v1/servers/{server_id}/interruption-ack   [{}]     (1.4)

**Microversions.** A request names the version it speaks with the header
``OpenStack-API-Version: spot-market 1.1`` (or ``latest``); without it,
1.0. The answer carries the version it was served at in the same header.
A version outside ``[MIN_VERSION, MAX_VERSION]`` gets 406, a malformed
one 400. History (:data:`VERSIONS`): 1.0 the original API; 1.1 adds
``DELETE .../bid``, ``/v1/notices``, ``/v1/flavor-prices``, and marker
pagination (``limit``, ``marker``, a ``<list>_links`` next link, default
page :data:`MAX_LIMIT`) on the ledger, the notices and the price history;
ledger entries, notices and history rows get an ``id`` (the marker).
1.2 adds ``/v1/placement-score``, ``/v1/interruption-history`` and
``/v1/events`` (the owner's event history). 1.3 adds ``POST
/v1/servers/{server_id}/interruption-drill`` (an owner's interruption
drill). 1.4 adds ``POST /v1/servers/{server_id}/interruption-ack`` (an
owner acknowledges a pending notice: the interruption runs now).
A resource asked at an older version than its own is 404, as if it did
not exist.

**Validation.** Bodies and query strings are checked against the JSON
schemas of :mod:`.schemas` before anything is read or changed; a mismatch
is 400 naming the field.

**Errors** follow the API-SIG errors guideline::

    {"errors": [{"status": 400, "code": "spot-market.bad-request",
                 "title": "Bad Request", "detail": "bid: ...",
                 "request_id": "req-..."}]}

and every answer carries ``X-OpenStack-Request-ID``.

Authorization is oslo.policy (:mod:`.policy`, secure-RBAC personas) on the
request context that keystonemiddleware's ``auth_token`` (or, for tests,
:class:`NoAuth`) leaves in the headers. A project asking for another
project's server gets 404, as if it did not exist; another project's
account, ledger or notices, 403.

Setting a bid writes server metadata ``opie:bid`` through openstacksdk
(the market's admin connection), where the engine reads it at the next
period (Merkat §2.3: users may change their bid at any time).

The API applies the engine's rule, from the same function
(:func:`opie_sched.market.outbid.assess`): a server's bid document
carries its position in the newest period (``share``, ``minimum`` = its
flavor, ``out_of_bid``, ``charge_per_hour``), and ``/v1/shares`` adds the
same fields to every row. A server is out of bid only when its share no
longer covers its flavor under contention (or its bid is below the
reserve cost of its flavor); it pays what its share costs.
"""

import dataclasses
import decimal
import json
import time
from urllib import parse as urlparse
import uuid as uuidlib

import microversion_parse
from oslo_context import context as oslo_context
from oslo_log import log as logging
from oslo_policy import policy as oslo_policy
from oslo_utils import timeutils
import routes
import webob
import webob.dec
import webob.exc

from opie_sched.common import flavors as market_flavors
from opie_sched.market import bids as market_bids
from opie_sched.market import budget
from opie_sched.market import pricing
from opie_sched.services.market.api import policy
from opie_sched.services.market.api import schemas
from opie_sched.services.market import charging
from opie_sched.services.market import cloud as market_cloud
from opie_sched.services.market.db import api as db_api
from opie_sched.services.market.db import models
from opie_sched.services.market import enforcement
from opie_sched.services.market import opts
from opie_sched.services.market import pricer as market_pricer
from opie_sched.services.market import score as market_score
from opie_sched.services.market import settings as market_settings
from opie_sched.services.market import survival

LOG = logging.getLogger(__name__)

#: Service type in the Keystone catalog and the microversion header.
SERVICE_TYPE = 'spot-market'
VERSION_HEADER = 'OpenStack-API-Version'
REQUEST_ID_HEADER = 'X-OpenStack-Request-ID'
#: Oldest and newest microversion served.
MIN_VERSION = microversion_parse.Version(1, 0)
MAX_VERSION = microversion_parse.Version(1, 4)
#: What each microversion added.
VERSIONS = {
    '1.0': 'The original API.',
    '1.1': 'DELETE /v1/servers/{id}/bid, GET /v1/notices, GET '
           '/v1/flavor-prices; marker pagination (limit, marker, '
           '<list>_links) and an id on ledger entries, notices and price '
           'history rows.',
    '1.2': 'GET /v1/placement-score, GET /v1/interruption-history, GET '
           '/v1/events.',
    '1.3': 'POST /v1/servers/{id}/interruption-drill (an owner\'s '
           'interruption drill: at-risk mark, notice, the flavor\'s '
           'behaviour; rate-limited per project, 429 with Retry-After).',
    '1.4': 'POST /v1/servers/{id}/interruption-ack (the owner '
           'acknowledges a pending notice, the market\'s or the '
           'scheduler\'s: the flavor\'s interruption behaviour runs now '
           'and a boot waiting on the server proceeds).',
}
V1_1 = microversion_parse.Version(1, 1)
V1_2 = microversion_parse.Version(1, 2)
V1_3 = microversion_parse.Version(1, 3)
V1_4 = microversion_parse.Version(1, 4)

VERSION = {'id': 'v1', 'status': 'CURRENT',
           'min_version': '%d.%d' % MIN_VERSION,
           'version': '%d.%d' % MAX_VERSION,
           'updated': '2026-11-28T00:00:00Z'}

#: Largest page of a list (and the default page at 1.1).
MAX_LIMIT = 1000
#: Longest look-back of /v1/flavor-prices, hours.
MAX_HOURS = 24 * 31
#: Most servers one placement score is asked for.
MAX_COUNT = 1000
#: Default look-back of /v1/interruption-history, seconds (30 days), and
#: its default period (a day); at most MAX_PERIODS periods.
HISTORY_WINDOW = 30 * 86400
HISTORY_PERIOD = 86400
MAX_PERIODS = 1000


class ApiError(Exception):
    """An error answer: ``code`` (HTTP status), ``message`` (the API-SIG
    ``detail``), an optional ``error_code`` (the API-SIG ``code``,
    default ``spot-market.<title>``) and ``headers`` to add (e.g.
    ``Retry-After`` of a 429).
    """

    def __init__(self, code, message, error_code=None, headers=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.error_code = error_code
        self.headers = dict(headers or {})


def bad_request(message, error_code=None):
    return ApiError(400, message, error_code)


def error_body(status, detail, request_id, error_code=None):
    """The API-SIG error document of one error."""
    title = webob.exc.status_map[status].title
    return {'errors': [{
        'status': status,
        'code': error_code or '%s.%s' % (
            SERVICE_TYPE, title.lower().replace(' ', '-')),
        'title': title, 'detail': detail, 'request_id': request_id}]}


def _json_default(value):
    if isinstance(value, decimal.Decimal):
        return format(value, 'f')
    raise TypeError(repr(value))


def parse_time(value, what):
    """Epoch seconds from ISO 8601 text or a number of seconds.

    :raises ApiError: 400 when ``value`` is neither.
    """
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return timeutils.parse_isotime(value).timestamp()
    except ValueError:
        raise bad_request('%s: not an ISO 8601 time or epoch seconds: %r'
                          % (what, value))


def _decimal_field(value, what, minimum=0):
    try:
        result = pricing.as_decimal(value.strip() if isinstance(value, str)
                                    else value)
    except (decimal.InvalidOperation, TypeError, ValueError):
        raise bad_request('%s: not a number: %r' % (what, value))
    if not result.is_finite() or result < minimum:
        raise bad_request('%s: must be a finite number >= %s, got %r'
                          % (what, minimum, value))
    return result


def _body(req, schema):
    """The request's JSON body, checked against ``schema``."""
    try:
        body = json.loads(req.body or b'null')
    except ValueError as exc:
        raise bad_request('request body is not valid JSON: %s' % exc)
    if not isinstance(body, dict):
        raise bad_request('request body must be a JSON object')
    try:
        schemas.validate(schema, body)
    except schemas.ValidationError as exc:
        raise bad_request(str(exc))
    return body


def _query(req, properties, paginated=False, required=()):
    """The query string as ``{name: text}``, checked against a schema."""
    params = {}
    for name, value in req.GET.items():
        if name in params:
            raise bad_request('query parameter %s given twice' % name)
        params[name] = value
    unknown = sorted(set(params) - set(properties) - (
        set(schemas.PAGINATION) if paginated else set()))
    if unknown:
        raise bad_request('unknown query parameters: %s'
                          % ', '.join(unknown))
    try:
        schemas.validate(schemas.query(properties, paginated, required),
                         params)
    except schemas.ValidationError as exc:
        raise bad_request(str(exc))
    return params


def _entry_id(entry):
    key = entry.key
    return '%s:%s:%s' % (key.kind, key.server or '',
                         db_api.key_text(key.period_start))


def _entry_json(entry, posted_at=None, with_id=False):
    key = entry.key
    when = key.period_start
    body = {'kind': key.kind, 'project_id': key.project,
            'server_id': key.server,
            'period_start' if key.kind != budget.KIND_CREDIT
            else 'granted_at': market_cloud.iso(when),
            'amount': entry.amount, 'balance': entry.balance,
            'period_seconds': entry.period_seconds, 'note': entry.note,
            'posted_at': None if posted_at is None
            else market_cloud.iso(posted_at)}
    if with_id:
        body['id'] = _entry_id(entry)
    return body


def _account_json(account):
    return {'project_id': account.project, 'balance': account.balance,
            'refill_rate': account.refill_rate, 'cap': account.cap}


def _notice_json(n, with_id=False):
    body = {'server_id': n['server_uuid'], 'kind': n['kind'],
            'reason': n['reason'], 'state': n['state'],
            'deadline': market_cloud.iso(n['deadline'])}
    if with_id:
        body.update(id=n['server_uuid'], project_id=n['project'],
                    noticed_at=market_cloud.iso(n['noticed_at']),
                    action=n.get('action'))
    return body


def _require_active(info, server_id, needs):
    """Raise 409 ``spot-market.server-not-active`` unless the server
    ``info`` is ACTIVE with no task; ``needs`` (text) says why it must be.
    """
    if info.status != 'ACTIVE' or info.busy:
        raise ApiError(409, 'server %s is %s%s: %s' % (
            server_id, info.status,
            ' (task %s)' % info.task_state if info.task_state else '',
            needs), 'spot-market.server-not-active')


def _history_id(row):
    return '%s:%s:%s' % (db_api.key_text(row['period_start']), row['pool'],
                         row['resource'])


class Request(webob.Request):
    """A request with its ``version`` (microversion) and ``request_id``."""

    version = MIN_VERSION
    request_id = None


class ZoneLookup:
    """``{compute host: availability zone}`` from Nova
    (``os-availability-zone/detail``, admin), through openstacksdk.
    """

    def __init__(self, conn):
        self.conn = conn

    def __call__(self):
        zones = {}
        for az in self.conn.compute.availability_zones(details=True):
            for host, services in (az.hosts or {}).items():
                if 'nova-compute' in (services or {}):
                    zones[host] = az.name
        return zones


class FlavorLookup:
    """``flavor name or ID -> {"id", "name", "vcpus", "ram", "disk_gb",
    "extra_specs"}`` (None when Nova has no such flavor) from Nova,
    through openstacksdk (the market's admin connection: private flavors
    are found too; what the caller may boot is Nova's business).
    """

    def __init__(self, conn):
        self.conn = conn

    def __call__(self, name_or_id):
        from openstack import exceptions as sdk_exc
        compute = self.conn.compute
        try:
            flavor = compute.find_flavor(name_or_id, ignore_missing=True,
                                         get_extra_specs=True)
        except sdk_exc.NotFoundException:
            return None
        if flavor is None:
            return None
        return {'id': flavor.id, 'name': flavor.name,
                'vcpus': int(flavor.vcpus or 0), 'ram': int(flavor.ram or 0),
                'disk_gb': market_flavors.disk_gb(flavor.disk,
                                                  flavor.ephemeral,
                                                  flavor.swap),
                'extra_specs': dict(flavor.extra_specs or {})}


class ProviderRead:
    """The one read of the placement score: query parameters
    (:func:`.score.placement_params`) -> ``{compute host: provider
    summary}``.

    One ``GET /allocation_candidates?resources=...`` (Placement
    microversion 1.36: ``provider_summaries`` carry ``capacity`` and
    ``used`` of every resource class of each candidate provider, the
    figures the scheduler gets for a boot; no per-host call) and one
    ``GET /os-hypervisors/detail`` (compute 2.53: the hypervisor id is
    the provider's uuid) to name each provider's compute service host.
    """

    def __init__(self, conn):
        self.conn = conn

    def __call__(self, params):
        resp = self.conn.placement.get(
            '/allocation_candidates', params=params, microversion='1.36')
        resp.raise_for_status()
        summaries = resp.json().get('provider_summaries') or {}
        resp = self.conn.compute.get('/os-hypervisors/detail',
                                     microversion='2.53')
        resp.raise_for_status()
        hosts = {}
        for hv in resp.json().get('hypervisors', []):
            host = (hv.get('service') or {}).get('host')
            if host and str(hv.get('id')) in summaries:
                hosts[host] = summaries[str(hv['id'])]
        return hosts


class MarketAPI:
    """The controllers; each returns ``(status, body)``.

    :param store: :class:`opie_sched.services.market.db.api.MarketStore`.
    :param cloud: :class:`opie_sched.services.market.cloud.Cloud` (admin).
    :param settings: :class:`opie_sched.services.market.settings.Settings`.
    :param enforcer: oslo.policy Enforcer (:func:`.policy.enforcer`).
    :param zones: callable returning ``{host: availability zone}``
        (default: :class:`ZoneLookup` on ``cloud.conn``).
    :param flavors: :class:`FlavorLookup`-like callable (default on
        ``cloud.conn``).
    :param providers: :class:`ProviderRead`-like callable (default on
        ``cloud.conn``).
    """

    def __init__(self, store, cloud, settings, enforcer, clock=time.time,
                 zones=None, flavors=None, providers=None):
        self.store = store
        self.cloud = cloud
        self.settings = settings
        self.enforcer = enforcer
        self.clock = clock
        self.zones = zones if zones is not None else ZoneLookup(
            getattr(cloud, 'conn', None))
        self.flavors = flavors if flavors is not None else FlavorLookup(
            getattr(cloud, 'conn', None))
        self.providers = providers if providers is not None else (
            ProviderRead(getattr(cloud, 'conn', None)))
        self.credit = budget.CreditManager(store)
        self.mapper = routes.Mapper()
        #: (method, path template, first microversion or None)
        self.routes = []
        self._since = {}
        for method, path, action, since in (
                ('GET', '/', 'versions', None),
                ('GET', '/v1', 'version', None),
                ('GET', '/v1/prices', 'prices', None),
                ('GET', '/v1/prices/history', 'history', None),
                ('GET', '/v1/flavor-prices', 'flavor_prices', V1_1),
                ('GET', '/v1/servers/{server_id}/bid', 'get_bid', None),
                ('PUT', '/v1/servers/{server_id}/bid', 'set_bid', None),
                ('DELETE', '/v1/servers/{server_id}/bid', 'unset_bid',
                 V1_1),
                ('GET', '/v1/account', 'account', None),
                ('GET', '/v1/account/ledger', 'ledger', None),
                ('GET', '/v1/notices', 'notices', V1_1),
                ('POST', '/v1/accounts/{project_id}/credit', 'grant', None),
                ('PUT', '/v1/reserve-price', 'reserve', None),
                ('GET', '/v1/shares', 'shares', None),
                ('GET', '/v1/placement-score', 'placement_score', V1_2),
                ('GET', '/v1/interruption-history', 'interruption_history',
                 V1_2),
                ('GET', '/v1/events', 'events', V1_2),
                ('POST', '/v1/servers/{server_id}/interruption-drill',
                 'interruption_drill', V1_3),
                ('POST', '/v1/servers/{server_id}/interruption-ack',
                 'interruption_ack', V1_4)):
            self.mapper.connect(path, action=action,
                                conditions={'method': [method]})
            self.routes.append((method, path, since))
            self._since[action] = since

    # -- plumbing ----------------------------------------------------------

    @property
    def pricer(self):
        """The engine's pricing code (:class:`.pricer.Pricer`) on this
        API's store, cloud and settings: what the API shows is what the
        engine computes.
        """
        return market_pricer.Pricer(self.store, self.cloud, self.settings,
                                    self.credit)

    @webob.dec.wsgify(RequestClass=Request)
    def __call__(self, req):
        req.request_id = req.environ.get('openstack.request_id') or (
            'req-%s' % uuidlib.uuid4())
        path = req.path_info.rstrip('/') or '/'
        headers = {}
        try:
            req.version = self._version(req)
            headers[VERSION_HEADER] = '%s %d.%d' % ((SERVICE_TYPE,)
                                                    + req.version)
            match = self.mapper.match(path, {'REQUEST_METHOD': req.method})
            since = match and self._since[match['action']]
            if since is not None and req.version < since:
                match = None
            if match is None:
                if any(self.mapper.match(path, {'REQUEST_METHOD': m})
                       for m in ('GET', 'PUT', 'POST', 'DELETE')) and \
                        not self._new_route(path, req.version):
                    raise ApiError(405, 'method %s not allowed on %s'
                                   % (req.method, path))
                raise ApiError(404, 'no resource %s' % path)
            action = match.pop('action')
            ctx = oslo_context.RequestContext.from_environ(
                req.environ, overwrite=False)
            status, body = getattr(self, action)(req, ctx, **match)
        except ApiError as exc:
            headers.update(exc.headers)
            status = exc.code
            body = error_body(exc.code, exc.message, req.request_id,
                              exc.error_code)
        except Exception:
            LOG.exception('%s %s failed (%s)', req.method, req.path,
                          req.request_id)
            status, body = 500, error_body(
                500, 'the market API failed; see its log', req.request_id)
        resp = webob.Response(status=status, content_type='application/json',
                              charset='utf-8')
        resp.headers[REQUEST_ID_HEADER] = req.request_id
        resp.headers['Vary'] = VERSION_HEADER
        resp.headers.update(headers)
        resp.text = json.dumps(body, default=_json_default)
        return resp

    def _new_route(self, path, version):
        """True when ``path`` exists only at a version newer than
        ``version`` (then it is 404, not 405).
        """
        found = [self._since[m['action']] for m in (
            self.mapper.match(path, {'REQUEST_METHOD': method})
            for method in ('GET', 'PUT', 'POST', 'DELETE')) if m]
        return all(s is not None and version < s for s in found)

    @staticmethod
    def _version(req):
        """The microversion asked (``MIN_VERSION`` when none).

        :raises ApiError: 400 malformed, 406 outside the served range.
        """
        text = microversion_parse.get_version(req.headers, SERVICE_TYPE)
        if text is None:
            return MIN_VERSION
        if text.strip().lower() == 'latest':
            return MAX_VERSION
        try:
            version = microversion_parse.parse_version_string(text)
        except TypeError:
            raise bad_request('%s: not a version "spot-market X.Y": %r'
                              % (VERSION_HEADER, text),
                              'spot-market.invalid-version')
        if not MIN_VERSION <= version <= MAX_VERSION:
            raise ApiError(406, 'version %s is not supported (minimum '
                           '%d.%d, maximum %d.%d)' % ((text,) + MIN_VERSION
                                                     + MAX_VERSION),
                           'spot-market.version-not-acceptable')
        return version

    def authorize(self, ctx, rule, target, hide=False):
        """Enforce ``rule``; 403 (or 404 when ``hide``) if denied."""
        try:
            self.enforcer.authorize(rule, target, ctx.to_policy_values(),
                                    do_raise=True)
        except (oslo_policy.PolicyNotAuthorized, oslo_policy.InvalidScope):
            if hide:
                raise ApiError(404, 'server %s not found'
                               % target.get('server_id'))
            raise ApiError(403, 'policy %s does not allow this' % rule)

    def _project(self, req, ctx):
        """The project asked for: own, or ``?project_id=`` (policy)."""
        project = req.params.get('project_id') or ctx.project_id
        if not project:
            raise ApiError(401, 'the request has no project')
        return project

    def _server(self, ctx, server_id, rule):
        """The server if policy allows ``rule`` on it, else 404 (as when
        it does not exist: no probing of other projects' servers).
        """
        info = self.cloud.get_server(server_id)
        if info is None:
            raise ApiError(404, 'server %s not found' % server_id)
        self.authorize(ctx, rule, {'project_id': info.project,
                                   'server_id': server_id}, hide=True)
        return info

    def _enforcer(self):
        """An :class:`.enforcement.Enforcer` on this API's store, cloud,
        settings, credit and pricer.
        """
        return enforcement.Enforcer(
            self.store, self.cloud, self.settings, self.credit, self.pricer,
            charging.Charger(self.settings, self.credit))

    def _forbidden_or_hidden(self, ctx, info, rule, read_rule):
        """Enforce ``rule`` on a server the caller may read: a reader of
        its project gets 403; one who may not even read it, 404.
        """
        target = {'project_id': info.project, 'server_id': info.uuid}
        try:
            self.enforcer.authorize(rule, target, ctx.to_policy_values(),
                                    do_raise=True)
        except (oslo_policy.PolicyNotAuthorized, oslo_policy.InvalidScope):
            self.authorize(ctx, read_rule, target, hide=True)
            raise ApiError(403, 'policy %s does not allow this' % rule)

    @staticmethod
    def _limit(req):
        """``?limit=`` (default :data:`MAX_LIMIT`).

        :raises ApiError: 400 for a limit out of 1..MAX_LIMIT.
        """
        limit = MAX_LIMIT
        if req.params.get('limit'):
            limit = int(req.params['limit'])
            if not 1 <= limit <= MAX_LIMIT:
                raise bad_request('limit: must be an integer from 1 to %d, '
                                  'got %r' % (MAX_LIMIT,
                                              req.params['limit']))
        return limit

    @staticmethod
    def _links(req, page, more, key, limit):
        """``[next link]`` when ``more`` rows follow ``page``, else []."""
        if not (page and more):
            return []
        params = dict(req.GET.items(), marker=key(page[-1]),
                      limit=str(limit))
        return [{'rel': 'next', 'href': '%s?%s' % (
            req.path_url, urlparse.urlencode(sorted(params.items())))}]

    @staticmethod
    def _no_marker(name, marker):
        return bad_request('marker: no %s %r' % (name, marker),
                           'spot-market.marker-not-found')

    # -- versions ----------------------------------------------------------

    def _version_doc(self, req):
        doc = dict(VERSION, links=[
            {'rel': 'self', 'href': req.application_url.rstrip('/') +
             '/v1/'},
            {'rel': 'describedby', 'type': 'text/html',
             'href': 'https://docs.openstack.org/opie_sched/latest/'
                     'api-ref/'}],
            media_types=[{'base': 'application/json',
                          'type': 'application/vnd.openstack.'
                                  'spot-market-v1+json'}])
        return doc

    def versions(self, req, ctx):
        return 200, {'versions': [self._version_doc(req)]}

    def version(self, req, ctx):
        return 200, {'version': self._version_doc(req)}

    # -- prices --------------------------------------------------------------

    @staticmethod
    def _price_rows(prices):
        return [{'pool': pool, 'resource': r, 'price': prices[pool][r],
                 'unit': 'per %s-hour' % pricing.UNITS.get(r, r)}
                for pool in sorted(prices)
                for r in pricing.order_resources(prices[pool])]

    def prices(self, req, ctx):
        self.authorize(ctx, policy.PRICES_LIST, {'project_id':
                                                 ctx.project_id})
        _query(req, schemas.EMPTY_QUERY)
        period = self.store.latest_period()
        if period is None:
            return 200, {'period_start': None, 'period_seconds': None,
                         'prices': []}
        ps = period['period_start']
        return 200, {'period_start': market_cloud.iso(ps),
                     'period_seconds': period['period_seconds'],
                     'prices': self._price_rows(self.store.period_prices(ps))}

    def _time_range(self, params):
        start = end = None
        if params.get('start'):
            start = parse_time(params['start'], 'start')
        if params.get('end'):
            end = parse_time(params['end'], 'end')
        if start is not None and end is not None and start > end:
            raise bad_request('start (%s) is after end (%s)'
                              % (params['start'], params['end']))
        return start, end

    def history(self, req, ctx):
        self.authorize(ctx, policy.PRICES_HISTORY, {'project_id':
                                                    ctx.project_id})
        paginated = req.version >= V1_1
        params = _query(req, schemas.HISTORY_QUERY, paginated)
        start, end = self._time_range(params)
        links = None
        if paginated:
            limit = self._limit(req)
            marker = req.params.get('marker')
            key = None
            if marker:
                ps, _, rest = marker.partition(':')
                pool, _, resource = rest.rpartition(':')
                key = (int(ps) if ps.isdigit() else -1, pool, resource)
            try:
                rows, more = self.store.price_history_page(
                    start, end, params.get('pool'), params.get('resource'),
                    key, limit)
            except db_api.MarkerNotFound:
                raise self._no_marker('price history row', marker)
            links = self._links(req, rows, more, _history_id, limit)
        else:
            rows = self.store.price_history(start, end, params.get('pool'),
                                            params.get('resource'))
        out = []
        for r in rows:
            row = {'period_start': market_cloud.iso(r['period_start']),
                   'period_seconds': r['period_seconds'], 'pool': r['pool'],
                   'resource': r['resource'], 'price': r['price'],
                   'capacity': r['capacity'], 'bids': r['bids']}
            if paginated:
                row['id'] = _history_id(r)
            out.append(row)
        body = {'history': out}
        if links is not None:
            body['history_links'] = links
        return 200, body

    def flavor_prices(self, req, ctx):
        """What a server of ``vcpus`` vCPUs and ``memory_mb`` MB costs per
        hour (``sum_r price_r * amount_r``, currency/hour, the same sum the
        engine charges a share that covers the flavor) in each pool, now
        and over the last ``hours`` (default 24): per availability zone of
        the pool's hosts (zones as Nova reports them now).
        """
        self.authorize(ctx, policy.FLAVOR_PRICE_SHOW, {'project_id':
                                                       ctx.project_id})
        params = _query(req, schemas.FLAVOR_PRICE_QUERY,
                        required=('vcpus', 'memory_mb'))
        amounts = {pricing.VCPUS: int(params['vcpus']),
                   pricing.MEMORY_MB: int(params['memory_mb'])}
        hours = int(params.get('hours') or 24)
        if not 1 <= hours <= MAX_HOURS:
            raise bad_request('hours: must be from 1 to %d, got %d'
                              % (MAX_HOURS, hours))
        now = self.clock()
        rows = self.store.price_history(now - hours * 3600, None)
        by_period = {}
        for r in rows:
            by_period.setdefault((r['pool'], r['period_start']), {})[
                r['resource']] = r['price']
        series = {}
        for (pool, ps), prices in sorted(by_period.items()):
            if set(prices) >= set(amounts):
                total = sum((prices[r] * amounts[r] for r in amounts),
                            pricing.ZERO)
                series.setdefault(pool, []).append((ps, total))
        hosts = self.cloud.hosts()
        pool_of = self.pricer.pool_of(hosts)
        zone_of = self.zones() if hosts else {}
        pool_zones = {}
        for host, pool in pool_of.items():
            pool_zones.setdefault(pool, set()).add(zone_of.get(host))
        latest = self.store.latest_period()
        out = []
        for pool in sorted(set(series) | set(pool_zones)):
            points = series.get(pool, [])
            values = [v for _, v in points]
            now_price = None
            if latest is not None and points and points[-1][0] == latest[
                    'period_start']:
                now_price = points[-1][1]
            summary = {
                'pool': pool, 'price_per_hour': now_price,
                'min_per_hour': min(values) if values else None,
                'max_per_hour': max(values) if values else None,
                'mean_per_hour': (sum(values, pricing.ZERO) / len(values))
                if values else None,
                'periods': len(values),
                'history': [{'period_start': market_cloud.iso(ps),
                             'price_per_hour': v} for ps, v in points]}
            for zone in sorted(pool_zones.get(pool, {None}),
                               key=lambda z: (z is None, z or '')):
                out.append(dict(summary, availability_zone=zone))
        return 200, {'flavor_prices': {
            'vcpus': amounts[pricing.VCPUS],
            'memory_mb': amounts[pricing.MEMORY_MB], 'hours': hours,
            'period_start': None if latest is None
            else market_cloud.iso(latest['period_start']),
            'zones': out}}

    # -- bids ----------------------------------------------------------------

    def _position(self, uuid):
        """The server's position in the newest period, or None."""
        period = self.store.latest_period()
        if period is None:
            return None
        for market in self.pricer.assess(period['period_start']).values():
            if uuid in market.positions:
                return market_pricer.position_json(
                    market.positions[uuid], period['period_start'])
        return None

    def _bid_json(self, info, position=False):
        body = {'server_id': info.uuid, 'project_id': info.project}
        if position:
            body['market'] = self._position(info.uuid)
        try:
            bid, source = market_bids.resolve_bid(
                info.metadata, info.extra_specs, self.settings.default_bid,
                self.settings.bid_cap)
            body.update(bid=bid, source=source, error=None)
        except market_bids.BidError as exc:
            body.update(bid=None, source=None, error=str(exc))
        body['notice'] = info.metadata.get(enforcement.NOTICE_KEY)
        return body

    def get_bid(self, req, ctx, server_id):
        _query(req, schemas.EMPTY_QUERY)
        info = self._server(ctx, server_id, policy.BID_SHOW)
        return 200, {'bid': self._bid_json(info, position=True)}

    def _preemptible_server(self, ctx, server_id, rule):
        info = self.cloud.get_server(server_id)
        if info is None:
            raise ApiError(404, 'server %s not found' % server_id)
        self._forbidden_or_hidden(ctx, info, rule, policy.BID_SHOW)
        if not info.preemptible:
            raise bad_request('server %s is not preemptible: it has no bid'
                              % server_id)
        return info

    def set_bid(self, req, ctx, server_id):
        body = _body(req, schemas.BID_UPDATE)
        try:
            bid = market_bids.parse_bid(body['bid'], self.settings.bid_cap,
                                        'bid')
        except market_bids.BidError as exc:
            raise bad_request(str(exc))
        info = self._preemptible_server(ctx, server_id, policy.BID_UPDATE)
        text = format(bid, 'f')
        self.cloud.set_metadata(server_id, {market_bids.BID_KEY: text})
        self.store.set_bid(server_id, info.project, bid,
                           market_bids.SOURCE_METADATA)
        LOG.info('server %s (project %s): bid set to %s by %s', server_id,
                 info.project, text, ctx.user_id)
        info = dataclasses.replace(info, metadata=dict(
            info.metadata, **{market_bids.BID_KEY: text}))
        return 200, {'bid': self._bid_json(info)}

    def unset_bid(self, req, ctx, server_id):
        """Remove the server's ``opie:bid``: its bid is its flavor's
        ``opie:bid`` extra spec, else ``[opie_market] default_bid``, from
        the next period (microversion 1.1).
        """
        _query(req, schemas.EMPTY_QUERY)
        info = self._preemptible_server(ctx, server_id, policy.BID_DELETE)
        self.cloud.delete_metadata(server_id, [market_bids.BID_KEY])
        metadata = {k: v for k, v in info.metadata.items()
                    if k != market_bids.BID_KEY}
        info = dataclasses.replace(info, metadata=metadata)
        body = self._bid_json(info)
        if body['bid'] is not None:
            self.store.set_bid(server_id, info.project,
                               pricing.as_decimal(body['bid']),
                               body['source'])
        LOG.info('server %s (project %s): bid unset by %s (now %s from %s)',
                 server_id, info.project, ctx.user_id, body['bid'],
                 body['source'])
        return 200, {'bid': body}

    # -- accounts ------------------------------------------------------------

    def account(self, req, ctx):
        _query(req, schemas.ACCOUNT_QUERY)
        project = self._project(req, ctx)
        self.authorize(ctx, policy.ACCOUNT_SHOW, {'project_id': project})
        try:
            account = self.store.get_account(project)
        except budget.UnknownAccount:
            raise ApiError(404, 'project %s has no account' % project)
        body = _account_json(account)
        body['notices'] = [
            _notice_json(n) for n in self.store.notices(project=project)
            if n['state'] == models.NOTICED]
        return 200, {'account': body}

    def ledger(self, req, ctx):
        paginated = req.version >= V1_1
        if not paginated:
            # 1.0: ?limit= is the newest entries
            params = _query(req, dict(schemas.LEDGER_QUERY,
                                      limit=schemas.PAGINATION['limit']))
        else:
            params = _query(req, schemas.LEDGER_QUERY, paginated)
        project = self._project(req, ctx)
        self.authorize(ctx, policy.LEDGER_LIST, {'project_id': project})
        since = None
        if params.get('since'):
            since = parse_time(params['since'], 'since')
        if paginated:
            limit = self._limit(req)
            marker = req.params.get('marker')
            key = None
            if marker:
                kind, server, ps = (marker.split(':', 2) + ['', ''])[:3]
                key = (kind, server or None, ps)
            try:
                rows, more = self.store.entries_page(project, since, key,
                                                     limit)
            except db_api.MarkerNotFound:
                raise self._no_marker('ledger entry', marker)
            links = self._links(req, rows, more,
                                lambda row: _entry_id(row[0]), limit)
            return 200, {'ledger': [_entry_json(e, t, True)
                                    for e, t in rows],
                         'ledger_links': links}
        limit = self._limit(req) if params.get('limit') else None
        rows = self.store.entries_with_time(project, since, limit)
        return 200, {'ledger': [_entry_json(e, t) for e, t in rows]}

    def notices(self, req, ctx):
        """The project's preemption notices, oldest first, every state
        (or ``?state=``) -- microversion 1.1.
        """
        params = _query(req, schemas.NOTICES_QUERY, paginated=True)
        project = self._project(req, ctx)
        self.authorize(ctx, policy.NOTICES_LIST, {'project_id': project})
        limit = self._limit(req)
        marker = req.params.get('marker')
        try:
            rows, more = self.store.notices_page(
                params.get('state'), project, marker or None, limit)
        except db_api.MarkerNotFound:
            raise self._no_marker('notice', marker)
        links = self._links(req, rows, more, lambda n: n['server_uuid'],
                            limit)
        return 200, {'notices': [_notice_json(n, True) for n in rows],
                     'notices_links': links}

    def grant(self, req, ctx, project_id):
        self.authorize(ctx, policy.ACCOUNT_CREDIT, {'project_id':
                                                    project_id})
        body = _body(req, schemas.CREDIT)
        amount = _decimal_field(body['amount'], 'amount')
        if amount == 0:
            raise bad_request('amount: must be > 0')
        note = body.get('note', '')
        s = self.settings
        try:
            self.credit.open_account(project_id, 0, s.refill_rate,
                                     s.credit_cap)
        except budget.BudgetError:
            pass
        entry = self.credit.credit(project_id, amount, self.clock(),
                                   note or 'granted by %s' % ctx.user_id)
        LOG.info('project %s credited %s by %s', project_id, amount,
                 ctx.user_id)
        return 201, {'entry': _entry_json(entry, with_id=req.version >= V1_1)}

    def shares(self, req, ctx):
        """Per-host proportional shares and allocation errors now.

        Merkat §3.1: each running preemptible server's share of its host
        (``host_shares``) next to what the pool as one machine would give it
        (``cluster``), per resource, and the allocation error
        ``(a_host - a_cluster) / a_host`` (negative: under-served). Computed
        from the cloud and the bids as they are now, with the engine's own
        pricing code; ``minimum`` (the flavor), ``out_of_bid`` and
        ``charge_per_hour`` come from :func:`opie_sched.market.outbid.
        assess` on the pool, as the engine's notices and charges do.
        """
        self.authorize(ctx, policy.SHARES_LIST, {'project_id':
                                                 ctx.project_id})
        _query(req, schemas.EMPTY_QUERY)
        servers, _rejected = self.pricer.collect(self.clock())
        pools, snapshot, shares = self.pricer.price(servers)
        positions = {}
        for pool, market in self.pricer.assess_now(pools, snapshot).items():
            positions.update(market.positions)
        rows = []
        for uuid, vm in sorted(shares.items(),
                               key=lambda kv: (kv[1].error, kv[0])):
            row = {'server_id': uuid, 'host': vm.host, 'pool': vm.pool,
                   'bids': vm.bids, 'cluster': vm.cluster,
                   'host_shares': vm.host_shares, 'errors': vm.errors,
                   'error': vm.error}
            if uuid in positions:
                pos = market_pricer.position_json(positions[uuid])
                row.update(minimum=pos['minimum'],
                           out_of_bid=pos['out_of_bid'],
                           charge_per_hour=pos['charge_per_hour'])
            rows.append(row)
        return 200, {'prices': self._price_rows(
            {pool: p['prices'] for pool, p in pools.items()}),
            'shares': rows}

    def reserve(self, req, ctx):
        self.authorize(ctx, policy.RESERVE_UPDATE, {'project_id':
                                                    ctx.project_id})
        body = _body(req, schemas.RESERVE_UPDATE)
        prices = body['reserve_price']
        pool = body.get('pool', models.ALL_POOLS)
        parsed = {}
        for resource, value in prices.items():
            parsed[resource] = _decimal_field(
                value, 'reserve_price.%s' % resource)
        self.store.set_reserve_prices(parsed, pool)
        LOG.info('reserve prices of pool %s set to %s by %s', pool, parsed,
                 ctx.user_id)
        return 200, {'reserve_price': self.store.reserve_prices()}

    # -- planning (1.2) ------------------------------------------------------

    def _flavor(self, name_or_id):
        flavor = self.flavors(name_or_id)
        if flavor is None:
            raise ApiError(404, 'flavor %s not found' % name_or_id)
        return flavor

    def _flavor_price(self, prices, flavor):
        """``{pool: Decimal}`` the flavor costs per hour now (``sum_r
        price_r * amount_r``, vCPUs and MB, as /v1/flavor-prices).
        """
        amounts = {pricing.VCPUS: flavor['vcpus'],
                   pricing.MEMORY_MB: flavor['ram']}
        return {pool: sum((by_r[r] * amounts[r] for r in amounts
                           if r in by_r), pricing.ZERO)
                for pool, by_r in prices.items()}

    def placement_score(self, req, ctx):
        """Would ``count`` servers of ``flavor`` fit now, per availability
        zone (:func:`.score.classify`; microversion 1.2)?

        One read of Placement (:class:`ProviderRead`), the market's newest
        period (prices, running preemptible servers and their bids) and
        the zones; nothing is claimed or changed.
        """
        self.authorize(ctx, policy.PLACEMENT_SCORE_SHOW,
                       {'project_id': ctx.project_id})
        params = _query(req, schemas.PLACEMENT_SCORE_QUERY,
                        required=('flavor',))
        count = int(params.get('count') or 1)
        if not 1 <= count <= MAX_COUNT:
            raise bad_request('count: must be from 1 to %d, got %d'
                              % (MAX_COUNT, count))
        flavor = self._flavor(params['flavor'])
        need, preemptible = market_score.flavor_need(
            flavor['vcpus'], flavor['ram'], flavor['disk_gb'],
            flavor['extra_specs'])
        bid = source = None
        if preemptible:
            metadata = {}
            if params.get('bid'):
                metadata[market_bids.BID_KEY] = params['bid']
            try:
                bid, source = market_bids.resolve_bid(
                    metadata, flavor['extra_specs'],
                    self.settings.default_bid, self.settings.bid_cap)
            except market_bids.BidError as exc:
                raise bad_request('bid: %s' % exc)
        summaries = self.providers(market_score.placement_params(
            need, preemptible, flavor['extra_specs']))
        zone_of = self.zones()
        period = self.store.latest_period()
        running, prices = {}, {}
        if period is not None:
            ps = period['period_start']
            for row in self.store.period_servers(ps):
                if row['bid_source'] in market_pricer.PENDING_SOURCES:
                    continue
                running.setdefault(row['host'], []).append(
                    market_score.Running(row['bid'], row['vcpus'],
                                         row['memory_mb']))
            prices = self._flavor_price(self.store.period_prices(ps),
                                        flavor)
        pool_of = self.pricer.pool_of(list(summaries)) if summaries else {}
        by_zone = {zone: [] for zone in set(zone_of.values())}
        for host, summary in sorted(summaries.items()):
            state = market_score.provider_states({host: summary}).get(host)
            if state is None:
                continue
            capacity, normal_used, pre_used, pre_cap = state
            zone = zone_of.get(host)
            by_zone.setdefault(zone, []).append(market_score.HostState(
                host, capacity, normal_used, pre_used, pre_cap, zone,
                prices.get(pool_of.get(host)),
                tuple(running.get(host, ()))))
        zones = []
        wanted = params.get('zone')
        for zone in sorted(by_zone, key=lambda z: (z is None, z or '')):
            if wanted is not None and zone != wanted:
                continue
            result = market_score.classify(by_zone[zone], need, count,
                                           preemptible, bid)
            zones.append(dict(result, availability_zone=zone,
                              hosts=len(by_zone[zone])))
        if wanted is not None and not zones:
            zones.append(dict(market_score.classify(
                [], need, count, preemptible, bid), availability_zone=wanted,
                hosts=0))
        return 200, {'placement_score': {
            'flavor': flavor['name'], 'flavor_id': flavor['id'],
            'count': count, 'preemptible': preemptible, 'bid': bid,
            'bid_source': source,
            'period_start': None if period is None
            else market_cloud.iso(period['period_start']),
            'zones': zones}}

    def interruption_history(self, req, ctx):
        """Interruption rate per period and the Kaplan-Meier survival
        curve of ``flavor``'s servers (:mod:`.survival`; microversion
        1.2).

        Lifetimes are the market's record (:mod:`.events`): interruptions
        by the scheduler, the reconciler, the maximum lifetime and the
        market end them; drills never do; deletion by the owner censors
        them. Rates count every life that ran in a period since
        ``since`` (default 30 days ago); the curve, the lives that
        started at or after ``since``. ``zone``: lives on that zone's
        hosts (zones as Nova reports them now).
        """
        self.authorize(ctx, policy.INTERRUPTION_HISTORY_SHOW,
                       {'project_id': ctx.project_id})
        params = _query(req, schemas.INTERRUPTION_HISTORY_QUERY,
                        required=('flavor',))
        now = self.clock()
        since = (parse_time(params['since'], 'since')
                 if params.get('since') else now - HISTORY_WINDOW)
        if since > now:
            raise bad_request('since: in the future')
        period = int(params.get('period_seconds') or HISTORY_PERIOD)
        if period < 1 or (now - since) / period > MAX_PERIODS:
            raise bad_request('period_seconds: at most %d periods from '
                              'since to now, at least 1 s each'
                              % MAX_PERIODS)
        flavor = self._flavor(params['flavor'])
        lives = self.store.lifetimes(flavor=flavor['name'])
        zone = params.get('zone')
        if zone is not None:
            zone_of = self.zones()
            lives = [lt for lt in lives if zone_of.get(lt['host']) == zone]
        ran = [lt for lt in lives if lt['ended_at'] is None
               or lt['ended_at'] >= since]
        try:
            curve = survival.survival_curve(
                [lt for lt in lives if lt['started_at'] >= since], now)
        except ImportError as exc:
            raise ApiError(503, 'the interruption history needs scipy '
                           '(pip install opie_sched[market]): %s' % exc)
        rates = survival.interruption_rates(ran, since, now, period)
        for row in rates:
            row['period_start'] = market_cloud.iso(row['period_start'])
        return 200, {'interruption_history': {
            'flavor': flavor['name'], 'flavor_id': flavor['id'],
            'availability_zone': zone, 'since': market_cloud.iso(since),
            'until': market_cloud.iso(now), 'period_seconds': period,
            'rates': rates, 'survival': curve}}

    @staticmethod
    def _event_json(row):
        return {'id': row['id'], 'server_id': row['server_uuid'],
                'project_id': row['project'], 'kind': row['kind'],
                'cause': row['cause'], 'action': row['action'],
                'at': market_cloud.iso(row['at']), 'flavor': row['flavor'],
                'detail': row['detail']}

    def events(self, req, ctx):
        """The project's event history (microversion 1.2): at-risk marks,
        notices, interruptions (with the behaviour applied), restores,
        drills and deletions of its preemptible servers, oldest first,
        deleted servers included; ``?server_id=`` one server's.
        Another project's events are never listed: ``project_id`` of
        another project is 403, and a server of another project has no
        events in the caller's own list.
        """
        params = _query(req, schemas.EVENTS_QUERY, paginated=True)
        project = self._project(req, ctx)
        self.authorize(ctx, policy.EVENTS_LIST, {'project_id': project})
        limit = self._limit(req)
        marker = req.params.get('marker')
        key = None
        if marker:
            if not marker.isdigit():
                raise self._no_marker('event', marker)
            key = int(marker)
        try:
            rows, more = self.store.events_page(
                project, params.get('server_id'), key, limit)
        except db_api.MarkerNotFound:
            raise self._no_marker('event', marker)
        links = self._links(req, rows, more, lambda r: str(r['id']), limit)
        return 200, {'events': [self._event_json(r) for r in rows],
                     'events_links': links}

    # -- interruption drills (1.3) ------------------------------------------

    def interruption_drill(self, req, ctx, server_id):
        """Send the caller's own preemptible server through a real
        interruption (microversion 1.3): its at-risk mark and notice now,
        the keys a market notice writes (``opie:rebalance_recommendation``,
        ``opie:preempt_notice``, ``opie:preempt_deadline``), then at the
        deadline (``notice_seconds``, default and at most ``[opie_market]
        notice_period``) its flavor's interruption behaviour, applied by
        the engine's enforcement at its first tick after the deadline.
        Recorded as events (``at_risk`` and ``notice``, then ``drill``,
        all cause ``drill``); never charged, never counted in prices or
        interruption rates (:mod:`.survival`: a drill ends no life).

        202 with the drill; 400 a bad body; 403 the policy (a reader of
        the project) or drills off (``drill_limit = 0``); 404 no such
        server, or another project's; 409 not preemptible (by the
        resource classes of its flavor, :func:`.cloud.is_preemptible`),
        not ACTIVE or busy, or already under notice; 429 the project
        started ``drill_limit`` drills in the last ``drill_window``
        seconds (``Retry-After``: seconds until the oldest leaves it).
        """
        s = self.settings
        body = _body(req, schemas.DRILL_CREATE) if req.body else {}
        notice_seconds = body.get('notice_seconds', s.notice_period)
        if notice_seconds > s.notice_period:
            raise bad_request('notice_seconds: at most [opie_market] '
                              'notice_period (%d), got %d'
                              % (s.notice_period, notice_seconds))
        info = self.cloud.get_server(server_id)
        if info is None:
            raise ApiError(404, 'server %s not found' % server_id)
        self._forbidden_or_hidden(ctx, info, policy.INTERRUPTION_DRILL_CREATE,
                                  policy.BID_SHOW)
        if s.drill_limit == 0:
            raise ApiError(403, 'interruption drills are off on this cloud '
                           '([opie_market] drill_limit = 0)')
        if not info.preemptible:
            raise ApiError(409, 'server %s is not preemptible (its flavor '
                           'requests no CUSTOM_PREEMPTIBLE_* class): '
                           'nothing to drill' % server_id,
                           'spot-market.not-preemptible')
        _require_active(info, server_id,
                        'a drill needs an ACTIVE server with no task')
        now = self.clock()
        enforcer = self._enforcer()
        try:
            notice, action = enforcer.give_drill_notice(
                info, notice_seconds, now, ctx.user_id or 'an admin')
        except db_api.AlreadyNoticed:
            raise ApiError(409, 'server %s is already under a preemption '
                           'notice (GET /v1/notices)' % server_id,
                           'spot-market.already-noticed')
        except db_api.DrillLimited as exc:
            wait = max(1, int(exc.retry_at - now + 0.999))
            raise ApiError(
                429, 'project %s started its %d interruption drills of the '
                'last %d s ([opie_market] drill_limit, drill_window); retry '
                'after %s (in %d s)' % (
                    info.project, s.drill_limit, s.drill_window,
                    market_cloud.iso(exc.retry_at), wait),
                'spot-market.drill-limit', {'Retry-After': str(wait)})
        LOG.info('server %s (project %s): interruption drill asked by %s',
                 server_id, info.project, ctx.user_id)
        return 202, {'interruption_drill': {
            'server_id': server_id, 'project_id': info.project,
            'kind': notice['kind'], 'state': notice['state'],
            'noticed_at': market_cloud.iso(notice['noticed_at']),
            'deadline': market_cloud.iso(notice['deadline']),
            'notice_seconds': notice_seconds, 'action': action,
            'reason': notice['reason']}}

    def interruption_ack(self, req, ctx, server_id):
        """Acknowledge the preemption notice pending on the caller's own
        server (microversion 1.4): its flavor's interruption behaviour
        runs now, as at the deadline, so a boot waiting on it proceeds
        (:meth:`.enforcement.Enforcer.acknowledge`). The pending notice is
        read where users cannot write -- the market's notices, or the
        scheduler's ``preempt_notice`` instance action -- never from the
        notice keys of the server's metadata alone. Recorded as an
        ``ack`` event (cause ``owner``); it charges nothing.

        202 with the acknowledgement; 400 a body with fields; 403 the
        policy (a reader of the project); 404 no such server, or
        another project's; 409 no notice pending, or the server is not
        ACTIVE or busy (its interruption is under way).
        """
        if req.body:
            _body(req, schemas.ACK_CREATE)
        info = self.cloud.get_server(server_id)
        if info is None:
            raise ApiError(404, 'server %s not found' % server_id)
        self._forbidden_or_hidden(ctx, info, policy.INTERRUPTION_ACK_CREATE,
                                  policy.BID_SHOW)
        _require_active(info, server_id, 'only an ACTIVE server with no '
                        'task has a notice to acknowledge')
        now = self.clock()
        enforcer = self._enforcer()
        try:
            ack = enforcer.acknowledge(info, now, ctx.user_id or 'an admin')
        except enforcement.NoNotice:
            raise ApiError(409, 'server %s has no pending preemption notice '
                           'to acknowledge' % server_id,
                           'spot-market.no-notice')
        return 202, {'interruption_ack': {
            'server_id': server_id, 'project_id': info.project,
            'notice': ack['notice'], 'kind': ack['kind'],
            'noticed_at': market_cloud.iso(ack['noticed_at']),
            'deadline': (market_cloud.iso(ack['deadline'])
                         if ack['deadline'] is not None else None),
            'acknowledged_at': market_cloud.iso(now),
            'action': ack['action']}}


class NoAuth:
    """Test-only authentication: token ``user:project[:role,role...]``.

    Sets the headers keystonemiddleware would (``X-User-Id``,
    ``X-Project-Id``, ``X-Roles``). Without roles in the token: ``admin``
    for the user ``admin`` (with ``member`` and ``reader``, as Keystone's
    implied roles give), else ``member,reader``. Requests without a token
    get 401. Never use it in production.
    """

    def __init__(self, app):
        self.app = app

    @webob.dec.wsgify
    def __call__(self, req):
        for header in ('X-User-Id', 'X-Project-Id', 'X-Roles',
                       'X-Identity-Status', 'X-Service-Roles'):
            req.headers.pop(header, None)
        if req.path_info.rstrip('/') in ('', '/v1'):
            return self.app  # version documents need no token
        token = req.headers.get('X-Auth-Token', '')
        user, _, rest = token.partition(':')
        project, _, roles = rest.partition(':')
        if not user:
            resp = webob.Response(status=401,
                                  content_type='application/json',
                                  charset='utf-8')
            resp.text = json.dumps(error_body(
                401, 'X-Auth-Token user:project[:roles] required',
                'req-%s' % uuidlib.uuid4()))
            return resp
        if not roles:
            roles = ('admin,member,reader' if user == 'admin'
                     else 'member,reader')
        req.headers.update({'X-User-Id': user,
                            'X-Project-Id': project or user,
                            'X-Roles': roles,
                            'X-Identity-Status': 'Confirmed'})
        return self.app


def build_app(conf, store=None, cloud=None, enforcer=None):
    """The WSGI application of ``conf``.

    ``[opie_market] api_auth_strategy``: ``keystone`` wraps it in
    keystonemiddleware ``auth_token`` (``[keystone_authtoken]``),
    ``noauth`` in :class:`NoAuth`.
    """
    from opie_sched.services.market import service
    g = opts.group(conf)
    settings = market_settings.Settings.from_conf(g)
    if store is None:
        store = service.make_store(conf)
    if cloud is None:
        cloud = market_cloud.Cloud.from_conf(conf)
    if enforcer is None:
        enforcer = policy.enforcer(conf)
    app = MarketAPI(store, cloud, settings, enforcer)
    if g.api_auth_strategy == 'noauth':
        return NoAuth(app)
    from keystonemiddleware import auth_token
    return auth_token.AuthProtocol(app, {'oslo_config_config': conf})


# -- paste deploy ------------------------------------------------------------

#: The ConfigOpts paste factories use (set by :func:`init_application`).
CONF = None


def app_factory(global_conf, **local_conf):
    """Paste app factory: the API without authentication middleware."""
    from opie_sched.services.market import service
    g = opts.group(CONF)
    return MarketAPI(service.make_store(CONF),
                     market_cloud.Cloud.from_conf(CONF),
                     market_settings.Settings.from_conf(g),
                     policy.enforcer(CONF))


def noauth_filter_factory(global_conf, **local_conf):
    """Paste filter factory of :class:`NoAuth`."""
    return NoAuth


def init_application(argv=None, paste_file=None, name='main'):
    """WSGI entry point (uwsgi, mod_wsgi): load config, then the paste
    pipeline ``name`` of ``paste_file`` (default: :func:`build_app`).
    """
    from oslo_config import cfg
    global CONF
    conf = cfg.ConfigOpts()
    opts.register_opts(conf)
    logging.register_options(conf)
    conf(argv or [], project='opie_sched', prog='opie-market-api')
    logging.setup(conf, 'opie-market-api')
    CONF = conf
    if paste_file is None:
        return build_app(conf)
    from paste import deploy
    # keystonemiddleware's auth_token reads its [keystone_authtoken]
    # options from this same configuration file, not from a default path.
    global_conf = {}
    if conf.config_file:
        global_conf['oslo_config_file'] = conf.config_file[-1]
    return deploy.loadapp('config:%s' % paste_file, name=name,
                          global_conf=global_conf)
