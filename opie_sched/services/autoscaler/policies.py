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
"""SLO policies of ``opie-autoscaler``: market controllers per application.

An application that declares ``slo`` is not sized by the repacking
planner: each round its SLO policy (a plugin of the stevedore namespace
:data:`NAMESPACE`) reads the application's performance metric from its
demand source (:mod:`opie_sched.services.autoscaler.demand`) and the spot
market's
prices, and decides the bid of each of its servers (vertical scaling) or
their number (horizontal scaling). The bids are set through the market's
API (``PUT <market_url>/servers/{id}/bid``, which writes the server
metadata ``opie:bid`` the market engine reads, see
:mod:`opie_sched.market.bids`); servers are added and removed
make-before-break by the autoscaler's executor through openstacksdk.

Declaration (in the applications file, one flavor, a budget and a
market)::

    name: sim
    server_group: sim
    image: cirros
    flavors: {spot.small: {capacity: 1}}
    demand: {source: http, url: http://sim:8080/metric}
    budget: 2.0                  # currency per budget_period (hours)
    market_url: catalog
    slo:
      policy: themis-vertical-deadline   # a plugin of NAMESPACE
      deadline: 2026-11-24T07:00:00Z     # ISO 8601 (or epoch seconds)
      full_rate: 0.5                     # metric units / s at full share

The metric each policy expects (from the demand source):

``themis-vertical-deadline``
    remaining work (e.g. iterations); Themis HPCC'12 Fig. 4
    Vertical-Deadline. Parameters: ``deadline``, ``full_rate`` (work per
    second at the largest allocation), optional ``t_diff``, ``limit``.
``themis-horizontal-deadline``
    remaining tasks; Fig. 4 Horizontal-Deadline with Fig. 3
    Scale-Multi-VMs. Parameters: ``deadline``, ``task_time`` (T_avg, s),
    ``task_time_max`` (T_max, s), optional ``headroom``, ``limit``.
``merkat-vertical``
    a cost-like performance value (e.g. seconds per iteration); Merkat
    Alg. 1. Parameters: ``target`` (v_ref), optional ``low`` (default
    0.75 target), ``high`` (default target), ``min_allocation`` (0.25).
``merkat-horizontal``
    a cost-like load value (e.g. queued tasks); Merkat Alg. 2 with the
    Alg. 3 bound. Parameters: ``low``, ``high``.

Budget (Themis §III.A, Table I): one ledger, the market's. Each round
the controller reads its project's account (``GET /v1/account``: the
balance the market's charges, refills and credits leave, see
:mod:`opie_sched.market.budget`); ``bid_max`` is that balance, capped at
the application's ``budget``, spread over one ``budget_period``
(currency per hour, all servers). The controller keeps no account of
its own: what it may spend is what the market charged (share cost, not
the bid), and a restarted replica reads the same balance. A project
without an account yet (no preemptible server seen by the market) has
nothing to spend: ``bid_max`` 0. Controller state otherwise lives in the
service's memory: a restarted replica starts the controllers afresh
(direction 0, step 1), which the rules tolerate.

What a share is on a real hypervisor: the market computes each server's
proportional share of its host (``GET /v1/shares``); this autoscaler does
not enforce it. The vertical policies (``themis-vertical-deadline``,
``merkat-vertical``) therefore change nothing on the hypervisor: a higher
bid buys protection from preemption (a later place in the market's
preemption order, lowest bid per unit first) and a larger computed
share, not CPU time (in the papers it changes the VM's CPU share at
once). Nova rewrites a domain's ``<cputune>`` from the flavor at hard
reboot, resize and migration, so live libvirt weights set by a host
agent would not hold; the operator's way to tie CPU time to bids is the
flavor's ``quota:cpu_shares`` (see doc/source/admin/market.rst, "What
the vertical SLO policies buy here").
"""

import dataclasses
import datetime
import decimal
import math

