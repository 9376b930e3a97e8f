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
"""The reconciler's restore step: unshelve preempted servers when room
returns (persistent requests).

A preemptible server whose flavor sets ``opie:restore=auto`` and that the
scheduler's preemption (the scheduler, the reconciler's repair, the
headroom) shelved with the ``shelve`` behaviour keeps a service-owned
record (:mod:`opie_sched.preemption.victim_state`: ``restore_pending``,
since when, its interruption count). Each reconciler round, after the
headroom step:

1. every restore record is brought up to date: a ``restoring`` server
   running again is restored (record cleared, its owner told by server
   metadata ``opie:restore_status``, operators and the market's event
   history by the ``opie.instance.restore`` notification); one shelved
   and offloaded again with no task (its unshelve found no room) is
   pending again, in its place; a
   pending or given-up server its owner unshelved (or that is no longer
   shelved and offloaded) is left to its owner (record cleared); a
   pending server whose owner set its server metadata ``opie:restore`` to
   ``off`` waits, record kept (the owner's preference for their own
   server only; any other value is ignored);
2. the pending servers are taken in order (:func:`~opie_sched.preemption.
   victim_state.restore_order`: the highest bid first, the scheduler's
   :func:`~opie_sched.scheduler.bids.instance_bid`, whose last
   source is the flavor's ``opie:bid`` or ``[opie_preemption]
   default_bid``; then the longest waiting), at most
   ``[opie_reconciler] restore_per_round`` per round;
3. each is unshelved through Nova's compute API (the same server: its
   UUID, ports and volumes), targeted at a host whose free room holds it
   without preempting anyone and, in every pool with a headroom
   (:func:`opie_sched.scheduler.headroom.pool_headrooms`), without taking
   the pool below it; with no such host it waits. The room is first read
   from the ComputeNode records and the ownership model, as the headroom
   reads them (leaving servers counted as gone); the host chosen is then
   read again from Placement (:meth:`Restorer.placement_free`), since a
   ComputeNode record lags the claims (a server scheduled to the host and
   not yet built there, e.g. the preemptor of a victim just offloaded):
   its full state as the scheduler judges it (every allocation, normal
   and preemptible, the ownership model for who is leaving) and its
   preemptible inventories' own room, each must hold the server. A host
   Placement shows without that room is taken as Placement shows it for
   the rest of the round (one read per host and round; a host Placement
   cannot answer for is left out for the round). The record goes
   ``restoring`` first (by compare-and-set: one actor per server).

The unshelve is an ordinary preemptible request: Nova's scheduler places
it (Placement claims) and never preempts for it, so a restore never makes
a normal request fail; a normal request arriving meanwhile may preempt the
restored server as any other.

Servers the market preempted (:mod:`opie_sched.services.market.
enforcement`, which interrupts through Nova's compute API and writes no
record) are restored by the same step: before step 1, every shelved and
offloaded server of a restore-requesting preemptible flavor that has no
record, carries the market's mark (server metadata ``opie:preempted_by``,
:data:`~opie_sched.preemption.victim_state.MARKET_MARKS`: only a filter,
the owner can write it) and whose newest ``shelve`` instance action was
asked from another project than its own
(:func:`~opie_sched.preemption.victim_state.shelved_by_another_project`:
the market's service user; users cannot write instance actions) gets its
restore record (:func:`~opie_sched.preemption.victim_state.
after_market_release`: its interruption counted, pending or given up at
``opie:max_interruptions``, its owner told why) by compare-and-set
against no record (:meth:`Restorer.adopt`). From there it is restored
exactly as a scheduler victim. A server its owner shelved is never
adopted.
"""

import dataclasses

from oslo_context import context as oslo_context
from oslo_log import log as logging
from oslo_utils import timeutils

import nova.conf
from nova import context as nova_context
from nova import exception
from nova import objects

from opie_sched.preemption import behaviours
from opie_sched.preemption import headroom as headroom_rules
from opie_sched.preemption import model
from opie_sched.preemption import victim_state
from opie_sched.scheduler import actions
from opie_sched.scheduler import bids
from opie_sched.scheduler import headroom
from opie_sched.scheduler import ownership
from opie_sched.scheduler import reservations

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF


