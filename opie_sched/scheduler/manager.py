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
  instances, victims reserved so far, the provider summaries);
* ``_consume_selected_host`` — runs right after the Placement claim of each
  instance; when the request is normal and the host holds preemptible
  instances, the host's lock is taken, its full state is read from
  Placement's allocations (every worker's claims) and victims are chosen
  and *reserved* (service-owned system metadata), so that every other
  worker and scheduler host counts them as leaving;
* ``_get_alternate_hosts`` — drops from a normal request's alternates the
  hosts whose full state has no room for it (the conductor claims an
  alternate without the scheduler, so nobody could choose victims there);
* ``_ensure_sufficient_hosts`` — runs once every instance is claimed; only
  when the whole request succeeded are the victims terminated (a failed
  request clears its reservations), and the request is held (up to
  ``[opie_preemption] release_timeout``) until they have released the host,
  so the normal server does not start on an overcommitted host.

Guarantees and limits are in the README ("What is guaranteed").
"""

import collections
import time

from oslo_log import log as logging
from oslo_service import periodic_task
from oslo_utils import timeutils

import nova.conf
from nova import context as nova_context
from nova.scheduler import manager as nova_manager
from nova.scheduler import utils as scheduler_utils

from opie_sched import conf as opie_conf
from opie_sched.preemption import planner
from opie_sched.scheduler import actions
from opie_sched.scheduler import hosts
from opie_sched.scheduler import locks
from opie_sched.scheduler import reconciler
from opie_sched.scheduler import reservations
from opie_sched.scheduler import weights

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF
opie_conf.register_opts(CONF)

_Pending = collections.namedtuple(
    'Pending', 'plan cell_uuid preemptor_uuid reasons')


def victim_reasons(plan, preemptor_uuid, request_id):
    """``{victim uuid: text}`` telling each owner why, with that victim's
    own cost.
    """
    return {inst.uuid: (
        'instance terminated by the scheduler on host %s to make room for '
        'instance %s (request %s); this victim\'s cost %g of a total %g'
        % (plan.host, preemptor_uuid, request_id, cost, plan.total_cost))
        for inst, cost in plan.victims}


class OpieSchedulerManager(nova_manager.SchedulerManager):
    """SchedulerManager with the preemption phase and the reconciler."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.reconciler = reconciler.Reconciler()
        self._opie_last_reconcile = None

    # -- the request wrapper ------------------------------------------------

    def _schedule(self, context, spec_obj, instance_uuids,
                  alloc_reqs_by_rp_uuid, provider_summaries,
                  allocation_request_version=None, return_alternates=False):
        view = hosts.RequestView(context.elevated())
        view.preempt = bool(
            CONF.opie_preemption.enabled
            and alloc_reqs_by_rp_uuid is not None
            and instance_uuids
            and not scheduler_utils.request_is_rebuild(spec_obj)
            and not hosts.request_is_preemptible(spec_obj))
        view.pending = []
        view.executed = False
        view.summaries = provider_summaries or {}
        view.request_id = context.request_id
        hosts.set_current_view(view)
        try:
            return super()._schedule(
                context, spec_obj, instance_uuids, alloc_reqs_by_rp_uuid,
                provider_summaries, allocation_request_version,
                return_alternates)
        finally:
            hosts.set_current_view(None)
            if view.pending and not view.executed:
                # the request failed after victims were reserved
                self._unreserve(view)

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

    # -- phase three: choose victims after each claim ----------------------

    def _consume_selected_host(self, selected_host, spec_obj,
                               instance_uuid=None):
        before = hosts.consumed_disk_gb(selected_host)
        super()._consume_selected_host(selected_host, spec_obj,
                                       instance_uuid=instance_uuid)
        hosts.note_consumed(selected_host, spec_obj, before)
        view = hosts.current_view()
        if view is None or not getattr(view, 'preempt', False):
            return
        self._renew_reservations(view)
        try:
            self._plan_victims(view, selected_host, instance_uuid)
        except Exception:
            LOG.exception('Preemption planning failed on host %s for '
                          'instance %s; the reconciler will repair the '
                          'host', selected_host.host, instance_uuid)

    def _plan_victims(self, view, host_state, instance_uuid):
        """Choose and reserve victims on the claimed host, under its lock,
        from Placement's allocations (every worker's claims).
        """
        rp_uuid = host_state.uuid
        summary = view.summaries.get(rp_uuid)
        capacity = reservations.summary_capacity(summary)
        if capacity is None:
            capacity, used = hosts.full_state(host_state)
            if (used - capacity).fits_in(planner.model.ZERO):
                return
        elif not reservations.summary_has_preemptible(summary):
            # No preemptible instance there when the candidates were
            # read: nothing to preempt (a preemptible claim racing in
            # since is the reconciler's).
            return
        # Every claim is in Placement before this read, so of several
        # workers claiming on one host, the one completing an overcommit
        # sees it here; nothing to do while the host is within capacity.
        used = reservations.provider_used(self.placement_client, view.ctx,
                                          rp_uuid)
        if (used - capacity).fits_in(planner.model.ZERO):
            return
        with locks.coordinator(CONF).lock(locks.host_lock_name(rp_uuid),
                                          locks.HOST_LOCK_TIMEOUT):
            now = timeutils.utcnow(with_timezone=True)
            hv, rows = reservations.fresh_host_view(
                view.ctx, self.placement_client, rp_uuid,
                host_state.cell_uuid, capacity,
                host_state.nodename or host_state.host,
                view.planned_victims, now)
            plan = planner.plan_host(hv, planner.model.ZERO,
                                     weights.cost_policy(), now)
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
                reservations.cell_context(view.ctx, host_state.cell_uuid),
                [rows[inst.uuid] for inst, _ in plan.victims],
                instance_uuid, view.request_id, reasons, now,
                worker=locks.coordinator(CONF).worker_id())
        if not view.pending:
            view.renewed_at = time.monotonic()
        view.planned_victims.update(reserved)
        view.pending.append(_Pending(plan, host_state.cell_uuid,
                                     instance_uuid, reasons))
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
        """Alternates of a normal request only include hosts whose full
        state has room for it: the cell conductor claims an alternate
        itself on a reschedule, without the scheduler, so no victims could
        be chosen there (a reschedule then fails like a stock one when no
        such host is left).
        """
        view = hosts.current_view()
        if num_alts and view is not None and getattr(view, 'preempt', False):
            try:
                request = hosts.request_resources(spec_obj)
                kept = []
                for hs in hosts_:
                    capacity, used = hosts.full_state(hs)
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
        # Raises NoValidHost when the request failed: nothing is preempted
        # and _schedule clears the reservations.
        super()._ensure_sufficient_hosts(context, hosts_, required_count,
                                         claimed_uuids)
        view = hosts.current_view()
        if view is None or not getattr(view, 'pending', None):
            return
        self._renew_reservations(view)
        view.executed = True
        try:
            self._execute(context, view.pending)
        except Exception:
            LOG.exception('Preemption failed; the reconciler will finish '
                          'terminating the reserved victims')

    def _execute(self, context, pending):
        ctx = nova_context.get_admin_context()
        ctx.request_id = context.request_id
        by_cell = collections.defaultdict(list)
        for item in pending:
            victims = [inst.uuid for inst, _ in item.plan.victims]
            done = actions.terminate(ctx, item.cell_uuid, victims,
                                     item.preemptor_uuid, item.reasons)
            actions.notify(ctx, item.plan, item.preemptor_uuid,
                           context.request_id, CONF.opie_preemption.action,
                           terminated=done)
            by_cell[item.cell_uuid].extend(victims)
        for cell_uuid, uuids in by_cell.items():
            if uuids and not actions.release(ctx, cell_uuid, uuids):
                LOG.warning(
                    'Victims %s did not release their host within '
                    'release_timeout (%s s): request %s proceeds on a host '
                    'whose full state may still be over capacity. The '
                    'reconciler keeps terminating them (they stay '
                    'reserved as terminating); check their compute '
                    'services.', sorted(uuids),
                    CONF.opie_preemption.release_timeout,
                    context.request_id)

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
