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
"""Tests of the opie-market service: database, engine, leader election,
REST API and command line (no Nova: a fake cloud stands in for
openstacksdk).

The store runs on sqlite by default; :class:`PostgreSQLStoreTest` and
:class:`MySQLStoreTest` run the same contract on the local servers
(``OPIE_MARKET_PG_URL``, default ``postgresql://postgres@127.0.0.1/test``;
``OPIE_MARKET_MYSQL_URL``, default ``mysql+pymysql://root@127.0.0.1/test``)
and are skipped, with the reason, when those are not reachable.
"""

import dataclasses
from decimal import Decimal
import io
import json
import os
import random
import threading
import time
import uuid

import fixtures
from oslo_config import cfg
import sqlalchemy as sa
import testtools
import webob

from opie_sched.cmd import market_service
from opie_sched.common import flavors
from opie_sched.market import budget
from opie_sched.services.market.api import app as api_app
from opie_sched.services.market.api import policy
from opie_sched.services.market import client as market_client
from opie_sched.services.market import cloud as market_cloud
from opie_sched.services.market.db import api as db_api
from opie_sched.services.market.db import migration
from opie_sched.services.market.db import models
from opie_sched.services.market import engine
from opie_sched.services.market import opts

D = Decimal
HOUR = 3600
T0 = 1000 * HOUR  # a period start (aligned on the epoch)


class FakeCloud:
    """The :class:`opie_sched.services.market.engine.Cloud` interface, in
    memory.

    Two 8 vCPU / 16000 MB hosts in one pool by default.
    """

    def __init__(self, hosts=None):
        self._hosts = hosts or {'h1': {'vcpus': 8, 'memory_mb': 16000},
                                'h2': {'vcpus': 8, 'memory_mb': 16000}}
        self.by_uuid = {}
        self.terminated = []
        self.confirmed = []
        self.tags = {}
        self.aggs = {}
        self.fail_listing = False
        self.refuse = set()
        #: {uuid: [(instance action name, start epoch)]}: Nova's instance
        #: actions (the scheduler's preempt_notice and preempt among them)
        self.actions = {}

    def add(self, uuid, project, bid=None, host='h1', vcpus=2, ram=4000,
            created=0, preemptible=True, metadata=None):
        md = dict(metadata or {})
        if bid is not None:
            md['opie:bid'] = str(bid)
        specs = (flavors.preemptible_extra_specs(vcpus, ram, 40)
                 if preemptible else {})
        self.by_uuid[uuid] = engine.ServerInfo(
            uuid, project, 'ACTIVE', host, vcpus, ram, specs, md, created,
            uuid)
        return uuid

    def servers(self):
        if self.fail_listing:
            raise RuntimeError('nova API down')
        return list(self.by_uuid.values())

    def get_server(self, uuid):
        return self.by_uuid.get(uuid)

    def hosts(self):
        return dict(self._hosts)

    def aggregates(self):
        return self.aggs

    def _replace(self, uuid, **kw):
        self.by_uuid[uuid] = dataclasses.replace(self.by_uuid[uuid], **kw)

    def set_metadata(self, uuid, metadata):
        self._replace(uuid, metadata=dict(self.by_uuid[uuid].metadata,
                                          **metadata))

    def delete_metadata(self, uuid, keys):
        self._replace(uuid, metadata={
            k: v for k, v in self.by_uuid[uuid].metadata.items()
            if k not in keys})

    def add_tag(self, uuid, tag):
        self.tags.setdefault(uuid, set()).add(tag)

    def instance_actions(self, uuid):
        return list(self.actions.get(uuid, ())) if uuid in self.by_uuid \
            else []

    def confirm_resize(self, uuid):
        self.confirmed.append(uuid)

    def terminate(self, uuid, action):
        if action in self.refuse:
            raise market_cloud.Refused('Cannot %s in this state' % action)
        self.terminated.append((uuid, action))
        if action == 'delete':
            del self.by_uuid[uuid]
        elif action == 'shelve':
            self._replace(uuid, status='SHELVED_OFFLOADED', host=None)
        else:
            self._replace(uuid, status='SHUTOFF')


#: Two 4 vCPU / 8000 MB hosts: four 2 vCPU / 4000 MB servers fill the pool,
#: a fifth makes it contended.
SMALL = {'h1': {'vcpus': 4, 'memory_mb': 8000},
         'h2': {'vcpus': 4, 'memory_mb': 8000}}


class RecordingNotifier:
    """An oslo.messaging Notifier's interface, recording
    ``(event_type, payload primitive)``.
    """

    def __init__(self):
        self.sent = []
        self.publisher_ids = []

    def prepare(self, publisher_id=None):
        self.publisher_ids.append(publisher_id)
        return self

    def info(self, ctxt, event_type, payload):
        self.sent.append((event_type, payload))


def sqlite_url(test):
    path = test.useFixture(fixtures.TempDir()).path
    return 'sqlite:///' + os.path.join(path, 'market.sqlite')


def new_store(url):
    store = db_api.MarketStore(url)
    store.sync()
    return store


# -- the store ---------------------------------------------------------------

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


def server_database_url(test, env, default):
    """A throw-away database on the local server of URL ``$env`` (else
    ``default``), dropped at cleanup; skips ``test`` with the reason when
    the server is not reachable.
    """
    base = sa.engine.make_url(os.environ.get(env, default))
    try:
        admin = sa.create_engine(base, isolation_level='AUTOCOMMIT')
        with admin.connect() as conn:
            conn.execute(sa.text('SELECT 1'))
    except Exception as exc:
        test.skipTest('%s not reachable (%s=%s): %s' % (
            base.get_backend_name(), env,
            base.render_as_string(hide_password=True),
            str(exc).splitlines()[0]))
    name = 'opie_market_%s' % uuid.uuid4().hex[:12]
    with admin.connect() as conn:
        conn.execute(sa.text('CREATE DATABASE %s' % name))

    def drop():
        with admin.connect() as conn:
            conn.execute(sa.text('DROP DATABASE IF EXISTS %s' % name))
        admin.dispose()
    test.addCleanup(drop)
    return base.set(database=name).render_as_string(hide_password=False)


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


# -- the engine --------------------------------------------------------------

class EngineTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.url = sqlite_url(self)
        self.store = new_store(self.url)
        self.cloud = FakeCloud()
        self.notifier = RecordingNotifier()
        self.settings = engine.Settings(period_seconds=HOUR,
                                        notice_period=600,
                                        initial_credit=D(100),
                                        bid_cap=D(50))

    def engine(self, store=None, **kw):
        settings = dataclasses.replace(self.settings, **kw)
        return engine.MarketEngine(store or self.store, self.cloud, settings,
                                   notifier=self.notifier)

    def charges(self, project, store=None):
        return {e.key.server: -e.amount
                for e in (store or self.store).entries(project)
                if e.key.kind == 'charge'}

    def test_idle_pool_is_priced_at_the_reserve(self):
        # 3 servers x 2 vCPU of 16: no contention -> the reserve price,
        # nobody out of bid, each pays the reserve cost of its flavor.
        for i, bid in enumerate((1, 2, 3)):
            self.cloud.add('s%d' % i, 'pA', bid)
        report = self.engine(reserve_prices={'vcpus': D('0.01')}).tick(T0)
        self.assertEqual([], report.errors)
        self.assertEqual({'default': {'vcpus': D('0.01'),
                                      'memory_mb': D(0)}}, report.prices)
        self.assertEqual([], report.notices)
        self.assertEqual({'s0': D('0.02'), 's1': D('0.02'),
                          's2': D('0.02')}, self.charges('pA'))

    def test_prices_clear_the_market_and_charges_once_per_period(self):
        self.cloud = FakeCloud(SMALL)
        for i, bid in enumerate((1, 2, 3, 4, 5)):
            self.cloud.add('s%d' % i, 'pA', bid, created=i)
        self.cloud.add('normal', 'pA', 9, preemptible=False)
        eng = self.engine()
        report = eng.tick(T0 + 10)
        self.assertEqual([], report.errors)
        # 10 vCPU asked of 8. Bids split half/half; vCPU bids .5 .. 2.5:
        # eq. 1 gives 7.5 / 8; s3 and s4 reach their 2 vCPU and then s2 at
        # 3 / 4: the last 2 vCPU go to s0 and s1 at p* = 1.5 / 2 = 0.75
        # per vCPU-hour (memory: 0.75 / 2000 per MB-hour).
        self.assertEqual({'default': {'vcpus': D('0.75'),
                                      'memory_mb': D('0.000375')}},
                         report.prices)
        shares = {u: p.shares['vcpus'] for u, p in
                  report.markets['default'].positions.items()}
        self.assertEqual([D(2)] * 3, [shares['s2'], shares['s3'],
                                      shares['s4']])
        close = self.assertAlmostEqual
        close(2 / 3, float(shares['s0']))
        close(4 / 3, float(shares['s1']))
        again = eng.tick(T0 + 20)
        self.assertTrue(again.replayed)
        # what the share costs: s0, s1 their bids; the capped ones
        # 0.75 * 2 + 0.000375 * 4000 = 3
        self.assertEqual({'s0': D(1), 's1': D(2), 's2': D(3), 's3': D(3),
                          's4': D(3)}, self.charges('pA'))
        self.assertEqual(D(88), self.store.get_account('pA').balance)
        # only s0 must go: without it 8 vCPU are asked of 8
        self.assertEqual(['s0'], report.notices)
        self.assertEqual([engine.EVENT_PRICE_UPDATE, engine.EVENT_NOTICE],
                         [e for e, _ in self.notifier.sent])
        self.assertEqual(report.shares['s0'].host, 'h1')

    def test_invalid_bids_never_change_a_price(self):
        self.cloud = FakeCloud(SMALL)
        self.cloud.add('good', 'pA', 2)
        for i, bad in enumerate(('-1', 'NaN', 'abc', '51')):
            self.cloud.add('bad%d' % i, 'pB', bad)
        with fixtures.FakeLogger() as log:
            report = self.engine().tick(T0)
        # 10 vCPU asked of 8, but only 'good' bids: it gets its flavor
        # and nobody else bids, so the price is the reserve (0).
        self.assertEqual({'default': {'vcpus': D(0), 'memory_mb': D(0)}},
                         report.prices)
        self.assertEqual({'bad0', 'bad1', 'bad2', 'bad3'},
                         set(report.rejected))
        self.assertIn('must not be negative', report.rejected['bad0'])
        self.assertIn('above the largest accepted bid 50',
                      report.rejected['bad3'])
        self.assertIn('bid rejected, not priced', log.output)
        # they still hold resources: they count as bidding 0 and share
        # the 6 vCPU left as equal bidders -- 1.5 of 2 each -- so the one
        # first in preemption order goes (never more than needed).
        self.assertEqual(['bad0'], report.notices)
        notice = self.cloud.by_uuid['bad0'].metadata[engine.NOTICE_KEY]
        self.assertIn('invalid bid', notice)

    def test_lowest_bidder_noticed_then_preempted(self):
        self.cloud = FakeCloud(SMALL)
        for i, bid in enumerate((1, 2, 3, 3)):
            self.cloud.add('s%d' % i, 'pA', bid, created=i)
        eng = self.engine()
        # the pool is full, not contended: nobody is out of bid
        report = eng.tick(T0)
        self.assertEqual([], report.notices)
        self.assertEqual({'vcpus': D(0), 'memory_mb': D(0)},
                         report.prices['default'])
        self.cloud.add('t0', 'pB', 2, host='h2', created=9)
        report = eng.tick(T0 + HOUR)
        # 10 vCPU asked of 8: s0, s1 and t0 get less than 2 vCPU, but
        # without s0 (the lowest bid) everybody fits: only s0 is noticed.
        self.assertTrue(all(report.markets['default'].positions[u]
                            .out_of_bid for u in ('s0', 's1', 't0')))
        self.assertEqual(['s0'], report.notices)
        meta = self.cloud.by_uuid['s0'].metadata
        self.assertIn('out of bid', meta[engine.NOTICE_KEY])
        self.assertIn('contended', meta[engine.NOTICE_KEY])
        self.assertEqual(engine.iso(T0 + HOUR + 600),
                         meta[engine.DEADLINE_KEY])
        self.assertEqual([], eng.tick(T0 + HOUR + 599).preempted)
        report = eng.tick(T0 + HOUR + 600)
        self.assertEqual(['s0'], report.preempted)
        self.assertEqual([('s0', 'delete')], self.cloud.terminated)
        self.assertEqual([], eng.tick(T0 + HOUR + 700).preempted)
        events = [e for e, _ in self.notifier.sent]
        self.assertIn(engine.EVENT_NOTICE, events)
        self.assertIn(engine.EVENT_PREEMPTED, events)

    def contended(self):
        self.cloud = FakeCloud(SMALL)
        for i, bid in enumerate((1, 2, 3, 2, 3)):
            self.cloud.add('s%d' % i, 'pA', bid, created=i)

    def test_raising_the_bid_cancels_the_notice(self):
        self.contended()
        eng = self.engine(preemption_action='stop')
        self.assertEqual(['s0'], eng.tick(T0).notices)
        self.cloud.set_metadata('s0', {'opie:bid': '5'})
        report = eng.tick(T0 + 600)
        # with 5 s0 is no longer the lowest: s1 (bid 2, oldest) would be,
        # but the notice was s0's; s0 is spared
        self.assertEqual(([], ['s0']), (report.preempted, report.cancelled))
        self.assertNotIn(engine.NOTICE_KEY,
                         self.cloud.by_uuid['s0'].metadata)

    def test_a_stopped_victim_is_deleted_after_the_grace_period(self):
        # issue 31: one meaning of stop, the scheduler's: stopped at the
        # deadline, deleted after stop_grace_period (a stopped server
        # keeps its host)
        self.contended()
        eng = self.engine(preemption_action='stop', stop_grace_period=60)
        self.assertEqual(['s0'], eng.tick(T0).notices)
        self.assertEqual(['s0'], eng.tick(T0 + 600).preempted)
        self.assertEqual('SHUTOFF', self.cloud.by_uuid['s0'].status)
        self.assertEqual(engine.PREEMPTED_BY, self.cloud.by_uuid[
            's0'].metadata[engine.PREEMPTED_BY_KEY])
        self.assertEqual({engine.PREEMPTED_TAG}, self.cloud.tags['s0'])
        eng.tick(T0 + 659)  # within the grace period: kept
        self.assertEqual([('s0', 'stop')], self.cloud.terminated)
        eng.tick(T0 + 660)
        self.assertEqual([('s0', 'stop'), ('s0', 'delete')],
                         self.cloud.terminated)
        self.assertNotIn('s0', self.cloud.by_uuid)
        # gone: the notice is closed, nothing more is sent
        eng.tick(T0 + 720)
        eng.tick(T0 + 780)
        self.assertEqual(2, len(self.cloud.terminated))
        self.assertEqual([(models.GONE, 'stop')], [
            (n['state'], n['action']) for n in self.store.notices()
            if n['server_uuid'] == 's0'])

    def test_a_stopped_victim_resized_to_normal_is_spared(self):
        self.contended()
        eng = self.engine(preemption_action='stop', stop_grace_period=60)
        eng.tick(T0)
        self.assertEqual(['s0'], eng.tick(T0 + 600).preempted)
        self.cloud._replace('s0', extra_specs={})  # a normal flavor now
        report = eng.tick(T0 + 700)
        self.assertIn('s0', report.cancelled)
        self.assertEqual([('s0', 'stop')], self.cloud.terminated)
        eng.tick(T0 + 800)
        self.assertEqual([('s0', 'stop')], self.cloud.terminated)

    def test_a_stopped_victim_restarted_is_back_in_the_market(self):
        self.contended()
        eng = self.engine(preemption_action='stop', stop_grace_period=60)
        eng.tick(T0)
        self.assertEqual(['s0'], eng.tick(T0 + 600).preempted)
        self.cloud._replace('s0', status='ACTIVE')  # the owner starts it
        report = eng.tick(T0 + 700)
        self.assertIn('s0', report.cancelled)
        self.assertEqual([('s0', 'stop')], self.cloud.terminated)
        # charged and priced again, noticed again as it is still out of bid
        report = eng.tick(T0 + HOUR)
        self.assertIn('s0', {srv.uuid for srv in report.servers})
        self.assertEqual(['s0'], report.notices)

    def test_shelve_refused_falls_back_to_delete(self):
        # issue 30 hole 3 in the market: a rescued server cannot be
        # shelved; the fallback (delete) frees its host at once
        self.contended()
        specs = dict(self.cloud.by_uuid['s0'].extra_specs,
                     **{engine.BEHAVIOR_SPEC: 'shelve'})
        self.cloud._replace('s0', extra_specs=specs, status='RESCUE')
        eng = self.engine()
        self.assertEqual(['s0'], eng.tick(T0).notices)
        self.assertIn('(delete)', self.cloud.by_uuid['s0'].metadata[
            engine.NOTICE_KEY])
        self.assertEqual(['s0'], eng.tick(T0 + 600).preempted)
        self.assertEqual([('s0', 'delete')], self.cloud.terminated)

    def test_shelve_refused_by_nova_falls_back_to_delete(self):
        # the state changed after it was read: Nova's 409
        self.contended()
        specs = dict(self.cloud.by_uuid['s0'].extra_specs,
                     **{engine.BEHAVIOR_SPEC: 'shelve'})
        self.cloud._replace('s0', extra_specs=specs)
        self.cloud.refuse = {'shelve'}
        eng = self.engine()
        eng.tick(T0)
        self.assertEqual(['s0'], eng.tick(T0 + 600).preempted)
        self.assertEqual([('s0', 'delete')], self.cloud.terminated)
        self.assertEqual('delete', [n for n in self.store.notices()
                                    if n['server_uuid'] == 's0'][0]['action'])

    def test_out_of_credit_project_is_preempted(self):
        self.cloud = FakeCloud(SMALL)
        self.cloud.add('rich', 'pA', 6, vcpus=4, ram=8000)
        self.cloud.add('poor1', 'pB', 2, created=1)
        self.cloud.add('poor2', 'pB', 2, created=2)
        self.cloud.add('poor3', 'pB', 1, created=3)
        budget.CreditManager(self.store).open_account('pB', D('0.9'))
        eng = self.engine()
        report = eng.tick(T0)
        # 10 vCPU asked of 8: rich gets its 4 at 6/8 ... the vCPU market
        # clears at p* = 2.5 / 4 with poor1 and poor2 at 1.6 vCPU, poor3
        # at 0.8; each pays its bid: 0.9 - 5 = -4.1
        self.assertEqual(D('-4.1'), self.store.get_account('pB').balance)
        self.assertIn('poor3', report.notices)  # out of bid
        self.assertEqual({'poor1', 'poor2', 'poor3'}, set(report.notices))
        self.assertIn('out of credit',
                      self.cloud.by_uuid['poor1'].metadata[
                          engine.NOTICE_KEY])
        # a credit before the deadline saves a server of the notice...
        budget.CreditManager(self.store).credit('pB', D('6.1'), T0 + 1)
        report = eng.tick(T0 + 600)
        # ...balance 2 pays the next period of one server: poor3 goes (out
        # of bid, lowest), then poor1 (out of credit, lowest bid, oldest
        # first), poor2 stays.
        self.assertEqual(['poor3', 'poor1'], report.preempted)
        self.assertEqual(['poor2'], report.cancelled)
        self.assertIn('rich', self.cloud.by_uuid)

    def test_crash_mid_period_loses_and_repeats_nothing(self):
        self.cloud = FakeCloud(SMALL)
        for i, bid in enumerate((1, 2, 3, 4, 5)):
            self.cloud.add('s%d' % i, 'pA', bid)
        calls = []
        real = budget.CreditManager.charge

        def crash_on_second(manager, *args, **kwargs):
            calls.append(args)
            if len(calls) == 2:
                raise RuntimeError('power cut')
            return real(manager, *args, **kwargs)

        with fixtures.MonkeyPatch(
                'opie_sched.market.budget.CreditManager.charge',
                crash_on_second):
            report = self.engine().tick(T0 + 5)
        self.assertEqual(['settle: power cut'], report.errors)
        self.assertEqual(models.PRICED, self.store.get_period(T0)['state'])
        # the server charged last goes away during the crash; bids change
        del self.cloud.by_uuid['s4']
        self.cloud.set_metadata('s0', {'opie:bid': '9'})
        # a fresh process: new store object, new engine
        restarted = new_store(self.url)
        report = self.engine(store=restarted).tick(T0 + 30)
        self.assertEqual([], report.errors)
        self.assertTrue(report.replayed)
        self.assertEqual(models.DONE, restarted.get_period(T0)['state'])
        # charged from the recorded snapshot and prices, once each
        self.assertEqual({'s0': D(1), 's1': D(2), 's2': D(3), 's3': D(3),
                          's4': D(3)}, self.charges('pA', restarted))
        self.assertEqual(D(88), restarted.get_account('pA').balance)
        self.assertEqual(2, len(restarted.price_history()))

    def refused(self, uuid, project, bid, created, vcpus=2, ram=4000):
        self.cloud.add(uuid, project, bid, host=None, vcpus=vcpus, ram=ram,
                       created=created)
        self.cloud._replace(uuid, status='ERROR', fault=(
            'No valid host was found. There are not enough hosts '
            'available.'))

    def test_refused_boots_raise_the_price_and_outbid_the_lowest(self):
        # issue 23: four 2 vCPU servers fill the 8 vCPU pool (Placement
        # admits no more): at the reserve. Two boots Nova refused,
        # bidding 4, are demand the price must ration: the price rises
        # and the lowest bids per unit get notice; the refused boots are
        # neither charged nor noticed.
        self.cloud = FakeCloud(SMALL)
        for i, bid in enumerate((1, 2, 3, 3)):
            self.cloud.add('s%d' % i, 'pA', bid, created=i)
        reserve = {'vcpus': D('0.01')}
        eng = self.engine(reserve_prices=reserve)
        calm = eng.tick(T0)
        self.assertEqual(D('0.01'), calm.prices['default']['vcpus'])
        self.assertEqual([], calm.notices)
        self.refused('r1', 'pB', 4, created=T0 + HOUR - 60)
        self.refused('r2', 'pB', 4, created=T0 + HOUR - 50)
        # refused before the window (2 periods + the notice period):
        # forgotten demand
        self.refused('old', 'pB', 40, created=T0 - 2 * HOUR)
        report = eng.tick(T0 + HOUR)
        self.assertEqual([], report.errors)
        self.assertGreater(report.prices['default']['vcpus'], D('0.01'))
        self.assertEqual(['s0', 's1'], sorted(report.notices))
        charged = self.charges('pA')
        self.assertNotIn('r1', charged)
        self.assertEqual({}, self.charges('pB'))
        self.assertEqual({'s0', 's1', 's2', 's3'},
                         {srv.uuid for srv in report.servers})
        rows = {r['server_uuid']: r['bid_source']
                for r in self.store.period_servers(T0 + HOUR)}
        self.assertEqual('refused', rows['r1'])
        self.assertNotIn('old', rows)
        # the refused boots are deleted: the demand is gone, the notices
        # are withdrawn at the deadline
        del self.cloud.by_uuid['r1'], self.cloud.by_uuid['r2']
        report = eng.tick(T0 + 2 * HOUR)
        self.assertEqual(D('0.01'), report.prices['default']['vcpus'])
        self.assertEqual([], self.cloud.terminated)

    def test_unbacked_refused_bids_are_not_demand(self):
        # a refused boot costs nothing: its bid counts only when its
        # project's balance could pay it for a period
        self.cloud = FakeCloud(SMALL)
        for i, bid in enumerate((1, 2, 3, 3)):
            self.cloud.add('s%d' % i, 'pA', bid, created=i)
        self.refused('r1', 'pB', 40, created=T0 - 10)
        eng = self.engine(initial_credit=D(0))
        eng.credit.open_account('pA', D(1000))
        self.assertEqual([], eng.tick(T0).notices)
        eng.credit.open_account('pB', D(39))
        self.assertEqual([], eng.tick(T0 + HOUR).notices)
        eng.credit.credit('pB', D(1), T0 + HOUR, 'enough now')
        self.assertEqual(['s0'], eng.tick(T0 + 2 * HOUR).notices)

    def test_refused_demand_window_zero_ignores_refused_boots(self):
        self.cloud = FakeCloud(SMALL)
        for i, bid in enumerate((1, 2, 3, 3)):
            self.cloud.add('s%d' % i, 'pA', bid, created=i)
        self.refused('r1', 'pB', 4, created=T0 - 1)
        report = self.engine(refused_demand_window=0).tick(T0)
        self.assertEqual([], report.notices)

    def test_verify_resize_is_charged_and_enforced(self):
        # issue 23: a preemptible resize left in VERIFY_RESIZE was never
        # charged and its notice never enforced.
        self.contended()
        self.cloud._replace('s0', status='VERIFY_RESIZE')
        eng = self.engine()
        report = eng.tick(T0)
        self.assertIn('s0', {srv.uuid for srv in report.servers})
        self.assertIn('s0', self.charges('pA'))
        self.assertEqual(['s0'], report.notices)
        # past the deadline: the resize is confirmed (Nova refuses the
        # preemption marks in vm_state resized), then it is preempted
        report = eng.tick(T0 + 600)
        self.assertEqual(([], ['s0']), (report.preempted,
                                        self.cloud.confirmed))
        self.cloud._replace('s0', status='ACTIVE')
        report = eng.tick(T0 + 610)
        self.assertEqual(['s0'], report.preempted)
        self.assertEqual([('s0', 'delete')], self.cloud.terminated)

    def test_verify_resize_confirmed_then_stopped(self):
        self.contended()
        self.cloud._replace('s0', status='VERIFY_RESIZE')
        eng = self.engine(preemption_action='stop')
        self.assertEqual(['s0'], eng.tick(T0).notices)
        report = eng.tick(T0 + 600)
        self.assertEqual(([], ['s0']), (report.preempted,
                                        self.cloud.confirmed))
        self.cloud._replace('s0', status='ACTIVE')
        report = eng.tick(T0 + 610)
        self.assertEqual([('s0', 'stop')], self.cloud.terminated)

    def test_flavor_chooses_the_interruption_behaviour(self):
        # issue 23: per server (its flavor), what happens at the deadline;
        # the notice the guest reads says which
        self.contended()
        specs = dict(self.cloud.by_uuid['s0'].extra_specs,
                     **{engine.BEHAVIOR_SPEC: 'shelve'})
        self.cloud._replace('s0', extra_specs=specs)
        eng = self.engine()
        self.assertEqual(['s0'], eng.tick(T0).notices)
        self.assertIn('(shelve)', self.cloud.by_uuid['s0'].metadata[
            engine.NOTICE_KEY])
        self.assertEqual('shelve', self.notifier.sent[-1][1][
            'opie_object.data']['action'])
        report = eng.tick(T0 + 600)
        self.assertEqual(['s0'], report.preempted)
        self.assertEqual([('s0', 'shelve')], self.cloud.terminated)
        # a malformed value falls back to preemption_action
        self.assertEqual('stop', self.engine(
            preemption_action='stop').enforcer.behavior(dataclasses.replace(
                self.cloud.by_uuid['s1'], extra_specs={
                    engine.BEHAVIOR_SPEC: 'explode'})))

    def test_charge_rule_bid_charges_the_bid(self):
        self.cloud = FakeCloud(SMALL)
        for i, bid in enumerate((1, 2, 3, 4, 5)):
            self.cloud.add('s%d' % i, 'pA', bid, created=i)
        self.engine(charge_rule='bid').tick(T0 + 10)
        # share cost would be 1, 2, 3, 3, 3 (see above); the papers' rule
        # bills every bid
        self.assertEqual({'s0': D(1), 's1': D(2), 's2': D(3), 's3': D(4),
                          's4': D(5)}, self.charges('pA'))

    def test_resized_to_a_normal_flavor_leaves_the_market(self):
        # issue 10 item 6: a noticed server resized to a normal flavor
        # during its notice period is never deleted by the market.
        self.contended()
        eng = self.engine()
        self.assertEqual(['s0'], eng.tick(T0).notices)
        normal = {'hw:cpu_policy': 'shared'}
        # the resize is in progress: the market waits
        self.cloud._replace('s0', status='RESIZE', task_state='resize_prep')
        report = eng.tick(T0 + 600)
        self.assertEqual(([], []), (report.preempted, report.cancelled))
        # resized, waiting for confirmation, on a normal flavor
        self.cloud._replace('s0', status='VERIFY_RESIZE', task_state=None,
                            extra_specs=normal)
        report = eng.tick(T0 + 610)
        self.assertEqual(([], []), (report.preempted, report.cancelled))
        # past its deadline: the market confirms the resize (it could
        # otherwise wait for ever, holding both flavors, charged for none)
        self.assertEqual(['s0'], self.cloud.confirmed)
        self.cloud._replace('s0', status='ACTIVE')
        report = eng.tick(T0 + 620)
        self.assertEqual(([], ['s0']), (report.preempted, report.cancelled))
        self.assertEqual([], self.cloud.terminated)
        self.assertNotIn(engine.NOTICE_KEY,
                         self.cloud.by_uuid['s0'].metadata)
        # no more charges: the next period does not see it
        report = eng.tick(T0 + HOUR)
        self.assertNotIn('s0', {srv.uuid for srv in report.servers})
        self.assertEqual([T0], [e.key.period_start for e in
                                self.store.entries('pA')
                                if e.key.server == 's0'])

    def test_notice_withdrawn_at_the_next_period_after_a_resize(self):
        self.contended()
        eng = self.engine(notice_period=3 * HOUR)
        self.assertEqual(['s0'], eng.tick(T0).notices)
        self.cloud._replace('s0', extra_specs={})
        report = eng.tick(T0 + HOUR)
        self.assertEqual(['s0'], report.cancelled)
        self.assertNotIn(engine.NOTICE_KEY,
                         self.cloud.by_uuid['s0'].metadata)

    def test_enforcement_rechecks_just_before_acting(self):
        # the server is resized to a normal flavor between the first check
        # and the action: it is spared and its notice withdrawn.
        self.contended()
        eng = self.engine()
        self.assertEqual(['s0'], eng.tick(T0).notices)
        real = self.cloud.get_server
        reads = []

        def get_server(uuid):
            reads.append(uuid)
            if len(reads) == 2:
                self.cloud._replace(uuid, extra_specs={})
            return real(uuid)

        self.cloud.get_server = get_server
        report = eng.tick(T0 + 600)
        self.assertEqual(['s0', 's0'], reads)
        self.assertEqual(([], ['s0']), (report.preempted, report.cancelled))
        self.assertEqual([], self.cloud.terminated)
        self.assertEqual(models.CANCELLED,
                         self.store.notices()[0]['state'])

    def test_a_failing_cloud_is_logged_and_retried(self):
        self.cloud.add('s0', 'pA', 1)
        self.cloud.fail_listing = True
        eng = self.engine()
        report = eng.tick(T0)
        self.assertEqual(['settle: nova API down'], report.errors)
        self.assertIsNone(self.store.get_period(T0))
        self.cloud.fail_listing = False
        self.assertEqual(models.DONE, eng.tick(T0 + 60).state)

    def test_tracker_learns_demand_and_stands_in_for_nova(self):
        tracker = engine.DemandTracker()
        flavor = {'nova_object.data': {
            'vcpus': 2, 'memory_mb': 4000,
            'extra_specs': flavors.preemptible_extra_specs(2, 4000, 40)}}
        payload = {'nova_object.data': {
            'uuid': 'n1', 'tenant_id': 'pA', 'state': 'active',
            'host': 'h1', 'flavor': flavor, 'metadata': {'opie:bid': '1'},
            'created_at': '2026-11-22T00:00:00Z'}}
        self.assertTrue(tracker.apply('instance.create.end', payload))
        self.assertEqual(['n1'], [s.uuid for s in tracker.servers()])
        self.assertTrue(tracker.apply('instance.delete.end', payload))
        self.assertFalse(tracker.apply('compute.exception', payload))
        eng = engine.MarketEngine(self.store, self.cloud, self.settings,
                                  tracker=tracker)
        self.cloud.add('s0', 'pA', 1)
        eng.tick(T0)  # reconciles the tracker with Nova's list
        self.assertEqual(['s0'], [s.uuid for s in tracker.servers()])
        tracker.apply('instance.create.end', payload)
        self.cloud.fail_listing = True
        report = eng.tick(T0 + HOUR)
        self.assertEqual([], report.errors)
        self.assertEqual({'s0', 'n1'}, {s.uuid for s in report.servers})

    def test_tracker_keeps_refused_boots(self):
        # instance.create.error with NoValidHost: refused demand, priced
        # even when Nova's API cannot be listed
        tracker = engine.DemandTracker()
        flavor = {'nova_object.data': {
            'vcpus': 2, 'memory_mb': 4000,
            'extra_specs': flavors.preemptible_extra_specs(2, 4000, 40)}}
        payload = {'nova_object.data': {
            'uuid': 'r1', 'tenant_id': 'pB', 'state': 'error',
            'host': None, 'flavor': flavor, 'metadata': {'opie:bid': '9'},
            'created_at': engine.iso(T0 - 10),
            'fault': {'nova_object.data': {
                'exception': 'NoValidHost',
                'exception_message': 'No valid host was found. '}}}}
        self.assertTrue(tracker.apply('instance.create.error', payload))
        [info] = tracker.servers()
        self.assertTrue(info.refused)
        self.cloud = FakeCloud(SMALL)
        for i, bid in enumerate((1, 2, 3, 3)):
            self.cloud.add('s%d' % i, 'pA', bid, created=i)
        eng = engine.MarketEngine(self.store, self.cloud, self.settings,
                                  tracker=tracker)
        tracker.reconcile(list(self.cloud.by_uuid.values()) + [info],
                          T0 - 60)
        self.cloud.fail_listing = True
        report = eng.tick(T0)
        self.assertEqual([], report.errors)
        self.assertEqual(['s0'], report.notices)

    def test_settings_from_conf_and_bad_values(self):
        conf = cfg.ConfigOpts()
        opts.register_opts(conf)
        conf([])
        conf.set_override('reserve_prices', {'vcpus': '0.01'},
                          'opie_market')
        settings = engine.Settings.from_conf(conf.opie_market)
        self.assertEqual({'vcpus': D('0.01')}, settings.reserve_prices)
        conf.set_override('default_bid', '-1', 'opie_market')
        self.assertRaisesRegex(engine.ConfigError, 'default_bid',
                               engine.Settings.from_conf, conf.opie_market)
        conf.set_override('default_bid', '0', 'opie_market')
        conf.set_override('reserve_prices', {'gpus': '1'}, 'opie_market')
        self.assertRaisesRegex(engine.ConfigError, 'unknown resources gpus',
                               engine.Settings.from_conf, conf.opie_market)
        self.assertEqual([('opie_market', opts.OPTS),
                          ('database', opts.DATABASE_OPTS)],
                         opts.list_opts()[:2])
        self.assertEqual('service_credentials',
                         opts.list_opts()[2][0].name)


