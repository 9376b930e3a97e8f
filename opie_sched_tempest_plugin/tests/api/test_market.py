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
"""The opie-market REST API behind keystonemiddleware, as projects and
operators use it: prices, bids, isolation between projects, admin-only
calls; the secure-RBAC persona matrix over every endpoint (Keystone's
reader, member and admin roles, another project, the service role),
JSON-schema validation with API-SIG error bodies, microversions.
"""

import decimal

from tempest import config
from tempest.lib import decorators

from opie_sched_tempest_plugin import base
from opie_sched_tempest_plugin import market_client

CONF = config.CONF


class MarketBaseTest(base.OpieBaseTest):
    """Market clients for primary (``self.market``), alt
    (``self.market_alt``) and admin (``self.market_admin``).
    """

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.opie.market:
            raise cls.skipException('[opie] market = false')

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        endpoint = CONF.opie.market_endpoint
        if not endpoint:
            endpoint = cls.admin.session.get_endpoint(
                service_type=CONF.opie.market_service_type,
                interface=CONF.compute.endpoint_type.replace('URL', ''),
                region_name=CONF.identity.region or None)
        if not endpoint:
            raise AssertionError(
                '[opie] market = true but no market endpoint: set [opie] '
                'market_endpoint or register service type %s in the '
                'catalog' % CONF.opie.market_service_type)
        cls.market = market_client.MarketClient(cls.primary, endpoint)
        cls.market_alt = market_client.MarketClient(cls.alt, endpoint)
        cls.market_admin = market_client.MarketClient(cls.admin, endpoint)

    @classmethod
    def resource_setup(cls):
        super().resource_setup()
        cls.normal, cls.preemptible = cls.flavor_pair()


class MarketApiTest(MarketBaseTest):

    @decorators.idempotent_id('1d2c3b4a-5f6e-4d7c-8b9a-0f1e2d3c4b07')
    def test_prices_readable_by_members(self):
        status, body = self.market.prices()
        self.assertEqual(200, status, body)
        self.assertEqual({'period_start', 'period_seconds', 'prices'},
                         set(body))
        for row in body['prices']:
            self.assertGreaterEqual(decimal.Decimal(row['price']), 0, row)
            self.assertIn(row['resource'], ('vcpus', 'memory_mb'))
        status, _ = self.market.request('GET', '/prices/history',
                                        params={'start': 'yesterday'})
        self.assertEqual(400, status, 'a malformed time was accepted')

    @decorators.idempotent_id('5e4d3c2b-1a0f-4e9d-8c7b-6a5f4e3d2c08')
    def test_bids_of_own_server_only(self):
        server = self.boot(self.primary, self.preemptible)[0]
        status, body = self.market.set_bid(server, '0.25')
        self.assertEqual(200, status, body)
        self.assertEqual('0.25', body['bid']['bid'])
        self.assertEqual(self.primary_project, body['bid']['project_id'])
        status, body = self.market.get_bid(server)
        self.assertEqual(200, status, body)
        self.assertEqual('0.25', body['bid']['bid'])
        # The owner sees the bid in the server's metadata too.
        _, meta = self.call(self.primary, 'GET', '/servers/%s/metadata'
                            % server)
        self.assertEqual('0.25', meta['metadata'].get('opie:bid'))

        # Another project: as if the server did not exist; nothing changes.
        self.assertEqual(404, self.market_alt.get_bid(server)[0])
        self.assertEqual(404, self.market_alt.set_bid(server, '9')[0])
        self.assertEqual('0.25', self.market.get_bid(server)[1]['bid']['bid'])

        # Bad bids: 400, nothing changes.
        for bad in ('-1', 'lots', True, None):
            status, body = self.market.set_bid(server, bad)
            self.assertEqual(400, status, '%r: %s' % (bad, body))
        self.assertEqual('0.25', self.market.get_bid(server)[1]['bid']['bid'])

    @decorators.idempotent_id('2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d09')
    def test_normal_server_has_no_bid(self):
        server = self.boot(self.primary, self.normal)[0]
        status, body = self.market.set_bid(server, '0.1')
        self.assertEqual(400, status, body)

    @decorators.idempotent_id('8c9d0e1f-2a3b-4c4d-8e5f-6a7b8c9d0e10')
    def test_admin_only_calls_forbidden_to_members(self):
        calls = {
            'credit': lambda m: m.credit(self.primary_project, '10'),
            'reserve price': lambda m: m.reserve({'vcpus': '5'}),
            'shares': lambda m: m.shares(),
            'other account': lambda m: m.account(self.alt_project),
            'other ledger': lambda m: m.ledger(self.alt_project),
        }
        refused = {name: call(self.market)[0] for name, call in
                   calls.items()}
        self.assertEqual(dict.fromkeys(calls, 403), refused)
        # The admin may read shares and another project's ledger.
        status, body = self.market_admin.shares()
        self.assertEqual(200, status, body)
        self.assertIn('shares', body)
        status, body = self.market_admin.ledger(self.alt_project)
        self.assertEqual(200, status, body)

    @decorators.idempotent_id('4f5a6b7c-8d9e-4f0a-9b1c-2d3e4f5a6b11')
    def test_credit_visible_to_its_project_only(self):
        status, body = self.market_admin.credit(self.primary_project, '7.5',
                                                'tempest')
        self.assertEqual(201, status, body)
        status, body = self.market.account()
        self.assertEqual(200, status, body)
        self.assertEqual(self.primary_project,
                         body['account']['project_id'])
        status, body = self.market.ledger()
        self.assertEqual(200, status, body)
        self.assertIn('7.5', [decimal.Decimal(e['amount']).normalize()
                              .to_eng_string() for e in body['ledger']])
        status, body = self.market_alt.ledger()
        self.assertIn(status, (200, 404), body)
        if status == 200:
            self.assertEqual(
                [], [e for e in body['ledger']
                     if e['project_id'] == self.primary_project])


