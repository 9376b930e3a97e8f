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
"""RPM terms (thesis Paper IV), the utilisation sources, the RPM weighers
and filter, and Die-Hard's failure-domain filter and weigher on nova
HostStates (no database).
"""

import datetime
import os

import fixtures
import testtools

import nova.conf
from nova import objects
from nova.scheduler import weights as nova_weights
from nova.tests.unit.scheduler import fakes

from opie_sched.common import utilisation
from opie_sched.diehard import planner as dh_plan
from opie_sched.diehard import topology as dh_topo
from opie_sched.rpm import model as rpm
from opie_sched.scheduler import filters
from opie_sched.scheduler.filters import failure_domain
from opie_sched.scheduler.filters import utilisation_cap
from opie_sched.scheduler import reliability_plan as reliability
from opie_sched.scheduler import rpm_terms
from opie_sched.scheduler import weights
from opie_sched.scheduler.weights import reliability as reliability_weigher
from opie_sched.scheduler.weights import rpm as rpm_weigher
from opie_sched.scheduler.weights import rpm_distance
from opie_sched.scheduler.weights import rpm_efficiency
from opie_sched.scheduler.weights import rpm_imbalance
from opie_sched.scheduler.weights import rpm_risk

objects.register_all()
CONF = nova.conf.CONF


# -- pure terms ---------------------------------------------------------------

class OverbookingRiskTest(testtools.TestCase):

    def test_three_cases(self):
        # capacity 8: requested 4 (unreq 4), used 2 (free 6)
        self.assertEqual(0.0, rpm.overbooking_risk(3, 4, 6))
        self.assertEqual(0.5, rpm.overbooking_risk(5, 4, 6))
        self.assertEqual(1.0, rpm.overbooking_risk(7, 4, 6))

    def test_boundaries(self):
        self.assertEqual(0.0, rpm.overbooking_risk(4, 4, 6))   # req = unreq
        self.assertEqual(1.0, rpm.overbooking_risk(6, 4, 6))   # req = free
        self.assertEqual(0.0, rpm.overbooking_risk(4, 4, 4))   # unreq = free
        self.assertEqual(1.0, rpm.overbooking_risk(4.001, 4, 4))
        self.assertEqual(0.0, rpm.overbooking_risk(0, 0, 0))

    def test_used_above_requested(self):
        # free < unreq: no middle case
        self.assertEqual(0.0, rpm.overbooking_risk(3, 4, 2))
        self.assertEqual(1.0, rpm.overbooking_risk(4, 4, 2))

    def test_overcommitted_host(self):
        self.assertEqual(1.0, rpm.overbooking_risk(1, -2, -1))

    def test_max_of_dimensions(self):
        self.assertEqual(0.5, rpm.host_overbooking_risk(3, 4, 6, 5, 4, 6))
        self.assertEqual(1.0, rpm.host_overbooking_risk(7, 4, 6, 0, 4, 6))

    def test_invalid(self):
        self.assertRaises(rpm.RPMError, rpm.overbooking_risk, -1, 4, 6)
        self.assertRaises(rpm.RPMError, rpm.overbooking_risk, 1, float('nan'),
                          6)


class VariationTest(testtools.TestCase):

    def test_cov(self):
        self.assertEqual(0.0, rpm.coefficient_of_variation([0.5] * 10))
        self.assertAlmostEqual(0.5, rpm.coefficient_of_variation(
            [0.25, 0.75]))
        self.assertEqual(0.0, rpm.coefficient_of_variation([0.4]))
        self.assertEqual(0.0, rpm.coefficient_of_variation([0, 0, 0]))

    def test_bound_is_reached(self):
        samples = [1.0] + [0.0] * 9
        self.assertAlmostEqual(rpm.max_coefficient_of_variation(10),
                               rpm.coefficient_of_variation(samples))
        self.assertAlmostEqual(3.0, rpm.max_coefficient_of_variation(10))

    def test_host_variation_and_risk(self):
        self.assertAlmostEqual(
            0.5, rpm.host_load_variation([0.5, 0.5], [0.25, 0.75]))
        self.assertAlmostEqual(0.25, rpm.risk(0.5, 0.5))

    def test_negative_sample(self):
        self.assertRaises(rpm.RPMError, rpm.coefficient_of_variation,
                          [0.1, -0.1])


