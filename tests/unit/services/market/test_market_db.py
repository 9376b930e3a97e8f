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
"""The market database: the ``[database]`` options and the migrations.

* ``[database]`` (oslo.db's group) configures the store; ``[opie_market]
  connection`` still works, as a deprecated alias.
* The models (:mod:`opie_sched.services.market.db.models`) and the alembic
  migrations create the same schema (oslo.db's
  :class:`~oslo_db.sqlalchemy.test_migrations.ModelsMigrationsSync`), on
  SQLite always, on MariaDB/MySQL and PostgreSQL when a local server is
  reachable (``OPIE_MARKET_MYSQL_URL``, ``OPIE_MARKET_PG_URL``; skipped
  with the reason otherwise).
"""

import os

import fixtures
from oslo_config import cfg
from oslo_db.sqlalchemy import test_migrations
import sqlalchemy as sa
import testtools

from opie_sched.market import budget
from opie_sched.services.market.db import api as db_api
from opie_sched.services.market.db import migration
from opie_sched.services.market.db import models
from opie_sched.services.market import opts
from opie_sched.services.market import service
from tests.unit.services.market import test_market_service as market_tests


def _conf(test, text):
    path = os.path.join(test.useFixture(fixtures.TempDir()).path,
                        'market.conf')
    with open(path, 'w') as f:
        f.write(text)
    conf = cfg.ConfigOpts()
    opts.register_opts(conf)
    conf(['--config-file', path])
    return conf


class DatabaseOptionsTest(testtools.TestCase):

    def test_database_group(self):
        conf = _conf(self, '[database]\nconnection = sqlite:////tmp/x.db\n'
                           'max_pool_size = 7\nmax_retries = 3\n'
                           'slave_connection = sqlite:////tmp/y.db\n')
        self.assertEqual('sqlite:////tmp/x.db', opts.connection_url(conf))
        engine = opts.engine_options(conf)
        self.assertEqual(7, engine['max_pool_size'])
        self.assertEqual(3, engine['max_retries'])
        self.assertEqual('sqlite:////tmp/y.db', engine['slave_connection'])

    def test_opie_market_connection_is_a_deprecated_alias(self):
        conf = _conf(self, '[opie_market]\nconnection = sqlite:////tmp/a\n')
        self.assertEqual('sqlite:////tmp/a', opts.connection_url(conf))
        self.assertEqual('sqlite:////tmp/a', conf.database.connection)
        # the new name wins
        conf = _conf(self, '[opie_market]\nconnection = sqlite:////tmp/a\n'
                           '[database]\nconnection = sqlite:////tmp/b\n')
        self.assertEqual('sqlite:////tmp/b', opts.connection_url(conf))

    def test_default_is_the_sqlite_file_in_state_dir(self):
        conf = _conf(self, '[opie_market]\nstate_dir = /srv/m\n')
        self.assertEqual('sqlite:////srv/m/market.sqlite',
                         opts.connection_url(conf))

    def test_the_store_gets_the_engine_options(self):
        state = self.useFixture(fixtures.TempDir()).path
        conf = _conf(self, '[opie_market]\nstate_dir = %s\n'
                           '[database]\nmysql_sql_mode = ANSI\n'
                           'connection_recycle_time = 77\n' % state)
        seen = {}
        real = db_api.MarketStore.__init__

        def init(store, connection, **kwargs):
            seen.update(kwargs, connection=connection)
            real(store, connection, **kwargs)
        self.useFixture(fixtures.MonkeyPatch(
            'opie_sched.services.market.db.api.MarketStore.__init__', init))
        store = service.make_store(conf, sync=True)
        self.addCleanup(store.dispose)
        self.assertEqual('ANSI', seen['mysql_sql_mode'])
        self.assertEqual(77, seen['connection_recycle_time'])
        self.assertEqual(migration.head_revision(), store.version())

    def test_sample_lists_the_database_group(self):
        groups = dict(opts.list_opts())
        names = {o.dest for o in groups['database']}
        self.assertTrue({'connection', 'slave_connection', 'max_pool_size',
                         'max_retries', 'connection_recycle_time'} <= names)
        self.assertNotIn('connection', {o.dest for o in groups[
            'opie_market']})


class _ModelsMigrationsSync(test_migrations.ModelsMigrationsSync):
    """The migrations at head create what the models declare."""

    def make_url(self):
        raise NotImplementedError

    def setUp(self):
        super().setUp()
        self.engine = sa.create_engine(self.make_url())
        self.addCleanup(self.engine.dispose)

    def get_engine(self):
        return self.engine

    def get_metadata(self):
        return models.Base.metadata

    def db_sync(self, engine):
        migration.db_sync(engine)


class SqliteModelsMigrationsSyncTest(_ModelsMigrationsSync,
                                     testtools.TestCase):

    def make_url(self):
        return market_tests.sqlite_url(self)


class _ServerSync(_ModelsMigrationsSync):
    """On a throw-away database of a local server (skipped if absent)."""

    ENV = None
    DEFAULT = None

    def make_url(self):
        return market_tests.server_database_url(self, self.ENV, self.DEFAULT)


class MySQLModelsMigrationsSyncTest(_ServerSync, testtools.TestCase):
    ENV = market_tests.MySQLStoreTest.ENV
    DEFAULT = market_tests.MySQLStoreTest.DEFAULT


class PostgreSQLModelsMigrationsSyncTest(_ServerSync, testtools.TestCase):
    ENV = market_tests.PostgreSQLStoreTest.ENV
    DEFAULT = market_tests.PostgreSQLStoreTest.DEFAULT


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
