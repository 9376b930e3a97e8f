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
"""Tables of the opie-market service.

Money, bids, rates and prices are stored as exact decimal text
(:class:`DecimalText`): the ledger adds Decimals rounded to
:data:`opie_sched.market.budget.QUANTUM`, and prices per MB-hour need more
digits than a portable ``NUMERIC(p, s)`` keeps; sqlite has no exact
decimal type at all. Times are seconds since the epoch (integers for
period starts, decimal text for ledger keys whose "period start" may be a
fractional credit grant time).

Every row that must be written once has a unique key, so that a replay
after a crash inserts nothing twice (:class:`LedgerEntry`:
``(kind, project, server, period_start)``; :class:`PriceHistory`:
``(pool, resource, period_start)``; :class:`Period`: ``period_start``;
:class:`PeriodServer`: ``(period_start, server_uuid)``; :class:`Notice`:
``server_uuid``).
"""

import decimal

import sqlalchemy as sa
from sqlalchemy import orm

#: Stand-in for "no server" in a ledger key: NULLs are never equal in SQL
#: unique constraints, so refills and credits use '' instead.
NO_SERVER = ''


#: Times are epoch seconds in double precision: a plain FLOAT is single
#: precision on MySQL/MariaDB, which keeps today's epoch only to multiples of
#: 128 s (a notice deadline 20 s ahead was stored 5 s in the past).
Epoch = sa.Double


class DecimalText(sa.types.TypeDecorator):
    """A :class:`~decimal.Decimal` stored exactly as text (max 64 chars).

    Accepts Decimal, int, or decimal text; returns Decimal (or None).
    """
    impl = sa.String(64)
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        value = decimal.Decimal(value) if not isinstance(
            value, decimal.Decimal) else value
        if not value.is_finite():
            raise ValueError('not a finite decimal: %s' % value)
        return format(value, 'f')

    def process_result_value(self, value, dialect):
        return None if value is None else decimal.Decimal(value)


class Base(orm.DeclarativeBase):
    pass


class Account(Base):
    """A project's account (:class:`opie_sched.market.budget.Account`)."""
    __tablename__ = 'market_accounts'
    project = sa.Column(sa.String(255), primary_key=True)
    balance = sa.Column(DecimalText(), nullable=False)
    refill_rate = sa.Column(DecimalText(), nullable=False)
    cap = sa.Column(DecimalText(), nullable=True)
    version = sa.Column(sa.Integer, nullable=False, default=0)
    created_at = sa.Column(Epoch, nullable=False)
    updated_at = sa.Column(Epoch, nullable=True)


class LedgerEntry(Base):
    """One change of an account; ``id`` gives the posting order."""
    __tablename__ = 'market_ledger'
    __table_args__ = (
        sa.UniqueConstraint('kind', 'project', 'server', 'period_start',
                            name='uniq_market_ledger0key'),
        sa.Index('market_ledger_project_idx', 'project', 'id'),
    )
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    kind = sa.Column(sa.String(16), nullable=False)
    project = sa.Column(sa.String(255), nullable=False)
    server = sa.Column(sa.String(64), nullable=False, default=NO_SERVER)
    period_start = sa.Column(sa.String(40), nullable=False)
    amount = sa.Column(DecimalText(), nullable=False)
    balance = sa.Column(DecimalText(), nullable=False)
    period_seconds = sa.Column(sa.Integer, nullable=True)
    note = sa.Column(sa.Text, nullable=False, default='')
    created_at = sa.Column(Epoch, nullable=False)


class Bid(Base):
    """The last known bid of a server (currency per hour) and its source
    (``metadata``, ``flavor``, ``default``, or ``api``).
    """
    __tablename__ = 'market_bids'
    server_uuid = sa.Column(sa.String(64), primary_key=True)
    project = sa.Column(sa.String(255), nullable=False, index=True)
    bid = sa.Column(DecimalText(), nullable=False)
    source = sa.Column(sa.String(16), nullable=False)
    updated_at = sa.Column(Epoch, nullable=False)