class DistanceTest(testtools.TestCase):

    def test_levels(self):
        a = rpm.Location('h1', 'g1', 'c1')
        self.assertEqual(1, rpm.distance(a, rpm.Location('h2', 'g1', 'c1')))
        self.assertEqual(2, rpm.distance(a, rpm.Location('h3', 'g2', 'c1')))
        self.assertEqual(3, rpm.distance(a, rpm.Location('h4', 'g3', 'c2')))
        self.assertEqual(1, rpm.distance(a, a))

    def test_unknown_is_far(self):
        a = rpm.Location('h1', 'g1', 'c1')
        unknown = rpm.Location('h9', None, None)
        self.assertEqual(3, rpm.distance(a, unknown))
        self.assertEqual(3, rpm.distance(unknown, rpm.Location(
            'h8', None, None)))
        self.assertEqual(2, rpm.distance(a, rpm.Location('h7', None, 'c1')))

    def test_nearest(self):
        c = rpm.Location('h', 'g2', 'c1')
        self.assertIsNone(rpm.nearest_distance(c, []))
        self.assertEqual(2, rpm.nearest_distance(c, [
            rpm.Location('x', 'g1', 'c1'), rpm.Location('y', 'g', 'c2')]))


class EfficiencyTest(testtools.TestCase):

    def test_distance_reading(self):
        self.assertAlmostEqual(0.0, rpm.efficiency(0.5, 0.5, 0.25, 0.25))
        self.assertAlmostEqual(0.5, rpm.efficiency(0.0, 0.0, 0.25, 0.25))
        self.assertAlmostEqual(0.25, rpm.efficiency(0.75, 0.5, 0.25, 0.25))
        self.assertEqual((0.0, 0.75), rpm.efficiency_bounds())

    def test_literal_reading(self):
        self.assertAlmostEqual(-0.25, rpm.efficiency(
            0.75, 0.75, 0.25, 0.25, formula='literal'))
        self.assertAlmostEqual(0.5, rpm.efficiency(
            0.0, 0.25, 0.25, 0.0, formula='literal'))
        self.assertEqual((-0.25, 0.75), rpm.efficiency_bounds(
            formula='literal'))

    def test_invalid(self):
        self.assertRaises(rpm.RPMError, rpm.efficiency, 0, 0, 0, 0,
                          formula='x')
        self.assertRaises(rpm.RPMError, rpm.efficiency, 0, 0, 0, 0,
                          target=1.5)


class DataTransferTest(testtools.TestCase):

    def test_cold(self):
        self.assertEqual(4096.0, rpm.data_transfer(4096))

    def test_live_formula(self):
        m, r, bw, n = 1000.0, 10.0, 100.0, 3
        expected = m + m * (1 - 0.1 ** 4) / (1 - 0.1)
        self.assertAlmostEqual(expected, rpm.data_transfer(
            m, live=True, dirty_rate=r, bandwidth=bw, rounds=n))
        self.assertAlmostEqual(m + m * 4, rpm.data_transfer(
            m, live=True, dirty_rate=bw, bandwidth=bw, rounds=3))
        self.assertLessEqual(
            rpm.data_transfer(m, True, r, bw, 3),
            rpm.data_transfer_bound(m, True, r, bw))

    def test_precopy_rounds(self):
        # log_{0.1}(T·L/M) = log_{0.1}(0.001) = 3;
        # log_{0.1}(X·R/(M(L−R))) = log_{0.1}(100·10/(1000·90)) ≈ 1.95 → 2
        self.assertEqual(2, rpm.precopy_rounds(1000, 10, 100, 0.01, 100))
        self.assertEqual(0, rpm.precopy_rounds(1000, 0, 100, 0.01, 100))
        self.assertEqual(30, rpm.precopy_rounds(1000, 100, 100, 0.01, 100))
        self.assertRaises(rpm.RPMError, rpm.precopy_rounds, 0, 1, 1, 1, 1)

    def test_live_needs_bandwidth(self):
        self.assertRaises(rpm.RPMError, rpm.data_transfer, 10, live=True)


