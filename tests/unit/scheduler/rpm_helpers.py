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
"""Nova HostStates with utilisation metrics, shared by the tests of the
RPM and Die-Hard scheduler plugins and of the utilisation sources."""

import fixtures
import testtools

import nova.conf
from nova import objects
from nova.tests.unit.scheduler import fakes

from opie_sched.common import utilisation


objects.register_all()
CONF = nova.conf.CONF


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


HINTS = {'opie_tasks': ['2'], 'opie_target': ['0.999'], 'opie_hours': ['80']}