from opie_sched.market import pricing
from opie_sched.market import slo
from opie_sched import plugins
from opie_sched.services.autoscaler import spot
from opie_sched.services.market import client as market_client

#: stevedore namespace of the SLO policies.
NAMESPACE = 'opie_sched.autoscaler.policies'

#: The smallest bid a controller submits, currency per hour (the market's
#: reserve price is per unit; a bid of 0 would leave the server no share).
DEFAULT_BID_MIN = 0.0001


class PolicyError(ValueError):
    """An invalid SLO declaration or an unusable input; says which."""


def _number(params, key, what, default=None, positive=False, minimum=None):
    if key not in params:
        if default is None:
            raise PolicyError('%s: missing %s' % (what, key))
        return default
    value = params[key]
    try:
        return slo._num(value, '%s: %s' % (what, key), minimum=minimum,
                        positive=positive)
    except slo.SLOError as exc:
        raise PolicyError(str(exc))


def parse_time(value, what):
    """Epoch seconds of an ISO 8601 time (UTC unless it says) or of a
    number of epoch seconds.

    :raises PolicyError: neither.
    """
    if isinstance(value, datetime.datetime):
        dt = value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise PolicyError('%s must be finite, got %r' % (what, value))
        return float(value)
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith('Z'):
            text = text[:-1] + '+00:00'
        try:
            dt = datetime.datetime.fromisoformat(text)
        except ValueError:
            raise PolicyError('%s must be an ISO 8601 time such as '
                              '2026-11-24T07:00:00Z, got %r' % (what, value))
    else:
        raise PolicyError('%s must be an ISO 8601 time, got %r'
                          % (what, value))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=datetime.timezone.utc)
    return dt.timestamp()


@dataclasses.dataclass
class Context:
    """What a policy sees in one round.

    :param now: epoch seconds.
    :param metric: the demand source's value (the policy says which).
    :param nvms: ACTIVE servers of the application.
    :param flavor: ``{resource: units}`` of one server (vCPU, MB).
    :param prices: ``{resource: price}``, currency per unit-hour.
    :param capacity: ``{resource: units}`` of the market pool, or None.
    :param bid: the servers' current bid (mean), currency per hour.
    :param bid_max: the budget per hour for all servers.
    :param max_servers: the application's ``max_servers``.
    :param shares: ``{resource: units}``, a server's share now (mean), or
        None when the market does not tell.
    """

    now: float
    metric: float
    nvms: int
    flavor: dict
    prices: dict
    capacity: dict
    bid: float
    bid_max: float
    max_servers: int
    shares: dict = None

    def flavor_price(self):
        """The server's spot price, currency per hour."""
        return sum(float(self.prices[r]) * float(self.flavor[r])
                   for r in self.flavor)


@dataclasses.dataclass
class Decision:
    """A policy's decision: the bid per server (currency per hour) and the
    number of servers (None: unchanged), with the reason for the log.
    """

    bid: float
    nvms: int = None
    reason: str = ''


class Policy(object):
    """Base of the SLO policies: parameters checked at load time.

    :param params: the application's ``slo`` mapping without ``policy``.
    :param what: how errors name the declaration.
    :raises PolicyError: an unknown or invalid parameter.
    """

    #: Known parameter names.
    PARAMS = ()

    def __init__(self, params, what='slo'):
        unknown = sorted(set(params) - set(self.PARAMS) - {'bid_min'})
        if unknown:
            raise PolicyError('%s: unknown parameter(s) %s (known: %s)' % (
                what, ', '.join(map(str, unknown)),
                ', '.join(sorted(self.PARAMS + ('bid_min',)))))
        self.what = what
        self.bid_min = _number(params, 'bid_min', what, DEFAULT_BID_MIN,
                               minimum=0)

    def per_server_max(self, ctx):
        return ctx.bid_max / max(ctx.nvms, 1)

    def decide(self, ctx):
        """A :class:`Decision` for ``ctx`` (:class:`Context`)."""
        raise NotImplementedError


