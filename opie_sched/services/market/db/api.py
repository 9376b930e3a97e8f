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
"""The opie-market database through oslo.db's enginefacade.

:class:`MarketStore` keeps accounts, the ledger, bids, price history,
period checkpoints, preemption notices and reserve prices (tables in
:mod:`.models`). It implements :class:`opie_sched.market.budget.LedgerStore`
with the semantics the credit manager needs: :meth:`MarketStore.post` is
one transaction that inserts the entry (the unique key raises
:class:`~opie_sched.market.budget.DuplicateEntry`) and updates the
account ``WHERE version = expected`` (no row:
:class:`~opie_sched.market.budget.StaleAccount`), so several workers may
share one database.

Times are seconds since the epoch; money and prices are
:class:`~decimal.Decimal` (currency; bids currency per hour; prices
currency per unit-hour).
"""

import decimal
import time

from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade
from oslo_log import log as logging
import sqlalchemy as sa

from opie_sched.market import budget
from opie_sched.services.market.db import migration
from opie_sched.services.market.db import models

LOG = logging.getLogger(__name__)


class MarkerNotFound(LookupError):
    """A page's marker names no row of the listing."""


class AlreadyNoticed(Exception):
    """The server has a pending notice (:meth:`MarketStore.start_drill`).
    """


class DrillLimited(Exception):
    """The project started its allowed drills in the window
    (:meth:`MarketStore.start_drill`); ``retry_at`` (epoch seconds) is
    when the oldest of them leaves the window.
    """

    def __init__(self, retry_at):
        super().__init__('drill limit reached; retry at %s' % retry_at)
        self.retry_at = retry_at


@enginefacade.transaction_context_provider
class _Context:
    """The per-call context oslo.db attaches its session to."""


def _sqlite_locked(exc):
    """Whether ``exc`` is sqlite's "database is locked": two writers of one
    sqlite file upgraded their read locks at once (it fails one of them at
    once, a deadlock sqlite reports as busy); the transaction is retried.
    """
    return 'database is locked' in str(exc)


def _page(session, query, limit, row):
    """``(rows, more)``: ``row(r)`` of each model row ``query`` selects,
    at most ``limit`` of them (None: all) read with ``LIMIT limit + 1``;
    ``more`` True when rows follow the page.
    """
    if limit is not None:
        query = query.limit(limit + 1)
    rows = [row(r) for r in session.scalars(query)]
    if limit is not None and len(rows) > limit:
        return rows[:limit], True
    return rows, False


def _keyset_page(session, model, first, last, where, marker, limit):
    """One page of the ``model`` rows matching ``where`` (list of SQL
    conditions, extended here), ordered by ``(first, last)`` (columns;
    ``last`` unique), after the row whose ``last`` is ``marker`` (None:
    from the first row); the rows as dicts of all of ``model``'s columns.

    :returns: ``(rows, more)`` as :func:`_page`.
    :raises MarkerNotFound: no row matching ``where`` has ``last ==
        marker``.
    """
    if marker is not None:
        after = session.scalars(sa.select(model).where(
            last == marker, *where)).first()
        if after is None:
            raise MarkerNotFound(marker)
        a_first = getattr(after, first.key)
        a_last = getattr(after, last.key)
        where.append(sa.or_(first > a_first,
                            sa.and_(first == a_first, last > a_last)))
    cols = [c.name for c in model.__table__.columns]
    query = sa.select(model).where(*where).order_by(first, last)
    return _page(session, query, limit,
                 lambda r: {c: getattr(r, c) for c in cols})


def key_text(period_start):
    """Canonical text of a ledger key's ``period_start`` (seconds).

    ``100``, ``100.0`` and ``Decimal('100.00')`` are the same key (as they
    are for :class:`~opie_sched.market.budget.EntryKey` equality).
    """
    value = decimal.Decimal(repr(period_start)) if isinstance(
        period_start, float) else decimal.Decimal(period_start)
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(), 'f')


def _key_value(text):
    value = decimal.Decimal(text)
    if value == value.to_integral_value():
        return int(value)
    return float(value)


