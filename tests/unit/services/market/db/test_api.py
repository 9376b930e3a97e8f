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
"""Tests of the market's store (opie_sched.services.market.db.api): one
contract run on sqlite always and on the local PostgreSQL and MySQL
servers when they answer (``OPIE_MARKET_PG_URL``, default
``postgresql://postgres@127.0.0.1/test``; ``OPIE_MARKET_MYSQL_URL``,
default ``mysql+pymysql://root@127.0.0.1/test``)."""

import dataclasses
import random
import threading
import time

import sqlalchemy as sa
import testtools

from opie_sched.market import budget
from opie_sched.services.market.db import api as db_api
from opie_sched.services.market.db import migration
from opie_sched.services.market.db import models
from tests.unit.services.market.db import test_api as store_tests
from tests.unit.services.market import helpers as market_tests
from tests.unit.services.market import helpers as base
from tests.unit.services.market.helpers import D
from tests.unit.services.market.helpers import HOUR
from tests.unit.services.market.helpers import new_store
from tests.unit.services.market.helpers import server_database_url
from tests.unit.services.market.helpers import sqlite_url
from tests.unit.services.market.helpers import T0


class _StoreContract:
    """:class:`budget.LedgerStore` and market tables, on any backend."""

    def make_url(self):
        raise NotImplementedError

    def setUp(self):
        super().setUp()
        self.url = self.make_url()
        self.store = new_store(self.url)
        self.addCleanup(self.store.dispose)

    def test_migrations_to_head_and_idempotent(self):
        self.assertEqual(migration.head_revision(), self.store.version())
        self.store.sync()  # again: nothing to do
        self.assertEqual('0003', self.store.version())
        tables = set(sa.inspect(self.store.engine).get_table_names())
        self.assertTrue({t.name for t in models.Base.metadata.sorted_tables}
                        <= tables)

    def test_accounts(self):
        self.store.add_account(budget.Account('p1', D('1.5'), D('0.25'),
                                              D(10)))
        self.assertRaises(budget.BudgetError, self.store.add_account,
                          budget.Account('p1'))
        self.assertRaises(budget.UnknownAccount, self.store.get_account,
                          'p2')
        self.assertEqual(budget.Account('p1', D('1.5'), D('0.25'), D(10), 0),
                         self.store.get_account('p1'))
        self.store.update_account('p1', refill_rate=D(2), clear_cap=True)
        account = self.store.get_account('p1')
        self.assertEqual((D(2), None, 1), (account.refill_rate, account.cap,
                                           account.version))

    def test_post_is_atomic_and_keyed(self):
        self.store.add_account(budget.Account('p1', D(10)))
        key = budget.EntryKey(budget.KIND_CHARGE, 'p1', 's1', T0)
        entry = budget.LedgerEntry(key, D('-1.25'), D('8.75'), HOUR, 'n')
        self.store.post(entry, 0)
        self.assertEqual(entry, self.store.get_entry(key))
        # the same key with a float start is the same key
        self.assertEqual(entry, self.store.get_entry(
            dataclasses.replace(key, period_start=float(T0))))
        self.assertRaises(budget.DuplicateEntry, self.store.post,
                          dataclasses.replace(entry, amount=D(-5)), 1)
        other = budget.LedgerEntry(dataclasses.replace(key, server='s2'),
                                   D(-1), D('7.75'), HOUR)
        self.assertRaises(budget.StaleAccount, self.store.post, other, 0)
        # neither failed post changed anything
        self.assertEqual([entry], self.store.entries('p1'))
        self.assertEqual(D('8.75'), self.store.get_account('p1').balance)
        self.assertEqual(1, self.store.get_account('p1').version)

    def test_credit_manager_replays_nothing_twice(self):
        manager = budget.CreditManager(self.store)
        manager.open_account('p1', 10, refill_rate=1, cap=20)
        prices = {'vcpus': D('0.1'), 'memory_mb': D('0.00001')}
        held = {'vcpus': 2, 'memory_mb': 4000}
        first = manager.charge('p1', 's1', T0, HOUR, prices, held)
        again = manager.charge('p1', 's1', T0, HOUR,
                               {'vcpus': D(5)}, held)
        self.assertEqual(first, again)
        manager.refill('p1', T0, HOUR)
        manager.refill('p1', T0, HOUR)
        manager.credit('p1', D('0.000001'), 12.5)
        manager.credit('p1', D('0.000001'), 12.5)
        # 10 - (0.2 + 0.04) + 1 + 0.000001, exactly
        self.assertEqual(D('10.760001'), manager.balance('p1'))
        self.assertEqual(['charge', 'refill', 'credit'],
                         [e.key.kind for e in self.store.entries('p1')])
        self.assertEqual([12.5], [e.key.period_start for e in
                                  self.store.entries('p1')
                                  if e.key.kind == 'credit'])

    def test_concurrent_workers_never_lose_or_repeat_a_post(self):
        budget.CreditManager(self.store).open_account('p1', 0)
        other = db_api.MarketStore(self.url)
        self.addCleanup(other.dispose)
        errors = []

        def post(manager, *args):
            # A post that keeps losing the race is given up by the
            # manager (StaleAccount); the service retries at its next
            # tick, as this worker does.
            for _ in range(50):
                try:
                    return manager.credit(*args)
                except budget.StaleAccount:
                    time.sleep(random.random() / 100)
            raise budget.StaleAccount(args[0])

        def work(store, offset):
            manager = budget.CreditManager(store)
            try:
                for i in range(10):
                    # both workers post the same ten keys
                    post(manager, 'p1', 1, T0 + i)
                    post(manager, 'p1', D('0.5'), T0 + 100 + i + offset)
            except Exception as exc:  # pragma: no cover - shown on failure
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(s, o))
                   for s, o in ((self.store, 0), (other, 1000))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual([], errors)
        entries = self.store.entries('p1')
        self.assertEqual(30, len(entries))
        self.assertEqual(D(20), self.store.get_account('p1').balance)
        self.assertEqual(sum(e.amount for e in entries),
                         self.store.get_account('p1').balance)

    def test_period_checkpoint_is_recorded_once(self):
        servers = [{'server_uuid': 's1', 'project': 'p1', 'pool': 'default',
                    'host': 'h1', 'bid': D('0.5'), 'bid_source': 'metadata',
                    'vcpus': 2, 'memory_mb': 4000, 'created_at': 1.0}]
        pools = {'default': {'prices': {'vcpus': D('0.03125')},
                             'capacity': {'vcpus': D(16)},
                             'bids': {'vcpus': D('0.5')}}}
        self.assertTrue(self.store.create_period(T0, HOUR, 'a', servers,
                                                 pools))
        self.assertFalse(self.store.create_period(T0, HOUR, 'b', [], {}))
        self.assertEqual('a', self.store.get_period(T0)['owner'])
        self.assertEqual({'default': {'vcpus': D('0.03125')}},
                         self.store.period_prices(T0))
        self.assertEqual(D('0.5'), self.store.period_servers(T0)[0]['bid'])
        self.store.set_period_state(T0, models.CHARGED)
        self.assertEqual(models.CHARGED, self.store.latest_period()['state'])
        self.assertEqual(1, len(self.store.price_history(T0, T0 + 1)))
        self.assertEqual([], self.store.price_history(T0 + 1))

    def test_notices_change_state_once(self):
        self.assertTrue(self.store.add_notice('s1', 'p1', 'out_of_bid', 'r',
                                              T0, T0, T0 + 60))
        self.assertFalse(self.store.add_notice('s1', 'p1', 'out_of_bid',
                                               'r', T0, T0, T0 + 60))
        self.assertTrue(self.store.set_notice_state('s1', models.PREEMPTED,
                                                    'delete'))
        self.assertFalse(self.store.set_notice_state('s1', models.PREEMPTED,
                                                     'delete'))

    def test_epoch_seconds_keep_their_fractions(self):
        # A single-precision FLOAT (MySQL/MariaDB) kept today's epoch only
        # to multiples of 128 s: a deadline 20 s ahead came back 5 s late.
        noticed, deadline = 1795409996.25, 1795410016.25
        self.store.add_notice('s1', 'p1', 'out_of_bid', 'r', T0, noticed,
                              deadline)
        [row] = self.store.notices()
        self.assertEqual((noticed, deadline),
                         (row['noticed_at'], row['deadline']))

    def test_reserve_prices_and_bids(self):
        self.store.set_reserve_prices({'vcpus': D('0.01')})
        self.store.set_reserve_prices({'vcpus': D('0.02')}, 'gpu')
        self.store.set_reserve_prices({'vcpus': D('0.03')})
        self.assertEqual({'*': {'vcpus': D('0.03')},
                          'gpu': {'vcpus': D('0.02')}},
                         self.store.reserve_prices())
        self.store.set_bid('s1', 'p1', D('0.5'), 'metadata')
        self.store.set_bid('s1', 'p1', D('0.75'), 'api')
        self.assertEqual((D('0.75'), 'api'), (
            self.store.get_bid('s1')['bid'],
            self.store.get_bid('s1')['source']))


