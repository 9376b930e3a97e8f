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
"""Prices of a period (Merkat eq. 1, work-conserving) and the markets
recorded for it.

:meth:`Pricer.collect` reads the running preemptible servers, their bids
and the pending demand; :meth:`Pricer.price` clears every pool's market
(:func:`opie_sched.market.pricing.clear_market`, per-host shares with
:func:`opie_sched.market.pricing.allocate`); :meth:`Pricer.assess`
recomputes a recorded period's markets (:func:`opie_sched.market.outbid.
assess`), so a replay and the API see the same shares, charges and
out-of-bid servers.
"""

import dataclasses
import decimal

from oslo_log import log as logging

from opie_sched.market import bids as market_bids
from opie_sched.market import budget
from opie_sched.market import outbid
from opie_sched.market import pricing
from opie_sched.services.market import cloud
from opie_sched.services.market.db import models

LOG = logging.getLogger(__name__)

#: Server statuses that hold resources on a host, so are priced and
#: charged: a server in the middle of (or waiting to confirm) a resize,
#: a migration or a rebuild still holds its host (and Placement its
#: allocations); leaving these out let a server evade the market by
#: never confirming a resize (VERIFY_RESIZE).
RUNNING = ('ACTIVE', 'VERIFY_RESIZE', 'RESIZE', 'REVERT_RESIZE',
           'MIGRATING', 'REBUILD', 'REBOOT', 'HARD_REBOOT', 'PASSWORD',
           'PAUSED', 'SUSPENDED', 'RESCUE')

#: Bid source of a server whose bid was rejected (it bids 0).
SOURCE_INVALID = 'invalid'

#: Bid sources of pending demand (snapshot rows that are not servers on
#: a host: :attr:`opie_sched.market.outbid.Server.pending`): a boot Nova
#: refused (NoValidHost) and a boot not placed yet.
SOURCE_REFUSED = 'refused'
SOURCE_PENDING = 'pending'
PENDING_SOURCES = (SOURCE_REFUSED, SOURCE_PENDING)


def snapshot_server(row):
    """The :class:`opie_sched.market.outbid.Server` of a snapshot row."""
    return outbid.Server(
        uuid=row['server_uuid'], bid=row['bid'],
        held={pricing.VCPUS: row['vcpus'],
              pricing.MEMORY_MB: row['memory_mb']},
        project=row['project'], created_at=row['created_at'],
        pool=row['pool'], pending=row['bid_source'] in PENDING_SOURCES)


def position_json(position, period_start=None):
    """JSON-friendly dict of an :class:`opie_sched.market.outbid.Position`
    (units by resource; money as Decimals, currency per hour).
    """
    srv = position.server
    body = {'pool': srv.pool, 'bid': srv.bid, 'bids': dict(position.bids),
            'share': dict(position.shares), 'minimum': dict(srv.held),
            'out_of_bid': position.out_of_bid,
            'shortfall': dict(position.shortfall),
            'charge_per_hour': position.charge_per_hour}
    if period_start is not None:
        body['period_start'] = cloud.iso(period_start)
    return body


