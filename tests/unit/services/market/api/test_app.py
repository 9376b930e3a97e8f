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
"""Tests of the market's REST API (opie_sched.services.market.api.app)."""

import configparser
import dataclasses
import importlib
import os
import tempfile
from unittest import mock
import uuid as uuidlib

from oslo_config import cfg
import webob

from opie_sched.preemption import victim_state
from opie_sched.services.market.api import app as api_app
from opie_sched.services.market.api import policy
from opie_sched.services.market import cloud as market_cloud
from opie_sched.services.market.db import models
from opie_sched.services.market import enforcement
from opie_sched.services.market import engine
from opie_sched.services.market import events
from opie_sched.services.market import opts
from opie_sched.services.market import osc
from opie_sched.services.market import survival
import tests
from tests.unit.services.market import helpers as base
from tests.unit.services.market import helpers as api_base
from tests.unit.services.market.helpers import _APIBase
from tests.unit.services.market.helpers import _Base
from tests.unit.services.market.helpers import ADMIN
from tests.unit.services.market.helpers import D
from tests.unit.services.market.helpers import HOUR
from tests.unit.services.market.helpers import LATEST
from tests.unit.services.market.helpers import MEMBER
from tests.unit.services.market.helpers import T0
from tests.unit.services.market.helpers import V
from tests.unit.services.market import planning_helpers
from tests.unit.services.market.planning_helpers import preempt_payload
from tests.unit.services.market import test_osc as osc_tests


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


class MicroversionTest(_Base):

    def test_versions_document(self):
        status, body = self.call('GET', '/', None)
        (v1,) = body['versions']
        self.assertEqual(('v1', '1.0', '1.4'), (v1['id'], v1['min_version'],
                                                v1['version']))
        self.assertEqual('spot-market 1.0', self.last.headers[V])
        self.assertIn(V, self.last.headers['Vary'])

    def test_negotiation(self):
        for asked, status, served in (
                (None, 200, '1.0'), ('spot-market 1.0', 200, '1.0'),
                ('spot-market 1.1', 200, '1.1'),
                ('spot-market 1.2', 200, '1.2'),
                ('spot-market 1.3', 200, '1.3'),
                ('spot-market 1.4', 200, '1.4'),
                ('spot-market latest', 200, '1.4'),
                ('compute 2.90', 200, '1.0')):
            headers = {V: asked} if asked else {}
            self.assertEqual(status, self.call('GET', '/v1/prices', MEMBER,
                                               headers=headers)[0], asked)
            self.assertEqual('spot-market %s' % served,
                             self.last.headers[V], asked)
        for asked, status in (('spot-market 1.5', 406),
                              ('spot-market 2.0', 406),
                              ('spot-market 0.9', 406),
                              ('spot-market one', 400)):
            code, body = self.call('GET', '/v1/prices', MEMBER,
                                   headers={V: asked})
            self.assertEqual(status, code, asked)
            self.assertEqual(status, body['errors'][0]['status'])

    def test_new_resources_need_1_1(self):
        for method, path, status in (
                ('GET', '/v1/notices', 404),
                ('GET', '/v1/flavor-prices?vcpus=1&memory_mb=1', 404),
                ('DELETE', '/v1/servers/srv-a/bid', 405)):
            self.assertEqual(status, self.call(method, path, MEMBER)[0],
                             path)
            self.assertEqual(200, self.call(method, path, MEMBER,
                                            headers=LATEST)[0], path)

    def test_ledger_ids_and_links_from_1_1(self):
        status, body = self.call('GET', '/v1/account/ledger', MEMBER)
        self.assertNotIn('id', body['ledger'][0])
        self.assertNotIn('ledger_links', body)
        status, body = self.call('GET', '/v1/account/ledger', MEMBER,
                                 headers=LATEST)
        self.assertIn('id', body['ledger'][0])
        self.assertEqual([], body['ledger_links'])
        # 1.0 knows no marker
        self.assertEqual(400, self.call(
            'GET', '/v1/account/ledger?marker=x', MEMBER)[0])


