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

from tests.unit.market.helpers import CPU
from tests.unit.market.helpers import D
from tests.unit.market.helpers import RAM


# -- the scheduler's weigher applies the same rule ---------------------------

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
        from tests.unit.scheduler import test_scheduler_plugins as plugins

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
