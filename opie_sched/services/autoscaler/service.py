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
"""The ``opie-autoscaler`` loop: demand -> plan -> make-before-break.

Each round, for every application of the applications file
(:mod:`opie_sched.services.autoscaler.app`):

1. take the tooz lock ``opie-autoscaler.<app name>`` without waiting; if
   another replica holds it, skip the application this round (two replicas
   never act on one application at once);
2. resolve the flavors, prices, image and group; read the demand ``C_req``
   (:mod:`opie_sched.services.autoscaler.demand`). A price is the applications
   file's, else the spot market's for a preemptible flavor when
   ``market_url`` is set (:mod:`opie_sched.services.autoscaler.spot`; the
   market's prices are fetched once per round), else the flavor's extra
   spec. A bad declaration, unavailable market prices, a missing or
   invalid demand, or one needing more than ``max_servers`` servers keeps
   the current set and logs why;
3. list the running set (ACTIVE servers of the declared flavors);
4. plan. Scale-in first: when the running set over-provisions, its
   cheapest subset still covering ``C_req`` (free, only stops). Then
   :func:`opie_sched.flavormix.plan` -- thesis Paper V, Algorithm 1: scale
   out with the optimal set for the shortfall (S_delta), and switch to the
   optimal set for ``C_req`` when ``P_hat < P`` and ``1 - (P_hat*d +
   R)/(P*d) > K`` with ``R = C_extra * repack_time`` -- capped at the
   application's budget (Merkat Alg. 3);
5. execute it make-before-break
   (:mod:`opie_sched.services.autoscaler.executor`),
   or only log it in dry-run mode. Every reconfiguration is logged with its
   predicted saving.
"""

import decimal
import json
import logging
import os
import socket
import time
import uuid

from opie_sched.common import coordination
from opie_sched import flavormix
from opie_sched.market import pricing
from opie_sched.market import slo
from opie_sched.services.autoscaler import app as app_mod
from opie_sched.services.autoscaler import demand as demand_mod
from opie_sched.services.autoscaler import executor as executor_mod
from opie_sched.services.autoscaler import policies
from opie_sched.services.autoscaler import spot
from opie_sched.services.market import client as market_client

LOG = logging.getLogger(__name__)

LOCK_PREFIX = 'opie-autoscaler.'


def lock_name(app_name):
    """The tooz lock name of an application (bytes)."""
    return (LOCK_PREFIX + app_name).encode('utf-8')


