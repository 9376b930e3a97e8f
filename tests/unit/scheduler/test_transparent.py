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
"""Transparent normal placement: the normal-state HostState views and the
sort wrapper (no database: the request's instances are handed to the view).
"""

import fixtures

import nova.conf
from nova.scheduler.weights import ram

from opie_sched.scheduler import request_view
from opie_sched.scheduler import transparent
from opie_sched.scheduler.weights import preemptible_count
from opie_sched.scheduler.weights import preemption_cost
from tests.unit.scheduler import plugin_helpers as plugins

CONF = nova.conf.CONF
SMALL = (1, 2000, 20)
MEDIUM = plugins.MEDIUM
LARGE = plugins.LARGE


def inst(uuid, host, size, preemptible, vm_state='active',
         task_state=None):
    i = plugins.instance(uuid, host, size, preemptible)
    i.vm_state = vm_state
    i.task_state = task_state
    i.image_ref = 'image'
    return i


def with_counts(hs, num_instances, num_io_ops, free_disk_mb):
    hs.num_instances = num_instances
    hs.num_io_ops = num_io_ops
    hs.free_disk_mb = free_disk_mb
    return hs


class _Base(plugins._PluginTest):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MonkeyPatch(
            'opie_sched.scheduler.transparent.CONF', CONF))
        self.transparent(True)

    def transparent(self, on):
        CONF.set_override('transparent_normal_placement', on,
                          group='opie_preemption')
        self.addCleanup(CONF.clear_override, 'transparent_normal_placement',
                        group='opie_preemption')


class NormalHostStateTest(_Base):

    def setUp(self):
        super().setUp()
        self.insts = [inst('p1', 'h', LARGE, True),
                      inst('p2', 'h', SMALL, True, vm_state='building'),
                      inst('p3', 'h', SMALL, True, task_state='rescuing'),
                      inst('n1', 'h', MEDIUM, False,
                           task_state='image_snapshot')]
        self.real = with_counts(plugins.host_state('h', self.insts),
                                4, 3, 20 * 1024)
        [self.view] = transparent.normal_views(
            self.use_hosts(self.real), plugins.request(MEDIUM, False))

    def test_preemptible_usage_is_taken_out(self):
        v = self.view
        self.assertEqual(8, self.real.vcpus_used)
        self.assertEqual(2, v.vcpus_used)                 # n1 only
        self.assertEqual(16000 - 4000, v.free_ram_mb)
        self.assertEqual(40 * 1024, v.disk_mb_used)
        self.assertEqual((20 + 120) * 1024, v.free_disk_mb)
        self.assertEqual(1, v.num_instances)
        self.assertEqual(1, v.num_io_ops)                 # n1's snapshot
        self.assertEqual(transparent.PreemptibleUsage(
            6, 12000, 120 * 1024, 3, 2), v.preemptible)

    def test_everything_else_is_the_real_host_state(self):
        v = self.view
        self.assertEqual('h', v.host)
        self.assertIs(self.real.limits, v.limits)
        self.assertEqual(self.real.total_usable_ram_mb,
                         v.total_usable_ram_mb)
        v.allocation_candidates = ['x']                   # filters write
        self.assertEqual(['x'], self.real.allocation_candidates)
        self.assertNotIn('allocation_candidates', vars(v))

    def test_view_follows_what_the_real_state_consumes(self):
        self.real.vcpus_used += 4
        self.real.free_ram_mb -= 8000
        self.assertEqual(6, self.view.vcpus_used)
        self.assertEqual(4000, self.view.free_ram_mb)

    def test_never_below_zero_nor_above_the_total(self):
        # A preemptible instance the ComputeNode no longer counts.
        real = with_counts(plugins.host_state('h', []), 0, 0, 200 * 1024)
        request_view.current_view()._instances[('h', 'h')] = [
            inst('p', 'h', LARGE, True)]
        [v] = transparent.normal_views([real],
                                       plugins.request(MEDIUM, False))
        self.assertEqual(0, v.vcpus_used)
        self.assertEqual(16000, v.free_ram_mb)
        self.assertEqual(0, v.disk_mb_used)
        self.assertEqual(200 * 1024, v.free_disk_mb)
        self.assertEqual(0, v.num_instances)

    def test_only_hosts_with_preemptible_usage_are_loaded(self):
        h1 = plugins.host_state('h1', [inst('p', 'h1', LARGE, True)])
        h2 = plugins.host_state('h2', [inst('n', 'h2', LARGE, False)])
        h1.uuid, h2.uuid = 'rp1', 'rp2'
        self.use_hosts(h1, h2)
        view = request_view.current_view()
        view.summaries = {
            'rp1': {'resources': {'CUSTOM_PREEMPTIBLE_VCPU': {'used': 4}}},
            'rp2': {'resources': {'VCPU': {'used': 4},
                                  'CUSTOM_PREEMPTIBLE_VCPU': {'used': 0}}}}
        calls = []
        real_load = view.loaded_instances
        self.useFixture(fixtures.MonkeyPatch(
            'opie_sched.scheduler.request_view.RequestView.loaded_instances',
            lambda self_, hs, **kw: calls.append([h.host for h in hs]) or
            real_load(hs, **kw)))
        v1, v2 = transparent.normal_views([h1, h2],
                                          plugins.request(MEDIUM, False))
        self.assertEqual([['h1']], calls)
        self.assertEqual(0, v1.vcpus_used)
        self.assertEqual(transparent.NO_USAGE, v2.preemptible)
        self.assertEqual(4, v2.vcpus_used)

    def test_boot_from_volume_holds_no_root_disk(self):
        i = inst('p', 'h', LARGE, True)
        i.image_ref = ''
        self.assertEqual(0, transparent.instance_usage(i).disk_mb)


