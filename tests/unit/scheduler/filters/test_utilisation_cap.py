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
"""Tests of the utilisation cap filter
(opie_sched.scheduler.filters.utilisation_cap)."""

from opie_sched.scheduler.filters import utilisation_cap

from tests.unit.scheduler.rpm_helpers import _NovaTest
from tests.unit.scheduler.rpm_helpers import host_state
from tests.unit.scheduler.rpm_helpers import request


class UtilisationCapFilterTest(_NovaTest):

    def test_cap(self):
        filt = utilisation_cap.UtilisationCapFilter()
        self.assertTrue(filt.host_passes(host_state('h', 4, 8000),
                                         request(2, 4000)))     # 75 %
        self.assertTrue(filt.host_passes(host_state('h', 5, 8000),
                                         request(2, 4000)))     # 87.5 %
        self.assertFalse(filt.host_passes(host_state('h', 6, 8000),
                                          request(2, 4000)))    # CPU 100 %
        self.assertFalse(filt.host_passes(host_state('h', 0, 12000),
                                          request(2, 4000)))    # RAM 100 %
        self.flags('opie_rpm', alpha=0.75)
        self.assertFalse(filt.host_passes(host_state('h', 5, 8000),
                                          request(2, 4000)))

    def test_error_fails_closed(self):
        hs = host_state('h')
        hs.total_usable_ram_mb = None
        self.assertFalse(utilisation_cap.UtilisationCapFilter().host_passes(
            hs, request()))