#: Microversion header of the market API.
VERSION_HEADER = 'OpenStack-API-Version'


class MarketPersonaTest(MarketBaseTest):
    """Every market endpoint for each persona, as Keystone issues them:
    a project reader and member (``primary``) of one project (Tempest's
    ``project_reader`` shares the project of ``primary``), the cloud admin,
    another project's member (``alt``), and a user with only the
    ``service`` role.
    """

    # ['name', role...]: os_service_user, a user with only the service
    # role in a project of its own
    credentials = ['primary', 'alt', 'admin', 'project_reader',
                   ['service_user', 'service']]

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        endpoint = cls.market.endpoint
        cls.reader = cls._connect(cls.os_project_reader.credentials)
        cls.service = cls._connect(cls.os_service_user.credentials)
        latest = 'latest'
        cls.personas = {
            'reader': market_client.MarketClient(cls.reader, endpoint,
                                                 latest),
            'member': market_client.MarketClient(cls.primary, endpoint,
                                                 latest),
            'admin': market_client.MarketClient(cls.admin, endpoint,
                                                latest),
            'other project': market_client.MarketClient(cls.alt, endpoint,
                                                        latest),
            'service': market_client.MarketClient(cls.service, endpoint,
                                                  latest),
        }

    def _matrix(self, server, project):
        all_ok = dict.fromkeys(self.personas, 200)
        hidden = dict(all_ok, **{'other project': 404})
        private = dict(all_ok, **{'other project': 403})
        admin_only = dict.fromkeys(self.personas, 403)
        bid = '/servers/%s/bid' % server
        # (name, method, path, body, params, expected); the bid is
        # unset last.
        return [
            ('versions', 'GET', None, None, None, all_ok),
            ('prices', 'GET', '/prices', None, None, all_ok),
            ('history', 'GET', '/prices/history', None, None, all_ok),
            ('flavor prices', 'GET', '/flavor-prices', None,
             {'vcpus': 1, 'memory_mb': 64}, all_ok),
            ('bid show', 'GET', bid, None, None, hidden),
            ('bid set', 'PUT', bid, {'bid': '0.3'}, None,
             dict(hidden, reader=403)),
            ('account', 'GET', '/account', None, {'project_id': project},
             private),
            ('ledger', 'GET', '/account/ledger', None,
             {'project_id': project}, private),
            ('notices', 'GET', '/notices', None, {'project_id': project},
             private),
            ('credit', 'POST', '/accounts/%s/credit' % project,
             {'amount': '1', 'note': 'tempest persona'}, None,
             dict(admin_only, admin=201)),
            # a pool no host is in: the cloud's prices do not change
            ('reserve price', 'PUT', '/reserve-price',
             {'reserve_price': {'vcpus': '0.001'},
              'pool': 'tempest-no-such-pool'}, None,
             dict(admin_only, admin=200)),
            ('shares', 'GET', '/shares', None, None,
             dict(admin_only, admin=200, service=200)),
            # 1.2
            ('placement score', 'GET', '/placement-score', None,
             {'flavor': self.preemptible.id}, all_ok),
            ('interruption history', 'GET', '/interruption-history', None,
             {'flavor': self.preemptible.id}, all_ok),
            ('events', 'GET', '/events', None, {'project_id': project},
             private),
            # 1.4: the server has no notice, so the policy's yes is a 409
            # (nothing to acknowledge; nothing is interrupted)
            ('interruption ack', 'POST',
             '/servers/%s/interruption-ack' % server, {}, None,
             dict(hidden, reader=403, service=403, member=409,
                  admin=409)),
            ('bid unset', 'DELETE', bid, None, None,
             dict(hidden, reader=403)),
        ]

    @decorators.idempotent_id('6a0f3e52-91c4-4b7e-a2d8-3c5e7f9b1d21')
    def test_every_persona_on_every_endpoint(self):
        server = self.boot(self.primary, self.preemptible)[0]
        # Set a bid so that the account exists (the market opens it at
        # the first charge or credit).
        status, body = self.market_admin.credit(self.primary_project, '1',
                                                'tempest persona')
        self.assertEqual(201, status, body)
        seen, want, details = {}, {}, {}
        for name, method, path, body, params, expected in self._matrix(
                server, self.primary_project):
            for persona, client in self.personas.items():
                if path is None:
                    status, answer = client.versions()
                else:
                    status, answer = client.request(method, path, body,
                                                    params)
                seen[(name, persona)] = status
                want[(name, persona)] = expected[persona]
                if status >= 400:
                    self.assertEqual(status,
                                     answer['errors'][0]['status'], answer)
                    details[(name, persona)] = answer['errors'][0]['detail']
        self.assertEqual({k: v for k, v in want.items() if seen[k] != v},
                         {k: v for k, v in seen.items() if want[k] != v},
                         details)
        # the personas are what they claim (Keystone's roles and projects)
        access = {p: c.session.auth.get_access(c.session)
                  for p, c in self.personas.items()}
        self.assertEqual(['reader'], access['reader'].role_names)
        self.assertNotIn('member', access['reader'].role_names)
        self.assertEqual(access['member'].project_id,
                         access['reader'].project_id)
        self.assertEqual(['service'], access['service'].role_names)
        self.assertNotIn(access['service'].project_id,
                         (self.primary_project, self.alt_project))

    @decorators.idempotent_id('0c8b2e6d-4f1a-4a3b-9e57-8d2c1b0a9f32')
    def test_a_reader_cannot_change_a_bid(self):
        server = self.boot(self.primary, self.preemptible)[0]
        member = self.personas['member']
        self.assertEqual(200, member.set_bid(server, '0.2')[0])
        reader = self.personas['reader']
        status, body = reader.set_bid(server, '9')
        self.assertEqual(403, status, body)
        self.assertEqual(403, reader.request(
            'DELETE', '/servers/%s/bid' % server)[0])
        status, body = reader.get_bid(server)
        self.assertEqual((200, '0.2'), (status, body['bid']['bid']))


