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
"""The market API's conventions over the WSGI app and a real store:
the secure-RBAC persona matrix over every endpoint, JSON-schema
validation with API-SIG errors, microversions, marker pagination, flavor
prices per zone, and the client / OSC commands of the new resources.
"""

import argparse
from decimal import Decimal as D
import json
import os
import subprocess
import sys
from unittest import mock

import fixtures
from oslo_config import cfg
import webob

from opie_sched.services.market.api import policy
from opie_sched.services.market import client as market_client
from opie_sched.services.market.db import models
from opie_sched.services.market import engine
from opie_sched.services.market import opts
from opie_sched.services.market import osc
from tests.unit.services.market import test_market_service as base

V = 'OpenStack-API-Version'
LATEST = {V: 'spot-market latest'}

#: Personas: token ``user:project:roles`` (roles as Keystone's implied
#: roles give them: admin implies member implies reader).
READER = 'r:pA:reader'
MEMBER = 'm:pA:member,reader'
ADMIN = 'adm:pAdmin:admin,member,reader'
OTHER = 'o:pB:member,reader'
SERVICE = 'svc:service:service'
PERSONAS = {'reader': READER, 'member': MEMBER, 'admin': ADMIN,
            'other project': OTHER, 'service': SERVICE}

#: (method, route, concrete path, body) -> {persona: status}. srv-a and
#: the account belong to pA.
ALL = dict.fromkeys(PERSONAS, 200)
MATRIX = [
    ('GET', '/', '/', None, ALL),
    ('GET', '/v1', '/v1', None, ALL),
    ('GET', '/v1/prices', '/v1/prices', None, ALL),
    ('GET', '/v1/prices/history', '/v1/prices/history', None, ALL),
    ('GET', '/v1/flavor-prices', '/v1/flavor-prices?vcpus=2&memory_mb=4000',
     None, ALL),
    ('GET', '/v1/servers/{server_id}/bid', '/v1/servers/srv-a/bid', None,
     dict(ALL, **{'other project': 404})),
    ('PUT', '/v1/servers/{server_id}/bid', '/v1/servers/srv-a/bid',
     {'bid': '1.5'}, dict(ALL, reader=403, **{'other project': 404})),
    ('GET', '/v1/account', '/v1/account?project_id=pA', None,
     dict(ALL, **{'other project': 403})),
    ('GET', '/v1/account/ledger', '/v1/account/ledger?project_id=pA', None,
     dict(ALL, **{'other project': 403})),
    ('GET', '/v1/notices', '/v1/notices?project_id=pA', None,
     dict(ALL, **{'other project': 403})),
    ('POST', '/v1/accounts/{project_id}/credit', '/v1/accounts/pA/credit',
     {'amount': '1'}, {'reader': 403, 'member': 403, 'admin': 201,
                       'other project': 403, 'service': 403}),
    ('PUT', '/v1/reserve-price', '/v1/reserve-price',
     {'reserve_price': {'vcpus': '0.01'}},
     {'reader': 403, 'member': 403, 'admin': 200, 'other project': 403,
      'service': 403}),
    ('GET', '/v1/shares', '/v1/shares', None,
     {'reader': 403, 'member': 403, 'admin': 200, 'other project': 403,
      'service': 200}),
    # 1.2: planning and the owner's event history
    ('GET', '/v1/placement-score', '/v1/placement-score?flavor=spot.small',
     None, ALL),
    ('GET', '/v1/interruption-history',
     '/v1/interruption-history?flavor=spot.small', None, ALL),
    ('GET', '/v1/events', '/v1/events?project_id=pA', None,
     dict(ALL, **{'other project': 403})),
    # 1.3: an owner's interruption drill (srv-a's pending notice is
    # withdrawn before each persona's call: see PersonaMatrixTest.fresh)
    ('POST', '/v1/servers/{server_id}/interruption-drill',
     '/v1/servers/srv-a/interruption-drill', {'notice_seconds': 60},
     {'reader': 403, 'member': 202, 'admin': 202, 'other project': 404,
      'service': 403}),
    # 1.4: the owner acknowledges srv-a's pending notice (put back before
    # each persona's call: see PersonaMatrixTest.fresh)
    ('POST', '/v1/servers/{server_id}/interruption-ack',
     '/v1/servers/srv-a/interruption-ack', {},
     {'reader': 403, 'member': 202, 'admin': 202, 'other project': 404,
      'service': 403}),
    # last: srv-a then bids the default 0 (BidUnsetTest checks /v1/shares
    # stays 200 then)
    ('DELETE', '/v1/servers/{server_id}/bid', '/v1/servers/srv-a/bid', None,
     dict(ALL, reader=403, **{'other project': 404})),
]


