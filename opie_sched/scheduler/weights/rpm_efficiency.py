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
"""``RPMEfficiencyWeigher``: hosts ending closest to the target utilisation
first (thesis Paper IV, eq. 10-11).

One of the RPM per-term weighers (:mod:`opie_sched.scheduler.rpm_terms`
computes the terms once per request for all of them). Not in
:func:`opie_sched.scheduler.weights.all_weighers`: name it in
``weight_classes``, beside the other per-term weighers or instead of the
combined :class:`opie_sched.scheduler.weights.rpm.RPMWeigher` (both count
the terms twice)::

    [filter_scheduler]
    weight_classes = ...,
        opie_sched.scheduler.weights.rpm_efficiency.RPMEfficiencyWeigher
"""

from opie_sched.scheduler.weights import base


class RPMEfficiencyWeigher(base.RPMTermWeigher):
    """Hosts ending closest to the target utilisation first: E of Paper IV
    eq. 10-11 (``[opie_rpm] efficiency_formula``), normalised by its
    bounds.
    """

    multiplier_option = 'rpm_efficiency_weight_multiplier'

    def _score(self, host_terms):
        return host_terms.terms.efficiency
