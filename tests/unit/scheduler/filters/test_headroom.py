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
"""``HeadroomFilter`` on nova's HostStates: pools formed from the hosts'
aggregates as the reconciler forms them, each pool summed once per call,
normal requests never refused, errors never raised.
"""

from unittest import mock

import fixtures

from nova import objects

from opie_sched.preemption import headroom as rules
from opie_sched.scheduler import filters
from opie_sched.scheduler.filters import headroom as headroom_filter
from tests.unit.scheduler import plugin_helpers as plugins

MEDIUM = plugins.MEDIUM
LARGE = plugins.LARGE


def aggregate(agg_id, name, hosts, value=None):
    metadata = {} if value is None else {rules.AGGREGATE_KEY: value}
    return objects.Aggregate(id=agg_id, name=name, hosts=hosts,
                             metadata=metadata)


class HeadroomFilterTest(plugins._PluginTest):

    def setUp(self):
        super().setUp()
        self.filt = headroom_filter.HeadroomFilter()
        self.conf = self.useFixture(fixtures.MockPatchObject(
            headroom_filter.CONF, 'opie_preemption')).mock
        self.conf.headroom = '0'

    def hosts(self, agg_value='4 vcpu'):
        """a (6 vCPU used) and b (4 used) in aggregate A; c (8 free) in
        none.
        """
        a = plugins.host_state('a', [plugins.instance(
            'a1', 'a', (6, 100, 1), False)])
        b = plugins.host_state('b', [plugins.instance(
            'b1', 'b', LARGE, True)])
        c = plugins.host_state('c', [])
        agg = aggregate(1, 'A', ['a', 'b'], agg_value)
        a.aggregates = [agg]
        b.aggregates = [agg]
        c.aggregates = []
        return [a, b, c]

    def passing(self, host_states, size, preemptible):
        return [hs.host for hs in self.filt.filter_all(
            host_states, plugins.request(size, preemptible))]

    def test_registered(self):
        self.assertIn(headroom_filter.HeadroomFilter, filters.all_filters())

    def test_pool_of_an_aggregate(self):
        # pool A: 2 + 4 = 6 vCPU free, headroom 4; c is in no pool
        hs = self.hosts()
        self.assertEqual(['a', 'b', 'c'], self.passing(hs, MEDIUM, True))
        # 4 vCPU on b would leave 2 in A; a cannot hold them at all (its
        # 2 free vCPU: the full-state filter's refusal, not this one's)
        self.assertEqual(['a', 'c'], self.passing(hs, LARGE, True))
        # a normal request may use the headroom
        self.assertEqual(['a', 'b', 'c'], self.passing(hs, LARGE, False))

    def test_the_option_is_the_pool_of_hosts_in_no_aggregate(self):
        self.conf.headroom = '1 x 8 vcpu'
        hs = self.hosts(agg_value='0')
        # c is the only 8-vCPU slot of its pool; A's headroom is off
        self.assertEqual(['a', 'b'], self.passing(hs, MEDIUM, True))
        # without its own metadata, A takes the option: a and b hold no
        # 8-vCPU slot, so A is below its headroom and takes nothing
        hs = self.hosts(agg_value=None)
        self.assertEqual([], self.passing(hs, MEDIUM, True))
        self.assertEqual(['a', 'b', 'c'], self.passing(hs, MEDIUM, False))

    def test_malformed_aggregate_value_falls_back_to_the_option(self):
        self.conf.headroom = '5 vcpu'
        hs = self.hosts(agg_value='lots')
        with mock.patch.object(headroom_filter.LOG, 'warning') as warn:
            # 6 free in A, 5 kept: 2 vCPU would leave 4; c alone (8
            # free) keeps 5 after 2
            self.assertEqual(['c'], self.passing(hs, (2, 1, 1), True))
            self.assertEqual(['a', 'b', 'c'],
                             self.passing(hs, (1, 1, 1), True))
        # logged once, not per request
        self.assertEqual(1, warn.call_count)

    def test_each_pool_summed_once_per_call(self):
        hs = self.hosts()
        real = rules.pool_room
        with mock.patch.object(rules, 'pool_room',
                               side_effect=real) as summed:
            self.passing(hs, MEDIUM, True)
        self.assertEqual(1, summed.call_count)

    def test_error_lets_every_host_pass_without_raising(self):
        hs = self.hosts()
        with mock.patch.object(headroom_filter.host_capacity, 'full_state',
                               side_effect=RuntimeError('boom')):
            self.assertEqual(['a', 'b', 'c'],
                             self.passing(hs, LARGE, True))
            self.assertTrue(self.filt.host_passes(
                hs[0], plugins.request(LARGE, True)))
