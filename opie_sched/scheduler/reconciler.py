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
"""The reconciler: finish what the scheduler started, restore full state <=
capacity on every host, and end preemptible servers past their lifetime.

The scheduler cannot catch everything: it may die after reserving victims or
between stopping and deleting them, a victim's delete may fail (compute
service down), two preemptible requests may race past the full-state
filter, and normal instances arrive by migration, evacuation or a forced
host. Each round, per cell:

1. reservations older than ``[opie_preemption] reservation_timeout`` (left
   by a worker that died or hung before its request finished) are cleared,
   and so are, at once, those of a worker known dead (its liveness lock,
   :mod:`opie_sched.scheduler.locks`, is free);
2. victims whose termination did not complete are terminated again once
   their backoff has passed (``retry_interval`` doubling up to
   ``max_retry_interval``; after ``max_attempts`` every further failure
   also records an instance fault and an ERROR log line), including a
   victim whose compute accepted the delete and never finished it (task
   state ``deleting`` counts as leaving only until the record's
   ``next_attempt``);
3. compute nodes whose ComputeNode record is over capacity are re-read
   from Placement under the host's lock (as the scheduler does) and their
   cheapest preemptible instances terminated with the same selection code;
4. when ``[opie_preemption] max_lifetime`` or a flavor's
   ``opie:max_lifetime`` is set, preemptible servers older than their limit
   are terminated like victims. Age counts from when the server became
   preemptible (:func:`opie_sched.scheduler.ownership.lifetime_start`: its
   creation, ``created_at``, which nova never resets, or the resize that
   gave it a preemptible flavor); a server its owner is moving (a resize,
   a migration, ``VERIFY_RESIZE``) is never ended;
5. when ``[opie_preemption] headroom`` (or an aggregate's
   ``opie_headroom``) is set, every pool of hosts whose free room is below
   its headroom gets the cheapest victims restoring it noticed ahead of
   demand (:mod:`opie_sched.scheduler.headroom`). The round reads each
   cell's compute nodes once for steps 3 and 5, and the instances of its
   hosts once for step 5, in the cell's own pass after steps 1-4 (so the
   step sees their reservations); a cell that cannot be read skips step 5
   for the round (a pool missing hosts would look short of room);
6. servers shelved by the preemption (the scheduler's, or the market's:
   adopted from Nova's record of who asked for the shelve) whose flavor
   asks for automatic restore (``opie:restore=auto``) are unshelved onto
   free room, at most
   ``[opie_reconciler] restore_per_round`` (:mod:`opie_sched.scheduler.
   restore`).

Victims already reserved or terminating count as leaving, so running it
again (or a second reconciler) changes nothing once hosts are within
capacity; every termination goes through the compare-and-set of the
victim's record (:mod:`opie_sched.scheduler.actions`), so two reconcilers
reading the same record cannot both act. Only one runs per cloud: see
:mod:`opie_sched.scheduler.locks`. A cell whose database cannot be read is
skipped for the round with an ERROR log line; the other cells are repaired.
With ``dry_run`` nothing is written, reserved or terminated.
"""

import collections
import dataclasses
import datetime

from oslo_context import context as oslo_context
from oslo_log import log as logging
from oslo_utils import timeutils

import nova.conf
from nova import context as nova_context
from nova import objects

from opie_sched.preemption import model
from opie_sched.preemption import planner
from opie_sched.preemption import victim_state
from opie_sched.scheduler import actions
from opie_sched.scheduler import cell_reads
from opie_sched.scheduler import headroom
from opie_sched.scheduler import host_capacity
from opie_sched.scheduler import locks
from opie_sched.scheduler import ownership
from opie_sched.scheduler import preemption_plans
from opie_sched.scheduler import reservations
from opie_sched.scheduler import restore

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF

PREEMPTED_BY = victim_state.CAUSE_RECONCILER
LIFETIME = victim_state.CAUSE_LIFETIME
LIFETIME_KEY = 'opie:max_lifetime'


