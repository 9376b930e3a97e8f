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
"""Nova HostStates of preemptible and normal instances and the
_PluginTest base (filters and weighers run on them), shared by the tests
of the scheduler's preemption plugins."""

import datetime

import fixtures
import testtools

from nova import objects
from nova.scheduler import weights as nova_weights
from nova.tests.unit.scheduler import fakes

from opie_sched.common import flavors
from opie_sched.scheduler import request_view


objects.register_all()

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0)
MEDIUM = (2, 4000, 40)
LARGE = (4, 8000, 80)


def flavor(size, preemptible):
    vcpus, ram, disk = size
    specs = (flavors.preemptible_extra_specs(vcpus, ram, disk)
             if preemptible else {})
    return objects.Flavor(vcpus=vcpus, memory_mb=ram, root_gb=disk,
                          ephemeral_gb=0, swap=0, extra_specs=specs)


def instance(uuid, host, size, preemptible, runtime=0):
    return objects.Instance(
        uuid=uuid, host=host, node=host, flavor=flavor(size, preemptible),
        launched_at=NOW - datetime.timedelta(seconds=runtime),
        metadata={}, task_state=None, vm_state='active',
        display_name=uuid, project_id='p')


def host_state(name, instances, vcpus=8, ram=16000, disk=200, ratio=1.0):
    used = [sum(getattr(i.flavor, attr) for i in instances)
            for attr in ('vcpus', 'memory_mb', 'root_gb')]
    return fakes.FakeHostState(name, name, {
        'vcpus_total': vcpus, 'vcpus_used': used[0],
        'total_usable_ram_mb': ram, 'free_ram_mb': ram - used[1],
        'total_usable_disk_gb': disk, 'disk_mb_used': used[2] * 1024,
        'free_disk_mb': 0,  # nova's disk_available_least: ignored
        'cpu_allocation_ratio': ratio, 'ram_allocation_ratio': 1.0,
        'disk_allocation_ratio': 1.0}, instances=instances)


def request(size, preemptible):
    return objects.RequestSpec(flavor=flavor(size, preemptible),
                               num_instances=1)


class _PluginTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MockPatch(
            'oslo_utils.timeutils.utcnow',
            side_effect=lambda with_timezone=False: NOW.replace(
                tzinfo=datetime.timezone.utc) if with_timezone else NOW))
        self.addCleanup(request_view.set_current_view, None)

    def use_hosts(self, *host_states):
        """Make the request's view know the hosts' instances (what
        opie-scheduler bulk-loads once per request).
        """
        view = request_view.RequestView(ctx=None)
        for hs in host_states:
            view._instances[(hs.host, hs.nodename)] = list(
                hs.instances.values())
            view._loaded.add((hs.host, hs.nodename))
            view._meta_loaded.add((hs.host, hs.nodename))
        request_view.set_current_view(view)
        return list(host_states)

    def weigh(self, classes, host_states, spec):
        """``[(host, weight)]`` as nova's weight handler orders them."""
        weighed = nova_weights.HostWeightHandler().get_weighed_objects(
            [cls() for cls in classes], host_states, spec)
        return [(w.obj.host, round(w.weight, 6)) for w in weighed]
