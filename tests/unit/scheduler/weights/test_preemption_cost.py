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
"""Tests of the preemption-cost weigher
(opie_sched.scheduler.weights.preemption_cost)."""

import fixtures

from opie_sched.scheduler import weights
from opie_sched.scheduler.weights import preemptible_count
from opie_sched.scheduler.weights import preemption_cost

from tests.unit.scheduler.plugin_helpers import _PluginTest
from tests.unit.scheduler.plugin_helpers import host_state
from tests.unit.scheduler.plugin_helpers import instance
from tests.unit.scheduler.plugin_helpers import LARGE
from tests.unit.scheduler.plugin_helpers import request


class WeigherTest(_PluginTest):

    def hosts(self):
        # free: h-free has room; h-cheap and h-dear need 4 vCPU freed by
        # preempting (billing period costs 100 s vs 3000 s); h-normal holds
        # only normal instances.
        return self.use_hosts(
            host_state('h-dear', [instance('d1', 'h-dear', LARGE, True, 3000),
                                  instance('d2', 'h-dear', LARGE, False)]),
            host_state('h-free', [instance('f1', 'h-free', LARGE, True)]),
            host_state('h-cheap', [instance('c1', 'h-cheap', LARGE, True,
                                            3700),
                                   instance('c2', 'h-cheap', LARGE, False)]),
            host_state('h-normal', [instance('n1', 'h-normal', LARGE, False),
                                    instance('n2', 'h-normal', LARGE,
                                             False)]))

    def test_preemption_cost_order(self):
        got = self.weigh([preemption_cost.PreemptionCostWeigher], self.hosts(),
                         request(LARGE, False))
        self.assertEqual(['h-free', 'h-cheap', 'h-dear', 'h-normal'],
                         [h for h, _ in got])
        multiplier = 10.0
        self.assertEqual(multiplier * 1.0, got[0][1])
        # cheapest needing preemption: 0.1 + 0.4 * (1 - 100/3000)
        self.assertAlmostEqual(multiplier * (0.1 + 0.4 * (1 - 100 / 3000)),
                               got[1][1], places=4)
        self.assertAlmostEqual(multiplier * 0.1, got[2][1], places=4)
        self.assertEqual(0.0, got[3][1])

    def test_preemptible_requests_are_not_ranked_by_cost(self):
        got = self.weigh([preemption_cost.PreemptionCostWeigher], self.hosts(),
                         request(LARGE, True))
        self.assertEqual({10.0}, {w for _, w in got})

    def test_preemptible_count(self):
        got = dict(self.weigh([preemptible_count.PreemptibleCountWeigher],
                              self.hosts(), request(LARGE, False)))
        # raw: fits -> 0; else -(1 + preemptibles), min-max normalised.
        self.assertEqual(1.0, got['h-free'])
        self.assertEqual(got['h-cheap'], got['h-dear'])
        self.assertLess(got['h-cheap'], got['h-normal'])

    def test_weigher_error_is_neutral(self):
        self.useFixture(fixtures.MockPatch(
            'opie_sched.scheduler.preemption_plans.plans_for',
            side_effect=RuntimeError('boom')))
        got = self.weigh([preemption_cost.PreemptionCostWeigher], self.hosts(),
                         request(LARGE, False))
        self.assertEqual({0.0}, {w for _, w in got})

    def test_one_view_per_request(self):
        host_states = self.hosts()
        load = self.useFixture(fixtures.MockPatch(
            'opie_sched.scheduler.cell_reads.load_instances'))
        self.weigh(weights.all_weighers(), host_states,
                   request(LARGE, False))
        load.mock.assert_not_called()