class LeaderElectionTest(testtools.TestCase):

    def test_only_the_leader_charges(self):
        url = sqlite_url(self)
        store = new_store(url)
        coord = 'file://' + self.useFixture(fixtures.TempDir()).path
        cloud = FakeCloud()
        cloud.add('s0', 'pA', 1)
        settings = engine.Settings(period_seconds=HOUR, initial_credit=D(5))
        engines = []
        for member in ('replica-a', 'replica-b'):
            leadership = engine.Leadership(coord, member)
            self.addCleanup(leadership.stop)
            engines.append(engine.MarketEngine(
                new_store(url), cloud, settings, leadership=leadership))
        a, b = engines
        reports = [a.tick(T0), b.tick(T0), b.tick(T0 + HOUR),
                   a.tick(T0 + HOUR)]
        self.assertEqual([True, False, False, True],
                         [r.leader for r in reports])
        self.assertEqual(2, len([e for e in store.entries('pA')
                                 if e.key.kind == 'charge']))
        self.assertEqual('replica-a', store.get_period(T0)['owner'])
        # the leader goes away: the other replica takes over
        a.leadership.stop()
        report = b.tick(T0 + 2 * HOUR)
        self.assertTrue(report.leader)
        self.assertEqual('replica-b', store.get_period(T0 + 2 * HOUR)[
            'owner'])
        self.assertEqual(3, len([e for e in store.entries('pA')
                                 if e.key.kind == 'charge']))