def _account(row):
    return budget.Account(row.project, row.balance, row.refill_rate,
                          row.cap, row.version)


def _entry(row):
    key = budget.EntryKey(row.kind, row.project,
                          row.server if row.server != models.NO_SERVER
                          else None, _key_value(row.period_start))
    return budget.LedgerEntry(key, row.amount, row.balance,
                              row.period_seconds, row.note)


class MarketStore(budget.LedgerStore):
    """All state of the market in one SQL database.

    :param connection: SQLAlchemy URL, e.g. ``sqlite:////var/lib/opie/
        market.sqlite``, ``mysql+pymysql://user:pw@host/db``,
        ``postgresql://user@host/db``.
    :param engine_kwargs: extra oslo.db engine options
        (``max_pool_size``, ``connection_recycle_time``...).
    """

    def __init__(self, connection, **engine_kwargs):
        self.connection = connection
        self._tx = enginefacade.transaction_context()
        self._tx.configure(connection=connection, sqlite_fk=True,
                           **engine_kwargs)

    # -- plumbing ------------------------------------------------------

    @property
    def engine(self):
        """The SQLAlchemy engine (created by oslo.db on first use)."""
        return self._tx.writer.get_engine()

    def _writer(self):
        return self._tx.writer.using(_Context())

    def _reader(self):
        return self._tx.reader.using(_Context())

    def sync(self):
        """Create or upgrade the tables (alembic, to the newest revision).
        """
        migration.db_sync(self.engine)

    def version(self):
        """The database's alembic revision (None before :meth:`sync`)."""
        return migration.db_version(self.engine)

    def dispose(self):
        """Close the pooled connections."""
        self._tx.dispose_pool()

    # -- budget.LedgerStore ----------------------------------------------

    def add_account(self, account):
        """Store a new account; :class:`~.budget.BudgetError` if present.
        """
        now = time.time()
        try:
            with self._writer() as session:
                session.add(models.Account(
                    project=account.project, balance=account.balance,
                    refill_rate=account.refill_rate, cap=account.cap,
                    version=account.version, created_at=now))
        except db_exc.DBDuplicateEntry:
            raise budget.BudgetError('account of %r already exists'
                                     % account.project)

    def get_account(self, project):
        """The account of ``project``; :class:`~.budget.UnknownAccount`."""
        with self._reader() as session:
            row = session.get(models.Account, project)
            if row is None:
                raise budget.UnknownAccount(project)
            return _account(row)

    def update_account(self, project, refill_rate=None, cap=None,
                       clear_cap=False):
        """Change an account's refill rate (currency per hour) or cap
        (currency); the balance is only changed by ledger entries.
        """
        values = {'updated_at': time.time(),
                  'version': models.Account.version + 1}
        if refill_rate is not None:
            values['refill_rate'] = refill_rate
        if cap is not None or clear_cap:
            values['cap'] = cap
        with self._writer() as session:
            result = session.execute(sa.update(models.Account).where(
                models.Account.project == project).values(**values))
            if result.rowcount != 1:
                raise budget.UnknownAccount(project)

    def get_entry(self, key):
        """The ledger entry with ``key``, or None."""
        with self._reader() as session:
            row = session.scalars(sa.select(models.LedgerEntry).where(
                models.LedgerEntry.kind == key.kind,
                models.LedgerEntry.project == key.project,
                models.LedgerEntry.server == (key.server or models.NO_SERVER),
                models.LedgerEntry.period_start == key_text(
                    key.period_start))).first()
            return None if row is None else _entry(row)

    def post(self, entry, expected_version):
        """Append ``entry`` and set the account's balance, atomically.

        :raises DuplicateEntry: the key is already in the ledger.
        :raises StaleAccount: the account's version is not
            ``expected_version``.
        """
        key = entry.key
        now = time.time()
        try:
            with self._writer() as session:
                result = session.execute(
                    sa.update(models.Account)
                    .where(models.Account.project == key.project,
                           models.Account.version == expected_version)
                    .values(balance=entry.balance,
                            version=expected_version + 1, updated_at=now))
                if result.rowcount != 1:
                    raise budget.StaleAccount(key.project)
                session.add(models.LedgerEntry(
                    kind=key.kind, project=key.project,
                    server=key.server or models.NO_SERVER,
                    period_start=key_text(key.period_start),
                    amount=entry.amount, balance=entry.balance,
                    period_seconds=entry.period_seconds,
                    note=entry.note or '', created_at=now))
                session.flush()
        except db_exc.DBDuplicateEntry:
            raise budget.DuplicateEntry(key)
        except db_exc.DBDeadlock:
            # Another worker updated the same row concurrently: the
            # credit manager re-reads the account and tries again.
            raise budget.StaleAccount(key.project)

    def entries(self, project=None, since=None, limit=None):
        """Ledger entries in posting order.

        :param project: only this project's.
        :param since: only entries posted at or after this time (s).
        :param limit: at most this many, the newest ones.
        :returns: list of :class:`~.budget.LedgerEntry`.
        """
        return [e for e, _ in self.entries_with_time(project, since, limit)]

    def entries_with_time(self, project=None, since=None, limit=None):
        """Like :meth:`entries`, as ``(entry, posted_at)`` pairs."""
        query = sa.select(models.LedgerEntry)
        if project is not None:
            query = query.where(models.LedgerEntry.project == project)
        if since is not None:
            query = query.where(models.LedgerEntry.created_at >= since)
        if limit is not None:
            query = query.order_by(models.LedgerEntry.id.desc()).limit(limit)
        else:
            query = query.order_by(models.LedgerEntry.id)
        with self._reader() as session:
            rows = [(_entry(r), r.created_at) for r in session.scalars(query)]
        if limit is not None:
            rows.reverse()
        return rows

    def entries_page(self, project=None, since=None, marker=None,
                     limit=None):
        """One page of :meth:`entries_with_time`, in posting order, read
        with ``LIMIT`` in SQL.

        :param marker: the key of the last entry of the previous page,
            ``(kind, server or None, period_start text)`` (period_start as
            :func:`key_text` writes it); None: the first page.
        :param limit: at most this many entries (None: all after marker).
        :returns: ``(rows, more)``: ``rows`` ``(entry, posted_at)`` pairs,
            ``more`` True when entries follow the page.
        :raises MarkerNotFound: ``marker`` is no entry of the listing.
        """
        e = models.LedgerEntry
        where = []
        if project is not None:
            where.append(e.project == project)
        if since is not None:
            where.append(e.created_at >= since)
        with self._reader() as session:
            if marker is not None:
                kind, server, period_start = marker
                after = session.scalar(sa.select(e.id).where(
                    e.kind == kind, e.server == (server or models.NO_SERVER),
                    e.period_start == period_start, *where))
                if after is None:
                    raise MarkerNotFound(marker)
                where.append(e.id > after)
            query = sa.select(e).where(*where).order_by(e.id)
            return _page(session, query, limit,
                         lambda r: (_entry(r), r.created_at))

    # -- periods -----------------------------------------------------------

    def get_period(self, period_start):
        """``{"period_start", "period_seconds", "state", "owner"}`` or
        None.
        """
        with self._reader() as session:
            row = session.get(models.Period, period_start)
            if row is None:
                return None
            return {'period_start': row.period_start,
                    'period_seconds': row.period_seconds,
                    'state': row.state, 'owner': row.owner}

    def latest_period(self):
        """The newest recorded period (see :meth:`get_period`), or None."""
        with self._reader() as session:
            start = session.scalar(sa.select(sa.func.max(
                models.Period.period_start)))
        return None if start is None else self.get_period(start)

    def create_period(self, period_start, period_seconds, owner, servers,
                      pools):
        """Record a period's checkpoint, server snapshot and prices in one
        transaction.

        :param servers: iterable of dicts with the columns of
            :class:`.models.PeriodServer` (but ``period_start``).
        :param pools: mapping ``pool -> {"prices": {resource: price},
            "capacity": {resource: units}, "bids": {resource: bids}}``.
        :returns: True when recorded, False when the period was already
            recorded (by this or another worker): nothing is changed.
        """
        now = time.time()
        try:
            with self._writer() as session:
                session.add(models.Period(
                    period_start=period_start, period_seconds=period_seconds,
                    state=models.PRICED, owner=owner, created_at=now))
                session.flush()
                for server in servers:
                    session.add(models.PeriodServer(
                        period_start=period_start, **server))
                for pool, market in pools.items():
                    for resource, price in market['prices'].items():
                        session.add(models.PriceHistory(
                            pool=pool, resource=resource,
                            period_start=period_start,
                            period_seconds=period_seconds, price=price,
                            capacity=market['capacity'][resource],
                            bids=market['bids'][resource]))
                session.flush()
        except db_exc.DBDuplicateEntry:
            return False
        return True

    def set_period_state(self, period_start, state):
        """Move a period to ``state`` (one of :data:`.models.STATES`)."""
        if state not in models.STATES:
            raise ValueError('unknown period state %r' % state)
        with self._writer() as session:
            session.execute(sa.update(models.Period).where(
                models.Period.period_start == period_start).values(
                    state=state, updated_at=time.time()))

    def period_servers(self, period_start):
        """The period's server snapshot: list of dicts by server uuid."""
        cols = [c.name for c in models.PeriodServer.__table__.columns]
        with self._reader() as session:
            rows = session.scalars(sa.select(models.PeriodServer).where(
                models.PeriodServer.period_start == period_start).order_by(
                    models.PeriodServer.server_uuid))
            return [{c: getattr(r, c) for c in cols} for r in rows]

    def period_prices(self, period_start):
        """``{pool: {resource: price}}`` recorded for a period."""
        with self._reader() as session:
            rows = session.scalars(sa.select(models.PriceHistory).where(
                models.PriceHistory.period_start == period_start))
            prices = {}
            for row in rows:
                prices.setdefault(row.pool, {})[row.resource] = row.price
            return prices

    def price_history(self, start=None, end=None, pool=None, resource=None):
        """Recorded prices with ``start <= period_start < end``.

        :returns: list of dicts ``{"pool", "resource", "period_start",
            "period_seconds", "price", "capacity", "bids"}`` by period,
            pool and resource.
        """
        return self.price_history_page(start, end, pool, resource)[0]

    def price_history_page(self, start=None, end=None, pool=None,
                           resource=None, marker=None, limit=None):
        """One page of :meth:`price_history`, read with ``LIMIT`` in SQL.

        :param marker: ``(period_start, pool, resource)`` of the last row
            of the previous page; None: the first page.
        :param limit: at most this many rows (None: all after marker).
        :returns: ``(rows, more)``, ``more`` True when rows follow.
        :raises MarkerNotFound: ``marker`` is no row of the listing.
        """
        h = models.PriceHistory
        where = []
        if start is not None:
            where.append(h.period_start >= start)
        if end is not None:
            where.append(h.period_start < end)
        if pool is not None:
            where.append(h.pool == pool)
        if resource is not None:
            where.append(h.resource == resource)
        with self._reader() as session:
            if marker is not None:
                m_start, m_pool, m_resource = marker
                if session.scalar(sa.select(h.id).where(
                        h.period_start == m_start, h.pool == m_pool,
                        h.resource == m_resource, *where)) is None:
                    raise MarkerNotFound(marker)
                where.append(sa.or_(
                    h.period_start > m_start,
                    sa.and_(h.period_start == m_start, sa.or_(
                        h.pool > m_pool,
                        sa.and_(h.pool == m_pool,
                                h.resource > m_resource)))))
            query = sa.select(h).where(*where).order_by(
                h.period_start, h.pool, h.resource)
            return _page(session, query, limit, lambda r: {
                'pool': r.pool, 'resource': r.resource,
                'period_start': r.period_start,
                'period_seconds': r.period_seconds, 'price': r.price,
                'capacity': r.capacity, 'bids': r.bids})

    # -- bids --------------------------------------------------------------

    def set_bid(self, server_uuid, project, bid, source):
        """Record a server's bid (currency per hour) and its source."""
        now = time.time()
        with self._writer() as session:
            row = session.get(models.Bid, server_uuid)
            if row is None:
                session.add(models.Bid(server_uuid=server_uuid,
                                       project=project, bid=bid,
                                       source=source, updated_at=now))
            else:
                row.project, row.bid, row.source = project, bid, source
                row.updated_at = now

    def get_bid(self, server_uuid):
        """``{"server_uuid", "project", "bid", "source", "updated_at"}``
        or None.
        """
        with self._reader() as session:
            row = session.get(models.Bid, server_uuid)
            if row is None:
                return None
            return {'server_uuid': row.server_uuid, 'project': row.project,
                    'bid': row.bid, 'source': row.source,
                    'updated_at': row.updated_at}

    # -- notices -----------------------------------------------------------

    def add_notice(self, server_uuid, project, kind, reason, period_start,
                   noticed_at, deadline):
        """Give a server notice unless it has a pending one.

        A server preempted before (``preempted``, e.g. stopped) that runs
        again can be given a new notice.

        :returns: True when a notice was recorded now; False when the
            server already has a pending notice.
        """
        try:
            with self._writer() as session:
                row = session.get(models.Notice, server_uuid)
                if row is not None and row.state == models.NOTICED:
                    return False
                if row is None:
                    row = models.Notice(server_uuid=server_uuid)
                    session.add(row)
                row.project, row.kind, row.reason = project, kind, reason
                row.period_start, row.noticed_at = period_start, noticed_at
                row.deadline, row.state = deadline, models.NOTICED
                row.action, row.updated_at = None, noticed_at
                session.flush()
        except db_exc.DBDuplicateEntry:
            return False
        return True

    @oslo_db_api.wrap_db_retry(max_retries=8, retry_interval=0.1,
                               max_retry_interval=2, retry_on_deadlock=True,
                               exception_checker=_sqlite_locked)
    def start_drill(self, server_uuid, project, reason, period_start,
                    noticed_at, deadline, limit, window, flavor=None,
                    host=None):
        """Give a server an interruption drill's notice (kind ``drill``)
        unless it has a pending notice or its project started ``limit``
        drills in the last ``window`` seconds; record its at-risk mark
        and notice as events (cause ``drill``).

        The count, the notice and the events are one transaction, so
        several API workers on one database agree: the count is of the
        project's drill notices (events ``notice``, cause ``drill``) in
        ``(noticed_at - window, noticed_at]``; on PostgreSQL a
        transaction-level advisory lock per project, on MySQL the
        counted range read ``FOR UPDATE`` (its gap locks), on sqlite the
        file's write lock serialize two drills of one project (a deadlock
        between them, sqlite's "database is locked", is retried).

        :raises AlreadyNoticed: a notice is pending.
        :raises DrillLimited: the project is at its limit.
        :returns: the notice as a dict (columns of :class:`.models.Notice`).
        """
        try:
            return self._start_drill(server_uuid, project, reason,
                                     period_start, noticed_at, deadline,
                                     limit, window, flavor, host)
        except db_exc.DBDuplicateEntry:
            # the same server's drill at the same instant (a replay)
            raise AlreadyNoticed(server_uuid)

    def _start_drill(self, server_uuid, project, reason, period_start,
                     noticed_at, deadline, limit, window, flavor, host):
        e, n = models.Event, models.Notice
        with self._writer() as session:
            dialect = session.get_bind().dialect.name
            if dialect == 'postgresql':
                session.execute(sa.text(
                    'SELECT pg_advisory_xact_lock(hashtext(:key))'),
                    {'key': 'opie-market-drill:%s' % project})
            row = session.get(n, server_uuid, with_for_update=True)
            if row is not None and row.state == models.NOTICED:
                raise AlreadyNoticed(server_uuid)
            counted = sa.select(e.at).where(
                e.project == project, e.kind == models.EVENT_NOTICE,
                e.cause == models.CAUSE_DRILL,
                e.at > noticed_at - window).order_by(e.at)
            if dialect == 'mysql':
                counted = counted.with_for_update()
            ats = list(session.scalars(counted))
            if len(ats) >= limit:
                raise DrillLimited(
                    ats[len(ats) - limit] + window if limit else None)
            if row is None:
                row = n(server_uuid=server_uuid)
                session.add(row)
            row.project, row.kind, row.reason = (project, models.KIND_DRILL,
                                                 reason)
            row.period_start, row.noticed_at = period_start, noticed_at
            row.deadline, row.state = deadline, models.NOTICED
            row.action, row.updated_at = None, noticed_at
            for kind in (models.EVENT_AT_RISK, models.EVENT_NOTICE):
                session.add(e(
                    server_uuid=server_uuid, project=project, kind=kind,
                    cause=models.CAUSE_DRILL, at=noticed_at, host=host,
                    flavor=flavor, detail=reason))
            session.flush()
            return {c.name: getattr(row, c.name)
                    for c in n.__table__.columns}

    def notices(self, state=None, project=None):
        """Notices as dicts (columns of :class:`.models.Notice`), oldest
        first.
        """
        n = models.Notice
        query = sa.select(n)
        if state is not None:
            query = query.where(n.state == state)
        if project is not None:
            query = query.where(n.project == project)
        cols = [c.name for c in n.__table__.columns]
        with self._reader() as session:
            return [{c: getattr(r, c) for c in cols} for r in
                    session.scalars(query.order_by(n.noticed_at,
                                                   n.server_uuid))]

    def notices_page(self, state=None, project=None, marker=None,
                     limit=None):
        """One page of :meth:`notices` (oldest first), read with ``LIMIT``
        in SQL.

        :param marker: the server uuid of the last notice of the previous
            page; None: the first page.
        :param limit: at most this many notices (None: all after marker).
        :returns: ``(rows, more)``: ``rows`` as :meth:`notices`, ``more``
            True when notices follow the page.
        :raises MarkerNotFound: ``marker`` is no notice of the listing.
        """
        n = models.Notice
        where = []
        if state is not None:
            where.append(n.state == state)
        if project is not None:
            where.append(n.project == project)
        with self._reader() as session:
            return _keyset_page(session, n, n.noticed_at, n.server_uuid,
                                where, marker, limit)

    def set_notice_state(self, server_uuid, state, action=None,
                         expected=models.NOTICED):
        """Move a notice from ``expected`` to ``state``.

        :returns: True when this call changed it (so two workers never
            both preempt the same server), False otherwise.
        """
        with self._writer() as session:
            result = session.execute(sa.update(models.Notice).where(
                models.Notice.server_uuid == server_uuid,
                models.Notice.state == expected).values(
                    state=state, action=action, updated_at=time.time()))
            return result.rowcount == 1

    # -- reserve prices ----------------------------------------------------

    def set_reserve_prices(self, prices, pool=models.ALL_POOLS):
        """Set reserve prices (``{resource: currency per unit-hour}``) of
        a pool (``*``: every pool without its own).
        """
        now = time.time()
        with self._writer() as session:
            for resource, price in prices.items():
                row = session.get(models.ReservePrice, (pool, resource))
                if row is None:
                    session.add(models.ReservePrice(
                        pool=pool, resource=resource, price=price,
                        updated_at=now))
                else:
                    row.price, row.updated_at = price, now

    def reserve_prices(self):
        """``{pool: {resource: price}}`` set through the API."""
        with self._reader() as session:
            result = {}
            for row in session.scalars(sa.select(models.ReservePrice)):
                result.setdefault(row.pool, {})[row.resource] = row.price
            return result

    # -- events and lifetimes ------------------------------------------------

    def add_event(self, server_uuid, project, kind, at, cause=None,
                  action=None, host=None, flavor=None, detail='',
                  near=None):
        """Record one event of a server (:class:`.models.Event`).

        :param kind: one of :data:`.models.EVENT_KINDS`.
        :param at: epoch seconds.
        :param near: seconds, or None. When given, the event is not
            recorded if the server already has one of the same ``kind``
            within ``near`` seconds of ``at`` (checked in the same
            transaction): one event told by two writers at slightly
            different times (a notification's timestamp, the instance
            action's start) is recorded once.
        :returns: True when recorded now; False when the same
            ``(server_uuid, kind, at)`` was recorded before (a replay),
            or one ``near`` it.
        :raises ValueError: an unknown ``kind``.
        """
        if kind not in models.EVENT_KINDS:
            raise ValueError('unknown event kind %r' % (kind,))
        e = models.Event
        try:
            with self._writer() as session:
                if near is not None and session.scalars(
                        sa.select(e.id).where(
                            e.server_uuid == server_uuid, e.kind == kind,
                            e.at >= at - near, e.at <= at + near).limit(
                                1)).first() is not None:
                    return False
                session.add(models.Event(
                    server_uuid=server_uuid, project=project, kind=kind,
                    cause=cause, action=action, at=at, host=host,
                    flavor=flavor, detail=detail or ''))
                session.flush()
        except db_exc.DBDuplicateEntry:
            return False
        return True

    def events_page(self, project=None, server_uuid=None, marker=None,
                    limit=None):
        """Events in order (``at``, then ``id``), one page read with
        ``LIMIT`` in SQL.

        :param project: only this owner's (None: every project's).
        :param server_uuid: only this server's.
        :param marker: the ``id`` (int) of the last event of the previous
            page; None: the first page.
        :returns: ``(rows, more)``: rows as dicts of the columns of
            :class:`.models.Event`; ``more`` True when events follow.
        :raises MarkerNotFound: ``marker`` is no event of the listing.
        """
        e = models.Event
        where = []
        if project is not None:
            where.append(e.project == project)
        if server_uuid is not None:
            where.append(e.server_uuid == server_uuid)
        with self._reader() as session:
            return _keyset_page(session, e, e.at, e.id, where, marker, limit)

    def start_lifetime(self, server_uuid, project, started_at, flavor=None,
                       vcpus=0, memory_mb=0, host=None):
        """Open a server's lifetime unless it has one (first sight wins;
        a missing flavor name or host is filled in later sightings).

        :returns: True when opened now.
        """
        try:
            with self._writer() as session:
                row = session.get(models.Lifetime, server_uuid)
                if row is not None:
                    if row.flavor is None and flavor:
                        row.flavor = flavor
                    if row.host is None and host:
                        row.host = host
                    return False
                session.add(models.Lifetime(
                    server_uuid=server_uuid, project=project, flavor=flavor,
                    vcpus=vcpus or 0, memory_mb=memory_mb or 0, host=host,
                    started_at=started_at))
                session.flush()
        except db_exc.DBDuplicateEntry:
            return False
        return True

    def end_lifetime(self, server_uuid, ended_at, end):
        """Close a server's open lifetime (the first end wins: an
        interruption followed by the victim's deletion stays
        ``interrupted``; an interruption at or before a recorded censoring
        end replaces it).

        :returns: True when this call closed it.
        """
        lt = models.Lifetime
        open_or_later = lt.ended_at.is_(None)
        if end == models.END_INTERRUPTED:
            # an interruption reported after the market saw the victim
            # leave (or its deletion) still ends the life where it ended
            open_or_later = sa.or_(open_or_later, sa.and_(
                lt.end != models.END_INTERRUPTED, lt.ended_at >= ended_at))
        with self._writer() as session:
            result = session.execute(sa.update(lt).where(
                lt.server_uuid == server_uuid, open_or_later).values(
                    ended_at=ended_at, end=end))
            return result.rowcount == 1

    def get_lifetime(self, server_uuid):
        """The server's lifetime as a dict, or None."""
        lt = models.Lifetime
        cols = [c.name for c in lt.__table__.columns]
        with self._reader() as session:
            row = session.get(lt, server_uuid)
            return None if row is None else {c: getattr(row, c)
                                             for c in cols}

    def lifetimes(self, flavor=None, open_only=False):
        """Lifetimes as dicts, by start time.

        :param flavor: only this flavor name (None: all).
        :param open_only: only those without an end.
        """
        lt = models.Lifetime
        query = sa.select(lt)
        if flavor is not None:
            query = query.where(lt.flavor == flavor)
        if open_only:
            query = query.where(lt.ended_at.is_(None))
        cols = [c.name for c in lt.__table__.columns]
        with self._reader() as session:
            return [{c: getattr(r, c) for c in cols} for r in
                    session.scalars(query.order_by(lt.started_at,
                                                   lt.server_uuid))]