def provider_summary(capacity, normal_used, preemptible_used,
                     preemptible_capacity=None):
    """A provider summary of ``GET /allocation_candidates`` (1.36)."""
    pre_cap = preemptible_capacity or capacity
    res = {}
    for rcs, caps, used in (
            (('VCPU', 'MEMORY_MB', 'DISK_GB'), capacity, normal_used),
            (('CUSTOM_PREEMPTIBLE_VCPU', 'CUSTOM_PREEMPTIBLE_MEMORY_MB',
              'CUSTOM_PREEMPTIBLE_DISK_GB'), pre_cap, preemptible_used)):
        for rc, c, u in zip(rcs, caps, used):
            res[rc] = {'capacity': c, 'used': u}
    return {'resources': res, 'traits': []}


#: Flavors Nova knows in these tests (FlavorLookup's answers).
FLAVORS = {
    'spot.small': {'id': 'f-spot', 'name': 'spot.small', 'vcpus': 2,
                   'ram': 4000, 'disk_gb': 40,
                   'extra_specs': dict(base.flavors.preemptible_extra_specs(
                       2, 4000, 40), **{'opie:bid': '3'})},
    'm1.small': {'id': 'f-normal', 'name': 'm1.small', 'vcpus': 2,
                 'ram': 4000, 'disk_gb': 40, 'extra_specs': {}},
}


class _Base(base._APIBase):

    def setUp(self):
        super().setUp()
        self.api = self.app.app
        self.api.zones = lambda: {'h1': 'az1', 'h2': 'az2'}
        self.api.flavors = FLAVORS.get
        self.api.providers = self.read_providers
        self.provider_reads = []

    def read_providers(self, params):
        """Placement's answer for the fake cloud: every host a candidate,
        8 vCPU / 16000 MB / 400 GB; on h1, srv-a and srv-b hold 2 vCPU,
        4000 MB and 40 GB each.
        """
        self.provider_reads.append(params)
        return {'h1': provider_summary((8, 16000, 400), (0, 0, 0),
                                       (4, 8000, 80)),
                'h2': provider_summary((8, 16000, 400), (0, 0, 0),
                                       (0, 0, 0))}

    def call(self, method, path, token=ADMIN, body=None, headers=None):
        req = webob.Request.blank(path, method=method)
        req.headers.update(headers or {})
        if token:
            req.headers['X-Auth-Token'] = token
        if body is not None:
            req.body = (body if isinstance(body, bytes)
                        else json.dumps(body).encode())
            req.content_type = 'application/json'
        resp = req.get_response(self.app)
        self.last = resp
        return resp.status_int, resp.json


