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
"""Notices and preemptions: who is out of bid or out of credit, the
notice written on the server, and its enforcement at the deadline.
"""

import decimal

from oslo_log import log as logging

from opie_sched.market import bids as market_bids
from opie_sched.market import budget
from opie_sched.market import outbid
from opie_sched.market import pricing
from opie_sched.preemption import behaviours
from opie_sched.preemption import victim_state
from opie_sched.services.market import cloud as market_cloud
from opie_sched.services.market.db import models
from opie_sched.services.market import notifications
from opie_sched.services.market import pricer as market_pricer
from opie_sched.services.market import settings as market_settings

LOG = logging.getLogger(__name__)

#: Server metadata keys of the notice (one contract with the scheduler's:
#: :func:`opie_sched.preemption.victim_state.notice_metadata`).
NOTICE_KEY = victim_state.NOTICE_KEY
DEADLINE_KEY = victim_state.DEADLINE_KEY
#: Same keys and tag as the scheduler's victims (one definition).
PREEMPTED_BY_KEY = victim_state.PREEMPTED_BY_KEY
PREEMPTED_AT_KEY = victim_state.PREEMPTED_AT_KEY
PREEMPTED_TAG = victim_state.PREEMPTED_TAG
#: Value of ``opie:preempted_by`` for the market's victims, and for the
#: servers its owner sent through an interruption drill.
PREEMPTED_BY = 'opie-market'
PREEMPTED_BY_DRILL = 'opie-market-drill'
#: Server metadata key of the *at risk* mark, the one the scheduler's
#: headroom writes (one definition).
AT_RISK_KEY = victim_state.AT_RISK_KEY

KIND_OUT_OF_BID = 'out_of_bid'
KIND_OUT_OF_CREDIT = 'out_of_credit'
#: An interruption drill its owner asked for (never charged, never
#: counted in prices or interruption rates).
KIND_DRILL = models.KIND_DRILL

#: Why a notice is withdrawn from a server resized to a normal flavor.
NOT_PREEMPTIBLE = ('no longer preemptible (its flavor requests no '
                   'CUSTOM_PREEMPTIBLE_* class, e.g. after a resize to a '
                   'normal flavor): it left the market')

#: The flavor extra spec that chooses a server's interruption behaviour
#: (a registered one, :data:`.settings.BEHAVIORS`; the scheduler's key too,
#: :mod:`opie_sched.preemption.victim_state`); else ``[opie_market]
#: preemption_action``.
BEHAVIOR_SPEC = victim_state.BEHAVIOR_SPEC


#: Where an acknowledged notice came from (the ``notice`` field of the
#: acknowledgement): the market's own (its database), or the scheduler's
#: or its reconciler's (the victim's ``preempt_notice`` instance action).
SOURCE_MARKET = 'market'
SOURCE_SCHEDULER = 'scheduler'


class NoNotice(Exception):
    """No notice is pending on the server (nothing to acknowledge)."""


