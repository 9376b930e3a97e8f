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
"""``HeadroomFilter``: preemptible servers stay out of the headroom.

Enable it beside the full-state filter, before the filters that drop
hosts for other reasons (it sums a pool's free room over the hosts it is
given)::

    [filter_scheduler]
    available_filters = nova.scheduler.filters.all_filters
    available_filters = opie_sched.scheduler.filters.all_filters
    enabled_filters = HeadroomFilter,ComputeFilter,...,
                      PreemptibleFullStateFilter
"""

import collections
import threading

from oslo_log import log as logging

import nova.conf
from nova.scheduler import filters
from nova.scheduler import utils as scheduler_utils

from opie_sched import conf as opie_conf
from opie_sched.preemption import headroom as rules
from opie_sched.scheduler import host_capacity
from opie_sched.scheduler import ownership
from opie_sched.scheduler import request_view

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF
opie_conf.register_opts(CONF)

#: Pool key of the hosts in no aggregate (the Keeper's ``(no aggregate)``).
_NO_AGGREGATE = None

_warned = set()
_warned_lock = threading.Lock()


def _warn_once(name, problem):
    with _warned_lock:
        if (name, problem) in _warned:
            return
        _warned.add((name, problem))
    LOG.warning('HeadroomFilter: aggregate %s: metadata %s ignored (%s); '
                '[opie_preemption] headroom applies', name,
                rules.AGGREGATE_KEY, problem)


class HeadroomFilter(filters.BaseHostFilter):
    """A preemptible request may not bring its host's pool below the
    pool's headroom; a normal request always passes (it may use the
    headroom).

    Pools are formed as the reconciler's headroom step forms them
    (:func:`opie_sched.scheduler.headroom.pool_headrooms`): each host
    aggregate whose headroom is enabled (its ``opie_headroom`` metadata,
    else ``[opie_preemption] headroom``), and the hosts in no aggregate
    (the option). A host in several such aggregates must keep all of
    them; a host only in aggregates whose headroom is off is in no pool
    and passes.

    The rule (:func:`opie_sched.preemption.headroom.keeps_headroom`, in
    every form: amounts, a fraction, slots ``N x ...``): the host passes
    when the pool's free room after placing the request there is still at
    least the headroom, i.e. when the reconciler would take no victim for
    it. A pool already below its headroom takes no preemptible server.

    Free room: each host's full state, as the full-state filter reads it
    (:func:`opie_sched.scheduler.host_capacity.full_state`: the provider
    summary nova fetched for the request plus this request's own claims so far,
    so a multi-create counts its earlier servers), negatives as 0; summed
    once per pool per call (nova calls :meth:`filter_all` once per server
    of the request), then O(1) per host. No database or HTTP read.

    What it guarantees, and its limits (it is *advisory*: the reconciler's
    headroom step still restores the headroom whatever happened):

    * It sees only the hosts nova gives it: Placement's candidates for the
      request that passed the filters before it. A host not among them
      counts as having no free room (Placement did not offer it because it
      has no preemptible room left; list this filter first so the others
      drop nothing), and a fraction is of the capacity of the hosts it
      sees, so a fraction is smaller here than the reconciler's when
      hosts full of preemptible servers are left out: prefer amounts or
      slots with this filter.
    * Room held by victims under notice or already leaving is not counted
      as free (the reconciler counts it): while victims are noticed, a
      pool admits no preemptible server that only that room would leave
      at its headroom (at most ``headroom_notice_seconds``).
    * Several scheduler workers (or requests) read their summaries before
      one another's claims: two preemptible requests may each pass on the
      last room above the headroom, and both land. The reconciler's next
      round notices the excess, as without this filter.
    * Moves of a preemptible server (migration, resize, evacuation) are
      judged as its boot (the destination's room is taken while the
      source still holds its own); rebuilds are not filtered.

    An error here never takes the scheduler down and never fails a
    request: it is logged and every host passes (the filter only advises,
    the reconciler keeps the headroom).
    """

    RUN_ON_REBUILD = False

    def filter_all(self, filter_obj_list, spec_obj):
        """The hosts that pass, each pool's free room summed once.

        :param filter_obj_list: iterable of HostState.
        :returns: list of the HostStates that pass.
        """
        host_states = list(filter_obj_list)
        try:
            if scheduler_utils.request_is_rebuild(spec_obj):
                return host_states
            refused = self._refused(host_states, spec_obj)
        except Exception:
            LOG.exception('HeadroomFilter failed; every host passes for '
                          'this request (the reconciler keeps the '
                          'headroom)')
            return host_states
        if not refused:
            return host_states
        return [hs for i, hs in enumerate(host_states) if i not in refused]

    def host_passes(self, host_state, spec_obj):
        """One host, as its own pool's only host (nova calls
        :meth:`filter_all`, which sums the pool over every candidate).
        """
        return bool(self.filter_all([host_state], spec_obj))

    @staticmethod
    def _refused(host_states, spec_obj):
        """Indexes into ``host_states`` of the hosts a preemptible request
        may not use (an empty set for a normal request).
        """
        view = request_view.current_view()
        if view is not None:
            preemptible, request = view.request_facts(spec_obj)
        else:
            preemptible = ownership.request_is_preemptible(spec_obj)
            request = ownership.request_resources(spec_obj) if preemptible \
                else None
        if not preemptible or not host_states:
            return set()
        default = rules.parse_cached(CONF.opie_preemption.headroom)
        # pool key -> (name, Headroom, [host index])
        pools = {}
        member_of = collections.defaultdict(list)
        for i, hs in enumerate(host_states):
            aggs = getattr(hs, 'aggregates', None) or ()
            for agg in aggs:
                room, problem = rules.aggregate_headroom(agg.metadata,
                                                         default)
                if problem is not None:
                    _warn_once(agg.name, problem)
                if not room.enabled:
                    continue
                key = ('aggregate', agg.id)
                pools.setdefault(key, (agg.name, room, []))[2].append(i)
                member_of[i].append(key)
            if not aggs and default.enabled:
                pools.setdefault(_NO_AGGREGATE, (
                    '(no aggregate)', default, []))[2].append(i)
                member_of[i].append(_NO_AGGREGATE)
        if not pools:
            return set()
        frees = {}
        caps = {}
        for i in member_of:
            capacity, used = host_capacity.full_state(host_states[i], view)
            caps[i] = capacity
            frees[i] = capacity - used
        rooms = {key: rules.pool_room(room, [frees[i] for i in members],
                                      [caps[i] for i in members])
                 for key, (_, room, members) in pools.items()}
        refused = set()
        for i, keys in member_of.items():
            for key in keys:
                if not rules.keeps_headroom(rooms[key], frees[i], request):
                    refused.add(i)
                    LOG.debug('%(host)s rejected: preemptible request '
                              '%(req)s would bring pool %(pool)s below '
                              'its headroom %(room)s (free %(free)s)',
                              {'host': host_states[i],
                               'req': tuple(request),
                               'pool': pools[key][0],
                               'room': pools[key][1].text,
                               'free': tuple(rooms[key].free)})
                    break
        return refused
