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
"""Deprecated: the RPM plugins are one module each under
:mod:`opie_sched.scheduler.filters` and :mod:`opie_sched.scheduler.weights`,
and the terms they share are in :mod:`opie_sched.scheduler.rpm_terms`. The
old paths (``opie_sched.scheduler.rpm_plugins.RPMWeigher``,
``...all_filters``, ...) still work, return what they returned, and
warn.
"""

from opie_sched.scheduler.filters import utilisation_cap
from opie_sched.scheduler import moved
from opie_sched.scheduler import rpm_terms
from opie_sched.scheduler.weights import rpm
from opie_sched.scheduler.weights import rpm_distance
from opie_sched.scheduler.weights import rpm_efficiency
from opie_sched.scheduler.weights import rpm_imbalance
from opie_sched.scheduler.weights import rpm_risk


def _all_filters():
    """The old ``rpm_plugins.all_filters()``: the utilisation cap filter."""
    return [utilisation_cap.UtilisationCapFilter]


def _all_weighers():
    """The old ``rpm_plugins.all_weighers()``: the five RPM weighers."""
    return [rpm.RPMWeigher, rpm_risk.RPMRiskWeigher,
            rpm_efficiency.RPMEfficiencyWeigher,
            rpm_imbalance.RPMImbalanceWeigher,
            rpm_distance.RPMDistanceWeigher]


__getattr__ = moved.module_getattr(__name__, {
    'RPMWeigher': rpm.RPMWeigher,
    'RPMRiskWeigher': rpm_risk.RPMRiskWeigher,
    'RPMEfficiencyWeigher': rpm_efficiency.RPMEfficiencyWeigher,
    'RPMImbalanceWeigher': rpm_imbalance.RPMImbalanceWeigher,
    'RPMDistanceWeigher': rpm_distance.RPMDistanceWeigher,
    'configured_lambdas': rpm.configured_lambdas,
    'UtilisationCapFilter': utilisation_cap.UtilisationCapFilter,
    'all_filters': moved.Moved(
        _all_filters, 'opie_sched.scheduler.filters.all_filters in '
        'available_filters'),
    'all_weighers': moved.Moved(
        _all_weighers, 'opie_sched.scheduler.weights.rpm.RPMWeigher, or '
        'the per-term weighers of opie_sched.scheduler.weights, by name in '
        'weight_classes'),
}, rest=rpm_terms)