class AutoscalerService(coordination.CoordinatedRounds):
    """The autoscaler of the applications of one applications file.

    :meth:`run_once` is one round; the daemon runs one every
    ``[opie_autoscaler] interval`` seconds as an oslo.service service
    (:meth:`service`, :func:`opie_sched.common.coordination.serve`).

    :param conf: a ``cfg.ConfigOpts`` with the ``[opie_autoscaler]``
        options registered
        (:func:`opie_sched.conf.autoscaler.register_opts`).
    :param conn: an ``openstack.connection.Connection``; default one made
        from ``[opie_autoscaler] cloud`` / ``OS_*`` at first use.
    :param applications: optional list of
        :class:`~opie_sched.services.autoscaler.app.Application` used instead
        of the
        applications file.
    :param executor: optional :class:`~.executor.Executor` (default one on
        ``conn`` with the configured timeouts).
    :param coordinator: optional started tooz coordinator; default one on
        ``[opie_autoscaler] coordination_url``, started by :meth:`start`.
    :param observer: passed to the default executor.
    :param market: optional :class:`~.spot.SpotPrices`; default one on the
        connection's keystoneauth session (plain HTTP without auth).
    """

    def __init__(self, conf, conn=None, applications=None, executor=None,
                 coordinator=None, member_id=None, observer=None,
                 market=None):
        self.conf = conf
        self.opts = conf.opie_autoscaler
        self._conn = conn
        self.applications = applications
        self._executor = executor
        self._observer = observer
        self._market = market
        #: Per-application state of the SLO policies (opie_sched.
        #: slo_step), kept across rounds.
        self.slo_state = {}
        self._slo_client = None
        self._init_coordination(coordinator)
        self.member_id = member_id or 'opie-autoscaler-%s-%d-%s' % (
            socket.gethostname(), os.getpid(), uuid.uuid4().hex[:6])

    # -- wiring -------------------------------------------------------------

    @property
    def executor(self):
        if self._executor is None:
            self._executor = executor_mod.Executor(
                self.conn, boot_timeout=self.opts.boot_timeout,
                delete_timeout=self.opts.delete_timeout,
                poll_interval=self.opts.poll_interval,
                health_timeout=self.opts.health_request_timeout,
                observer=self._observer)
        return self._executor

    @property
    def market(self):
        """The :class:`~.spot.SpotPrices` of the preemptible flavors."""
        if self._market is None:
            self._market = spot.SpotPrices(
                session=self._market_session,
                timeout=self.opts.health_request_timeout,
                catalog=self._market_catalog)
        return self._market

    @property
    def slo_client(self):
        """The :class:`~.policies.MarketClient` setting the SLO bids."""
        if self._slo_client is None:
            self._slo_client = policies.MarketClient(
                session=self._market_session,
                timeout=self.opts.health_request_timeout,
                catalog=self._market_catalog)
        return self._slo_client

    def _market_session(self):
        """The connection's keystoneauth session if it authenticates, else
        None (plain ``requests``).
        """
        session = getattr(self.conn, 'session', None)
        if session is None or getattr(session, 'auth', None) is None:
            return None
        return session

    def _market_catalog(self):
        """Where the connection finds the market in its catalog:
        ``{"interface", "region_name"}`` of its configuration
        (``[service_credentials] valid_interfaces``, ``region_name``).
        """
        return market_client.connection_catalog(self.conn)

    def _coordination_url(self):
        return self.opts.coordination_url

    # -- rounds -------------------------------------------------------------

    def load_applications(self):
        """The applications to scale.

        :raises opie_sched.services.autoscaler.app.AppError: no or a bad file.
        """
        if self.applications is not None:
            return list(self.applications)
        if not self.opts.applications_file:
            raise app_mod.AppError('[opie_autoscaler] applications_file is '
                                   'not set')
        return app_mod.load_applications(self.opts.applications_file)

    def run_once(self):
        """One round over every application; list of :class:`Outcome`.

        A bad applications file changes nothing (one ``'error'`` outcome
        for the application ``'*'``).
        """
        if self.coordinator is None:
            self.start()
        self.market.new_round()  # market prices: fetched once per round
        error = None
        try:
            apps = self.load_applications()
        except app_mod.AppError as exc:
            error = str(exc)
        if error is not None:  # logged outside the except: no traceback
            LOG.error('%s; no application is changed this round', error)
            return [executor_mod.Outcome(app='*', action='error',
                                         reason=error)]
        return [self.step(a) for a in apps]

    def round_interval(self):
        """``[opie_autoscaler] interval`` (seconds)."""
        return self.opts.interval

    def run_round(self):
        """:meth:`run_once`, an exception logged (the daemon's round)."""
        try:
            self.run_once()
        except Exception:
            LOG.exception('Autoscaler round failed')

    def step(self, application):
        """Lock, plan and execute one application; an :class:`Outcome`."""
        if self.coordinator is None:
            self.start()
        lock = self.coordinator.get_lock(lock_name(application.name))
        if not lock.acquire(blocking=False):
            LOG.info('Application %s: another replica is acting on it, '
                     'skipped this round', application.name)
            return executor_mod.Outcome(
                app=application.name, action='locked',
                reason='another replica holds the lock')
        try:
            return self._step(application)
        except _cloud_errors() as exc:
            reason = 'cloud error: %s' % ' '.join(str(exc).split())
        except Exception as exc:
            LOG.exception('Application %s: round failed', application.name)
            return executor_mod.Outcome(
                app=application.name, action='error',
                reason='%s: %s' % (type(exc).__name__, exc))
        finally:
            lock.release()
        # An API or authentication error: one line, no traceback.
        LOG.error('Application %s: %s; nothing changed by this step',
                  application.name, reason)
        return executor_mod.Outcome(app=application.name, action='error',
                                    reason=reason)

    def _param(self, application, name):
        return application.overrides.get(name, getattr(self.opts, name))

    def _kept(self, application, reason):
        prefix = 'application %s: ' % application.name
        LOG.warning('Application %s: %s; keeping the current set',
                    application.name, reason[len(prefix):]
                    if reason.startswith(prefix) else reason)
        return executor_mod.Outcome(app=application.name, action='kept',
                                    reason=reason)

    def _step(self, application):
        if application.slo is not None:
            # A market SLO controller sizes and bids for it (issue 13).
            return slo_step(self, application)
        problem = None
        market_url = self._param(application, 'market_url')
        if not market_url and 'market_pool' in application.overrides:
            problem = ('market_pool %s is given but no market_url (here or '
                       'in [opie_autoscaler])'
                       % application.overrides['market_pool'])
        try:
            if problem is None:
                if market_url:
                    app_mod.check_market_url(market_url, 'market_url')
                resolved = app_mod.resolve(
                    application, self.conn, self.opts.price_extra_spec,
                    market=self.market if market_url else None,
                    market_url=market_url,
                    market_pool=self._param(application, 'market_pool'))
                source = application.demand_source()
        except (app_mod.AppError, flavormix.RepackingError,
                demand_mod.DemandError) as exc:
            problem = str(exc)
        except spot.MarketError as exc:
            problem = 'market prices unavailable: %s' % exc
        if problem is None:
            try:
                required = source.read()
            except demand_mod.DemandError as exc:
                problem = 'demand unavailable: %s' % exc
        if problem is None:
            limit = self._param(application, 'max_servers')
            biggest = max(t.capacity for t in resolved.types)
            if required > limit * biggest:
                problem = ('demand %g needs more than max_servers=%d '
                           'servers (largest capacity %g)' % (
                               required, limit, biggest))
        if problem is not None:  # logged outside the except blocks
            return self._kept(application, problem)
        inv = self.executor.inventory(application, resolved)
        if inv.ignored:
            LOG.info('Application %s: not counted (not ACTIVE or undeclared '
                     'flavor): %s', application.name, ', '.join(
                         '%s %s/%s' % (sid, status, fl)
                         for sid, _, status, fl in inv.ignored))
        health_url = self._param(application, 'health_url')
        try:
            if health_url:
                app_mod.check_health_url(health_url, 'health_url')
            result, target, floor = self.plan(application, resolved.types,
                                              required, inv.counts)
        except (app_mod.AppError, flavormix.RepackingError) as exc:
            problem = str(exc)
        if problem is not None:
            return self._kept(application, problem)
        if sum(target.values()) > self._param(application, 'max_servers'):
            return self._kept(application, 'the plan %s exceeds max_servers=%d'
                              % (executor_mod.set_text(target),
                                 self._param(application, 'max_servers')))
        summary = describe(resolved.types, required, inv.counts, target,
                           result, source.describe())
        market_prices = resolved.market_prices()
        if market_prices:
            summary += '; spot prices: ' + market_prices
        if target == inv.counts:
            LOG.debug('Application %s: no change. %s', application.name,
                      summary)
        out = self.executor.execute(
            application, resolved, inv, target, floor, summary,
            dry_run=self.opts.dry_run,
            health_url=health_url,
            boot_timeout=self._param(application, 'boot_timeout'))
        out.plan = result.as_dict()
        if out.action in ('reconfigured', 'dry-run'):
            out.saving_per_hour = (
                flavormix.set_price(resolved.types, inv.counts)
                - flavormix.set_price(resolved.types, target))
        return out

    def plan(self, application, types, required, current):
        """The target set for ``required``; ``(RepackPlan, target, floor)``.

        :param types: VM types (prices currency/hour).
        :param required: ``C_req`` >= 0.
        :param current: running ``{flavor: count}``.
        :returns: the :class:`opie_sched.flavormix.RepackPlan` (made on the
            scaled-in set), the target ``{flavor: count}`` and the floor
            capacity the transition must not go below (``C_req``, or the
            target's capacity when the budget caps it).
        :raises opie_sched.flavormix.RepackingError: bad parameters.
        """
        method = self.opts.method
        base = dict(current)
        if flavormix.set_capacity(types, base) > required:
            # Scale-in (Paper V, 4: the shared rule): the cheapest subset of
            # the running set still covering the demand. Only stops: free.
            upper = {t.name: base.get(t.name, 0) for t in types}
            base = flavormix.optimal_set(types, required, current=base,
                                         upper=upper, method=method)
        result = flavormix.plan(
            types, required, current=base,
            d=self._param(application, 'stability_interval'),
            K=self._param(application, 'gain_threshold'),
            repack_time=self._param(application, 'repack_time') / 3600.0,
            c_extra=self._param(application, 'c_extra'),
            budget=application.budget,
            budget_period=application.budget_period, method=method)
        target = dict(result.target)
        floor = min(float(required), flavormix.set_capacity(types, target))
        return result, target, floor