class PaginationTest(_Base):

    def test_ledger_pages_by_marker(self):
        for i in range(5):
            self.api.clock = lambda i=i: base.T0 + 10 + i
            self.call('POST', '/v1/accounts/pA/credit', ADMIN,
                      {'amount': str(i + 1)})
        everything = self.call('GET', '/v1/account/ledger', MEMBER,
                               headers=LATEST)[1]['ledger']
        self.assertEqual(7, len(everything))
        pages, path = [], '/v1/account/ledger?limit=3'
        while path:
            status, body = self.call('GET', path, MEMBER, headers=LATEST)
            self.assertEqual(200, status)
            pages.append([e['id'] for e in body['ledger']])
            links = body['ledger_links']
            path = None
            if links:
                self.assertEqual('next', links[0]['rel'])
                path = links[0]['href'].replace('http://localhost', '')
        self.assertEqual([3, 3, 1], [len(p) for p in pages])
        self.assertEqual([e['id'] for e in everything], sum(pages, []))
        status, body = self.call('GET', '/v1/account/ledger?marker=nope',
                                 MEMBER, headers=LATEST)
        self.assertEqual((400, 'spot-market.marker-not-found'),
                         (status, body['errors'][0]['code']))
        self.assertEqual(400, self.call(
            'GET', '/v1/account/ledger?limit=1001', MEMBER,
            headers=LATEST)[0])

    def test_notices_and_history_pages(self):
        status, body = self.call('GET', '/v1/notices?limit=1&project_id=pA',
                                 ADMIN, headers=LATEST)
        self.assertEqual(['srv-a'], [n['server_id'] for n in
                                     body['notices']])
        self.assertEqual('noticed', body['notices'][0]['state'])
        status, body = self.call('GET', '/v1/prices/history?limit=1',
                                 MEMBER, headers=LATEST)
        first = body['history'][0]['id']
        status, body = self.call(
            'GET', '/v1/prices/history?limit=1&marker=' + first, MEMBER,
            headers=LATEST)
        self.assertEqual(1, len(body['history']))
        self.assertNotEqual(first, body['history'][0]['id'])
        self.assertEqual([], body['history_links'])


class FlavorPriceTest(_Base):

    def test_price_per_zone_now_and_over_the_day(self):
        # second period an hour later, prices unchanged
        engine.MarketEngine(self.store, self.cloud,
                            self.settings).tick(base.T0 + base.HOUR)
        self.api.clock = lambda: base.T0 + base.HOUR + 1
        status, body = self.call(
            'GET', '/v1/flavor-prices?vcpus=2&memory_mb=4000', MEMBER,
            headers=LATEST)
        self.assertEqual(200, status, body)
        doc = body['flavor_prices']
        self.assertEqual((2, 4000, 24), (doc['vcpus'], doc['memory_mb'],
                                         doc['hours']))
        self.assertEqual(['az1', 'az2'], [z['availability_zone']
                                          for z in doc['zones']])
        for zone in doc['zones']:
            # 0.5 per vCPU-hour * 2 + 0.00025 per MB-hour * 4000
            self.assertEqual('default', zone['pool'])
            self.assertEqual(2, zone['periods'])
            self.assertEqual(D(2), D(zone['min_per_hour']))
            self.assertEqual(D(2), D(zone['max_per_hour']))
        status, body = self.call(
            'GET', '/v1/flavor-prices?vcpus=2&memory_mb=4000&hours=0',
            MEMBER, headers=LATEST)
        self.assertEqual(400, status)


