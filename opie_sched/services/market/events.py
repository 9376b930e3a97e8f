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
"""The market's durable record of what happened to preemptible servers.

Two writers fill the ``market_events`` and ``market_lifetimes`` tables
(:mod:`.db.models`):

* :class:`EventRecorder`, an oslo.messaging notification endpoint next to
  the :class:`.listener.DemandTracker` (``[opie_market]
  listen_notifications``): the scheduler's and reconciler's
  ``opie.instance.preempt`` (one ``interruption`` per victim, cause from
  the preemptor: a server uuid is the ``scheduler``, else the cause word
  ``reconciler`` or ``max-lifetime``), the reconciler's
  ``opie.instance.restore`` (one ``restore``), Nova's
  ``instance.create.end``
  (a preemptible server's life starts) and ``instance.delete.end`` (its
  owner deleted it: ``deleted``, the life censored unless it was
  interrupted first).
* :func:`observe` and :func:`record_period`, called by the engine once
  per period: a running preemptible server the market sees for the first
  time starts a life; a server that ran (an open life, or in the last
  period's snapshot) and runs no more has its Nova instance actions read
  (:meth:`.cloud.Cloud.instance_actions`, deleted servers included): the
  scheduler's and its reconciler's ``preempt_notice`` and ``preempt``
  actions, which users cannot write, are recorded as ``notice`` and
  ``interruption`` events (cause ``scheduler``; the behaviour from the
  verb Nova recorded after it: :func:`scheduler_events`), without the
  notification listener; an open life still not interrupted is then
  censored (``left``: stopped or deleted by its owner while
  notifications were off); the market's own notices and interruptions
  are recorded from the period's report, an interruption drill's as
  ``drill`` (cause ``drill``; it ends no life). A drill's at-risk mark
  and notice are recorded by the API with its notice
  (:meth:`.db.api.MarketStore.start_drill`).

Everything written comes from the services (notification payloads of
opie and Nova, the market's own decisions, Nova's server records), never
from what a user can write (server metadata, names, tags). Writers never
raise: a failure is logged and the period or notification goes on.
"""

from oslo_log import log as logging
from oslo_utils import timeutils
from oslo_utils import uuidutils

from opie_sched.preemption import victim_state
from opie_sched.services.market import cloud as market_cloud
from opie_sched.services.market.db import models

LOG = logging.getLogger(__name__)

#: Event types the recorder reads.
EVENT_SCHEDULER_PREEMPT = 'opie.instance.preempt'
EVENT_CREATE_END = 'instance.create.end'
EVENT_DELETE_END = 'instance.delete.end'
#: The reconciler's automatic restore (a preempted server runs again).
EVENT_SCHEDULER_RESTORE = 'opie.instance.restore'

#: The scheduler's cause words (:mod:`opie_sched.preemption.victim_state`)
#: as they appear in ``preemptor_uuid`` when no server was the preemptor.
CAUSE_WORDS = {models.CAUSE_RECONCILER, models.CAUSE_LIFETIME,
               models.CAUSE_SCHEDULER, models.CAUSE_DRILL}


#: Nova instance actions the scheduler and its reconciler record on a
#: victim (:mod:`opie_sched.preemption.victim_state`): its notice, its
#: interruption.
NOTICE_ACTION = victim_state.NOTICE_ACTION
PREEMPT_ACTION = victim_state.PREEMPT_ACTION
#: Nova's instance actions of the interruption verbs, as the behaviour
#: they apply.
VERB_ACTIONS = {'stop': victim_state.STOP, 'shelve': victim_state.SHELVE,
                'shelveOffload': victim_state.SHELVE,
                'delete': victim_state.DELETE}
#: Seconds within which the listener's ``opie.instance.preempt`` (its
#: notification's timestamp) and the victim's ``preempt`` instance action
#: (its start) are one interruption (:meth:`.db.api.MarketStore.
#: add_event` ``near``): the scheduler emits the notification right
#: after the victim's verb.
SAME_EVENT_SECONDS = 120