class Pricer:
    """Reads the demand and prices it.

    :param store: :class:`opie_sched.services.market.db.api.MarketStore`.
    :param cloud: :class:`.cloud.Cloud` (or an object with its methods).
    :param settings: :class:`.settings.Settings`.
    :param credit: :class:`opie_sched.market.budget.CreditManager` (the
        balances that back pending demand).
    :param tracker: optional :class:`.listener.DemandTracker`.
    """

    def __init__(self, store, cloud, settings, credit, tracker=None):
        self.store = store
        self.cloud = cloud
        self.settings = settings
        self.credit = credit
        self.tracker = tracker

    def collect(self, now):
        """Running preemptible servers with their bids, and the pending
        demand.

        Pending demand (:data:`PENDING_SOURCES`): a preemptible boot Nova
        turned away (ERROR with a NoValidHost fault, created less than
        :attr:`.settings.Settings.refused_window` seconds ago) or not placed
        yet (BUILD without a host). It is priced with its flavor and bid like a
        server (Merkat eq. 1 sums the bids of every request), so refused
        demand raises the price; it is never charged nor given notice
        (:attr:`opie_sched.market.outbid.Server.pending`). A refused
        boot with an invalid bid, or one its project's balance does not
        back (:meth:`backed`), is left out.

        :returns: ``(servers, rejected)``: ``servers`` a list of
            ``(ServerInfo, bid Decimal, source)``, ``rejected`` maps uuid
            -> message (those are listed in ``servers`` with bid 0 and
            source ``invalid``).
        """
        try:
            listed = self.cloud.servers()
            if self.tracker is not None:
                self.tracker.reconcile(listed, now)
        except Exception:
            if self.tracker is None or self.tracker.reconciled_at is None:
                raise
            LOG.exception('Nova API unreachable: pricing with the %d '
                          'servers learnt from notifications',
                          len(self.tracker.servers()))
            listed = self.tracker.servers()
        servers, rejected, wanted = [], {}, []
        s = self.settings
        for info in listed:
            if not info.preemptible:
                continue
            pending = None
            if info.refused:
                if info.created_at is None or (
                        now - info.created_at > s.refused_window):
                    continue
                pending = SOURCE_REFUSED
            elif info.unplaced:
                pending = SOURCE_PENDING
            elif info.status not in RUNNING:
                continue
            if pending:
                try:
                    bid, _ = market_bids.resolve_bid(
                        info.metadata, info.extra_specs, s.default_bid,
                        s.bid_cap)
                except market_bids.BidError:
                    continue
                wanted.append((info, bid, pending))
                continue
            try:
                bid, source = market_bids.resolve_bid(
                    info.metadata, info.extra_specs, s.default_bid,
                    s.bid_cap)
            except market_bids.BidError as exc:
                message = str(exc)
                LOG.warning('server %s (project %s): bid rejected, not '
                            'priced: %s', info.uuid, info.project, message)
                rejected[info.uuid] = message
                bid, source = decimal.Decimal(0), SOURCE_INVALID
            servers.append((info, bid, source))
        return servers + self.backed(wanted), rejected

    def backed(self, wanted):
        """The pending requests whose bids their project can pay.

        A refused boot costs its owner nothing, so an unbacked bid would
        let anyone raise prices and evict others for free. Per project,
        oldest first, a request counts only while the project's balance
        (``initial_credit`` for a project without an account yet) covers
        one period of every counted pending bid (Merkat §2.2: a user's
        bids are bounded by its budget).
        """
        s = self.settings
        hours = decimal.Decimal(s.period_seconds) / 3600
        left, kept = {}, []
        for info, bid, source in sorted(wanted, key=lambda w: (
                w[0].created_at or 0, w[0].uuid)):
            if info.project not in left:
                try:
                    left[info.project] = self.credit.balance(info.project)
                except budget.UnknownAccount:
                    left[info.project] = s.initial_credit
            cost = bid * hours
            if cost > left[info.project]:
                LOG.info('pending request %s (project %s): its bid %s per '
                         'hour is not backed by the project\'s balance; '
                         'not counted as demand', info.uuid, info.project,
                         bid)
                continue
            left[info.project] -= cost
            kept.append((info, bid, source))
        return kept

    def reserve_prices(self):
        """``{pool or '*': {resource: price}}``: config, then the API's."""
        reserve = {models.ALL_POOLS: dict(self.settings.reserve_prices)}
        for pool, prices in self.store.reserve_prices().items():
            reserve.setdefault(pool, {}).update(prices)
        return reserve

    @staticmethod
    def pool_reserve(reserve, pool):
        pool_reserve = dict(reserve.get(models.ALL_POOLS, {}))
        pool_reserve.update(reserve.get(pool, {}))
        return pool_reserve

    def pool_inputs(self, ps, bids=None, exclude=()):
        """``{pool: (servers, capacity, reserve, prices)}`` of period
        ``ps``, from the recorded snapshot, capacities and prices (the
        arguments of :func:`opie_sched.market.outbid.assess`).

        :param bids: optional ``{uuid: bid}`` overriding snapshot bids
            (currency per hour), e.g. a bid raised since.
        :param exclude: uuids left out (servers preempted since). With
            ``bids`` or ``exclude``, ``prices`` is None: the markets are
            cleared again on the recorded capacities.
        """
        rows = self.store.period_servers(ps)
        prices = self.store.period_prices(ps)
        capacity = {}
        for row in self.store.price_history(ps, ps + 1):
            capacity.setdefault(row['pool'], {})[row['resource']] = (
                row['capacity'])
        reserve = self.reserve_prices()
        by_pool = {}
        for row in rows:
            srv = snapshot_server(row)
            if srv.uuid in exclude:
                continue
            if bids and srv.uuid in bids:
                srv = dataclasses.replace(srv, bid=bids[srv.uuid])
            by_pool.setdefault(srv.pool, []).append(srv)
        inputs = {}
        for pool, servers in by_pool.items():
            if not capacity.get(pool):
                LOG.warning('pool %s has no recorded capacity for period %s;'
                            ' its %d server(s) are not assessed', pool,
                            cloud.iso(ps), len(servers))
                continue
            inputs[pool] = (servers, capacity[pool],
                            self.pool_reserve(reserve, pool),
                            None if bids or exclude else prices.get(pool))
        return inputs

    def assess(self, ps, bids=None, exclude=()):
        """Every pool's market of period ``ps`` (:func:`opie_sched.market.
        outbid.assess` of :meth:`pool_inputs`): a replay computes the same
        shares, charges and out-of-bid servers.

        :returns: ``{pool: outbid.Market}``.
        """
        return {pool: outbid.assess(*args) for pool, args in
                self.pool_inputs(ps, bids, exclude).items()}

    def assess_now(self, pools, snapshot):
        """Every pool's market from :meth:`price`'s output (no store):
        the same rule as :meth:`assess` on a period not recorded.

        :returns: ``{pool: outbid.Market}``.
        """
        reserve = self.reserve_prices()
        by_pool = {}
        for row in snapshot:
            by_pool.setdefault(row['pool'], []).append(snapshot_server(row))
        return {pool: outbid.assess(
            servers, pools[pool]['capacity'],
            self.pool_reserve(reserve, pool), pools[pool]['prices'])
            for pool, servers in by_pool.items() if pool in pools}

    def pool_of(self, hosts):
        """``{host: pool}`` of ``hosts`` (host names): the configured
        ``pools`` aggregates; a host in none of them is in
        :data:`opie_sched.market.pricing.DEFAULT_POOL`. An aggregate named
        in ``pools`` that Nova does not have is logged and skipped.
        """
        pool_of = dict.fromkeys(hosts, pricing.DEFAULT_POOL)
        if self.settings.pools:
            aggregates = self.cloud.aggregates()
            for name in self.settings.pools:
                if name not in aggregates:
                    LOG.warning('pool %r: no such host aggregate', name)
                    continue
                for host in aggregates[name]:
                    if host in pool_of:
                        pool_of[host] = name
        return pool_of

    def price(self, servers):
        """Prices of every pool (Merkat eq. 1) and every VM's shares.

        :param servers: ``(ServerInfo, bid, source)`` from :meth:`collect`.
        :returns: ``(pools, snapshot, shares)``: ``pools`` maps pool ->
            ``{"prices", "capacity", "bids"}`` (each by resource),
            ``snapshot`` the rows of the period's server snapshot,
            ``shares`` maps uuid -> :class:`.pricing.VMShares`.
        """
        capacities = self.cloud.hosts()
        pool_of = self.pool_of(capacities)
        reserve = self.reserve_prices()
        by_pool = {}
        for host, pool in pool_of.items():
            by_pool.setdefault(pool, []).append(
                pricing.Host(host, capacities[host], pool))
        snapshot, vms, wanted = [], {}, {}
        pool_reserves = {pool: self.pool_reserve(reserve, pool)
                         for pool in by_pool}
        for info, bid, source in servers:
            host = info.host if info.host in pool_of else None
            pool = pool_of.get(host, pricing.DEFAULT_POOL)
            if source in PENDING_SOURCES:
                host = None
                if pool not in by_pool and len(by_pool) == 1:
                    pool = next(iter(by_pool))
            if pool not in by_pool:
                LOG.warning('server %s: pool %s has no hosts; not priced',
                            info.uuid, pool)
                continue
            held = {pricing.VCPUS: info.vcpus,
                    pricing.MEMORY_MB: info.memory_mb}
            snapshot.append({
                'server_uuid': info.uuid, 'project': info.project,
                'pool': pool, 'host': info.host, 'bid': bid,
                'bid_source': source, 'vcpus': info.vcpus,
                'memory_mb': info.memory_mb, 'created_at': info.created_at})
            if source == SOURCE_INVALID:
                continue  # an invalid bid never changes a price
            wanted.setdefault(pool, []).append((info.uuid, bid, held, host))
        for pool, rows in wanted.items():
            capacity = {r: sum(h.capacity[r] for h in by_pool[pool])
                        for r in pricing.RESOURCES}
            # the rule of outbid.assess: the contended resources of the
            # pool take the bids (every request, invalid bids too)
            contended = pricing.contended_resources(capacity, [
                {pricing.VCPUS: r['vcpus'], pricing.MEMORY_MB:
                 r['memory_mb']} for r in snapshot if r['pool'] == pool])
            for uuid, bid, held, host in rows:
                vms.setdefault(pool, []).append(pricing.VM(
                    uuid, pricing.split_bid(bid, capacity, held,
                                            pool_reserves[pool], contended),
                    host=host, request=held, pool=pool))
        pools, shares = {}, {}
        for pool, hosts in by_pool.items():
            allocation = pricing.allocate(hosts, vms.get(pool, []),
                                          pool_reserves[pool])
            market = allocation.pools[pool]
            pools[pool] = {'prices': dict(market.prices),
                           'capacity': dict(market.capacity),
                           'bids': dict(market.bids)}
            shares.update(allocation.vms)
        return pools, snapshot, shares
