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
"""``FailureDomainFilter``: a Die-Hard job's tasks go where its plan has
quota left, one task per host (thesis Paper VI).

The plan itself (the request's hints, the hosts' failure domains, the
per-cell quotas) is :mod:`opie_sched.scheduler.reliability_plan`; its
weigher is :mod:`opie_sched.scheduler.weights.reliability`. Enable it
*last* (the plan is made from the hosts that reach it for the first
instance)::

    [filter_scheduler]
    available_filters = nova.scheduler.filters.all_filters
    available_filters = opie_sched.scheduler.filters.all_filters
    enabled_filters = ...,FailureDomainFilter
"""

from oslo_log import log as logging

from nova.scheduler import filters

from opie_sched.scheduler import reliability_plan

LOG = logging.getLogger(__name__)


def _instance_uuid(spec_obj):
    if spec_obj.obj_attr_is_set('instance_uuid'):
        return spec_obj.instance_uuid
    return None


class FailureDomainFilter(filters.BaseHostFilter):
    """A reliability request's host must be in a cell with quota left and
    hold no task of the job yet (Paper VI: one task per machine, the
    planner's per-domain counts). Requests without ``opie_tasks`` pass.
    Invalid requests and errors reject every host (fail closed, logged).
    """

    RUN_ON_REBUILD = False

    def filter_all(self, filter_obj_list, spec_obj):
        host_states = list(filter_obj_list)
        try:
            plan = reliability_plan.request_plan(spec_obj, host_states)
            if plan is None:
                return host_states
            placed = plan.placed_hosts(spec_obj, host_states)
            left = plan.remaining(placed)
            passed = [hs for hs in host_states
                      if plan.allowed(hs.host, placed, left)]
        except reliability_plan.ReliabilityError as exc:
            LOG.error('Reliability request of instance %s rejected: %s',
                      _instance_uuid(spec_obj), exc)
            return []
        except Exception:
            LOG.exception('FailureDomainFilter failed; rejecting every host '
                          'for this reliability request')
            return []
        LOG.debug('FailureDomainFilter: placed %s, quota left %s',
                  sorted(placed), left)
        return passed

    def host_passes(self, host_state, spec_obj):
        return bool(self.filter_all([host_state], spec_obj))