def lifetime_limit(flavor, default):
    """Seconds a preemptible server of ``flavor`` may live: the flavor's
    ``opie:max_lifetime`` (an int >= 0; 0 = no limit), else ``default``.
    A malformed value is ignored (the API validates new flavors).
    """
    specs = getattr(flavor, 'extra_specs', None) or {}
    value = specs.get(LIFETIME_KEY)
    if value is not None:
        try:
            value = int(value)
            if value >= 0:
                return value
        except (TypeError, ValueError):
            pass
    return default


def _age(since, now):
    """Seconds from ``since`` (aware or naive UTC) to ``now``."""
    if since.tzinfo is None:
        since = since.replace(tzinfo=datetime.timezone.utc)
    return (now - since).total_seconds()


@dataclasses.dataclass
class NodeRead:
    """One compute node as a round read it (:meth:`Reconciler.read_cell`).

    :param cell_uuid: its cell.
    :param node: the ComputeNode record.
    :param capacity: :class:`~opie_sched.preemption.model.Resources`, in
        Placement's capacity model (:func:`opie_sched.scheduler.
        host_capacity.compute_node_state`).
    :param used: likewise, what its record counts as used.
    :param rows: its instances (:class:`opie_sched.scheduler.cell_reads.
        InstanceRow`).
    """

    cell_uuid: str
    node: object
    capacity: model.Resources
    used: model.Resources
    rows: list

    @property
    def host(self):
        return self.node.host

    def view(self, leaving=(), now=None):
        """Its :class:`~opie_sched.preemption.model.HostView`, the
        instances in ``leaving`` (uuids) counted as leaving.
        """
        now = now or timeutils.utcnow(with_timezone=True)
        return model.HostView(
            name=self.node.hypervisor_hostname, capacity=self.capacity,
            used=self.used, instances=[ownership.instance_info(r, leaving, now)
                                       for r in self.rows])


