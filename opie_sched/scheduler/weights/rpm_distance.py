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
"""``RPMDistanceWeigher``: hosts near the reference hosts first (thesis
Paper IV, §4.3.1).

One of the RPM per-term weighers (:mod:`opie_sched.scheduler.rpm_terms`
computes the terms once per request for all of them). Not in
:func:`opie_sched.scheduler.weights.all_weighers`: name it in
``weight_classes``, beside the other per-term weighers or instead of the
combined :class:`opie_sched.scheduler.weights.rpm.RPMWeigher` (both count
the terms twice)::

    [filter_scheduler]
    weight_classes = ...,
        opie_sched.scheduler.weights.rpm_distance.RPMDistanceWeigher
"""

from opie_sched.scheduler.weights import base


class RPMDistanceWeigher(base.RPMTermWeigher):
    """Hosts near the reference hosts first: Dist of Paper IV §4.3.1
    (1 same group, 2 same cluster, 3 elsewhere or unknown), divided by 3;
    neutral (0) without reference hosts.
    """

    multiplier_option = 'rpm_distance_weight_multiplier'

    def _score(self, host_terms):
        return host_terms.terms.distance