class Room:
    """Free room per compute host and the pools' headrooms, taken as
    restores are placed in one round.

    :param views: ``{host: HostView}`` (service host names).
    :param pools: ``[(pool name, Headroom, set of hosts)]`` (hosts in no
        aggregate resolved).
    """

    def __init__(self, views, pools=()):
        self.views = views
        self.free = {h: v.projected_free() for h, v in views.items()}
        self.pools = []
        for name, room, members in pools:
            members = set(members) & set(views)
            if not members:
                continue
            capacity = headroom_rules.pool_capacity(
                [views[h] for h in members])
            self.pools.append((name, room, members, capacity))

    def _keeps_headroom(self, host, need):
        for name, room, members, capacity in self.pools:
            if host not in members:
                continue
            if room.slots:
                # a pool of slots: its whole free slots must stay
                slots = sum(headroom_rules.host_slots(
                    self.free[h].clip_negative(), room.amount)
                    for h in members)
                after = slots - headroom_rules.host_slots(
                    self.free[host].clip_negative(), room.amount) + \
                    headroom_rules.host_slots(
                        (self.free[host] - need).clip_negative(),
                        room.amount)
                if after < room.slots:
                    return False
                continue
            free = model.Resources.total(
                self.free[h].clip_negative() for h in members)
            if not room.target(capacity).fits_in(free - need):
                return False
        return True

    def place(self, need):
        """The host (service host name) where ``need`` fits in free room
        and every pool keeps its headroom, the one with the least free
        room left (best fit, so larger holes stay whole), or None.
        """
        best = None
        for host in sorted(self.views):
            left = self.free[host] - need
            if not model.ZERO.fits_in(left):
                continue
            if not self._keeps_headroom(host, need):
                continue
            if best is None or tuple(left) < best[0]:
                best = (tuple(left), host)
        return best and best[1]

    def take(self, host, need):
        self.free[host] = self.free[host] - need