class Reconciler:
    """Finds and repairs overcommitted hosts."""

    def __init__(self, placement=None):
        self._placement = placement
        # providers' reserved amounts: the screen judges ComputeNode
        # records in Placement's capacity model
        self._reserved = host_capacity.ReservedCache()
        # the headroom step (step 5) and its waiters
        self.headroom = headroom.Keeper(self)
        # the restore step (step 6) and the uuids it unshelved last round
        self.restorer = restore.Restorer(self)
        self.restored = []

    def placement(self):
        """nova's SchedulerReportClient (made on first use)."""
        if self._placement is None:
            from nova.scheduler.client import report
            self._placement = report.report_client_singleton()
        return self._placement

    @staticmethod
    def _cells(ctx):
        for cell in objects.CellMappingList.get_all(ctx):
            if cell.uuid != objects.CellMapping.CELL0_UUID:
                yield cell

    def read_cell(self, ctx, cell_uuid, cctxt, nodes=None):
        """One read of a cell's compute nodes and their instances.

        :param ctx: admin RequestContext (Placement's reserved amounts).
        :param cctxt: ``ctx`` targeted at the cell.
        :param nodes: the cell's ComputeNodeList when already read.
        :returns: list of :class:`NodeRead`. One ComputeNode query (unless
            ``nodes`` is given) and one bulk instance query
            (:func:`opie_sched.scheduler.cell_reads.load_instances`).
        """
        if nodes is None:
            nodes = objects.ComputeNodeList.get_all(cctxt)
        if not nodes:
            return []
        insts = cell_reads.load_instances(
            cctxt, {None: {n.host for n in nodes}})
        reads = []
        for node in nodes:
            capacity, used = host_capacity.compute_node_state(
                node, self._reserved.get(self.placement(), ctx, node))
            reads.append(NodeRead(cell_uuid, node, capacity, used, insts.get(
                (node.host, node.hypervisor_hostname), [])))
        return reads

    def read_nodes(self, ctx):
        """:meth:`read_cell` of every cell: ``[NodeRead]``."""
        reads = []
        for cell in self._cells(ctx):
            with nova_context.target_cell(ctx, cell) as cctxt:
                reads.extend(self.read_cell(ctx, cell.uuid, cctxt))
        return reads

    def host_views(self, ctx, skip=()):
        """``[(cell_uuid, HostView)]`` of every compute node, all cells,
        from the ComputeNode records (every instance loaded: for reports
        and ``--dry-run``; the repair reads Placement instead).
        """
        now = timeutils.utcnow(with_timezone=True)
        return [(r.cell_uuid, r.view(skip, now)) for r in self.read_nodes(ctx)]

    def plan(self, ctx, skip=()):
        """``[(cell_uuid, HostPlan)]`` for every overcommitted host, as the
        ComputeNode records show them (no lock, nothing reserved).
        """
        policy = preemption_plans.cost_policy()
        now = timeutils.utcnow(with_timezone=True)
        plans = []
        for cell_uuid, hv in self.host_views(ctx, skip):
            for plan in planner.overcommit_plans([hv], policy, now):
                plans.append((cell_uuid, plan))
        return plans

    def run_once(self, ctx=None, skip=(), dry_run=None, placement=None):
        """One reconciliation round (steps 1-6 of the module docstring;
        each cell's compute nodes are read once for steps 3 and 5; the
        uuids the restore step unshelved are left in ``restored``).

        :param ctx: admin RequestContext (default: a new admin context).
        :param skip: instance uuids to treat as leaving.
        :param dry_run: only log (default ``[opie_reconciler] dry_run``).
        :param placement: nova's SchedulerReportClient (default: made once).
        :returns: list of ``HostPlan`` acted upon (or that would be).
        """
        if placement is not None:
            self._placement = placement
        ctx = (ctx or nova_context.get_admin_context()).elevated()
        # a request id of its own per round: the records it reserves name
        # this round only
        ctx.request_id = oslo_context.generate_request_id()
        dry_run = CONF.opie_reconciler.dry_run if dry_run is None \
            else dry_run
        acted = []
        pools = self._headroom_pools(ctx)
        # step 5's reading of the cells, taken in the cells' own pass
        # (after steps 1-4, so it sees their reservations): one read of
        # the compute nodes per cell and round, not one per step
        reads = [] if pools else None
        for cell in self._cells(ctx):
            try:
                with nova_context.target_cell(ctx, cell) as cctxt:
                    nodes = objects.ComputeNodeList.get_all(cctxt)
                    if not dry_run:
                        self._expire_reservations(cctxt)
                        self._retry_terminations(ctx, cell.uuid, cctxt)
                    acted.extend(self._repair_cell(ctx, cell.uuid, cctxt,
                                                   skip, dry_run, nodes))
                    acted.extend(self._end_lifetimes(ctx, cell.uuid, cctxt,
                                                     dry_run))
                    if reads is not None:
                        reads.extend(self.read_cell(ctx, cell.uuid, cctxt,
                                                    nodes))
            except Exception:
                LOG.error('Reconciler: cell %s (%s) could not be read or '
                          'repaired this round; the other cells are '
                          'repaired', cell.uuid, cell.name, exc_info=True)
                if reads is not None:
                    # a pool missing a cell's hosts would look short of
                    # room: no headroom victims from a partial reading
                    LOG.warning('Reconciler: the headroom step is skipped '
                                'this round (cell %s unread)', cell.uuid)
                    pools = reads = None
        if pools:
            acted.extend(self._keep_headroom(ctx, dry_run, reads, pools))
        self.restored = self._restore(ctx, dry_run)
        return acted

    def _restore(self, ctx, dry_run):
        """Step 6: :meth:`opie_sched.scheduler.restore.Restorer.run`
        (after the headroom: a restore never takes it); its failure is
        logged, never raised.
        """
        try:
            return self.restorer.run(ctx, dry_run)
        except Exception:
            LOG.exception('Reconciler: the restore step failed this round')
            return []

    def _headroom_pools(self, ctx):
        """Step 5's pools (:meth:`opie_sched.scheduler.headroom.Keeper.
        pools`), or None when no pool has a headroom or they cannot be
        read (logged).
        """
        try:
            pools = self.headroom.pools(ctx)
            return pools if pools[0] else None
        except Exception:
            LOG.exception('Reconciler: the headroom step failed this round '
                          '(its pools could not be read)')
            return None

    def _keep_headroom(self, ctx, dry_run, reads=None, pools=None):
        """Step 5: :meth:`opie_sched.scheduler.headroom.Keeper.run` on
        the round's reading of the cells; its failure is logged, never
        raised (steps 1-4 are done).
        """
        try:
            return self.headroom.run(ctx, dry_run, reads=reads, pools=pools)
        except Exception:
            LOG.exception('Reconciler: the headroom step failed this round')
            return []

    # -- 1 and 2: what the scheduler left unfinished -------------------------

    @staticmethod
    def _victims(cctxt, state):
        insts = objects.InstanceList.get_by_filters(
            cctxt, {'deleted': False, 'soft_deleted': True,
                    'system_metadata': {victim_state.KEY_STATE: state}},
            expected_attrs=['flavor', 'system_metadata'])
        for inst in insts:
            vs = ownership.victim_state(inst)
            if vs is not None and vs.state == state:
                yield inst, vs

    def _expire_reservations(self, cctxt):
        now = timeutils.utcnow(with_timezone=True)
        lease = CONF.opie_preemption.reservation_timeout
        coord = None
        for inst, vs in self._victims(cctxt, victim_state.RESERVED):
            if not vs.is_leaving(now, lease):
                LOG.info('Reconciler: reservation of victim %s by %s '
                         'expired (its request never finished); it is a '
                         'candidate again', inst.uuid, vs.preemptor)
                reservations.clear_state(inst, expected=vs)
                continue
            if not vs.worker:
                continue
            coord = coord or locks.coordinator(CONF)
            if coord.is_dead(vs.worker):
                LOG.info('Reconciler: victim %s was reserved by worker %s, '
                         'which is dead (its liveness lock is free); it is '
                         'a candidate again', inst.uuid, vs.worker)
                reservations.clear_state(inst, expected=vs)

    def _retry_terminations(self, ctx, cell_uuid, cctxt):
        now = timeutils.utcnow(with_timezone=True)
        # a victim in task state "deleting" too: its compute accepted the
        # delete and has not finished it by next_attempt
        due = [inst for inst, vs in
               self._victims(cctxt, victim_state.TERMINATING)
               if vs.retry_due(now)]
        if not due:
            return
        LOG.info('Reconciler: terminating again %d victim(s) whose '
                 'termination did not complete: %s', len(due),
                 sorted(i.uuid for i in due))
        actions.terminate(ctx, cell_uuid, [i.uuid for i in due],
                          PREEMPTED_BY, action='delete', retry=True)

    # -- 3: overcommitted hosts ---------------------------------------------

    def _repair_cell(self, ctx, cell_uuid, cctxt, skip, dry_run,
                     nodes=None):
        acted = []
        policy = preemption_plans.cost_policy()
        if nodes is None:
            nodes = objects.ComputeNodeList.get_all(cctxt)
        for node in nodes:
            capacity, used = host_capacity.compute_node_state(
                node, self._reserved.get(self.placement(), ctx, node))
            if (used - capacity).fits_in(model.ZERO):
                continue
            try:
                plan = self._repair_node(ctx, cell_uuid, node, policy, skip,
                                         dry_run)
            except Exception:
                LOG.exception('Reconciler could not repair host %s',
                              node.hypervisor_hostname)
                continue
            if plan is not None:
                acted.append(plan)
        return acted

    def _repair_node(self, ctx, cell_uuid, node, policy, skip, dry_run):
        client = self.placement()
        with locks.coordinator(CONF).lock(locks.host_lock_name(node.uuid),
                                          locks.HOST_LOCK_TIMEOUT):
            now = timeutils.utcnow(with_timezone=True)
            capacity = reservations.provider_capacity(client, ctx,
                                                      node.uuid)
            hv, rows = reservations.fresh_host_view(
                ctx, client, node.uuid, cell_uuid, capacity,
                node.hypervisor_hostname, skip, now)
            plans = planner.overcommit_plans([hv], policy, now)
            if not plans:
                return None
            plan = plans[0]
            if not plan.feasible:
                LOG.warning('Reconciler: %s', planner.describe_plan(plan))
                return None
            LOG.info('Reconciler%s: %s', ' (dry run)' if dry_run else '',
                     planner.describe_plan(plan))
            if dry_run:
                return plan
            reasons = {inst.uuid: (
                'terminated by the reconciler: host %s was over its '
                'capacity; this victim\'s cost %g of a total %g'
                % (plan.host, cost, plan.total_cost))
                for inst, cost in plan.victims}
            reservations.reserve(
                reservations.cell_context(ctx, cell_uuid),
                [rows[inst.uuid] for inst, _ in plan.victims],
                PREEMPTED_BY, ctx.request_id, reasons, now)
        self._finish(ctx, cell_uuid, plan, PREEMPTED_BY)
        return plan

    @staticmethod
    def _finish(ctx, cell_uuid, plan, cause):
        uuids = [inst.uuid for inst, _ in plan.victims]
        done = actions.terminate(ctx, cell_uuid, uuids, cause)
        actions.notify(ctx, plan, cause, ctx.request_id,
                       CONF.opie_preemption.action, terminated=done)
        if done:
            # stopped or shelved victims: finish the job (grace then
            # delete; offload), each re-checked; deletes are not waited for
            actions.release(ctx, cell_uuid, done, wait=False)

    # -- 4: maximum lifetime --------------------------------------------------

    def _lifetime_enabled(self, ctx):
        if CONF.opie_preemption.max_lifetime > 0:
            return True
        for flavor in objects.FlavorList.get_all(ctx):
            if lifetime_limit(flavor, 0) > 0:
                return True
        return False

    def _end_lifetimes(self, ctx, cell_uuid, cctxt, dry_run):
        if not self._lifetime_enabled(ctx):
            return []
        now = timeutils.utcnow(with_timezone=True)
        default = CONF.opie_preemption.max_lifetime
        expired = collections.defaultdict(list)
        insts = objects.InstanceList.get_by_filters(
            cctxt, {'deleted': False},
            expected_attrs=['flavor', 'system_metadata'])
        by_uuid = {}
        for inst in insts:
            # the ownership model: preemptible by its classes, running
            # (neither leaving nor pinned by its owner's move: a server in
            # VERIFY_RESIZE or migrating is never ended)
            if (not ownership.flavor_is_preemptible(inst.flavor)
                    or inst.created_at is None
                    or ownership.instance_state(inst, now=now)
                    != ownership.RUNNING):
                continue
            limit = lifetime_limit(inst.flavor, default)
            if limit <= 0 or _age(inst.created_at, now) < limit:
                continue
            # created_at: never reset (launched_at is, by a rescue,
            # rebuild, resize or unshelve); a resize from a normal flavor
            # starts the preemptible life again (migrations read only for
            # the servers old enough by their creation)
            age = _age(ownership.lifetime_start(cctxt, inst), now)
            by_uuid[inst.uuid] = inst
            if age >= limit:
                expired[(inst.node or inst.host or '?')].append(
                    (ownership.instance_info(inst, now=now), limit))
        acted = []
        for node, items in sorted(expired.items()):
            plan = planner.HostPlan(
                host=node, needs_preemption=True, feasible=True,
                victims=tuple((info, 0.0) for info, _ in items),
                reason='maximum lifetime reached')
            reasons = {info.uuid: (
                'terminated: this preemptible server reached its maximum '
                'lifetime of %d s' % limit) for info, limit in items}
            LOG.info('Reconciler%s: %d preemptible server(s) on %s reached '
                     'their maximum lifetime: %s',
                     ' (dry run)' if dry_run else '', len(items), node,
                     sorted(reasons))
            acted.append(plan)
            if not dry_run:
                reservations.reserve(
                    reservations.cell_context(ctx, cell_uuid),
                    [by_uuid[u] for u in reasons], LIFETIME,
                    ctx.request_id, reasons, now)
                self._finish(ctx, cell_uuid, plan, LIFETIME)
        return acted