def scheduler_events(actions, since=None):
    """The scheduler's notices and interruptions of a server from its Nova
    instance actions.

    :param actions: ``[(action name, start epoch seconds)]`` as Nova lists
        them (newest first; equal start times keep that order).
    :param since: epoch seconds; older actions are left out (None: all).
    :returns: ``[(kind, at, behaviour)]`` oldest first: ``(notice, t,
        None)`` per ``preempt_notice``, ``(interruption, t, b)`` per
        ``preempt``, ``b`` the behaviour of the first verb recorded after
        it (:data:`VERB_ACTIONS`) or None.
    """
    ordered = sorted(
        ((start, name) for name, start in reversed(list(actions))
         if start is not None and (since is None or start >= since)),
        key=lambda item: item[0])
    found = []
    for i, (start, name) in enumerate(ordered):
        if name == NOTICE_ACTION:
            found.append((models.EVENT_NOTICE, start, None))
        elif name == PREEMPT_ACTION:
            verb = next((VERB_ACTIONS[n] for _t, n in ordered[i + 1:]
                         if n in VERB_ACTIONS), None)
            found.append((models.EVENT_INTERRUPTION, start, verb))
    return found


def record_scheduler_actions(store, cloud, uuid, project, since=None,
                             flavor=None, host=None):
    """Record the scheduler's notices and interruptions of one server from
    its instance actions (:func:`scheduler_events`); an interruption ends
    its life (``interrupted``). Replays add nothing (the same ``at``), nor
    does an interruption the listener recorded already
    (:data:`SAME_EVENT_SECONDS`).

    :returns: the number of events recorded now.
    """
    recorded = 0
    for kind, at, behaviour in scheduler_events(
            cloud.instance_actions(uuid), since):
        if kind == models.EVENT_NOTICE:
            detail = 'notice of the scheduler or its reconciler'
        else:
            detail = 'preempted by the scheduler or its reconciler'
            store.end_lifetime(uuid, at, models.END_INTERRUPTED)
        recorded += int(store.add_event(
            uuid, project, kind, at, cause=models.CAUSE_SCHEDULER,
            action=behaviour, host=host, flavor=flavor, detail=detail,
            near=SAME_EVENT_SECONDS))
    return recorded


def cause_of(preemptor):
    """The cause of a scheduler preemption from its ``preemptor_uuid``:
    a server uuid means the scheduler made room for it; a cause word is
    kept; anything else is ``scheduler``.
    """
    if preemptor in CAUSE_WORDS:
        return preemptor
    return models.CAUSE_SCHEDULER


def _data(obj):
    if isinstance(obj, dict):
        for key in ('nova_object.data', 'opie_object.data'):
            if key in obj:
                return obj[key]
    return obj or {}


def _when(metadata):
    """Epoch seconds of a notification (its ``timestamp``, UTC), else
    now.
    """
    stamp = (metadata or {}).get('timestamp')
    if stamp:
        try:
            return timeutils.parse_isotime(str(stamp)).timestamp()
        except ValueError:
            pass
    return timeutils.utcnow(with_timezone=True).timestamp()