class Enforcer:
    """Gives notices and enforces them.

    :param store: :class:`opie_sched.services.market.db.api.MarketStore`.
    :param cloud: :class:`.cloud.Cloud`.
    :param settings: :class:`.settings.Settings`.
    :param credit: :class:`opie_sched.market.budget.CreditManager`.
    :param pricer: :class:`.pricer.Pricer` (the recorded markets).
    :param charger: :class:`.charging.Charger` (what servers pay).
    :param notifier: see :func:`.notifications.emit`.
    """

    def __init__(self, store, cloud, settings, credit, pricer, charger,
                 notifier=None):
        self.store = store
        self.cloud = cloud
        self.settings = settings
        self.credit = credit
        self.pricer = pricer
        self.charger = charger
        self.notifier = notifier

    def _victims(self, ps, rows, servers, prices):
        """``{uuid: (kind, reason, server)}`` of the period.

        Out of bid: :func:`opie_sched.market.outbid.select_victims` per
        pool (lowest bid first, never more than needed).

        :param rows: the period's snapshot rows (for the bid sources).
        """
        s = self.settings
        found = {}
        rejected = {r['server_uuid'] for r in rows
                    if r['bid_source'] == market_pricer.SOURCE_INVALID}
        out = [item for args in self.pricer.pool_inputs(ps).values()
               for item in outbid.select_victims(*args)]
        for item in sorted(out, key=lambda o: outbid.victim_key(
                o.server, prices.get(o.server.pool, {}))):
            reason = item.reason
            if item.server.uuid in rejected:
                reason = ('invalid bid (counted as 0): ' + reason)
            found[item.server.uuid] = (KIND_OUT_OF_BID, reason, item.server)
        keep = [srv for srv in servers if srv.uuid not in found]
        for project in sorted({srv.project for srv in keep}):
            try:
                balance = self.credit.balance(project)
            except budget.UnknownAccount:
                continue
            for srv in self.credit.out_of_credit(
                    project, keep, prices, s.period_seconds,
                    s.credit_policy):
                reason = ('out of credit: project %s has a balance of %s, '
                          'not enough for the next period of its '
                          'preemptible servers (policy %s)'
                          % (project, pricing.pretty(balance),
                             s.out_of_credit_policy))
                found[srv.uuid] = (KIND_OUT_OF_CREDIT, reason, srv)
        return found

    def give_notices(self, ps, now, servers, prices, report):
        """Notices for this period's victims; withdraw stale notices
        (the case is resolved, or the server is no longer preemptible).
        """
        victims = self._victims(ps, self.store.period_servers(ps), servers,
                                prices)
        deadline = now + self.settings.notice_period
        for uuid, (kind, reason, srv) in victims.items():
            if not self.store.add_notice(uuid, srv.project, kind, reason,
                                         ps, now, deadline):
                continue
            report.notices.append(uuid)
            LOG.warning('server %s (project %s): preemption notice, '
                        'deadline %s: %s', uuid, srv.project,
                        market_cloud.iso(deadline), reason)
            action = self._tell_owner(uuid, reason, deadline)
            notifications.preempt_notice(self.notifier, uuid, srv.project,
                                         kind, reason, deadline, action)
        in_snapshot = {srv.uuid for srv in servers}
        for notice in self.store.notices(state=models.NOTICED):
            uuid = notice['server_uuid']
            if uuid in victims:
                continue
            if uuid in in_snapshot and notice['kind'] != KIND_DRILL:
                self._cancel(notice, 'no longer %s' % notice['kind'], report)
                continue
            try:
                info = self.cloud.get_server(uuid)
            except Exception:
                LOG.exception('could not read server %s', uuid)
                continue
            if info is not None and not info.busy and not info.preemptible:
                self._cancel(notice, NOT_PREEMPTIBLE, report, info)

    def behavior(self, info):
        """What happens to ``info`` (:class:`.cloud.ServerInfo`) at its
        deadline: its flavor's ``opie:interruption_behavior`` when it is a
        registered behaviour (:mod:`opie_sched.preemption.behaviours`),
        else ``preemption_action``; then, when Nova refuses that
        behaviour's verb in the server's state (e.g. ``shelve`` of a
        rescued server), its fallback (``delete``). The flavor is
        operator-owned (user metadata is never read for it).
        """
        return self._plan(info)[0]

    def _plan(self, info, first=True):
        """``(behaviour, verb)`` for ``info`` now
        (:func:`opie_sched.preemption.behaviours.resolve`; verb None:
        nothing to send).
        """
        value = (info.extra_specs or {}).get(BEHAVIOR_SPEC) if info else None
        name = value if value in market_settings.BEHAVIORS else (
            self.settings.preemption_action)
        if info is None:
            return name, None
        return behaviours.resolve(
            name, behaviours.STATUS_VM_STATES.get(info.status,
                                                  info.status.lower()),
            info.task_state, first)

    def give_drill_notice(self, info, notice_seconds, now, asked_by):
        """Start an interruption drill on ``info`` (a preemptible server
        its owner or an admin asked for): the notice (kind ``drill``, its
        at-risk mark and notice recorded as events, the project's drill
        limit counted, one transaction: :meth:`.db.api.MarketStore.
        start_drill`), then the server's at-risk mark and notice, the keys
        and text a market notice writes; at the deadline
        :meth:`enforce` interrupts it by its behaviour, as any notice.

        :param notice_seconds: seconds to the deadline (<=
            ``notice_period``).
        :param asked_by: who asked (a user id), for the service's log
            only.
        :raises opie_sched.services.market.db.api.AlreadyNoticed: a
            notice is pending.
        :raises opie_sched.services.market.db.api.DrillLimited: the
            project is at ``drill_limit``.
        :raises Exception: writing the server's metadata failed (the
            notice is withdrawn again).
        :returns: ``(notice dict, behaviour told)``.
        """
        s = self.settings
        deadline = now + notice_seconds
        action = self.behavior(info)
        # no user or project id: the text is shown to the guest
        reason = ('interruption drill asked through the market API (never '
                  'charged, never counted in interruption rates)')
        latest = self.store.latest_period()
        notice = self.store.start_drill(
            info.uuid, info.project, reason,
            latest['period_start'] if latest else int(now), now, deadline,
            s.drill_limit, s.drill_window, info.flavor_name, info.host)
        try:
            metadata = {AT_RISK_KEY: market_cloud.iso(now)}
            metadata.update(victim_state.notice_metadata(
                market_cloud.iso(deadline), action, reason))
            self.cloud.set_metadata(info.uuid, metadata)
        except Exception:
            self.store.set_notice_state(info.uuid, models.CANCELLED)
            raise
        LOG.warning('server %s (project %s): interruption drill, deadline '
                    '%s (%s), asked by %s', info.uuid, info.project,
                    market_cloud.iso(deadline), action, asked_by)
        notifications.preempt_notice(self.notifier, info.uuid, info.project,
                                     KIND_DRILL, reason, deadline, action)
        return notice, action

    def pending(self, info, now):
        """The notice pending on ``info`` (:class:`.cloud.ServerInfo`),
        read only where users cannot write: the market's notices (its
        database, state ``noticed``), else the scheduler's and its
        reconciler's (the server's newest ``preempt_notice`` instance
        action with no ``preempt`` after it, younger than
        ``scheduler_notice_window``:
        :func:`opie_sched.preemption.victim_state.pending_notice`), whose
        notice keys must still be on the server (the scheduler removes
        them when it spares the victim). The notice keys alone, which the
        owner can write, never make a notice.

        :returns: ``(source, notice)``: ``("market", notice dict)`` or
            ``("scheduler", {"noticed_at": epoch seconds})``.
        :raises NoNotice: none is pending.
        """
        for n in self.store.notices(state=models.NOTICED,
                                    project=info.project):
            if n['server_uuid'] == info.uuid:
                return SOURCE_MARKET, n
        if DEADLINE_KEY in (info.metadata or {}):
            noticed_at = victim_state.pending_notice(
                self.cloud.instance_actions(info.uuid), now,
                self.settings.scheduler_notice_window)
            if noticed_at is not None:
                return SOURCE_SCHEDULER, {'noticed_at': noticed_at}
        raise NoNotice('server %s has no pending preemption notice'
                       % info.uuid)

    def acknowledge(self, info, now, asked_by):
        """Its owner's acknowledgement of the notice pending on ``info``
        (:meth:`pending`): the server's interruption runs now, as it
        would at the deadline (:meth:`behavior`, with its fallback), so
        that a request waiting on it proceeds (the scheduler's wait ends
        when its victim stops, shelves or goes:
        :func:`opie_sched.preemption.headroom.released_early`).

        A market notice moves to ``preempted`` first (one of several
        replicas, or the enforcement at the deadline, acts) and the server
        is marked as at its deadline; a scheduler notice gets only the
        verb (the scheduler marks and finishes its victim as it does when
        the owner stops it). Recorded as one ``ack`` event (cause
        ``owner``); the life of a server whose notice was no drill ends
        as interrupted. No ledger entry: the ack charges nothing, the
        periods the server ran are charged as always.

        :param asked_by: who asked (a user id), for the service's log.
        :raises NoNotice: none is pending (or another actor took it).
        :returns: ``{"notice": source, "kind", "noticed_at", "deadline"
            (market notices; None for the scheduler's), "action"}``.
        """
        source, notice = self.pending(info, now)
        uuid = info.uuid
        if source == SOURCE_MARKET:
            action = self.behavior(info)
            if not self.store.set_notice_state(uuid, models.PREEMPTED,
                                               action):
                raise NoNotice('the notice of server %s was taken by the '
                               'enforcement meanwhile' % uuid)
            try:
                applied = self._preempt(uuid, notice, info, now)
            except Exception:
                self.store.set_notice_state(uuid, models.NOTICED,
                                            expected=models.PREEMPTED)
                raise
            if applied != action:
                self.store.set_notice_state(uuid, models.PREEMPTED, applied,
                                            expected=models.PREEMPTED)
            kind, deadline = notice['kind'], notice['deadline']
        else:
            applied = self._send(uuid, info, True)
            kind, deadline = SOURCE_SCHEDULER, None
        left = '' if deadline is None else ', %d s before its deadline %s' % (
            max(0, deadline - now), market_cloud.iso(deadline))
        detail = 'acknowledged by its owner (%s notice%s): %s now' % (
            kind, left, applied)
        try:
            self.store.add_event(uuid, info.project, models.EVENT_ACK, now,
                                 cause=models.CAUSE_OWNER, action=applied,
                                 host=info.host, flavor=info.flavor_name,
                                 detail=detail)
            if kind != KIND_DRILL:
                self.store.end_lifetime(uuid, now, models.END_INTERRUPTED)
        except Exception:
            LOG.exception('could not record the acknowledgement of server '
                          '%s', uuid)
        LOG.warning('server %s (project %s): notice acknowledged by %s; '
                    '%s now (%s)', uuid, info.project, asked_by, applied,
                    source)
        return {'notice': source, 'kind': kind,
                'noticed_at': notice['noticed_at'], 'deadline': deadline,
                'action': applied}

    def _tell_owner(self, uuid, reason, deadline):
        """Write the notice on the server; returns the behaviour told."""
        action = self.settings.preemption_action
        try:
            action = self.behavior(self.cloud.get_server(uuid))
        except Exception:
            LOG.exception('could not read server %s', uuid)
        try:
            self.cloud.set_metadata(uuid, victim_state.notice_metadata(
                market_cloud.iso(deadline), action, reason))
        except Exception:
            LOG.exception('could not write the notice on server %s', uuid)
        return action

    def _cancel(self, notice, why, report, info=None):
        """Withdraw a notice: its state ``cancelled`` (once, of several
        replicas), then its keys removed from the server's metadata only
        while they still show the market's deadline. The scheduler and the
        reconciler write their own notice in the same keys when they
        choose the server as a victim; theirs is kept. (Nova has no
        conditional metadata delete: a scheduler notice written between
        this read and the delete is still lost; the window is one API
        round trip, not a period.)

        :param info: the server as just read (:class:`.cloud.ServerInfo`),
            or None: read it here.
        """
        uuid = notice['server_uuid']
        if not self.store.set_notice_state(uuid, models.CANCELLED):
            return
        report.cancelled.append(uuid)
        LOG.info('server %s: preemption notice withdrawn (%s)', uuid, why)
        try:
            if info is None:
                info = self.cloud.get_server(uuid)
            if info is None:
                return
            shown = (info.metadata or {}).get(DEADLINE_KEY)
            if shown != market_cloud.iso(notice['deadline']):
                # the notice keys are shared with the scheduler and the
                # reconciler (opie_sched.scheduler.actions.give_notice):
                # a notice with another deadline is theirs, given since
                # (the server was chosen as a victim); it stays
                LOG.info('server %s: the notice shown (deadline %s) is '
                         'not the market\'s; kept', uuid, shown)
                return
            self.cloud.delete_metadata(uuid, [NOTICE_KEY, DEADLINE_KEY] + (
                [AT_RISK_KEY] if notice['kind'] == KIND_DRILL else []))
        except Exception:
            LOG.exception('could not remove the notice of server %s', uuid)

    # -- enforcing ---------------------------------------------------------

    def _still_victim(self, notice, info):
        """Whether a noticed server is still to be preempted now.

        Only a preemptible server (the ownership model's rule: the
        preemptible classes its flavor copy requests,
        :attr:`.cloud.ServerInfo.preemptible`) in no transition is ever
        preempted.
        """
        if not info.preemptible:
            return False
        if notice['kind'] == KIND_DRILL:
            # asked for by its owner: interrupted whatever its market
            return True
        latest = self.store.latest_period()
        if latest is None:
            return True
        ps = latest['period_start']
        if notice['kind'] == KIND_OUT_OF_BID:
            try:
                bid, _ = market_bids.resolve_bid(
                    info.metadata, info.extra_specs,
                    self.settings.default_bid, self.settings.bid_cap)
            except market_bids.BidError:
                return True
            gone = {n['server_uuid'] for n in self.store.notices(
                state=models.PREEMPTED)}
            inputs = self.pricer.pool_inputs(ps, bids={info.uuid: bid},
                                      exclude=gone - {info.uuid})
            for args in inputs.values():
                if info.uuid in {srv.uuid for srv in args[0]}:
                    return info.uuid in {
                        o.server.uuid for o in outbid.select_victims(*args)}
            return True
        noticed = {n['server_uuid'] for n in self.store.notices(
            project=notice['project']) if n['state'] == models.PREEMPTED
            and n['server_uuid'] != info.uuid}
        prices = self.store.period_prices(ps)
        mine = [srv for srv in self.charger.charged_servers(
                    self.pricer.assess(ps))
                if srv.project == notice['project']
                and srv.uuid not in noticed]
        victims = self.credit.out_of_credit(
            notice['project'], mine, prices, self.settings.period_seconds,
            self.settings.credit_policy)
        return notice['server_uuid'] in {v.uuid for v in victims}

    def enforce(self, ps, now, report):
        """Preempt every server whose notice expired at ``now``, each by
        its interruption behaviour (:meth:`behavior`).
        """
        latest = self.store.latest_period()
        order, prices = {}, {}
        if latest is not None:
            order = {r['server_uuid']: market_pricer.snapshot_server(r)
                     for r in self.store.period_servers(
                         latest['period_start'])}
            prices = self.store.period_prices(latest['period_start'])
        self.next_steps(now, report)
        due = [n for n in self.store.notices(state=models.NOTICED)
               if n['deadline'] <= now]
        # lowest bid per unit first: a victim spared by an earlier
        # preemption in this tick sees the market without it (never more
        # than needed)
        inf = decimal.Decimal('Infinity')
        due.sort(key=lambda n: (n['deadline'],) + (
            outbid.victim_key(order[n['server_uuid']], prices.get(
                order[n['server_uuid']].pool, {}))
            if n['server_uuid'] in order
            else (inf, inf, True, 0, n['server_uuid'])))
        for notice in due:
            uuid = notice['server_uuid']
            try:
                info = self._check(notice, report)
                if not info:
                    continue
                action = self.behavior(info)
                if not self.store.set_notice_state(uuid, models.PREEMPTED,
                                                   action):
                    continue  # another replica took it
                try:
                    # just before acting: read the server once more
                    info = self._check(notice, report, taken=True)
                    if not info:
                        continue
                    applied = self._preempt(uuid, notice, info, now)
                    if applied != action:
                        self.store.set_notice_state(
                            uuid, models.PREEMPTED, applied,
                            expected=models.PREEMPTED)
                except Exception:
                    self.store.set_notice_state(uuid, models.NOTICED,
                                                expected=models.PREEMPTED)
                    raise
                report.preempted.append(uuid)
            except Exception as exc:
                LOG.exception('preempting server %s failed; retrying at the '
                              'next tick', uuid)
                report.errors.append('preempt %s: %s' % (uuid, exc))

    def _check(self, notice, report, taken=False):
        """Read the noticed server and decide whether to act now.

        A gone server closes the notice (``gone``); a server that is no
        longer preemptible (resized to a normal flavor) or whose case was
        resolved gets its notice withdrawn; a busy server (resize,
        migration, ...) waits for the next tick. ``taken``: the notice was
        already moved to ``preempted`` by this replica (it is moved back,
        or closed, when the server is spared).

        :returns: the :class:`.cloud.ServerInfo` read, to preempt now; False
            otherwise.
        """
        uuid = notice['server_uuid']
        info = self.cloud.get_server(uuid)
        if info is None:
            self.store.set_notice_state(
                uuid, models.GONE,
                expected=models.PREEMPTED if taken else models.NOTICED)
            return False
        if info.busy:
            LOG.info('server %s is busy (%s, task %s): its preemption '
                     'waits for the next tick', uuid, info.status,
                     info.task_state)
            if taken:
                self.store.set_notice_state(uuid, models.NOTICED,
                                            expected=models.PREEMPTED)
            return False
        if info.status == market_cloud.VERIFY_RESIZE:
            # Past its deadline and waiting for its resize to be
            # confirmed: confirm it, decide at the next tick. Resized to a
            # normal flavor, it could still be reverted to the
            # preemptible one (so it is not withdrawn yet); resized to a
            # preemptible flavor, Nova refuses to stop it or to write its
            # metadata (the preemption marks) in vm_state resized. Either
            # way the owner cannot keep a noticed server out of reach by
            # never confirming.
            LOG.info('server %s waits in VERIFY_RESIZE past its deadline: '
                     'confirming the resize; decided at the next tick',
                     uuid)
            if taken:
                self.store.set_notice_state(uuid, models.NOTICED,
                                            expected=models.PREEMPTED)
            self.cloud.confirm_resize(uuid)
            return False
        if not info.preemptible:
            why = NOT_PREEMPTIBLE
        elif not self._still_victim(notice, info):
            why = 'the case was resolved before the deadline'
        else:
            return info
        if taken:
            self.store.set_notice_state(uuid, models.NOTICED,
                                        expected=models.PREEMPTED)
        self._cancel(notice, why, report, info)
        return False

    def _send(self, uuid, info, first):
        """Send the next verb of ``info``'s behaviour; when Nova refuses it
        (:class:`.cloud.Refused`), the behaviour's fallback's.

        :returns: the behaviour applied (its name).
        """
        applied, verb = self._plan(info, first)
        if verb is None:
            return applied
        try:
            self.cloud.terminate(uuid, verb)
            return applied
        except market_cloud.Refused as exc:
            fallback = behaviours.fallback(applied)
            if fallback is None:
                raise
            LOG.warning('server %s: Nova refuses to %s it (%s); its '
                        'interruption behaviour falls back to %s', uuid,
                        verb, exc, fallback)
            applied, verb = behaviours.resolve(
                fallback, behaviours.STATUS_VM_STATES.get(
                    info.status, info.status.lower()), info.task_state)
            if verb is not None:
                self.cloud.terminate(uuid, verb)
            return applied

    def _preempt(self, uuid, notice, info, now):
        """Mark and interrupt a noticed server at its deadline; returns
        the behaviour applied.
        """
        self.cloud.set_metadata(uuid, {
            PREEMPTED_BY_KEY: PREEMPTED_BY_DRILL
            if notice['kind'] == KIND_DRILL else PREEMPTED_BY,
            PREEMPTED_AT_KEY: market_cloud.iso(now)})
        try:
            self.cloud.add_tag(uuid, PREEMPTED_TAG)
        except Exception:
            LOG.warning('could not tag server %s %s', uuid, PREEMPTED_TAG)
        action = self._send(uuid, info, True)
        LOG.warning('server %s (project %s) preempted (%s): %s', uuid,
                    notice['project'], action, notice['reason'])
        notifications.preempted(self.notifier, uuid, notice['project'],
                                notice['kind'], notice['reason'], action,
                                now)
        return action

    def next_steps(self, now, report):
        """The next step of servers preempted by a behaviour with a grace
        period (``stop``: stopped at the deadline, deleted at the first
        later tick at least ``stop_grace_period`` seconds after the
        deadline).

        Each is read again first: a gone server closes its notice
        (``gone``); a server no longer preemptible (resized to a normal
        flavor) is spared (``cancelled``); a busy one waits for the next
        tick; a server its owner started again is back in the market
        (charged, and noticed again if it must go: its notice is
        ``cancelled``). Otherwise the behaviour's next verb is sent (the
        delete), again at every tick until the server is gone (a lost
        delete is sent again); a fallback applied is recorded as the
        notice's action.
        """
        for notice in self.store.notices(state=models.PREEMPTED):
            action = notice['action']
            if not behaviours.is_known(action or ''):
                continue
            grace = behaviours.get(action).grace(self.settings)
            # from the deadline (the stop came at the first tick at or
            # after it, a tick before this one at the latest)
            if (behaviours.get(action).grace_option is None
                    or notice['deadline'] + grace > now):
                continue
            uuid = notice['server_uuid']
            try:
                info = self.cloud.get_server(uuid)
                if info is None:
                    self.store.set_notice_state(uuid, models.GONE, action,
                                                expected=models.PREEMPTED)
                    continue
                if not info.preemptible:
                    LOG.info('server %s: %s, its %s is not followed by a '
                             'delete', uuid, NOT_PREEMPTIBLE, action)
                    self.store.set_notice_state(uuid, models.CANCELLED,
                                                action,
                                                expected=models.PREEMPTED)
                    report.cancelled.append(uuid)
                    continue
                if info.busy:
                    continue
                if not behaviours.get(action).step_done(
                        behaviours.STATUS_VM_STATES.get(
                            info.status, info.status.lower()),
                        info.task_state, False):
                    # its owner started it again: it is charged and
                    # priced again, and noticed again if it must go
                    LOG.info('server %s was started again after its %s; '
                             'it is back in the market', uuid, action)
                    self.store.set_notice_state(uuid, models.CANCELLED,
                                                action,
                                                expected=models.PREEMPTED)
                    report.cancelled.append(uuid)
                    continue
                applied = self._send(uuid, info, False)
                if applied != action:
                    self.store.set_notice_state(uuid, models.PREEMPTED,
                                                applied,
                                                expected=models.PREEMPTED)
                LOG.warning('server %s (project %s): %s after its grace '
                            'period (%s)', uuid, notice['project'],
                            applied, action)
            except Exception as exc:
                LOG.exception('the next step of server %s failed; '
                              'retrying at the next tick', uuid)
                report.errors.append('next step %s: %s' % (uuid, exc))
