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
"""The per-request view: what one scheduling request has read and
decided, shared by every filter and weigher that handles it.

:class:`RequestView` holds the request's provider summaries and claims,
its instances (bulk loaded once, :mod:`opie_sched.scheduler.cell_reads`),
the host views of the preemption phase and the victims it planned;
:class:`Decision` what the request may do. :func:`current_view` is the
view of the request this thread (or green thread) is scheduling.
"""

import collections
import contextvars
import threading

from oslo_utils import timeutils

from nova import context as nova_context

from opie_sched.preemption import model
from opie_sched.scheduler import cell_reads
from opie_sched.scheduler import host_capacity
from opie_sched.scheduler import ownership

#: What the preemption phase may do for one request: ``operation``
#: (:func:`~opie_sched.scheduler.operations.request_operation`, or None when
#: not read), ``preempt`` (choose and terminate victims after each claim),
#: ``fit_full_state`` (hosts whose full state has no room for the request are
#: filtered out) and ``check_claim`` (after each claim, a host left over
#: capacity makes the request take its claim back and fail).
Decision = collections.namedtuple(
    'Decision', 'operation preempt fit_full_state check_claim')
#: A request nobody classified (no opie manager): nothing special.
NO_POLICY = Decision(None, False, False, False)


class RequestView:
    """Per-request cache of host instances and planned victims.

    One object lives for one scheduling request (one ``select_destinations``
    call, possibly a multi-create). Instances are loaded in bulk, as light rows
    (:class:`~opie_sched.scheduler.cell_reads.InstanceRow`), the first time a
    set of hosts is asked for; victims planned for earlier instances of the
    same request count as leaving for the later ones.
    """

    def __init__(self, ctx, summaries=None):
        self.ctx = ctx
        self._instances = {}
        # (host, node) whose instances were loaded
        self._loaded = set()
        # (host, node) whose loaded rows have their server metadata (only
        # the market's weigher reads it: the others load without)
        self._meta_loaded = set()
        # key -> [InstanceInfo], valid for the leaving set _infos_gone
        self._infos = {}
        self._infos_gone = None
        # key -> ((capacity, used, with instances), HostView), valid for
        # the leaving set _infos_gone and the instances loaded so far
        self._views = {}
        # rp uuid -> summary_state() of its summary (fixed per request)
        self._summary_states = {}
        self.planned_victims = set()
        self._lock = threading.Lock()
        #: ``{rp uuid: provider summary}`` nova fetched for the request
        self.summaries = summaries or {}
        #: ``{rp uuid: Resources}`` this request claimed on each provider
        self.claimed = {}
        #: victims reserved so far, one entry per claimed host
        self.pending = []
        #: True once the reserved victims were handed to termination
        self.executed = False
        #: instance uuids whose claim was taken back (see the manager)
        self.refused = []
        self.request_id = getattr(ctx, 'request_id', None)
        self._decide = None
        self._decision = None
        # (spec_obj, its flavor, (preemptible, Resources)) last asked for
        self._facts = None

    def set_policy(self, decide):
        """Give the view the callable that decides, on first need, what
        the request may do (returns a :class:`Decision`; it may read the
        database, so it runs at most once per request).
        """
        self._decide = decide
        self._decision = None

    def decision(self):
        """The request's :class:`Decision` (:data:`NO_POLICY` when no
        policy was set).
        """
        if self._decision is None:
            self._decision = (self._decide() if self._decide is not None
                              else NO_POLICY)
        return self._decision

    def decided(self):
        """The request's :class:`Decision` when :meth:`decision` already
        worked it out, else None (nothing is read).
        """
        return self._decision

    def request_facts(self, spec_obj):
        """``(preemptible, resources)`` of a RequestSpec
        (:func:`~opie_sched.scheduler.ownership.request_is_preemptible`,
        :func:`~opie_sched.scheduler.ownership.request_resources`), worked out
        once per spec and flavor object: a filter asks for every candidate
        host.
        """
        flavor = getattr(spec_obj, 'flavor', None)
        cached = self._facts
        if (cached is not None and cached[0] is spec_obj
                and cached[1] is flavor):
            return cached[2]
        facts = (ownership.request_is_preemptible(spec_obj),
                 ownership.request_resources(spec_obj))
        self._facts = (spec_obj, flavor, facts)
        return facts

    def provider_state(self, rp_uuid):
        """``(capacity, used)`` of a provider from its summary plus what
        this request claimed on it since (see
        :func:`~opie_sched.scheduler.host_capacity.summary_state`), or None
        without a usable summary.
        """
        try:
            state = self._summary_states[rp_uuid]
        except KeyError:
            state = host_capacity.summary_state(self.summaries.get(rp_uuid))
            self._summary_states[rp_uuid] = state
        if state is None:
            return None
        capacity, used = state
        return capacity, used + self.claimed.get(rp_uuid, model.ZERO)

    def note_claim(self, rp_uuid, resources):
        """Count a claim of this request
        (:class:`~opie_sched.preemption.model.Resources`) on a provider, which
        the provider summary does not show.
        """
        with self._lock:
            self.claimed[rp_uuid] = (
                self.claimed.get(rp_uuid, model.ZERO) + resources)

    def _ensure_loaded(self, host_states, server_metadata=False):
        missing = {}
        nodes = {}
        keys = set()
        for hs in host_states:
            key = (hs.host, hs.nodename)
            if key not in self._loaded:
                cell = getattr(hs, 'cell_uuid', None)
                missing.setdefault(cell, set()).add(hs.host)
                nodes.setdefault(cell, set()).add(hs.nodename)
                keys.add(key)
        if missing:
            loaded = cell_reads.load_instances(
                self.ctx, missing, nodes_by_cell=nodes,
                server_metadata=server_metadata)
            with self._lock:
                for key in keys:
                    self._instances[key] = loaded.get(key, [])
                self._loaded.update(keys)
                if server_metadata:
                    self._meta_loaded.update(keys)
                self._infos = {}
                self._views = {}
        if not server_metadata:
            return
        # rows loaded earlier without their server metadata
        unread = {}
        keys = set()
        for hs in host_states:
            key = (hs.host, hs.nodename)
            if key not in self._meta_loaded:
                keys.add(key)
                unread.setdefault(getattr(hs, 'cell_uuid', None), []).extend(
                    self._instances.get(key, []))
        if keys:
            cell_reads.load_server_metadata(self.ctx, unread)
            with self._lock:
                self._meta_loaded.update(keys)

    def loaded_instances(self, host_states, server_metadata=True):
        """``{(host, node): [InstanceRow]}`` for the given HostStates (bulk
        loaded once per request, see
        :func:`~opie_sched.scheduler.cell_reads.load_instances`).

        :param server_metadata: False when the caller does not read the
            rows' ``metadata`` (it may then be empty).
        """
        host_states = list(host_states)
        self._ensure_loaded(host_states, server_metadata)
        return {(hs.host, hs.nodename):
                self._instances.get((hs.host, hs.nodename), [])
                for hs in host_states}

    def host_views(self, host_states, leaving=(), request=None):
        """``{(host, node): HostView}`` for the given HostStates.

        :param leaving: extra instance uuids to treat as leaving (victims
            already being terminated by another request).
        :param request: :class:`~opie_sched.preemption.model.Resources` to
            be placed, or None. When given, the instances of hosts whose
            full state already fits it are not loaded (their views have no
            instances: nothing there needs to be preempted), which spares
            the bulk load on a cloud with free room.

        The views are built once per request and shared by every filter
        and weigher that asks (they must not be modified): a host's view
        is built again only when what it is made of changed since, i.e.
        its full state (a claim of this request on the host,
        :meth:`note_claim`, or nova's ``consume_from_request`` on its
        HostState), whether its instances are needed, the leaving set
        (victims planned by this request, ``leaving``) or the instances
        loaded. Each host's
        :class:`~opie_sched.preemption.model.InstanceInfo` are likewise
        built once per leaving set.
        """
        states = []
        needy = []
        view = self.view_of
        for hs in host_states:
            capacity, used = host_capacity.full_state(hs, self)
            fits = request is not None and (
                request[0] <= capacity[0] - used[0]
                and request[1] <= capacity[1] - used[1]
                and request[2] <= capacity[2] - used[2])
            states.append(((hs.host, hs.nodename), hs, capacity, used,
                           not fits))
            if not fits:
                needy.append(hs)
        if needy:
            self._ensure_loaded(needy)
        gone = set(leaving) | self.planned_victims
        now = timeutils.utcnow(with_timezone=True)
        with self._lock:
            if gone != self._infos_gone:
                self._infos = {}
                self._views = {}
                self._infos_gone = gone
            cache = self._infos
            built = self._views
        facts = {}
        return {key: view(key, hs, capacity, used, need, cache, built,
                          gone, now, facts)
                for key, hs, capacity, used, need in states}

    def view_of(self, key, hs, capacity, used, need, cache, built, gone,
                now, facts=None):
        """One host's :class:`~opie_sched.preemption.model.HostView`,
        from ``built`` when it was made of the same full state and
        instances (see :meth:`host_views`), else built and kept there.

        :param facts: a dict shared by the hosts of one call: what a
            flavor object holds on a host (its resources, with or without
            the root disk) and whether it is preemptible, worked out once
            per flavor object (the rows of one bulk read share the flavor
            objects of one serialized flavor) and boot-from-volume flag.
        """
        stamp = (capacity, used, need)
        entry = built.get(key)
        if entry is not None and entry[0] == stamp:
            return entry[1]
        infos = ()
        if need:
            infos = cache.get(key)
            if infos is None:
                if facts is None:
                    facts = {}
                infos = []
                for i in self._instances.get(key, []):
                    flavor = i.flavor
                    bfv = ownership.instance_boots_from_volume(i)
                    # an entry holds its flavor object: that id() is not
                    # reused while the entry lives
                    known = facts.get((id(flavor), bfv))
                    if known is None or known[0] is not flavor:
                        known = (flavor,
                                 ownership.flavor_resources(flavor, bfv),
                                 ownership.flavor_is_preemptible(flavor))
                        facts[(id(flavor), bfv)] = known
                    infos.append(ownership.instance_info(
                        i, gone, now, resources=known[1],
                        preemptible=known[2]))
                cache[key] = infos
        hv = model.HostView(name=hs.nodename or hs.host, capacity=capacity,
                            used=used, instances=list(infos))
        built[key] = (stamp, hv)
        return hv

    def instance(self, host, node, uuid):
        """The loaded row with that uuid on (host, node), or None."""
        for inst in self._instances.get((host, node), []):
            if inst.uuid == uuid:
                return inst
        return None


#: The request being scheduled by this thread (or green thread). A
#: context variable, not a ``threading.local``: a ``threading.local``
#: created before eventlet's monkey-patching (opie imported first, as
#: nova's test fixtures and the embedded demo cloud may do) is one per OS
#: thread, so the green threads of concurrent requests would share it;
#: every native thread and every greenlet (greenlet >= 1.0) has a context
#: of its own, whatever the import order.
_current = contextvars.ContextVar('opie_sched_request_view', default=None)


def current_view():
    """The :class:`RequestView` of the request this thread (or green
    thread) is scheduling, when opie-scheduler runs it; None otherwise.
    """
    return _current.get()


def set_current_view(view):
    """Make ``view`` the current thread's (or green thread's) request
    view (None: no request).
    """
    _current.set(view)


def view_for(spec_obj):
    """The current request's view, or a fresh one for this call only."""
    view = current_view()
    if view is None:
        ctx = getattr(spec_obj, '_context', None) or \
            nova_context.get_admin_context()
        view = RequestView(ctx.elevated() if not ctx.is_admin else ctx)
    return view