class PriceHistory(Base):
    """The price of a resource in a pool for one period (currency per
    unit-hour).
    """
    __tablename__ = 'market_price_history'
    __table_args__ = (
        sa.UniqueConstraint('pool', 'resource', 'period_start',
                            name='uniq_market_price0pool0resource0start'),
        sa.Index('market_price_start_idx', 'period_start'),
    )
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    pool = sa.Column(sa.String(255), nullable=False)
    resource = sa.Column(sa.String(64), nullable=False)
    period_start = sa.Column(sa.BigInteger, nullable=False)
    period_seconds = sa.Column(sa.Integer, nullable=False)
    price = sa.Column(DecimalText(), nullable=False)
    capacity = sa.Column(DecimalText(), nullable=False)
    bids = sa.Column(DecimalText(), nullable=False)


#: Period states, in order: prices and the server snapshot are recorded,
#: every charge is posted, notices are given.
PRICED = 'priced'
CHARGED = 'charged'
DONE = 'done'
STATES = (PRICED, CHARGED, DONE)


class Period(Base):
    """Checkpoint of one settled period."""
    __tablename__ = 'market_periods'
    period_start = sa.Column(sa.BigInteger, primary_key=True,
                             autoincrement=False)
    period_seconds = sa.Column(sa.Integer, nullable=False)
    state = sa.Column(sa.String(16), nullable=False)
    owner = sa.Column(sa.String(255), nullable=True)
    created_at = sa.Column(Epoch, nullable=False)
    updated_at = sa.Column(Epoch, nullable=True)


class PeriodServer(Base):
    """A running preemptible server as priced and charged in a period."""
    __tablename__ = 'market_period_servers'
    period_start = sa.Column(sa.BigInteger, primary_key=True,
                             autoincrement=False)
    server_uuid = sa.Column(sa.String(64), primary_key=True)
    project = sa.Column(sa.String(255), nullable=False)
    pool = sa.Column(sa.String(255), nullable=False)
    host = sa.Column(sa.String(255), nullable=True)
    bid = sa.Column(DecimalText(), nullable=False)
    bid_source = sa.Column(sa.String(16), nullable=False)
    vcpus = sa.Column(sa.Integer, nullable=False)
    memory_mb = sa.Column(sa.Integer, nullable=False)
    created_at = sa.Column(Epoch, nullable=True)


#: Notice states.
NOTICED = 'noticed'
PREEMPTED = 'preempted'
CANCELLED = 'cancelled'
GONE = 'gone'


#: Notice kind of an owner's interruption drill (the market's own kinds
#: are in :mod:`opie_sched.services.market.enforcement`).
KIND_DRILL = 'drill'


class Notice(Base):
    """A preemption notice: ``deadline`` (epoch seconds) after which the
    server is interrupted by its behaviour; ``kind`` is ``out_of_bid``,
    ``out_of_credit`` or ``drill`` (its owner asked for it:
    :data:`KIND_DRILL`).
    """
    __tablename__ = 'market_notices'
    server_uuid = sa.Column(sa.String(64), primary_key=True)
    project = sa.Column(sa.String(255), nullable=False, index=True)
    kind = sa.Column(sa.String(32), nullable=False)
    reason = sa.Column(sa.Text, nullable=False)
    period_start = sa.Column(sa.BigInteger, nullable=False)
    noticed_at = sa.Column(Epoch, nullable=False)
    deadline = sa.Column(Epoch, nullable=False)
    state = sa.Column(sa.String(16), nullable=False)
    action = sa.Column(sa.String(16), nullable=True)
    updated_at = sa.Column(Epoch, nullable=True)


#: Reserve prices set through the API; pool ``*`` applies to every pool
#: without its own.
ALL_POOLS = '*'


class ReservePrice(Base):
    """An operator's reserve price (currency per unit-hour)."""
    __tablename__ = 'market_reserve_prices'
    pool = sa.Column(sa.String(255), primary_key=True)
    resource = sa.Column(sa.String(64), primary_key=True)
    price = sa.Column(DecimalText(), nullable=False)
    updated_at = sa.Column(Epoch, nullable=False)


