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
"""The periodic work of the opie-market service.

Each period of ``period_seconds`` (aligned on the epoch, see
:func:`opie_sched.market.budget.period_start_for`), the tooz leader
(:class:`Leadership`) settles the period once (:meth:`MarketEngine.tick`):

1. **Prices** (Merkat eq. 1, work-conserving): the running preemptible
   servers (their flavor copy requests a ``CUSTOM_PREEMPTIBLE_*`` class,
   :func:`opie_sched.services.market.cloud.is_preemptible`, the ownership
   model's rule, the scheduler's too) and their bids are read through
   openstacksdk (:class:`Cloud`); a bid is server metadata ``opie:bid`` >
   flavor extra spec ``opie:bid`` > the configured default
   (:func:`opie_sched.market.bids.resolve_bid`). Invalid bids are logged
   and count as 0 (they never change a price). Each pool's price per
   resource clears the market with the flavors as maximum allocations
   (:func:`opie_sched.market.pricing.clear_market`): the eq. 1 price
   ``sum(bids) / capacity`` under contention, the reserve when the demand
   fits; per-host shares and allocation errors (Merkat §3.1) are computed
   the same way (:func:`opie_sched.market.pricing.allocate`).
2. **Checkpoint**: the prices, the server snapshot (what each server holds
   and bids) and the period row are written in one transaction; a replay
   of the period (after a crash, or by another replica) reads them back
   instead of recomputing, so a period is priced once.
3. **Charges** (Merkat §2.2, §4.1.3): every project with servers in the
   snapshot is refilled, then each server is charged what its share of
   the pool costs, ``sum_r p*_r * a_r * period_seconds / 3600``
   (:func:`opie_sched.market.outbid.assess`: its bid, or less when its
   flavor caps its share) -- ledger entries with idempotency keys, so a
   replay posts nothing twice.
4. **Notices**: out-of-bid servers (:func:`opie_sched.market.outbid.
   assess`: a share below the flavor under contention, or a bid below
   the reserve cost of the flavor; a server with an invalid bid bids 0)
   and the servers of
   projects that cannot pay the next period (:meth:`opie_sched.market.
   budget.CreditManager.out_of_credit`) get server metadata
   ``opie:preempt_notice`` (reason and deadline) and
   ``opie:preempt_deadline``, and an ``opie.market.preempt.notice``
   notification. A noticed server that is no longer a victim has its
   notice withdrawn.

A noticed server resized to a normal flavor is no longer in the market:
its notice is withdrawn and it is not charged any more.

At every tick the leader also **enforces** expired notices: the server's
case is checked again (a raised bid, a new credit, or a flavor that is no
longer preemptible cancels the notice; a server in the middle of a
resize, migration or other task waits for the next tick), then, just
before acting, the server is read once more and the same checks run
again; only then is it marked like the scheduler's victims (metadata
``opie:preempted_by``/``opie:preempted_at``, tag ``opie-preempted``) and
stopped or deleted (``preemption_action``). A notice moves to
``preempted`` in one conditional update, so two replicas never both
terminate a server.

Any exception of a step is logged and the next tick starts afresh; the
service never dies of one.

The work is split along its seams, one module each: :mod:`.settings`
(the validated options), :mod:`.cloud` (Nova through openstacksdk),
:mod:`.listener` (demand from Nova's notifications), :mod:`.leadership`
(tooz), :mod:`.pricer` (steps 1 and 2's inputs), :mod:`.charging` (step
3), :mod:`.enforcement` (step 4 and the enforcement) and
:mod:`.notifications` (what the market emits). This module runs a tick.
"""

import dataclasses
import time

from oslo_log import log as logging