def _cloud_errors():
    """openstacksdk and keystoneauth exception classes."""
    from keystoneauth1 import exceptions as ksa_exc
    from openstack import exceptions as sdk_exc
    return (sdk_exc.SDKException, ksa_exc.ClientException)


def describe(types, required, current, target, result, source=''):
    """One line: demand, prices and the predicted saving of a transition.

    The predicted saving is ``price(current) - price(target)`` in currency
    per hour (negative: a scale-out costs more); for a repacking also the
    net saving over the stability interval ``d``, ``(P - P_hat) * d - R``
    (Paper V, 3.4).
    """
    p_cur = flavormix.set_price(types, current)
    p_new = flavormix.set_price(types, target)
    kind = ('repacking' if result.repack else 'scale-out' if p_new > p_cur
            else 'scale-in' if p_new < p_cur else 'no change')
    text = ('%s for demand %g (%s): capacity %g -> %g, price %.4g/h -> '
            '%.4g/h, predicted saving %.4g/h' % (
                kind, required, source,
                flavormix.set_capacity(types, current),
                flavormix.set_capacity(types, target), p_cur, p_new,
                p_cur - p_new))
    if result.repack:
        net = ((result.baseline_price - result.optimal_price) * result.d
               - result.reconfig_cost)
        text += (' (repacking %s -> %s saves %.4g/h, %.4g net over d=%g h '
                 'after R=%.4g)' % (
                     executor_mod.set_text(result.baseline),
                     executor_mod.set_text(result.optimal),
                     result.baseline_price - result.optimal_price, net,
                     result.d, result.reconfig_cost))
    return text + '; gain test: ' + result.reason