class BidUnsetTest(_Base):

    def test_unset_falls_back_to_the_default_bid(self):
        status, body = self.call('DELETE', '/v1/servers/srv-a/bid', MEMBER,
                                 headers=LATEST)
        self.assertEqual(200, status, body)
        self.assertNotIn('opie:bid', self.cloud.by_uuid['srv-a'].metadata)
        self.assertNotEqual('metadata', body['bid']['source'])
        self.assertEqual(400, self.call('DELETE', '/v1/servers/plain-a/bid',
                                        MEMBER, headers=LATEST)[0])

    def test_shares_with_a_server_bidding_nothing(self):
        # srv-a falls back to the default bid 0: its host share is 0 while
        # the pool entitles it to some; its allocation error is -1, not a
        # 500 (pricing.bounded_allocation_error).
        self.assertEqual(200, self.call('DELETE', '/v1/servers/srv-a/bid',
                                        MEMBER, headers=LATEST)[0])
        status, body = self.call('GET', '/v1/shares', ADMIN, headers=LATEST)
        self.assertEqual(200, status, body)


ACK = '/v1/servers/%s/interruption-ack'


def notice_keys(deadline, behavior='delete'):
    return victim_state.notice_metadata(market_cloud.iso(deadline),
                                        behavior, 'preempted by the scheduler')


