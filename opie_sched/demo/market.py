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
"""The spot market demo: the ``opie-market`` engine against an embedded
Nova, period by period, with a fake clock (``opie-sched market demo``).

:func:`run_demo` runs it and returns one JSON-ready document;
:func:`format_demo_period` and :func:`format_demo_ledger` tell its story
as text.
"""

import contextlib
import dataclasses
import decimal
import logging
import os
import shutil
import tempfile
import time

import prettytable

from opie_sched.common import flavors
from opie_sched.market import budget
from opie_sched.market import outbid
from opie_sched.market import pricing
from opie_sched.services.market.db import models as db_models
from opie_sched.services.market import engine as market_engine


def _table(header, rows):
    """Rows under a header, columns left-aligned, no rules."""
    t = prettytable.PrettyTable(header)
    t.align = 'l'
    t.border = False
    t.left_padding_width = 0
    t.right_padding_width = 2
    for row in rows:
        t.add_row(row)
    return [line.rstrip() for line in t.get_string().splitlines()]


D = decimal.Decimal

#: Compute hosts of the demo's cloud (8 vCPU, 16000 MB each).
DEMO_HOSTS = 2
#: Allocation ratio of the hosts' preemptible vCPU inventory: Placement
#: admits twice the physical CPUs, the market prices the physical ones
#: (``capacity_source = hypervisors``), so demand can exceed capacity.
DEMO_CPU_RATIO = 2.0
#: The demo's preemptible flavor: ``(name, vCPU, MB, GB)``, CPU-heavy
#: (RAM, not overcommitted, never runs out before the CPUs do); booted
#: as its ``.preemptible`` twin.
DEMO_FLAVOR = ('cpu2', 2, 1000, 10)
#: Reserve prices of the demo's market, currency per unit-hour (Themis
#: ``bid_min``): what a server pays per vCPU while the pool is not
#: contended. RAM has none: it is never contended here.
DEMO_RESERVE = {'vcpus': '0.05'}
#: ``(project id, user, initial credit in currency)``.
DEMO_PROJECTS = (('alpha', 'alice', '10'), ('beta', 'bob', '10'),
                 ('gamma', 'carol', '5'))
_DEMO_USERS = {project: user for project, user, _ in DEMO_PROJECTS}
#: The project whose ledger is printed at the end.
DEMO_LEDGER_PROJECT = 'gamma'
#: Largest accepted bid of the demo's market, currency per hour.
DEMO_BID_CAP = '10'
#: Upper bound of ``--periods`` (the demo should stay short).
DEMO_MAX_PERIODS = 100


@dataclasses.dataclass(frozen=True)
class DemoServer:
    """A preemptible server the demo boots as its project's user.

    :ivar name: server name.
    :ivar project: owning project (a key of :data:`DEMO_PROJECTS`).
    :ivar flavor: flavor name (:data:`DEMO_FLAVOR`); its
        ``.preemptible`` twin is booted.
    :ivar bid: server metadata ``opie:bid``, currency per hour.
    :ivar raise_to: when the server gets a preemption notice, its owner
        raises the bid to this (currency per hour); None: the owner lets
        it go.
    """
    name: str
    project: str
    flavor: str
    bid: str
    raise_to: str = None


