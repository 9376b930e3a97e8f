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
"""Tabu-search rebalancing of the spot market as an opie-repacker strategy.

:class:`TabuRebalanceStrategy` turns what the repacker's collector
gathers (:mod:`.collector`: a list of :class:`opie_sched.rpm.planner.Host`
with their :class:`opie_sched.rpm.planner.Instance` -- flavor vCPU and MB,
preemptible or not, movable or not, the host's limits and whether it
accepts servers) and the market's bids into a repacker
:class:`opie_sched.rpm.planner.Plan` whose
:class:`opie_sched.rpm.planner.Move` s reduce the preemptible servers'
allocation error
(Merkat §3.1; the search is :func:`opie_sched.market.rebalance.
rebalance`, Themis HPCC'12 Fig. 2 with the Themis SLO-policies paper's
100 non-improving iterations). The repacker executes the plan as usual
(live migration through openstacksdk, its per-period budget, dry-run
mode and tooz lock): the strategy only plans.

Inputs the repacker collector does not have:

* **bids** (currency per hour) by server id: a mapping, a callable
  returning one, or :class:`MarketBids` (the ``opie-market`` API's
  ``GET /v1/shares``, admin). Servers without a bid are not in the market:
  they stay where they are and their requests count against the hosts'
  room, like normal servers;
* **reserve prices** (currency per unit-hour), optional.

Only preemptible, movable servers with a bid move; a destination must
accept servers (enabled, up, not draining) and keep every request within
its limit (:attr:`.planner.Host.cpu_allowed`, ``memory_allowed``), so a
move never needs a preemption. The host capacity shared by the market is
the host's CPU and RAM capacity (``vcpus``, ``memory_mb``) less what the
servers outside the market (normal, unmovable or without a bid) request
on it.

What a share means on the hypervisor: see :mod:`opie_sched.market.
pricing` (Nova enforces none unless flavors set ``quota:cpu_shares``).
"""

import logging

from opie_sched.market import pricing
from opie_sched.market import rebalance
from opie_sched.rpm import model as rpm
from opie_sched.rpm import planner
from opie_sched.services.market import client as market_client

LOG = logging.getLogger(__name__)

#: :attr:`.planner.Move.reason` of this strategy's moves.
REASON = 'allocation_error'
#: Entry point name of the strategy (stevedore namespace
#: ``opie_sched.repacker.strategies``).
NAME = 'tabu'


class StrategyError(RuntimeError):
    """The strategy could not plan (the message says why)."""


class MarketBids:
    """Bids of the running preemptible servers from the market API.

    ``GET /v1/shares`` (admin or service role) lists every priced server
    with its bid per resource; a server's bid is their sum (currency per
    hour). The call goes through the market API's one client
    (:class:`opie_sched.services.market.client.MarketClient`).

    :param session: a keystoneauth1 session (admin or service user).
    :param endpoint: the market API's URL (with or without ``/v1``); None:
        the ``spot-market`` entry of the session's catalog.
    :param interface: catalog interface or list of them (None: public).
    :param region_name: catalog region (None: any).
    :raises StrategyError: (when called) the market cannot be asked.
    """

    def __init__(self, session, endpoint=None, interface=None,
                 region_name=None):
        self.client = market_client.MarketClient(
            session, endpoint, interface=interface, region_name=region_name)

    def __call__(self):
        try:
            shares = self.client.shares()
        except market_client.MarketError as exc:
            raise StrategyError(str(exc))
        bids = {}
        for row in shares.get('shares', []):
            bids[row['server_id']] = sum(
                (pricing.as_decimal(str(b)) for b in
                 (row.get('bids') or {}).values()), pricing.ZERO)
        return bids