# -- the REST API ------------------------------------------------------------

class _APIBase(testtools.TestCase):
    """The API over a fake cloud: srv-a (project pA, bid 1), srv-b (pB,
    bid 2), plain-a (pA, not preemptible); one period settled.
    """

    def setUp(self):
        super().setUp()
        self.store = new_store(sqlite_url(self))
        # 3 vCPU / 6000 MB for 4 / 8000 asked: contended
        self.cloud = FakeCloud({'h1': {'vcpus': 2, 'memory_mb': 4000},
                                'h2': {'vcpus': 1, 'memory_mb': 2000}})
        self.cloud.add('srv-a', 'pA', 1)
        self.cloud.add('srv-b', 'pB', 2)
        self.cloud.add('plain-a', 'pA', preemptible=False)
        conf = cfg.ConfigOpts()
        opts.register_opts(conf)
        conf([])
        self.settings = engine.Settings(period_seconds=HOUR,
                                        bid_cap=D(10), initial_credit=D(3))
        self.app = api_app.NoAuth(api_app.MarketAPI(
            self.store, self.cloud, self.settings, policy.enforcer(conf),
            clock=lambda: T0 + 0.5))
        engine.MarketEngine(self.store, self.cloud, self.settings).tick(T0)

    def call(self, method, path, token='admin:admin', body=None):
        req = webob.Request.blank(path, method=method)
        if token:
            req.headers['X-Auth-Token'] = token
        if body is not None:
            req.body = (body if isinstance(body, bytes)
                        else json.dumps(body).encode())
            req.content_type = 'application/json'
        resp = req.get_response(self.app)
        return resp.status_int, resp.json


