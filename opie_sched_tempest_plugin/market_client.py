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
"""A small client of the opie-market REST API for the tests.

Unlike the OSC plugin's client it returns ``(status, body)`` for every
call, so tests can assert on refusals (400, 403, 404).
"""


class MarketClient:
    """Calls the market API with a keystoneauth session's token.

    :param conn: openstacksdk connection of the caller.
    :param endpoint: API root (e.g. ``http://127.0.0.1:8788``).
    """

    def __init__(self, conn, endpoint):
        self.session = conn.session
        self.endpoint = endpoint.rstrip('/')
        if self.endpoint.endswith('/v1'):
            self.endpoint = self.endpoint[:-3]

    def request(self, method, path, body=None, params=None):
        """``(status, JSON body or {})`` of ``/v1<path>``."""
        kwargs = {'raise_exc': False,
                  'headers': {'Accept': 'application/json'}}
        if body is not None:
            kwargs['json'] = body
        if params:
            kwargs['params'] = params
        resp = self.session.request(self.endpoint + '/v1' + path, method,
                                    **kwargs)
        try:
            data = resp.json()
        except ValueError:
            data = {}
        return resp.status_code, data

    def prices(self):
        return self.request('GET', '/prices')

    def get_bid(self, server_id):
        return self.request('GET', '/servers/%s/bid' % server_id)

    def set_bid(self, server_id, bid):
        return self.request('PUT', '/servers/%s/bid' % server_id,
                            {'bid': bid})

    def account(self, project_id=None):
        return self.request('GET', '/account',
                            params={'project_id': project_id}
                            if project_id else None)

    def ledger(self, project_id=None):
        return self.request('GET', '/account/ledger',
                            params={'project_id': project_id}
                            if project_id else None)

    def credit(self, project_id, amount, note=''):
        return self.request('POST', '/accounts/%s/credit' % project_id,
                            {'amount': amount, 'note': note})

    def shares(self):
        return self.request('GET', '/shares')

    def reserve(self, prices, pool=None):
        body = {'reserve_price': prices}
        if pool:
            body['pool'] = pool
        return self.request('PUT', '/reserve-price', body)
