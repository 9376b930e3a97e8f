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
"""Helpers shared by the tests of this package."""

import datetime

from opie_sched.preemption import costs
from opie_sched.preemption import model


NOW = datetime.datetime(2026, 11, 22, 12, 0, tzinfo=datetime.timezone.utc)
MEDIUM = model.Resources(2, 4000, 40)


def inst(uuid, runtime, preemptible=True, res=MEDIUM, leaving=False):
    return model.InstanceInfo(
        uuid, model.Resources(*res), preemptible,
        NOW - datetime.timedelta(seconds=runtime), leaving=leaving)


def host(name, instances, capacity=(8, 16000, 200)):
    used = model.Resources.total(i.resources for i in instances)
    return model.HostView(name, model.Resources(*capacity), used,
                          list(instances))


POLICY = costs.CostPolicy([(costs.BillingPeriodCost(period=3600), 1.0)])