class Restorer:
    """The restore step of a :class:`~opie_sched.scheduler.reconciler.
    Reconciler`.
    """

    def __init__(self, reconciler):
        self._reconciler = reconciler
        # {service host: NodeRead} of the last views() (placement_free)
        self._reads = {}

    # -- reads ---------------------------------------------------------------

    @staticmethod
    def _records(cctxt):
        for state in victim_state.RESTORE_STATES:
            insts = objects.InstanceList.get_by_filters(
                cctxt, {'deleted': False,
                        'system_metadata': {victim_state.KEY_STATE: state}},
                expected_attrs=['flavor', 'system_metadata', 'metadata'])
            for inst in insts:
                vs = ownership.victim_state(inst)
                if vs is not None and vs.state == state:
                    yield inst, vs

    @staticmethod
    def _market_victims(cctxt):
        """Shelved and offloaded servers with no task carrying one of the
        market's marks (:data:`~opie_sched.preemption.victim_state.
        MARKET_MARKS`), one query per mark.
        """
        seen = set()
        for mark in victim_state.MARKET_MARKS:
            insts = objects.InstanceList.get_by_filters(
                cctxt, {'deleted': False,
                        'vm_state': behaviours.SHELVED_OFFLOADED,
                        'metadata': {victim_state.PREEMPTED_BY_KEY: mark}},
                expected_attrs=['flavor', 'system_metadata', 'metadata'])
            for inst in insts:
                if inst.uuid not in seen and inst.task_state is None:
                    seen.add(inst.uuid)
                    yield inst

    def adopt(self, cctxt, dry_run=False):
        """Give the market's shelved victims of one cell their restore
        record (see the module docstring).

        :returns: uuids adopted (that would be, with ``dry_run``).
        """
        now = timeutils.utcnow(with_timezone=True)
        adopted = []
        for inst in self._market_victims(cctxt):
            specs = getattr(inst.flavor, 'extra_specs', None)
            if (ownership.victim_state(inst) is not None
                    or victim_state.KEY_STATE in (inst.system_metadata or {})
                    or not victim_state.restore_requested(specs)
                    or not ownership.flavor_is_preemptible(inst.flavor)):
                continue
            found = objects.InstanceActionList.get_by_instance_uuid(
                cctxt, inst.uuid)
            if not victim_state.shelved_by_another_project(
                    ((a.action, a.project_id, a.start_time) for a in found),
                    inst.project_id):
                continue
            new = victim_state.after_market_release(
                victim_state.interruptions_of(inst.system_metadata),
                specs, now)
            LOG.info('Restore%s: %s was shelved by the market; %s '
                     '(interruption %d)', ' (dry run)' if dry_run else '',
                     inst.uuid, new.state, new.interruptions)
            if dry_run:
                adopted.append(inst.uuid)
                continue
            try:
                if not reservations.swap_state(cctxt, inst, None, new):
                    continue
            except exception.InstanceNotFound:
                continue
            adopted.append(inst.uuid)
            if new.state == victim_state.RESTORE_GIVEN_UP:
                actions.tell_restore(cctxt, inst, victim_state.
                                     given_up_message(
                                         new.interruptions,
                                         victim_state.max_interruptions(
                                             specs)))
        return adopted

    def views(self, ctx):
        """``{service host: HostView}`` of every compute node, all cells
        (the ComputeNode records; servers leaving counted as gone), read
        as the reconciler's other steps read them
        (:meth:`~opie_sched.scheduler.reconciler.Reconciler.read_nodes`),
        named by service host (the unshelve's destination). The nodes
        read are kept for :meth:`placement_free`.
        """
        now = timeutils.utcnow(with_timezone=True)
        reads = self._reconciler.read_nodes(ctx)
        self._reads = {r.host: r for r in reads}
        return {r.host: dataclasses.replace(r.view((), now), name=r.host)
                for r in reads}

    def placement_free(self, ctx, host):
        """Free room of ``host`` as Placement admits a preemptible claim
        and the scheduler's full-state check then judges it: per
        dimension the smaller of

        * the full state's projected free room from Placement's
          allocations on the node's provider (normal and preemptible
          classes, claims in flight included) with the ownership model's
          leaving servers counted as gone
          (:func:`opie_sched.scheduler.reservations.fresh_host_view`),
          against the standard inventories' capacity;
        * the preemptible inventories' free room now
          (:func:`opie_sched.scheduler.reservations.
          provider_preemptible_free`).

        :param host: a service host of the last :meth:`views`.
        :returns: :class:`~opie_sched.preemption.model.Resources` (vCPU,
            MB, GB; negative where over).
        :raises opie_sched.scheduler.reservations.PlacementError: Placement
            did not answer.
        """
        read = self._reads[host]
        client = self._reconciler.placement()
        rp_uuid = read.node.uuid
        capacity = reservations.provider_capacity(client, ctx, rp_uuid)
        view, _rows = reservations.fresh_host_view(
            ctx, client, rp_uuid, read.cell_uuid, capacity, host)
        full = view.projected_free()
        pre = reservations.provider_preemptible_free(client, ctx, rp_uuid)
        return model.Resources(*(min(a, b) for a, b in zip(full, pre)))

    def _place(self, ctx, room, need, confirmed):
        """The host :meth:`Room.place` chooses for ``need`` once the
        chosen host's room is confirmed by Placement
        (:meth:`placement_free`; each host read at most once per round,
        ``confirmed`` holding those read), or None.
        """
        while True:
            host = room.place(need)
            if host is None or host in confirmed:
                return host
            confirmed.add(host)
            try:
                free = self.placement_free(ctx, host)
            except Exception as exc:
                LOG.warning('Restore: Placement could not be read for %s '
                            '(%s); no restore there this round', host, exc)
                free = model.Resources(-1, -1, -1)
            if not need.fits_in(free):
                LOG.info('Restore: %s has room by its ComputeNode record '
                         'but not in Placement (free %s: a claim the '
                         'record does not show yet); taken as Placement '
                         'shows it this round', host, tuple(free))
            room.free[host] = model.Resources(
                *(min(a, b) for a, b in zip(room.free[host], free)))

    @staticmethod
    def pools(ctx, views):
        """The pools with a headroom, hosts in no aggregate resolved."""
        try:
            default = headroom_rules.parse(CONF.opie_preemption.headroom)
        except ValueError:
            default = headroom_rules.OFF  # refused at start; never here
        found, in_aggregate = headroom.pool_headrooms(ctx, default)
        return [(name, room, members if members is not None
                 else set(views) - in_aggregate)
                for name, room, members in found]

    # -- the step -------------------------------------------------------------

    def run(self, ctx, dry_run=False):
        """One restore step.

        :returns: uuids whose unshelve was requested (that would be, with
            ``dry_run``).
        """
        limit = CONF.opie_reconciler.restore_per_round
        now = timeutils.utcnow(with_timezone=True)
        pending = []
        for cell in self._reconciler._cells(ctx):
            try:
                with nova_context.target_cell(ctx, cell) as cctxt:
                    self.adopt(cctxt, dry_run)
                    for inst, vs in self._records(cctxt):
                        if self._settle(cctxt, inst, vs, dry_run):
                            pending.append((cell.uuid, inst, vs))
            except Exception:
                LOG.error('Restore: cell %s (%s) could not be read this '
                          'round', cell.uuid, cell.name, exc_info=True)
        if not pending or limit <= 0:
            return []
        pending.sort(key=lambda item: victim_state.restore_order(
            bids.instance_bid(item[1]), item[2], item[1].uuid))
        room = Room(*self._room(ctx))
        confirmed = set()
        started = []
        for cell_uuid, inst, vs in pending:
            if len(started) >= limit:
                LOG.info('Restore: %d server(s) restored this round '
                         '([opie_reconciler] restore_per_round); the others '
                         'wait', limit)
                break
            need = ownership.flavor_resources(
                inst.flavor, ownership.instance_boots_from_volume(inst))
            host = self._place(ctx, room, need, confirmed)
            if host is None:
                LOG.info('Restore: no free room for %s (%s, waiting since '
                         '%s) without preempting or taking a headroom; it '
                         'waits', inst.uuid, inst.flavor.name,
                         victim_state.format_time(vs.since))
                continue
            LOG.info('Restore%s: unshelving %s on %s (interrupted %d '
                     'time(s), waiting since %s)',
                     ' (dry run)' if dry_run else '', inst.uuid, host,
                     vs.interruptions, victim_state.format_time(vs.since))
            if dry_run or self._unshelve(ctx, cell_uuid, inst, vs, host,
                                         now):
                room.take(host, need)
                started.append(inst.uuid)
        return started

    def _room(self, ctx):
        views = self.views(ctx)
        return views, self.pools(ctx, views)

    def _settle(self, cctxt, inst, vs, dry_run):
        """Step 1 for one record; True when the server waits for room."""
        offloaded = (inst.vm_state == behaviours.SHELVED_OFFLOADED
                     and inst.task_state is None)
        if vs.state == victim_state.RESTORE_PENDING and offloaded:
            if victim_state.restore_requested(
                    getattr(inst.flavor, 'extra_specs', None)):
                out, problem = victim_state.owner_opted_out(
                    inst.metadata if 'metadata' in inst else {})
                if problem:
                    LOG.info('Restore: %s: %s', inst.uuid, problem)
                if out:
                    LOG.info('Restore: %s waits: its owner turned restore '
                             'off (server metadata %s)', inst.uuid,
                             victim_state.OWNER_RESTORE_KEY)
                return not out
            self._clear(cctxt, inst, vs, dry_run, 'its flavor no longer '
                        'asks for restore')
            return False
        if vs.state == victim_state.RESTORING:
            if offloaded:
                # the unshelve found no room (NoValidHost): in its place
                if not dry_run:
                    LOG.info('Restore: the unshelve of %s did not find '
                             'room; it waits again', inst.uuid)
                    reservations.swap_state(cctxt, inst, vs,
                                            victim_state.restore_failed(vs))
                return False
            if inst.vm_state == behaviours.ACTIVE and inst.task_state is None:
                if self._clear(cctxt, inst, vs, dry_run, 'restored'):
                    actions.notify_restore(
                        cctxt, inst, vs, timeutils.utcnow(with_timezone=True))
                    actions.tell_restore(
                        cctxt, inst, 'Restored at %s after %d '
                        'interruption(s)' % (victim_state.format_time(
                            timeutils.utcnow(with_timezone=True)),
                            vs.interruptions))
                return False
            if inst.task_state is None and inst.vm_state != \
                    behaviours.SHELVED_OFFLOADED:
                # e.g. ERROR, or stopped by its owner: no longer ours
                self._clear(cctxt, inst, vs, dry_run,
                            'vm_state %s after its unshelve'
                            % inst.vm_state)
            return False
        if inst.vm_state != behaviours.SHELVED_OFFLOADED:
            # pending or given up, and its owner started it
            self._clear(cctxt, inst, vs, dry_run, 'its owner started it')
        return False

    @staticmethod
    def _clear(cctxt, inst, vs, dry_run, why):
        """Clear a restore record (the interruption count is kept),
        logging ``why``; True when cleared now (never with ``dry_run``).
        """
        LOG.info('Restore%s: %s record of %s cleared (%s)',
                 ' (dry run)' if dry_run else '', vs.state, inst.uuid, why)
        if dry_run:
            return False
        try:
            return reservations.clear_state(inst, expected=vs, cctxt=cctxt)
        except exception.InstanceNotFound:
            return False

    def _unshelve(self, ctx, cell_uuid, inst, vs, host, now):
        """Step 3 for one server: ``restoring`` by compare-and-set, then
        Nova's unshelve to ``host``; a refusal puts it back in the queue.
        """
        cctxt = reservations.cell_context(ctx, cell_uuid)
        new = victim_state.restoring(vs, now)
        try:
            if not reservations.swap_state(cctxt, inst, vs, new):
                LOG.info('Restore: the record of %s changed under us; '
                         'left alone', inst.uuid)
                return False
        except exception.InstanceNotFound:
            return False
        acctxt = actions.service_context(cctxt.elevated())
        acctxt.request_id = oslo_context.generate_request_id()
        try:
            actions.compute_api().unshelve(acctxt, inst, host=host)
        except Exception as exc:
            LOG.warning('Restore: Nova refused to unshelve %s on %s (%s); '
                        'it waits', inst.uuid, host, exc)
            try:
                reservations.swap_state(cctxt, inst, new,
                                        victim_state.restore_failed(new))
            except exception.InstanceNotFound:
                pass
            return False
        return True