class ImbalanceTest(testtools.TestCase):

    def test_placement(self):
        self.assertAlmostEqual(0.0, rpm.imbalance(0.5, 0.5, 0.25, 0.25))
        self.assertAlmostEqual(0.5, rpm.imbalance(0.5, 0.0, 0.25, 0.25))

    def test_migration(self):
        self.assertAlmostEqual(
            abs((0.8 - 0.2) - (0.4 - 0.1)) + abs((0.1 + 0.2) - (0.5 + 0.1)),
            rpm.imbalance(0.1, 0.5, 0.2, 0.1, src_cpu=0.8, src_mem=0.4))


class ScoreTest(testtools.TestCase):

    def test_normalise(self):
        self.assertEqual(0.5, rpm.normalise(1.5, 3))
        self.assertEqual(1.0, rpm.normalise(4, 3))
        self.assertEqual(0.0, rpm.normalise(-1, 3))
        self.assertEqual(0.5, rpm.normalise(0.25, 0.75, -0.25))
        self.assertEqual(0.0, rpm.normalise(1, 0))

    def test_score(self):
        terms = rpm.Terms(1.0, 0.5, 0.0, 0.0, 0.5)
        self.assertAlmostEqual(0.4, rpm.score(terms))
        self.assertAlmostEqual(1.0, rpm.score(terms, (1, 0, 0, 0, 0)))

    def test_lambdas_must_add_to_one(self):
        self.assertRaises(rpm.RPMError, rpm.score, rpm.Terms(0, 0, 0, 0, 0),
                          (0.5, 0.5, 0.5, 0, 0))
        self.assertRaises(rpm.RPMError, rpm.check_lambdas, (1.2, -0.2, 0, 0,
                                                            0))
        self.assertRaises(rpm.RPMError, rpm.check_lambdas, (1,))


class TriggerTest(testtools.TestCase):

    def test_overload_needs_ten_consecutive(self):
        high, low = [0.95] * 10, [0.5] * 10
        self.assertTrue(rpm.is_overloaded(high, low))
        self.assertTrue(rpm.is_overloaded(low, high))
        # CPU and RAM alternating above 90 %: overloaded in every sample
        self.assertTrue(rpm.is_overloaded([0.95, 0.5] * 5, [0.5, 0.95] * 5))
        self.assertFalse(rpm.is_overloaded(high[:9], low[:9]))
        self.assertFalse(rpm.is_overloaded([0.5] + [0.95] * 9, low))
        self.assertFalse(rpm.is_overloaded([0.9] * 10, low))  # not above
        self.assertTrue(rpm.is_overloaded([0.5] + [0.95] * 10, low + [0.5]))

    def test_underload_needs_both_dimensions(self):
        self.assertTrue(rpm.is_underloaded([0.1] * 10, [0.29] * 10))
        self.assertFalse(rpm.is_underloaded([0.1] * 10, [0.3] * 10))
        self.assertFalse(rpm.is_underloaded([0.1] * 9, [0.1] * 9))

    def test_host_trigger_and_priorities(self):
        self.assertEqual(rpm.Event.OVERLOAD,
                         rpm.host_trigger([0.95] * 10, [0.1] * 10))
        self.assertEqual(rpm.Event.UNDERLOAD,
                         rpm.host_trigger([0.1] * 10, [0.1] * 10))
        self.assertIsNone(rpm.host_trigger([0.5] * 10, [0.5] * 10))
        events = [(rpm.Event.UNDERLOAD, 'u'), (rpm.Event.NEW_REQUEST, 'n1'),
                  (rpm.Event.OVERLOAD, 'o'), (rpm.Event.NEW_REQUEST, 'n2')]
        self.assertEqual(['o', 'n1', 'n2', 'u'],
                         [p for _, p in rpm.prioritise(events)])


# -- nova plumbing ------------------------------------------------------------

def host_state(name, vcpus_used=0, ram_used=0, vcpus=8, ram=16000,
               aggregates=(), metrics=None, num_instances=0):
    return fakes.FakeHostState(name, name, {
        'vcpus_total': vcpus, 'vcpus_used': vcpus_used,
        'total_usable_ram_mb': ram, 'free_ram_mb': ram - ram_used,
        'total_usable_disk_gb': 200, 'disk_mb_used': 0,
        'cpu_allocation_ratio': 1.0, 'ram_allocation_ratio': 1.0,
        'disk_allocation_ratio': 1.0, 'num_instances': num_instances,
        'aggregates': list(aggregates), 'metrics': metrics})


