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
calls.
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