#: Demand: the servers booted at the start of each period (period 1
#: first), each 2 vCPU of the pool's 16 physical CPUs. Period 1: 12 vCPU,
#: the demand fits, the price is the reserve. Period 2: 18 vCPU, the pool
#: is contended, the price clears above the reserve and gamma-1 (lowest
#: bid) no longer gets its 2 vCPU: notice, deleted. Period 3: 20 vCPU,
#: alpha-2 and beta-1 are out of bid; alice raises alpha-2's bid and
#: keeps it, beta-1 is deleted. Later periods boot nothing; the market
#: keeps running (period 4: the raised bid pushed gamma-2 out; period 5:
#: 16 vCPU, back to the reserve).
DEMO_WAVES = (
    (DemoServer('alpha-1', 'alpha', 'cpu2', '0.60'),
     DemoServer('alpha-2', 'alpha', 'cpu2', '0.30', raise_to='0.90'),
     DemoServer('beta-1', 'beta', 'cpu2', '0.40'),
     DemoServer('beta-2', 'beta', 'cpu2', '0.55'),
     DemoServer('gamma-1', 'gamma', 'cpu2', '0.20'),
     DemoServer('gamma-2', 'gamma', 'cpu2', '0.45')),
    (DemoServer('alpha-3', 'alpha', 'cpu2', '0.70'),
     DemoServer('beta-3', 'beta', 'cpu2', '0.80'),
     DemoServer('gamma-3', 'gamma', 'cpu2', '0.50')),
    (DemoServer('alpha-4', 'alpha', 'cpu2', '0.65'),
     DemoServer('beta-4', 'beta', 'cpu2', '0.85')),
)

#: Environment variables of nova's test fixtures that the demo turns off
#: while its cloud runs (tox sets them for the tests): output capture
#: would swallow the demo's progress, a test timeout would kill it.
_FIXTURE_ENV = {'OS_STDOUT_CAPTURE': '0', 'OS_STDERR_CAPTURE': '0',
                'OS_TEST_TIMEOUT': '0'}


class DemoError(RuntimeError):
    """The demo ran, but a boot or a market step failed (the periods'
    ``errors`` and ``boot_failures`` say which).
    """


@contextlib.contextmanager
def _fixture_env():
    """:data:`_FIXTURE_ENV` meanwhile; then the environment and the root
    logger's level (nova's fixtures leave it at DEBUG) as they were.
    """
    saved = {k: os.environ.get(k) for k in _FIXTURE_ENV}
    level = logging.getLogger().level
    os.environ.update(_FIXTURE_ENV)
    try:
        yield
    finally:
        logging.getLogger().setLevel(level)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextlib.contextmanager
def _quiet_logging():
    """Drop log records below WARNING meanwhile."""
    disabled = logging.root.manager.disable
    logging.disable(logging.INFO)
    try:
        yield
    finally:
        logging.disable(disabled)


def _num(value):
    return None if value is None else float(value)


def _clock(timestamp):
    """``HH:MM:SSZ`` of epoch seconds (the day is in the period header)."""
    return time.strftime('%H:%M:%SZ', time.gmtime(timestamp))


