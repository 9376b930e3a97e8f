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
"""The opie-market REST API.

Resources (JSON; money, bids and prices as decimal text -- bids in
currency per hour, prices in currency per unit-hour; times ISO 8601 UTC)::

    GET  /                              versions
    GET  /v1                            this version
    GET  /v1/prices                     prices of the newest period
    GET  /v1/prices/history?start=&end=[&pool=][&resource=]
    GET  /v1/servers/{server_id}/bid    the server's bid (owner, admin)
    PUT  /v1/servers/{server_id}/bid    {"bid": "0.5"} (owner, admin)
    GET  /v1/account[?project_id=]      own account (admin: any)
    GET  /v1/account/ledger[?project_id=][&limit=][&since=]
    POST /v1/accounts/{project_id}/credit   {"amount": "10", "note": ""}
    GET  /v1/shares                     per-host shares and allocation
                                        errors (admin; Merkat §3.1)
    PUT  /v1/reserve-price              {"reserve_price": {"vcpus": "0.01"},
                                         "pool": "*"}   (admin)

Authorization is oslo.policy (:mod:`.policy`) on the request context
that keystonemiddleware's ``auth_token`` (or, for tests, :class:`NoAuth`)
leaves in the headers. A project asking for another project's server gets
404, as if it did not exist; another project's account or ledger, 403.
Bad input gets 400 with a message naming the field; nothing is changed.
Errors are ``{"error": {"code", "title", "message"}}``.

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

from oslo_context import context as oslo_context
from oslo_log import log as logging
from oslo_policy import policy as oslo_policy
from oslo_utils import timeutils
import routes
import webob
import webob.dec
import webob.exc

from opie_sched.market import bids as market_bids
from opie_sched.market import budget
from opie_sched.market import pricing
from opie_sched.services.market.api import policy
from opie_sched.services.market.db import models
from opie_sched.services.market import engine as market_engine
from opie_sched.services.market import opts

LOG = logging.getLogger(__name__)

VERSION = {'id': 'v1', 'status': 'CURRENT', 'min_version': '',
           'version': '', 'updated': '2026-11-22T00:00:00Z'}

#: Largest ledger page.
MAX_LIMIT = 1000


class ApiError(Exception):
    """An error response: ``code`` (HTTP status) and ``message``."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


def bad_request(message):
    return ApiError(400, message)


def _text(value):
    return None if value is None else format(value, 'f') if isinstance(
        value, decimal.Decimal) else value


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
    if isinstance(value, bool) or value is None or not isinstance(
            value, (int, float, str)):
        raise bad_request('%s: not a number: %r' % (what, value))
    try:
        result = pricing.as_decimal(value.strip() if isinstance(value, str)
                                    else value)
    except (decimal.InvalidOperation, TypeError):
        raise bad_request('%s: not a number: %r' % (what, value))
    if not result.is_finite() or result < minimum:
        raise bad_request('%s: must be a finite number >= %s, got %r'
                          % (what, minimum, value))
    return result


def _body(req, *required):
    try:
        body = json.loads(req.body or b'null')
    except ValueError as exc:
        raise bad_request('request body is not valid JSON: %s' % exc)
    if not isinstance(body, dict):
        raise bad_request('request body must be a JSON object')
    missing = [k for k in required if k not in body]
    if missing:
        raise bad_request('request body lacks %s' % ', '.join(missing))
    return body


def _entry_json(entry, posted_at=None):
    key = entry.key
    when = key.period_start
    return {'kind': key.kind, 'project_id': key.project,
            'server_id': key.server,
            'period_start' if key.kind != budget.KIND_CREDIT
            else 'granted_at': market_engine.iso(when),
            'amount': entry.amount, 'balance': entry.balance,
            'period_seconds': entry.period_seconds, 'note': entry.note,
            'posted_at': None if posted_at is None
            else market_engine.iso(posted_at)}


def _account_json(account):
    return {'project_id': account.project, 'balance': account.balance,
            'refill_rate': account.refill_rate, 'cap': account.cap}