class PersonaMatrixTest(_Base):

    def test_matrix_covers_every_route(self):
        routes = {(m, p) for m, p, _since in self.api.routes}
        self.assertEqual(routes, {(m, r) for m, r, _p, _b, _e in MATRIX})

    def fresh(self, route):
        """Each persona meets srv-a as the first one did: without a
        pending notice (the fixture's market notice, or the drill of the
        persona before), so a drill's answer is its policy's.
        """
        if route.endswith('/interruption-ack'):
            # the ack of the persona before interrupted srv-a (delete):
            # it runs again under its notice
            if 'srv-a' not in self.cloud.by_uuid:
                self.cloud.add('srv-a', 'pA', 1)
            for state in (models.PREEMPTED, models.CANCELLED):
                self.store.set_notice_state('srv-a', models.NOTICED,
                                            expected=state)
        if route.endswith('/interruption-drill'):
            self.store.set_notice_state('srv-a', models.CANCELLED)
            # and a second later (one drill per server and instant)
            now = self.api.clock() + 1
            self.api.clock = lambda: now

    def test_every_persona_on_every_endpoint(self):
        seen = {}
        for method, route, path, body, expected in MATRIX:
            for persona, token in PERSONAS.items():
                self.fresh(route)
                status, answer = self.call(method, path, token, body,
                                           LATEST)
                seen[(method, route, persona)] = status
                if status >= 400:
                    self.assertEqual(status, answer['errors'][0]['status'])
        want = {(m, r, p): code for m, r, _path, _b, e in MATRIX
                for p, code in e.items()}
        self.assertEqual({k: v for k, v in want.items() if seen[k] != v},
                         {k: v for k, v in seen.items() if want[k] != v})

    def test_reader_cannot_change_a_bid(self):
        for method in ('PUT', 'DELETE'):
            status, body = self.call(method, '/v1/servers/srv-a/bid',
                                     READER, {'bid': '9'}
                                     if method == 'PUT' else None, LATEST)
            self.assertEqual(403, status)
            self.assertIn('opie_market:bid:', body['errors'][0]['detail'])
        self.assertEqual('1', self.cloud.by_uuid['srv-a'].metadata[
            'opie:bid'])

    def _enforcer(self, policy_file=None, **oslo_policy):
        conf = cfg.ConfigOpts()
        opts.register_opts(conf)
        args = []
        if policy_file:
            args = ['--config-file', self._conf_file(policy_file)]
        # parsed first, as the market's services do: oslo.policy 4.5-4.6
        # (2025.1, 2025.2) looks for the policy file at the Enforcer's
        # creation
        conf(args)
        enf = policy.enforcer(conf)
        for name, value in oslo_policy.items():
            conf.set_override(name, value, 'oslo_policy')
        self.api.enforcer = enf
        return enf

    def _conf_file(self, rules):
        d = self.useFixture(fixtures.TempDir()).path
        with open(os.path.join(d, 'policy.yaml'), 'w') as f:
            json.dump(rules, f)
        path = os.path.join(d, 'market.conf')
        with open(path, 'w') as f:
            f.write('[oslo_policy]\npolicy_file = %s\n'
                    % os.path.join(d, 'policy.yaml'))
        return path

    def test_old_defaults_only_when_new_defaults_are_off(self):
        # One deprecation cycle: enforce_new_defaults=False OR-s the old
        # admin_or_owner with the new rule (a reader may set a bid again).
        self._enforcer(enforce_new_defaults=False)
        self.assertEqual(200, self.call('PUT', '/v1/servers/srv-a/bid',
                                        READER, {'bid': '2'})[0])
        self._enforcer()
        self.assertEqual(403, self.call('PUT', '/v1/servers/srv-a/bid',
                                        READER, {'bid': '3'})[0])

    def test_an_override_of_an_old_name_still_applies(self):
        self._enforcer({'opie_market:bid:set': '!'})
        # member of the project: forbidden by the operator's old rule
        status, _ = self.call('PUT', '/v1/servers/srv-a/bid', MEMBER,
                              {'bid': '2'})
        self.assertEqual(403, status)
        self.assertEqual(200, self.call('GET', '/v1/servers/srv-a/bid',
                                        MEMBER)[0])


class ValidationTest(_Base):

    BAD = [
        ('PUT', '/v1/servers/srv-a/bid', {'bid': True}, 'bid: True is not'),
        ('PUT', '/v1/servers/srv-a/bid', {'bid': {'x': 1}}, 'bid: '),
        ('PUT', '/v1/servers/srv-a/bid', {'bid': 1, 'x': 2},
         'unknown fields: x'),
        ('PUT', '/v1/servers/srv-a/bid', {}, "'bid' is a required"),
        ('PUT', '/v1/servers/srv-a/bid', [1], 'must be a JSON object'),
        ('PUT', '/v1/servers/srv-a/bid', b'{bid', 'not valid JSON'),
        ('PUT', '/v1/servers/srv-a/bid', {'bid': 'x' * 65},
         'is too long'),
        ('POST', '/v1/accounts/pA/credit', {'amount': '1', 'note': 7},
         'note: 7 is not of type'),
        ('POST', '/v1/accounts/pA/credit', {'amount': '1',
                                            'note': 'n' * 256},
         'note: '),
        ('PUT', '/v1/reserve-price', {'reserve_price': {'gpus': 1}},
         "'gpus' is not one of"),
        ('PUT', '/v1/reserve-price', {'reserve_price': {'vcpus': [1]}},
         'reserve_price.vcpus: '),
        ('PUT', '/v1/reserve-price', {'reserve_price': {'vcpus': 1},
                                      'pool': ''}, 'pool: '),
        ('GET', '/v1/prices/history?resource=gpus', None,
         "resource: 'gpus' is not one of"),
        ('GET', '/v1/prices/history?start=1&start=2', None,
         'given twice'),
        ('GET', '/v1/account/ledger?limit=-1', None, 'limit: '),
        ('GET', '/v1/account/ledger?colour=red', None,
         'unknown query parameters: colour'),
        ('GET', '/v1/notices?state=asleep', None, "state: 'asleep'"),
        ('GET', '/v1/flavor-prices?vcpus=2', None,
         "'memory_mb' is a required"),
        ('GET', '/v1/flavor-prices?vcpus=two&memory_mb=1', None,
         'vcpus: '),
        ('GET', '/v1/prices?x=1', None, 'unknown query parameters: x'),
    ]

    def test_schema_invalid_requests_get_400_api_sig(self):
        reserve = self.store.reserve_prices()
        for method, path, body, detail in self.BAD:
            status, answer = self.call(method, path, ADMIN, body, LATEST)
            self.assertEqual(400, status, (path, body))
            self.assertEqual(['errors'], list(answer))
            (error,) = answer['errors']
            self.assertEqual({'status', 'code', 'title', 'detail',
                              'request_id'}, set(error))
            self.assertEqual((400, 'Bad Request'),
                             (error['status'], error['title']))
            self.assertTrue(error['code'].startswith('spot-market.'))
            self.assertIn(detail, error['detail'], (path, body))
            self.assertEqual(self.last.headers['X-OpenStack-Request-ID'],
                             error['request_id'])
        # nothing changed
        self.assertEqual('1', self.cloud.by_uuid['srv-a'].metadata[
            'opie:bid'])
        self.assertEqual(reserve, self.store.reserve_prices())
        self.assertEqual(D(2), self.store.get_account('pA').balance)

    def test_every_error_is_api_sig(self):
        for method, path, token in (('GET', '/v1/nowhere', ADMIN),
                                    ('DELETE', '/v1/prices', ADMIN),
                                    ('GET', '/v1/shares', READER),
                                    ('GET', '/v1/prices', None)):
            status, body = self.call(method, path, token)
            self.assertEqual(status, body['errors'][0]['status'], path)


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


