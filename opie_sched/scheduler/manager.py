"""The opie scheduler manager: Nova's SchedulerManager plus the preemption
phase, in the same scheduling pass.

López García et al. (``seeds/preemptible-instances-scheduler.txt``, Alg. 2
and 6) add a third phase after filtering and weighing: on the chosen host,
select the preemptible instances to terminate. Current Nova has no pluggable
scheduler driver, so this subclass is run by the ``opie-scheduler`` console
script in place of ``nova-scheduler``.

This is the one module that touches private SchedulerManager methods:

* ``_schedule`` — wraps a request in a per-request view (bulk-loaded host
  instances, victims planned so far);
* ``_consume_selected_host`` — runs right after the Placement claim of each
  instance; when the request is normal and the host's full state is now over
  capacity, the victims are chosen here (not yet terminated);
* ``_ensure_sufficient_hosts`` — runs once every instance is claimed; only
  when the whole request succeeded are the victims terminated, and the
  request is held (up to ``[opie_preemption] release_timeout``) until they
  have released the host, so the normal server does not start on an
  overcommitted host.
"""

import collections
import threading

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
from opie_sched.scheduler import reconciler
from opie_sched.scheduler import weights

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF
opie_conf.register_opts(CONF)

_Pending = collections.namedtuple(
    'Pending', 'plan cell_uuid preemptor_uuid')


class OpieSchedulerManager(nova_manager.SchedulerManager):
    """SchedulerManager with the preemption phase and the reconciler."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # victims being terminated by any request of this process
        self._inflight = set()
        self._inflight_lock = threading.Lock()
        self.reconciler = reconciler.Reconciler()

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
        with self._inflight_lock:
            view.planned_victims |= self._inflight
        hosts.set_current_view(view)
        try:
            return super()._schedule(
                context, spec_obj, instance_uuids, alloc_reqs_by_rp_uuid,
                provider_summaries, allocation_request_version,
                return_alternates)
        finally:
            hosts.set_current_view(None)
            self._forget(view)

    def _forget(self, view):
        with self._inflight_lock:
            for pending in view.pending:
                self._inflight.difference_update(
                    inst.uuid for inst, _ in pending.plan.victims)

    # -- phase three: choose victims after each claim ----------------------

    def _consume_selected_host(self, selected_host, spec_obj,
                               instance_uuid=None):
        super()._consume_selected_host(selected_host, spec_obj,
                                       instance_uuid=instance_uuid)
        view = hosts.current_view()
        if view is None or not getattr(view, 'preempt', False):
            return
        try:
            self._plan_victims(view, selected_host, instance_uuid)
        except Exception:
            LOG.exception('Preemption planning failed on host %s for '
                          'instance %s; the reconciler will repair the '
                          'host', selected_host.host, instance_uuid)

    def _plan_victims(self, view, host_state, instance_uuid):
        with self._inflight_lock:
            inflight = set(self._inflight)
        # The claim was consumed into the host state: a host still within
        # capacity needs no victims, and its instances are not loaded.
        hv = view.host_views([host_state], leaving=inflight,
                             request=planner.model.ZERO)[
            (host_state.host, host_state.nodename)]
        now = timeutils.utcnow(with_timezone=True)
        plan = planner.plan_host(hv, planner.model.ZERO,
                                 weights.cost_policy(), now)
        if not plan.needs_preemption:
            return
        if not plan.feasible:
            LOG.warning('Instance %s was claimed on host %s whose full '
                        'state cannot be brought within capacity: %s. The '
                        'reconciler will repair what it can.',
                        instance_uuid, host_state.host, plan.reason)
            return
        uuids = [inst.uuid for inst, _ in plan.victims]
        view.planned_victims.update(uuids)
        with self._inflight_lock:
            self._inflight.update(uuids)
        view.pending.append(_Pending(plan, host_state.cell_uuid,
                                     instance_uuid))
        LOG.info('Preemption decision for instance %s: %s', instance_uuid,
                 planner.describe_plan(plan))

    # -- after every instance is claimed: terminate and wait ---------------

    def _ensure_sufficient_hosts(self, context, hosts_, required_count,
                                 claimed_uuids=None):
        # Raises NoValidHost when the request failed: nothing is preempted.
        super()._ensure_sufficient_hosts(context, hosts_, required_count,
                                         claimed_uuids)
        view = hosts.current_view()
        if view is None or not getattr(view, 'pending', None):
            return
        try:
            self._execute(context, view.pending)
        except Exception:
            LOG.exception('Preemption failed; the reconciler will repair '
                          'the hosts')

    def _execute(self, context, pending):
        ctx = nova_context.get_admin_context()
        ctx.request_id = context.request_id
        by_cell = collections.defaultdict(list)
        for item in pending:
            victims = [inst.uuid for inst, _ in item.plan.victims]
            reason = ('instance terminated by the scheduler on host %s to '
                      'make room for instance %s (request %s), victim cost '
                      '%g of a total %g' % (
                          item.plan.host, item.preemptor_uuid,
                          context.request_id,
                          dict((i.uuid, c) for i, c in
                               item.plan.victims).get(victims[0], 0),
                          item.plan.total_cost))
            done = actions.terminate(ctx, item.cell_uuid, victims,
                                     item.preemptor_uuid, reason)
            actions.notify(ctx, item.plan, item.preemptor_uuid,
                           context.request_id, CONF.opie_preemption.action)
            by_cell[item.cell_uuid].extend(done)
        for cell_uuid, uuids in by_cell.items():
            if uuids and not actions.release(ctx, cell_uuid, uuids):
                LOG.warning('Victims %s did not release their hosts within '
                            '%s s; letting the request proceed',
                            uuids, CONF.opie_preemption.release_timeout)

    # -- the reconciler ----------------------------------------------------

    @periodic_task.periodic_task(spacing=60, run_immediately=False)
    def _opie_reconcile(self, context):
        """Periodic repair of overcommitted hosts (``[opie_reconciler]``)."""
        opts = CONF.opie_reconciler
        if not opts.run_in_scheduler:
            return
        now = timeutils.utcnow()
        last = getattr(self, '_opie_last_reconcile', None)
        if last is not None and (now - last).total_seconds() < opts.interval:
            return
        self._opie_last_reconcile = now
        with self._inflight_lock:
            inflight = set(self._inflight)
        try:
            self.reconciler.run_once(context, skip=inflight)
        except Exception:
            LOG.exception('Reconciler run failed')