class ThemisVerticalDeadline(Policy):
    """Themis HPCC'12 Fig. 4 Vertical-Deadline on real servers.

    The metric is the remaining work; the progress estimate ``p_est`` is
    an EWMA (weight 0.5, Table I) of the work done per second between
    rounds, ``p_ref = remaining / (deadline - now)``, the allocation
    estimate ``p_est / full_rate`` against ``alloc_ref = 1``. The bid of
    every server follows :class:`opie_sched.market.slo.VerticalDeadline`.
    """

    PARAMS = ('deadline', 'full_rate', 't_diff', 'limit')

    def __init__(self, params, what='slo'):
        super().__init__(params, what)
        if 'deadline' not in params:
            raise PolicyError('%s: missing deadline' % what)
        self.deadline = parse_time(params['deadline'], '%s: deadline' % what)
        self.full_rate = _number(params, 'full_rate', what, positive=True)
        self.rule = slo.VerticalDeadline(
            _number(params, 't_diff', what, slo.T_DIFF, minimum=0),
            _number(params, 'limit', what, slo.LIMIT, minimum=1))
        self.last = None
        self.p_est = None

    def decide(self, ctx):
        remaining = max(0.0, ctx.metric)
        if self.last is not None and ctx.now > self.last[0]:
            rate = max(0.0, (self.last[1] - remaining)
                       / (ctx.now - self.last[0]))
            self.p_est = rate if self.p_est is None else (
                0.5 * rate + 0.5 * self.p_est)
        self.last = (ctx.now, remaining)
        p_ref = slo.reference_progress(remaining, self.deadline - ctx.now)
        limit = self.per_server_max(ctx)
        if self.p_est is None:
            # First round: the initial payment for the reference progress
            # at the current price (HPCC'12 §IV.A).
            need = min(1.0, p_ref / self.full_rate) if p_ref != math.inf \
                else 1.0
            bid = min(max(need * ctx.flavor_price(), self.bid_min), limit)
            return Decision(bid, None, 'initial bid for p_ref %.4g/s' % p_ref)
        alloc = self.p_est / self.full_rate
        bid = self.rule(ctx.bid, self.p_est, p_ref, alloc, 1.0,
                        self.bid_min, limit)
        return Decision(bid, None, 'p_est %.4g/s, p_ref %.4g/s, alloc_est '
                        '%.3g' % (self.p_est, p_ref, alloc))


class ThemisHorizontalDeadline(Policy):
    """Themis HPCC'12 Fig. 4 Horizontal-Deadline (Fig. 3 Scale-Multi-VMs).

    The metric is the number of remaining tasks; the estimated execution
    time ``ceil((n - 1) T_avg / nvms) + T_max`` is compared with the time
    left; the per-server bid is ``alloc_ref * P``, the flavor's spot price,
    and the number stays within what ``bid_max`` buys and
    ``max_servers``.
    """

    PARAMS = ('deadline', 'task_time', 'task_time_max', 'headroom', 'limit')

    def __init__(self, params, what='slo'):
        super().__init__(params, what)
        if 'deadline' not in params:
            raise PolicyError('%s: missing deadline' % what)
        self.deadline = parse_time(params['deadline'], '%s: deadline' % what)
        self.t_avg = _number(params, 'task_time', what, positive=True)
        self.t_max = _number(params, 'task_time_max', what, self.t_avg,
                             positive=True)
        self.rule = slo.HorizontalDeadline(
            _number(params, 'headroom', what, 1.0, minimum=1),
            _number(params, 'limit', what, slo.LIMIT, minimum=1))

    def decide(self, ctx):
        tasks = int(max(0, math.ceil(ctx.metric)))
        bid, n = self.rule(tasks, self.t_avg, self.t_max,
                           self.deadline - ctx.now, max(ctx.nvms, 1), 1.0,
                           ctx.flavor_price(), ctx.bid_max, ctx.max_servers)
        n = max(1, n)
        return Decision(max(bid, self.bid_min), n, '%d tasks left, %.0f s '
                        'to the deadline' % (tasks, self.deadline - ctx.now))


