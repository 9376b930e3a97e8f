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
"""Tests of the utilisation sources on nova HostStates
(opie_sched.common.utilisation)."""

import datetime

from nova import objects

from opie_sched.common import utilisation

from tests.unit.scheduler.rpm_helpers import _NovaTest
from tests.unit.scheduler.rpm_helpers import host_state


class UtilisationSourceTest(_NovaTest):

    def test_allocations(self):
        usage = utilisation.AllocationSource().usage(
            host_state('h', 2, 4000))
        self.assertEqual((8, 2, 2, 16000, 4000, 4000), tuple(usage))
        self.assertEqual(0.25, usage.cpu_util)
        self.assertEqual(usage.cpu_free, usage.cpu_unrequested)

    def test_metrics_cpu_with_allocation_ram(self):
        now = datetime.datetime(2026, 1, 1)
        metrics = objects.MonitorMetricList(objects=[objects.MonitorMetric(
            name='cpu.percent', value=10, timestamp=now, source='t')])
        source = utilisation.ComputeMetricsSource()
        usage = source.usage(host_state('h', 4, 4000, metrics=metrics))
        self.assertAlmostEqual(0.8, usage.cpu_used)
        self.assertEqual(4, usage.cpu_requested)
        self.assertEqual(4000, usage.ram_used)
        # without the metric: allocations
        self.assertEqual(4, source.usage(host_state('h', 4, 4000)).cpu_used)

    def test_history_ring_buffer(self):
        clock = [0.0]
        hist = utilisation.UsageHistory(length=3, clock=lambda: clock[0])
        for i in range(5):
            clock[0] += 10
            hist.record('h', i / 10.0, 0.5, interval=5)
        self.assertEqual(([0.2, 0.3, 0.4], [0.5] * 3), hist.samples('h'))
        clock[0] += 1
        self.assertFalse(hist.record('h', 0.9, 0.9, interval=5))
        clock[0] += 10
        self.assertFalse(hist.record('h', 0.9, 0.9, stamp=None,
                                     interval=100))
        self.assertTrue(hist.record('h', 0.9, 0.9, stamp='t1'))
        self.assertFalse(hist.record('h', 0.9, 0.9, stamp='t1'))

    def test_stevedore_loading(self):
        self.assertIsInstance(utilisation.load_source('metrics'),
                              utilisation.ComputeMetricsSource)
        self.assertIsInstance(utilisation.load_source('allocations'),
                              utilisation.AllocationSource)
        self.assertRaises(utilisation.UtilisationError,
                          utilisation.load_source, 'nope')