from opie_sched.market import budget
from opie_sched.market import pricing
from opie_sched.services.market import charging
from opie_sched.services.market import cloud as market_cloud
from opie_sched.services.market.db import models
from opie_sched.services.market import enforcement
from opie_sched.services.market import events
from opie_sched.services.market import leadership as market_leadership
from opie_sched.services.market import listener
from opie_sched.services.market import notifications
from opie_sched.services.market import pricer as market_pricer
from opie_sched.services.market import settings as market_settings

LOG = logging.getLogger(__name__)

# Names importable from here before the split (the demo, the API, the
# tests and the Tempest plugin use them).
ConfigError = market_settings.ConfigError
Settings = market_settings.Settings
Cloud = market_cloud.Cloud
ServerInfo = market_cloud.ServerInfo
iso = market_cloud.iso
DemandTracker = listener.DemandTracker
Leadership = market_leadership.Leadership
default_member_id = market_leadership.default_member_id
NOTICE_KEY = enforcement.NOTICE_KEY
DEADLINE_KEY = enforcement.DEADLINE_KEY
PREEMPTED_BY_KEY = enforcement.PREEMPTED_BY_KEY
PREEMPTED_AT_KEY = enforcement.PREEMPTED_AT_KEY
PREEMPTED_TAG = enforcement.PREEMPTED_TAG
PREEMPTED_BY = enforcement.PREEMPTED_BY
BEHAVIOR_SPEC = enforcement.BEHAVIOR_SPEC
SOURCE_INVALID = market_pricer.SOURCE_INVALID
position_json = market_pricer.position_json
EVENT_PRICE_UPDATE = notifications.EVENT_PRICE_UPDATE
EVENT_NOTICE = notifications.EVENT_NOTICE
EVENT_PREEMPTED = notifications.EVENT_PREEMPTED


@dataclasses.dataclass
class PeriodReport:
    """What one tick did (for logs, tests and the demo).

    ``prices``: ``{pool: {resource: price}}`` (currency per unit-hour);
    ``charges``: the period's ledger entries; ``notices``/``cancelled``/
    ``preempted``: server uuids; ``rejected``: ``{server: message}``;
    ``shares``: ``{server: VMShares}`` (Merkat §3.1), only when priced
    now; ``markets``: ``{pool: outbid.Market}`` (shares, charges and
    out-of-bid servers of the period); ``replayed``: the period had been
    priced before this tick.
    """
    period_start: int
    leader: bool = True
    replayed: bool = False
    state: str = None
    prices: dict = dataclasses.field(default_factory=dict)
    servers: list = dataclasses.field(default_factory=list)
    rejected: dict = dataclasses.field(default_factory=dict)
    shares: dict = dataclasses.field(default_factory=dict)
    markets: dict = dataclasses.field(default_factory=dict)
    charges: list = dataclasses.field(default_factory=list)
    notices: list = dataclasses.field(default_factory=list)
    cancelled: list = dataclasses.field(default_factory=list)
    preempted: list = dataclasses.field(default_factory=list)
    errors: list = dataclasses.field(default_factory=list)


