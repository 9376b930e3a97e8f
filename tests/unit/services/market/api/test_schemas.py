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
"""Tests of the market API's JSON-schema validation with API-SIG errors
(opie_sched.services.market.api.schemas)."""

from decimal import Decimal as D

from tests.unit.services.market.helpers import _Base
from tests.unit.services.market.helpers import ADMIN
from tests.unit.services.market.helpers import LATEST
from tests.unit.services.market.helpers import READER


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
