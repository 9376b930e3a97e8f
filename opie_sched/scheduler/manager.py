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
"""The opie scheduler manager: Nova's SchedulerManager plus the preemption
phase, in the same scheduling pass.

López García et al., "An efficient cloud scheduler design supporting
preemptible instances" (Future Generation Computer Systems, 2019; Alg. 2 and
6) add a third phase after filtering and weighing: on the chosen host,
select the preemptible instances to terminate. Current Nova has no pluggable
scheduler driver, so this subclass is run by the ``opie-scheduler`` console
script in place of ``nova-scheduler``.

This is the one module that touches private SchedulerManager methods:

* ``_schedule`` — wraps a request in a per-request view (bulk-loaded host
  instances, victims reserved so far, the provider summaries, its own
  claims) and the policy of what it may do (:func:`preemption_policy`:
  a new server and an unshelve may preempt, a move only as
  ``[opie_preemption] moves_preempt`` allows, a rebuild never);
* ``_get_sorted_hosts`` — a normal request is filtered and weighed on
  the normal state when ``[opie_preemption]
  transparent_normal_placement`` is on (:mod:`.transparent`);
* ``_consume_selected_host`` — runs right after the Placement claim of each
  instance, whatever the request's provider summary said (a preemptible
  claim may have landed since the candidates were read); when the host is
  over capacity after the claim and the request may preempt, the host's
  lock is taken, its full state is read from Placement's allocations
  (every worker's claims) and victims are chosen and *reserved*
  (service-owned system metadata), so that every other worker and
  scheduler host counts them as leaving; when it may not (preemptible
  requests, moves) the same usage check takes back a claim that left the
  host over capacity;
* ``_get_alternate_hosts`` — drops from a normal request's alternates the
  hosts whose full state has no room for it; the alternates returned are
  booked per instance, as the conductor claims an alternate on a
  reschedule without the scheduler;
* ``update_instance_info`` — a compute reports a server built on one of
  its booked alternates: that claim is checked then (victims chosen and
  terminated at once);
* ``_ensure_sufficient_hosts`` — runs once every instance is claimed; only
  when the whole request succeeded are the victims terminated (a failed
  request clears its reservations), and the request is held (up to
  ``[opie_preemption] release_timeout``, by at most ``max_release_waits``
  requests of the worker at once) until they have released the host, so
  the normal server does not start on an overcommitted host.

Guarantees and limits: the administrator guide, "What is guaranteed, and
its limits" (doc/source/admin/guarantees.rst).
"""

import collections
import threading
import time

from oslo_log import log as logging
from oslo_service import periodic_task
from oslo_utils import timeutils

import oslo_messaging as messaging

import nova.conf
from nova import context as nova_context
from nova import exception
from nova import objects
from nova.scheduler import manager as nova_manager

from opie_sched import conf as opie_conf
from opie_sched.conf import validation
from opie_sched.preemption import planner
from opie_sched.scheduler import actions
from opie_sched.scheduler import extra_specs
from opie_sched.scheduler import host_capacity
from opie_sched.scheduler import locks
from opie_sched.scheduler import operations
from opie_sched.scheduler import ownership
from opie_sched.scheduler import preemption_plans
from opie_sched.scheduler import reconciler
from opie_sched.scheduler import request_view
from opie_sched.scheduler import reservations
from opie_sched.scheduler import transparent
from opie_sched.scheduler import wakeup

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF
opie_conf.register_opts(CONF)

_Pending = collections.namedtuple(
    'Pending', 'plan cell_uuid preemptor_uuid')


def victim_reasons(plan, preemptor_uuid, request_id):
    """``{victim uuid: text}`` telling each owner why, with that victim's
    own cost.
    """
    return {inst.uuid: (
        'instance terminated by the scheduler on host %s to make room for '
        'instance %s (request %s); this victim\'s cost %g of a total %g'
        % (plan.host, preemptor_uuid, request_id, cost, plan.total_cost))
        for inst, cost in plan.victims}