class MarketEngine:
    """Prices, charges and preempts, once per period, as leader only.

    :param store: :class:`opie_sched.services.market.db.api.MarketStore`.
    :param cloud: :class:`.cloud.Cloud` (or an object with the same
        methods).
    :param settings: :class:`.settings.Settings`.
    :param leadership: :class:`.leadership.Leadership`, or None to always
        lead (tests, a single replica).
    :param notifier: an ``oslo_messaging.Notifier`` (or anything with
        ``info(ctxt, event_type, payload)``), or None.
    :param tracker: optional :class:`.listener.DemandTracker`.
    :param clock: ``() -> epoch seconds``, for ticks without ``now``.
    """

    def __init__(self, store, cloud, settings, leadership=None,
                 notifier=None, tracker=None, clock=time.time):
        self.store = store
        self.cloud = cloud
        self.settings = settings
        self.leadership = leadership
        self.notifier = notifier
        self.tracker = tracker
        self.clock = clock
        self.credit = budget.CreditManager(store)
        self.owner = leadership.member_id if leadership else (
            market_leadership.default_member_id())
        self.pricer = market_pricer.Pricer(store, cloud, settings,
                                           self.credit, tracker)
        self.charger = charging.Charger(settings, self.credit)
        self.enforcer = enforcement.Enforcer(
            store, cloud, settings, self.credit, self.pricer, self.charger,
            notifier)

    def is_leader(self):
        return self.leadership is None or self.leadership.is_leader()

    def tick(self, now=None):
        """Settle the current period (once) and enforce expired notices.

        :param now: epoch seconds (default the clock).
        :returns: :class:`PeriodReport`; ``leader`` False (and nothing
            done) when another replica leads. Never raises: errors are
            logged and listed in ``errors``.
        """
        now = self.clock() if now is None else now
        ps = budget.period_start_for(int(now), self.settings.period_seconds)
        report = PeriodReport(period_start=ps)
        if not self.is_leader():
            report.leader = False
            return report
        for step in (self.settle, self.enforce):
            try:
                step(ps, now, report)
            except Exception as exc:
                LOG.exception('market %s of period %s failed; retrying at '
                              'the next tick', step.__name__, iso(ps))
                report.errors.append('%s: %s' % (step.__name__, exc))
        events.record_period(self.store, report, now)
        return report

    #: The brief's name for one period's work.
    run_period = tick

    # -- settling ----------------------------------------------------------

    def settle(self, ps, now, report):
        """Price, charge and give notices for the period starting ``ps``.

        Each step is recorded in the period row (``priced`` ->
        ``charged`` -> ``done``); a replay resumes where it stopped.
        """
        s = self.settings
        period = self.store.get_period(ps)
        if period is None:
            servers, report.rejected = self.pricer.collect(now)
            events.observe(self.store, [
                info for info, _bid, source in servers
                if source not in market_pricer.PENDING_SOURCES], now,
                self.cloud)
            pools, snapshot, report.shares = self.pricer.price(servers)
            if self.store.create_period(ps, s.period_seconds, self.owner,
                                        snapshot, pools):
                LOG.info('period %s priced: %s; charges (%s): %s', iso(ps),
                         _prices_text({p: m['prices']
                                       for p, m in pools.items()}),
                         s.charge_rule, s.charge.description)
                notifications.price_update(
                    self.notifier, ps, s.period_seconds, s.charge_rule,
                    {p: m['prices'] for p, m in pools.items()})
            for row in snapshot:
                if row['bid_source'] not in (
                        market_pricer.SOURCE_INVALID,) + (
                        market_pricer.PENDING_SOURCES):
                    self.store.set_bid(row['server_uuid'], row['project'],
                                       row['bid'], row['bid_source'])
            period = self.store.get_period(ps)
        else:
            report.replayed = True
        prices = self.store.period_prices(ps)
        markets = self.pricer.assess(ps)
        servers = self.charger.charged_servers(markets)
        report.prices, report.servers = prices, servers
        report.markets = markets
        if period['state'] == models.PRICED:
            report.charges = self.charger.charge(ps, servers, prices)
            self.store.set_period_state(ps, models.CHARGED)
            period['state'] = models.CHARGED
        if period['state'] == models.CHARGED:
            self.enforcer.give_notices(ps, now, servers, prices,
                                       report)
            self.store.set_period_state(ps, models.DONE)
            period['state'] = models.DONE
        report.state = period['state']

    def enforce(self, ps, now, report):
        """Preempt every server whose notice expired at ``now``
        (:meth:`.enforcement.Enforcer.enforce`).
        """
        self.enforcer.enforce(ps, now, report)


def _prices_text(prices):
    return '; '.join('%s: %s' % (pool, ', '.join(
        '%s %s' % (r, pricing.pretty(p))
        for r, p in sorted(by_r.items()))) for pool, by_r in
        sorted(prices.items()))