def aggregate(**metadata):
    return objects.Aggregate(id=1, name='agg', hosts=[],
                             metadata={k.replace('__', ':'): str(v)
                                       for k, v in metadata.items()})


def request(vcpus=2, ram=4000, hints=None, num=1, group=None):
    spec = objects.RequestSpec(
        flavor=objects.Flavor(vcpus=vcpus, memory_mb=ram, root_gb=20,
                              ephemeral_gb=0, swap=0, extra_specs={}),
        num_instances=num,
        scheduler_hints={k: v if isinstance(v, list) else [v]
                         for k, v in (hints or {}).items()},
        instance_group=group)
    return spec


class _NovaTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MonkeyPatch(
            'opie_sched.common.utilisation.HISTORY',
            utilisation.UsageHistory()))
        utilisation._cache.clear()
        self.addCleanup(utilisation._cache.clear)
        self.addCleanup(CONF.reset)

    def flags(self, group, **kw):
        for k, v in kw.items():
            CONF.set_override(k, v, group=group)


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


class RPMWeigherTest(_NovaTest):

    def weigh(self, classes, host_states, spec):
        weighed = nova_weights.HostWeightHandler().get_weighed_objects(
            [cls() for cls in classes], host_states, spec)
        return [(w.obj.host, round(w.weight, 6)) for w in weighed]

    def test_efficiency_prefers_ending_at_target(self):
        hosts = [host_state('empty'), host_state('half', 4, 8000),
                 host_state('full', 6, 12000)]
        got = self.weigh([rpm_efficiency.RPMEfficiencyWeigher], hosts,
                         request())
        # after a medium: 25 % (E .5), 75 % (E 0), 100 % (E .25)
        self.assertEqual([('half', 1.0), ('full', round(1 - 0.25 / 0.75, 6)),
                          ('empty', round(1 - 0.5 / 0.75, 6))], got)

    def test_imbalance(self):
        hosts = [host_state('cpu-heavy', 6, 0), host_state('balanced', 2,
                                                           4000)]
        got = self.weigh([rpm_imbalance.RPMImbalanceWeigher], hosts,
                         request())
        self.assertEqual([('balanced', 1.0), ('cpu-heavy', 0.25)], got)

    def test_risk_uses_history(self):
        self.flags('opie_rpm', sample_interval=0.0)
        calm, wild = host_state('calm', 3, 3000), host_state('wild', 3, 3000)
        hist = utilisation.HISTORY
        for i in range(9):
            hist.record(('calm', 'calm'), 0.375, 0.1875)
            hist.record(('wild', 'wild'), 0.9 if i % 2 else 0.1, 0.1875)
        # A large request does not fit the free capacity of either host in
        # CPU (4 > 8 − 3? no: fits), so make it need overbooking: 6 vCPU.
        got = self.weigh([rpm_risk.RPMRiskWeigher], [wild, calm],
                         request(vcpus=6, ram=1000))
        self.assertEqual('calm', got[0][0])
        self.assertEqual(1.0, got[0][1])
        self.assertLess(got[1][1], 1.0)

    def test_distance_from_aggregates_and_hint(self):
        g1 = aggregate(opie__topology_group='g1',
                       opie__topology_cluster='c1')
        g2 = aggregate(opie__topology_group='g2',
                       opie__topology_cluster='c1')
        g3 = aggregate(opie__topology_group='g3',
                       opie__topology_cluster='c2')
        hosts = [host_state('far', aggregates=[g3]),
                 host_state('cluster', aggregates=[g2]),
                 host_state('unknown'),
                 host_state('near', aggregates=[g1]),
                 host_state('ref', aggregates=[g1])]
        got = self.weigh([rpm_distance.RPMDistanceWeigher], hosts,
                         request(hints={'opie_near': ['ref']}))
        weights = dict(got)
        self.assertAlmostEqual(2 / 3., weights['near'], places=5)
        self.assertAlmostEqual(1 / 3., weights['cluster'], places=5)
        self.assertEqual(0.0, weights['far'])
        self.assertEqual(0.0, weights['unknown'])

    def test_distance_without_reference_is_neutral(self):
        hosts = [host_state('a', aggregates=[aggregate(
            opie__topology_group='g')]), host_state('b')]
        got = self.weigh([rpm_distance.RPMDistanceWeigher], hosts, request())
        self.assertEqual({1.0}, {w for _, w in got})

    def test_conflicting_topology_is_unknown(self):
        loc = rpm_terms.location(host_state('h', aggregates=[
            aggregate(opie__topology_group='a'),
            aggregate(opie__topology_group='b')]))
        self.assertIsNone(loc.group)

    def test_combined_score(self):
        hosts = [host_state('empty'), host_state('half', 4, 8000)]
        got = dict(self.weigh([rpm_weigher.RPMWeigher], hosts, request()))
        # no history, no reference: only E and Imb count (0.2 each)
        self.assertAlmostEqual(1.0, got['half'])
        self.assertAlmostEqual(1 - 0.2 * (0.5 / 0.75), got['empty'],
                               places=5)
        self.flags('opie_rpm', efficiency_lambda=0.0, imbalance_lambda=0.6)
        got = dict(self.weigh([rpm_weigher.RPMWeigher], hosts, request()))
        self.assertEqual(1.0, got['empty'])

    def test_bad_lambdas_are_neutral(self):
        self.flags('opie_rpm', risk_lambda=0.9)
        hosts = [host_state('empty'), host_state('half', 4, 8000)]
        got = self.weigh([rpm_weigher.RPMWeigher], hosts, request())
        self.assertEqual({1.0}, {w for _, w in got})

    def test_error_is_neutral(self):
        hosts = [host_state('a'), host_state('b', 4, 8000)]
        hosts[1].vcpus_total = None
        got = self.weigh([rpm_efficiency.RPMEfficiencyWeigher], hosts,
                         request())
        self.assertEqual({1.0}, {w for _, w in got})

    def test_multiplier_from_aggregate(self):
        hs = host_state('a', aggregates=[aggregate(
            rpm_weight_multiplier=3)])
        self.assertEqual(3.0, rpm_weigher.RPMWeigher().weight_multiplier(hs))

    def test_found_by_the_packages_but_opt_in(self):
        # the five RPM weighers are found, but named by the operator (the
        # combined one and the per-term ones would count the terms twice)
        rpm_family = {rpm_weigher.RPMWeigher, rpm_risk.RPMRiskWeigher,
                      rpm_efficiency.RPMEfficiencyWeigher,
                      rpm_imbalance.RPMImbalanceWeigher,
                      rpm_distance.RPMDistanceWeigher}
        self.assertLessEqual(rpm_family, set(weights.every_weigher()))
        self.assertFalse(rpm_family & set(weights.all_weighers()))
        self.assertIn(utilisation_cap.UtilisationCapFilter,
                      filters.all_filters())
        self.assertIn(failure_domain.FailureDomainFilter,
                      filters.all_filters())
        self.assertIn(reliability_weigher.ReliabilityWeigher,
                      weights.every_weigher())


