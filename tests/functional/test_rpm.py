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
"""RPM weighers, the utilisation cap and Die-Hard quotas on a real
in-process Nova (the opie scheduler, fake 8 vCPU / 16000 MB hosts).
"""

import collections
import time

import nova.conf

from opie_sched.conf import rpm as rpm_opts
from opie_sched.diehard import planner as dh_plan
from opie_sched.diehard import topology as dh_topo
from tests.functional import base

# [opie_rpm] is set in EXTRA_FLAGS before the scheduler loads the plugins
# that register it (a class run alone failed with NoSuchGroupError)
rpm_opts.register_opts(nova.conf.CONF)

FILTERS = ['nova.scheduler.filters.all_filters',
           'opie_sched.scheduler.filters.all_filters']


class _Helpers:

    def make_aggregate(self, name, hosts, **metadata):
        agg = self.admin_api.post_aggregate({'aggregate': {'name': name}})
        for host in hosts:
            self.admin_api.add_host_to_aggregate(agg['id'], host)
        self.admin_api.post_aggregate_action(agg['id'], {
            'set_metadata': {'metadata': metadata}})
        return agg

    def wait_for_scheduler_aggregates(self, hosts, key):
        """The API casts aggregate changes to the scheduler; wait until its
        host manager has them (asynchronous casts in these tests).
        """
        manager = self.scheduler.manager.host_manager
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            seen = {h for h in hosts
                    if any(key in (manager.aggs_by_id[a].metadata or {})
                           for a in manager.host_aggregates_map.get(h, ()))}
            if seen == set(hosts):
                return
            time.sleep(0.05)
        self.fail('scheduler did not see the aggregates of %s' % hosts)

    def boot_with_hints(self, flavor, hints, count=1, name='job'):
        req = self._build_server(name=name, flavor_id=self.flavor_ids[flavor],
                                 networks='none')
        req['min_count'] = req['max_count'] = count
        req['return_reservation_id'] = True
        resv = self.api.post_server({'server': req,
                                     'os:scheduler_hints': hints})
        servers = self.api.get_servers(detail=True, search_opts={
            'reservation_id': resv['reservation_id']})
        self.assertEqual(count, len(servers))
        return [self._wait_for_state_change(s, 'ACTIVE') for s in servers]


class RPMPlacementTest(base.OpieNovaTestCase, _Helpers):
    HOSTS = ('host1', 'host2', 'host3', 'host4')
    EXTRA_FLAGS = {
        'filter_scheduler': {
            'available_filters': FILTERS,
            'enabled_filters': ['ComputeFilter', 'PreemptibleFullStateFilter',
                                'UtilisationCapFilter'],
            'weight_classes': ['opie_sched.scheduler.weights.rpm.RPMWeigher'],
        },
        'opie_rpm': {'sample_interval': 0.0, 'alpha': 0.9},
    }

    def test_score_consolidates_up_to_target_and_alpha_caps(self):
        preloaded = self.boot('large', host='host2')         # 50 % / 50 %
        # A medium brings host2 to the 75 % target (E = 0, Imb = 0); an
        # empty host would end at 25 % (E = 0.5): RPM consolidates, where
        # nova's default RAM/CPU weighers would spread to an empty host.
        medium = self.boot('medium', name='m1')
        self.assertEqual('host2', self.server_host(medium))
        # host2 would now end at 100 %: E prefers it (0.25 vs 0.5) but the
        # cap alpha = 0.9 rejects it.
        second = self.boot('medium', name='m2')
        self.assertNotEqual('host2', self.server_host(second))
        self.assertEqual('host2', self.server_host(preloaded))


class RPMOldClassPathsTest(RPMPlacementTest):
    """The same placement with the class paths of the releases before the
    filters/ and weights/ packages in nova.conf: nova's scheduler still
    loads them (deprecated, see tests/unit/scheduler/test_moved.py).
    """

    EXTRA_FLAGS = {
        'filter_scheduler': {
            'available_filters': [
                'nova.scheduler.filters.all_filters',
                'opie_sched.scheduler.filters.all_filters',
                'opie_sched.scheduler.rpm_plugins.all_filters',
                'opie_sched.scheduler.reliability.all_filters'],
            'enabled_filters': ['ComputeFilter', 'PreemptibleFullStateFilter',
                                'UtilisationCapFilter'],
            'weight_classes': ['opie_sched.scheduler.rpm_plugins.RPMWeigher'],
        },
        'opie_rpm': {'sample_interval': 0.0, 'alpha': 0.9},
    }


