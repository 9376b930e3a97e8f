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
"""Tests of Die-Hard's failure-domain filter and weigher on nova HostStates
(opie_sched.scheduler.filters.failure_domain)."""

import os

import fixtures

from nova import objects
from nova.scheduler import weights as nova_weights

from opie_sched.diehard import planner as dh_plan
from opie_sched.diehard import topology as dh_topo
from opie_sched.scheduler.filters import failure_domain
from opie_sched.scheduler.weights import reliability as reliability_weigher

from tests.unit.scheduler.rpm_helpers import _NovaTest
from tests.unit.scheduler.rpm_helpers import aggregate
from tests.unit.scheduler.rpm_helpers import HINTS
from tests.unit.scheduler.rpm_helpers import host_state
from tests.unit.scheduler.rpm_helpers import request


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
