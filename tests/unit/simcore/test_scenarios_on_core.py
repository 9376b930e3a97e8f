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
"""The simulator's scenarios run on the core (opie_sched.simulator modules on
opie_sched.simcore; their place is tests/unit/simulator/, which another
branch is reworking)."""

import numpy as np
import testtools

from opie_sched.consolidation import p2p
from opie_sched.simcore import hosts as hosts_mod
from opie_sched.simulator import engine
from opie_sched.simulator import rpm_vs_ffd
from opie_sched.workload import generator


class ScenariosOnTheCoreTest(testtools.TestCase):
    """The scenarios' state is the core's."""

    def test_engine_cloud_accounts_every_instance(self):
        reqs = generator.generate(seed=3, count=300, rate_per_hour=400,
                                  preemptible_fraction=0.5)
        sim = engine.Simulator(
            engine.cloud_mod.Cloud.uniform(4),
            engine.policies_mod.make_policy('opie'))
        result = sim.run(reqs)
        hosts = sim.cloud.hosts
        # every server left by the end (departure or preemption)
        self.assertEqual(0, hosts.n_placed)
        self.assertEqual(0, sim.cloud.active_hosts)
        self.assertEqual(hosts.moves['placements'], hosts.moves['removals'])
        self.assertGreaterEqual(hosts.moves['placements'],
                                result.servers_booted)
        self.assertEqual(0.0, float(np.abs(sim.cloud.used).max()))

    def test_rpm_placement_keeps_fractional_use(self):
        """Regression: the first minute's placements used to be added to
        integer per-host sums (numpy's bincount of nothing is int64), so
        a service using 2.55 ECU counted as 2.
        """
        vms = rpm_vs_ffd.thesis_load(16, 1.0, 0)
        dc = rpm_vs_ffd.DataCentre(16, vms, 'rpm')
        dc.demand(0.0)
        vm = next(i for i, v in enumerate(vms) if v['kind'] == 'service'
                  and dc.use_cpu[i] != int(dc.use_cpu[i]))
        dc.hosts.place(vm, 0)
        self.assertEqual(dc.use_cpu[vm], dc.uc[0])
        self.assertEqual(dc.use_mem[vm], dc.um[0])
        self.assertEqual(dc.cpu[vm], dc.rc[0])

    def test_rpm_migrations_counted_by_the_core(self):
        vms = rpm_vs_ffd.thesis_load(64, 6.0, 1)
        dc_counts = {}
        orig = rpm_vs_ffd.DataCentre.__init__

        def keep(self, *args, **kwargs):
            orig(self, *args, **kwargs)
            dc_counts['dc'] = self

        self.patch(rpm_vs_ffd.DataCentre, '__init__', keep)
        out = rpm_vs_ffd.run_policy('ffd', 64, vms, 6.0, 1)
        dc = dc_counts['dc']
        self.assertEqual(out['migrations'], dc.hosts.moves['migrations'])
        self.assertEqual(int((dc.host >= 0).sum()), dc.hosts.n_placed)

    def test_p2p_cluster_is_the_core_model(self):
        c = p2p.Cluster(3, 10)
        self.assertIsInstance(c, hosts_mod.Hosts)
        c.place('a', 4, 0)
        c.place('b', 3, 0)
        c.migrate('b', 2)
        self.assertEqual({'a': 0, 'b': 2}, c.where)
        self.assertEqual({'a': 4.0}, c.vms[0])
        self.assertEqual([4.0, 0.0, 3.0], c.used.tolist())
        self.assertEqual(1, c.moves['migrations'])
        c.remove('a')
        self.assertEqual(0.0, c.used[0])
        self.assertRaises(p2p.P2PError, c.place, 'b', 1, 1)
        self.assertRaises(p2p.P2PError, c.place, 'c', 11, 1)