def slo_step(service, application, clock=time.time):
    """One round of an SLO application: decide, then set bids and scale.

    :param service: the :class:`~opie_sched.services.autoscaler.service.
        AutoscalerService` (its connection, executor, market prices,
        options and per-application state).
    :returns: :class:`~opie_sched.services.autoscaler.executor.Outcome`; a
        problem
        keeps everything as it is (action ``'kept'``, reason logged).
    """
    here = 'application %s' % application.name
    market_url = service._param(application, 'market_url')
    pool = service._param(application, 'market_pool')
    state = service.slo_state.setdefault(application.name, {})
    try:
        if not market_url:
            raise policies.PolicyError(
                'an slo needs market_url (here or in [opie_autoscaler])')
        if application.budget is None:
            raise policies.PolicyError('an slo needs a budget')
        if len(application.flavors) != 1:
            raise policies.PolicyError(
                'an slo application declares exactly one flavor')
        spec_key = json.dumps(application.slo, sort_keys=True, default=str)
        if state.get('spec') != spec_key:
            state.clear()
            state['spec'] = spec_key
            state['policy'] = policies.load_policy(application.slo,
                                          '%s: slo' % here)
        policy = state['policy']
        resolved = app_mod.resolve(
            application, service.conn, service.opts.price_extra_spec,
            market=service.market, market_url=market_url, market_pool=pool)
        metric = application.demand_source().read()
        quote = service.market.quote(market_url)
        if pool not in quote.prices:
            raise spot.MarketError('market %s has no pool %r'
                                   % (market_url, pool))
        prices = quote.prices[pool]
        client = service.slo_client
        capacity = None
        try:
            capacity = client.capacity(market_url, pool, quote.period_start)
        except spot.MarketError as exc:
            state.setdefault('warned', False)
            if not state['warned']:
                LOG.warning('%s: no pool capacity: %s', here, exc)
                state['warned'] = True
    except (policies.PolicyError, app_mod.AppError, demand_mod.DemandError,
            spot.MarketError, slo.SLOError) as exc:
        return service._kept(application, '%s: %s' % (here, exc))
    fspec = application.flavors[0]
    inv = service.executor.inventory(application, resolved)
    servers = list(inv.servers.get(fspec.name, ()))
    flavor = service.conn.compute.find_flavor(
        fspec.name, ignore_missing=False, get_extra_specs=True)
    amounts = {pricing.VCPUS: float(flavor.vcpus),
               pricing.MEMORY_MB: float(flavor.ram)}
    now = clock()
    try:
        balance = client.balance(market_url)
        bids = [client.get_bid(market_url, s.id) for s in servers]
        known = [float(b) for b in bids if b is not None]
        bid_now = ((sum(known) / len(known)) if known
                   else (state.get('bid') or 0.0))
        shares = None
        try:
            known_shares = client.shares(market_url)
        except spot.MarketError:
            known_shares = {}   # not admin, or not published
        mine = [known_shares[s.id] for s in servers if s.id in known_shares]
        if mine:
            shares = {r: sum(m.get(r, 0.0) for m in mine) / len(mine)
                      for r in amounts}
        ctx = policies.Context(
            now=now, metric=float(metric), nvms=len(servers),
            flavor=amounts,
            prices={r: prices.get(r, decimal.Decimal(0)) for r in amounts},
            capacity=capacity, bid=bid_now,
            bid_max=slo.bid_max(min(float(balance), application.budget),
                                application.budget_period),
            max_servers=service._param(application, 'max_servers'),
            shares=shares)
        decision = policy.decide(ctx)
    except (policies.PolicyError, spot.MarketError, slo.SLOError) as exc:
        return service._kept(application, '%s: %s' % (here, exc))
    plan = {'policy': application.slo.get('policy'), 'bid': decision.bid,
            'nvms': decision.nvms, 'reason': decision.reason,
            'bid_max': ctx.bid_max, 'metric': ctx.metric,
            'balance': balance}
    target_n = len(servers) if decision.nvms is None else decision.nvms
    out = executor_mod.Outcome(app=application.name, action='none',
                               before=dict(inv.counts),
                               target={fspec.name: target_n})
    if target_n != len(servers):
        out = service.executor.execute(
            application, resolved, inv, {fspec.name: target_n}, 0.0,
            'SLO %s: %s' % (plan['policy'], decision.reason),
            dry_run=service.opts.dry_run,
            health_url=service._param(application, 'health_url'),
            boot_timeout=service._param(application, 'boot_timeout'))
    out.plan = plan
    if service.opts.dry_run:
        LOG.info('Application %s [dry-run]: would bid %.6g/h per '
                           'server (%s)', application.name, decision.bid,
                           decision.reason)
        return out
    live = [s.id for s in servers if s.id not in out.stopped] + list(
        out.started)
    failed = []
    for sid in live:
        try:
            client.set_bid(market_url, sid, decision.bid)
        except spot.MarketError as exc:
            failed.append('%s: %s' % (sid, exc))
    state['bid'] = decision.bid
    if failed:
        out.reason = ('%s; bid not set on %s' % (out.reason, '; '.join(
            failed))).lstrip('; ')
        LOG.error('Application %s: %s', application.name,
                            out.reason)
    if out.action == 'none':
        out.action = 'bid-set' if live and not failed else out.action
        out.reason = out.reason or 'bid %.6g/h on %d server(s): %s' % (
            decision.bid, len(live), decision.reason)
    LOG.info('Application %s: SLO %s: bid %.6g/h, %d server(s); '
                       '%s', application.name, plan['policy'], decision.bid,
                       target_n, decision.reason)
    return out