class _MarketDemo:
    """One run of ``opie-sched market demo`` (see :func:`run_demo`)."""

    def __init__(self, periods, period_seconds, notice_seconds, say):
        self.periods = periods
        self.period_seconds = period_seconds
        self.notice_seconds = notice_seconds
        self.say = say
        self.specs = {}      # uuid -> DemoServer
        self.owners = {}     # project -> openstacksdk connection
        self.raised = {}     # uuid -> new bid (text)

    # -- setup ---------------------------------------------------------

    def _start(self, stack):
        from opie_sched.demo import clients
        from opie_sched.demo import cloud as cloud_mod
        from opie_sched.services.market.db import api as db_api

        state = tempfile.mkdtemp(prefix='opie-market-demo-')
        stack.callback(shutil.rmtree, state, True)
        host = self.host = cloud_mod.HOST
        self.say('starting Nova in-process: %d hosts x (%d vCPU, %d MB; '
                 'preemptible vCPU overcommitted %s:1), the opie '
                 'scheduler, Placement, sqlite ...'
                 % (DEMO_HOSTS, host['vcpus'], host['memory_mb'],
                    pricing.pretty(D(repr(DEMO_CPU_RATIO)))))
        t0 = time.monotonic()
        # Native threading, as nova's services run in production (unless
        # eventlet is already in this process).
        cloud_mod.use_native_threading()
        # The cloud lets real clients in (clients.RealClients); nova's log
        # goes to the state directory, not the console.
        self.cloud = cloud_mod.EmbeddedCloud(
            hosts=DEMO_HOSTS, log_file=os.path.join(state, 'nova.log'),
            preemptible_cpu_ratio=DEMO_CPU_RATIO)
        stack.callback(self._stop_cloud)
        self.cloud.start()
        self.say('Nova is up (%.1f s)' % (time.monotonic() - t0))
        self.admin = clients.connection(self.cloud, 'admin:admin')
        name, vcpus, ram, disk = DEMO_FLAVOR
        base = self.admin.compute.create_flavor(name=name, vcpus=vcpus,
                                                ram=ram, disk=disk)
        twin = flavors.create_preemptible_twin(self.admin, base.id)
        self.flavor_ids = {name: base.id, twin.name: twin.id}
        for project, user, _ in DEMO_PROJECTS:
            self.owners[project] = clients.connection(
                self.cloud, '%s:%s' % (user, project))
        self.image = self.cloud.image_id

        path = os.path.join(state, 'market.sqlite')
        self.store = db_api.MarketStore('sqlite:///' + path)
        stack.callback(self.store.dispose)
        self.store.sync()
        self.settings = market_engine.Settings(
            period_seconds=self.period_seconds,
            notice_period=self.notice_seconds, bid_cap=D(DEMO_BID_CAP),
            default_bid=D(0), preemption_action='delete',
            reserve_prices={r: D(p) for r, p in DEMO_RESERVE.items()})
        self.engine = market_engine.MarketEngine(
            self.store, market_engine.Cloud(self.admin, 'hypervisors'),
            self.settings)
        self.credit = budget.CreditManager(self.store)
        self.say('market store: %s (sqlite, removed at the end)' % path)

    def _stop_cloud(self):
        self.say('stopping Nova ...')
        # nova's fixtures leave the root logger at DEBUG; their own
        # cleanup would log to the console (stdout: the JSON).
        with _quiet_logging():
            self.cloud.stop()

    def _open_accounts(self, granted_at):
        accounts = []
        for project, user, amount in DEMO_PROJECTS:
            self.credit.open_account(project, 0)
            self.credit.credit(project, D(amount), granted_at,
                               note='demo credit')
            accounts.append({'project': project, 'user': user,
                             'credit': _num(D(amount))})
        return accounts

    # -- the owners ----------------------------------------------------

    def _boot(self, wave):
        """Boot ``wave`` as each server's owner; wait until ACTIVE."""
        from openstack import exceptions as sdk_exc
        booted, failed = [], []
        pending = []
        for spec in wave:
            conn = self.owners[spec.project]
            server = conn.compute.create_server(
                name=spec.name,
                flavor_id=self.flavor_ids[spec.flavor + '.preemptible'],
                image_id=self.image, networks='none',
                metadata={'opie:bid': spec.bid})
            self.specs[server.id] = spec
            pending.append((spec, conn, server))
        for spec, conn, server in pending:
            try:
                conn.compute.wait_for_server(server, wait=120,
                                             interval=0.05)
                booted.append(server.id)
            except sdk_exc.SDKException as exc:
                failed.append({'server': spec.name, 'server_id': server.id,
                               'error': str(exc)})
                conn.compute.delete_server(server.id, ignore_missing=True)
        return booted, failed

    def _react(self, uuid, notice_row):
        """The owner of a noticed server reads the notice from its
        metadata and, if the scenario says so, raises the bid.
        """
        spec = self.specs.get(uuid)
        if spec is None or spec.raise_to is None or uuid in self.raised:
            return None
        conn = self.owners[spec.project]
        seen = conn.compute.get_server(uuid).metadata.get(
            market_engine.NOTICE_KEY, '')
        conn.compute.set_server_metadata(uuid,
                                         **{'opie:bid': spec.raise_to})
        self.raised[uuid] = spec.raise_to
        return {'server': spec.name, 'server_id': uuid,
                'project': spec.project,
                'user': _DEMO_USERS[spec.project],
                'action': 'raise bid', 'old_bid': _num(D(spec.bid)),
                'new_bid': _num(D(spec.raise_to)),
                'saw_notice': seen, 'deadline': notice_row['deadline']}

    def _wait_gone(self, uuid):
        from openstack import exceptions as sdk_exc
        try:
            self.admin.compute.wait_for_delete(
                self.admin.compute.get_server(uuid), wait=120,
                interval=0.05)
        except sdk_exc.NotFoundException:
            pass

    # -- one period ----------------------------------------------------

    def _name(self, uuid):
        spec = self.specs.get(uuid)
        return spec.name if spec else uuid

    def _notice_json(self, row, at=None):
        return {'server': self._name(row['server_uuid']),
                'server_id': row['server_uuid'], 'project': row['project'],
                'kind': row['kind'], 'reason': row['reason'],
                'deadline': _num(row['deadline']),
                'deadline_iso': market_engine.iso(row['deadline']),
                **({} if at is None else {
                    'at': _num(at), 'at_iso': market_engine.iso(at)})}

    def period(self, index, ps):
        """Boot the period's demand, settle it, enforce its notices."""
        wave = DEMO_WAVES[index - 1] if index <= len(DEMO_WAVES) else ()
        if wave:
            self.say('period %d: booting %s ...' % (index, ', '.join(
                '%s (%s, bid %s/h)' % (s.name, s.flavor, s.bid)
                for s in wave)))
        booted, failed = self._boot(wave)
        before = {p: self.store.get_account(p).balance
                  for p, _, _ in DEMO_PROJECTS}
        self.say('period %d: settling at %s ...'
                 % (index, market_engine.iso(ps)))
        report = self.engine.tick(ps)
        errors = list(report.errors)
        notice_rows = {n['server_uuid']: n for n in self.store.notices()}
        notices = [self._notice_json(notice_rows[u]) for u in report.notices]
        actions = [a for a in (self._react(u, notice_rows[u])
                               for u in report.notices) if a]
        preempted, cancelled = [], []
        last = ps
        while True:
            due = sorted(n['deadline'] for n in self.store.notices(
                state=db_models.NOTICED) if last < n['deadline'] < ps +
                self.period_seconds)
            if not due:
                break
            last = due[0]
            self.say('period %d: enforcing notices at %s ...'
                     % (index, market_engine.iso(last)))
            tick = self.engine.tick(last)
            errors += tick.errors
            rows = {n['server_uuid']: n for n in self.store.notices()}
            for uuid in tick.preempted:
                self._wait_gone(uuid)
                preempted.append(self._notice_json(rows[uuid], last))
            for uuid in tick.cancelled:
                item = self._notice_json(rows[uuid], last)
                item['why'] = ('bid raised to %s per hour' % self.raised[uuid]
                               if uuid in self.raised else
                               'no longer a victim')
                cancelled.append(item)
        return self._period_json(index, ps, report, booted, failed, notices,
                                 actions, preempted, cancelled, before,
                                 errors)

    def _period_json(self, index, ps, report, booted, failed, notices,
                     actions, preempted, cancelled, before, errors):
        rows = self.store.period_servers(ps)
        charged = {}
        refilled = {}
        for entry in report.charges:
            if entry.key.kind == budget.KIND_CHARGE:
                charged[entry.key.server] = -entry.amount
            elif entry.key.kind == budget.KIND_REFILL:
                refilled[entry.key.project] = entry.amount
        outcome = {n['server_id']: 'noticed' for n in notices}
        outcome.update({n['server_id']: 'notice withdrawn'
                        for n in cancelled})
        outcome.update({n['server_id']: 'preempted' for n in preempted})
        positions = {u: p for m in report.markets.values()
                     for u, p in m.positions.items()}
        servers = []
        for row in rows:
            uuid = row['server_uuid']
            held = {pricing.VCPUS: row['vcpus'],
                    pricing.MEMORY_MB: row['memory_mb']}
            spec = self.specs.get(uuid)
            position = positions.get(uuid)
            servers.append({
                'server': self._name(uuid), 'server_id': uuid,
                'project': row['project'],
                'flavor': spec.flavor if spec else None,
                'host': row['host'], 'pool': row['pool'],
                'vcpus': row['vcpus'], 'memory_mb': row['memory_mb'],
                'bid': _num(row['bid']), 'bid_source': row['bid_source'],
                'cost_per_hour': _num(outbid.hourly_cost(
                    report.prices.get(row['pool'], {}), held)),
                'bids': {r: _num(b) for r, b in (
                    position.bids.items() if position else ())},
                'shares': {r: _num(a) for r, a in (
                    position.shares.items() if position else ())},
                'charge_per_hour': _num(
                    position.charge_per_hour if position else None),
                'charged': _num(charged.get(uuid, 0)),
                'outcome': outcome.get(uuid, 'running')})
        servers.sort(key=lambda s: (s['project'], s['server']))
        accounts = {}
        for project, _, _ in DEMO_PROJECTS:
            mine = [charged[r['server_uuid']] for r in rows
                    if r['project'] == project
                    and r['server_uuid'] in charged]
            accounts[project] = {
                'start': _num(before[project]),
                'charged': _num(sum(mine, D(0))),
                'refilled': _num(refilled.get(project, D(0))),
                'balance': _num(self.store.get_account(project).balance)}
        pools = {r['pool'] for r in rows}
        history = {(h['pool'], h['resource']): h
                   for h in self.store.price_history(ps, ps + 1)}
        market = {}
        for pool, prices in report.prices.items():
            cleared = report.markets.get(pool)
            market[pool] = {
                'capacity': {r: _num(history[(pool, r)]['capacity'])
                             for r in prices},
                'bids': {r: _num(history[(pool, r)]['bids'])
                         for r in prices},
                'reserve': {r: _num(cleared.reserve[r]) for r in prices}
                if cleared else {},
                'demand': {r: _num(cleared.demand[r]) for r in prices}
                if cleared else {},
                'contended': {r: cleared.contended[r] for r in prices}
                if cleared else {}}
        return {
            'period': index, 'period_start': ps,
            'period_start_iso': market_engine.iso(ps),
            'period_seconds': self.period_seconds,
            'booted': [self._name(u) for u in booted], 'boot_failures': failed,
            'prices': {pool: {r: _num(p) for r, p in prices.items()}
                       for pool, prices in report.prices.items()},
            'market': market,
            'total_bids': {pool: _num(sum(
                (r['bid'] for r in rows if r['pool'] == pool
                 and r['bid_source'] != market_engine.SOURCE_INVALID),
                D(0)))
                for pool in sorted(pools)},
            'servers': servers, 'notices': notices, 'owner_actions': actions,
            'cancelled': cancelled, 'preempted': preempted,
            'accounts': accounts, 'errors': errors}

    def ledger(self, project):
        entries = []
        for entry in self.store.entries(project):
            key = entry.key
            entries.append({
                'kind': key.kind, 'server': key.server and self._name(
                    key.server), 'server_id': key.server,
                'time': _num(key.period_start),
                'time_iso': market_engine.iso(key.period_start),
                'amount': _num(entry.amount), 'balance': _num(entry.balance),
                'note': entry.note})
        return {'project': project, 'entries': entries}

    # -- the whole run -------------------------------------------------

    def run(self, on_period):
        """Run every period; ``on_period(record)`` after each.

        :returns: the JSON-ready result (see :func:`run_demo`).
        """
        with contextlib.ExitStack() as stack:
            self._start(stack)
            first = budget.period_start_for(
                int(time.time()), self.period_seconds) + self.period_seconds
            accounts = self._open_accounts(first)
            periods = []
            for index in range(1, self.periods + 1):
                ps = first + (index - 1) * self.period_seconds
                record = self.period(index, ps)
                periods.append(record)
                on_period(record)
            return {
                'hosts': DEMO_HOSTS,
                'host_capacity': {r: self.host[r] for r in pricing.RESOURCES},
                'preemptible_cpu_ratio': DEMO_CPU_RATIO,
                'reserve_prices': {r: _num(p) for r, p in
                                   self.settings.reserve_prices.items()},
                'period_seconds': self.period_seconds,
                'notice_seconds': self.notice_seconds,
                'preemption_action': self.settings.preemption_action,
                'bid_cap': _num(self.settings.bid_cap),
                'projects': accounts, 'periods': periods,
                'ledger': self.ledger(DEMO_LEDGER_PROJECT)}