class OSCCommandsTest(_Base):

    def run_command(self, cls, argv, token=MEMBER, version=None):
        app = mock.Mock()
        app.client_manager.spot = market_client.MarketClient(
            base._WebobSession(self.app, token), 'http://market/v1',
            api_version=osc.api_version(version))
        compute = app.client_manager.sdk_connection.compute
        compute.find_server.side_effect = (
            lambda name, ignore_missing: mock.Mock(id=name))
        compute.find_flavor.side_effect = (
            lambda name, ignore_missing: mock.Mock(vcpus=2, ram=4000))
        cmd = cls(app, argparse.Namespace())
        return cmd.take_action(cmd.get_parser('openstack').parse_args(argv))

    def test_new_commands(self):
        from osc_lib import exceptions as osc_exc
        columns, rows = self.run_command(osc.PriceShow, ['small'])
        self.assertEqual(['az1', 'az2'], [r[0] for r in rows])
        self.assertEqual(D(2), D(rows[0][2]))
        columns, row = self.run_command(osc.BidUnset, ['srv-a'])
        self.assertEqual('default', dict(zip(columns, row))['source'])
        columns, row = self.run_command(osc.AccountCredit,
                                        ['pA', '4', '--note', 'hi'],
                                        token=ADMIN)
        self.assertEqual(('credit', 'hi'), (dict(zip(columns, row))['kind'],
                                            dict(zip(columns, row))['note']))
        columns, rows = self.run_command(osc.LedgerList, [])
        self.assertEqual(['refill', 'charge', 'credit'],
                         [r[1] for r in rows])
        columns, page = self.run_command(osc.LedgerList, ['--limit', '1'])
        self.assertEqual(1, len(page))
        columns, page2 = self.run_command(
            osc.LedgerList, ['--limit', '1', '--marker', page[0][0]])
        self.assertEqual(rows[1][0], page2[0][0])
        columns, rows = self.run_command(osc.NoticeList, [])
        self.assertEqual([('srv-a', 'noticed')], [r[:3:2] for r in rows])
        error = self.assertRaises(osc_exc.CommandError, self.run_command,
                                  osc.AccountCredit, ['pA', '1'])
        self.assertIn('HTTP 403', str(error))
        # --os-spot-api-version 1.0 is sent: 1.1 commands are refused
        error = self.assertRaises(osc_exc.CommandError, self.run_command,
                                  osc.NoticeList, [], version='1.0')
        self.assertIn('needs spot-market API microversion 1.1', str(error))
        self.assertRaises(osc_exc.CommandError, osc.api_version, '2.3')
        # at 1.0 the lists are one answer, without pagination
        columns, rows = self.run_command(osc.LedgerList, [], version='1.0')
        self.assertEqual([None, None, None], [r[0] for r in rows])

    def test_the_version_option_is_sent(self):
        client = market_client.MarketClient(
            base._WebobSession(self.app, MEMBER), 'http://market',
            api_version='1.0')
        self.assertEqual('1.0', client.request('GET', '/prices').version)
        client.api_version = 'latest'
        self.assertEqual('1.4', client.request('GET', '/prices').version)
        client.api_version = '1.7'
        error = self.assertRaises(market_client.MarketAPIError,
                                  client.prices)
        self.assertEqual((406, 'spot-market.version-not-acceptable'),
                         (error.status, error.code))

    def test_make_client_reads_the_option_and_the_catalog(self):
        instance = mock.Mock(_api_version={'spot': '1.0'},
                             region_name='R', interface='internal')
        instance._cli_options.config = {}
        instance.get_endpoint_for_service_type.return_value = 'http://m/v1'
        self.useFixture(fixtures.EnvironmentVariable('OS_SPOT_ENDPOINT'))
        client = osc.make_client(instance)
        self.assertEqual(('1.0', 'http://m'), (client.api_version,
                                               client.endpoint))
        instance.get_endpoint_for_service_type.assert_called_once_with(
            'spot-market', region_name='R', interface='internal')


