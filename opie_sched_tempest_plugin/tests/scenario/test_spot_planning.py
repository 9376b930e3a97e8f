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
"""The placement score (market microversion 1.2) against what boots do.

Run serially: the test fills the cloud's preemptible room.
"""

import time

from tempest import config
from tempest.lib import decorators

from opie_sched_tempest_plugin.tests.scenario import market_base

CONF = config.CONF

#: Statuses under which a boot lands now (``out_of_bid``: it lands, then
#: gets notice at the market's next period).
LANDS = ('fits_now', 'out_of_bid')


class PlacementScoreTest(market_base.MarketScenarioTest):
    """``GET /v1/placement-score`` says how many preemptible servers fit;
    the cloud then takes exactly that many, and refuses one more.
    """

    def score(self, flavor, count):
        status, body = self.market.placement_score(flavor.id, count)
        self.assertEqual(200, status, body)
        return body['placement_score']

    @decorators.idempotent_id('b3f0c2d4-6e1a-4c7b-9d28-5a1e3f7c9b10')
    def test_score_matches_what_boots_do(self):
        flavor = self.preemptible
        room = self.preemptible_room(flavor.size)
        if room == 0:
            raise self.skipException('no preemptible room for %s'
                                     % flavor.name)
        doc = self.score(flavor, room + 1)
        self.assertTrue(doc['preemptible'], doc)
        # the score's count of servers that fit now is the cloud's own
        self.assertEqual(room, sum(z['fit_now'] for z in doc['zones']),
                         doc)
        for zone in doc['zones']:
            self.assertNotIn(zone['status'], LANDS, zone)
        one = self.score(flavor, 1)
        self.assertTrue(any(z['status'] in LANDS for z in one['zones']),
                        one)
        ids, _placed = self.fill_with_preemptibles(self.primary, flavor)
        self.assertEqual(room, len(ids))
        full = self.score(flavor, 1)
        self.assertEqual([0] * len(full['zones']),
                         [z['fit_now'] for z in full['zones']], full)
        self.assertFalse(any(z['status'] in LANDS for z in full['zones']),
                         full)
        # and a boot now is refused, as the score said
        (extra,) = self.boot(self.primary, flavor, wait=False)
        deadline = time.monotonic() + CONF.opie.build_timeout
        while True:
            server = self.server_map(self.primary).get(extra)
            if server is not None and server.status in ('ERROR', 'ACTIVE'):
                break
            self.assertLess(time.monotonic(), deadline,
                            'server %s neither ACTIVE nor ERROR' % extra)
            time.sleep(1)
        self.assertEqual('ERROR', server.status, server.fault)
        self.assertIn('No valid host', str(server.fault))
