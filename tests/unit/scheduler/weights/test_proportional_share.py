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
"""Tests of the scheduler's proportional-share rule: the out-of-bid check
(opie_sched.scheduler.bids) and ProportionalShareWeigher
(opie_sched.scheduler.weights.proportional_share)."""

import testtools

from opie_sched.scheduler.weights import proportional_share
from tests.unit.market.helpers import CPU
from tests.unit.market.helpers import D
from tests.unit.market.helpers import RAM
from tests.unit.scheduler.plugin_helpers import _PluginTest
from tests.unit.scheduler.plugin_helpers import host_state
from tests.unit.scheduler.plugin_helpers import instance
from tests.unit.scheduler.plugin_helpers import LARGE
from tests.unit.scheduler.plugin_helpers import MEDIUM
from tests.unit.scheduler.plugin_helpers import request


class WeigherRuleTest(testtools.TestCase):
    """ProportionalShareWeigher: a host where the request would be out of
    bid (:func:`outbid.assess`) weighs 0; idle capacity penalises nobody.
    """

    def test_request_out_of_bid(self):
        from opie_sched.scheduler import bids
        capacity = {CPU: D(96), RAM: D(96000)}
        # the example: bids 1 and 100 for 1 vCPU in 96
        self.assertFalse(bids.request_out_of_bid(
            D(1), 1, 1000, capacity, [(D(100), 1, 1000)]))
        full = [(D(100), 48, 48000), (D(100), 48, 48000)]
        self.assertTrue(bids.request_out_of_bid(
            D(1), 1, 1000, capacity, full))
        self.assertFalse(bids.request_out_of_bid(
            D(1000), 1, 1000, capacity, full))

    def test_weights(self):
        from opie_sched.scheduler.weights import proportional_share
        from tests.unit.scheduler import plugin_helpers as plugins

        class Case(plugins._PluginTest):
            def runTest(self):
                pass

        case = Case()
        case.setUp()
        self.addCleanup(case.doCleanups)

        def spot(uuid, host, bid):
            inst = plugins.instance(uuid, host, plugins.MEDIUM, True)
            inst.metadata = {'opie:bid': bid}
            return inst
        hosts = case.use_hosts(
            plugins.host_state('h-fits', [spot('a%d' % i, 'h-fits', '1')
                                          for i in range(3)]),
            plugins.host_state('h-rich', [spot('b%d' % i, 'h-rich', '1')
                                          for i in range(4)]),
            plugins.host_state('h-poor', [spot('c%d' % i, 'h-poor', '0.01')
                                          for i in range(4)]))
        spec = plugins.request(plugins.MEDIUM, True)
        spec.scheduler_hints = {'opie_bid': ['0.1']}
        got = dict(case.weigh([proportional_share.ProportionalShareWeigher],
                              hosts, spec))
        # 8 of 8 vCPU asked: it fits, worst fit by the sum of bids
        self.assertAlmostEqual(0.1 / 3.1, got['h-fits'], places=6)
        # 10 of 8 asked against bids of 1: out of bid there
        self.assertEqual(0.0, got['h-rich'])
        # 10 of 8 asked, but it outbids the others
        self.assertAlmostEqual(0.1 / 0.14, got['h-poor'], places=6)


class ProportionalShareWeigherTest(_PluginTest):

    def bid_hosts(self):
        def spot(uuid, host, bid):
            inst = instance(uuid, host, MEDIUM, True)
            if bid is not None:
                inst.metadata = {'opie:bid': bid}
            return inst
        return self.use_hosts(
            host_state('h-busy', [spot('a1', 'h-busy', '0.3'),
                                  spot('a2', 'h-busy', '0.2')]),
            host_state('h-one', [spot('b1', 'h-one', '0.1')]),
            host_state('h-none', [instance('c1', 'h-none', LARGE, False)]),
            host_state('h-bad', [spot('d1', 'h-bad', 'lots'),
                                 spot('d2', 'h-bad', None)]))

    def test_worst_fit_by_sum_of_bids(self):
        spec = request(MEDIUM, True)
        spec.scheduler_hints = {'opie_bid': ['0.1']}
        got = dict(self.weigh([proportional_share.ProportionalShareWeigher],
                              self.bid_hosts(), spec))
        # share = bid / (sum of bids on the host + bid), Themis §III.B;
        # an invalid or missing bid counts the default bid 0.01.
        self.assertEqual(1.0, got['h-none'])
        self.assertAlmostEqual(0.1 / 0.2, got['h-one'], places=5)
        self.assertAlmostEqual(0.1 / 0.6, got['h-busy'], places=5)
        self.assertAlmostEqual(0.1 / 0.12, got['h-bad'], places=5)

    def test_flavor_bid_then_default(self):
        spec = request(MEDIUM, True)
        spec.flavor.extra_specs['opie:bid'] = '0.5'
        got = dict(self.weigh([proportional_share.ProportionalShareWeigher],
                              self.bid_hosts(), spec))
        self.assertAlmostEqual(0.5 / 1.0, got['h-busy'], places=5)
        self.assertEqual(['h-busy'],
                         [h for h, w in got.items() if w == min(got.values())])

    def test_normal_requests_are_not_in_the_market(self):
        got = self.weigh([proportional_share.ProportionalShareWeigher],
                         self.bid_hosts(), request(MEDIUM, False))
        self.assertEqual({0.0}, {w for _, w in got})

    def test_invalid_request_bid_is_neutral(self):
        spec = request(MEDIUM, True)
        spec.scheduler_hints = {'opie_bid': ['-1']}
        got = self.weigh([proportional_share.ProportionalShareWeigher],
                         self.bid_hosts(), spec)
        self.assertEqual({0.0}, {w for _, w in got})