class EventRecorder:
    """oslo.messaging notification endpoint writing events and lifetimes
    to ``store`` (:class:`.db.api.MarketStore`).

    :param tracker: optional :class:`.listener.DemandTracker` (a victim's
        flavor and size when no life was recorded for it yet).
    """

    def __init__(self, store, tracker=None):
        self.store = store
        self.tracker = tracker

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        """oslo.messaging notification endpoint (never raises)."""
        try:
            self.apply(event_type, payload, _when(metadata))
        except Exception:
            LOG.exception('could not record %s', event_type)

    def apply(self, event_type, payload, when):
        """Record one notification at ``when`` (epoch seconds).

        :returns: the number of events recorded.
        """
        if event_type == EVENT_SCHEDULER_PREEMPT:
            return self._preempt(_data(payload), when)
        if event_type == EVENT_CREATE_END:
            return self._created(_data(payload), when)
        if event_type == EVENT_DELETE_END:
            return self._deleted(_data(payload), when)
        if event_type == EVENT_SCHEDULER_RESTORE:
            return self._restored(_data(payload), when)
        return 0

    def _restored(self, data, when):
        """One ``restore`` event (cause ``reconciler``). The server's
        life is not reopened: one life per server (:func:`observe`).
        """
        uuid, project = data.get('uuid'), data.get('project_id')
        if not (uuidutils.is_uuid_like(uuid) and project):
            return 0
        flavor = (self.store.get_lifetime(uuid) or {}).get('flavor')
        return int(self.store.add_event(
            uuid, project, models.EVENT_RESTORE, when,
            cause=models.CAUSE_RECONCILER, host=data.get('host'),
            flavor=flavor, detail='restored after %s interruption(s)'
            % data.get('interruptions')))

    def _known(self, uuid):
        if self.tracker is None:
            return None
        for info in self.tracker.servers():
            if info.uuid == uuid:
                return info
        return None

    def _preempt(self, data, when):
        cause = cause_of(data.get('preemptor_uuid'))
        action, host = data.get('action'), data.get('host')
        recorded = 0
        for victim in data.get('victims') or ():
            v = _data(victim)
            uuid, project = v.get('uuid'), v.get('project_id')
            if not (uuidutils.is_uuid_like(uuid) and project):
                continue
            info = self._known(uuid)
            flavor = info.flavor_name if info is not None else None
            if flavor is None:
                flavor = (self.store.get_lifetime(uuid) or {}).get('flavor')
            if info is not None:
                self.store.start_lifetime(
                    uuid, project, info.created_at or when, flavor,
                    info.vcpus, info.memory_mb, host)
            kind = (models.EVENT_DRILL if cause == models.CAUSE_DRILL
                    else models.EVENT_INTERRUPTION)
            if self.store.add_event(
                    uuid, project, kind, when,
                    cause=cause, action=action, host=host, flavor=flavor,
                    detail='preempted by the %s' % cause,
                    near=SAME_EVENT_SECONDS):
                recorded += 1
            if cause != models.CAUSE_DRILL:
                self.store.end_lifetime(uuid, when, models.END_INTERRUPTED)
        return recorded

    @staticmethod
    def _flavor(data):
        flavor = _data(data.get('flavor'))
        return flavor if isinstance(flavor, dict) else {}

    def _preemptible_server(self, data):
        """``(flavor, uuid, project)`` of the server of a nova
        instance notification's payload ``data`` (dict), or None when
        it is not preemptible or names no server or project.
        """
        flavor = self._flavor(data)
        if not market_cloud.is_preemptible(flavor.get('extra_specs') or {},
                                           flavor.get('name')):
            return None
        uuid, project = data.get('uuid'), data.get('tenant_id')
        if not (uuid and project):
            return None
        return flavor, uuid, project

    def _created(self, data, when):
        server = self._preemptible_server(data)
        if server is None:
            return 0
        flavor, uuid, project = server
        started = market_cloud.epoch(data.get('launched_at')) or \
            market_cloud.epoch(data.get('created_at')) or when
        self.store.start_lifetime(uuid, project, started, flavor.get('name'),
                                  int(flavor.get('vcpus') or 0),
                                  int(flavor.get('memory_mb') or 0),
                                  data.get('host'))
        return 0

    def _deleted(self, data, when):
        server = self._preemptible_server(data)
        if server is None:
            return 0
        flavor, uuid, project = server
        self.store.end_lifetime(uuid, when, models.END_DELETED)
        return int(self.store.add_event(
            uuid, project, models.EVENT_DELETED, when,
            cause=models.CAUSE_OWNER, host=data.get('host'),
            flavor=flavor.get('name'), detail='deleted'))