class UtilisationCapFilterTest(_NovaTest):

    def test_cap(self):
        filt = utilisation_cap.UtilisationCapFilter()
        self.assertTrue(filt.host_passes(host_state('h', 4, 8000),
                                         request(2, 4000)))     # 75 %
        self.assertTrue(filt.host_passes(host_state('h', 5, 8000),
                                         request(2, 4000)))     # 87.5 %
        self.assertFalse(filt.host_passes(host_state('h', 6, 8000),
                                          request(2, 4000)))    # CPU 100 %
        self.assertFalse(filt.host_passes(host_state('h', 0, 12000),
                                          request(2, 4000)))    # RAM 100 %
        self.flags('opie_rpm', alpha=0.75)
        self.assertFalse(filt.host_passes(host_state('h', 5, 8000),
                                          request(2, 4000)))

    def test_error_fails_closed(self):
        hs = host_state('h')
        hs.total_usable_ram_mb = None
        self.assertFalse(utilisation_cap.UtilisationCapFilter().host_passes(
            hs, request()))


# -- Die-Hard -----------------------------------------------------------------

def domain_hosts(layout, **extra):
    """HostStates from ``{network: [host, ...]}`` (one power domain)."""
    hosts = []
    for net, names in sorted(layout.items()):
        agg = aggregate(opie__network_domain=net, opie__power_domain='p1',
                        **extra)
        hosts.extend(host_state(n, aggregates=[agg]) for n in names)
    return hosts