def _money(value):
    return pricing.pretty(D(str(value)))


def _share(server, resource=pricing.VCPUS):
    share = server.get('shares', {}).get(resource)
    if share is None:
        return '-'
    return '%s/%s' % (_money(round(share, 3)), _money(server[resource]))


def _price_state(market, resource):
    """Why a price is what it is: contention, or the reserve."""
    unit = pricing.UNITS.get(resource, resource)
    demand = market.get('demand', {}).get(resource)
    capacity = market['capacity'][resource]
    if demand is None:
        return 'of %s %s' % (_money(capacity), unit)
    if market.get('contended', {}).get(resource):
        return 'contended: %s %s demanded of %s, bids %s/h' % (
            _money(demand), unit, _money(capacity),
            _money(market['bids'][resource]))
    return 'the reserve: %s of %s %s demanded' % (
        _money(demand), _money(capacity), unit)


def format_demo_period(record, periods):
    """One period of the demo as text (bids and charges per hour currency
    per hour, prices currency per unit-hour, shares units, charges and
    balances currency).
    """
    lines = ['', '== period %d/%d: %s, %s s ==' % (
        record['period'], periods, record['period_start_iso'],
        _money(record['period_seconds']))]
    if record['booted']:
        lines.append('demand: +%s' % ', +'.join(record['booted']))
    for fail in record['boot_failures']:
        lines.append('boot failed: %s: %s' % (fail['server'], fail['error']))
    for pool, prices in sorted(record['prices'].items()):
        market = record['market'][pool]
        lines.append('prices in pool %s (sum of bids %s/h): %s' % (
            pool, _money(record['total_bids'].get(pool, 0)), '; '.join(
                '%s per %s-hour (%s)' % (
                    _money(p), pricing.UNITS.get(r, r),
                    _price_state(market, r))
                for r, p in prices.items())))
    rows = [[s['server'], s['project'], s['flavor'] or '-', s['host'] or '-',
             _money(s['bid']), s['bid_source'], _share(s),
             '-' if s.get('charge_per_hour') is None
             else _money(s['charge_per_hour']),
             _money(s['charged']), s['outcome']]
            for s in record['servers']]
    if rows:
        lines += ['  ' + line for line in _table(
            ['SERVER', 'PROJECT', 'FLAVOR', 'HOST', 'BID/H', 'SOURCE',
             'VCPU SHARE', 'PAYS/H', 'CHARGED', 'OUTCOME'], rows)]
    else:
        lines.append('no preemptible server is running')
    for n in record['notices']:
        lines.append('notice    %s (%s), deadline %s: %s' % (
            n['server'], n['project'], _clock(n['deadline']), n['reason']))
    for a in record['owner_actions']:
        lines.append('owner     %s (%s) sees the notice on %s and raises its '
                     'bid %s -> %s per hour' % (
                         a['user'], a['project'], a['server'],
                         _money(a['old_bid']), _money(a['new_bid'])))
    for n in record['cancelled']:
        lines.append('withdrawn %s (%s) at %s: %s' % (
            n['server'], n['project'], _clock(n['at']), n['why']))
    for n in record['preempted']:
        lines.append('preempted %s (%s) at %s, deleted (%s)' % (
            n['server'], n['project'], _clock(n['at']),
            n['kind'].replace('_', ' ')))
    for error in record['errors']:
        lines.append('error     %s' % error)
    lines += _table(['PROJECT', 'START', 'CHARGED', 'REFILL', 'BALANCE'], [
        [p, _money(a['start']), _money(a['charged']), _money(a['refilled']),
         _money(a['balance'])] for p, a in record['accounts'].items()])
    return '\n'.join(lines)