class APITest(_APIBase):

    def test_versions(self):
        status, body = self.call('GET', '/', token=None)
        self.assertEqual(200, status)
        self.assertEqual(['v1'], [v['id'] for v in body['versions']])
        self.assertEqual('v1', self.call('GET', '/v1')[1]['version']['id'])
        self.assertEqual(401, self.call('GET', '/v1/prices', None)[0])
        self.assertEqual(404, self.call('GET', '/v2/prices')[0])
        self.assertEqual(405, self.call('DELETE', '/v1/prices')[0])

    def test_prices_and_history(self):
        status, body = self.call('GET', '/v1/prices', 'u:pA')
        self.assertEqual(200, status)
        self.assertEqual(engine.iso(T0), body['period_start'])
        by_r = {p['resource']: D(p['price']) for p in body['prices']}
        # vCPU bids 0.5 and 1 on 3 vCPU: srv-b reaches its 2 at 1 / 2
        self.assertEqual({'vcpus': D('0.5'), 'memory_mb': D('0.00025')},
                         by_r)
        status, body = self.call(
            'GET', '/v1/prices/history?start=%s&end=%d'
            % (engine.iso(T0), T0 + 1), 'u:pA')
        self.assertEqual((200, 2), (status, len(body['history'])))
        for query, message in (
                ('start=yesterday', 'start: not an ISO 8601 time'),
                ('start=%d&end=%d' % (T0 + 5, T0), 'is after end'),
                ('resource=gpus', "'gpus' is not one of"),
                ('colour=red', 'unknown query parameters: colour')):
            status, body = self.call('GET', '/v1/prices/history?' + query,
                                     'u:pA')
            self.assertEqual(400, status, query)
            self.assertIn(message, body['errors'][0]['detail'])

    def test_bid_authorization(self):
        # owner
        status, body = self.call('GET', '/v1/servers/srv-a/bid', 'u:pA')
        self.assertEqual((200, '1', 'metadata'), (
            status, body['bid']['bid'], body['bid']['source']))
        # its position in the newest period, by the engine's rule
        market = body['bid']['market']
        self.assertEqual((True, D(1), {'vcpus': 2, 'memory_mb': 4000}),
                         (market['out_of_bid'], D(market['charge_per_hour']),
                          market['minimum']))
        self.assertEqual({'vcpus': '1', 'memory_mb': '2000'},
                         market['share'])
        # another project: as if the server did not exist
        for method, body_ in (('GET', None), ('PUT', {'bid': '5'})):
            status, body = self.call(method, '/v1/servers/srv-a/bid',
                                     'u:pB', body_)
            self.assertEqual(404, status)
            self.assertEqual('server srv-a not found',
                             body['errors'][0]['detail'])
        self.assertEqual('1', self.cloud.by_uuid['srv-a'].metadata[
            'opie:bid'])
        # owner sets
        status, body = self.call('PUT', '/v1/servers/srv-a/bid', 'u:pA',
                                 {'bid': '2.5'})
        self.assertEqual((200, '2.5'), (status, body['bid']['bid']))
        self.assertEqual('2.5', self.cloud.by_uuid['srv-a'].metadata[
            'opie:bid'])
        self.assertEqual(D('2.5'), self.store.get_bid('srv-a')['bid'])
        # admin sees and sets anybody's
        status, body = self.call('PUT', '/v1/servers/srv-b/bid',
                                 body={'bid': 3})
        self.assertEqual((200, '3', 'pB'), (status, body['bid']['bid'],
                                            body['bid']['project_id']))
        self.assertEqual(404, self.call('GET', '/v1/servers/nope/bid')[0])

    def test_bad_bids_change_nothing(self):
        for bad, message in (
                ({'bid': -1}, 'must not be negative'),
                ({'bid': 'NaN'}, 'not a number'),
                ({'bid': 'cheap'}, 'not a number'),
                ({'bid': True}, 'bid: True is not of type'),
                ({'bid': None}, 'bid: None is not of type'),
                ({'bid': '10.01'}, 'above the largest accepted bid 10'),
                ({'price': 1}, "'bid' is a required property"),
                ({'bid': 1, 'x': 2}, 'unknown fields: x'),
                ([1], 'must be a JSON object'),
                (b'{bid', 'not valid JSON')):
            status, body = self.call('PUT', '/v1/servers/srv-a/bid', 'u:pA',
                                     bad)
            self.assertEqual(400, status, bad)
            self.assertIn(message, body['errors'][0]['detail'])
        status, body = self.call('PUT', '/v1/servers/plain-a/bid', 'u:pA',
                                 {'bid': 1})
        self.assertEqual(400, status)
        self.assertIn('not preemptible', body['errors'][0]['detail'])
        self.assertEqual('1', self.cloud.by_uuid['srv-a'].metadata[
            'opie:bid'])
        self.assertIsNone(self.store.get_bid('plain-a'))

    def test_accounts_and_ledgers_are_private(self):
        status, body = self.call('GET', '/v1/account', 'u:pA')
        self.assertEqual((200, 'pA'), (status, body['account']['project_id']))
        # srv-a's share (1 of 2 vCPU) costs its bid, 1
        self.assertEqual(D(2), D(body['account']['balance']))
        status, body = self.call('GET', '/v1/account/ledger', 'u:pA')
        self.assertEqual({'pA'}, {e['project_id'] for e in body['ledger']})
        self.assertEqual(['refill', 'charge'],
                         [e['kind'] for e in body['ledger']])
        for path in ('/v1/account?project_id=pB',
                     '/v1/account/ledger?project_id=pB'):
            status, body = self.call('GET', path, 'u:pA')
            self.assertEqual(403, status)
            status, body = self.call('GET', path)
            self.assertEqual(200, status)
        status, body = self.call('GET', '/v1/account/ledger?limit=0', 'u:pA')
        self.assertEqual(400, status)
        self.assertIn('limit', body['errors'][0]['detail'])
        self.assertEqual(404, self.call('GET', '/v1/account', 'u:pC')[0])

    def test_admin_only_credit_and_reserve_price(self):
        status, body = self.call('POST', '/v1/accounts/pB/credit', 'u:pB',
                                 {'amount': '5'})
        self.assertEqual(403, status)
        status, body = self.call('POST', '/v1/accounts/pB/credit',
                                 body={'amount': '5', 'note': 'grant'})
        self.assertEqual((201, 'credit', '5.000000'), (
            status, body['entry']['kind'], body['entry']['amount']))
        status, body = self.call('POST', '/v1/accounts/pNew/credit',
                                 body={'amount': '1'})
        self.assertEqual(201, status)
        for bad, message in (({'amount': '-5'}, 'amount: must be'),
                             ({'amount': 0}, 'amount: must be > 0'),
                             ({'amount': 'lots'}, 'not a number'),
                             ({}, "'amount' is a required property")):
            status, body = self.call('POST', '/v1/accounts/pB/credit',
                                     body=bad)
            self.assertEqual(400, status, bad)
            self.assertIn(message, body['errors'][0]['detail'])
        # 3 - 2 (srv-b pays 0.5 * 2 + 0.00025 * 4000) + 5
        self.assertEqual(D(6), self.store.get_account('pB').balance)

        new = {'reserve_price': {'vcpus': '0.5'}}
        self.assertEqual(403, self.call('PUT', '/v1/reserve-price', 'u:pA',
                                        new)[0])
        status, body = self.call('PUT', '/v1/reserve-price', body=new)
        self.assertEqual((200, {'*': {'vcpus': '0.5'}}), (
            status, body['reserve_price']))
        for bad, message in (
                ({'reserve_price': {'gpus': 1}}, "'gpus' is not one of"),
                ({'reserve_price': {'vcpus': -1}}, 'must be a finite'),
                ({'reserve_price': {}}, 'should be non-empty'),
                ({'reserve_price': {'vcpus': 1}, 'pool': ''}, 'pool:')):
            status, body = self.call('PUT', '/v1/reserve-price', body=bad)
            self.assertEqual(400, status, bad)
            self.assertIn(message, body['errors'][0]['detail'])
        # srv-a gone, the pool is no longer contended: the next period is
        # priced at the reserve price
        del self.cloud.by_uuid['srv-a']
        report = engine.MarketEngine(self.store, self.cloud,
                                     self.settings).tick(T0 + HOUR)
        self.assertEqual(D('0.5'), report.prices['default']['vcpus'])
        self.assertEqual(D(0), report.prices['default']['memory_mb'])