class MarketAPI:
    """The controllers; each returns ``(status, body)``.

    :param store: :class:`opie_sched.services.market.db.api.MarketStore`.
    :param cloud: :class:`opie_sched.services.market.engine.Cloud` (admin).
    :param settings: :class:`opie_sched.services.market.engine.Settings`.
    :param enforcer: oslo.policy Enforcer (:func:`.policy.enforcer`).
    """

    def __init__(self, store, cloud, settings, enforcer, clock=time.time):
        self.store = store
        self.cloud = cloud
        self.settings = settings
        self.enforcer = enforcer
        self.clock = clock
        self.credit = budget.CreditManager(store)
        self.mapper = routes.Mapper()
        m = self.mapper
        m.connect('/', action='versions', conditions={'method': ['GET']})
        m.connect('/v1', action='version', conditions={'method': ['GET']})
        m.connect('/v1/prices', action='prices',
                  conditions={'method': ['GET']})
        m.connect('/v1/prices/history', action='history',
                  conditions={'method': ['GET']})
        m.connect('/v1/servers/{server_id}/bid', action='get_bid',
                  conditions={'method': ['GET']})
        m.connect('/v1/servers/{server_id}/bid', action='set_bid',
                  conditions={'method': ['PUT']})
        m.connect('/v1/account', action='account',
                  conditions={'method': ['GET']})
        m.connect('/v1/account/ledger', action='ledger',
                  conditions={'method': ['GET']})
        m.connect('/v1/accounts/{project_id}/credit', action='grant',
                  conditions={'method': ['POST']})
        m.connect('/v1/reserve-price', action='reserve',
                  conditions={'method': ['PUT']})
        m.connect('/v1/shares', action='shares',
                  conditions={'method': ['GET']})
        self._paths = {'/', '/v1', '/v1/prices', '/v1/prices/history',
                       '/v1/account', '/v1/account/ledger',
                       '/v1/reserve-price', '/v1/shares'}

    # -- plumbing ----------------------------------------------------------

    @webob.dec.wsgify
    def __call__(self, req):
        path = req.path_info.rstrip('/') or '/'
        match = self.mapper.match(path, {'REQUEST_METHOD': req.method})
        try:
            if match is None:
                if path in self._paths or self.mapper.match(path):
                    raise ApiError(405, 'method %s not allowed on %s'
                                   % (req.method, path))
                raise ApiError(404, 'no resource %s' % path)
            action = match.pop('action')
            ctx = oslo_context.RequestContext.from_environ(
                req.environ, overwrite=False)
            status, body = getattr(self, action)(req, ctx, **match)
        except ApiError as exc:
            status, body = exc.code, {'error': {
                'code': exc.code, 'message': exc.message,
                'title': webob.exc.status_map[exc.code].title}}
        except Exception:
            LOG.exception('%s %s failed', req.method, req.path)
            status, body = 500, {'error': {
                'code': 500, 'title': 'Internal Server Error',
                'message': 'the market API failed; see its log'}}
        resp = webob.Response(status=status, content_type='application/json',
                              charset='utf-8')
        resp.text = json.dumps(body, default=_json_default)
        return resp

    def authorize(self, ctx, rule, target, hide=False):
        """Enforce ``rule``; 403 (or 404 when ``hide``) if denied."""
        try:
            self.enforcer.authorize(rule, target, ctx.to_policy_values(),
                                    do_raise=True)
        except oslo_policy.PolicyNotAuthorized:
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
        info = self.cloud.get_server(server_id)
        if info is None:
            raise ApiError(404, 'server %s not found' % server_id)
        self.authorize(ctx, rule, {'project_id': info.project,
                                   'server_id': server_id}, hide=True)
        return info

    # -- versions ------------------------------------------------------------

    def _version(self, req):
        return dict(VERSION, links=[{'rel': 'self',
                                     'href': req.application_url + '/v1/'}])

    def versions(self, req, ctx):
        return 200, {'versions': [self._version(req)]}

    def version(self, req, ctx):
        return 200, {'version': self._version(req)}

    # -- prices --------------------------------------------------------------

    @staticmethod
    def _price_rows(prices):
        return [{'pool': pool, 'resource': r, 'price': prices[pool][r],
                 'unit': 'per %s-hour' % pricing.UNITS.get(r, r)}
                for pool in sorted(prices)
                for r in pricing.order_resources(prices[pool])]

    def prices(self, req, ctx):
        self.authorize(ctx, policy.PRICES_GET, {'project_id':
                                                ctx.project_id})
        period = self.store.latest_period()
        if period is None:
            return 200, {'period_start': None, 'period_seconds': None,
                         'prices': []}
        ps = period['period_start']
        return 200, {'period_start': market_engine.iso(ps),
                     'period_seconds': period['period_seconds'],
                     'prices': self._price_rows(self.store.period_prices(ps))}

    def history(self, req, ctx):
        self.authorize(ctx, policy.PRICES_HISTORY, {'project_id':
                                                    ctx.project_id})
        unknown = set(req.params) - {'start', 'end', 'pool', 'resource'}
        if unknown:
            raise bad_request('unknown query parameters: %s'
                              % ', '.join(sorted(unknown)))
        start = end = None
        if req.params.get('start'):
            start = parse_time(req.params['start'], 'start')
        if req.params.get('end'):
            end = parse_time(req.params['end'], 'end')
        if start is not None and end is not None and start > end:
            raise bad_request('start (%s) is after end (%s)'
                              % (req.params['start'], req.params['end']))
        resource = req.params.get('resource')
        if resource is not None and resource not in pricing.RESOURCES:
            raise bad_request('resource: unknown %r (one of %s)' % (
                resource, ', '.join(pricing.RESOURCES)))
        rows = self.store.price_history(start, end, req.params.get('pool'),
                                        resource)
        return 200, {'history': [
            {'period_start': market_engine.iso(r['period_start']),
             'period_seconds': r['period_seconds'], 'pool': r['pool'],
             'resource': r['resource'], 'price': r['price'],
             'capacity': r['capacity'], 'bids': r['bids']} for r in rows]}

    # -- bids ----------------------------------------------------------------

    def _position(self, uuid):
        """The server's position in the newest period, or None."""
        period = self.store.latest_period()
        if period is None:
            return None
        engine = market_engine.MarketEngine(self.store, self.cloud,
                                            self.settings)
        for market in engine.assess(period['period_start']).values():
            if uuid in market.positions:
                return market_engine.position_json(
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
        body['notice'] = info.metadata.get(market_engine.NOTICE_KEY)
        return body

    def get_bid(self, req, ctx, server_id):
        info = self._server(ctx, server_id, policy.BID_GET)
        return 200, {'bid': self._bid_json(info, position=True)}

    def set_bid(self, req, ctx, server_id):
        body = _body(req, 'bid')
        unknown = set(body) - {'bid'}
        if unknown:
            raise bad_request('unknown fields: %s'
                              % ', '.join(sorted(unknown)))
        raw = body['bid']
        if not isinstance(raw, (str, int, float)) or isinstance(raw, bool):
            raise bad_request('bid: not a number: %r' % (raw,))
        try:
            bid = market_bids.parse_bid(raw, self.settings.bid_cap, 'bid')
        except market_bids.BidError as exc:
            raise bad_request(str(exc))
        info = self._server(ctx, server_id, policy.BID_SET)
        if not info.preemptible:
            raise bad_request('server %s is not preemptible: it has no bid'
                              % server_id)
        text = format(bid, 'f')
        self.cloud.set_metadata(server_id, {market_bids.BID_KEY: text})
        self.store.set_bid(server_id, info.project, bid,
                           market_bids.SOURCE_METADATA)
        LOG.info('server %s (project %s): bid set to %s by %s', server_id,
                 info.project, text, ctx.user_id)
        info = dataclasses.replace(info, metadata=dict(
            info.metadata, **{market_bids.BID_KEY: text}))
        return 200, {'bid': self._bid_json(info)}

    # -- accounts ------------------------------------------------------------

    def account(self, req, ctx):
        project = self._project(req, ctx)
        self.authorize(ctx, policy.ACCOUNT_GET, {'project_id': project})
        try:
            account = self.store.get_account(project)
        except budget.UnknownAccount:
            raise ApiError(404, 'project %s has no account' % project)
        body = _account_json(account)
        body['notices'] = [
            {'server_id': n['server_uuid'], 'kind': n['kind'],
             'reason': n['reason'], 'state': n['state'],
             'deadline': market_engine.iso(n['deadline'])}
            for n in self.store.notices(project=project)
            if n['state'] == models.NOTICED]
        return 200, {'account': body}

    def ledger(self, req, ctx):
        project = self._project(req, ctx)
        self.authorize(ctx, policy.LEDGER_GET, {'project_id': project})
        unknown = set(req.params) - {'project_id', 'limit', 'since'}
        if unknown:
            raise bad_request('unknown query parameters: %s'
                              % ', '.join(sorted(unknown)))
        limit = None
        if req.params.get('limit'):
            try:
                limit = int(req.params['limit'])
            except ValueError:
                limit = 0
            if not 1 <= limit <= MAX_LIMIT:
                raise bad_request('limit: must be an integer from 1 to %d, '
                                  'got %r' % (MAX_LIMIT,
                                              req.params['limit']))
        since = None
        if req.params.get('since'):
            since = parse_time(req.params['since'], 'since')
        rows = self.store.entries_with_time(project, since, limit)
        return 200, {'ledger': [_entry_json(e, t) for e, t in rows]}

    def grant(self, req, ctx, project_id):
        self.authorize(ctx, policy.ACCOUNT_CREDIT, {'project_id':
                                                    project_id})
        body = _body(req, 'amount')
        unknown = set(body) - {'amount', 'note'}
        if unknown:
            raise bad_request('unknown fields: %s'
                              % ', '.join(sorted(unknown)))
        amount = _decimal_field(body['amount'], 'amount')
        if amount == 0:
            raise bad_request('amount: must be > 0')
        note = body.get('note', '')
        if not isinstance(note, str) or len(note) > 255:
            raise bad_request('note: must be text of at most 255 characters')
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
        return 201, {'entry': _entry_json(entry)}

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
        self.authorize(ctx, policy.SHARES_GET, {'project_id':
                                                ctx.project_id})
        engine = market_engine.MarketEngine(self.store, self.cloud,
                                            self.settings)
        servers, _rejected = engine.collect(self.clock())
        pools, snapshot, shares = engine.price(servers)
        positions = {}
        for pool, market in engine.assess_now(pools, snapshot).items():
            positions.update(market.positions)
        rows = []
        for uuid, vm in sorted(shares.items(),
                               key=lambda kv: (kv[1].error, kv[0])):
            row = {'server_id': uuid, 'host': vm.host, 'pool': vm.pool,
                   'bids': vm.bids, 'cluster': vm.cluster,
                   'host_shares': vm.host_shares, 'errors': vm.errors,
                   'error': vm.error}
            if uuid in positions:
                pos = market_engine.position_json(positions[uuid])
                row.update(minimum=pos['minimum'],
                           out_of_bid=pos['out_of_bid'],
                           charge_per_hour=pos['charge_per_hour'])
            rows.append(row)
        return 200, {'prices': self._price_rows(
            {pool: p['prices'] for pool, p in pools.items()}),
            'shares': rows}

    def reserve(self, req, ctx):
        self.authorize(ctx, policy.RESERVE_SET, {'project_id':
                                                 ctx.project_id})
        body = _body(req, 'reserve_price')
        unknown = set(body) - {'reserve_price', 'pool'}
        if unknown:
            raise bad_request('unknown fields: %s'
                              % ', '.join(sorted(unknown)))
        prices = body['reserve_price']
        if not isinstance(prices, dict) or not prices:
            raise bad_request('reserve_price: must be a non-empty object '
                              '{resource: price}')
        pool = body.get('pool', models.ALL_POOLS)
        if not isinstance(pool, str) or not pool or len(pool) > 255:
            raise bad_request('pool: must be a non-empty name')
        parsed = {}
        for resource, value in prices.items():
            if resource not in pricing.RESOURCES:
                raise bad_request('reserve_price: unknown resource %r (one '
                                  'of %s)' % (resource,
                                              ', '.join(pricing.RESOURCES)))
            parsed[resource] = _decimal_field(
                value, 'reserve_price.%s' % resource)
        self.store.set_reserve_prices(parsed, pool)
        LOG.info('reserve prices of pool %s set to %s by %s', pool, parsed,
                 ctx.user_id)
        return 200, {'reserve_price': self.store.reserve_prices()}


class NoAuth:
    """Test-only authentication: token ``user:project``.

    Sets the headers keystonemiddleware would (``X-User-Id``,
    ``X-Project-Id``, ``X-Roles``: ``admin`` for the user ``admin``,
    else ``member,reader``); requests without a token get 401. Never use
    it in production.
    """

    def __init__(self, app):
        self.app = app

    @webob.dec.wsgify
    def __call__(self, req):
        for header in ('X-User-Id', 'X-Project-Id', 'X-Roles',
                       'X-Identity-Status'):
            req.headers.pop(header, None)
        if req.path_info.rstrip('/') in ('', '/v1'):
            return self.app  # version documents need no token
        token = req.headers.get('X-Auth-Token', '')
        user, _, project = token.partition(':')
        if not user:
            return webob.exc.HTTPUnauthorized(
                json_body={'error': {'code': 401, 'title': 'Unauthorized',
                                     'message': 'X-Auth-Token user:project '
                                                'required'}})
        roles = 'admin,member,reader' if user == 'admin' else 'member,reader'
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
    settings = market_engine.Settings.from_conf(g)
    if store is None:
        store = service.make_store(conf)
    if cloud is None:
        cloud = market_engine.Cloud(service.make_connection(conf),
                                    g.capacity_source)
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
                     market_engine.Cloud(service.make_connection(CONF),
                                         g.capacity_source),
                     market_engine.Settings.from_conf(g),
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