class MerkatVertical(Policy):
    """Merkat Alg. 1 on real servers: the server's bid split per resource
    (:func:`opie_sched.market.pricing.split_bid`), adapted on CPU and
    memory, summed back into the one bid the market reads.
    """

    PARAMS = ('target', 'low', 'high', 'min_allocation')

    def __init__(self, params, what='slo'):
        super().__init__(params, what)
        self.target = _number(params, 'target', what, positive=True)
        self.low = _number(params, 'low', what, 0.75 * self.target)
        self.high = _number(params, 'high', what, self.target)
        if self.low > self.high:
            raise PolicyError('%s: low %g > high %g' % (what, self.low,
                                                        self.high))
        self.min_allocation = _number(params, 'min_allocation', what, 0.25,
                                      minimum=0)
        self.rule = slo.MerkatVertical()

    def decide(self, ctx):
        cap = ctx.capacity or ctx.flavor
        parts = pricing.split_bid(max(ctx.bid, self.bid_min),
                                  {r: cap[r] for r in ctx.flavor},
                                  ctx.flavor)
        bids = {r: float(b) for r, b in parts.items()}
        if ctx.shares:
            alloc = {r: float(ctx.shares.get(r, ctx.flavor[r]))
                     for r in ctx.flavor}
        else:
            # No share published: Merkat eq. 1's a_i = b_i / p at the
            # pool's price, capped at the flavor.
            alloc = {r: float(ctx.flavor[r]) if not float(ctx.prices[r])
                     else min(float(ctx.flavor[r]),
                              bids[r] / float(ctx.prices[r]))
                     for r in ctx.flavor}
        amax = {r: float(ctx.flavor[r]) for r in ctx.flavor}
        amin = {r: self.min_allocation * amax[r] for r in ctx.flavor}
        new = self.rule(bids, alloc, amin, amax, ctx.metric, self.target,
                        self.low, self.high,
                        self.bid_min / len(ctx.flavor),
                        self.per_server_max(ctx))
        return Decision(sum(new.values()), None, 'v %.4g (band %.4g-%.4g)'
                        % (ctx.metric, self.low, self.high))


class MerkatHorizontal(Policy):
    """Merkat Alg. 2 with Alg. 3's bound on real servers."""

    PARAMS = ('low', 'high')

    def __init__(self, params, what='slo'):
        super().__init__(params, what)
        self.low = _number(params, 'low', what)
        self.high = _number(params, 'high', what)
        if self.low > self.high:
            raise PolicyError('%s: low %g > high %g' % (what, self.low,
                                                        self.high))
        self.rule = slo.MerkatHorizontal()

    def decide(self, ctx):
        if not ctx.capacity:
            raise PolicyError('%s: the market does not publish the pool '
                              'capacity Merkat Alg. 3 needs' % self.what)
        prices = {r: float(ctx.prices[r]) for r in ctx.flavor}
        n, bids = self.rule(ctx.metric, self.low, self.high, ctx.nvms,
                            prices, {r: float(ctx.flavor[r])
                                     for r in ctx.flavor},
                            {r: float(ctx.capacity[r]) for r in ctx.flavor},
                            ctx.bid_max, ctx.max_servers)
        return Decision(max(sum(bids.values()), self.bid_min), n,
                        'v %.4g (band %.4g-%.4g)' % (ctx.metric, self.low,
                                                     self.high))