class RPMDistanceTest(base.OpieNovaTestCase, _Helpers):
    """The distance weigher alone, so that load does not blur the levels."""

    HOSTS = ('host1', 'host2', 'host3', 'host4')
    EXTRA_FLAGS = {
        'filter_scheduler': {
            'available_filters': FILTERS,
            'enabled_filters': ['ComputeFilter',
                                'PreemptibleFullStateFilter'],
            'weight_classes': [
                'opie_sched.scheduler.weights.rpm_distance.'
                'RPMDistanceWeigher'],
        },
    }

    def test_distance_levels_from_aggregate_topology(self):
        # cluster c1: group g1 = host1, host2; group g2 = host3.
        # cluster c2: group g3 = host4.
        self.make_aggregate('g1', ['host1', 'host2'],
                            **{'opie:topology_group': 'g1',
                               'opie:topology_cluster': 'c1'})
        self.make_aggregate('g2', ['host3'],
                            **{'opie:topology_group': 'g2',
                               'opie:topology_cluster': 'c1'})
        self.make_aggregate('g3', ['host4'],
                            **{'opie:topology_group': 'g3',
                               'opie:topology_cluster': 'c2'})
        self.wait_for_scheduler_aggregates(
            ['host1', 'host2', 'host3', 'host4'], 'opie:topology_group')
        # Near host4: its own group wins although every host is empty.
        [s1] = self.boot_with_hints('small', {'opie_near': 'host4'})
        self.assertEqual('host4', self.server_host(s1))
        # Near host1 with host1 and host2 full: host3 (same cluster,
        # Dist 2) beats host4 (other cluster, Dist 3).
        for host in ('host1', 'host2'):
            self.boot('large', host=host)
            self.boot('large', host=host)
        [s2] = self.boot_with_hints('small', {'opie_near': 'host1'})
        self.assertEqual('host3', self.server_host(s2))


class DieHardPlacementTest(base.OpieNovaTestCase, _Helpers):
    LAYOUT = {'net-a': ('host1', 'host2'), 'net-b': ('host3', 'host4'),
              'net-c': ('host5', 'host6')}
    HOSTS = tuple(h for hosts in LAYOUT.values() for h in hosts)
    EXTRA_FLAGS = {
        'filter_scheduler': {
            'available_filters': FILTERS,
            'enabled_filters': ['ComputeFilter', 'PreemptibleFullStateFilter',
                                'FailureDomainFilter'],
            'weight_classes': [
                'nova.scheduler.weights.all_weighers',
                'opie_sched.scheduler.weights.reliability.'
                'ReliabilityWeigher'],
        },
    }

    def expected_plan(self, tasks, target, hours):
        topo = dh_topo.Topology(
            [dh_topo.Domain(n, (dh_topo.DEFAULT_NETWORK_FAILURE_RATE,))
             for n in sorted(self.LAYOUT)],
            [dh_topo.Domain('pdu-1', (dh_topo.DEFAULT_POWER_FAILURE_RATE,))],
            [(n, 'pdu-1', len(h)) for n, h in sorted(self.LAYOUT.items())])
        return dh_plan.plan(topo, tasks, target, hours)

    def test_k_task_job_lands_with_planned_domain_counts(self):
        for net, hosts in self.LAYOUT.items():
            self.make_aggregate(net, hosts, **{'opie:network_domain': net,
                                               'opie:power_domain': 'pdu-1'})
        self.wait_for_scheduler_aggregates(self.HOSTS, 'opie:network_domain')
        plan = self.expected_plan(2, 0.999, 80)
        self.assertTrue(plan.met)
        self.assertEqual(4, plan.total)
        servers = self.boot_with_hints(
            'small', {'opie_tasks': '2', 'opie_target': '0.999',
                      'opie_hours': '80'}, count=plan.total)
        hosts = [self.server_host(s) for s in servers]
        self.assertEqual(len(hosts), len(set(hosts)))  # one task per host
        domain_of = {h: n for n, hs in self.LAYOUT.items() for h in hs}
        counts = collections.Counter(domain_of[h] for h in hosts)
        self.assertEqual(dict(plan.per_network_domain()), dict(counts))
        # Too few instances for the plan: NoValidHost, cleanly.
        req = self._build_server(name='short',
                                 flavor_id=self.flavor_ids['small'],
                                 networks='none')
        server = self.api.post_server({'server': req, 'os:scheduler_hints': {
            'opie_tasks': '2', 'opie_target': '0.999', 'opie_hours': '80'}})
        server = self._wait_for_state_change(server, 'ERROR')
        self.assertIn('No valid host', server['fault']['message'])
