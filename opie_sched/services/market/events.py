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
  time starts a life, an open life whose server no longer runs is
  censored (``left``: stopped or deleted by its owner while notifications
  were off); the market's own notices and interruptions are recorded
  from the period's report, an interruption drill's as ``drill`` (cause
  ``drill``; it ends no life). A drill's at-risk mark and notice are
  recorded by the API with its notice
  (:meth:`.db.api.MarketStore.start_drill`).

Everything written comes from the services (notification payloads of
opie and Nova, the market's own decisions, Nova's server records), never
from what a user can write (server metadata, names, tags). Writers never
raise: a failure is logged and the period or notification goes on.
"""

from oslo_log import log as logging
from oslo_utils import timeutils
from oslo_utils import uuidutils

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
                    detail='preempted by the %s' % cause):
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


def observe(store, infos, now):
    """Lives seen by the engine at ``now``: start one per running
    preemptible server (``infos``: :class:`.cloud.ServerInfo`), censor
    (``left``) every open life whose server is not among them. One life
    per server: a server that runs again after its life ended (an owner's
    stop and start) is not followed again. Never raises.
    """
    try:
        running = {i.uuid for i in infos}
        for info in infos:
            store.start_lifetime(info.uuid, info.project,
                                 info.created_at or now, info.flavor_name,
                                 info.vcpus, info.memory_mb, info.host)
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
