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
"""Tests of the spot price reader and resolution
(opie_sched.services.autoscaler.spot)."""

import decimal
import json

import fixtures
import requests
from requests_mock.contrib import fixture as rm_fixture
import testtools

from opie_sched.services.autoscaler import app as app_mod
from opie_sched.services.autoscaler import service as svc
from opie_sched.services.autoscaler import spot

from tests.unit.services.autoscaler.helpers import app_doc
from tests.unit.services.autoscaler.helpers import FakeConn
from tests.unit.services.autoscaler.helpers import make_conf
from tests.unit.services.autoscaler.helpers import MARKET
from tests.unit.services.autoscaler.helpers import market_body
from tests.unit.services.autoscaler.helpers import Obj
from tests.unit.services.autoscaler.helpers import PRICES_URL
from tests.unit.services.autoscaler.helpers import SPOT_SPECS


D = decimal.Decimal


class SpotPricesTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.http = self.useFixture(rm_fixture.Fixture())
        self.http.get(PRICES_URL, json=market_body())
        self.flavor = Obj(name='sp.2', vcpus=2, ram=4000)

    def test_price_is_the_sum_over_resources(self):
        # Merkat eq. 1 prices per unit-hour x the flavor's amounts:
        # 2 vCPU x 0.25 + 4000 MB x 0.0001 = 0.9 per hour.
        market = spot.SpotPrices()
        price, quote = market.flavor_price(MARKET, 'default', self.flavor)
        self.assertAlmostEqual(0.9, price)
        self.assertEqual('2026-11-22T10:00:00Z', quote.period_start)
        self.assertEqual('market %s pool default period '
                         '2026-11-22T10:00:00Z' % MARKET,
                         quote.describe('default'))
        price, _ = market.flavor_price(MARKET + '/', 'gpu', self.flavor)
        self.assertAlmostEqual(9.0, price)
        # Exact decimal arithmetic on the market's decimal text.
        self.assertEqual(D('0.9000'), spot.flavor_price(
            {'vcpus': D('0.25'), 'memory_mb': D('0.0001')}, 2, 4000))

    def test_fetched_once_per_round(self):
        market = spot.SpotPrices()
        for pool in ('default', 'gpu', 'default'):
            market.flavor_price(MARKET, pool, self.flavor)
        self.assertEqual(1, self.http.call_count)
        self.http.get(PRICES_URL, json=market_body(vcpus='1'))
        price, _ = market.flavor_price(MARKET, 'default', self.flavor)
        self.assertAlmostEqual(0.9, price)  # still this round's prices
        market.new_round()
        price, _ = market.flavor_price(MARKET, 'default', self.flavor)
        self.assertAlmostEqual(2.4, price)
        self.assertEqual(2, self.http.call_count)
        # A failure is not retried within the round either.
        self.http.get(PRICES_URL, status_code=503)
        market.new_round()
        for _ in range(2):
            self.assertRaises(spot.MarketError, market.quote, MARKET)
        self.assertEqual(3, self.http.call_count)

    def test_keystoneauth_session_or_plain_requests(self):
        class Session:
            calls = []

            def request(self, url, method, **kw):
                self.calls.append((method, url, kw))
                return Obj(status_code=200,
                           text=json.dumps(market_body()))
        session = Session()
        lazily = []
        market = spot.SpotPrices(session=lambda: lazily.append(1) or session,
                                 timeout=3)
        self.assertEqual([], lazily)
        market.quote(MARKET)
        self.assertEqual([('GET', PRICES_URL, {
            'timeout': 3, 'raise_exc': False,
            'headers': {'Accept': 'application/json'}})], session.calls)
        self.assertEqual(0, self.http.call_count)
        # The service: the connection's session when it authenticates,
        # plain requests (no token) otherwise.
        s = svc.AutoscalerService(make_conf(self.useFixture(
            fixtures.TempDir()).path), conn=FakeConn())
        self.assertIsNone(s._market_session())
        s._conn.session = Obj(auth=None)
        self.assertIsNone(s._market_session())
        s._conn.session = Obj(auth='plugin')
        self.assertIs(s._conn.session, s._market_session())
        s._conn.session = None
        s.market.quote(MARKET)
        self.assertEqual(1, self.http.call_count)
        self.assertNotIn('X-Auth-Token', self.http.last_request.headers)

    def test_errors_say_why(self):
        market = spot.SpotPrices()
        cases = [
            (dict(exc=requests.ConnectionError('connection refused')),
             'GET %s failed: connection refused' % PRICES_URL),
            (dict(status_code=404, json={'error': {
                'code': 404, 'message': 'no resource /prices'}}),
             "answered 404: no resource /prices (market_url: the market's "
             'endpoint, e.g. http://market:8788/v1, or catalog)'),
            (dict(status_code=401, text='denied'), 'answered 401'),
            (dict(text='<html>'), 'the answer is not JSON'),
            (dict(json=[1, 2]), 'not a prices document'),
            (dict(json={'prices': [{'pool': 'default', 'resource': 'vcpus',
                                    'price': 'cheap'}]}),
             'prices[0].price: not a number'),
            (dict(json={'prices': [{'pool': 'default', 'resource': 'vcpus',
                                    'price': '-1'}]}),
             'must be a finite number >= 0'),
            (dict(json={'prices': [{'pool': '', 'resource': 'vcpus',
                                    'price': '1'}]}),
             'pool must be a non-empty string'),
            (dict(json={'prices': [{'pool': 'p', 'resource': 'vcpus'}]}),
             'no price'),
            (dict(json={'prices': 2 * [{'pool': 'default',
                                        'resource': 'vcpus',
                                        'price': '1'}]}),
             'pool default has two vcpus prices'),
            (dict(json={'period_start': None, 'period_seconds': None,
                        'prices': []}), 'has published no prices yet'),
            (dict(json={'prices': [{'pool': 'default', 'resource': 'vcpus',
                                    'price': '1'}]}),
             'pool default: no memory_mb price'),
            (dict(json={'prices': [
                {'pool': 'default', 'resource': r, 'price': '1'}
                for r in ('vcpus', 'memory_mb', 'disk_gb')]}),
             'resource(s) disk_gb have no flavor amount'),
            (dict(json=market_body(vcpus='0', memory_mb='0')),
             'the spot price of flavor sp.2 is 0/h (no bids and no reserve '
             'price)'),
        ]
        for response, why in cases:
            self.http.get(PRICES_URL, **response)
            market.new_round()
            e = self.assertRaises(spot.MarketError, market.flavor_price,
                                  MARKET, 'default', self.flavor)
            self.assertIn(why, str(e), response)
        self.http.get(PRICES_URL, json=market_body())
        market.new_round()
        e = self.assertRaises(spot.MarketError, market.flavor_price, MARKET,
                              'gpu2', self.flavor)
        self.assertIn("market %s has no pool 'gpu2' (pools: default, gpu)"
                      % MARKET, str(e))


