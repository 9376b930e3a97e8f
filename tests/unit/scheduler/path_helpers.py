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
"""The filter and weigher classes and their old class paths, shared by the
tests of the plugin loader (loadables) and of the old paths (moved)."""

import warnings

from oslo_utils import importutils

from opie_sched.scheduler.filters import failure_domain
from opie_sched.scheduler.filters import headroom
from opie_sched.scheduler.filters import preemptible_full_state
from opie_sched.scheduler.filters import utilisation_cap
from opie_sched.scheduler.weights import preemptible_count
from opie_sched.scheduler.weights import preemption_cost
from opie_sched.scheduler.weights import proportional_share
from opie_sched.scheduler.weights import reliability
from opie_sched.scheduler.weights import rpm
from opie_sched.scheduler.weights import rpm_distance
from opie_sched.scheduler.weights import rpm_efficiency
from opie_sched.scheduler.weights import rpm_imbalance
from opie_sched.scheduler.weights import rpm_risk


FILTERS = {
    preemptible_full_state.PreemptibleFullStateFilter,
    headroom.HeadroomFilter,
    failure_domain.FailureDomainFilter,
    utilisation_cap.UtilisationCapFilter,
}
RPM_WEIGHERS = [rpm.RPMWeigher, rpm_risk.RPMRiskWeigher,
                rpm_efficiency.RPMEfficiencyWeigher,
                rpm_imbalance.RPMImbalanceWeigher,
                rpm_distance.RPMDistanceWeigher]


#: Every plugin class path of the releases before the packages -> the
#: class it names now.
OLD_CLASS_PATHS = {
    'opie_sched.scheduler.filters.PreemptibleFullStateFilter':
        preemptible_full_state.PreemptibleFullStateFilter,
    'opie_sched.scheduler.headroom_filter.HeadroomFilter':
        headroom.HeadroomFilter,
    'opie_sched.scheduler.rpm_plugins.UtilisationCapFilter':
        utilisation_cap.UtilisationCapFilter,
    'opie_sched.scheduler.reliability.FailureDomainFilter':
        failure_domain.FailureDomainFilter,
    'opie_sched.scheduler.weights.PreemptionCostWeigher':
        preemption_cost.PreemptionCostWeigher,
    'opie_sched.scheduler.weights.PreemptibleCountWeigher':
        preemptible_count.PreemptibleCountWeigher,
    'opie_sched.scheduler.market_weights.ProportionalShareWeigher':
        proportional_share.ProportionalShareWeigher,
    'opie_sched.scheduler.reliability.ReliabilityWeigher':
        reliability.ReliabilityWeigher,
    'opie_sched.scheduler.rpm_plugins.RPMWeigher': rpm.RPMWeigher,
    'opie_sched.scheduler.rpm_plugins.RPMRiskWeigher':
        rpm_risk.RPMRiskWeigher,
    'opie_sched.scheduler.rpm_plugins.RPMEfficiencyWeigher':
        rpm_efficiency.RPMEfficiencyWeigher,
    'opie_sched.scheduler.rpm_plugins.RPMImbalanceWeigher':
        rpm_imbalance.RPMImbalanceWeigher,
    'opie_sched.scheduler.rpm_plugins.RPMDistanceWeigher':
        rpm_distance.RPMDistanceWeigher,
}


def _load(path):
    """``(object, [DeprecationWarning messages])`` of a dotted path, read as
    nova reads a class path.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        obj = importutils.import_class(path)
    return obj, [str(w.message) for w in caught
                 if issubclass(w.category, DeprecationWarning)
                 and 'opie_sched' in str(w.message)]