# -- the command line --------------------------------------------------------

class CommandTest(testtools.TestCase):

    def test_db_sync_and_version(self):
        state = self.useFixture(fixtures.TempDir()).path
        conf = os.path.join(state, 'market.conf')
        with open(conf, 'w') as f:
            f.write('[opie_market]\nstate_dir = %s\n' % state)
        out = self.useFixture(fixtures.StringStream('stdout')).stream
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', out))
        self.assertEqual(0, market_service.main(
            ['--config-file', conf, 'db', 'version']))
        self.assertEqual(0, market_service.main(
            ['--config-file', conf, 'db', 'sync']))
        out.seek(0)
        # (oslo.log may log to stdout too)
        self.assertEqual(['none', '0003'], [
            line for line in out.read().splitlines() if ' ' not in line])
        self.assertTrue(os.path.exists(os.path.join(state, 'market.sqlite')))

    def test_bad_configuration_exits_2(self):
        state = self.useFixture(fixtures.TempDir()).path
        conf = os.path.join(state, 'market.conf')
        with open(conf, 'w') as f:
            f.write('[opie_market]\nstate_dir = %s\nbid_cap = -3\n' % state)
        err = io.StringIO()
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', err))
        self.assertEqual(2, market_service.main(
            ['--config-file', conf, 'tick']))
        self.assertIn('bid_cap: must be a finite number >= 0',
                      err.getvalue())


