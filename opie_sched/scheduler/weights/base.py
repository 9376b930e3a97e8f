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
"""Base classes of the weighers of :mod:`opie_sched.scheduler.weights`.

Abstract, so :func:`opie_sched.scheduler.weights.all_weighers` never
lists them; a weigher module subclasses one of them (or nova's
``BaseHostWeigher``).
"""

import abc

from oslo_log import log as logging

import nova.conf
from nova.scheduler import utils as scheduler_utils
from nova.scheduler import weights

from opie_sched.conf import rpm as rpm_opts
from opie_sched.scheduler import rpm_terms

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF
rpm_opts.register_opts(CONF)


class BulkWeigher(weights.BaseHostWeigher):
    """A weigher that computes every host's weight in one pass over the
    candidate list (one bulk read per request, never one per host), and
    never breaks scheduling: when :meth:`_weigh_all` raises, the error is
    logged and every host gets 0.0, so the weigher does not influence the
    order for that request.

    Subclasses implement :meth:`_weigh_all`.
    """

    #: True: :func:`opie_sched.scheduler.weights.all_weighers` leaves the
    #: class out and the operator names it in ``weight_classes``.
    OPT_IN = False

    @abc.abstractmethod
    def _weigh_all(self, host_states, spec_obj):
        """The weights of the candidate hosts.

        :param host_states: list of nova HostStates.
        :param spec_obj: the RequestSpec.
        :returns: list of floats, one per host, in ``host_states`` order.
        """

    def weigh_objects(self, weighed_obj_list, weight_properties):
        host_states = [w.obj for w in weighed_obj_list]
        try:
            result = self._weigh_all(host_states, weight_properties)
        except Exception:
            # Never break scheduling: every host gets the same weight, so
            # this weigher simply does not influence the order.
            LOG.exception('%s failed; ignoring it for this request',
                          type(self).__name__)
            result = [0.0] * len(host_states)
        return result

    def _weigh_object(self, host_state, weight_properties):
        return self._weigh_all([host_state], weight_properties)[0]


class RPMTermWeigher(weights.BaseHostWeigher):
    """An RPM weigher (thesis Paper IV): weight = −(normalised score in
    [0, 1], lower is better); nova maps it to ``1 − score`` with the fixed
    bounds below, so a weight keeps its meaning across requests. The terms
    of every candidate come from
    :func:`opie_sched.scheduler.rpm_terms.evaluate` (once per request for
    all RPM weighers). An error is logged and every host gets the same
    weight.

    Subclasses set :attr:`multiplier_option` and implement :meth:`_score`.
    """

    #: RPM weighers are named in ``weight_classes`` (the combined one or
    #: the per-term ones, not both): not in ``all_weighers()``.
    OPT_IN = True

    minval = -1.0
    maxval = 0.0
    #: option (and aggregate metadata key) of the multiplier
    multiplier_option = None

    @abc.abstractmethod
    def _score(self, host_terms):
        """Normalised score in [0, 1] of one host's
        :class:`~opie_sched.scheduler.rpm_terms.HostTerms`.
        """

    def weight_multiplier(self, host_state):
        return scheduler_utils.get_weight_multiplier(
            host_state, self.multiplier_option,
            getattr(CONF.opie_rpm, self.multiplier_option))

    def weigh_objects(self, weighed_obj_list, weight_properties):
        host_states = [w.obj for w in weighed_obj_list]
        try:
            terms = rpm_terms.evaluate(host_states, weight_properties)
            result = []
            for hs in host_states:
                value = -self._score(terms[(hs.host, hs.nodename)])
                result.append(min(self.maxval, max(self.minval, value)))
        except Exception:
            # Never break scheduling: the same weight everywhere.
            LOG.exception('%s failed; ignoring it for this request',
                          type(self).__name__)
            result = [self.maxval] * len(host_states)
        return result

    def _weigh_object(self, host_state, weight_properties):
        class _W(object):
            obj = host_state
        return self.weigh_objects([_W()], weight_properties)[0]
