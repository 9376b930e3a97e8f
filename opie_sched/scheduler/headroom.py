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
"""The reconciler's headroom step: notice ahead of demand.

Each reconciler round, for every pool of hosts (each host aggregate with
``[opie_preemption] headroom`` or its own ``opie_headroom`` metadata, and
the hosts in no aggregate with the option), the pool's free room is read
from the ComputeNode records and the ownership model
(:func:`opie_sched.preemption.headroom.plan_pool`). When it is below the
headroom, the cheapest victims restoring it are chosen by the exact
selection and each victim, in order:

1. gets its service-owned record ``noticed`` (cause ``headroom``, this
   decision's request id, the deadline in ``next_attempt``) by
   compare-and-set (a victim another actor took meanwhile is skipped);
2. is marked *at risk*: server metadata ``opie:rebalance_recommendation``
   (the time, ISO 8601 UTC), read by the guest in ``meta_data.json``;
3. after ``[opie_preemption] headroom_rebalance_seconds`` (default 0),
   gets the notice (:func:`opie_sched.scheduler.actions.give_notice`'s
   keys ``opie:preempt_notice`` and ``opie:preempt_deadline``) with a
   deadline :func:`notice_length` seconds away;
4. is interrupted (its behaviour: delete, stop, shelve) at the deadline,
   or at once when it is released early: its guest powered itself off,
   or its owner stopped, shelved or deleted it
   (:func:`opie_sched.preemption.headroom.released_early`).

The wait runs in a thread of the reconciler's process that checks the
victims every ``headroom_poll_interval`` seconds; with ``[opie_preemption]
release_notifications`` on in a scheduler process whose listener runs
(:mod:`opie_sched.scheduler.wakeup`), a notification of Nova about one of
them (``instance.power_off.end``, ``instance.update``, ...) wakes the
check at once and the fallback checks are ``notification_poll_interval``
apart. The round goes on at once. Should that process stop, the next round acts
on every ``noticed`` victim whose deadline has passed.

While noticed, a victim is still running and an ordinary candidate for
every other actor: a normal request beyond the headroom (a burst) may
take it at once through the scheduler's own path, which swaps its record
(so the deadline's action finds it is no longer its own and skips it); its
guest then reads a notice with an earlier deadline and the words ``notice
cut``. A normal request never fails because of the headroom: nothing here
holds room a request could use.
"""

import dataclasses
import datetime
import threading
import time

from oslo_context import context as oslo_context
from oslo_log import log as logging
from oslo_utils import timeutils

import nova.conf
from nova.db.main import api as main_db
from nova import exception
from nova import objects

from opie_sched.preemption import headroom as rules
from opie_sched.preemption import planner
from opie_sched.preemption import victim_state
from opie_sched.scheduler import actions
from opie_sched.scheduler import ownership
from opie_sched.scheduler import preemption_plans
from opie_sched.scheduler import reservations
from opie_sched.scheduler import wakeup

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF

CAUSE = victim_state.CAUSE_HEADROOM
#: Server metadata key of the *at risk* mark (one definition).
AT_RISK_KEY = victim_state.AT_RISK_KEY
#: System metadata key (service-owned) keeping the headroom deadline of a
#: victim, read by the scheduler to tell the guest that its notice was cut.
SYS_DEADLINE_KEY = actions.HEADROOM_DEADLINE_KEY
#: Name of the pool of hosts in no aggregate.
NO_AGGREGATE = '(no aggregate)'


def notice_length():
    """Seconds of a headroom notice: ``[opie_preemption]
    headroom_notice_seconds``, at least ``notice_seconds``. Not bounded by
    ``release_timeout``: no request waits for it.
    """
    opts = CONF.opie_preemption
    return max(opts.headroom_notice_seconds, opts.notice_seconds)


def pool_headrooms(ctx, default):
    """``[(pool name, Headroom, set of host names or None)]``: every
    aggregate whose headroom (its ``opie_headroom`` metadata, else
    ``default``) is enabled, then the hosts in no aggregate (host set None)
    when ``default`` is. A malformed aggregate value is logged and
    ``default`` applies.
    """
    pools = []
    in_aggregate = set()
    for agg in objects.AggregateList.get_all(ctx):
        in_aggregate.update(agg.hosts or ())
        room, problem = rules.aggregate_headroom(agg.metadata, default)
        if problem is not None:
            LOG.warning('Aggregate %s: metadata %s ignored (%s); '
                        '[opie_preemption] headroom applies',
                        agg.name, rules.AGGREGATE_KEY, problem)
        if room.enabled and agg.hosts:
            pools.append((agg.name, room, set(agg.hosts)))
    if default.enabled:
        pools.append((NO_AGGREGATE, default, None))
    return pools, in_aggregate


