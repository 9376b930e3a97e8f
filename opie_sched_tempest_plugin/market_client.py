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
"""The market API client of the Tempest tests.

It is :class:`opie_sched.services.market.client.MarketClient` (the one
client of the market API) answering ``(status, body)`` for every call
instead of raising, so tests can assert on refusals (400, 403, 404, 406).
It imports neither tempest nor nova.
"""

from opie_sched.services.market import client


class MarketClient(client.MarketClient):
    """Calls the market API with an openstacksdk connection's session.

    :param conn: openstacksdk connection of the caller (its keystoneauth
        session sends the token).
    :param endpoint: API root (e.g. ``http://127.0.0.1:8788``); None: the
        catalog's ``spot-market`` entry at the connection's interface and
        region (:func:`~opie_sched.services.market.client.
        connection_catalog`: the tests' connections take them from
        ``[compute] endpoint_type`` and ``[identity] region``).
    :param api_version: microversion sent (None: the server's minimum).
    """

    def __init__(self, conn, endpoint=None, api_version=None):
        super().__init__(conn.session, endpoint, api_version=api_version,
                         **client.connection_catalog(conn))

    def request(self, method, path, body=None, params=None, version=None):
        """``(status, JSON body or {})`` of ``/v1<path>``."""
        resp = super().request(method, path, body, params, version)
        return resp.status, resp.body

    def response(self, method, path, body=None, params=None, version=None):
        """The full :class:`~opie_sched.services.market.client.Response`
        (headers included).
        """
        return client.MarketClient.request(self, method, path, body, params,
                                           version)

    def _call(self, method, path, key=None, body=None, params=None,
              version=None):
        return self.request(method, path, body, params, version)

    def versions(self):
        return self.request('GET', None)

    def reserve(self, prices, pool=None):
        body = {'reserve_price': prices}
        if pool:
            body['pool'] = pool
        return self.request('PUT', '/reserve-price', body)