class AckAPITest(api_base._Base):
    """The fixture's market (srv-a of pA under the market's out-of-bid
    notice given at T0, deadline T0 + 300, behaviour ``delete``; srv-b of
    pB; plain-a of pA normal) plus sched-a of pA on h2, behaviour
    ``shelve``, under the scheduler's notice given at T0 (its
    ``preempt_notice`` instance action and the keys on its metadata).
    Now is T0 + 0.5.
    """

    def setUp(self):
        super().setUp()
        self.cloud.add('sched-a', 'pA', 1, host='h2',
                       metadata=notice_keys(T0 + 120, 'shelve'))
        info = self.cloud.by_uuid['sched-a']
        self.cloud._replace('sched-a', flavor_name='spot.small',
                            extra_specs=dict(info.extra_specs, **{
                                enforcement.BEHAVIOR_SPEC: 'shelve'}))
        self.cloud.actions['sched-a'] = [
            ('create', T0 - 600), (victim_state.NOTICE_ACTION, T0)]

    def ack(self, uuid, token=api_base.MEMBER, body=None, version=None):
        return self.call('POST', ACK % uuid, token, body,
                         {api_base.V: version or 'spot-market 1.4'})

    def events(self, uuid):
        status, body = self.call('GET', '/v1/events?server_id=%s' % uuid,
                                 api_base.MEMBER, headers=api_base.LATEST)
        self.assertEqual(200, status)
        return [(e['kind'], e['cause'], e['action'])
                for e in body['events']]

    def notice_state(self, uuid):
        return [(n['state'], n['action']) for n in self.store.notices()
                if n['server_uuid'] == uuid]

    def ledger(self):
        return [(e.key.kind, e.key.server, e.amount)
                for e in self.store.entries('pA')]

    def assertRefused(self, status, body, code, error):
        self.assertEqual(status, body['errors'][0]['status'])
        self.assertEqual((code, error), (status, body['errors'][0]['code']))

    def test_a_market_notice_acknowledged_runs_its_behaviour_now(self):
        ledger = self.ledger()
        status, body = self.ack('srv-a')
        self.assertEqual(202, status)
        doc = body['interruption_ack']
        self.assertEqual(
            {'server_id': 'srv-a', 'project_id': 'pA', 'notice': 'market',
             'kind': 'out_of_bid', 'noticed_at': base.engine.iso(T0),
             'deadline': base.engine.iso(T0 + 300),
             'acknowledged_at': base.engine.iso(T0), 'action': 'delete'},
            doc)
        # the interruption ran now, marked as at its deadline
        self.assertEqual([('srv-a', 'delete')], self.cloud.terminated)
        self.assertEqual([(models.PREEMPTED, 'delete')],
                         self.notice_state('srv-a'))
        self.assertIn(('ack', 'owner', 'delete'), self.events('srv-a'))
        [life] = [lt for lt in self.store.lifetimes()
                  if lt['server_uuid'] == 'srv-a']
        self.assertEqual(models.END_INTERRUPTED, life['end'])
        # the owner's choice charges nothing
        self.assertEqual(ledger, self.ledger())
        # the enforcement at the deadline does not act a second time
        report = engine.MarketEngine(self.store, self.cloud,
                                     self.settings).tick(T0 + 400)
        self.assertNotIn('srv-a', report.preempted)
        self.assertEqual([('srv-a', 'delete')], [
            t for t in self.cloud.terminated if t[0] == 'srv-a'])

    def test_a_scheduler_notice_acknowledged_sends_the_verb(self):
        status, body = self.ack('sched-a')
        self.assertEqual(202, status)
        doc = body['interruption_ack']
        self.assertEqual(('scheduler', 'scheduler', base.engine.iso(T0),
                          None, 'shelve'),
                         (doc['notice'], doc['kind'], doc['noticed_at'],
                          doc['deadline'], doc['action']))
        self.assertEqual([('sched-a', 'shelve')], self.cloud.terminated)
        # the scheduler marks its own victim; the market writes nothing
        self.assertNotIn(victim_state.PREEMPTED_BY_KEY,
                         self.cloud.by_uuid['sched-a'].metadata)
        self.assertEqual([], self.notice_state('sched-a'))
        self.assertEqual([('ack', 'owner', 'shelve')],
                         self.events('sched-a'))

    def test_forged_or_stale_notice_keys_are_refused(self):
        # keys the owner wrote, no notice action: no notice
        self.cloud.add('forged-a', 'pA', 1, host='h2',
                       metadata=notice_keys(T0 + 60))
        # a notice that ended with its interruption (preempt after it)
        self.cloud.add('ended-a', 'pA', 1, host='h2',
                       metadata=notice_keys(T0 + 60))
        self.cloud.actions['ended-a'] = [
            (victim_state.NOTICE_ACTION, T0 - 90),
            (victim_state.PREEMPT_ACTION, T0 - 30)]
        # a notice older than scheduler_notice_window (3600 s): lapsed
        self.cloud.add('old-a', 'pA', 1, host='h2',
                       metadata=notice_keys(T0 + 60))
        self.cloud.actions['old-a'] = [
            (victim_state.NOTICE_ACTION, T0 - 3601)]
        # a real notice the scheduler withdrew (its keys removed)
        self.cloud.delete_metadata('sched-a', [victim_state.NOTICE_KEY,
                                               victim_state.DEADLINE_KEY])
        # srv-a's market notice, already taken by the enforcement (its
        # keys are still on the server)
        self.store.set_notice_state('srv-a', models.PREEMPTED, 'delete')
        for uuid in ('forged-a', 'ended-a', 'old-a', 'sched-a', 'srv-a',
                     'plain-a'):
            status, body = self.ack(uuid)
            self.assertRefused(status, body, 409, 'spot-market.no-notice')
            self.assertNotIn('ack', [e[0] for e in self.events(uuid)],
                             uuid)
        self.assertEqual([], self.cloud.terminated)

    def test_only_the_owner_or_an_admin(self):
        # another project: 404, as for a server that does not exist
        for uuid in ('srv-a', 'sched-a', 'no-such-server'):
            status, body = self.ack(uuid, api_base.OTHER)
            self.assertRefused(status, body, 404, 'spot-market.not-found')
        status, body = self.ack('srv-b', api_base.MEMBER)  # pB's server
        self.assertEqual(404, status)
        # a reader of the project may not act
        status, body = self.ack('srv-a', api_base.READER)
        self.assertEqual(403, status)
        self.assertIn('opie_market:interruption_ack:create',
                      body['errors'][0]['detail'])
        self.assertEqual([], self.cloud.terminated)
        # an admin may, on any project's server
        self.assertEqual(202, self.ack('sched-a', api_base.ADMIN)[0])

    def test_errors(self):
        status, body = self.ack('srv-a', body={'now': True})
        self.assertRefused(status, body, 400, 'spot-market.bad-request')
        self.assertIn('now', body['errors'][0]['detail'])
        # older microversions do not know the resource
        self.assertEqual(404, self.ack('srv-a', version='spot-market 1.3')[0])
        # its interruption is under way, or it is not running
        self.cloud._replace('sched-a', task_state='shelving')
        status, body = self.ack('sched-a')
        self.assertRefused(status, body, 409,
                           'spot-market.server-not-active')
        self.cloud._replace('sched-a', task_state=None, status='SHUTOFF')
        self.assertEqual(409, self.ack('sched-a')[0])
        self.assertEqual([], self.cloud.terminated)
        # an empty body is fine
        self.assertEqual(202, self.ack('srv-a', body={})[0])

    def test_a_drill_can_be_acknowledged(self):
        status, _ = self.call('POST', '/v1/servers/sched-a/'
                              'interruption-drill', api_base.MEMBER,
                              {'notice_seconds': 60}, api_base.LATEST)
        # the scheduler's notice is there too; the market's drill notice
        # comes first
        self.assertEqual(202, status)
        status, body = self.ack('sched-a')
        self.assertEqual(202, status)
        doc = body['interruption_ack']
        self.assertEqual(('market', 'drill', 'shelve'),
                         (doc['notice'], doc['kind'], doc['action']))
        self.assertEqual([('sched-a', 'shelve')], self.cloud.terminated)
        self.assertEqual('opie-market-drill', self.cloud.by_uuid[
            'sched-a'].metadata[victim_state.PREEMPTED_BY_KEY])

    def test_osc_command(self):
        run = osc_tests.OSCCommandsTest.run_command
        columns, row = run(self, osc.InterruptionAck, ['sched-a'])
        doc = dict(zip(columns, row))
        self.assertEqual(('sched-a', 'scheduler', 'shelve'),
                         (doc['server_id'], doc['notice'], doc['action']))
        error = self.assertRaises(osc.exceptions.CommandError, run, self,
                                  osc.InterruptionAck, ['sched-a'])
        self.assertIn('HTTP 409', str(error))
        error = self.assertRaises(osc.exceptions.CommandError, run, self,
                                  osc.InterruptionAck, ['srv-a'],
                                  version='1.3')
        self.assertIn('needs spot-market API microversion 1.4', str(error))

    def test_the_command_is_registered(self):
        cfg = configparser.ConfigParser()
        cfg.read(os.path.join(tests.ROOT,
                              'setup.cfg'))
        entries = dict(
            line.split(' = ') for line in
            cfg['entry_points']['openstack.spot.v1'].strip().splitlines())
        module, _, name = entries['spot_interruption_ack'].partition(':')
        self.assertIs(osc.InterruptionAck,
                      getattr(importlib.import_module(module), name))


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
        run = osc_tests.OSCCommandsTest.run_command
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