class SqliteStoreTest(_StoreContract, testtools.TestCase):

    def make_url(self):
        return sqlite_url(self)


class _ServerStoreTest(_StoreContract):
    """On a throw-away database of a local server (skipped if absent)."""

    ENV = None
    DEFAULT = None

    def make_url(self):
        return server_database_url(self, self.ENV, self.DEFAULT)

    def setUp(self):
        super().setUp()
        # dispose before the database is dropped (cleanups run LIFO)
        self.addCleanup(self.store.dispose)


class PostgreSQLStoreTest(_ServerStoreTest, testtools.TestCase):
    ENV = 'OPIE_MARKET_PG_URL'
    DEFAULT = 'postgresql://postgres@127.0.0.1/test'


class MySQLStoreTest(_ServerStoreTest, testtools.TestCase):
    ENV = 'OPIE_MARKET_MYSQL_URL'
    DEFAULT = 'mysql+pymysql://root@127.0.0.1/test'


class StorePagingTest(testtools.TestCase):
    """Ledger and notice pages are cut by the database (``LIMIT``), not
    by slicing a whole listing in memory.
    """

    def setUp(self):
        super().setUp()
        self.store = market_tests.new_store(market_tests.sqlite_url(self))
        self.addCleanup(self.store.dispose)
        credit = budget.CreditManager(self.store)
        for project in ('pA', 'pB'):
            credit.open_account(project, 0, 0, None)
        for i in range(7):
            credit.credit('pA', i + 1, 1000 + i, 'grant %d' % i)
            credit.credit('pB', i + 1, 1000 + i, 'grant %d' % i)
        for i, uuid in enumerate(('s4', 's1', 's3', 's2', 's5')):
            # two notices share a noticed_at: the uuid breaks the tie
            self.store.add_notice(uuid, 'pA', 'out_of_bid', 'r', 0,
                                  100 + i // 2, 500)
        self.store.add_notice('x9', 'pB', 'out_of_bid', 'r', 0, 50, 500)
        self.statements = []
        sa.event.listen(self.store.engine, 'before_cursor_execute',
                        self._seen)
        self.addCleanup(sa.event.remove, self.store.engine,
                        'before_cursor_execute', self._seen)

    def _seen(self, conn, cursor, statement, *args):
        self.statements.append(' '.join(statement.split()))

    def _selects(self, table):
        return [s for s in self.statements
                if s.startswith('SELECT') and 'FROM %s' % table in s
                and 'WHERE %s.id =' % table not in s]

    def _walk(self, page, key, limit):
        pages, marker = [], None
        while True:
            rows, more = page(marker, limit)
            pages.append(rows)
            if not more:
                return pages
            marker = key(rows[-1])

    def test_ledger_pages(self):
        whole = self.store.entries_with_time('pA')
        self.statements.clear()
        pages = self._walk(
            lambda marker, limit: self.store.entries_page(
                'pA', marker=marker, limit=limit),
            lambda row: (row[0].key.kind, row[0].key.server,
                         db_api.key_text(row[0].key.period_start)), 3)
        self.assertEqual([3, 3, 1], [len(p) for p in pages])
        self.assertEqual(whole, sum(pages, []))
        listing = [s for s in self._selects('market_ledger')
                   if 'market_ledger.id >' in s or 'ORDER BY' in s]
        self.assertEqual(3, len(listing))
        self.assertTrue(all('LIMIT' in s for s in listing), listing)
        self.assertRaises(db_api.MarkerNotFound, self.store.entries_page,
                          'pB', marker=('credit', None, 'nope'), limit=2)
        # another project's entry is no marker of pA's listing
        other = self.store.entries_with_time('pB')[0][0].key
        self.assertRaises(db_api.MarkerNotFound, self.store.entries_page,
                          'pA', marker=(other.kind, other.server, 'x'),
                          limit=2)

    def test_notice_pages(self):
        whole = self.store.notices(project='pA')
        self.assertEqual(['s1', 's4', 's2', 's3', 's5'],
                         [n['server_uuid'] for n in whole])
        self.statements.clear()
        pages = self._walk(
            lambda marker, limit: self.store.notices_page(
                project='pA', marker=marker, limit=limit),
            lambda n: n['server_uuid'], 2)
        self.assertEqual([2, 2, 1], [len(p) for p in pages])
        self.assertEqual(whole, sum(pages, []))
        listing = [s for s in self._selects('market_notices')
                   if 'ORDER BY' in s]
        self.assertEqual(3, len(listing))
        self.assertTrue(all('LIMIT' in s for s in listing), listing)
        self.assertRaises(db_api.MarkerNotFound, self.store.notices_page,
                          project='pA', marker='x9', limit=2)
        self.assertEqual(([], False), self.store.notices_page(
            state='preempted', project='pA', limit=2))

    def test_price_history_pages(self):
        market = {'prices': {'vcpus': 1, 'memory_mb': 2},
                  'capacity': {'vcpus': 8, 'memory_mb': 8000},
                  'bids': {'vcpus': 0, 'memory_mb': 0}}
        for ps in (3600, 7200):
            self.store.create_period(ps, 3600, 'me', [],
                                     {'default': market, 'az:1': market})
        whole = self.store.price_history()
        self.assertEqual(8, len(whole))
        self.statements.clear()
        pages = self._walk(
            lambda marker, limit: self.store.price_history_page(
                marker=marker, limit=limit),
            lambda r: (r['period_start'], r['pool'], r['resource']), 3)
        self.assertEqual([3, 3, 2], [len(p) for p in pages])
        self.assertEqual(whole, sum(pages, []))
        listing = [s for s in self._selects('market_price_history')
                   if 'ORDER BY' in s]
        self.assertEqual(3, len(listing))
        self.assertTrue(all('LIMIT' in s for s in listing), listing)
        self.assertEqual(2, len(self.store.price_history_page(
            7200, marker=(7200, 'az:1', 'vcpus'), limit=5)[0]))
        self.assertRaises(db_api.MarkerNotFound,
                          self.store.price_history_page, 7200,
                          marker=(3600, 'az:1', 'vcpus'), limit=5)


class _DrillStoreContract:
    """:meth:`db_api.MarketStore.start_drill` on each database."""

    def make_url(self):
        raise NotImplementedError

    def setUp(self):
        super().setUp()
        self.store = base.new_store(self.make_url())
        self.addCleanup(self.store.dispose)

    def start(self, uuid, at, project='pA', limit=2):
        return self.store.start_drill(uuid, project, 'drill', 0, at,
                                      at + 60, limit, 3600, 'spot.small',
                                      'h1')

    def test_limit_and_pending_notice(self):
        at = 1_800_000_000.5
        notice = self.start('s1', at)
        self.assertEqual(('drill', 'noticed', at + 60),
                         (notice['kind'], notice['state'],
                          notice['deadline']))
        self.assertRaises(db_api.AlreadyNoticed, self.start, 's1', at + 1)
        self.start('s2', at + 2)
        error = self.assertRaises(db_api.DrillLimited, self.start, 's3',
                                  at + 3)
        self.assertEqual(at + 3600, error.retry_at)
        self.start('s3', at + 3, project='pB')
        self.start('s3b', at + 3600.5)
        rows, _ = self.store.events_page('pA')
        self.assertEqual([('s1', 'at_risk'), ('s1', 'notice'),
                          ('s2', 'at_risk'), ('s2', 'notice'),
                          ('s3b', 'at_risk'), ('s3b', 'notice')],
                         [(r['server_uuid'], r['kind']) for r in rows])
        self.assertEqual({'drill'}, {r['cause'] for r in rows})


class _ConcurrentDrills(_DrillStoreContract):
    """Several API workers on one database: of drills of one project
    started at once, exactly the limit's go through. The count's
    statement is slowed (0.3 s after it ran) so that every worker counts
    before any inserts.
    """

    WORKERS = 4

    def test_concurrent_workers_agree(self):
        # past notices of another project between the servers' keys:
        # the workers' notice rows fall in different gaps of its index,
        # so only the drill count's own locking keeps them apart
        for i in range(self.WORKERS):
            self.store.add_notice('s%da' % i, 'pZ', 'out_of_bid', 'x', 0,
                                  1.0, 2.0)
            self.store.set_notice_state('s%da' % i, models.CANCELLED)
        counted = []

        @sa.event.listens_for(self.store.engine, 'after_cursor_execute')
        def slow_count(conn, cursor, statement, params, context, many):
            if 'market_events' in statement and statement.lstrip(
                    ).upper().startswith('SELECT'):
                counted.append(statement)
                threading.Event().wait(0.3)

        barrier = threading.Barrier(self.WORKERS)
        results = []

        def worker(i):
            barrier.wait()
            try:
                self.start('s%d' % i, 1_800_000_000.0 + i / 10.0, limit=1)
                results.append('ok')
            except db_api.DrillLimited:
                results.append('limited')
            except Exception as exc:
                results.append(repr(exc))

        threads = [threading.Thread(target=worker, args=(i,))
                   for i in range(self.WORKERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(['limited'] * (self.WORKERS - 1) + ['ok'],
                         sorted(results))
        self.assertGreaterEqual(len(counted), self.WORKERS)
        self.assertEqual(1, len(self.store.notices(state='noticed')))
        self.assertEqual(2, len(self.store.events_page('pA')[0]))


class SqliteDrillStoreTest(_ConcurrentDrills, testtools.TestCase):

    # a writer of a sqlite file waits for the readers to leave (its busy
    # timeout): two workers show the race, more only take longer
    WORKERS = 2

    def make_url(self):
        return base.sqlite_url(self)


class PostgreSQLDrillStoreTest(_ConcurrentDrills, testtools.TestCase):

    def make_url(self):
        return base.server_database_url(
            self, store_tests.PostgreSQLStoreTest.ENV,
            store_tests.PostgreSQLStoreTest.DEFAULT)


class MySQLDrillStoreTest(_ConcurrentDrills, testtools.TestCase):

    def make_url(self):
        return base.server_database_url(self, store_tests.MySQLStoreTest.ENV,
                                        store_tests.MySQLStoreTest.DEFAULT)


class _EventStoreContract:
    """Events and lifetimes on each database the market supports."""

    def make_url(self):
        raise NotImplementedError

    def setUp(self):
        super().setUp()
        self.store = base.new_store(self.make_url())
        self.addCleanup(self.store.dispose)

    def test_events_and_lives(self):
        at = 1_800_000_000.25  # keeps its fraction (double precision)
        self.assertTrue(self.store.add_event('s1', 'pA', 'notice', at,
                                             cause='market'))
        self.assertFalse(self.store.add_event('s1', 'pA', 'notice', at))
        self.store.add_event('s1', 'pA', 'interruption', at + 1,
                             cause='scheduler', action='shelve')
        self.store.add_event('s2', 'pB', 'deleted', at)
        self.assertRaises(ValueError, self.store.add_event, 's1', 'pA',
                          'teleported', at)
        rows, more = self.store.events_page('pA', limit=1)
        self.assertEqual((['notice'], True), ([r['kind'] for r in rows],
                                              more))
        self.assertEqual(at, rows[0]['at'])
        rows, more = self.store.events_page('pA', marker=rows[0]['id'])
        self.assertEqual((['interruption'], False),
                         ([r['kind'] for r in rows], more))
        self.assertRaises(db_api.MarkerNotFound, self.store.events_page,
                          'pB', marker=rows[0]['id'])
        self.assertTrue(self.store.start_lifetime('s1', 'pA', at - 10))
        self.assertFalse(self.store.start_lifetime('s1', 'pA', at - 5,
                                                   'spot.small'))
        self.assertTrue(self.store.end_lifetime('s1', at + 5, 'left'))
        self.assertFalse(self.store.end_lifetime('s1', at + 6, 'deleted'))
        self.assertTrue(self.store.end_lifetime('s1', at + 1,
                                                'interrupted'))
        (life,) = self.store.lifetimes(flavor='spot.small')
        self.assertEqual((at - 10, at + 1, 'interrupted'),
                         (life['started_at'], life['ended_at'],
                          life['end']))
        self.assertEqual([], self.store.lifetimes(open_only=True))


class SqliteEventStoreTest(_EventStoreContract, testtools.TestCase):

    def make_url(self):
        return base.sqlite_url(self)


class PostgreSQLEventStoreTest(_EventStoreContract, testtools.TestCase):

    def make_url(self):
        return base.server_database_url(
            self, store_tests.PostgreSQLStoreTest.ENV,
            store_tests.PostgreSQLStoreTest.DEFAULT)


class MySQLEventStoreTest(_EventStoreContract, testtools.TestCase):

    def make_url(self):
        return base.server_database_url(self, store_tests.MySQLStoreTest.ENV,
                                        store_tests.MySQLStoreTest.DEFAULT)