class TabuRebalanceStrategy:
    """Repacker strategy: migrations that reduce the allocation error.

    :param bids: ``{server id: bid}``, a callable returning one, or None
        (nothing is in the market, the plan is empty).
    :param reserve: optional ``{"vcpus": price, "memory_mb": price}``,
        currency per unit-hour.
    :param max_migrations: migrations per plan (int >= 0; the repacker's
        budget, ``[opie_repacker] max_migrations``).
    :param non_improving: iterations without improvement before stopping
        (100: Themis SLO-policies paper).
    :param tabu_size: tabu list length (20: Themis HPCC'12).
    :param threshold: stop once the placement error is at most this.
    :param seed: tie-breaking seed (same input, same plan).
    :param policy: :class:`opie_sched.rpm.planner.Policy` for the
        data-transfer estimate of each move (default: the planner's defaults).
    :param conf: optional ``cfg.ConfigOpts`` with the repacker options:
        ``max_migrations`` is read from ``[opie_repacker]`` when given.

    ``plan(snapshot)`` takes the collector's list of
    :class:`opie_sched.rpm.planner.Host` (or an object with a ``hosts``
    attribute and, optionally, ``bids``) and returns a
    :class:`opie_sched.rpm.planner.Plan`;
    :attr:`last_result` keeps the search's
    :class:`opie_sched.market.rebalance.Result` (errors before/after).
    """

    name = NAME

    def __init__(self, bids=None, reserve=None, max_migrations=5,
                 non_improving=rebalance.NON_IMPROVING_LIMIT,
                 tabu_size=rebalance.TABU_SIZE, threshold=0.0, seed=0,
                 policy=None, conf=None):
        if conf is not None:
            try:
                max_migrations = conf.opie_repacker.max_migrations
            except Exception:
                LOG.debug('no [opie_repacker] max_migrations; using %s',
                          max_migrations)
        self.bids = bids
        self.reserve = dict(reserve or {})
        self.max_migrations = max_migrations
        self.non_improving = non_improving
        self.tabu_size = tabu_size
        self.threshold = threshold
        self.seed = seed
        self.policy = policy or planner.Policy()
        self.last_result = None

    def _bids(self, snapshot):
        source = getattr(snapshot, 'bids', None)
        if source is None:
            source = self.bids
        if source is None:
            return {}
        if callable(source):
            try:
                source = source()
            except Exception as exc:
                raise StrategyError('could not read the bids: %s' % exc)
        return {k: pricing.as_decimal(v if not isinstance(v, float)
                                      else repr(v))
                for k, v in dict(source).items()}

    def plan(self, snapshot):
        """A :class:`opie_sched.rpm.planner.Plan` of live migrations (see
        the class).

        :raises StrategyError: the bids could not be read or the input is
            inconsistent.
        """
        hosts = list(getattr(snapshot, 'hosts', snapshot))
        bids = self._bids(snapshot)
        market_hosts, vms, limits, instances = [], [], {}, {}
        for host in hosts:
            fixed_cpu = fixed_mem = 0.0
            market = []
            for inst in host.instances:
                instances[inst.id] = (inst, host.name)
                if inst.preemptible and inst.movable and inst.id in bids:
                    market.append(inst)
                else:
                    fixed_cpu += inst.vcpus
                    fixed_mem += inst.memory_mb
            # The market shares what the servers outside it leave of the
            # host (they hold their requests whatever the bids).
            capacity = {pricing.VCPUS: max(0.0, host.vcpus - fixed_cpu),
                        pricing.MEMORY_MB: max(0.0, host.memory_mb
                                               - fixed_mem)}
            market_hosts.append(pricing.Host(host.name, capacity))
            for inst in market:
                request = {pricing.VCPUS: inst.vcpus,
                           pricing.MEMORY_MB: inst.memory_mb}
                vms.append(pricing.VM(
                    inst.id, pricing.split_bid(bids[inst.id], capacity,
                                               request, self.reserve),
                    host.name, request))
            if host.accepts:
                limits[host.name] = {
                    pricing.VCPUS: max(0.0, host.cpu_allowed - fixed_cpu),
                    pricing.MEMORY_MB: max(0.0, host.memory_allowed
                                           - fixed_mem)}
            else:
                limits[host.name] = {pricing.VCPUS: -1.0,
                                     pricing.MEMORY_MB: -1.0}
        limits = {h: {r: pricing.as_decimal(repr(float(v)))
                      for r, v in lim.items()} for h, lim in limits.items()}
        if not vms or not market_hosts:
            self.last_result = None
            return planner.Plan([], {}, {}, self.max_migrations)
        try:
            result = rebalance.rebalance(
                market_hosts, vms, self.reserve, self.max_migrations,
                self.non_improving, self.tabu_size, self.threshold,
                self.seed, limits)
        except rebalance.RebalanceError as exc:
            raise StrategyError(str(exc))
        self.last_result = result
        moves = []
        for m in result.migrations:
            inst, _ = instances[m.vm]
            moves.append(planner.Move(
                server=inst.id, name=inst.name, source=m.source,
                destination=m.destination, reason=REASON,
                score=float(abs(result.errors.get(m.vm, 0))),
                terms=rpm.Terms(0.0, 0.0, 0.0, 0.0, 0.0),
                data_transfer_mb=planner.data_transfer(inst, self.policy),
                preemptible=inst.preemptible))
        LOG.info('tabu rebalancing: allocation error %.4f -> %.4f with %d '
                 'migration(s) (%d iterations, stopped: %s)',
                 result.error_before, result.error_after, len(moves),
                 result.iterations, result.stopped)
        triggers = {m.source: REASON for m in moves}
        return planner.Plan(moves, triggers, {},
                            self.max_migrations - len(moves))
