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
"""Tests of the synthetic workload generator
(opie_sched.workload.generator)."""

import collections
import statistics

import testtools

from opie_sched.workload import generator


class GeneratorTest(testtools.TestCase):

    def test_reproducible_by_seed(self):
        a = generator.generate(seed=7)
        self.assertEqual(a, generator.generate(seed=7))
        self.assertNotEqual(a, generator.generate(seed=8))
        self.assertEqual(generator.DEFAULT_COUNT, len(a))
        self.assertEqual(generator.generate(), generator.generate(
            seed=generator.DEFAULT_SEED, count=None))
        # Changing the class mix leaves arrivals, sizes and runtimes alone.
        b = generator.generate(seed=7, preemptible_fraction=0.9)
        self.assertEqual([(r.submit, r.vcpus, r.runtime) for r in a],
                         [(r.submit, r.vcpus, r.runtime) for r in b])

    def test_shape_of_requests(self):
        reqs = generator.generate(seed=1, count=50)
        self.assertEqual(list(range(1, 51)), [r.job_id for r in reqs])
        self.assertEqual(0.0, reqs[0].submit)
        submits = [r.submit for r in reqs]
        self.assertEqual(sorted(submits), submits)
        flavors = set(generator.FLAVORS.values())
        for r in reqs:
            self.assertIn((r.vcpus, r.memory_mb, r.disk_gb), flavors)
            self.assertEqual((1, None), (r.count, r.source_line))
            self.assertTrue(600 <= r.runtime <= 4 * 3600)
        self.assertEqual([], generator.generate(count=0))

    def test_statistics(self):
        reqs = generator.generate(seed=3, count=4000, rate_per_hour=60,
                                  preemptible_fraction=0.3,
                                  flavor_weights=(2, 1, 1))
        share = sum(r.preemptible for r in reqs) / len(reqs)
        self.assertAlmostEqual(0.3, share, delta=0.03)
        gaps = [b.submit - a.submit for a, b in zip(reqs, reqs[1:])]
        self.assertAlmostEqual(60.0, statistics.mean(gaps), delta=4.0)
        sizes = collections.Counter(r.vcpus for r in reqs)
        self.assertAlmostEqual(0.5, sizes[1] / len(reqs), delta=0.03)
        self.assertAlmostEqual(0.25, sizes[4] / len(reqs), delta=0.03)
        # Median of the density x**-2 on [L, H]: 1 / ((1/L + 1/H) / 2).
        low, high = 600.0, 14400.0
        median = 1.0 / ((1.0 / low + 1.0 / high) / 2.0)
        self.assertAlmostEqual(median, statistics.median(
            r.runtime for r in reqs), delta=0.06 * median)

    def test_default_demo_load(self):
        reqs = generator.generate()
        pre = sum(r.preemptible for r in reqs)
        self.assertTrue(30 <= pre <= 70, pre)
        hours = reqs[-1].submit / 3600.0
        self.assertTrue(2.0 <= hours <= 6.0, hours)
        # Offered load is of the order of the demo's 32 vCPUs.
        load = sum(r.vcpus * r.runtime for r in reqs) / reqs[-1].submit
        self.assertTrue(16 <= load <= 64, load)

    def test_bounded_power_law(self):
        import random
        rng = random.Random(0)
        draws = [generator.bounded_power_law(rng, 10, 1000, 1.0)
                 for _ in range(5000)]
        self.assertTrue(all(10 <= d <= 1000 for d in draws))
        # exponent 1 is log-uniform: median sqrt(10 * 1000) = 100.
        self.assertAlmostEqual(100, statistics.median(draws), delta=10)
        self.assertEqual(5.0, generator.bounded_power_law(rng, 5, 5, 2.0))
        self.assertRaises(ValueError, generator.bounded_power_law, rng, 0,
                          5, 2.0)

    def test_validation(self):
        for kwargs in ({'count': -1}, {'rate_per_hour': 0},
                       {'preemptible_fraction': 1.5},
                       {'flavor_weights': (1, 1)},
                       {'flavor_weights': (0, 0, 0)},
                       {'flavor_weights': (1, -1, 1)},
                       {'runtime_min': 0}, {'runtime_min': 10,
                                            'runtime_max': 5}):
            self.assertRaises(ValueError, generator.generate, **kwargs)

    def test_diurnal_cpu(self):
        self.assertAlmostEqual(2.0, generator.diurnal_cpu(0, 4, 1, 0))
        self.assertAlmostEqual(4.0, generator.diurnal_cpu(21600, 4, 1, 0))
        self.assertAlmostEqual(0.0, generator.diurnal_cpu(64800, 4, 1, 0))
        self.assertAlmostEqual(3.0, generator.diurnal_cpu(21600, 4, 0.5, 0))
        # s shifts the peak by s days.
        self.assertAlmostEqual(4.0, generator.diurnal_cpu(43200, 4, 1, 0.25))
        self.assertAlmostEqual(2.0, generator.diurnal_cpu(12345, 4, 0, 0.3))
        import numpy
        values = generator.diurnal_cpu(numpy.array([0, 21600, 64800]), 4, 1,
                                       0)
        numpy.testing.assert_allclose([2.0, 4.0, 0.0], values, atol=1e-9)
        self.assertRaises(ValueError, generator.diurnal_cpu, 0, 4, 1.5, 0)
        self.assertRaises(ValueError, generator.diurnal_cpu, 0, 4, 0.5, -1)
