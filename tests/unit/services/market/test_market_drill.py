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
"""Interruption drills (market microversion 1.3): an owner sends their own
preemptible server through the market's real path (at-risk mark and
notice now, the flavor's behaviour at the deadline by the engine's
enforcement), recorded as a drill, never charged, never counted in the
interruption history; the per-project limit, also under concurrent API
workers on sqlite, PostgreSQL and MySQL.
"""

import dataclasses
import threading

import sqlalchemy as sa
import testtools

from opie_sched.services.market.db import api as db_api
from opie_sched.services.market.db import models
from opie_sched.services.market import enforcement
from opie_sched.services.market import engine
from opie_sched.services.market import osc
from tests.unit.services.market import test_market_api as api_base
from tests.unit.services.market import test_market_service as base

HOUR = base.HOUR
T1 = base.T0 + HOUR  # the second period of the fixture's market
DRILL = '/v1/servers/%s/interruption-drill'


class DrillAPITest(api_base._Base):
    """The fixture's market (srv-a of pA noticed out of bid at T0, srv-b
    of pB, plain-a of pA normal) plus drill-a, drill-b and drill-c of pA
    on h3, bidding 5, flavor spot.small, behaviour ``stop``.
    """

    def setUp(self):
        super().setUp()
        # the drill servers run in a pool of their own with room for
        # them all (h3, aggregate "roomy"): no market notice of theirs
        self.settings = dataclasses.replace(
            self.settings, drill_limit=2, drill_window=HOUR,
            notice_period=300, pools=('roomy',))
        self.api.settings = self.settings
        self.cloud._hosts['h3'] = {'vcpus': 16, 'memory_mb': 32000}
        self.cloud.aggs['roomy'] = ['h3']
        for uuid in ('drill-a', 'drill-b', 'drill-c'):
            self.cloud.add(uuid, 'pA', 5, host='h3')
            info = self.cloud.by_uuid[uuid]
            self.cloud._replace(uuid, flavor_name='spot.small',
                                extra_specs=dict(info.extra_specs, **{
                                    enforcement.BEHAVIOR_SPEC: 'stop'}))
        self.cloud._replace('srv-a', flavor_name='spot.small')
        self.engine = engine.MarketEngine(self.store, self.cloud,
                                          self.settings)
        self.at(T1)
        # the second period: prices, charges, lives; srv-a's market
        # notice (deadline T0 + 300) is enforced, and srv-b's (pB out of
        # credit): real interruptions
        report = self.engine.tick(T1)
        self.assertEqual(['srv-a', 'srv-b'], report.preempted)

    def at(self, now):
        self.api.clock = lambda: now

    def drill(self, uuid, token=api_base.MEMBER, body=None, version=None):
        return self.call('POST', DRILL % uuid, token, body,
                         {api_base.V: version or 'spot-market 1.3'})

    def ledger(self):
        return [(e.key.kind, e.key.server, e.amount)
                for e in self.store.entries('pA')]

    def test_a_drill_is_a_real_interruption(self):
        self.at(T1 + 10)
        ledger = self.ledger()
        status, body = self.drill('drill-a', body={'notice_seconds': 60})
        self.assertEqual(202, status, body)
        doc = body['interruption_drill']
        deadline = base.engine.iso(T1 + 70)
        self.assertEqual(('drill', 'noticed', deadline, 'stop', 60),
                         (doc['kind'], doc['state'], doc['deadline'],
                          doc['action'], doc['notice_seconds']))
        # what the guest reads: the at-risk mark and the notice, the keys
        # of a market notice
        md = self.cloud.by_uuid['drill-a'].metadata
        self.assertEqual(base.engine.iso(T1 + 10),
                         md[enforcement.AT_RISK_KEY])
        self.assertEqual(deadline, md[enforcement.DEADLINE_KEY])
        self.assertTrue(md[enforcement.NOTICE_KEY].startswith(
            'preemption at %s (stop): interruption drill' % deadline))
        status, body = self.call('GET', '/v1/notices?state=noticed',
                                 api_base.MEMBER, headers=api_base.LATEST)
        self.assertEqual([('drill-a', 'drill')],
                         [(n['server_id'], n['kind'])
                          for n in body['notices']])
        # before the deadline: nothing happens
        report = self.engine.tick(T1 + 69)
        self.assertEqual([], report.preempted + report.cancelled)
        report = self.engine.tick(T1 + 71)
        self.assertEqual(['drill-a'], report.preempted)
        self.assertEqual([('srv-a', 'delete'), ('srv-b', 'delete'),
                          ('drill-a', 'stop')], self.cloud.terminated)
        md = self.cloud.by_uuid['drill-a'].metadata
        self.assertEqual(enforcement.PREEMPTED_BY_DRILL,
                         md[enforcement.PREEMPTED_BY_KEY])
        status, body = self.call('GET', '/v1/events?server_id=drill-a',
                                 api_base.MEMBER, headers=api_base.LATEST)
        self.assertEqual([('at_risk', 'drill', None),
                          ('notice', 'drill', None),
                          ('drill', 'drill', 'stop')],
                         [(e['kind'], e['cause'], e['action'])
                          for e in body['events']])
        # never charged: neither the drill nor its interruption posted
        # anything
        self.assertEqual(ledger, self.ledger())
        # the stop's grace period over, the behaviour's next step (the
        # delete) comes as for any interruption
        self.engine.tick(T1 + 70 + self.settings.stop_grace_period + 1)
        self.assertNotIn('drill-a', self.cloud.by_uuid)

    def test_drills_count_in_no_history_and_no_charge(self):
        self.at(T1 + 10)
        self.assertEqual(202, self.drill('drill-a', body={
            'notice_seconds': 0})[0])
        self.assertEqual(['drill-a'], self.engine.tick(T1 + 11).preempted)
        lives = {lt['server_uuid']: lt['end']
                 for lt in self.store.lifetimes()}
        self.assertEqual(('interrupted', None),
                         (lives['srv-a'], lives['drill-a']))
        # the next period: drill-a stopped by its drill is not charged;
        # its siblings still running are
        self.engine.tick(T1 + HOUR)
        charged = {e.key.server for e in self.store.entries('pA')
                   if e.key.kind == 'charge'
                   and e.key.period_start == T1 + HOUR}
        self.assertEqual({'drill-b', 'drill-c'}, charged)
        self.at(T1 + HOUR + 1)
        status, body = self.call(
            'GET', '/v1/interruption-history?flavor=spot.small'
            '&period_seconds=3600&since=%d' % base.T0, api_base.MEMBER,
            headers=api_base.LATEST)
        self.assertEqual(200, status, body)
        doc = body['interruption_history']
        # srv-a's market interruption counts, drill-a's drill does not
        self.assertEqual([0, 1, 0],
                         [r['interruptions'] for r in doc['rates']])
        self.assertEqual(1, doc['survival']['interruptions'])
        # stopped by its drill, drill-a left the market's view: censored
        self.assertEqual(4, doc['survival']['servers'])

    def test_a_new_period_keeps_the_drill(self):
        # a drill across a period start: the settling engine finds
        # drill-a no victim of the market, and must not withdraw its
        # notice as "no longer out of bid"
        self.at(T1 + HOUR - 100)
        self.assertEqual(202, self.drill('drill-a')[0])
        report = self.engine.tick(T1 + HOUR)
        self.assertEqual([], report.cancelled)
        self.assertIn(enforcement.NOTICE_KEY,
                      self.cloud.by_uuid['drill-a'].metadata)
        report = self.engine.tick(T1 + HOUR + 201)
        self.assertEqual(['drill-a'], report.preempted)

    def test_errors(self):
        self.at(T1 + 10)
        for uuid, token, body, version, status, code in (
                ('nope', api_base.MEMBER, None, None, 404, None),
                ('drill-a', api_base.OTHER, None, None, 404, None),
                ('drill-a', api_base.READER, None, None, 403, None),
                ('drill-a', api_base.SERVICE, None, None, 403, None),
                ('plain-a', api_base.MEMBER, None, None, 409,
                 'spot-market.not-preemptible'),
                ('drill-a', api_base.MEMBER, {'notice_seconds': 301}, None,
                 400, None),
                ('drill-a', api_base.MEMBER, {'notice_seconds': -1}, None,
                 400, None),
                ('drill-a', api_base.MEMBER, {'notice': 5}, None, 400,
                 None),
                ('drill-a', api_base.MEMBER, None, 'spot-market 1.2', 404,
                 None)):
            got, answer = self.drill(uuid, token, body, version)
            self.assertEqual(status, got, (uuid, token, body, answer))
            if code:
                self.assertEqual(code, answer['errors'][0]['code'])
        self.cloud._replace('drill-b', status='SHUTOFF')
        status, body = self.drill('drill-b')
        self.assertEqual((409, 'spot-market.server-not-active'),
                         (status, body['errors'][0]['code']))
        self.assertEqual(202, self.drill('drill-a')[0])
        status, body = self.drill('drill-a', api_base.ADMIN)
        self.assertEqual((409, 'spot-market.already-noticed'),
                         (status, body['errors'][0]['code']))
        self.api.settings = dataclasses.replace(self.settings,
                                                drill_limit=0)
        status, body = self.drill('drill-c')
        self.assertEqual(403, status)
        self.assertIn('drill_limit = 0', body['errors'][0]['detail'])
        # nothing refused was recorded
        self.assertEqual(['drill-a'], [
            n['server_uuid'] for n in self.store.notices(state='noticed')])

    def test_rate_limit_per_project(self):
        for i, uuid in enumerate(('drill-a', 'drill-b')):
            self.at(T1 + 10 + i)
            self.assertEqual(202, self.drill(uuid)[0])
        self.at(T1 + 100)
        status, body = self.drill('drill-c')
        self.assertEqual((429, 'spot-market.drill-limit'),
                         (status, body['errors'][0]['code']))
        # the oldest drill (T1 + 10) leaves the window at T1 + 10 + HOUR
        self.assertEqual(str(HOUR - 90), self.last.headers['Retry-After'])
        self.assertIn('retry after %s' % base.engine.iso(T1 + 10 + HOUR),
                      body['errors'][0]['detail'])
        # an admin's drill counts against the server's project too
        self.assertEqual(429, self.drill('drill-c', api_base.ADMIN)[0])
        # another project has its own limit
        self.cloud.add('drill-pb', 'pB', 5, host='h3')
        self.assertEqual(202, self.drill('drill-pb', api_base.OTHER)[0])
        self.at(T1 + 10 + HOUR + 1)
        self.assertEqual(202, self.drill('drill-c')[0])

    def test_osc_command(self):
        run = api_base.OSCCommandsTest.run_command
        self.at(T1 + 10)
        columns, row = run(self, osc.InterruptionSimulate,
                           ['drill-a', '--notice-seconds', '30'])
        doc = dict(zip(columns, row))
        self.assertEqual(('drill-a', 'noticed', 30, 'stop'),
                         (doc['server_id'], doc['state'],
                          doc['notice_seconds'], doc['action']))
        error = self.assertRaises(
            osc.exceptions.CommandError, run, self,
            osc.InterruptionSimulate, ['drill-a'])
        self.assertIn('already under a preemption notice', str(error))
        error = self.assertRaises(
            osc.exceptions.CommandError, run, self,
            osc.InterruptionSimulate, ['drill-b'], version='1.2')
        self.assertIn('needs spot-market API microversion 1.3', str(error))


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
            self, base.PostgreSQLStoreTest.ENV,
            base.PostgreSQLStoreTest.DEFAULT)


class MySQLDrillStoreTest(_ConcurrentDrills, testtools.TestCase):

    def make_url(self):
        return base.server_database_url(self, base.MySQLStoreTest.ENV,
                                        base.MySQLStoreTest.DEFAULT)
