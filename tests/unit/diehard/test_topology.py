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
"""Tests of the failure-domain topology and task slots
(opie_sched.diehard.topology)."""

import os
import random

import fixtures
import testtools
import yaml

from opie_sched.diehard import planner as dh_plan
from opie_sched.diehard import topology as dh_topo

from tests.unit.diehard.helpers import SMALL_YAML


class TopologyTestCase(testtools.TestCase):

    def test_thesis_topology(self):
        topology = dh_topo.thesis_topology()
        self.assertEqual(9600, topology.capacity)
        self.assertEqual(61, len(topology.network_domains))
        self.assertEqual(4, len(topology.power_domains))
        self.assertEqual(120, sum(len(d.failure_rates)
                                  for d in topology.network_domains))
        low, high = dh_topo.NETWORK_FAILURE_RATE_RANGE
        for d in topology.network_domains:
            self.assertTrue(all(low <= r <= high for r in d.failure_rates))
        self.assertEqual(topology.cells, dh_topo.thesis_topology().cells)

    def test_load_yaml(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'topo.yaml')
        with open(path, 'w') as f:
            f.write(SMALL_YAML)
        topology = dh_topo.load_topology(path)
        self.assertEqual(9, topology.capacity)
        self.assertEqual(((0.02,), (0.01, 0.03), (0.02,)),
                         tuple(d.failure_rates
                               for d in topology.network_domains))
        self.assertEqual(((0.4e-6,), (0.4e-6, 0.4e-6)),
                         tuple(d.failure_rates
                               for d in topology.power_domains))
        self.assertEqual([('tor-1', 'pdu-a', 3), ('tor-2', 'pdu-b', 3),
                          ('tor-3', 'pdu-a', 2), ('tor-3', 'pdu-b', 1)],
                         [tuple(c) for c in topology.cells])

    def test_validation_errors(self):
        base = yaml.safe_load(SMALL_YAML)
        cases = [
            (lambda d: d.pop('power_domains'), 'power_domains: missing'),
            (lambda d: d.update(extra=1), 'topology: unknown field(s) extra'),
            (lambda d: d['network_domains'][1].update(power_domain='pdu-x'),
             "network_domains[1].power_domain: unknown power domain "
             "'pdu-x'"),
            (lambda d: d['network_domains'][2]['hosts'].update({'pdu-z': 1}),
             "network_domains[2].hosts.pdu-z: unknown power domain"),
            (lambda d: d['network_domains'][0].update(failure_rate=-1),
             'network_domains[0].failure_rate: must be a finite number'),
            (lambda d: d['network_domains'][1].update(nodes=3),
             'network_domains[1].nodes: 3 nodes but 2 failure rates'),
            (lambda d: d['network_domains'][0].update(hosts=-2),
             'network_domains[0].hosts: must be an integer >= 0'),
            (lambda d: d['network_domains'][0].update(hosts=['h1']),
             "network_domains[1].hosts[0]: host 'h1' listed twice"),
            (lambda d: d['power_domains'][1].update(nodes=0),
             'power_domains[1].nodes: must be an integer >= 1'),
            (lambda d: d['power_domains'][1].update(name='pdu-a'),
             "power_domains[1].name: duplicate name 'pdu-a'"),
            (lambda d: d['power_domains'][0].update(colour='red'),
             'power_domains[0]: unknown field(s) colour'),
            (lambda d: d['defaults'].update(power_failure_rate='x'),
             'defaults.power_failure_rate: must be a finite number'),
            (lambda d: d['network_domains'][0].pop('name'),
             'network_domains[0].name: must be a non-empty string'),
        ]
        for mutate, message in cases:
            data = yaml.safe_load(SMALL_YAML)
            mutate(data)
            err = self.assertRaises(dh_topo.TopologyError,
                                    dh_topo.topology_from_dict, data)
            self.assertIn(message, str(err))
        self.assertIsInstance(dh_topo.topology_from_dict(base),
                              dh_topo.Topology)

    def test_programmatic_errors(self):
        net = [dh_topo.Domain('n', (0.1,))]
        pow_ = [dh_topo.Domain('p', (0.1,))]
        err = self.assertRaises(dh_topo.TopologyError, dh_topo.Topology, net,
                                pow_, [dh_topo.Cell('x', 'p', 1)])
        self.assertEqual('cells[0].network', err.path)
        err = self.assertRaises(dh_topo.TopologyError, dh_topo.Topology, net,
                                pow_, [dh_topo.Cell('n', 'p', 0)])
        self.assertIn('no hosts', str(err))
        err = self.assertRaises(dh_topo.TopologyError, dh_topo.Topology,
                                [dh_topo.Domain('n', ())], pow_, [])
        self.assertEqual('network_domains[0].failure_rate', err.path)

    def test_unreadable_files(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        err = self.assertRaises(dh_topo.TopologyError, dh_topo.load_topology,
                                os.path.join(tmp, 'missing.yaml'))
        self.assertIn('cannot read', str(err))
        path = os.path.join(tmp, 'bad.yaml')
        with open(path, 'w') as f:
            f.write('power_domains: [\n')
        err = self.assertRaises(dh_topo.TopologyError, dh_topo.load_topology,
                                path)
        self.assertIn('invalid YAML', str(err))


class BackgroundLoadTest(testtools.TestCase):
    """Task slots under the background load of Paper VI §4."""

    def test_idle_host_slots(self):
        rng = random.Random(0)
        self.assertEqual(4, dh_topo.host_slots(rng, 1, 1, background=False))
        self.assertEqual(2, dh_topo.host_slots(rng, 2, 4, background=False))
        # memory binds: 16 GB / 6 GB
        self.assertEqual(2, dh_topo.host_slots(rng, 1, 6, background=False))
        self.assertEqual(0, dh_topo.host_slots(rng, 5, 1, background=False))

    def test_background_takes_a_uniform_share(self):
        rng = random.Random(3)
        slots = [dh_topo.host_slots(rng, 1, 1) for _ in range(4000)]
        self.assertTrue(all(0 <= s <= 4 for s in slots))
        # E[min(floor(F_cpu), floor(F_mem))] with the free capacity F
        # uniform on [0, 4] and [0, 16]: sum over k = 1..3 of
        # P(both >= k) = (1 - k/4)(1 - k/16), i.e. 1.344.
        self.assertAlmostEqual(1.344, sum(slots) / 4000.0, delta=0.06)
        self.assertRaises(dh_topo.PlanError, dh_topo.host_slots, rng, 0, 1)

    def test_topology_capacity_and_same_tor_rates(self):
        plain = dh_topo.thesis_topology(2)
        loaded = dh_topo.thesis_topology(2, task=(1, 1))
        whole = dh_topo.thesis_topology(2, task=(1, 1), background=False)
        self.assertEqual(plain.network_domains, loaded.network_domains)
        self.assertEqual(9600, plain.capacity)
        self.assertEqual(4 * 9600, whole.capacity)
        self.assertEqual(640, max(c.hosts for c in whole.cells))
        self.assertLess(max(c.hosts for c in loaded.cells), 500)
        self.assertEqual(loaded.cells, dh_topo.thesis_topology(
            2, task=(1, 1)).cells)

    def test_hrf_needs_no_extra_task_when_a_domain_holds_the_job(self):
        # Paper VI Table 3: S_min = 0.999 is below one dual-homed domain's
        # reliability over 80 h, so HRF meets it with n = 0 ...
        whole = dh_topo.thesis_topology(0, task=(1, 1), background=False)
        plan = dh_plan.plan(whole, 500, 0.999, 80, algorithm='hrf')
        self.assertEqual(0, plan.extra)
        self.assertTrue(plan.met)
        self.assertEqual([500], list(plan.placement.values()))
        # ... not when the background load leaves no domain room for it.
        loaded = dh_topo.thesis_topology(0, task=(1, 1))
        self.assertGreater(dh_plan.plan(loaded, 500, 0.999, 80,
                                        algorithm='hrf').extra, 0)
