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
   servers (flavor marker ``opie:preemptible=true``,
   :func:`opie_sched.common.flavors.is_marked_preemptible`, the scheduler's
   definition too) and their bids are read through openstacksdk
   (:class:`Cloud`); a bid is server metadata ``opie:bid`` > flavor extra
   spec ``opie:bid`` > the configured default
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
"""

import dataclasses
import datetime
import decimal
import json
import os
import socket
import threading
import time

from oslo_log import log as logging
from oslo_utils import timeutils

from opie_sched.common import flavors
from opie_sched.market import bids as market_bids
from opie_sched.market import budget
from opie_sched.market import outbid
from opie_sched.market import pricing
from opie_sched.services.market.db import models

LOG = logging.getLogger(__name__)

#: Server metadata keys written by the market.
NOTICE_KEY = 'opie:preempt_notice'
DEADLINE_KEY = 'opie:preempt_deadline'
#: Same keys and tag as the scheduler's victims
#: (:mod:`opie_sched.scheduler.hosts`, not imported: no nova here).
PREEMPTED_BY_KEY = 'opie:preempted_by'
PREEMPTED_AT_KEY = 'opie:preempted_at'
PREEMPTED_TAG = 'opie-preempted'
#: Value of ``opie:preempted_by`` for the market's victims.
PREEMPTED_BY = 'opie-market'

KIND_OUT_OF_BID = 'out_of_bid'
KIND_OUT_OF_CREDIT = 'out_of_credit'

#: Bid source of a server whose bid was rejected (it bids 0).
SOURCE_INVALID = 'invalid'

#: Notification event types.
EVENT_PRICE_UPDATE = 'opie.market.price.update'
EVENT_NOTICE = 'opie.market.preempt.notice'
EVENT_PREEMPTED = 'opie.market.preempt.end'

#: Why a notice is withdrawn from a server resized to a normal flavor.
NOT_PREEMPTIBLE = ('no longer preemptible (its flavor lost the marker '
                   'opie:preemptible=true, e.g. a resize to a normal '
                   'flavor): it left the market')

#: Nova metadata values are at most 255 characters.
_METADATA_MAX = 255

#: Server statuses that hold resources on a host, so are priced and
#: charged: a server in the middle of (or waiting to confirm) a resize,
#: a migration or a rebuild still holds its host (and Placement its
#: allocations); leaving these out let a server evade the market by
#: never confirming a resize (VERIFY_RESIZE).
RUNNING = ('ACTIVE', 'VERIFY_RESIZE', 'RESIZE', 'REVERT_RESIZE',
           'MIGRATING', 'REBUILD', 'REBOOT', 'HARD_REBOOT', 'PASSWORD',
           'PAUSED', 'SUSPENDED', 'RESCUE')
#: Server statuses of a move or rebuild in progress: enforcement waits
#: (Nova refuses a stop or delete in the middle). VERIFY_RESIZE is not
#: one: the resize is done, Nova waits for the owner, and the market
#: does not (:meth:`MarketEngine._check`).
BUSY_STATUSES = ('BUILD', 'MIGRATING', 'REBUILD', 'RESIZE', 'REVERT_RESIZE')
#: Interruption behaviours, and the flavor extra spec that chooses one
#: per flavor (the scheduler's key too, :mod:`opie_sched.preemption.
#: victim_state`); else ``[opie_market] preemption_action``.
BEHAVIORS = ('delete', 'stop', 'shelve')
BEHAVIOR_SPEC = 'opie:interruption_behavior'

#: Status of a resize waiting for its confirmation.
VERIFY_RESIZE = 'VERIFY_RESIZE'

#: Bid sources of pending demand (snapshot rows that are not servers on
#: a host: :attr:`opie_sched.market.outbid.Server.pending`): a boot Nova
#: refused (NoValidHost) and a boot not placed yet.
SOURCE_REFUSED = 'refused'
SOURCE_PENDING = 'pending'
PENDING_SOURCES = (SOURCE_REFUSED, SOURCE_PENDING)
#: Text of Nova's NoValidHost fault (nova.exception.NoValidHost).
NO_VALID_HOST = 'No valid host'


#: ``[opie_market] charge_rule`` values. ``share_cost``: a server pays
#: what its share costs at the clearing price (a uniform price, our
#: deviation); ``bid``: it pays its bid (Merkat §2.3 "VMs are billed
#: based on their bids"; Themis SLO-policies §2).
CHARGE_SHARE_COST = 'share_cost'
CHARGE_BID = 'bid'
CHARGE_RULES = (CHARGE_SHARE_COST, CHARGE_BID)
#: How each rule is labelled in the logs.
CHARGE_RULE_TEXT = {
    CHARGE_SHARE_COST: 'share cost at the clearing price (uniform price; '
                       'our deviation from the papers, which bill the bid)',
    CHARGE_BID: 'the bid (Merkat 2.3, Themis SLO-policies 2)'}


class ConfigError(ValueError):
    """The market configuration is not valid (the message says which)."""


def iso(timestamp):
    """Epoch seconds as ISO 8601 UTC text (``...Z``)."""
    return datetime.datetime.fromtimestamp(
        timestamp, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


def _epoch(text):
    if not text:
        return None
    try:
        return timeutils.parse_isotime(text).timestamp()
    except ValueError:
        return None


def _decimal(value, what, allow_none=False):
    if value in (None, '') and allow_none:
        return None
    try:
        result = decimal.Decimal(str(value).strip())
    except (decimal.InvalidOperation, TypeError):
        raise ConfigError('%s: not a number: %r' % (what, value))
    if not result.is_finite() or result < 0:
        raise ConfigError('%s: must be a finite number >= 0, got %r'
                          % (what, value))
    return result


@dataclasses.dataclass(frozen=True)
class Settings:
    """The market's knobs, validated (see :mod:`.opts` for meanings).

    Money in currency, bids and refill rates currency per hour, reserve
    prices currency per unit-hour, times seconds.
    """
    period_seconds: int = 300
    reserve_prices: dict = dataclasses.field(default_factory=dict)
    default_bid: decimal.Decimal = decimal.Decimal(0)
    bid_cap: decimal.Decimal = None
    notice_period: int = 300
    preemption_action: str = 'delete'
    out_of_credit_policy: str = 'lowest_bid'
    pools: tuple = ()
    initial_credit: decimal.Decimal = decimal.Decimal(0)
    refill_rate: decimal.Decimal = decimal.Decimal(0)
    credit_cap: decimal.Decimal = None
    refused_demand_window: int = None
    charge_rule: str = 'share_cost'

    def __post_init__(self):
        if self.charge_rule not in CHARGE_RULES:
            raise ConfigError('charge_rule must be one of %s, got %r'
                              % (', '.join(CHARGE_RULES), self.charge_rule))
        if self.refused_demand_window is not None and \
                self.refused_demand_window < 0:
            raise ConfigError('refused_demand_window must be >= 0, got %r'
                              % self.refused_demand_window)
        if self.period_seconds <= 0:
            raise ConfigError('period_seconds must be > 0, got %r'
                              % self.period_seconds)
        if self.notice_period < 0:
            raise ConfigError('notice_period must be >= 0, got %r'
                              % self.notice_period)
        if self.preemption_action not in BEHAVIORS:
            raise ConfigError('preemption_action must be one of %s, got %r'
                              % (', '.join(BEHAVIORS),
                                 self.preemption_action))
        if self.out_of_credit_policy not in budget.POLICIES:
            raise ConfigError('out_of_credit_policy must be one of %s, got '
                              '%r' % (', '.join(sorted(budget.POLICIES)),
                                      self.out_of_credit_policy))
        unknown = set(self.reserve_prices) - set(pricing.RESOURCES)
        if unknown:
            raise ConfigError('reserve_prices: unknown resources %s (known: '
                              '%s)' % (', '.join(sorted(unknown)),
                                       ', '.join(pricing.RESOURCES)))
        if self.default_bid is not None:
            try:
                market_bids.parse_bid(self.default_bid, self.bid_cap,
                                      'default_bid')
            except market_bids.BidError as exc:
                raise ConfigError(str(exc))

    @classmethod
    def from_conf(cls, conf_group):
        """Settings from the ``[opie_market]`` options.

        :raises ConfigError: an option is not a valid number, etc.
        """
        g = conf_group
        reserve = {r: _decimal(v, 'reserve_prices %s' % r)
                   for r, v in (g.reserve_prices or {}).items()}
        return cls(
            period_seconds=g.period_seconds, reserve_prices=reserve,
            default_bid=_decimal(g.default_bid, 'default_bid',
                                 allow_none=True),
            bid_cap=_decimal(g.bid_cap, 'bid_cap', allow_none=True),
            notice_period=g.notice_period,
            preemption_action=g.preemption_action,
            out_of_credit_policy=g.out_of_credit_policy,
            pools=tuple(g.pools or ()),
            initial_credit=_decimal(g.initial_credit, 'initial_credit'),
            refill_rate=_decimal(g.refill_rate, 'refill_rate'),
            credit_cap=_decimal(g.credit_cap, 'credit_cap',
                                allow_none=True),
            refused_demand_window=g.refused_demand_window,
            charge_rule=g.charge_rule)

    @property
    def refused_window(self):
        """Seconds a refused boot counts as demand, from its creation.

        Default ``2 * period_seconds + notice_period``: long enough for
        the notice it causes to be enforced -- the boot is priced at the
        next period start (up to one period later), the notice runs
        ``notice_period``, and the case is checked again on the period in
        force at the deadline (one more period). Deleting the refused
        server (its owner gave up) ends its demand at once.
        """
        if self.refused_demand_window is None:
            return 2 * self.period_seconds + self.notice_period
        return self.refused_demand_window


# -- Nova through openstacksdk ---------------------------------------------

@dataclasses.dataclass(frozen=True)
class ServerInfo:
    """A server as the market reads it from Nova.

    ``vcpus`` in vCPU, ``memory_mb`` in MB, ``created_at`` epoch seconds.
    """
    uuid: str
    project: str
    status: str
    host: str
    vcpus: int
    memory_mb: int
    extra_specs: dict
    metadata: dict
    created_at: float = None
    name: str = None
    task_state: str = None
    fault: str = None

    @property
    def refused(self):
        """True for a boot Nova turned away: ERROR with a NoValidHost
        fault and never on a host.
        """
        return (self.status == 'ERROR' and not self.host
                and NO_VALID_HOST.lower() in (self.fault or '').lower())

    @property
    def unplaced(self):
        """True for a boot still being scheduled (BUILD, no host yet)."""
        return self.status == 'BUILD' and not self.host

    @property
    def preemptible(self):
        """The flavor marker (:func:`opie_sched.common.flavors.
        is_marked_preemptible`), the scheduler's definition.
        """
        return flavors.is_marked_preemptible(self.extra_specs)

    @property
    def busy(self):
        """True while Nova works on the server (resize, migration,
        rebuild, ...): the market does not act on it then.
        """
        return bool(self.task_state) or self.status in BUSY_STATUSES


def _fault_text(fault):
    if not fault:
        return None
    if isinstance(fault, dict):
        return str(fault.get('message') or '')
    return str(fault)


def _server_info(server):
    flavor = server.flavor or {}
    if not isinstance(flavor, dict):
        flavor = flavor.to_dict()
    return ServerInfo(
        uuid=server.id, project=server.project_id, status=server.status,
        host=server.compute_host, vcpus=int(flavor.get('vcpus') or 0),
        memory_mb=int(flavor.get('ram') or 0),
        extra_specs=dict(flavor.get('extra_specs') or {}),
        metadata=dict(server.metadata or {}),
        created_at=_epoch(server.created_at), name=server.name,
        task_state=getattr(server, 'task_state', None),
        fault=_fault_text(getattr(server, 'fault', None)))


class Cloud:
    """What the market needs from Nova, through openstacksdk.

    :param conn: an ``openstack.connection.Connection`` with admin rights
        (all projects' servers, flavor extra specs, hosts).
    :param capacity_source: ``placement`` (preemptible inventories
        ``CUSTOM_PREEMPTIBLE_VCPU``/``CUSTOM_PREEMPTIBLE_MEMORY_MB``, else
        ``VCPU``/``MEMORY_MB``, times the allocation ratio, minus reserved)
        or ``hypervisors`` (``os-hypervisors`` at microversion 2.87).
        The market is contended -- prices rise above the reserve, shares
        fall below flavors, servers go out of bid -- only when the
        preemptible demand exceeds this capacity. With ``placement`` the
        capacity is what Placement admits, so that happens only when an
        inventory is lowered below its allocations; with ``hypervisors``
        (physical sizes, hosts not up left out) it also happens when the
        preemptible inventory is overcommitted (an allocation ratio above
        1 lets Placement admit more preemptible vCPU than the hosts have,
        which the market then shares by bid) or a host goes down.
    """

    def __init__(self, conn, capacity_source='placement'):
        self.conn = conn
        self.capacity_source = capacity_source

    def servers(self):
        """Every server of every project, as :class:`ServerInfo`."""
        return [_server_info(s) for s in self.conn.compute.servers(
            details=True, all_projects=True)]

    def get_server(self, uuid):
        """:class:`ServerInfo` of ``uuid``, or None when it is gone."""
        from openstack import exceptions as sdk_exc
        try:
            server = self.conn.compute.get_server(uuid)
        except sdk_exc.NotFoundException:
            return None
        if server.status == 'DELETED':
            return None
        return _server_info(server)

    def hosts(self):
        """``{host: {"vcpus": units, "memory_mb": units}}``."""
        if self.capacity_source == 'hypervisors':
            return self._hypervisor_hosts()
        return self._placement_hosts()

    def _hypervisor_hosts(self):
        resp = self.conn.compute.get('/os-hypervisors/detail',
                                     microversion='2.87')
        resp.raise_for_status()
        hosts = {}
        for hv in resp.json().get('hypervisors', []):
            if hv.get('state', 'up') != 'up':
                continue
            name = (hv.get('service') or {}).get('host') or hv[
                'hypervisor_hostname']
            hosts[name] = {pricing.VCPUS: int(hv['vcpus']),
                           pricing.MEMORY_MB: int(hv['memory_mb'])}
        return hosts

    def _node_hosts(self):
        """``({compute node uuid: service host}, {node name: service
        host})`` from ``os-hypervisors`` (microversion 2.53: the
        hypervisor id is the compute node's uuid, which is also its
        resource provider's uuid).
        """
        resp = self.conn.compute.get('/os-hypervisors/detail',
                                     microversion='2.53')
        resp.raise_for_status()
        by_id, by_name = {}, {}
        for hv in resp.json().get('hypervisors', []):
            host = (hv.get('service') or {}).get('host')
            if not host:
                continue
            if hv.get('id'):
                by_id[str(hv['id'])] = host
            if hv.get('hypervisor_hostname'):
                by_name[hv['hypervisor_hostname']] = host
        return by_id, by_name

    def _placement_hosts(self):
        """Capacities from Placement, keyed by **compute service host**
        (what servers' ``OS-EXT-SRV-ATTR:host`` and host aggregates
        name): a resource provider is named after the compute *node*
        (e.g. an FQDN), which may differ from the service host. The
        provider is matched to its node by uuid (then by name); the
        capacities of several nodes of one service host (ironic) add up.
        A provider no hypervisor names is keyed by its own name (logged).
        """
        placement = self.conn.placement
        by_id, by_name = self._node_hosts()
        hosts = {}
        for rp in placement.resource_providers():
            inv = {i.resource_class: i for i in
                   placement.resource_provider_inventories(rp)}
            capacity = {}
            for resource, classes in (
                    (pricing.VCPUS, (flavors.VCPU_CLASS, 'VCPU')),
                    (pricing.MEMORY_MB, (flavors.MEMORY_MB_CLASS,
                                         'MEMORY_MB'))):
                for rc in classes:
                    if rc in inv:
                        i = inv[rc]
                        capacity[resource] = int(
                            (i.total - (i.reserved or 0))
                            * (i.allocation_ratio or 1))
                        break
            if len(capacity) != 2:
                continue
            host = by_id.get(str(rp.id)) or by_name.get(rp.name)
            if host is None:
                LOG.warning('resource provider %s (%s) is no compute node '
                            'of os-hypervisors; priced as host %r',
                            rp.id, rp.name, rp.name)
                host = rp.name
            total = hosts.setdefault(host, dict.fromkeys(capacity, 0))
            for resource, units in capacity.items():
                total[resource] += units
        return hosts

    def aggregates(self):
        """``{aggregate name: [host, ...]}``."""
        return {a.name: list(a.hosts or ())
                for a in self.conn.compute.aggregates()}

    def set_metadata(self, uuid, metadata):
        self.conn.compute.set_server_metadata(uuid, **metadata)

    def delete_metadata(self, uuid, keys):
        from openstack import exceptions as sdk_exc
        for key in keys:
            try:
                self.conn.compute.delete_server_metadata(uuid, [key])
            except sdk_exc.NotFoundException:
                pass

    def add_tag(self, uuid, tag):
        self.conn.compute.add_tag_to_server(uuid, tag)

    def confirm_resize(self, uuid):
        """Confirm a resize waiting in VERIFY_RESIZE (asynchronous)."""
        self.conn.compute.confirm_server_resize(uuid)

    def terminate(self, uuid, action):
        """Stop, shelve or delete a server (``action``: one of
        :data:`BEHAVIORS`).
        """
        if action == 'stop':
            self.conn.compute.stop_server(uuid)
        elif action == 'shelve':
            self.conn.compute.shelve_server(uuid)
        else:
            self.conn.compute.delete_server(uuid, ignore_missing=True)


# -- demand from notifications ---------------------------------------------

class DemandTracker:
    """The servers Nova's versioned notifications told about.

    An oslo.messaging notification endpoint (``info``): it keeps a
    :class:`ServerInfo` per server from ``instance.create.end``,
    ``instance.update`` and friends, and drops it on
    ``instance.delete.end``. :meth:`MarketEngine.collect` replaces its
    content with what openstacksdk lists every period (reconciliation,
    the safety net) and uses it only when Nova's API cannot be reached.
    Thread-safe.
    """

    DROP = ('instance.delete.end', 'instance.soft_delete.end')

    def __init__(self):
        self._lock = threading.Lock()
        self._servers = {}
        self.reconciled_at = None
        self.events = 0

    @staticmethod
    def _data(obj):
        if isinstance(obj, dict) and 'nova_object.data' in obj:
            return obj['nova_object.data']
        return obj or {}

    def apply(self, event_type, payload):
        """Update from one notification; unknown events are ignored.

        :returns: True when demand changed (a server appeared, went or
            changed state).
        """
        if not event_type.startswith('instance.'):
            return False
        data = self._data(payload)
        uuid = data.get('uuid')
        if not uuid:
            return False
        with self._lock:
            self.events += 1
            if event_type in self.DROP or data.get('state') == 'deleted':
                return self._servers.pop(uuid, None) is not None
            flavor = self._data(data.get('flavor'))
            state = data.get('state') or ''
            fault = self._data(data.get('fault'))
            fault = (fault.get('exception_message') or fault.get(
                'exception') or '') if isinstance(fault, dict) else ''
            if event_type == 'instance.create.error' and \
                    'novalidhost' in fault.replace(' ', '').lower():
                fault = NO_VALID_HOST
            info = ServerInfo(
                uuid=uuid, project=data.get('tenant_id'),
                status='ACTIVE' if state == 'active' else state.upper(),
                host=data.get('host'), vcpus=int(flavor.get('vcpus') or 0),
                memory_mb=int(flavor.get('memory_mb') or 0),
                extra_specs=dict(flavor.get('extra_specs') or {}),
                metadata=dict(data.get('metadata') or {}),
                created_at=_epoch(data.get('created_at')),
                name=data.get('display_name'), fault=fault or None)
            old = self._servers.get(uuid)
            self._servers[uuid] = info
            return old is None or old.status != info.status

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        """oslo.messaging notification endpoint."""
        try:
            if self.apply(event_type, payload):
                LOG.debug('demand changed: %s', event_type)
        except Exception:
            LOG.exception('ignoring malformed notification %s', event_type)

    def reconcile(self, servers, now):
        """Replace the view with what Nova listed."""
        with self._lock:
            self._servers = {s.uuid: s for s in servers}
            self.reconciled_at = now

    def servers(self):
        with self._lock:
            return list(self._servers.values())


# -- leader election ---------------------------------------------------------

def default_member_id():
    return '%s-%d' % (socket.gethostname(), os.getpid())


class Leadership:
    """Leader election with tooz: the leader holds a distributed lock.

    Any tooz backend an operator already runs works (etcd3, redis,
    zookeeper, memcached, mysql, postgresql); the embedded default is the
    file driver (one machine, no server). The lock is taken without
    blocking at each tick and kept while this member lives, its ownership
    re-checked with the backend at every tick
    (:class:`opie_sched.common.coordination.Leadership`, the helper every
    opie_sched service uses); if the leader dies or loses its session,
    the backend frees the lock (file lock closed, session expired), the
    old leader stops leading and the next tick of another replica takes
    it.

    :param url: tooz backend URL.
    :param member_id: this replica's id (text).
    """

    LOCK = 'opie-market-leader'

    def __init__(self, url, member_id=None):
        from opie_sched.common import coordination
        self.member_id = member_id or default_member_id()
        self.coordinator = coordination.start_coordinator(url,
                                                          self.member_id)
        self.leadership = coordination.Leadership(
            lambda: self.coordinator, self.LOCK, self.member_id)
        self.stopped = False

    @property
    def held(self):
        return self.leadership.held

    def is_leader(self):
        """True when this member holds the leader lock now (taking it if
        free, re-checking it with the backend if held). Backend errors
        mean "not leader" (logged).
        """
        if self.stopped:
            return False
        return self.leadership.check()

    def stop(self):
        """Give up leadership and leave the backend (idempotent)."""
        if self.stopped:
            return
        self.stopped = True
        self.leadership.release()
        try:
            self.coordinator.stop()
        except Exception:
            LOG.exception('stopping the tooz coordinator failed')


# -- the engine --------------------------------------------------------------

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


def _snapshot_server(row):
    return outbid.Server(
        uuid=row['server_uuid'], bid=row['bid'],
        held={pricing.VCPUS: row['vcpus'],
              pricing.MEMORY_MB: row['memory_mb']},
        project=row['project'], created_at=row['created_at'],
        pool=row['pool'], pending=row['bid_source'] in PENDING_SOURCES)


class MarketEngine:
    """Prices, charges and preempts, once per period, as leader only.

    :param store: :class:`opie_sched.services.market.db.api.MarketStore`.
    :param cloud: :class:`Cloud` (or an object with the same methods).
    :param settings: :class:`Settings`.
    :param leadership: :class:`Leadership`, or None to always lead
        (tests, a single replica).
    :param notifier: an ``oslo_messaging.Notifier`` (or anything with
        ``info(ctxt, event_type, payload)``), or None.
    :param tracker: optional :class:`DemandTracker`.
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
            default_member_id())

    # -- public ------------------------------------------------------------

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
        return report

    #: The brief's name for one period's work.
    run_period = tick

    # -- reading Nova ----------------------------------------------------

    def collect(self, now):
        """Running preemptible servers with their bids, and the pending
        demand.

        Pending demand (:data:`PENDING_SOURCES`): a preemptible boot Nova
        turned away (ERROR with a NoValidHost fault, created less than
        :attr:`Settings.refused_window` seconds ago) or not placed yet (BUILD
        without a host). It is priced with its flavor and bid like a
        server (Merkat eq. 1 sums the bids of every request), so refused
        demand raises the price; it is never charged nor given notice
        (:attr:`opie_sched.market.outbid.Server.pending`). A refused
        boot with an invalid bid, or one its project's balance does not
        back (:meth:`_backed`), is left out.

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
        return servers + self._backed(wanted), rejected

    def _backed(self, wanted):
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
    def _pool_reserve(reserve, pool):
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
            srv = _snapshot_server(row)
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
                            iso(ps), len(servers))
                continue
            inputs[pool] = (servers, capacity[pool],
                            self._pool_reserve(reserve, pool),
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
            by_pool.setdefault(row['pool'], []).append(_snapshot_server(row))
        return {pool: outbid.assess(
            servers, pools[pool]['capacity'],
            self._pool_reserve(reserve, pool), pools[pool]['prices'])
            for pool, servers in by_pool.items() if pool in pools}

    def charged_servers(self, markets):
        """The servers of ``markets`` with their ``charge_per_hour``
        (pending demand left out: it holds nothing).

        ``charge_rule = share_cost`` (default): what the server's share
        costs at the clearing price (:func:`opie_sched.market.outbid.
        assess`), a uniform price -- our deviation from the papers, which
        bill the bid (Merkat §2.3, Themis SLO-policies §2): under the
        work-conserving rule a server capped at its flavor would pay more
        than the market price of what it got, so two servers holding the
        same flavor would pay different amounts for the same thing.
        ``charge_rule = bid``: the papers' rule, each server that holds a
        share pays its bid.
        """
        out = []
        for market in markets.values():
            for p in market.positions.values():
                if p.server.pending:
                    continue
                charge = p.charge_per_hour
                if self.settings.charge_rule == CHARGE_BID and any(
                        v > 0 for v in p.shares.values()):
                    charge = pricing.as_decimal(p.server.bid)
                out.append(dataclasses.replace(p.server,
                                               charge_per_hour=charge))
        return out

    def _pools(self, hosts):
        """``{host: pool}`` from the configured aggregates."""
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
        pool_of = self._pools(capacities)
        reserve = self.reserve_prices()
        by_pool = {}
        for host, pool in pool_of.items():
            by_pool.setdefault(pool, []).append(
                pricing.Host(host, capacities[host], pool))
        snapshot, vms, wanted = [], {}, {}
        pool_reserves = {pool: self._pool_reserve(reserve, pool)
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

    # -- settling ----------------------------------------------------------

    def settle(self, ps, now, report):
        """Price, charge and give notices for the period starting ``ps``.

        Each step is recorded in the period row (``priced`` ->
        ``charged`` -> ``done``); a replay resumes where it stopped.
        """
        s = self.settings
        period = self.store.get_period(ps)
        if period is None:
            servers, report.rejected = self.collect(now)
            pools, snapshot, report.shares = self.price(servers)
            if self.store.create_period(ps, s.period_seconds, self.owner,
                                        snapshot, pools):
                LOG.info('period %s priced: %s; charges: %s', iso(ps),
                         _prices_text({p: m['prices']
                                       for p, m in pools.items()}),
                         CHARGE_RULE_TEXT[s.charge_rule])
                self._notify(EVENT_PRICE_UPDATE, {
                    'period_start': iso(ps), 'period_seconds':
                    s.period_seconds, 'charge_rule': s.charge_rule,
                    'prices': _json_prices(
                        {p: m['prices'] for p, m in pools.items()})})
            for row in snapshot:
                if row['bid_source'] not in (SOURCE_INVALID,) + (
                        PENDING_SOURCES):
                    self.store.set_bid(row['server_uuid'], row['project'],
                                       row['bid'], row['bid_source'])
            period = self.store.get_period(ps)
        else:
            report.replayed = True
        prices = self.store.period_prices(ps)
        markets = self.assess(ps)
        servers = self.charged_servers(markets)
        report.prices, report.servers = prices, servers
        report.markets = markets
        if period['state'] == models.PRICED:
            report.charges = self.charge(ps, servers, prices)
            self.store.set_period_state(ps, models.CHARGED)
            period['state'] = models.CHARGED
        if period['state'] == models.CHARGED:
            self.give_notices(ps, now, servers, prices, report)
            self.store.set_period_state(ps, models.DONE)
            period['state'] = models.DONE
        report.state = period['state']

    def ensure_account(self, project):
        s = self.settings
        try:
            self.credit.open_account(project, s.initial_credit,
                                     s.refill_rate, s.credit_cap)
            LOG.info('opened the account of project %s with %s', project,
                     s.initial_credit)
        except budget.BudgetError:
            pass  # already there (maybe opened by another replica)

    def charge(self, ps, servers, prices):
        """Refill and charge every project with servers in the snapshot.

        :returns: the period's ledger entries (new or replayed).
        """
        entries = []
        for project in sorted({srv.project for srv in servers}):
            self.ensure_account(project)
            entries += self.credit.settle_period(
                project, ps, self.settings.period_seconds, servers, prices)
        return entries

    def _victims(self, ps, rows, servers, prices):
        """``{uuid: (kind, reason, server)}`` of the period.

        Out of bid: :func:`opie_sched.market.outbid.select_victims` per
        pool (lowest bid first, never more than needed).

        :param rows: the period's snapshot rows (for the bid sources).
        """
        s = self.settings
        found = {}
        rejected = {r['server_uuid'] for r in rows
                    if r['bid_source'] == SOURCE_INVALID}
        out = [item for args in self.pool_inputs(ps).values()
               for item in outbid.select_victims(*args)]
        for item in sorted(out, key=lambda o: outbid.victim_key(
                o.server, prices.get(o.server.pool, {}))):
            reason = item.reason
            if item.server.uuid in rejected:
                reason = ('invalid bid (counted as 0): ' + reason)
            found[item.server.uuid] = (KIND_OUT_OF_BID, reason, item.server)
        keep = [srv for srv in servers if srv.uuid not in found]
        for project in sorted({srv.project for srv in keep}):
            try:
                balance = self.credit.balance(project)
            except budget.UnknownAccount:
                continue
            for srv in self.credit.out_of_credit(
                    project, keep, prices, s.period_seconds,
                    s.out_of_credit_policy):
                reason = ('out of credit: project %s has a balance of %s, '
                          'not enough for the next period of its '
                          'preemptible servers (policy %s)'
                          % (project, pricing.pretty(balance),
                             s.out_of_credit_policy))
                found[srv.uuid] = (KIND_OUT_OF_CREDIT, reason, srv)
        return found

    def give_notices(self, ps, now, servers, prices, report):
        """Notices for this period's victims; withdraw stale notices
        (the case is resolved, or the server is no longer preemptible).
        """
        victims = self._victims(ps, self.store.period_servers(ps), servers,
                                prices)
        deadline = now + self.settings.notice_period
        for uuid, (kind, reason, srv) in victims.items():
            if not self.store.add_notice(uuid, srv.project, kind, reason,
                                         ps, now, deadline):
                continue
            report.notices.append(uuid)
            LOG.warning('server %s (project %s): preemption notice, '
                        'deadline %s: %s', uuid, srv.project, iso(deadline),
                        reason)
            action = self._tell_owner(uuid, reason, deadline)
            self._notify(EVENT_NOTICE, {
                'server_uuid': uuid, 'project_id': srv.project,
                'kind': kind, 'reason': reason, 'deadline': iso(deadline),
                'action': action})
        in_snapshot = {srv.uuid for srv in servers}
        for notice in self.store.notices(state=models.NOTICED):
            uuid = notice['server_uuid']
            if uuid in victims:
                continue
            if uuid in in_snapshot:
                self._cancel(notice, 'no longer %s' % notice['kind'], report)
                continue
            try:
                info = self.cloud.get_server(uuid)
            except Exception:
                LOG.exception('could not read server %s', uuid)
                continue
            if info is not None and not info.busy and not info.preemptible:
                self._cancel(notice, NOT_PREEMPTIBLE, report)

    def behavior(self, info):
        """What happens to ``info`` (:class:`ServerInfo`) at its deadline:
        its flavor's ``opie:interruption_behavior`` when it is one of
        :data:`BEHAVIORS`, else ``preemption_action``. The flavor is
        operator-owned (user metadata is never read for it).
        """
        value = (info.extra_specs or {}).get(BEHAVIOR_SPEC) if info else None
        return value if value in BEHAVIORS else (
            self.settings.preemption_action)

    def _tell_owner(self, uuid, reason, deadline):
        """Write the notice on the server; returns the behaviour told."""
        action = self.settings.preemption_action
        try:
            action = self.behavior(self.cloud.get_server(uuid))
        except Exception:
            LOG.exception('could not read server %s', uuid)
        text = ('preemption at %s (%s): %s'
                % (iso(deadline), action, reason))
        try:
            self.cloud.set_metadata(uuid, {
                NOTICE_KEY: text[:_METADATA_MAX],
                DEADLINE_KEY: iso(deadline)})
        except Exception:
            LOG.exception('could not write the notice on server %s', uuid)
        return action

    def _cancel(self, notice, why, report):
        uuid = notice['server_uuid']
        if not self.store.set_notice_state(uuid, models.CANCELLED):
            return
        report.cancelled.append(uuid)
        LOG.info('server %s: preemption notice withdrawn (%s)', uuid, why)
        try:
            self.cloud.delete_metadata(uuid, [NOTICE_KEY, DEADLINE_KEY])
        except Exception:
            LOG.exception('could not remove the notice of server %s', uuid)

    # -- enforcing ---------------------------------------------------------

    def _still_victim(self, notice, info):
        """Whether a noticed server is still to be preempted now.

        Only a preemptible server (the flavor marker, the scheduler's
        definition) in no transition is ever preempted.
        """
        if not info.preemptible:
            return False
        latest = self.store.latest_period()
        if latest is None:
            return True
        ps = latest['period_start']
        if notice['kind'] == KIND_OUT_OF_BID:
            try:
                bid, _ = market_bids.resolve_bid(
                    info.metadata, info.extra_specs,
                    self.settings.default_bid, self.settings.bid_cap)
            except market_bids.BidError:
                return True
            gone = {n['server_uuid'] for n in self.store.notices(
                state=models.PREEMPTED)}
            inputs = self.pool_inputs(ps, bids={info.uuid: bid},
                                      exclude=gone - {info.uuid})
            for args in inputs.values():
                if info.uuid in {srv.uuid for srv in args[0]}:
                    return info.uuid in {
                        o.server.uuid for o in outbid.select_victims(*args)}
            return True
        noticed = {n['server_uuid'] for n in self.store.notices(
            project=notice['project']) if n['state'] == models.PREEMPTED
            and n['server_uuid'] != info.uuid}
        prices = self.store.period_prices(ps)
        mine = [srv for srv in self.charged_servers(self.assess(ps))
                if srv.project == notice['project']
                and srv.uuid not in noticed]
        victims = self.credit.out_of_credit(
            notice['project'], mine, prices, self.settings.period_seconds,
            self.settings.out_of_credit_policy)
        return notice['server_uuid'] in {v.uuid for v in victims}

    def enforce(self, ps, now, report):
        """Preempt every server whose notice expired at ``now``, each by
        its interruption behaviour (:meth:`behavior`).
        """
        latest = self.store.latest_period()
        order, prices = {}, {}
        if latest is not None:
            order = {r['server_uuid']: _snapshot_server(r) for r in
                     self.store.period_servers(latest['period_start'])}
            prices = self.store.period_prices(latest['period_start'])
        due = [n for n in self.store.notices(state=models.NOTICED)
               if n['deadline'] <= now]
        # lowest bid per unit first: a victim spared by an earlier
        # preemption in this tick sees the market without it (never more
        # than needed)
        inf = decimal.Decimal('Infinity')
        due.sort(key=lambda n: (n['deadline'],) + (
            outbid.victim_key(order[n['server_uuid']], prices.get(
                order[n['server_uuid']].pool, {}))
            if n['server_uuid'] in order
            else (inf, inf, True, 0, n['server_uuid'])))
        for notice in due:
            uuid = notice['server_uuid']
            try:
                info = self._check(notice, report)
                if not info:
                    continue
                action = self.behavior(info)
                if not self.store.set_notice_state(uuid, models.PREEMPTED,
                                                   action):
                    continue  # another replica took it
                try:
                    # just before acting: read the server once more
                    info = self._check(notice, report, taken=True)
                    if not info:
                        continue
                    self._preempt(uuid, notice, self.behavior(info), now)
                except Exception:
                    self.store.set_notice_state(uuid, models.NOTICED,
                                                expected=models.PREEMPTED)
                    raise
                report.preempted.append(uuid)
            except Exception as exc:
                LOG.exception('preempting server %s failed; retrying at the '
                              'next tick', uuid)
                report.errors.append('preempt %s: %s' % (uuid, exc))

    def _check(self, notice, report, taken=False):
        """Read the noticed server and decide whether to act now.

        A gone server closes the notice (``gone``); a server that is no
        longer preemptible (resized to a normal flavor) or whose case was
        resolved gets its notice withdrawn; a busy server (resize,
        migration, ...) waits for the next tick. ``taken``: the notice was
        already moved to ``preempted`` by this replica (it is moved back,
        or closed, when the server is spared).

        :returns: the :class:`ServerInfo` read, to preempt now; False
            otherwise.
        """
        uuid = notice['server_uuid']
        info = self.cloud.get_server(uuid)
        if info is None:
            self.store.set_notice_state(
                uuid, models.GONE,
                expected=models.PREEMPTED if taken else models.NOTICED)
            return False
        if info.busy:
            LOG.info('server %s is busy (%s, task %s): its preemption '
                     'waits for the next tick', uuid, info.status,
                     info.task_state)
            if taken:
                self.store.set_notice_state(uuid, models.NOTICED,
                                            expected=models.PREEMPTED)
            return False
        if info.status == VERIFY_RESIZE:
            # Past its deadline and waiting for its resize to be
            # confirmed: confirm it, decide at the next tick. Resized to a
            # normal flavor, it could still be reverted to the
            # preemptible one (so it is not withdrawn yet); resized to a
            # preemptible flavor, Nova refuses to stop it or to write its
            # metadata (the preemption marks) in vm_state resized. Either
            # way the owner cannot keep a noticed server out of reach by
            # never confirming.
            LOG.info('server %s waits in VERIFY_RESIZE past its deadline: '
                     'confirming the resize; decided at the next tick',
                     uuid)
            if taken:
                self.store.set_notice_state(uuid, models.NOTICED,
                                            expected=models.PREEMPTED)
            self.cloud.confirm_resize(uuid)
            return False
        if not info.preemptible:
            why = NOT_PREEMPTIBLE
        elif not self._still_victim(notice, info):
            why = 'the case was resolved before the deadline'
        else:
            return info
        if taken:
            self.store.set_notice_state(uuid, models.NOTICED,
                                        expected=models.PREEMPTED)
        self._cancel(notice, why, report)
        return False

    def _preempt(self, uuid, notice, action, now):
        self.cloud.set_metadata(uuid, {PREEMPTED_BY_KEY: PREEMPTED_BY,
                                       PREEMPTED_AT_KEY: iso(now)})
        try:
            self.cloud.add_tag(uuid, PREEMPTED_TAG)
        except Exception:
            LOG.warning('could not tag server %s %s', uuid, PREEMPTED_TAG)
        self.cloud.terminate(uuid, action)
        LOG.warning('server %s (project %s) preempted (%s): %s', uuid,
                    notice['project'], action, notice['reason'])
        self._notify(EVENT_PREEMPTED, {
            'server_uuid': uuid, 'project_id': notice['project'],
            'kind': notice['kind'], 'reason': notice['reason'],
            'action': action, 'preempted_at': iso(now)})

    # -- notifications -----------------------------------------------------

    def _notify(self, event_type, payload):
        """Emit ``event_type`` as its versioned notification
        (:func:`opie_sched.notifications.market.market_notification`,
        publisher ``opie-market:<host name>``); errors are logged.
        """
        if self.notifier is None:
            return
        try:
            from opie_sched.notifications import market as notes
            notes.market_notification(
                event_type, payload, socket.gethostname()).emit(
                    self.notifier)
        except Exception:
            LOG.exception('could not emit %s', event_type)


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
        body['period_start'] = iso(period_start)
    return body


def _prices_text(prices):
    return '; '.join('%s: %s' % (pool, ', '.join(
        '%s %s' % (r, pricing.pretty(p))
        for r, p in sorted(by_r.items()))) for pool, by_r in
        sorted(prices.items()))


def _json_prices(prices):
    return {pool: {r: str(p) for r, p in by_r.items()}
            for pool, by_r in prices.items()}


def dumps(value):
    """JSON with Decimals as decimal text."""
    return json.dumps(value, default=lambda o: str(o)
                      if isinstance(o, decimal.Decimal) else repr(o))