class MarketConventionsTest(MarketBaseTest):
    """Schema-invalid requests get 400 with an API-SIG error body;
    microversions are negotiated by header.
    """

    @decorators.idempotent_id('3e1d7c9a-2b4f-4d6e-8a1c-5f7b9d3e2a43')
    def test_schema_invalid_requests_get_400_api_sig(self):
        server = self.boot(self.primary, self.preemptible)[0]
        self.assertEqual(200, self.market.set_bid(server, '0.25')[0])
        bid = '/servers/%s/bid' % server
        for client, method, path, body, params in (
                (self.market, 'PUT', bid, {'bid': True}, None),
                (self.market, 'PUT', bid, {'bid': '1', 'colour': 'red'},
                 None),
                (self.market, 'PUT', bid, {}, None),
                (self.market, 'PUT', bid, ['0.5'], None),
                (self.market, 'GET', '/prices/history', None,
                 {'resource': 'gpus'}),
                (self.market, 'GET', '/account/ledger', None,
                 {'limit': 'many'}),
                (self.market_admin, 'POST',
                 '/accounts/%s/credit' % self.primary_project,
                 {'amount': '1', 'note': 7}, None),
                (self.market_admin, 'PUT', '/reserve-price',
                 {'reserve_price': {'gpus': '1'}}, None)):
            resp = client.response(method, path, body, params)
            self.assertEqual(400, resp.status, (path, body, resp.body))
            (error,) = resp.body['errors']
            self.assertEqual({'status', 'code', 'title', 'detail',
                              'request_id'}, set(error), error)
            self.assertEqual(400, error['status'])
            self.assertEqual(resp.headers.get('X-OpenStack-Request-ID'),
                             error['request_id'])
        self.assertEqual('0.25',
                         self.market.get_bid(server)[1]['bid']['bid'])

    @decorators.idempotent_id('9b7a5c3e-1d2f-4e8a-b6c4-2a9e8d7f1b54')
    def test_microversions(self):
        status, body = self.market.versions()
        self.assertEqual(200, status, body)
        (v1,) = body['versions']
        self.assertEqual(('1.0', '1.4'), (v1['min_version'],
                                          v1['version']))
        resp = self.market.response('GET', '/prices')
        self.assertEqual('spot-market 1.0', resp.headers.get(VERSION_HEADER))
        resp = self.market.response('GET', '/prices', version='latest')
        self.assertEqual('spot-market 1.4', resp.headers.get(VERSION_HEADER))
        self.assertEqual(406, self.market.request(
            'GET', '/prices', version='1.99')[0])
        # /v1/notices exists from 1.1 on
        self.assertEqual(404, self.market.request('GET', '/notices')[0])
        status, body = self.market.request('GET', '/notices',
                                           version='1.1')
        self.assertEqual(200, status, body)
        self.assertEqual([], body['notices_links'])

    @decorators.idempotent_id('5d2e8f1a-7c3b-4e9d-a0f6-1b4c7e2d9a65')
    def test_flavor_price_per_zone(self):
        """``GET /v1/flavor-prices`` (``openstack spot price show``):
        one row per pool and Nova availability zone, the current price
        per hour the sum of the pool's prices per unit-hour times the
        flavor's amounts.
        """
        flavor = self.call(self.primary, 'GET', '/flavors/%s'
                           % self.preemptible.id)[1]['flavor']
        vcpus, ram = int(flavor['vcpus']), int(flavor['ram'])
        status, body = self.market.request(
            'GET', '/flavor-prices', params={'vcpus': vcpus,
                                             'memory_mb': ram},
            version='1.1')
        self.assertEqual(200, status, body)
        doc = body['flavor_prices']
        zones = {z['zoneName'] for z in self.call(
            self.primary, 'GET', '/os-availability-zone')[1][
                'availabilityZoneInfo']}
        self.assertTrue(doc['zones'], doc)
        self.assertLessEqual({z['availability_zone'] for z in doc['zones']},
                             zones)
        status, now = self.market.prices()
        self.assertEqual(200, status, now)
        if now['period_start'] != doc['period_start']:
            raise self.skipException('a new period began in between')
        per_unit = {}
        for row in now['prices']:
            per_unit.setdefault(row['pool'], {})[row['resource']] = (
                decimal.Decimal(row['price']))
        for zone in doc['zones']:
            prices = per_unit[zone['pool']]
            self.assertEqual(prices['vcpus'] * vcpus
                             + prices['memory_mb'] * ram,
                             decimal.Decimal(zone['price_per_hour']), zone)
            self.assertGreaterEqual(zone['periods'], 1)