# -- the openstackclient plugin ----------------------------------------------

class _WebobSession:
    """A keystoneauth-like session that calls a WSGI app in-process."""

    def __init__(self, app, token):
        self.app = app
        self.token = token

    def request(self, url, method, json=None, params=None, headers=None,
                raise_exc=True, timeout=None):
        from urllib import parse
        path = parse.urlsplit(url).path
        if params:
            path += '?' + parse.urlencode(params)
        req = webob.Request.blank(path, method=method)
        req.headers.update(headers or {})
        req.headers['X-Auth-Token'] = self.token
        if json is not None:
            req.json_body = json
        resp = req.get_response(self.app)
        body = resp.json
        return type('Response', (), {'status_code': resp.status_int,
                                     'text': resp.text,
                                     'headers': dict(resp.headers),
                                     'json': lambda self: body})()


class OSCTest(_APIBase):

    def run_command(self, cls, argv, token='u:pA'):
        import argparse
        from unittest import mock

        from opie_sched.services.market import osc
        app = mock.Mock()
        app.client_manager.spot = market_client.MarketClient(
            _WebobSession(self.app, token), 'http://market/v1',
            api_version=osc.api_version(None))
        app.client_manager.sdk_connection.compute.find_server.side_effect = (
            lambda name, ignore_missing: mock.Mock(id=name))
        cmd = cls(app, argparse.Namespace())
        parsed = cmd.get_parser('openstack').parse_args(argv)
        return cmd.take_action(parsed)

    def test_commands(self):
        from osc_lib import exceptions as osc_exc

        from opie_sched.services.market import osc
        columns, rows = self.run_command(osc.PriceList, [])
        self.assertEqual(('Pool', 'Resource', 'Price', 'Unit',
                          'Period start'), columns)
        self.assertEqual(['vcpus', 'memory_mb'], [r[1] for r in rows])
        columns, rows = self.run_command(
            osc.PriceHistory, ['--start', str(T0), '--resource', 'vcpus'])
        self.assertEqual([('default', 'vcpus')], [r[2:4] for r in rows])
        columns, row = self.run_command(osc.BidSet, ['srv-a', '0.75'])
        self.assertEqual('0.75', dict(zip(columns, row))['bid'])
        error = self.assertRaises(osc_exc.CommandError, self.run_command,
                                  osc.BidSet, ['srv-a', '-2'])
        self.assertIn('HTTP 400: bid: must not be negative', str(error))
        error = self.assertRaises(osc_exc.CommandError, self.run_command,
                                  osc.BidShow, ['srv-b'])
        self.assertIn('HTTP 404: server srv-b not found', str(error))
        columns, row = self.run_command(osc.AccountShow, [])
        self.assertEqual('pA', dict(zip(columns, row))['project_id'])
        self.assertRaises(osc_exc.CommandError, self.run_command,
                          osc.AccountShow, ['--project', 'pB'])
        columns, rows = self.run_command(osc.ShareList, [],
                                         token='admin:admin')
        self.assertEqual({'srv-a', 'srv-b'}, {r[0] for r in rows})
        error = self.assertRaises(osc_exc.CommandError, self.run_command,
                                  osc.ShareList, [])
        self.assertIn('HTTP 403', str(error))


# -- the service loop and oslo.messaging -------------------------------------

