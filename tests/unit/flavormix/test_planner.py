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
"""Tests of the repacking plan and its input errors
(opie_sched.flavormix.planner)."""

import testtools

from opie_sched import flavormix as rp
from opie_sched.simulator import repacking_strategies as rs


class ErrorsTest(testtools.TestCase):

    def test_bad_types(self):
        bad = [
            [{'name': 'a', 'price': -1, 'capacity': 1}],
            [{'name': 'a', 'price': 1, 'capacity': 0}],
            [{'name': 'a', 'price': float('nan'), 'capacity': 1}],
            [{'name': 'a', 'price': True, 'capacity': 1}],
            [{'name': 'a', 'price': '1', 'capacity': 1}],
            [{'name': '', 'price': 1, 'capacity': 1}],
            [{'name': 'a', 'price': 1}],
            [{'name': 'a', 'price': 1, 'capacity': 1, 'ram': 2}],
            [{'name': 'a', 'price': 1, 'capacity': 1},
             {'name': 'a', 'price': 2, 'capacity': 2}],
            [], 'abc', 5,
        ]
        for spec in bad:
            self.assertRaises(rp.RepackingError, rp.vm_types, spec)
        self.assertTrue(issubclass(rp.RepackingError, ValueError))

    def test_bad_arguments(self):
        types = rp.thesis_types('A')
        calls = [
            lambda: rp.optimal_set(types, -1),
            lambda: rp.optimal_set(types, float('inf')),
            lambda: rp.optimal_set(types, 10, method='simplex'),
            lambda: rp.optimal_set(types, 10, current={'huge': 1}),
            lambda: rp.optimal_set(types, 10, current={'small1': -1}),
            lambda: rp.optimal_set(types, 10, current={'small1': 1.5}),
            lambda: rp.optimal_set(types, 10 ** 6, upper={'small1': 1,
                                                          'small2': 0,
                                                          'med1': 0,
                                                          'med2': 0,
                                                          'large1': 0,
                                                          'large2': 0}),
            lambda: rp.plan(types, 10, d=0),
            lambda: rp.plan(types, 10, R=1, repack_time=1),
            lambda: rp.plan(types, 10, c_extra=1),
            lambda: rp.plan(types, 10, K=-0.1),
            lambda: rp.decide(1, 0.5, 1, -1, 0),
            lambda: rp.gain(0, 0, 1, 0),
            lambda: rp.affordable_servers(10, 0),
            lambda: rp.merkat_vm_upper_bound(1, {'cpu': 1}, {'mem': 1},
                                             {'cpu': 1}, 3),
            lambda: rs.make_strategy('S_magic', types),
            lambda: rs.make_strategy('S_base', types, base='xl'),
            lambda: rs.make_strategy('S_delta', types).run([1, -2]),
            lambda: rs.make_strategy('S_delta', types).run([1], 0),
            lambda: rp.thesis_types('C'),
            lambda: rp.workload('bursty'),
            lambda: rp.increase(hours=0),
        ]
        for call in calls:
            self.assertRaises(rp.RepackingError, call)
