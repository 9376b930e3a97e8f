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
"""Deprecated: :class:`HeadroomFilter` is now
:class:`opie_sched.scheduler.filters.headroom.HeadroomFilter` (found by
``opie_sched.scheduler.filters.all_filters``); the old path still works
and warns.
"""

from opie_sched.scheduler.filters import headroom
from opie_sched.scheduler import moved

__getattr__ = moved.module_getattr(__name__, {
    'HeadroomFilter': headroom.HeadroomFilter,
})