#: Kinds of :class:`Event` (the owner's event history, oldest first):
#: a server marked at risk, given notice, interrupted, restored, sent
#: through a drill; ``deleted``: its owner deleted it; ``ack``: its owner
#: acknowledged a notice (:data:`EVENT_ACK`).
EVENT_AT_RISK = 'at_risk'
EVENT_NOTICE = 'notice'
EVENT_INTERRUPTION = 'interruption'
EVENT_RESTORE = 'restore'
EVENT_DRILL = 'drill'
EVENT_DELETED = 'deleted'
#: Its owner acknowledged a pending notice through the market API: the
#: interruption ran then, not at the deadline (cause ``owner``).
EVENT_ACK = 'ack'
EVENT_KINDS = (EVENT_AT_RISK, EVENT_NOTICE, EVENT_INTERRUPTION,
               EVENT_RESTORE, EVENT_DRILL, EVENT_DELETED, EVENT_ACK)

#: Causes of an interruption (the scheduler's cause words, the market's;
#: ``drill``: an owner's interruption drill, never counted in rates).
CAUSE_SCHEDULER = 'scheduler'
CAUSE_RECONCILER = 'reconciler'
CAUSE_LIFETIME = 'max-lifetime'
CAUSE_MARKET = 'market'
CAUSE_DRILL = 'drill'
CAUSE_OWNER = 'owner'


class Event(Base):
    """One thing that happened to a preemptible server, as its owner may
    read it: ``kind`` (:data:`EVENT_KINDS`), ``cause`` (who did it),
    ``action`` (the interruption behaviour: delete, stop, shelve), at
    ``at`` (epoch seconds). ``project`` is the server's owner at the time
    (kept when the server is deleted). Written once: ``(server_uuid,
    kind, at)`` is unique, so a replayed notification adds nothing.
    """
    __tablename__ = 'market_events'
    __table_args__ = (
        sa.UniqueConstraint('server_uuid', 'kind', 'at',
                            name='uniq_market_events0server0kind0at'),
        sa.Index('market_events_project_idx', 'project', 'at', 'id'),
    )
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    server_uuid = sa.Column(sa.String(64), nullable=False)
    project = sa.Column(sa.String(255), nullable=False)
    kind = sa.Column(sa.String(16), nullable=False)
    cause = sa.Column(sa.String(32), nullable=True)
    action = sa.Column(sa.String(16), nullable=True)
    at = sa.Column(Epoch, nullable=False)
    host = sa.Column(sa.String(255), nullable=True)
    flavor = sa.Column(sa.String(255), nullable=True)
    detail = sa.Column(sa.Text, nullable=False, default='')


#: How a :class:`Lifetime` ended: interrupted (an event), or censored
#: (its owner deleted or stopped it; it left the market's view).
END_INTERRUPTED = 'interrupted'
END_DELETED = 'deleted'
END_LEFT = 'left'


class Lifetime(Base):
    """A preemptible server's life, for survival curves: from
    ``started_at`` (its creation, epoch seconds) to ``ended_at`` (None:
    still running), ``end`` one of :data:`END_INTERRUPTED` (an
    interruption other than a drill), :data:`END_DELETED` or
    :data:`END_LEFT` (censored). ``flavor`` is the flavor's name when
    Nova told it, with ``vcpus`` and ``memory_mb`` (its size).
    """
    __tablename__ = 'market_lifetimes'
    __table_args__ = (
        sa.Index('market_lifetimes_flavor_idx', 'flavor', 'started_at'),
    )
    server_uuid = sa.Column(sa.String(64), primary_key=True)
    project = sa.Column(sa.String(255), nullable=False)
    flavor = sa.Column(sa.String(255), nullable=True)
    vcpus = sa.Column(sa.Integer, nullable=False, default=0)
    memory_mb = sa.Column(sa.Integer, nullable=False, default=0)
    host = sa.Column(sa.String(255), nullable=True)
    started_at = sa.Column(Epoch, nullable=False)
    ended_at = sa.Column(Epoch, nullable=True)
    end = sa.Column(sa.String(16), nullable=True)