def observe(store, infos, now, cloud=None):
    """Lives seen by the engine at ``now``: start one per running
    preemptible server (``infos``: :class:`.cloud.ServerInfo`); for every
    server that ran (an open life, or a server of the latest period's
    snapshot) and is not among them, record the scheduler's notices and
    interruptions from its instance actions when ``cloud`` (a
    :class:`.cloud.Cloud`) is given (:func:`record_scheduler_actions`),
    then censor (``left``) its life if still open. One life per server: a
    server that runs again after its life ended (an owner's stop and
    start, a restore) is not followed again; its later interruptions are
    recorded while it is in the snapshots. Never raises (a server whose
    actions cannot be read is logged and skipped).
    """
    try:
        running = {i.uuid for i in infos}
        for info in infos:
            store.start_lifetime(info.uuid, info.project,
                                 info.created_at or now, info.flavor_name,
                                 info.vcpus, info.memory_mb, info.host)
        gone = {lt['server_uuid']: lt for lt in store.lifetimes(
            open_only=True) if lt['server_uuid'] not in running}
        latest = store.latest_period() if cloud is not None else None
        if latest is not None:
            for row in store.period_servers(latest['period_start']):
                uuid = row['server_uuid']
                if uuid not in running and uuid not in gone:
                    gone[uuid] = store.get_lifetime(uuid) or {
                        'project': row['project']}
        for uuid, lt in sorted(gone.items()) if cloud else ():
            try:
                record_scheduler_actions(
                    store, cloud, uuid, lt['project'], lt.get('started_at'),
                    lt.get('flavor'), lt.get('host'))
            except Exception:
                LOG.exception('could not read the instance actions of %s',
                              uuid)
        for lt in store.lifetimes(open_only=True):
            if lt['server_uuid'] not in running:
                store.end_lifetime(lt['server_uuid'], now, models.END_LEFT)
    except Exception:
        LOG.exception('could not record the lives of preemptible servers')


def record_period(store, report, now):
    """The market's own notices (``report.notices``) and interruptions
    (``report.preempted``) of an engine tick as events. Never raises.
    """
    try:
        wanted = set(report.notices) | set(report.preempted)
        if not wanted:
            return
        notices = {n['server_uuid']: n for n in store.notices()
                   if n['server_uuid'] in wanted}
        lives = {lt['server_uuid']: lt for lt in store.lifetimes()
                 if lt['server_uuid'] in wanted}
        for uuid in report.notices:
            n = notices.get(uuid)
            if n is not None:
                store.add_event(uuid, n['project'], models.EVENT_NOTICE,
                                n['noticed_at'], cause=models.CAUSE_MARKET,
                                flavor=(lives.get(uuid) or {}).get('flavor'),
                                detail='%s, deadline %s: %s' % (
                                    n['kind'],
                                    market_cloud.iso(n['deadline']),
                                    n['reason']))
        for uuid in report.preempted:
            n = notices.get(uuid)
            if n is None:
                continue
            lt = lives.get(uuid) or {}
            if n['kind'] == models.KIND_DRILL:
                # its owner's drill: recorded as one, its life goes on
                store.add_event(uuid, n['project'], models.EVENT_DRILL,
                                now, cause=models.CAUSE_DRILL,
                                action=n.get('action'), host=lt.get('host'),
                                flavor=lt.get('flavor'), detail=n['reason'])
                continue
            store.add_event(uuid, n['project'], models.EVENT_INTERRUPTION,
                            now, cause=models.CAUSE_MARKET,
                            action=n.get('action'), host=lt.get('host'),
                            flavor=lt.get('flavor'),
                            detail='%s: %s' % (n['kind'], n['reason']))
            store.end_lifetime(uuid, now, models.END_INTERRUPTED)
    except Exception:
        LOG.exception('could not record the market\'s events')
