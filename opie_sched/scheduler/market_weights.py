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
"""Deprecated: :class:`ProportionalShareWeigher` is now
:class:`opie_sched.scheduler.weights.proportional_share.
ProportionalShareWeigher`, and the bid helpers are in
:mod:`opie_sched.scheduler.bids`; the old paths still work and warn.
"""

from opie_sched.scheduler import bids
from opie_sched.scheduler import moved
from opie_sched.scheduler.weights import proportional_share

__getattr__ = moved.module_getattr(__name__, {
    'ProportionalShareWeigher':
        proportional_share.ProportionalShareWeigher,
}, rest=bids)
