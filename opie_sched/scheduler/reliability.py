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
"""Deprecated: the Die-Hard plugins are
:class:`opie_sched.scheduler.filters.failure_domain.FailureDomainFilter` and
:class:`opie_sched.scheduler.weights.reliability.ReliabilityWeigher`, and
the request's plan is in :mod:`opie_sched.scheduler.reliability_plan`. The
old paths (``opie_sched.scheduler.reliability.all_filters``,
``...ReliabilityWeigher``, ...) still work, return what they returned,
and warn.
"""

from opie_sched.scheduler.filters import failure_domain
from opie_sched.scheduler import moved
from opie_sched.scheduler import reliability_plan
from opie_sched.scheduler.weights import reliability as weigher


def _all_filters():
    """The old ``reliability.all_filters()``: the failure-domain filter."""
    return [failure_domain.FailureDomainFilter]


def _all_weighers():
    """The old ``reliability.all_weighers()``: the reliability weigher."""
    return [weigher.ReliabilityWeigher]


__getattr__ = moved.module_getattr(__name__, {
    'FailureDomainFilter': failure_domain.FailureDomainFilter,
    'ReliabilityWeigher': weigher.ReliabilityWeigher,
    'all_filters': moved.Moved(
        _all_filters, 'opie_sched.scheduler.filters.all_filters in '
        'available_filters'),
    'all_weighers': moved.Moved(
        _all_weighers, 'opie_sched.scheduler.weights.reliability.'
        'ReliabilityWeigher in weight_classes'),
}, rest=reliability_plan)