class SpotResolveTest(testtools.TestCase):
    """Price precedence: file > market (preemptible only) > extra spec."""

    def setUp(self):
        super().setUp()
        self.http = self.useFixture(rm_fixture.Fixture())
        self.http.get(PRICES_URL, json=market_body())
        specs = {name: dict(s, **{'opie:price': '5.0'})
                 for name, s in SPOT_SPECS.items()}
        specs['as.9'] = {'opie:price': '0.5'}
        self.conn = FakeConn(extra_specs=specs)
        self.app = app_mod.parse_application(app_doc(flavors={
            'as.1': {'capacity': 10, 'price': 1.0},   # file price
            'as.9': {'capacity': 100},                # extra spec
            'sp.2': {'capacity': 25},                 # market
            'sp.4': {'capacity': 60, 'price': 2.0},   # file beats market
        }))

    def prices(self, **kw):
        r = app_mod.resolve(self.app, self.conn, market=spot.SpotPrices(),
                            **kw)
        return {t.name: t.price for t in r.types}, r

    def test_precedence(self):
        prices, r = self.prices(market_url=MARKET)
        self.assertEqual({'as.1': 1.0, 'as.9': 0.5, 'sp.4': 2.0},
                         {k: v for k, v in prices.items() if k != 'sp.2'})
        self.assertAlmostEqual(0.9, prices['sp.2'])
        period = 'period 2026-11-22T10:00:00Z'
        self.assertEqual({'as.1': 'file', 'as.9': 'extra spec opie:price',
                          'sp.2': 'market %s pool default %s'
                          % (MARKET, period), 'sp.4': 'file'},
                         r.price_sources)
        self.assertEqual('sp.2 0.9/h (market %s pool default %s)'
                         % (MARKET, period), r.market_prices())
        # Another pool.
        prices, _ = self.prices(market_url=MARKET, market_pool='gpu')
        self.assertAlmostEqual(9.0, prices['sp.2'])
        # No market named: the extra spec prices the preemptible flavor,
        # and the market is not asked.
        calls = self.http.call_count
        prices, r = self.prices(market_url=None)
        self.assertEqual(5.0, prices['sp.2'])
        self.assertEqual('', r.market_prices())
        self.assertEqual(calls, self.http.call_count)
        # Only file prices: the market is not asked either.
        app = app_mod.parse_application(app_doc())
        app_mod.resolve(app, self.conn, market=spot.SpotPrices(),
                        market_url=MARKET)
        self.assertEqual(calls, self.http.call_count)

    def test_invalid_preemptible_flavor(self):
        specs = dict(SPOT_SPECS['sp.2'])
        specs['resources:VCPU'] = '2'
        conn = FakeConn(extra_specs={'sp.2': specs})
        app = app_mod.parse_application(app_doc(flavors={
            'sp.2': {'capacity': 25}}))
        e = self.assertRaises(app_mod.AppError, app_mod.resolve, app, conn,
                              market=spot.SpotPrices(), market_url=MARKET)
        self.assertIn('flavor sp.2: cannot price it at the market', str(e))
        self.assertIn('resources:VCPU=2 must be 0', str(e))

    def test_declaration(self):
        a = app_mod.parse_application(app_doc(market_url=MARKET,
                                              market_pool='gpu'))
        self.assertEqual({'market_url': MARKET, 'market_pool': 'gpu'},
                         a.overrides)
        a = app_mod.parse_application(app_doc(market_url=None))
        self.assertEqual({'market_url': None}, a.overrides)
        for change, why in (({'market_url': 'market:8785'}, 'http(s) URL'),
                            ({'market_url': 3}, 'non-empty string'),
                            ({'market_pool': ''}, 'non-empty string'),
                            ({'market_pool': None}, 'non-empty string')):
            e = self.assertRaises(app_mod.AppError,
                                  app_mod.parse_application,
                                  app_doc(**change))
            self.assertIn(why, str(e))
            self.assertIn(next(iter(change)), str(e))
