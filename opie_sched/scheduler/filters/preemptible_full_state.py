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
"""``PreemptibleFullStateFilter``: a request that may not preempt must fit
the host's full state.

Enable in nova.conf::

    [filter_scheduler]
    available_filters = nova.scheduler.filters.all_filters
    available_filters = opie_sched.scheduler.filters.all_filters
    enabled_filters = ...,PreemptibleFullStateFilter
"""

from oslo_log import log as logging

import nova.conf
from nova.scheduler import filters

from opie_sched import conf as opie_conf
from opie_sched.scheduler import host_capacity
from opie_sched.scheduler import ownership
from opie_sched.scheduler import request_view

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF
opie_conf.register_opts(CONF)


class PreemptibleFullStateFilter(filters.BaseHostFilter):
    """A request that may not preempt must fit the host's full state.

    Full state = every allocation counted, normal and preemptible, against
    Placement's capacity, (total − reserved) × allocation ratio, of vCPU,
    RAM and disk (López García et al., §3: preemptible requests are
    filtered on the full state, so they never displace anything). The
    figures are the provider summaries nova fetched for the request plus
    its own claims so far
    (:func:`opie_sched.scheduler.host_capacity.full_state`): no database or
    HTTP call per host.

    Requests that may not preempt: preemptible ones, and under opie's
    scheduler manager the moves that ``[opie_preemption] moves_preempt``
    keeps from preempting (cold and live migrations, resizes,
    evacuations). A request that may preempt (a new normal server) passes
    a host whose full state has room once every candidate victim there is
    terminated (the ownership model, :mod:`opie_sched.scheduler.
    ownership`: a server pinned by its owner's move, e.g. the source
    allocation of an unconfirmed resize, still holds its room); the
    preemption phase makes that room.
    """

    RUN_ON_REBUILD = False

    def filter_all(self, filter_obj_list, spec_obj):
        """Nova's per-host filtering, after one bulk read of the instances
        of every candidate host whose full state the request does not fit
        (a request that may preempt asks, per such host, whether preemption
        can make its room: :meth:`_preemption_makes_room`). The read is one
        query per cell for all of them, never one per host.

        :param filter_obj_list: iterable of HostState.
        :returns: generator of the HostStates that pass.
        """
        host_states = list(filter_obj_list)
        try:
            self._load_needy(host_states, spec_obj)
        except Exception:
            # the per-host check reads what it still needs, or fails closed
            LOG.exception('PreemptibleFullStateFilter: the bulk read of '
                          'the candidate hosts failed')
        return super().filter_all(host_states, spec_obj)

    @staticmethod
    def _load_needy(host_states, spec_obj):
        view = request_view.current_view()
        if view is None or len(host_states) < 2:
            return
        preemptible, request = view.request_facts(spec_obj)
        if preemptible:
            return
        needy = []
        for hs in host_states:
            capacity, used = host_capacity.full_state(hs, view)
            if not request.fits_in(capacity - used):
                needy.append(hs)
        if needy and not view.decision().fit_full_state:
            view.host_views(needy, request=request)

    def host_passes(self, host_state, spec_obj):
        try:
            view = request_view.current_view()
            if view is None:
                preemptible = ownership.request_is_preemptible(spec_obj)
                if not preemptible:
                    return True
                request = ownership.request_resources(spec_obj)
            else:
                preemptible, request = view.request_facts(spec_obj)
            capacity, used = host_capacity.full_state(host_state, view)
            free = capacity - used
            if request.fits_in(free):
                return True
            if preemptible:
                what = 'preemptible request'
            else:
                # what the request is for is read (once) only now
                decision = view.decision()
                if not decision.fit_full_state:
                    if self._preemption_makes_room(view, host_state,
                                                   request):
                        return True
                    what = ('%s whose room preemption cannot make (the '
                            'preemptible servers there are pinned by '
                            'their owners\' moves, leaving or too small)'
                            % (decision.operation or 'normal request'))
                else:
                    what = '%s that may not preempt' % decision.operation
        except Exception:
            # A plugin error must never take the scheduler down; failing
            # closed keeps the request off a host we cannot judge.
            LOG.exception('PreemptibleFullStateFilter failed on host %s; '
                          'rejecting the host for this request',
                          getattr(host_state, 'host', '?'))
            return False
        LOG.debug('%(host)s rejected: %(what)s %(req)s does not fit the '
                  'full state (free %(free)s)',
                  {'host': host_state, 'what': what, 'req': tuple(request),
                   'free': tuple(free)})
        return False

    @staticmethod
    def _preemption_makes_room(view, host_state, request):
        """True when terminating every candidate victim of the host (the
        ownership model's: preemptible, neither leaving nor pinned by its
        owner's move) would make room for ``request`` in its full state.
        """
        key = (host_state.host, host_state.nodename)
        hv = view.host_views([host_state], request=request)[key]
        return request.fits_in(hv.reclaimable_free())