class Keeper:
    """Keeps every pool's headroom (one per reconciler)."""

    def __init__(self, reconciler):
        self._reconciler = reconciler
        self._lock = threading.Lock()
        #: uuids a waiter of this process is responsible for
        self._waiting = set()
        self._threads = []
        self._stop = threading.Event()
        #: the wake-up events of the waits running (set on stop)
        self._woken = set()

    # -- views -------------------------------------------------------------

    def _views(self, ctx, now, reads=None):
        """``{host: [(cell_uuid, HostView, {uuid: row})]}`` of every
        compute node, victims under a headroom notice counted as leaving;
        and ``{uuid: (cell_uuid, VictimState)}`` of those noticed.

        :param reads: the round's reading of the cells
            (:class:`opie_sched.scheduler.reconciler.NodeRead` list, see
            :meth:`~opie_sched.scheduler.reconciler.Reconciler.run_once`);
            None: read every cell now (a keeper run on its own).
        """
        if reads is None:
            reads = self._reconciler.read_nodes(ctx)
        result = {}
        noticed = {}
        for read in reads:
            mine = set()
            for row in read.rows:
                vs = ownership.victim_state(row)
                if vs is not None and vs.state == victim_state.NOTICED:
                    noticed[row.uuid] = (read.cell_uuid, vs)
                    mine.add(row.uuid)
            result.setdefault(read.host, []).append(
                (read.cell_uuid, read.view(mine, now),
                 {r.uuid: r for r in read.rows}))
        return result, noticed

    # -- the round -----------------------------------------------------------

    @staticmethod
    def pools(ctx):
        """``(pools, hosts in some aggregate)`` of
        :func:`pool_headrooms` for ``[opie_preemption] headroom``; pools
        is empty when no pool has a headroom. One API database query.
        """
        try:
            default = rules.parse(CONF.opie_preemption.headroom)
        except ValueError:
            default = rules.OFF  # refused at start; never here
        return pool_headrooms(ctx, default)

    def run(self, ctx, dry_run=False, reads=None, pools=None):
        """One headroom step.

        :param reads: the round's reading of the cells (see
            :meth:`_views`); None: this step reads them.
        :param pools: :meth:`pools` when already read.
        :returns: list of :class:`~opie_sched.preemption.headroom.PoolPlan`
            acted upon (or that would be, with ``dry_run``).
        """
        pools, in_aggregate = pools or self.pools(ctx)
        now = timeutils.utcnow(with_timezone=True)
        if not pools:
            return []
        views, noticed = self._views(ctx, now, reads)
        if not dry_run:
            self._act_on_overdue(ctx, noticed, now)
        policy = preemption_plans.cost_policy()
        acted = []
        taken = set()
        for name, room, members in pools:
            if members is None:
                members = set(views) - in_aggregate
            entries = [e for h in sorted(members) for e in views.get(h, ())]
            if not entries:
                continue
            pool_views = [dataclasses.replace(view, instances=[
                dataclasses.replace(i, leaving=True) if i.uuid in taken
                else i for i in view.instances]) for _, view, _ in entries]
            try:
                plan = rules.plan_pool(name, pool_views, room, policy, now)
            except Exception:
                LOG.exception('Headroom: pool %s could not be planned', name)
                continue
            if not plan.needs_preemption:
                continue
            (LOG.warning if not plan.feasible else LOG.info)(
                'Headroom%s: %s', ' (dry run)' if dry_run else '',
                rules.describe(plan))
            if not plan.feasible:
                continue
            acted.append(plan)
            taken.update(i.uuid for _, i, _ in plan.victims)
            if dry_run:
                continue
            rows = {}
            cells = {}
            for cell_uuid, view, by_uuid in entries:
                for _, inst, _ in plan.victims:
                    if inst.uuid in by_uuid:
                        rows[inst.uuid] = by_uuid[inst.uuid]
                        cells[inst.uuid] = cell_uuid
            self._notice(ctx, plan, rows, cells, now)
        return acted

    def _notice(self, ctx, plan, rows, cells, now):
        """Steps 1 and 2 for the plan's victims, then a waiter thread for
        steps 3 and 4.
        """
        length = notice_length()
        lead = CONF.opie_preemption.headroom_rebalance_seconds
        deadline = now + datetime.timedelta(seconds=lead + length)
        rid = oslo_context.generate_request_id()
        by_cell = {}
        for host, info, cost in plan.victims:
            row = rows.get(info.uuid)
            if row is None:
                continue
            cell_uuid = cells[info.uuid]
            cctxt = reservations.cell_context(ctx, cell_uuid)
            reason = ('headroom of pool %s: %s free, target %s; victim on '
                      '%s, cost %g of a total %g'
                      % (plan.pool, planner._fmt(plan.free),
                         planner._fmt(plan.target), host, cost,
                         plan.total_cost))
            record = victim_state.VictimState(
                state=victim_state.NOTICED, preemptor=CAUSE, since=now,
                request_id=rid, next_attempt=deadline, reason=reason)
            try:
                if not reservations.swap_state(
                        cctxt, row, ownership.victim_state(row), record):
                    LOG.info('Headroom: victim %s changed under us; not '
                             'noticed', info.uuid)
                    continue
                main_db.instance_metadata_update(
                    cctxt, info.uuid, {AT_RISK_KEY: victim_state.format_time(
                        now)}, False)
                main_db.instance_system_metadata_update(
                    cctxt, info.uuid, {SYS_DEADLINE_KEY:
                                       victim_state.format_time(deadline)},
                    False)
            except exception.InstanceNotFound:
                continue
            except Exception:
                LOG.exception('Headroom: could not mark victim %s at risk',
                              info.uuid)
                continue
            by_cell.setdefault(cell_uuid, []).append(info.uuid)
        for cell_uuid, uuids in by_cell.items():
            self._start_waiter(ctx, cell_uuid, uuids, rid, deadline, lead)

    def _start_waiter(self, ctx, cell_uuid, uuids, rid, deadline, lead):
        with self._lock:
            self._waiting.update(uuids)
            t = threading.Thread(
                target=self._wait, name='opie-headroom-%s' % rid,
                args=(ctx, cell_uuid, list(uuids), rid, deadline, lead),
                daemon=True)
            self._threads.append(t)
        t.start()

    # -- the wait ------------------------------------------------------------

    def _wait(self, ctx, cell_uuid, uuids, rid, deadline, lead):
        try:
            self._wait_and_act(ctx, cell_uuid, uuids, rid, deadline, lead)
        except Exception:
            LOG.exception('Headroom: the wait of victims %s failed; the '
                          'next round acts on them at their deadline',
                          uuids)
        finally:
            with self._lock:
                self._waiting.difference_update(uuids)

    def _wait_and_act(self, ctx, cell_uuid, uuids, rid, deadline, lead):
        if lead > 0 and self._stop.wait(lead):
            return
        cctxt = reservations.cell_context(ctx, cell_uuid)
        now = timeutils.utcnow(with_timezone=True)
        rows = reservations.load_by_uuid(cctxt, uuids)
        seconds = max((deadline - now).total_seconds(), 0)
        noticed = []
        for uuid in uuids:
            row = rows.get(uuid)
            vs = ownership.victim_state(row) if row is not None else None
            if (vs is None or vs.state != victim_state.NOTICED
                    or vs.request_id != rid):
                continue
            action = victim_state.interruption_behavior(
                getattr(row.flavor, 'extra_specs', None),
                CONF.opie_preemption.action)
            notice = victim_state.notice_metadata(
                victim_state.format_time(deadline), action,
                'preempted to keep free room for new servers (headroom)')
            # the notice's trace first (what the market's acknowledgement
            # reads), then the keys the guest reads
            actions.record_notice(cctxt, uuid)
            try:
                main_db.instance_metadata_update(cctxt, uuid, notice, False)
            except exception.InstanceNotFound:
                continue
            noticed.append(uuid)
        LOG.info('Headroom: victims %s got %.1f s of notice (deadline %s)',
                 sorted(noticed), seconds, victim_state.format_time(deadline))
        pending = set(noticed)
        opts = CONF.opie_preemption
        if not opts.release_notifications:
            self._poll(ctx, cell_uuid, pending, rid, deadline, None,
                       opts.headroom_poll_interval)
            return
        interval = (opts.notification_poll_interval if wakeup.live()
                    else opts.headroom_poll_interval)
        with wakeup.WAKEUPS.watching(pending) as woken:
            with self._lock:
                self._woken.add(woken)
            try:
                self._poll(ctx, cell_uuid, pending, rid, deadline, woken,
                           interval)
            finally:
                with self._lock:
                    self._woken.discard(woken)

    def _poll(self, ctx, cell_uuid, pending, rid, deadline, woken,
              interval):
        """Check the noticed victims every ``interval`` seconds (or when
        ``woken``, a ``threading.Event`` of :mod:`.wakeup`, is set by a
        notification about one of them) and act on each released early
        or due.
        """
        while pending and not self._stop.is_set():
            if woken is not None:
                woken.clear()
            now = timeutils.utcnow(with_timezone=True)
            due = now >= deadline
            found = actions._states(ctx, cell_uuid, pending)
            ready = []
            for uuid in sorted(pending):
                inst = found.get(uuid)
                if inst is None or inst.deleted:
                    pending.discard(uuid)
                    continue
                early = rules.released_early(
                    inst.vm_state, inst.task_state, inst.power_state)
                if due or early:
                    ready.append(uuid)
                    if early and not due:
                        LOG.info('Headroom: victim %s released early (vm '
                                 'state %s, task state %s, power state %s)'
                                 ' %.1f s before its deadline', uuid,
                                 inst.vm_state, inst.task_state,
                                 inst.power_state,
                                 (deadline - now).total_seconds())
            if ready:
                pending.difference_update(ready)
                self.act(ctx, cell_uuid, ready, rid)
            if pending:
                left = (deadline - timeutils.utcnow(
                    with_timezone=True)).total_seconds()
                pause = max(min(interval, left), 0.01)
                if woken is not None:
                    woken.wait(pause)
                else:
                    self._stop.wait(pause)

    def act(self, ctx, cell_uuid, uuids, rid):
        """Interrupt noticed victims of decision ``rid`` now: each record
        swapped from ``noticed`` to ``reserved`` (compare-and-set: one taken
        by another actor is skipped), then the ordinary termination
        (:func:`opie_sched.scheduler.actions.terminate`, no further
        notice), the operators' notification and the next step of a
        stopped or shelved victim.

        :returns: uuids whose interruption was requested.
        """
        cctxt = reservations.cell_context(ctx, cell_uuid)
        now = timeutils.utcnow(with_timezone=True)
        rows = reservations.load_by_uuid(cctxt, uuids)
        mine = []
        for uuid in uuids:
            row = rows.get(uuid)
            vs = ownership.victim_state(row) if row is not None else None
            if (vs is None or vs.state != victim_state.NOTICED
                    or vs.request_id != rid):
                LOG.info('Headroom: victim %s was taken or spared by '
                         'another actor; left alone', uuid)
                continue
            new = dataclasses.replace(vs, state=victim_state.RESERVED,
                                      since=now, next_attempt=None)
            try:
                if reservations.swap_state(cctxt, row, vs, new):
                    mine.append(uuid)
            except exception.InstanceNotFound:
                continue
        if not mine:
            return []
        actx = ctx.elevated()
        actx.request_id = rid
        done = actions.terminate(actx, cell_uuid, mine, CAUSE,
                                 notice=False)
        if done:
            actions.release(actx, cell_uuid, done, wait=False)
        return done

    def _act_on_overdue(self, ctx, noticed, now):
        """Victims noticed by a process that stopped waiting (not this
        one's waiters) whose deadline has passed: acted upon now.
        """
        with self._lock:
            waiting = set(self._waiting)
        overdue = {}
        for uuid, (cell_uuid, vs) in noticed.items():
            if (uuid in waiting or vs.preemptor != CAUSE
                    or vs.next_attempt is None or now < vs.next_attempt):
                continue
            overdue.setdefault((cell_uuid, vs.request_id), []).append(uuid)
        for (cell_uuid, rid), uuids in sorted(overdue.items()):
            LOG.info('Headroom: victims %s are past their deadline with '
                     'nobody waiting for them; interrupted now', uuids)
            self.act(ctx, cell_uuid, uuids, rid)

    def stop(self, timeout=None):
        """End this keeper's waits without acting (the victims keep their
        ``noticed`` records: the next round of any reconciler acts on
        them at their deadline) and wait for the threads.
        """
        self._stop.set()
        with self._lock:
            for woken in self._woken:
                woken.set()
        return self.join(timeout)

    def join(self, timeout=None):
        """Wait for this keeper's waiter threads (tests, shutdown).

        :returns: True when none is left running.
        """
        end = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            threads = list(self._threads)
        for t in threads:
            t.join(None if end is None else max(end - time.monotonic(), 0))
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            return not self._threads
