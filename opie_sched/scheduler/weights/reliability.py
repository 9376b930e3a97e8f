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
"""``ReliabilityWeigher``: a Die-Hard job's next task goes to the failure
domain its plan wants next (thesis Paper VI).

The plan is :mod:`opie_sched.scheduler.reliability_plan`; its filter is
:mod:`opie_sched.scheduler.filters.failure_domain`. Not in
:func:`opie_sched.scheduler.weights.all_weighers` (it is named with the
filter)::

    [filter_scheduler]
    weight_classes = ...,
        opie_sched.scheduler.weights.reliability.ReliabilityWeigher
"""

from oslo_log import log as logging

import nova.conf
from nova.scheduler import utils as scheduler_utils
from nova.scheduler import weights

from opie_sched.conf import rpm as rpm_opts
from opie_sched.scheduler import reliability_plan

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF
rpm_opts.register_opts(CONF)


class ReliabilityWeigher(weights.BaseHostWeigher):
    """Hosts of the cell the plan wants next first: weight = quota left in
    the host's cell / the largest quota left (1 for the emptiest cell
    relative to its plan, 0 outside the plan). 0 everywhere for requests
    without a reliability constraint, and on errors.
    """

    minval = 0.0
    maxval = 1.0
    #: named in ``weight_classes`` with the FailureDomainFilter.
    OPT_IN = True

    def weight_multiplier(self, host_state):
        return scheduler_utils.get_weight_multiplier(
            host_state, 'reliability_weight_multiplier',
            CONF.opie_reliability.reliability_weight_multiplier)

    def weigh_objects(self, weighed_obj_list, weight_properties):
        host_states = [w.obj for w in weighed_obj_list]
        try:
            plan = reliability_plan.request_plan(weight_properties,
                                                 host_states)
            if plan is None:
                return [0.0] * len(host_states)
            placed = plan.placed_hosts(weight_properties, host_states)
            left = plan.remaining(placed)
            top = max(list(left.values()) + [0])
            result = []
            for hs in host_states:
                cell = plan.cell_of.get(hs.host)
                if top <= 0 or not plan.allowed(hs.host, placed, left):
                    result.append(0.0)
                else:
                    result.append(left[cell] / float(top))
            return result
        except reliability_plan.ReliabilityError:
            return [0.0] * len(host_states)  # the filter logs why
        except Exception:
            LOG.exception('ReliabilityWeigher failed; ignoring it for this '
                          'request')
            return [0.0] * len(host_states)

    def _weigh_object(self, host_state, weight_properties):
        class _W(object):
            obj = host_state
        return self.weigh_objects([_W()], weight_properties)[0]
