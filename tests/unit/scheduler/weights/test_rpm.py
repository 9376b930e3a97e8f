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
"""Tests of the RPM weighers on nova HostStates
(opie_sched.scheduler.weights.rpm and its terms' weighers)."""

from nova.scheduler import weights as nova_weights

from opie_sched.common import utilisation
from opie_sched.scheduler import filters
from opie_sched.scheduler.filters import failure_domain
from opie_sched.scheduler.filters import utilisation_cap
from opie_sched.scheduler import rpm_terms
from opie_sched.scheduler import weights
from opie_sched.scheduler.weights import reliability as reliability_weigher
from opie_sched.scheduler.weights import rpm as rpm_weigher
from opie_sched.scheduler.weights import rpm_distance
from opie_sched.scheduler.weights import rpm_efficiency
from opie_sched.scheduler.weights import rpm_imbalance
from opie_sched.scheduler.weights import rpm_risk

from tests.unit.scheduler.rpm_helpers import _NovaTest
from tests.unit.scheduler.rpm_helpers import aggregate
from tests.unit.scheduler.rpm_helpers import host_state
from tests.unit.scheduler.rpm_helpers import request


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