LAYOUT = {'a': ['a1', 'a2'], 'b': ['b1', 'b2'], 'c': ['c1', 'c2']}
HINTS = {'opie_tasks': ['2'], 'opie_target': ['0.999'], 'opie_hours': ['80']}


class ConstraintTest(_NovaTest):

    def test_hints(self):
        self.assertEqual((2, 0.999, 80.0),
                         reliability.constraint(request(hints=HINTS)))
        self.assertIsNone(reliability.constraint(request()))

    def test_defaults(self):
        self.assertEqual((3, 0.9999, 24.0), reliability.constraint(
            request(hints={'opie_tasks': '3'})))

    def test_group_name(self):
        group = objects.InstanceGroup(
            name='etl opie_tasks=4 opie_target=0.99,opie_hours=10',
            hosts=[], policy='anti-affinity')
        self.assertEqual((4, 0.99, 10.0), reliability.constraint(
            request(group=group)))

    def test_invalid(self):
        for hints in ({'opie_tasks': 'x'}, {'opie_tasks': '0'},
                      {'opie_tasks': '2', 'opie_target': '1.5'},
                      {'opie_tasks': '2', 'opie_hours': '-1'},
                      {'opie_target': '0.9'}):
            self.assertRaises(reliability.ReliabilityError,
                              reliability.constraint, request(hints=hints))