class ServiceTest(testtools.TestCase):

    def test_loop_survives_a_failing_tick_and_stops(self):
        from opie_sched.services.market import service

        ticks = []
        done = threading.Event()

        class FlakyEngine:
            leadership = None

            def tick(self):
                ticks.append(1)
                if len(ticks) == 1:
                    raise RuntimeError('boom')
                done.set()
                return engine.PeriodReport(period_start=0)

        svc = service.MarketService(FlakyEngine(), interval=0.01)
        with fixtures.FakeLogger() as log:
            svc.start()
            self.assertTrue(done.wait(10))
            svc.stop()
        self.assertGreaterEqual(len(ticks), 2)
        self.assertIn('market tick failed', log.output)

    def test_stop_finishes_the_tick_then_the_listener_and_leadership(self):
        from opie_sched.services.market import service

        events = []
        inside, release = threading.Event(), threading.Event()

        class Leadership:
            def stop(self):
                events.append('leadership stopped')

        class SlowEngine:
            leadership = Leadership()

            def tick(self):
                events.append('tick begins')
                inside.set()
                release.wait(120)
                events.append('tick ends')
                return engine.PeriodReport(period_start=0)

        class Listener:
            def start(self):
                events.append('listener started')

            def stop(self):
                events.append('listener stopped')

            def wait(self):
                pass

        svc = service.MarketService(SlowEngine(), interval=0.0,
                                    listener=Listener())
        svc.start()
        self.assertTrue(inside.wait(120))
        stopper = threading.Thread(target=svc.stop)
        stopper.start()
        svc.wait_for_stop_request()  # from here on, no tick starts
        release.set()
        stopper.join(120)
        self.assertFalse(stopper.is_alive())
        self.assertEqual(['listener started', 'tick begins', 'tick ends',
                          'listener stopped', 'leadership stopped'], events)

    def test_notifications_in_and_out_over_oslo_messaging(self):
        import oslo_messaging

        from opie_sched.services.market import listener
        from opie_sched.services.market import notifications
        conf = cfg.ConfigOpts()
        opts.register_opts(conf)
        conf([])
        transport = oslo_messaging.get_notification_transport(
            conf, url='fake:/')
        conf.set_override('transport_url', 'fake:/',
                          'oslo_messaging_notifications')
        conf.set_override('driver', ['messaging'],
                          'oslo_messaging_notifications')
        conf.set_override('listen_notifications', True, 'opie_market')
        # out: the market's notifier is enabled by the configured driver
        notifier = notifications.make_notifier(conf)
        self.assertIsNotNone(notifier)
        # in: Nova's versioned notifications feed the demand tracker
        tracker = engine.DemandTracker()
        nova_listener = listener.make_listener(conf, tracker)
        nova_listener.start()
        self.addCleanup(nova_listener.wait)
        self.addCleanup(nova_listener.stop)
        nova = oslo_messaging.Notifier(transport, 'nova-compute:h1',
                                       driver='messaging',
                                       topics=['versioned_notifications'])
        nova.info({}, 'instance.create.end', {'nova_object.data': {
            'uuid': 'n1', 'tenant_id': 'pA', 'state': 'active',
            'flavor': {'nova_object.data': {'vcpus': 1,
                                            'memory_mb': 2000}}}})
        for _ in range(200):
            if tracker.servers():
                break
            time.sleep(0.02)
        self.assertEqual(['n1'], [s.uuid for s in tracker.servers()])
        # no driver: no notifier
        conf.set_override('driver', [], 'oslo_messaging_notifications')
        self.assertIsNone(notifications.make_notifier(conf))


class KeystoneAuthTest(_APIBase):
    """The API behind the real keystonemiddleware ``auth_token`` (what
    ``[opie_market] api_auth_strategy = keystone`` and the paste pipeline
    ``main`` use); keystonemiddleware's own fixture validates the tokens in
    place of Keystone.
    """

    def setUp(self):
        super().setUp()
        from keystonemiddleware import auth_token
        from keystonemiddleware import fixture as ksm_fixture
        self.tokens = self.useFixture(ksm_fixture.AuthTokenFixture())
        conf = cfg.ConfigOpts()
        opts.register_opts(conf)
        conf([])
        self.app = auth_token.AuthProtocol(
            api_app.MarketAPI(self.store, self.cloud, self.settings,
                              policy.enforcer(conf), clock=lambda: T0 + 0.5),
            {'oslo_config_config': conf, 'delay_auth_decision': False,
             'www_authenticate_uri': 'http://keystone.example/identity'})

    def token(self, project, roles):
        token_id = 'token-%s-%s' % (project, '-'.join(roles))
        self.tokens.add_token_data(
            token_id=token_id, user_id='user-' + project,
            project_id=project, role_list=roles)
        return token_id

    def test_token_identifies_the_project(self):
        member_a = self.token('pA', ['member', 'reader'])
        status, body = self.call('GET', '/v1/servers/srv-a/bid', member_a)
        self.assertEqual((200, '1'), (status, body['bid']['bid']))
        # pA's token cannot see pB's server, whatever headers it sends.
        self.assertEqual(404, self.call('GET', '/v1/servers/srv-b/bid',
                                        member_a)[0])
        self.assertEqual(200, self.call('GET', '/v1/account', member_a)[0])

    def test_admin_only_and_invalid_tokens(self):
        member_a = self.token('pA', ['member', 'reader'])
        admin = self.token('admin-project', ['admin', 'member', 'reader'])
        grant = {'amount': '5', 'note': 'test'}
        self.assertEqual(403, self.call('POST', '/v1/accounts/pA/credit',
                                        member_a, grant)[0])
        self.assertEqual(201, self.call('POST', '/v1/accounts/pA/credit',
                                        admin, grant)[0])
        req = webob.Request.blank('/v1/prices')
        req.headers['X-Auth-Token'] = 'not-a-token'
        self.assertEqual(401, req.get_response(self.app).status_int)
        self.assertEqual(401, webob.Request.blank('/v1/prices').get_response(
            self.app).status_int)


class SharesAPITest(_APIBase):
    """GET /v1/shares: who is under-served (Merkat §3.1), admin only."""

    def test_shares_and_errors(self):
        # h1 now holds 2 + 2 + 8 = 12 vCPU of requests on 8 vCPU.
        self.cloud.add('srv-c', 'pC', 1, host='h1', vcpus=8, ram=8000)
        self.assertEqual(403, self.call('GET', '/v1/shares', 'u:pA')[0])
        status, body = self.call('GET', '/v1/shares')
        self.assertEqual(200, status)
        rows = {r['server_id']: r for r in body['shares']}
        self.assertEqual({'srv-a', 'srv-b', 'srv-c'}, set(rows))
        # Rows come most under-served first.
        errors = [D(r['error']) for r in body['shares']]
        self.assertEqual(sorted(errors), errors)
        on_h1 = sum(D(r['host_shares']['vcpus']) for r in rows.values()
                    if r['host'] == 'h1')
        self.assertLessEqual(on_h1, 2)
        # the engine's rule on the pool: the big low bidder is out of bid
        self.assertEqual((True, {'vcpus': 8, 'memory_mb': 8000}),
                         (rows['srv-c']['out_of_bid'],
                          rows['srv-c']['minimum']))
        for row in rows.values():
            self.assertLessEqual(D(row['charge_per_hour']),
                                 D({'srv-a': 1, 'srv-b': 2,
                                    'srv-c': 1}[row['server_id']]))
        for row in rows.values():
            for resource, err in row['errors'].items():
                host = D(row['host_shares'][resource])
                cluster = D(row['cluster'][resource])
                self.assertAlmostEqual(float((host - cluster) / host),
                                       float(D(err)), places=9)
        # The big low bidder cannot get its pool-wide share on its host.
        self.assertLess(D(rows['srv-c']['error']), 0)
        self.assertEqual('srv-c', body['shares'][0]['server_id'])
