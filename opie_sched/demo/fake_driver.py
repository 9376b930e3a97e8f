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
"""Fake compute hosts sized like the hosts of the preemptible-instances paper.

López García et al. evaluate on hosts with 8 CPUs and the flavors small
(1 vCPU, 2000 MB, 20 GB), medium (2, 4000, 40) and large (4, 8000, 80).

Nova 34 loads a virt driver only from the ``nova.virt`` package
(``compute_driver = fake.FakeDriver``), so an out-of-tree driver class cannot
be named in nova.conf. The demo and the functional tests therefore run
nova's own ``fake.FakeDriver`` and give it the paper's capacity (8 vCPU,
16000 MB of RAM, 200 GB of disk by default) for as long as the fixture is in
use; nothing runs on the hosts.
"""

import fixtures

from nova.virt import fake

#: nova.conf ``compute_driver`` value.
COMPUTE_DRIVER = 'fake.FakeDriver'


class SizedFakeHosts(fixtures.Fixture):
    """Give every ``fake.FakeDriver`` host the given capacity.

    :param vcpus: vCPUs per host.
    :param memory_mb: RAM per host, MB.
    :param disk_gb: local disk per host, GB.
    """

    def __init__(self, vcpus, memory_mb, disk_gb):
        super().__init__()
        self.sizes = {'vcpus': vcpus, 'memory_mb': memory_mb,
                      'local_gb': disk_gb}

    def _setUp(self):
        for attr, value in self.sizes.items():
            self.useFixture(fixtures.MockPatchObject(
                fake.FakeDriver, attr, value))
