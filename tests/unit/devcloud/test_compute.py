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
"""Tests of the devcloud compute sizes (opie_sched.devcloud.compute)."""

import testtools

from opie_sched.devcloud import compute


class TestComputeSizes(testtools.TestCase):

    def test_sizes_from_environment(self):
        class Driver:
            vcpus, memory_mb, local_gb = 1, 2, 3
        compute.size_fake_driver(Driver, {'OPIE_DEVCLOUD_VCPUS': '8',
                                          'OPIE_DEVCLOUD_DISK_GB': '200'})
        self.assertEqual((8, 2, 200),
                         (Driver.vcpus, Driver.memory_mb, Driver.local_gb))
        self.assertRaises(ValueError, compute.size_fake_driver, Driver,
                          {'OPIE_DEVCLOUD_RAM_MB': '0'})