_PROBE = '''
import importlib, json, sys

class NoNova:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('nova', 'placement'):
            raise ImportError('the client must not import ' + name)
        return None

sys.meta_path.insert(0, NoNova())
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps(sorted(sys.modules)))
'''


class ImportGraphTest(base.testtools.TestCase):
    """The client, the OSC plugin and the Tempest plugin's market client
    import neither nova nor the market service (what ``[client]`` needs).
    """

    MODULES = ('opie_sched.services.market.client',
               'opie_sched.services.market.osc',
               'opie_sched_tempest_plugin.market_client')

    def test_no_nova_and_no_service_imports(self):
        out = subprocess.run([sys.executable, '-c', _PROBE]
                             + list(self.MODULES), capture_output=True,
                             text=True, check=False)
        self.assertEqual(0, out.returncode, out.stderr[-2000:])
        loaded = json.loads(out.stdout.strip().splitlines()[-1])
        self.assertEqual([], [m for m in loaded if m.split('.')[0] in
                              ('nova', 'placement', 'oslo_policy',
                               'oslo_db', 'sqlalchemy', 'tempest')])
        self.assertEqual([], [m for m in loaded if m.startswith(
            tuple('opie_sched.services.market.' + m for m in (
                'api', 'engine', 'db', 'cloud', 'charging', 'enforcement',
                'leadership', 'listener', 'notifications', 'pricer',
                'settings', 'service')))])


class _CatalogSession(base._WebobSession):
    """A keystoneauth-like session with a catalog holding the market."""

    looked_up = []

    def get_endpoint(self, service_type=None, interface=None,
                     region_name=None):
        self.looked_up.append((service_type, interface))
        return {'spot-market': 'http://market.example/v1'}.get(service_type)

    def request(self, url, method, **kwargs):
        if not url.startswith('http://market.example/'):
            raise ConnectionError('no such host: %s' % url)
        return super().request(url, method, **kwargs)


class CallersTest(_Base):
    """The autoscaler and the repacker call the API through the one
    client, and find it in the catalog.
    """

    def test_repacker_tabu_bids_through_the_client(self):
        from opie_sched.services.repacker import tabu
        bids = tabu.MarketBids(_CatalogSession(self.app, SERVICE))()
        self.assertEqual({'srv-a', 'srv-b'}, set(bids))
        self.assertEqual(('spot-market', 'public'),
                         _CatalogSession.looked_up[-1])
        error = self.assertRaises(
            tabu.StrategyError, tabu.MarketBids(
                _CatalogSession(self.app, READER),
                'http://market.example'))
        self.assertIn('HTTP 403', str(error))

    def test_autoscaler_finds_the_market_in_the_catalog(self):
        from opie_sched.services.autoscaler import policies
        from opie_sched.services.autoscaler import spot
        session = _CatalogSession(self.app, SERVICE)
        del _CatalogSession.looked_up[:]
        quote = spot.SpotPrices(session=session).quote(spot.CATALOG)
        self.assertEqual([('spot-market', 'public')],
                         _CatalogSession.looked_up)
        self.assertEqual(D('0.5'), quote.prices['default']['vcpus'])
        slo = policies.MarketClient(session=lambda: session)
        self.assertEqual(D(1), slo.get_bid(spot.CATALOG, 'srv-a'))
        self.assertEqual(D('1.25'), slo.set_bid(spot.CATALOG, 'srv-a',
                                                1.25))
        self.assertEqual('1.25', self.cloud.by_uuid['srv-a'].metadata[
            'opie:bid'])
        self.assertRaises(spot.MarketError, spot.api_client, None,
                          spot.CATALOG)
        error = self.assertRaises(spot.MarketError, slo.get_bid,
                                  spot.CATALOG, 'nope')
        self.assertIn('answered 404: server nope not found', str(error))
