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
"""SLO policies of opie-autoscaler on a real in-process Nova and the real
opie-market REST API (issue 13).

Same fixtures as :mod:`tests.functional.test_autoscaler` (its setUp, the
market API on sqlite through wsgi-intercept); the application runs the
base's ``medium.preemptible`` flavor (2 vCPU, 4000 MB) with a Merkat
horizontal policy (Alg. 2 + Alg. 3): the number of servers follows the
metric within the budget, and every server's bid is set through ``PUT
/v1/servers/{id}/bid`` -- observed as the server metadata ``opie:bid`` in
Nova.
"""

from decimal import Decimal

from opie_sched.market import bids as market_bids
from opie_sched.market import budget
from opie_sched.services.autoscaler import app as app_mod
from tests.functional import test_autoscaler as ta


class SLOAutoscalerTest(ta.AutoscalerTest):

    # Only this module's tests (the parent's run in their own module).
    test_demand_steps_up_and_down_make_before_break = None
    test_boot_failure_mid_transition_rolls_back = None
    test_spot_price_rise_moves_the_mix_off_preemptible = None

    def bids(self):
        """``{server id: opie:bid}`` of the group's servers, from Nova."""
        members = set(self.api.get_server_group(self.group.id)['members'])
        return {s['id']: s['metadata'].get(market_bids.BID_KEY)
                for s in self.all_servers() if s['id'] in members}

    def test_merkat_horizontal_scales_and_bids_real_servers(self):
        store = self.market()
        self.publish(store, ta.T0, '0.25', '0.0001')
        # The application bids from its project's market account (one
        # ledger, the market's): credit it as an operator would.
        budget.CreditManager(store).open_account(
            'admin', balance=Decimal(100))  # the token admin:admin's project
        image = next(iter(self.conn.image.images()))
        self.service.applications = [app_mod.parse_application({
            'name': 'web', 'server_group': 'web', 'image': image.id,
            'networks': 'none',
            'flavors': {'medium.preemptible': {'capacity': 1}},
            'demand': {'source': 'file', 'path': self.demand_file},
            'budget': 10.0,
            'market_url': ta.MARKET_ENDPOINT + '/v1',
            'slo': {'policy': 'merkat-horizontal', 'low': 5, 'high': 50}})]
        # Queue above the high threshold: +1 server per round.
        for n in (1, 2):
            out, after, _ = self.round(80.0)
            self.assertEqual({'medium.preemptible': n}, after, out.reason)
            self.assertEqual('reconfigured', out.action, out.reason)
            bids = self.bids()
            self.assertEqual(n, len(bids))
            # Alg. 3's per-server bid, written by the market API.
            for value in bids.values():
                self.assertIsNotNone(value, bids)
                self.assertAlmostEqual(out.plan['bid'], float(value),
                                       places=5)
        # In the band: same servers, bids refreshed.
        out, after, _ = self.round(20.0)
        self.assertEqual({'medium.preemptible': 2}, after)
        self.assertEqual('bid-set', out.action, out.reason)
        # Below the low threshold: one released, make-before-break.
        out, after, _ = self.round(1.0)
        self.assertEqual({'medium.preemptible': 1}, after, out.reason)
        self.assertEqual(1, len(out.stopped))
