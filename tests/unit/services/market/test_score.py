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
"""Tests of the placement score's classification
(opie_sched.services.market.score)."""

from decimal import Decimal as D

import testtools

from opie_sched.services.market import score
from tests.unit.services.market import helpers as api_base
from tests.unit.services.market import helpers as base


SMALL = (2, 4000, 40)


def host(name, capacity=(8, 16000, 100), normal=(0, 0, 0),
         pre=(0, 0, 0), price=None, running=(), pre_cap=None):
    return score.HostState(name, capacity, normal, pre,
                           pre_cap or capacity, 'az1', price, running)


class ScoreTest(testtools.TestCase):
    """:func:`score.classify` on small hand-made zones."""

    def test_fit_count_is_the_scarcest_resource(self):
        self.assertEqual(3, score.fit_count((7, 16000, 200), SMALL, 10))
        self.assertEqual(2, score.fit_count((7, 16000, 100), SMALL, 10))
        self.assertEqual(2, score.fit_count((8, 9000, 100), SMALL, 10))
        self.assertEqual(0, score.fit_count((-2, 9000, 100), SMALL, 10))
        self.assertEqual(1, score.fit_count((8, 16000, 100), SMALL, 1))

    def test_normal_flavor(self):
        free = [host('a', normal=(4, 8000, 20))]  # room for 2
        self.assertEqual(
            {'status': 'fits_now', 'fit_now': 2, 'fit_preempting': 2,
             'at_bid': None, 'price_per_hour': None},
            score.classify(free, SMALL, 2, False))
        # preemptibles fill the rest: room only in the normal state
        full = [host('a', normal=(4, 8000, 20), pre=(4, 8000, 80),
                     running=(score.Running(D(1), 4, 8000),))]
        result = score.classify(full, SMALL, 2, False)
        self.assertEqual(('preempting', 0, 2),
                         (result['status'], result['fit_now'],
                          result['fit_preempting']))
        self.assertEqual('no_room',
                         score.classify(full, SMALL, 3, False)['status'])

    def test_preemptible_flavor_and_bids(self):
        # two hosts, each 2 vCPU free now; host b has a server bidding
        # 1/h (2 vCPU), host c one bidding 2/h (2 vCPU)
        b = host('b', capacity=(4, 8000, 100), pre=(2, 4000, 40),
                 price=D('1.5'), running=(score.Running(D(1), 2, 4000),))
        c = host('c', capacity=(4, 8000, 100), pre=(2, 4000, 40),
                 price=D('1.5'), running=(score.Running(D(2), 2, 4000),))
        zone = [b, c]
        self.assertEqual('fits_now',
                         score.classify(zone, SMALL, 2, True, D(3))['status'])
        out = score.classify(zone, SMALL, 2, True, D(1))
        self.assertEqual(('out_of_bid', D('1.5')),
                         (out['status'], out['price_per_hour']))
        # 3 fit only once the 1/h server of b is gone: at_bid 1
        three = score.classify(zone, SMALL, 3, True, D(3))
        self.assertEqual(('preempting', D(1), 3),
                         (three['status'], three['at_bid'],
                          three['fit_preempting']))
        # 4 need both gone: above 2/h
        self.assertEqual(D(2), score.classify(zone, SMALL, 4, True,
                                              D(3))['at_bid'])
        # a bid of 2 preempts only cheaper servers (bid < 2): 3 at most
        self.assertEqual('no_room',
                         score.classify(zone, SMALL, 4, True, D(2))['status'])

    def test_preemptible_inventory_bounds_a_preemptible_flavor(self):
        zone = [host('a', pre_cap=(2, 4000, 40))]
        self.assertEqual(1, score.classify(zone, SMALL, 2, True,
                                           D(1))['fit_now'])
        self.assertEqual(2, score.classify(zone, SMALL, 2, False)['fit_now'])

    def test_flavor_needs_and_query(self):
        need, pre = score.flavor_need(
            2, 4000, 40, base.flavors.preemptible_extra_specs(2, 4000, 0))
        self.assertEqual(((2, 4000, 0), True), (need, pre))
        self.assertEqual('CUSTOM_PREEMPTIBLE_VCPU:2,'
                         'CUSTOM_PREEMPTIBLE_MEMORY_MB:4000',
                         score.placement_query(need, pre))
        self.assertEqual('VCPU:2,MEMORY_MB:4000,DISK_GB:40',
                         score.placement_query(*score.flavor_need(
                             2, 4000, 40, {})))
        self.assertEqual(
            {'resources': 'VCPU:1', 'required': '!COMPUTE_X,HW_CPU_X86_AVX2'},
            score.placement_params((1, 0, 0), False, {
                'trait:HW_CPU_X86_AVX2': 'required',
                'trait:COMPUTE_X': 'forbidden', 'trait:Y': 'junk'}))
        states = score.provider_states({
            'rp': api_base.provider_summary((8, 16000, 100), (1, 2, 3),
                                            (4, 5, 6)),
            'bare': {'resources': {'VCPU': {'capacity': 1, 'used': 0}}}})
        self.assertEqual({'rp': ((8, 16000, 100), (1, 2, 3), (4, 5, 6),
                                 (8, 16000, 100))}, states)
