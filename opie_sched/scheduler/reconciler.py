"""The overcommit reconciler: restore full state <= capacity on every host.

The scheduler cannot catch everything: it may die between the Placement
claim and the termination of victims, two preemptible requests may race past
the full-state filter, and normal instances arrive by migration, evacuation
or a forced host. The reconciler reads every compute node's full state
(ComputeNode records, as the scheduler does) and its instances (one query
per cell), and terminates the cheapest preemptible instances of each
overcommitted host with the same selection code as the scheduler.

It is idempotent: instances already being preempted or deleted count as
released and are never chosen twice, so running it again (or in two places)
changes nothing once the hosts are back within capacity.
"""

from oslo_log import log as logging
from oslo_utils import timeutils

import nova.conf
from nova import context as nova_context
from nova import objects

from opie_sched.preemption import model
from opie_sched.preemption import planner
from opie_sched.scheduler import actions
from opie_sched.scheduler import hosts
from opie_sched.scheduler import weights

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF

PREEMPTED_BY = 'reconciler'


class Reconciler:
    """Finds and repairs overcommitted hosts."""

    def host_views(self, ctx, skip=()):
        """``[(cell_uuid, HostView)]`` of every compute node, all cells."""
        result = []
        for cell in objects.CellMappingList.get_all(ctx):
            if cell.uuid == objects.CellMapping.CELL0_UUID:
                continue
            with nova_context.target_cell(ctx, cell) as cctxt:
                nodes = objects.ComputeNodeList.get_all(cctxt)
                if not nodes:
                    continue
                insts = hosts.load_instances(
                    cctxt, {None: {n.host for n in nodes}})
            for node in nodes:
                capacity, used = hosts.compute_node_state(node)
                result.append((cell.uuid, model.HostView(
                    name=node.hypervisor_hostname, capacity=capacity,
                    used=used,
                    instances=[hosts.instance_info(i, skip) for i in
                               insts.get((node.host,
                                          node.hypervisor_hostname), [])])))
        return result

    def plan(self, ctx, skip=()):
        """``[(cell_uuid, HostPlan)]`` for every overcommitted host."""
        policy = weights.cost_policy()
        now = timeutils.utcnow(with_timezone=True)
        plans = []
        for cell_uuid, hv in self.host_views(ctx, skip):
            for plan in planner.overcommit_plans([hv], policy, now):
                plans.append((cell_uuid, plan))
        return plans

    def run_once(self, ctx=None, skip=(), dry_run=None):
        """One reconciliation round.

        :param ctx: admin RequestContext (default: a new admin context).
        :param skip: instance uuids already being terminated elsewhere.
        :param dry_run: only log (default ``[opie_reconciler] dry_run``).
        :returns: list of ``HostPlan`` acted upon (or that would be).
        """
        ctx = ctx or nova_context.get_admin_context()
        if not ctx.is_admin:
            ctx = ctx.elevated()
        dry_run = CONF.opie_reconciler.dry_run if dry_run is None \
            else dry_run
        acted = []
        for cell_uuid, plan in self.plan(ctx, skip):
            if not plan.feasible:
                LOG.warning('Reconciler: %s', planner.describe_plan(plan))
                continue
            LOG.info('Reconciler%s: %s', ' (dry run)' if dry_run else '',
                     planner.describe_plan(plan))
            acted.append(plan)
            if dry_run:
                continue
            uuids = [inst.uuid for inst, _ in plan.victims]
            reason = ('terminated by the reconciler: host %s was over its '
                      'capacity (total victim cost %g)'
                      % (plan.host, plan.total_cost))
            actions.terminate(ctx, cell_uuid, uuids, PREEMPTED_BY, reason)
            actions.notify(ctx, plan, PREEMPTED_BY, ctx.request_id,
                           CONF.opie_preemption.action)
            if CONF.opie_preemption.action == 'stop':
                # graceful mode: finish the job (stop, grace, delete)
                actions.release(ctx, cell_uuid, uuids)
        return acted