class PlanningAPITest(api_base._Base):
    """The 1.2 routes on the market app over the fake cloud (srv-a of pA
    bids 1, srv-b of pB bids 2; h1 is in az1, h2 in az2).
    """

    def get(self, path, token=api_base.MEMBER):
        return self.call('GET', path, token, headers=api_base.LATEST)

    def test_routes_need_1_2(self):
        for path in ('/v1/placement-score?flavor=spot.small',
                     '/v1/interruption-history?flavor=spot.small',
                     '/v1/events'):
            self.assertEqual(404, self.call(
                'GET', path, api_base.MEMBER,
                headers={api_base.V: 'spot-market 1.1'})[0], path)
            self.assertEqual(200, self.get(path)[0], path)

    def test_placement_score_one_read(self):
        status, body = self.get('/v1/placement-score?flavor=spot.small'
                                '&count=5')
        self.assertEqual(200, status, body)
        doc = body['placement_score']
        self.assertEqual((True, '3', 'flavor'),
                         (doc['preemptible'], doc['bid'], doc['bid_source']))
        self.assertEqual([{'resources': 'CUSTOM_PREEMPTIBLE_VCPU:2,'
                                        'CUSTOM_PREEMPTIBLE_MEMORY_MB:4000,'
                                        'CUSTOM_PREEMPTIBLE_DISK_GB:40'}],
                         self.provider_reads)
        # h1 (az1): 8 vCPU, srv-a (bid 1) and srv-b (bid 2) hold 4: 2
        # fit now, 4 with both gone; h2 (az2): 4 fit now; 5 asked
        self.assertEqual([('az1', 'no_room', 2, 4), ('az2', 'no_room', 4, 4)],
                         [(z['availability_zone'], z['status'],
                           z['fit_now'], z['fit_preempting'])
                          for z in doc['zones']])
        status, body = self.get('/v1/placement-score?flavor=spot.small'
                                '&count=3&zone=az1')
        (zone,) = body['placement_score']['zones']
        self.assertEqual(('preempting', D(1), 3),
                         (zone['status'], D(zone['at_bid']),
                          zone['fit_preempting']))
        status, body = self.get('/v1/placement-score?flavor=spot.small'
                                '&count=4&zone=az2&bid=0.01')
        (zone,) = body['placement_score']['zones']
        # 0.5 per vCPU-hour * 2 + 0.00025 per MB-hour * 4000 = 2 per hour
        self.assertEqual(('out_of_bid', D(2)),
                         (zone['status'], D(zone['price_per_hour'])))
        status, body = self.get('/v1/placement-score?flavor=m1.small')
        self.assertEqual({'fits_now'}, {z['status'] for z in
                                        body['placement_score']['zones']})
        for query, code in (('flavor=nope', 404), ('', 400),
                            ('flavor=spot.small&count=0', 400),
                            ('flavor=spot.small&bid=lots', 400)):
            self.assertEqual(code, self.get('/v1/placement-score?'
                                            + query)[0], query)

    def _scheduler_preempts(self, project, when, flavor='spot.small'):
        victim = str(uuidlib.uuid4())
        self.store.start_lifetime(victim, project,
                                  when - 2 * planning_helpers.HOUR, flavor,
                                  2, 4000, 'h1')
        events.EventRecorder(self.store).apply(
            events.EVENT_SCHEDULER_PREEMPT,
            preempt_payload(str(uuidlib.uuid4()), [(victim, project)]),
            when)
        return victim

    def test_interruption_history(self):
        now = base.T0
        self.api.clock = lambda: now
        self._scheduler_preempts('pA', now - planning_helpers.HOUR)
        self._scheduler_preempts('pB', now - planning_helpers.HOUR / 2)
        status, body = self.get('/v1/interruption-history?flavor=spot.small'
                                '&period_seconds=3600&since=%d'
                                % (now - 3 * planning_helpers.HOUR))
        self.assertEqual(200, status, body)
        doc = body['interruption_history']
        self.assertEqual([2, 2, 2], [r['servers'] for r in doc['rates']])
        self.assertEqual([0, 0, 2], [r['interruptions']
                                     for r in doc['rates']])
        self.assertEqual((2, 2), (doc['survival']['servers'],
                                  doc['survival']['interruptions']))
        self.assertEqual([0.0], [p['survival'] for p in
                                 doc['survival']['points']][-1:])
        # other zone: nothing ran there
        status, body = self.get('/v1/interruption-history?flavor=spot.small'
                                '&zone=az2&period_seconds=3600&since=%d'
                                % (now - 3 * planning_helpers.HOUR))
        self.assertEqual(0, body['interruption_history']['survival'][
            'servers'])
        self.assertEqual(400, self.get(
            '/v1/interruption-history?flavor=spot.small&period_seconds=1'
            '&since=%d' % (now - 30 * 86400))[0])
        # a market API installed without scipy says what it lacks
        with mock.patch.object(survival, 'survival_curve',
                               side_effect=ImportError('no scipy')):
            status, body = self.get('/v1/interruption-history?'
                                    'flavor=spot.small')
        self.assertEqual(503, status)
        self.assertIn('needs scipy', body['errors'][0]['detail'])

    def test_the_owner_sees_the_victims_whole_story(self):
        victim = self._scheduler_preempts('pA', base.T0 - 60)
        # the owner deletes the shelved victim later: the story stays
        events.EventRecorder(self.store).apply(events.EVENT_DELETE_END, {
            'nova_object.data': {
                'uuid': victim, 'tenant_id': 'pA', 'flavor': {
                    'nova_object.data': {
                        'name': 'spot.small', 'extra_specs':
                            base.flavors.preemptible_extra_specs(2, 4000,
                                                                 40)}}}},
            base.T0 - 30)
        status, body = self.get('/v1/events?server_id=%s' % victim)
        self.assertEqual(200, status, body)
        self.assertEqual([('interruption', 'scheduler', 'delete'),
                          ('deleted', 'owner', None)],
                         [(e['kind'], e['cause'], e['action'])
                          for e in body['events']])
        self.assertNotIn('host', body['events'][0])
        # another project: nothing of it, asked either way
        status, body = self.get('/v1/events?server_id=%s' % victim,
                                api_base.OTHER)
        self.assertEqual((200, []), (status, body['events']))
        self.assertEqual(403, self.get('/v1/events?project_id=pA',
                                       api_base.OTHER)[0])

    def test_market_notices_and_interruptions_are_events_in_order(self):
        # the fixture's tick gave srv-a (pA, bid 1) notice at T0; at its
        # deadline the engine preempts it
        eng = engine.MarketEngine(self.store, self.cloud, self.settings)
        report = eng.tick(base.T0 + self.settings.notice_period + 1)
        # srv-a out of bid, srv-b (pB) out of credit
        self.assertEqual(['srv-a', 'srv-b'], report.preempted)
        status, body = self.get('/v1/events')
        self.assertEqual([('srv-a', 'notice', 'market'),
                          ('srv-a', 'interruption', 'market')],
                         [(e['server_id'], e['kind'], e['cause'])
                          for e in body['events']])
        self.assertEqual('delete', body['events'][1]['action'])
        lives = {lt['server_uuid']: lt['end']
                 for lt in self.store.lifetimes()}
        self.assertEqual('interrupted', lives['srv-a'])
        self.assertEqual('interrupted', lives['srv-b'])
        self.assertNotIn('plain-a', lives)  # normal servers have no life

    def test_event_pages(self):
        for i in range(5):
            self.store.add_event('srv-a', 'pA', models.EVENT_AT_RISK,
                                 base.T0 + i)
        ids, path = [], '/v1/events?limit=2'
        while path:
            status, body = self.get(path)
            ids.extend(e['id'] for e in body['events'])
            links = body['events_links']
            path = links and links[0]['href'].replace('http://localhost',
                                                      '')
        self.assertEqual(len(ids), len(set(ids)))
        self.assertEqual([e['id'] for e in self.get('/v1/events')[1][
            'events']], ids)
        self.assertEqual(400, self.get('/v1/events?marker=999')[0])

    def test_osc_commands(self):
        run = osc_tests.OSCCommandsTest.run_command
        self._scheduler_preempts('pA', base.T0 - 60)
        columns, rows = run(self, osc.PlacementScore,
                            ['spot.small', '--count', '2'])
        self.assertEqual([('az1', 'fits_now'), ('az2', 'fits_now')],
                         [r[:2] for r in rows])
        with tempfile.TemporaryDirectory() as d:
            png = os.path.join(d, 'h.png')
            columns, rows = run(self, osc.InterruptionHistory,
                                ['spot.small', '--curve', '--plot', png])
            self.assertTrue(os.path.getsize(png) > 0)
        self.assertEqual([0.0], [r[1] for r in rows])
        columns, rows = run(self, osc.EventList, [])
        # the victim at T0 - 60, then the fixture's notice to srv-a at T0
        self.assertEqual(['interruption', 'notice'], [r[3] for r in rows])
        error = self.assertRaises(
            osc.exceptions.CommandError, run, self, osc.EventList, [],
            version='1.1')
        self.assertIn('needs spot-market API microversion 1.2', str(error))