class SortedHostsTest(_Base):

    def setUp(self):
        super().setUp()
        # h1 full of preemptible instances, h2 half full of normal ones:
        # on the full state h2 has more free RAM, on the normal state h1.
        self.h1 = plugins.host_state('h1', [inst('p%d' % i, 'h1', LARGE,
                                                 True) for i in range(2)])
        self.h2 = plugins.host_state('h2', [inst('n1', 'h2', LARGE, False)])
        self.use_hosts(self.h1, self.h2)
        self.seen = []

    def sort(self, spec_obj, host_states, index):
        """Sort by nova's RAM weigher, as _get_sorted_hosts does."""
        host_states = list(host_states)
        self.seen.append(host_states)
        weighed = self.weigh([ram.RAMWeigher], host_states, spec_obj)
        by_name = {hs.host: hs for hs in host_states}
        return [by_name[name] for name, _ in weighed]

    def test_normal_request_weighed_on_the_normal_state(self):
        out = transparent.sorted_hosts(
            self.sort, plugins.request(MEDIUM, False),
            iter([self.h1, self.h2]), 0)
        self.assertEqual([self.h1, self.h2], out)          # real states
        self.assertTrue(all(isinstance(hs, transparent.NormalHostState)
                            for hs in self.seen[0]))

    def test_preemptible_request_keeps_the_full_state(self):
        out = transparent.sorted_hosts(
            self.sort, plugins.request(MEDIUM, True), [self.h1, self.h2], 0)
        self.assertEqual([self.h2, self.h1], out)
        self.assertEqual([self.h1, self.h2], self.seen[0])

    def test_option_off_keeps_the_full_state(self):
        self.transparent(False)
        out = transparent.sorted_hosts(
            self.sort, plugins.request(MEDIUM, False), [self.h1, self.h2], 0)
        self.assertEqual([self.h2, self.h1], out)
        self.assertEqual([self.h1, self.h2], self.seen[0])

    def test_database_error_falls_back_to_the_full_state(self):
        self.useFixture(fixtures.MockPatchObject(
            request_view.RequestView, 'loaded_instances',
            side_effect=RuntimeError('db gone')))
        logged = self.useFixture(fixtures.FakeLogger())
        out = transparent.sorted_hosts(
            self.sort, plugins.request(MEDIUM, False), [self.h1, self.h2], 0)
        self.assertEqual([self.h2, self.h1], out)
        self.assertIn('full state', logged.output)


class FullStateWeighersTest(_Base):

    def test_no_steering_on_normal_views(self):
        # A request that fits h2 but needs preemption on h1 (both states):
        # the full-state weighers would put h2 first.
        h1 = plugins.host_state('h1', [inst('n1', 'h1', LARGE, False),
                                       inst('p1', 'h1', LARGE, True)])
        h2 = plugins.host_state('h2', [])
        self.use_hosts(h1, h2)
        spec = plugins.request((6, 4000, 40), False)
        classes = [preemption_cost.PreemptionCostWeigher,
                   preemptible_count.PreemptibleCountWeigher]
        self.assertEqual('h2', self.weigh(classes, [h1, h2], spec)[0][0])
        views = transparent.normal_views([h1, h2], spec)
        weighed = self.weigh(classes, views, spec)
        self.assertEqual(1, len({w for _, w in weighed}), weighed)
        self.assertEqual(['h1', 'h2'], [h for h, _ in weighed])