class FailureDomainFilterTest(_NovaTest):

    def expected(self):
        topo = dh_topo.Topology(
            [dh_topo.Domain(n, (dh_topo.DEFAULT_NETWORK_FAILURE_RATE,))
             for n in 'abc'],
            [dh_topo.Domain('p1', (dh_topo.DEFAULT_POWER_FAILURE_RATE,))],
            [(n, 'p1', 2) for n in 'abc'])
        return dh_plan.plan(topo, 2, 0.999, 80)

    def run_multi_create(self, hosts, spec, count):
        """Mimic nova's loop: filter, weigh, pick the best, consume."""
        filt = failure_domain.FailureDomainFilter()
        weigher = reliability_weigher.ReliabilityWeigher()
        chosen = []
        for _ in range(count):
            passed = list(filt.filter_all(hosts, spec))
            if not passed:
                return chosen, False
            weighed = nova_weights.HostWeightHandler().get_weighed_objects(
                [weigher], passed, spec)
            best = weighed[0].obj
            best.num_instances += 1
            if spec.instance_group is not None:
                spec.instance_group.hosts.append(best.host)
            chosen.append(best.host)
        return chosen, True

    def test_quota_per_domain_with_hints(self):
        plan = self.expected()
        self.assertEqual(4, plan.total)
        hosts = domain_hosts(LAYOUT)
        chosen, ok = self.run_multi_create(
            hosts, request(hints=HINTS, num=4), 4)
        self.assertTrue(ok)
        self.assertEqual(4, len(set(chosen)))  # one task per host
        per_domain = {}
        for h in chosen:
            per_domain[h[0]] = per_domain.get(h[0], 0) + 1
        self.assertEqual(dict(plan.per_network_domain()), per_domain)

    def test_quota_with_server_group(self):
        group = objects.InstanceGroup(name='job', hosts=['a1'],
                                      policy='anti-affinity')
        hosts = domain_hosts(LAYOUT)
        # a1 already holds an earlier member: excluded, 5 hosts left
        chosen, ok = self.run_multi_create(
            hosts, request(hints=HINTS, num=4, group=group), 4)
        self.assertTrue(ok)
        self.assertNotIn('a1', chosen)
        self.assertEqual(4, len(set(chosen)))

    def test_fifth_instance_is_rejected(self):
        filt = failure_domain.FailureDomainFilter()
        hosts = domain_hosts(LAYOUT)
        spec = request(hints=HINTS, num=4)
        chosen, _ = self.run_multi_create(hosts, spec, 4)
        self.assertEqual([], list(filt.filter_all(hosts, spec)))

    def test_surplus_is_spread(self):
        hosts = domain_hosts(LAYOUT)
        chosen, ok = self.run_multi_create(
            hosts, request(hints=HINTS, num=6), 6)
        self.assertTrue(ok)
        self.assertEqual(6, len(set(chosen)))

    def test_too_few_instances_fail_cleanly(self):
        filt = failure_domain.FailureDomainFilter()
        with fixtures.FakeLogger() as log:
            passed = list(filt.filter_all(domain_hosts(LAYOUT),
                                          request(hints=HINTS, num=2)))
        self.assertEqual([], passed)
        self.assertIn('min_count = max_count = 4', log.output)

    def test_unreachable_target_fails(self):
        hints = dict(HINTS, opie_target=['0.9999999'])
        filt = failure_domain.FailureDomainFilter()
        self.assertEqual([], list(filt.filter_all(
            domain_hosts(LAYOUT), request(hints=hints, num=6))))

    def test_invalid_hint_rejects_all(self):
        filt = failure_domain.FailureDomainFilter()
        self.assertEqual([], list(filt.filter_all(
            domain_hosts(LAYOUT), request(hints={'opie_tasks': 'two'}))))

    def test_no_constraint_passes_all(self):
        hosts = domain_hosts(LAYOUT) + [host_state('plain')]
        self.assertEqual(hosts, list(
            failure_domain.FailureDomainFilter().filter_all(hosts, request())))
        self.assertEqual([0.0] * len(hosts), [
            w.weight for w in nova_weights.HostWeightHandler(
            ).get_weighed_objects(
                [reliability_weigher.ReliabilityWeigher()], hosts,
                request())])

    def test_hosts_without_domain_are_not_candidates(self):
        hosts = domain_hosts(LAYOUT) + [host_state('plain')]
        passed = list(failure_domain.FailureDomainFilter().filter_all(
            hosts, request(hints=HINTS, num=4)))
        self.assertNotIn('plain', [h.host for h in passed])
        self.assertEqual(6, len(passed))

    def test_topology_file(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'topo.yaml')
        with open(path, 'w') as f:
            f.write('power_domains:\n  - name: p1\n'
                    'network_domains:\n'
                    '  - {name: a, power_domain: p1, hosts: [a1, a2]}\n'
                    '  - {name: b, power_domain: p1, hosts: [b1, b2]}\n'
                    '  - {name: c, power_domain: p1, hosts: [c1, c2]}\n')
        self.flags('opie_reliability', topology_file=path)
        hosts = [host_state(h) for names in LAYOUT.values() for h in names]
        chosen, ok = self.run_multi_create(
            hosts, request(hints=HINTS, num=4), 4)
        self.assertTrue(ok)
        self.assertEqual(4, len(set(chosen)))

    def test_error_fails_closed(self):
        hosts = domain_hosts(LAYOUT)
        self.useFixture(fixtures.MockPatch(
            'opie_sched.scheduler.reliability_plan.host_domains',
            side_effect=RuntimeError('boom')))
        self.assertEqual([], list(failure_domain.FailureDomainFilter(
        ).filter_all(hosts, request(hints=HINTS, num=4))))


# -- local discovery (Paper IV Alg. 1, §4.1, §5.2) ---------------------------

def _tree(clusters=2, groups=4, hosts=16):
    """Locations of a three-level tree: ``clusters`` × ``groups`` ×
    ``hosts``.
    """
    return [rpm.Location('c%dg%dh%d' % (c, g, h), 'g%d' % g, 'c%d' % c)
            for c in range(clusters) for g in range(groups)
            for h in range(hosts)]


class OverlayTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.locs = _tree()
        self.overlay = rpm.Overlay(self.locs)

    def test_k_distinct_neighbours_never_the_source(self):
        rng = rpm.seeded_rng(1)
        for _ in range(50):
            got = self.overlay.sample(rng, 'c0g0h0')
            self.assertEqual(rpm.NEIGHBOURS, len(got))
            self.assertEqual(len(got), len(set(got)))
            self.assertNotIn('c0g0h0', got)

    def test_locality_split_60_30_10(self):
        # Groups large enough that no tier runs dry: the first draw of
        # each round follows the probabilities exactly.
        overlay = rpm.Overlay(_tree(2, 4, 64), k=1)
        loc = dict(overlay.locations)
        rng = rpm.seeded_rng(2)
        counts = {1: 0, 2: 0, 3: 0}
        n = 20000
        for _ in range(n):
            (peer,) = overlay.sample(rng, 'c0g0h0')
            counts[rpm.distance(loc['c0g0h0'], loc[peer])] += 1
        # anywhere (0.1) lands in the group 63/511, in the cluster
        # 192/511 and elsewhere 256/511 of the time.
        expect = {1: 0.6 + 0.1 * 63 / 511, 2: 0.3 + 0.1 * 192 / 511,
                  3: 0.1 * 256 / 511}
        for dist, p in expect.items():
            self.assertAlmostEqual(p, counts[dist] / float(n), delta=0.015)

    def test_small_group_falls_back_to_wider_tiers(self):
        overlay = rpm.Overlay(_tree(2, 2, 4), k=20)
        got = overlay.sample(rpm.seeded_rng(0), 'c0g0h0')
        self.assertEqual(15, len(got))          # every other host
        self.assertEqual(set(overlay.hosts) - {'c0g0h0'}, set(got))

    def test_no_topology_means_random_neighbours(self):
        locs = [rpm.Location('h%d' % i, None, None) for i in range(30)]
        got = rpm.Overlay(locs, k=5).sample(rpm.seeded_rng(0), 'h0')
        self.assertEqual(5, len(set(got)))

    def test_deterministic_with_a_seed(self):
        a = [self.overlay.sample(rpm.seeded_rng(7), 'c1g2h3')
             for _ in range(2)]
        self.assertEqual(a[0], a[1])
        self.assertNotEqual(
            self.overlay.sample(rpm.seeded_rng(7), 'c1g2h3'),
            self.overlay.sample(rpm.seeded_rng(8), 'c1g2h3'))

    def test_bad_input(self):
        self.assertRaises(rpm.RPMError, rpm.Overlay, self.locs, k=0)
        self.assertRaises(rpm.RPMError, rpm.Overlay, self.locs,
                          locality=(0.5, 0.5, 0.5))
        self.assertRaises(rpm.RPMError, rpm.Overlay, self.locs,
                          locality=(1.0, 0.0))
        self.assertRaises(rpm.RPMError, rpm.Overlay,
                          [self.locs[0], self.locs[0]])
        self.assertRaises(rpm.RPMError, self.overlay.sample,
                          rpm.seeded_rng(0), 'nope')


class DiscoverTest(testtools.TestCase):
    """Alg. 1: urgent events take the first round's best peer, others
    collect a candidate per round up to MaxTTL.
    """

    def setUp(self):
        super().setUp()
        self.overlay = rpm.Overlay(_tree(), k=3)
        self.seen = []

    def rank_by_name(self, names):
        self.seen.append(list(names))
        best = min(names)
        return best, float(sum(map(ord, best)) % 97)

    def test_urgent_uses_one_round(self):
        got = rpm.discover(rpm.seeded_rng(0), self.overlay, 'c0g0h0',
                           self.rank_by_name, urgent=True, max_ttl=3)
        self.assertEqual(1, got.rounds)
        self.assertEqual(1, len(self.seen))
        self.assertEqual(min(self.seen[0]), got.best)

    def test_non_urgent_runs_max_ttl_rounds_and_keeps_the_best(self):
        got = rpm.discover(rpm.seeded_rng(0), self.overlay, 'c0g0h0',
                           self.rank_by_name, urgent=False, max_ttl=3)
        self.assertEqual(4, got.rounds)
        self.assertEqual(4, len(got.candidates))
        self.assertEqual(min(c[1] for c in got.candidates), got.score)
        self.assertIn((got.best, got.score), got.candidates)

    def test_nothing_found_is_pending_at_max_ttl(self):
        got = rpm.discover(rpm.seeded_rng(0), self.overlay, 'c0g0h0',
                           lambda names: None, urgent=True, max_ttl=2)
        self.assertIsNone(got.best)
        self.assertEqual(3, got.rounds)

    def test_empty_rounds_age_the_event(self):
        answers = iter([None, ('x', 0.5), None, None])
        got = rpm.discover(rpm.seeded_rng(0), self.overlay, 'c0g0h0',
                           lambda names: next(answers), urgent=False,
                           max_ttl=2)
        # round 1 nothing (life 1), round 2 candidate (life 2), round 3
        # nothing at MaxTTL: the candidate is placed.
        self.assertEqual(('x', 0.5, 3), got[:3])