def format_demo_ledger(ledger):
    """The ledger of one project as text (amounts and balances currency).
    """
    lines = ['', 'ledger of project %s:' % ledger['project']]
    lines += ['  ' + line for line in _table(
        ['TIME', 'KIND', 'SERVER', 'AMOUNT', 'BALANCE', 'NOTE'],
        [[e['time_iso'], e['kind'], e['server'] or '-', _money(e['amount']),
          _money(e['balance']), e['note']] for e in ledger['entries']])]
    return '\n'.join(lines)


def run_demo(periods=6, period_seconds=3600, notice_seconds=300,
             say=None, on_period=None):
    """Run the spot market service's engine on an embedded Nova.

    Starts :class:`opie_sched.demo.cloud.EmbeddedCloud` (:data:`DEMO_HOSTS`
    hosts, preemptible vCPU overcommitted :data:`DEMO_CPU_RATIO`:1), a
    market store (sqlite in a temporary directory, removed at the end) and
    :class:`opie_sched.services.market.engine.MarketEngine` reading Nova
    through
    openstacksdk as ``admin`` and pricing the hypervisors' physical CPUs
    (so demand can exceed the capacity the market prices), with the
    reserve prices :data:`DEMO_RESERVE`. The projects of
    :data:`DEMO_PROJECTS` get their credit; at the start of each period
    their users boot the servers of :data:`DEMO_WAVES` (flavor
    :data:`DEMO_FLAVOR`) with openstacksdk (bid = server metadata
    ``opie:bid``), the engine settles the period (``tick(period start)``:
    prices, charges, notices), owners react to notices, and the engine
    enforces them at their deadlines (``tick(deadline)``). The clock is
    fake: nothing sleeps for a period.

    The market's rule (:func:`opie_sched.market.outbid.assess`): while
    the demand fits the pool the price is the reserve and nobody is out
    of bid; under contention the price clears the market (Merkat eq. 1
    with each flavor as its cap), a server whose share no longer covers
    its flavor is out of bid (the lowest bids first, never more than
    needed), and each server pays what its share costs at that price,
    never more than its bid.

    :param periods: number of periods (>= 1).
    :param period_seconds: market period, seconds (> 0).
    :param notice_seconds: notice period, seconds (>= 0, below
        ``period_seconds``).
    :param say: ``(text) -> None`` for progress lines.
    :param on_period: ``(record) -> None`` after each period.
    :returns: ``{"hosts", "host_capacity", "preemptible_cpu_ratio",
        "reserve_prices", "period_seconds", "notice_seconds",
        "preemption_action", "bid_cap", "projects", "periods": [record,
        ...], "ledger"}``; a record has ``prices`` and ``market`` (per
        pool: ``capacity``, ``bids``, ``reserve``, ``demand``,
        ``contended``, by resource), ``servers`` (each with ``bid``,
        ``bids`` (the bid split over the resources, currency per hour),
        ``shares`` (units), ``charge_per_hour`` (what the share costs),
        ``cost_per_hour`` (the flavor at the spot prices), ``charged``,
        ``outcome``), ``notices``, ``owner_actions``, ``cancelled``,
        ``preempted`` and ``accounts``.
    :raises ValueError: invalid arguments.
    """
    if isinstance(periods, bool) or not isinstance(periods, int) or not (
            1 <= periods <= DEMO_MAX_PERIODS):
        raise ValueError('periods must be an integer between 1 and %d, got '
                         '%r' % (DEMO_MAX_PERIODS, periods))
    if isinstance(period_seconds, bool) or not isinstance(
            period_seconds, int) or period_seconds < 1:
        raise ValueError('period_seconds must be an integer >= 1, got %r'
                         % (period_seconds,))
    if isinstance(notice_seconds, bool) or not isinstance(
            notice_seconds, int) or not 0 <= notice_seconds < period_seconds:
        raise ValueError('notice_seconds must be an integer >= 0 and below '
                         'period_seconds (%d), got %r'
                         % (period_seconds, notice_seconds))
    demo = _MarketDemo(periods, period_seconds, notice_seconds,
                       say or (lambda text: None))
    with _fixture_env():
        return demo.run(on_period or (lambda record: None))
