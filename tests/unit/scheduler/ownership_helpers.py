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
"""Timestamps shared by the tests of ownership
(opie_sched.preemption.ownership, opie_sched.scheduler.ownership) and of
the reconciler."""

import datetime

from opie_sched.common import flavors


NOW = datetime.datetime(2026, 1, 1, 12, tzinfo=datetime.timezone.utc)
PRE = flavors.preemptible_extra_specs(2, 4000, 40)


def ago(seconds):
    return NOW - datetime.timedelta(seconds=seconds)