def load_policy(spec, what='slo'):
    """The policy object of an application's ``slo`` declaration.

    :param spec: mapping with ``policy`` (a :data:`NAMESPACE` plugin name)
        and its parameters.
    :raises PolicyError: not a mapping, unknown policy, bad parameters.
    """
    if not isinstance(spec, dict) or 'policy' not in spec:
        raise PolicyError('%s must be an object with a "policy" (one of %s)'
                          % (what, ', '.join(policy_names())))
    name = spec['policy']
    params = {k: v for k, v in spec.items() if k != 'policy'}
    try:
        return plugins.load(NAMESPACE, name, kind='SLO policy',
                            args=(params, what), passthrough=(PolicyError,))
    except plugins.PluginError as exc:
        raise PolicyError('%s: %s' % (what, exc)) from exc


def policy_names():
    """Sorted names of the installed SLO policies."""
    return plugins.names(NAMESPACE)


# -- talking to the market ----------------------------------------------------

class MarketClient(object):
    """Bids, prices and pool capacity through the market's REST API.

    :param session: as :class:`opie_sched.services.autoscaler.spot.SpotPrices`.
    :param timeout: seconds one request may take.
    :param catalog: as :func:`opie_sched.services.autoscaler.spot.api_client`
        (None: the public endpoint).
    """

    def __init__(self, session=None, timeout=5.0, catalog=None):
        self._session = session
        self.timeout = timeout
        self._catalog = catalog

    def _call(self, market_url, call):
        """``call(client)`` with the market API's one client of
        ``market_url``; its errors as :class:`.spot.MarketError`.
        """
        try:
            return call(spot.api_client(self._session, market_url,
                                        self.timeout, self._catalog))
        except market_client.MarketError as exc:
            raise spot.MarketError(spot.why(exc))

    def balance(self, market_url):
        """The balance of the caller's project account in the market's
        ledger (Decimal, currency); 0 when the project has no account.
        """
        try:
            doc = self._call(market_url, lambda api: api.account())
        except spot.MarketError as exc:
            if ' answered 404' in str(exc):
                return decimal.Decimal(0)
            raise
        try:
            return spot._decimal(doc['balance'], 'balance')
        except (KeyError, TypeError):
            raise spot.MarketError('GET account: unexpected answer %r'
                                   % (doc,))

    def get_bid(self, market_url, server_id):
        """The server's bid (Decimal, currency per hour) or None."""
        doc = self._call(market_url, lambda api: api.get_bid(server_id))
        try:
            bid = doc['bid']
        except (KeyError, TypeError):
            raise spot.MarketError('GET bid of %s: unexpected answer %r'
                                   % (server_id, doc))
        return None if bid is None else spot._decimal(bid, 'bid')

    def set_bid(self, market_url, server_id, bid):
        """Set the server's bid (currency per hour) through the market."""
        text = format(decimal.Decimal(repr(float(bid))).quantize(
            decimal.Decimal('0.000001'), rounding=decimal.ROUND_HALF_UP)
            .normalize(), 'f')
        self._call(market_url, lambda api: api.set_bid(server_id, text))
        return decimal.Decimal(text)

    def shares(self, market_url):
        """``{server_id: {resource: units}}`` of ``GET /shares`` (the
        servers' shares of their hosts; admin only).
        """
        doc = self._call(market_url, lambda api: api.shares())
        out = {}
        for row in doc.get('shares', ()):
            try:
                out[row['server_id']] = {
                    r: float(v) for r, v in row['host_shares'].items()}
            except (KeyError, TypeError, AttributeError, ValueError):
                continue
        return out

    def capacity(self, market_url, pool, period_start):
        """``{resource: units}`` of ``pool`` in the newest period (from
        ``GET /prices/history``), or None when not published.
        """
        if not period_start:
            return None
        rows = self._call(market_url, lambda api: api.price_history(
            start=period_start, pool=pool))
        out = {}
        for row in rows:
            if row.get('period_start') == period_start and \
                    row.get('capacity') is not None:
                out[row['resource']] = float(row['capacity'])
        return out or None


# -- one round ----------------------------------------------------------------
