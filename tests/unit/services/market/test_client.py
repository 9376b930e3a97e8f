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
"""Tests of the market's client (opie_sched.services.market.client): what
it imports and its callers finding the market in the catalog."""

from decimal import Decimal as D
import json
import subprocess
import sys

from tests.unit.services.market import helpers as base
from tests.unit.services.market.helpers import _Base
from tests.unit.services.market.helpers import READER
from tests.unit.services.market.helpers import SERVICE


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