class _WaitSlots:
    """A count of the requests of this worker waiting for their victims,
    bounded by ``[opie_preemption] max_release_waits``.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self.busy = 0

    def acquire(self, limit):
        """Take a slot; False when ``limit`` are taken (0: never)."""
        with self._lock:
            if self.busy >= limit:
                return False
            self.busy += 1
            return True

    def release(self):
        with self._lock:
            self.busy -= 1


#: What :class:`_AlternatesBook` keeps of one instance scheduled with
#: alternates: its chosen host, ``{service host: Selection}`` of its
#: alternates, whether the landed server itself is the one to go when an
#: alternate's claim overcommits (a preemptible new server), and when it
#: was scheduled (``time.monotonic()``).
_Booked = collections.namedtuple('Booked',
                                 'chosen alternates self_victim since')


class _AlternatesBook:
    """The alternates this worker returned, per instance, until the
    instance is reported built (``update_instance_info``) or the entry is
    older than :attr:`TTL` seconds; at most :attr:`SIZE` entries (the
    oldest go first). Worker-local: nova's compute casts its report to
    every scheduler worker (fanout), so the worker that scheduled the
    instance hears it.
    """

    #: seconds an entry is kept (a build that reports later is left to
    #: the reconciler)
    TTL = 3600.0
    #: entries kept at most
    SIZE = 10000

    def __init__(self, clock=time.monotonic):
        self._lock = threading.Lock()
        self._entries = collections.OrderedDict()
        self._clock = clock

    def add(self, instance_uuid, chosen, alternates, self_victim):
        with self._lock:
            self._entries.pop(instance_uuid, None)
            self._entries[instance_uuid] = _Booked(
                chosen, alternates, self_victim, self._clock())
            while len(self._entries) > self.SIZE:
                self._entries.popitem(last=False)

    def landed(self, instance_uuid, host):
        """The instance was reported on ``host``: its entry is dropped;
        ``(Selection of that alternate, self_victim)`` when ``host`` is
        one of its alternates (a reschedule claimed it), else None.
        """
        now = self._clock()
        with self._lock:
            while self._entries:
                first = next(iter(self._entries.values()))
                if now - first.since <= self.TTL:
                    break
                self._entries.popitem(last=False)
            booked = self._entries.get(instance_uuid)
            if booked is None or host == booked.chosen:
                self._entries.pop(instance_uuid, None)
                return None
            selection = booked.alternates.get(host)
            if selection is None:
                # another host (the source of a move): keep waiting
                return None
            del self._entries[instance_uuid]
            return selection, booked.self_victim


def preemption_policy(operation, preemptible):
    """The :class:`~opie_sched.scheduler.request_view.Decision` of a request.

    * A preemptible request never preempts; it must fit the full state,
      and a claim that leaves its host over capacity (a concurrent claim
      won the room) is taken back: the request fails with NoValidHost.
    * A rebuild never preempts (nova claims nothing for it: nova's
      ``_legacy_find_hosts``).
    * A new server and an unshelve may (``[opie_preemption] enabled``).
    * A move (cold or live migration, resize, evacuation) may only as
      ``[opie_preemption] moves_preempt`` allows; otherwise it is placed
      like a preemptible request (full state, claim checked). Victims are
      terminated inside ``select_destinations``, before the conductor
      checks the destination (``nova/conductor/tasks/live_migrate.py``
      ``_find_destination`` frees the claim and asks again, up to
      ``migrate_max_retries``, -1 = no limit, when a check fails; a
      resize that fails on its destination is rescheduled to an
      alternate by the compute), so a move that preempts can cost victims
      on hosts it never lands on.
    """
    opts = CONF.opie_preemption
    if preemptible:
        return request_view.Decision(operation, False, True, True)
    if operation == operations.REBUILD or not opts.enabled:
        return request_view.Decision(operation, False, False, False)
    if operation in operations.MOVES:
        mode = opts.moves_preempt
        allowed = (mode == 'all'
                   or (operation == operations.MIGRATION
                       and mode in ('resize', 'evacuate'))
                   or (operation == operations.EVACUATE
                       and mode == 'evacuate'))
        if not allowed:
            return request_view.Decision(operation, False, True, True)
    return request_view.Decision(operation, True, False, False)


class OpieSchedulerManager(nova_manager.SchedulerManager):
    """SchedulerManager with the preemption phase and the reconciler."""

    def __init__(self, *args, **kwargs):
        validation.validate(CONF)  # refuse to start: one line (issue 33)
        super().__init__(*args, **kwargs)
        self.reconciler = reconciler.Reconciler()
        self._opie_last_reconcile = None
        self._release_waits = _WaitSlots()
        self._alternates = _AlternatesBook()
        self._opie_wakeup = None

    # -- the wake-up listener (issue 31) ------------------------------------

    def post_start_hook(self):
        """Start this process's listener of Nova's notifications when
        ``[opie_preemption] release_notifications`` is on (each forked
        worker runs its own hooks, so each has one). Never raises: a
        listener that cannot start leaves the waits polling.
        """
        super().post_start_hook()
        if not CONF.opie_preemption.release_notifications:
            return
        try:
            self._opie_wakeup = wakeup.Listener(CONF)
            self._opie_wakeup.start()
        except Exception:
            LOG.exception('The wake-up listener failed; victims are polled')

    def _opie_stop_wakeup(self):
        listener, self._opie_wakeup = self._opie_wakeup, None
        if listener is not None:
            listener.stop()

    def graceful_shutdown(self, timeout):
        self._opie_stop_wakeup()
        super().graceful_shutdown(timeout)

    def cleanup_host(self):
        self._opie_stop_wakeup()
        super().cleanup_host()

    # -- the request wrapper ------------------------------------------------

    @messaging.expected_exceptions(exception.NoValidHost)
    def select_destinations(
            self, context, request_spec=None, filter_properties=None,
            spec_obj=nova_manager.SchedulerManager._sentinel,
            instance_uuids=None, return_objects=False,
            return_alternates=False):
        """nova's ``select_destinations``, a request that boots from a
        volume claiming no preemptible root disk.

        nova reads the resources to claim from the request spec
        (``resources_from_request_spec``) before any scheduler hook, and
        leaves the root disk out of ``DISK_GB`` for ``is_bfv``; a
        preemptible flavor asks for its disk in
        ``CUSTOM_PREEMPTIBLE_DISK_GB``, which that rule does not reach. For
        the whole pass (candidates, filters, weighers, claims, victims) the
        request's flavor is a copy with that amount lowered to ephemeral +
        swap (:func:`opie_sched.scheduler.ownership.volume_booted_flavor`),
        the request's own flavor put back afterwards (the copy is never
        saved: the conductor keeps its own request spec).
        """
        if spec_obj is self._sentinel:
            spec_obj = objects.RequestSpec.from_primitives(
                context, request_spec, filter_properties)
        own = None
        try:
            lowered = ownership.volume_booted_flavor(spec_obj)
        except Exception:
            LOG.exception('Could not read whether request %s boots from a '
                          'volume; its flavor is claimed as it is',
                          context.request_id)
            lowered = None
        if lowered is not None:
            own = spec_obj.flavor
            spec_obj.flavor = lowered
        try:
            return super().select_destinations(
                context, spec_obj=spec_obj, instance_uuids=instance_uuids,
                return_objects=return_objects,
                return_alternates=return_alternates)
        finally:
            if own is not None:
                spec_obj.flavor = own

    def _schedule(self, context, spec_obj, instance_uuids,
                  alloc_reqs_by_rp_uuid, provider_summaries,
                  allocation_request_version=None, return_alternates=False):
        extra_specs.refuse_invalid(spec_obj)  # any microversion (issue 33)
        view = request_view.RequestView(context.elevated(), provider_summaries)
        view.request_id = context.request_id
        view.set_policy(self._policy_for(view.ctx, spec_obj, instance_uuids,
                                         alloc_reqs_by_rp_uuid))
        request_view.set_current_view(view)
        try:
            selections = super()._schedule(
                context, spec_obj, instance_uuids, alloc_reqs_by_rp_uuid,
                provider_summaries, allocation_request_version,
                return_alternates)
            self._remember_alternates(view, spec_obj, instance_uuids,
                                      alloc_reqs_by_rp_uuid, selections)
            return selections
        finally:
            request_view.set_current_view(None)
            if view.pending and not view.executed:
                # the request failed after victims were reserved
                self._unreserve(view)

    @staticmethod
    def _policy_for(ctx, spec_obj, instance_uuids, alloc_reqs_by_rp_uuid):
        """The callable deciding, on first need, what the request may do
        (:func:`preemption_policy`; reading the operation costs a query).
        """
        preemptible = ownership.request_is_preemptible(spec_obj)

        def decide():
            if preemptible:
                operation = None
            elif not instance_uuids:
                # an old conductor: nothing is claimed for it
                operation = operations.REBUILD
            else:
                operation = operations.request_operation(
                    ctx, spec_obj, instance_uuids, alloc_reqs_by_rp_uuid)
            decision = preemption_policy(operation, preemptible)
            LOG.debug('Request %s (%s): %s', ctx.request_id, operation,
                      decision)
            return decision
        return decide

    def _unreserve(self, view):
        for item in view.pending:
            try:
                reservations.unreserve(
                    view.ctx, item.cell_uuid,
                    [inst.uuid for inst, _ in item.plan.victims])
            except Exception:
                LOG.exception('Could not clear reservations of %s; they '
                              'expire after reservation_timeout',
                              item.plan.host)

    def _get_sorted_hosts(self, spec_obj, host_states, index):
        # [opie_preemption] transparent_normal_placement (transparent.py)
        return transparent.sorted_hosts(super()._get_sorted_hosts,
                                        spec_obj, host_states, index)

    # -- after each claim: choose victims, or check the claim --------------

    def _consume_selected_host(self, selected_host, spec_obj,
                               instance_uuid=None):
        before = host_capacity.consumed_disk_gb(selected_host)
        super()._consume_selected_host(selected_host, spec_obj,
                                       instance_uuid=instance_uuid)
        host_capacity.note_consumed(selected_host, spec_obj, before)
        view = request_view.current_view()
        if view is None:
            return
        view.note_claim(selected_host.uuid,
                        ownership.request_resources(spec_obj))
        # Every claim is checked, whatever the provider summary said: a
        # host without preemptible usage when the candidates were read may
        # have taken a preemptible claim since, whose own check ran before
        # this claim existed (issue 30, hole 5). The lease of the
        # request's reservations is renewed at every claim.
        self._renew_reservations(view)
        try:
            decision = view.decision()
            if decision.preempt:
                self._plan_victims(view, selected_host, instance_uuid)
            elif decision.check_claim:
                self._check_claim(view, selected_host, instance_uuid)
        except Exception:
            LOG.exception('Preemption phase failed on host %s for '
                          'instance %s; the reconciler will repair the '
                          'host', selected_host.host, instance_uuid)

    def _capacity(self, view, host_state):
        """Full-state capacity of the claimed host (Placement's model):
        its provider summary's, else its inventories (one GET).
        """
        state = view.provider_state(host_state.uuid)
        if state is not None:
            return state[0]
        return reservations.provider_capacity(
            self.placement_client, view.ctx, host_state.uuid)

    def _check_claim(self, view, host_state, instance_uuid):
        """The usage check of a claim that may not preempt (a preemptible
        request, a move): when Placement's usage of the host, every
        worker's claims included, is over its capacity after this claim,
        the claim is taken back and the request fails with NoValidHost
        (see :meth:`_ensure_sufficient_hosts`). Under the host's lock, so
        that of two claims racing for the same room one keeps it.
        """
        rp_uuid = host_state.uuid
        client = self.placement_client
        capacity = self._capacity(view, host_state)
        used = reservations.provider_used(client, view.ctx, rp_uuid)
        if (used - capacity).fits_in(planner.model.ZERO):
            return
        with locks.coordinator(CONF).lock(locks.host_lock_name(rp_uuid),
                                          locks.HOST_LOCK_TIMEOUT):
            used = reservations.provider_used(client, view.ctx, rp_uuid)
            if (used - capacity).fits_in(planner.model.ZERO):
                return
            client.remove_provider_tree_from_instance_allocation(
                view.ctx, instance_uuid, rp_uuid)
        view.refused.append(instance_uuid)
        LOG.warning('Instance %s (%s) may not preempt and its claim left '
                    'host %s over capacity (used %s of %s: a concurrent '
                    'claim took the room); claim taken back, the request '
                    'fails', instance_uuid, view.decision().operation
                    or 'preemptible', host_state.host, tuple(used),
                    tuple(capacity))

    @staticmethod
    def _known_over(view, rp_uuid):
        """True when the provider summary nova fetched for this request,
        plus this request's own claims on the provider, is already over
        the provider's capacity.

        The usage the summary shows can only have grown since by other
        claims, or shrunk by deletions: when it is over, the host's lock
        is taken and its allocations read anyway (they decide; a host
        found within capacity under the lock gets no victims), so the
        pre-lock ``GET .../usages`` (one Placement round trip) would
        change nothing. When it is within capacity, that GET still
        decides whether a claim made since by another worker completed
        an overcommit.
        """
        state = view.provider_state(rp_uuid)
        if state is None:
            return False
        capacity, used = state
        return not (used - capacity).fits_in(planner.model.ZERO)

    def _plan_victims(self, view, host_state, instance_uuid):
        """Choose and reserve victims on the claimed host, under its lock,
        from Placement's allocations (every worker's claims).

        The lock is taken when the host is over capacity after the claim:
        as the request's provider summary plus its own claims shows it
        (:meth:`_known_over`), else as Placement's usages show it now.
        """
        rp_uuid = host_state.uuid
        # Without a usable summary (a provider without a standard class's
        # inventory), the worker's own HostState is never the judge: it
        # does not see other workers' claims. Placement's inventories and
        # usages below decide.
        # A summary without preemptible usage proves nothing about now: a
        # preemptible claim may have landed since (its own check ran
        # before this claim). The usages read below decides.
        capacity = self._capacity(view, host_state)
        if not self._known_over(view, rp_uuid):
            # Every claim is in Placement before this read, so of several
            # workers claiming on one host, the one completing an
            # overcommit sees it here; nothing to do while the host is
            # within capacity.
            used = reservations.provider_used(self.placement_client,
                                              view.ctx, rp_uuid)
            if (used - capacity).fits_in(planner.model.ZERO):
                return
        with locks.coordinator(CONF).lock(locks.host_lock_name(rp_uuid),
                                          locks.HOST_LOCK_TIMEOUT):
            now = timeutils.utcnow(with_timezone=True)
            # one context targeted at the host's cell for the reads and
            # the reservation under the lock
            cctxt = reservations.cell_context(view.ctx, host_state.cell_uuid)
            hv, rows = reservations.fresh_host_view(
                view.ctx, self.placement_client, rp_uuid,
                host_state.cell_uuid, capacity,
                host_state.nodename or host_state.host,
                view.planned_victims, now, cctxt=cctxt)
            plan = planner.plan_host(hv, planner.model.ZERO,
                                     preemption_plans.cost_policy(), now)
            if not plan.needs_preemption:
                return
            if not plan.feasible:
                LOG.warning('Instance %s was claimed on host %s whose full '
                            'state cannot be brought within capacity: %s. '
                            'The reconciler will repair what it can.',
                            instance_uuid, host_state.host, plan.reason)
                return
            reasons = victim_reasons(plan, instance_uuid, view.request_id)
            reserved = reservations.reserve(
                cctxt, [rows[inst.uuid] for inst, _ in plan.victims],
                instance_uuid, view.request_id, reasons, now,
                worker=locks.coordinator(CONF).worker_id())
        if not view.pending:
            view.renewed_at = time.monotonic()
        view.planned_victims.update(reserved)
        view.pending.append(_Pending(plan, host_state.cell_uuid,
                                     instance_uuid))
        LOG.info('Preemption decision for instance %s: %s', instance_uuid,
                 planner.describe_plan(plan))

    def _renew_reservations(self, view, force=False):
        """Renew the lease of this request's reservations once a third of
        ``reservation_timeout`` has passed since the last renewal (each
        instance of a multi-create passes here): they never expire while
        the request is alive. Errors are logged.
        """
        if not getattr(view, 'pending', None):
            return
        now = time.monotonic()
        lease = CONF.opie_preemption.reservation_timeout
        if not force and now - view.renewed_at < lease / 3.0:
            return
        view.renewed_at = now
        by_cell = collections.defaultdict(list)
        for item in view.pending:
            by_cell[item.cell_uuid].extend(
                inst.uuid for inst, _ in item.plan.victims)
        for cell_uuid, uuids in by_cell.items():
            try:
                reservations.renew(view.ctx, cell_uuid, uuids,
                                   view.request_id)
            except Exception:
                LOG.exception('Could not renew the reservations of %s',
                              sorted(uuids))

    # -- alternates: never a host that would need preemption ---------------

    def _get_alternate_hosts(self, selected_hosts, spec_obj, hosts_, index,
                             num_alts, alloc_reqs_by_rp_uuid=None,
                             allocation_request_version=None,
                             selected_alloc_reqs=None):
        """Alternates only include hosts whose full state has room for the
        request: the cell conductor claims an alternate itself on a
        reschedule, without the scheduler, so no victims could be chosen
        there and no claim checked (a reschedule then fails like a stock
        one when no such host is left). With ``[opie_preemption] enabled
        = False`` normal requests keep nova's alternates.
        """
        view = request_view.current_view()
        if num_alts and view is not None and (
                CONF.opie_preemption.enabled
                or ownership.request_is_preemptible(spec_obj)):
            try:
                request = ownership.request_resources(spec_obj)
                kept = []
                for hs in hosts_:
                    capacity, used = host_capacity.full_state(hs, view)
                    if hs in selected_hosts or request.fits_in(
                            capacity - used):
                        kept.append(hs)
                hosts_ = kept
            except Exception:
                LOG.exception('Could not check alternates; keeping nova\'s')
        return super()._get_alternate_hosts(
            selected_hosts, spec_obj, hosts_, index, num_alts,
            alloc_reqs_by_rp_uuid=alloc_reqs_by_rp_uuid,
            allocation_request_version=allocation_request_version,
            selected_alloc_reqs=selected_alloc_reqs)

    # -- after every instance is claimed: terminate and wait ---------------

    def _ensure_sufficient_hosts(self, context, hosts_, required_count,
                                 claimed_uuids=None):
        view = request_view.current_view()
        if view is not None and view.refused and claimed_uuids:
            # A claim taken back by _check_claim: the request fails (nova
            # removes the other claims and raises NoValidHost).
            kept = [(h, u) for h, u in zip(hosts_, claimed_uuids)
                    if u not in view.refused]
            hosts_ = [h for h, _ in kept]
            claimed_uuids = [u for _, u in kept]
        # Raises NoValidHost when the request failed: nothing is preempted
        # and _schedule clears the reservations.
        super()._ensure_sufficient_hosts(context, hosts_, required_count,
                                         claimed_uuids)
        if view is None or not view.pending:
            return
        self._renew_reservations(view)
        view.executed = True
        try:
            self._execute(context, view.pending)
        except Exception:
            LOG.exception('Preemption failed; the reconciler will finish '
                          'terminating the reserved victims')

    # -- alternates claimed by the conductor: checked when they land ------

    def _remember_alternates(self, view, spec_obj, instance_uuids,
                             alloc_reqs_by_rp_uuid, selections):
        """Book the alternates returned for each instance (see
        :meth:`update_instance_info`).
        """
        if not instance_uuids or not selections:
            return
        try:
            self_victim = False
            if any(len(sel) > 1 for sel in selections) and \
                    ownership.request_is_preemptible(spec_obj):
                # a preemptible new server that lands on a full alternate
                # is the one to go; a preemptible server moved by its
                # owner never is
                self_victim = operations.request_operation(
                    view.ctx, spec_obj, instance_uuids,
                    alloc_reqs_by_rp_uuid) == operations.BOOT
            for uuid, sel in zip(instance_uuids, selections):
                if len(sel) > 1:
                    self._alternates.add(
                        uuid, sel[0].service_host,
                        {alt.service_host: alt for alt in sel[1:]},
                        self_victim)
        except Exception:
            LOG.exception('Could not book the alternates of %s; a '
                          'reschedule to them is left to the reconciler',
                          instance_uuids)

    def update_instance_info(self, context, host_name, instance_info):
        """nova's compute reports instances it built or moved (a fanout
        cast to every scheduler worker, ``[filter_scheduler]
        track_instance_changes``); nova's host manager records them.

        An instance this worker scheduled with alternates, reported on one
        of its alternates, was rescheduled there: the cell conductor
        claimed that alternate itself, with no scheduler to check the
        claim (``nova/conductor/manager.py`` ``build_instances``,
        ``scheduler_utils.claim_resources``). The claim is checked now, as
        a claim of the scheduling pass is (:meth:`_check_landed`).
        """
        super().update_instance_info(context, host_name, instance_info)
        for inst in getattr(instance_info, 'objects', None) or ():
            try:
                landed = self._alternates.landed(inst.uuid, host_name)
                if landed is not None:
                    self._check_landed(context, inst.uuid, *landed)
            except Exception:
                LOG.exception('Could not check the claim of instance %s on '
                              'host %s; the reconciler will repair the '
                              'host', getattr(inst, 'uuid', None), host_name)

    def _check_landed(self, context, instance_uuid, selection, self_victim):
        """The post-claim check of an alternate claimed by the conductor:
        when Placement's usage of the provider, every claim included, is
        over its capacity, victims are chosen under the host's lock from
        Placement's allocations, as after a claim of the scheduling pass,
        and terminated at once (the server already runs: nobody waits).

        The landed server is never its own victim, except a preemptible
        new server (``self_victim``): its claim is the one that found the
        host full, so it alone goes, as a preemptible claim that leaves
        its host over capacity is taken back in the scheduling pass.
        """
        ctx = nova_context.get_admin_context()
        ctx.request_id = context.request_id
        client = self.placement_client
        rp_uuid = selection.compute_node_uuid
        cell_uuid = selection.cell_uuid
        capacity = reservations.provider_capacity(client, ctx, rp_uuid)
        used = reservations.provider_used(client, ctx, rp_uuid)
        if (used - capacity).fits_in(planner.model.ZERO):
            return
        with locks.coordinator(CONF).lock(locks.host_lock_name(rp_uuid),
                                          locks.HOST_LOCK_TIMEOUT):
            now = timeutils.utcnow(with_timezone=True)
            cctxt = reservations.cell_context(ctx, cell_uuid)
            hv, rows = reservations.fresh_host_view(
                ctx, client, rp_uuid, cell_uuid, capacity,
                selection.nodename or selection.service_host, (), now,
                cctxt=cctxt)
            hv.instances = [i for i in hv.instances
                            if (i.uuid == instance_uuid) == self_victim]
            plan = planner.plan_host(hv, planner.model.ZERO,
                                     preemption_plans.cost_policy(), now)
            if not plan.needs_preemption:
                return
            if not plan.feasible:
                LOG.warning('Instance %s was rescheduled to host %s whose '
                            'full state cannot be brought within capacity: '
                            '%s. The reconciler will repair what it can.',
                            instance_uuid, selection.service_host,
                            plan.reason)
                return
            if self_victim:
                reasons = {instance_uuid: (
                    'instance terminated by the scheduler: rescheduled to '
                    'host %s, its claim found the host full (request %s)'
                    % (plan.host, ctx.request_id))}
            else:
                reasons = victim_reasons(plan, instance_uuid,
                                         ctx.request_id)
            reservations.reserve(
                cctxt, [rows[inst.uuid] for inst, _ in plan.victims],
                instance_uuid, ctx.request_id, reasons, now,
                worker=locks.coordinator(CONF).worker_id())
        LOG.info('Preemption decision for instance %s, rescheduled to an '
                 'alternate whose claim left it over capacity: %s',
                 instance_uuid, planner.describe_plan(plan))
        try:
            self._terminate(ctx, [_Pending(plan, cell_uuid,
                                           instance_uuid)])
        except Exception:
            LOG.exception('Preemption failed; the reconciler will finish '
                          'terminating the reserved victims')

    def _execute(self, context, pending):
        ctx = nova_context.get_admin_context()
        ctx.request_id = context.request_id
        by_cell = self._terminate(ctx, pending)
        self._wait_for_release(ctx, context.request_id, by_cell)

    def _terminate(self, ctx, pending):
        """Terminate the reserved victims of ``pending``; returns
        ``{cell uuid: [victim uuids to wait for]}``.
        """
        by_cell = collections.defaultdict(list)
        # the guests' notice: every host of the request at once, one wait
        actions.notify_guests(ctx, [
            (item.cell_uuid, [inst.uuid for inst, _ in item.plan.victims],
             item.preemptor_uuid) for item in pending])
        for item in pending:
            victims = [inst.uuid for inst, _ in item.plan.victims]
            done = actions.terminate(ctx, item.cell_uuid, victims,
                                     item.preemptor_uuid, notice=False)
            actions.notify(ctx, item.plan, item.preemptor_uuid,
                           ctx.request_id, CONF.opie_preemption.action,
                           terminated=done)
            by_cell[item.cell_uuid].extend(
                self._release_unstarted(ctx, item.cell_uuid, victims, done))
        return by_cell

    @staticmethod
    def _release_unstarted(ctx, cell_uuid, victims, done):
        """The victims to wait for: a victim whose termination could not
        even start (its record is still ``reserved`` by this request, e.g.
        the database went away while it was written) is released at once,
        so the reconciler sees the host over capacity at its next round
        and chooses again, instead of its reservation pinning the host
        until ``reservation_timeout``; nobody waits for it.
        """
        left = [u for u in victims if u not in done]
        if not left:
            return victims
        try:
            cleared = set(reservations.unreserve(ctx, cell_uuid, left))
        except Exception:
            LOG.exception('Could not release the reservations of victims '
                          '%s; they expire after reservation_timeout', left)
            return victims
        if cleared:
            LOG.warning('Termination of victims %s could not start; their '
                        'reservations are released and the reconciler '
                        'repairs the host', sorted(cleared))
            # spared: a notice they were given no longer stands
            cctxt = reservations.cell_context(ctx, cell_uuid)
            for uuid in sorted(cleared):
                actions.withdraw_notice(cctxt, uuid)
        return [u for u in victims if u not in cleared]

    def _wait_for_release(self, ctx, request_id, by_cell):
        """Hold the request until its victims released their hosts, when
        one of the ``[opie_preemption] max_release_waits`` slots of this
        worker is free; otherwise return at once (see the option).
        """
        if not any(by_cell.values()):
            return
        opts = CONF.opie_preemption
        if not self._release_waits.acquire(opts.max_release_waits):
            LOG.warning(
                'Request %s does not wait for its victims %s: %d requests '
                'of this worker already wait (max_release_waits). Its '
                'server may start while they are still leaving; the '
                'reconciler finishes terminating them.', request_id,
                sorted(u for uuids in by_cell.values() for u in uuids),
                self._release_waits.busy)
            return
        start = time.monotonic()
        try:
            for cell_uuid, uuids in by_cell.items():
                if uuids and not actions.release(ctx, cell_uuid, uuids):
                    LOG.warning(
                        'Victims %s did not release their host within '
                        'release_timeout (%s s): request %s proceeds on a '
                        'host whose full state may still be over capacity. '
                        'The reconciler keeps terminating them (they stay '
                        'reserved as terminating); check their compute '
                        'services.', sorted(uuids), opts.release_timeout,
                        request_id)
        finally:
            self._release_waits.release()
            LOG.info('Request %s waited %.2f s for its victims to release '
                     'their hosts', request_id, time.monotonic() - start)

    # -- the reconciler ----------------------------------------------------

    def _opie_check_shared_backend(self):
        """ERROR in the log at every reconciler period while scheduler
        services of several hosts share the file driver's locks (the
        start refuses it, :mod:`opie_sched.cmd.scheduler`; this catches
        hosts started at the same time or afterwards).
        """
        try:
            others = locks.check_shared_backend(CONF)
        except locks.LockDirError as exc:
            LOG.error('%s', exc)
            return
        except Exception:
            LOG.exception('Could not check the scheduler hosts')
            return
        if others:
            LOG.error(locks.SHARED_FILE_LOCK_ERROR, ', '.join(others),
                      locks.default_url(CONF))

    @periodic_task.periodic_task(spacing=1, run_immediately=False)
    def _opie_reconcile(self, context):
        """Periodic repair of overcommitted hosts (``[opie_reconciler]``):
        every ``interval`` seconds, by the one worker of the cloud holding
        the reconciler lock.
        """
        opts = CONF.opie_reconciler
        if not opts.run_in_scheduler:
            return
        now = time.monotonic()
        if (self._opie_last_reconcile is not None
                and now - self._opie_last_reconcile < opts.interval):
            return
        self._opie_last_reconcile = now
        try:
            self._opie_check_shared_backend()
            if not locks.coordinator(CONF).hold(locks.RECONCILER_LOCK):
                LOG.debug('Another worker holds the reconciler lock')
                return
            self.reconciler.run_once(context,
                                     placement=self.placement_client)
        except Exception:
            LOG.exception('Reconciler run failed')
