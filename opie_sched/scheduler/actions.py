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
"""Preemption actions: mark, terminate and wait for victims, and tell owners.

Each victim's owner learns that and when it was preempted, and the cause
word (``scheduler``, ``market``, ``max-lifetime``, ``reconciler``), never
another project's data:

* server metadata ``opie:preempted_by`` (the cause word) and
  ``opie:preempted_at``, and the tag ``opie-preempted``;
* an instance fault ``Preempted by the <cause>`` of code 500, whose
  ``details`` (host, preemptor, request, costs) Nova's API shows to admins
  only (shown with the server once it is deleted or in error);
* the ``preempt`` instance action followed by ``stop``/``delete``
  (``openstack server event list``, which still works once the server is
  deleted), under a request id of their own, fresh per decision (shared
  by the victims of one decision, so they can still be grouped): the
  preemptor's request id is logged with it (INFO) and kept in the
  victim's system metadata (``opie_victim_request`` and
  ``opie_victim_action_request``) for admins;
* a versioned notification ``opie.instance.preempt`` (operators) naming the
  preemptor's request, the host, each victim and its cost.

Before the first stop, shelve or delete, the guest gets the market's notice
contract (:func:`give_notice`): server metadata ``opie:preempt_notice``
and ``opie:preempt_deadline``, served in the metadata service's
``meta_data.json``, ``[opie_preemption] notice_seconds`` before the action
(default 0: at the action).

Victims are terminated through Nova's compute API (the same code path as
``openstack server delete``/``stop``), with an admin context. Every
destructive call (the first stop or delete, the later delete of a stopped
victim, a reconciler retry) first re-reads the victim and acts only when it
still exists, its flavor is still preemptible and its service-owned record
still says this actor may act
(:func:`opie_sched.preemption.victim_state.may_act`), and only after
winning the compare-and-set of that record
(:func:`opie_sched.scheduler.reservations.swap_state`).
"""

import contextlib
import copy
import dataclasses
import datetime
import threading
import time

from oslo_context import context as oslo_context
from oslo_log import log as logging
from oslo_utils import timeutils

from nova.compute import api as nova_compute_api
import nova.conf
from nova.db.main import api as main_db
from nova import exception
from nova import objects
from nova import rpc

from opie_sched.notifications import preemption as preempt_notes
from opie_sched.preemption import behaviours
from opie_sched.preemption import headroom as headroom_rules
from opie_sched.preemption import victim_state
from opie_sched.scheduler import ownership
from opie_sched.scheduler import reservations
from opie_sched.scheduler import wakeup

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF

EVENT_TYPE = preempt_notes.EVENT_TYPE
#: Instance action recorded on every victim (``openstack server event list``).
PREEMPT_ACTION = victim_state.PREEMPT_ACTION
#: Instance action recorded on a victim given a notice (the market reads
#: it before it accepts the owner's acknowledgement of that notice).
NOTICE_ACTION = victim_state.NOTICE_ACTION
#: Code of opie's instance faults: Nova's API shows a fault's ``details``
#: to admins only when its code is 500.
FAULT_CODE = 500

_compute_api = None
_api_lock = threading.Lock()


def compute_api():
    """Nova's compute API, created once per process.

    Its module is imported with this one (at the scheduler's start, before
    its workers fork), not at the first preemption: importing
    ``nova.compute.api`` took 0.58 s of the first victim delete of each
    worker on the devcloud (cProfile), on the preempting request's path.
    """
    global _compute_api
    with _api_lock:
        if _compute_api is None:
            _compute_api = nova_compute_api.API()
    return _compute_api


def reset():
    """Forget the process's compute API (it holds the clients of the
    cloud it was made for): for an in-process cloud stopped and another
    started in the same process.
    """
    global _compute_api
    with _api_lock:
        _compute_api = None


def service_context(ctx):
    """A copy of the admin context ``ctx`` carrying the token and service
    catalog of nova's service user (nova.conf ``[service_user]``), for the
    compute API calls of opie that reach another service: a shelve creates
    its snapshot image in Glance here and the compute uploads it, an
    unshelve's conductor reads it, both with the context's token (an
    admin context has none: Glance behind Keystone refuses, the catalog
    is empty). The token travels with the context over RPC.

    :returns: the copy; ``ctx`` itself when ``[service_user]`` has no
        ``auth_type`` or its token cannot be had (logged).
    """
    from keystoneauth1 import loading as ks_loading
    try:
        auth = ks_loading.load_auth_from_conf_options(CONF, 'service_user')
        if auth is None:
            return ctx
        session = ks_loading.load_session_from_conf_options(
            CONF, 'service_user', auth=auth)
        access = auth.get_access(session)
    except Exception:
        LOG.exception('Could not get a token of [service_user]; calls to '
                      'Glance (shelve, unshelve) may fail')
        return ctx
    new = copy.copy(ctx)
    new.auth_token = access.auth_token
    catalog = access.service_catalog.catalog if access.has_service_catalog() \
        else []
    # nova keeps only the parts it uses (RequestContext.__init__), in the
    # v2 form of keystonemiddleware's X-Service-Catalog, which it reads
    new.service_catalog = [v2_service(s) for s in catalog or ()
                           if s.get('type') in SERVICE_CATALOG_TYPES]
    return new


def v2_service(service):
    """A service of a Keystone v3 catalog in the v2 form nova's context
    reads (``endpoints``: ``region`` and ``publicURL``/``internalURL``/
    ``adminURL`` per region); a v2 entry is returned as it is.
    """
    endpoints = {}
    for ep in service.get('endpoints') or ():
        if 'interface' not in ep:
            return service
        region = ep.get('region_id') or ep.get('region')
        item = endpoints.setdefault(region, {'region': region})
        item['%sURL' % ep['interface']] = ep.get('url')
    return {'type': service.get('type'), 'name': service.get('name'),
            'endpoints': list(endpoints.values())}


#: The verbs whose compute API call reaches Glance.
GLANCE_VERBS = (behaviours.SHELVE_VERB, behaviours.OFFLOAD_VERB)
#: The catalog entries nova's RequestContext keeps.
SERVICE_CATALOG_TYPES = ('image', 'block-storage', 'volumev3', 'key-manager',
                         'placement', 'network', 'accelerator', 'sharev2')


def _add_fault(cctxt, instance, message, details):
    """An instance fault: ``message`` for everyone who sees the server,
    ``details`` for admins only (code 500).
    """
    fault = objects.InstanceFault(context=cctxt)
    fault.instance_uuid = instance.uuid
    fault.code = FAULT_CODE
    fault.message = message[:255]
    fault.details = details
    fault.host = CONF.host
    fault.create()


def owner_message(cause):
    """The fault message a victim's owner reads: the cause word only."""
    word = victim_state.cause_of(cause)
    if word == victim_state.CAUSE_LIFETIME:
        return 'Preempted: maximum lifetime reached'
    if word == victim_state.CAUSE_HEADROOM:
        return 'Preempted to keep free room for new servers (headroom)'
    return 'Preempted by the %s' % word


def mark_victim(cctxt, instance, cause, details):
    """Tell the owner that the instance is being preempted and why (the
    cause word): server metadata and tag (informational: the service
    never reads them back), an instance fault (``details`` for admins) and
    the ``preempt`` instance action (under ``cctxt``'s request id).

    The server metadata keys are written one by one (nova's
    ``instance_metadata_update`` without delete): the owner's own keys
    written meanwhile are kept.
    """
    cause = victim_state.cause_of(cause)
    now = timeutils.utcnow(with_timezone=True).strftime('%Y-%m-%dT%H:%M:%SZ')
    main_db.instance_metadata_update(
        cctxt, instance.uuid, {victim_state.PREEMPTED_BY_KEY: cause,
                               victim_state.PREEMPTED_AT_KEY: now}, False)
    try:
        objects.Tag(context=cctxt, resource_id=instance.uuid,
                    tag=victim_state.PREEMPTED_TAG).create()
    except exception.TooManyTags:
        LOG.warning('Instance %s has too many tags to add %s',
                    instance.uuid, victim_state.PREEMPTED_TAG)
    _add_fault(cctxt, instance, owner_message(cause), details)
    objects.InstanceAction.action_start(cctxt, instance.uuid, PREEMPT_ACTION,
                                        want_result=False)
    objects.InstanceAction.action_finish(cctxt, instance.uuid,
                                         want_result=False)


def _iso(when):
    return when.strftime('%Y-%m-%dT%H:%M:%SZ')


def notice_seconds():
    """The notice the guest gets, seconds: ``[opie_preemption]
    notice_seconds`` bounded by ``release_timeout`` and by a third of
    ``reservation_timeout`` (the victims' reservations, renewed before the
    notice, must outlive it).
    """
    opts = CONF.opie_preemption
    return max(0.0, min(opts.notice_seconds, opts.release_timeout,
                        opts.reservation_timeout / 3.0))


def notify_guests(ctx, batches, action=None):
    """Give the guest-visible notice (:func:`give_notice`) to the victims
    of several decisions at once, then wait :func:`notice_seconds` once
    (not once per decision: a multi-create's hosts share one wait).

    :param ctx: admin RequestContext; its ``request_id`` reserved them.
    :param batches: iterable of ``(cell_uuid, uuids, preempted_by)``.
    :param action: the default interruption behaviour (default
        ``[opie_preemption] action``).
    :returns: the set of uuids noticed.
    """
    action = action or CONF.opie_preemption.action
    seconds = notice_seconds()
    now = timeutils.utcnow(with_timezone=True)
    noticed = []
    by_cell = {}
    for cell_uuid, uuids, preempted_by in batches:
        cctxt = reservations.cell_context(ctx, cell_uuid)
        try:
            rows = reservations.load_by_uuid(cctxt, uuids)
        except Exception:
            LOG.exception('Could not load victims %s to give them notice',
                          uuids)
            continue
        mine = give_notice(cctxt, rows, uuids, preempted_by,
                           ctx.request_id, action, now, seconds)
        noticed.extend(mine)
        if mine:
            by_cell.setdefault(cell_uuid, []).extend(mine)
    if noticed and seconds > 0:
        LOG.info('Victims %s got %.1f s of notice; request %s waits for it',
                 sorted(noticed), seconds, ctx.request_id)
        wait_notice(ctx, by_cell, seconds)
    return set(noticed)


def wait_notice(ctx, by_cell, seconds):
    """Wait out a notice of ``seconds``, ending early when every victim no
    longer needs it (:func:`opie_sched.preemption.headroom.
    released_early`: its guest powered itself off, or its owner stopped,
    shelved or deleted it), so the waiting request proceeds at once.

    Event-driven when ``[opie_preemption] release_notifications`` is on
    and this process's listener runs (:mod:`opie_sched.scheduler.wakeup`):
    a notification of Nova about a victim wakes the wait, which re-reads
    the victims (the database decides, not the payload); the fallback
    checks are then ``notification_poll_interval`` apart. Otherwise
    polling: the victims are read (one query per cell and check) at the
    spacing of :func:`wait_for` (at once, then 1/8 of the time waited, at
    least 0.05 s and at most ``poll_interval``), so a release is seen
    within that spacing.

    :param by_cell: ``{cell_uuid: [uuids noticed]}``.
    :returns: True when the notice ended early.
    """
    end = time.monotonic() + seconds
    opts = CONF.opie_preemption
    interval = opts.poll_interval
    sparse = (opts.notification_poll_interval
              if opts.release_notifications and wakeup.live() else None)

    def early(inst):
        return headroom_rules.released_early(
            inst.vm_state, inst.task_state, inst.power_state,
            is_deleted(inst))

    for cell_uuid, uuids in by_cell.items():
        left = end - time.monotonic()
        if left <= 0 or not wait_for(ctx, cell_uuid, uuids, early, left,
                                     interval, quiet=True, sparse=sparse):
            left = end - time.monotonic()
            if left > 0:
                time.sleep(left)
            return False
    left = end - time.monotonic()
    if left > 0:
        LOG.info('Victims %s released early: the notice ends %.1f s before '
                 'its deadline', sorted(u for us in by_cell.values()
                                        for u in us), left)
    return True


def give_notice(cctxt, rows, uuids, preempted_by, request_id, action, now,
                seconds):
    """Write the guest-visible preemption notice on the victims this
    request may terminate (record ``reserved`` by ``preempted_by`` and
    ``request_id``, flavor still preemptible, not already leaving).

    Server metadata (the market's contract, served to the guest in
    ``meta_data.json`` "meta"): ``opie:preempt_deadline`` = ``now`` +
    ``seconds`` in ISO 8601 UTC, truncated to the second (so never later
    than the action, which comes ``seconds`` after ``now``), and
    ``opie:preempt_notice`` = ``preemption at <deadline>
    (<delete|stop|shelve>): preempted by the <cause>`` (the cause word
    only: never another project's data). Written key by key (the owner's
    own keys are kept). Informational: the service never reads them back.

    :param rows: uuid -> Instance (with flavor and system metadata).
    :param now: aware datetime of the notice.
    :param seconds: notice length in seconds (>= 0).
    :returns: uuids that got the notice.
    """
    deadline = _iso(now + datetime.timedelta(seconds=seconds))
    noticed = []
    for uuid in uuids:
        inst = rows.get(uuid)
        if inst is None or inst.task_state in ownership.LEAVING_TASK_STATES:
            continue
        state = ownership.victim_state(inst)
        if (not ownership.may_be_victim(inst)
                or not victim_state.may_act(state, 'terminate',
                                            preempted_by, request_id, now)):
            continue
        # what will happen: the behaviour's verb, or its fallback's
        behavior, verb = _verb(inst, _behaviour_of(inst, state, action),
                               state.state != victim_state.TERMINATING)
        if verb is None:
            continue  # released already (e.g. shelved and offloaded)
        reason = owner_message(state.preemptor).replace('Preempted',
                                                        'preempted')
        earlier = cut_from(inst, deadline)
        if earlier:
            reason = 'notice cut (was %s); %s' % (earlier, reason)
        notice = victim_state.notice_metadata(deadline, behavior, reason)
        if seconds > 0:
            # before the keys: a guest that reads its notice and
            # acknowledges it at once finds the notice's trace there
            record_notice(cctxt, uuid)
        try:
            main_db.instance_metadata_update(cctxt, uuid, notice, False)
            noticed.append(uuid)
        except exception.InstanceNotFound:
            continue
        except Exception:
            # no notice is no reason to keep the host from its owner
            LOG.exception('Could not write the preemption notice on %s',
                          uuid)
    return noticed


#: System metadata key (service-owned) of a headroom notice's deadline
#: (:mod:`opie_sched.scheduler.headroom` writes it).
HEADROOM_DEADLINE_KEY = 'opie_headroom_deadline'


def cut_from(inst, deadline):
    """The deadline of a headroom notice ``inst`` was given and that a new
    notice of ``deadline`` (ISO text) cuts, or None. Read from the victim's
    system metadata (service-owned).
    """
    sysmeta = getattr(inst, 'system_metadata', None) or {}
    earlier = victim_state.parse_time(sysmeta.get(HEADROOM_DEADLINE_KEY))
    new = victim_state.parse_time(deadline)
    if earlier is None or new is None or earlier <= new:
        return None
    return victim_state.format_time(earlier)


def _record_action(cctxt, uuid, name):
    """Record the instance action ``name`` on ``uuid`` under a fresh
    request id (never the preemptor's: the owner reads it in ``openstack
    server event list``). Errors are logged, never raised.
    """
    actx = copy.copy(cctxt)
    actx.request_id = oslo_context.generate_request_id()
    try:
        objects.InstanceAction.action_start(actx, uuid, name,
                                            want_result=False)
        objects.InstanceAction.action_finish(actx, uuid, want_result=False)
    except Exception:
        LOG.exception('Could not record the %s action on %s', name, uuid)


def record_notice(cctxt, uuid):
    """Record the :data:`NOTICE_ACTION` instance action on a victim given a
    notice (before its keys are written). It is the service-owned trace
    of the notice that the market checks before it accepts the owner's
    acknowledgement
    (:func:`opie_sched.preemption.victim_state.pending_notice`). Errors
    are logged, never raised: the notice stands without it (it only
    cannot be acknowledged through the market).
    """
    _record_action(cctxt, uuid, NOTICE_ACTION)


def withdraw_notice(cctxt, uuid):
    """Withdraw the notice of a victim that is spared: remove its keys,
    then record the :data:`~opie_sched.preemption.victim_state.
    WITHDRAW_ACTION` instance action, which ends the notice for the
    market's acknowledgement rule (keys the owner writes back make no
    notice). A server without notice keys is left alone (no action).
    Errors are logged, never raised.
    """
    keys = (victim_state.NOTICE_KEY, victim_state.DEADLINE_KEY)
    try:
        present = [k for k in keys
                   if k in main_db.instance_metadata_get(cctxt, uuid)]
    except Exception:
        LOG.exception('Could not read the notice keys of %s', uuid)
        present = list(keys)
    if not present:
        return
    for key in present:
        try:
            main_db.instance_metadata_delete(cctxt, uuid, key)
        except Exception:
            LOG.debug('No notice key %s to remove on %s', key, uuid)
    _record_action(cctxt, uuid, victim_state.WITHDRAW_ACTION)


def is_marked(cctxt, instance):
    """True when the instance already has the ``preempt`` instance action
    (:func:`mark_victim` ran for it).
    """
    return any(a.action == PREEMPT_ACTION for a in
               objects.InstanceActionList.get_by_instance_uuid(
                   cctxt, instance.uuid))


def terminate(ctx, cell_uuid, uuids, preempted_by, action=None,
              retry=False, notice=True):
    """Terminate victims, recording each attempt in their service-owned
    state so that a failed or interrupted termination is retried by the
    reconciler (:mod:`opie_sched.preemption.victim_state`).

    Each victim is re-read now and terminated only when it still exists,
    its flavor is still preemptible (else its record is cleared: it is an
    ordinary server again), and its record allows the step
    (:func:`~opie_sched.preemption.victim_state.may_act`: ``reserved`` by
    ``preempted_by`` and ``ctx.request_id``, or, with ``retry``,
    ``terminating`` and due), and after the compare-and-set of the record
    to ``terminating`` succeeded.

    :param ctx: admin RequestContext; its ``request_id`` is the request
        that reserved the victims.
    :param cell_uuid: cell of the victims' host (None: current database).
    :param uuids: victim instance uuids.
    :param preempted_by: the preemptor's instance uuid, or a cause word
        (``reconciler``, ``max-lifetime``).
    :param action: the default interruption behaviour, ``delete``,
        ``stop`` or ``shelve`` (default ``[opie_preemption] action``); a
        flavor's ``opie:interruption_behavior`` wins. Fixed in the record
        at the first step.
    :param retry: the reconciler's retry of terminations that did not
        complete (any actor's record, once its ``next_attempt`` passed;
        a victim stuck in task state ``deleting`` included).
    :param notice: give the guests their notice first and wait for it
        (:func:`notify_guests`; never on a retry). False: the caller did.
    :returns: list of uuids whose termination was requested now.
    """
    action = action or CONF.opie_preemption.action
    if notice and not retry:
        # the guest's notice first; its victims are read after it
        notify_guests(ctx, [(cell_uuid, uuids, preempted_by)], action)
    cctxt = reservations.cell_context(ctx, cell_uuid)
    rows = {}
    try:
        rows = reservations.load_by_uuid(cctxt, uuids)
    except Exception:
        LOG.exception('Could not load victims %s', uuids)
    step = 'retry' if retry else 'terminate'
    done = []
    # one request id of their own for the victims of this call (one
    # decision): never the preemptor's
    decision = oslo_context.generate_request_id()
    for uuid in uuids:
        inst = rows.get(uuid)
        if inst is None:
            LOG.info('Victim %s is already gone', uuid)
            continue
        try:
            if _terminate_one(cctxt, inst, step, preempted_by,
                              ctx.request_id, action, decision):
                done.append(uuid)
        except Exception:
            # e.g. the database went away while the record was written:
            # the other victims are still handled; a victim left
            # ``reserved`` is released by its request (the manager) or
            # when its lease ends
            LOG.exception('Could not start terminating victim %s', uuid)
    return done


def _spare(cctxt, inst, state):
    """A victim resized to a normal flavor: clear its record (whoever's it
    is: a normal server is no victim; only when it is still the one read)
    and leave it alone.
    """
    LOG.warning('Victim %s is no longer preemptible (resized); not '
                'terminating it', inst.uuid)
    # a notice (ours or the market's) no longer stands
    withdraw_notice(cctxt, inst.uuid)
    if state is not None:
        try:
            reservations.clear_state(inst, expected=state, cctxt=cctxt)
        except exception.InstanceNotFound:
            pass


def _behaviour_of(inst, state, action):
    """The victim's interruption behaviour: the one fixed in its record,
    else its flavor's ``opie:interruption_behavior``, else ``action``; a
    name no longer registered (a plugin removed) is ``delete``.
    """
    name = (state.behavior if state is not None else '') or \
        victim_state.interruption_behavior(
            getattr(inst.flavor, 'extra_specs', None), action)
    if not behaviours.is_known(name):
        LOG.warning('Victim %s: interruption behaviour %r is not '
                    'registered; deleting it', inst.uuid, name)
        return victim_state.DELETE
    return name


def _terminate_one(cctxt, inst, step, preempted_by, request_id, action,
                   decision=None):
    opts = CONF.opie_preemption
    now = timeutils.utcnow(with_timezone=True)
    state = ownership.victim_state(inst)
    if not ownership.may_be_victim(inst):
        # normal now, or pinned by its owner's move (issue 30)
        _spare(cctxt, inst, state)
        return False
    if not victim_state.may_act(state, step, preempted_by, request_id, now):
        LOG.info('Victim %s: its record (%s) does not allow the %s step of '
                 '%s (request %s); leaving it alone', inst.uuid,
                 state and state.state, step, preempted_by, request_id)
        return False
    deleting = inst.task_state in ownership.LEAVING_TASK_STATES
    first = state.state != victim_state.TERMINATING
    behavior = _behaviour_of(inst, state, action)
    refused_by = None
    if deleting:
        verb = behaviours.DELETE_VERB
    else:
        applied, verb = _verb(inst, behavior, first)
        if applied != behavior:
            # Nova refuses the behaviour's verb in this state: its
            # documented fallback (shelve -> delete), fixed in the record
            refused_by, behavior = behavior, applied
        if verb is None and _arriving(inst):
            # shelved and offloaded but being unshelved (a restore, or its
            # owner): it is taking a host now, so it is not released; the
            # reconciler's retry interrupts it once it runs
            new = state.terminating(now, opts.retry_interval,
                                    opts.max_retry_interval)
            new = dataclasses.replace(new, behavior=behavior)
            LOG.info('Victim %s is being unshelved (task state %s); it is '
                     'interrupted once it runs (retry at %s)', inst.uuid,
                     inst.task_state,
                     victim_state.format_time(new.next_attempt))
            try:
                reservations.swap_state(cctxt, inst, state, new)
            except exception.InstanceNotFound:
                pass
            return False
        if verb is None:
            # released (e.g. shelved and offloaded): the server stays in
            # its project, off any host
            _released(cctxt, inst, state, behavior, now)
            return False
    new = state.terminating(now, opts.retry_interval, opts.max_retry_interval)
    new = dataclasses.replace(new, behavior=behavior, action_request=(
        state.action_request or decision
        or oslo_context.generate_request_id()))
    if verb != behaviours.DELETE_VERB:
        # the next step belongs to this request: no retry before it
        new = dataclasses.replace(new, next_attempt=max(
            new.next_attempt, now + datetime.timedelta(
                seconds=_step_wait(behavior, opts) + opts.retry_interval)))
    try:
        if not reservations.swap_state(cctxt, inst, state, new):
            LOG.info('Victim %s: its record changed under us (another '
                     'actor acts on it); leaving it alone', inst.uuid)
            return False
    except exception.InstanceNotFound:
        LOG.info('Victim %s is already gone', inst.uuid)
        return False
    if first:
        LOG.info('Victim %s of %s (request %s): terminated under request '
                 'id %s', inst.uuid, new.preemptor, new.request_id,
                 new.action_request)
    if deleting and step != 'retry':
        # its owner (or nova) is deleting it already: nothing to call now;
        # the record makes the reconciler retry if that never finishes.
        LOG.info('Victim %s is already being deleted', inst.uuid)
        return False
    # a shelve reaches Glance (its snapshot): a token of the service user;
    # a stop or delete does not (no Keystone call on their path)
    acctxt = (service_context(cctxt) if verb in GLANCE_VERBS else cctxt)
    if acctxt is cctxt:
        acctxt = copy.copy(cctxt)
    acctxt.request_id = new.action_request
    if deleting:
        _log_stuck(acctxt, inst, new)
    try:
        # A retry marks the victim too when the first attempt stored its
        # record but died before the marks (e.g. a dropped database
        # connection): its owner always gets the preempt action.
        if first or not is_marked(acctxt, inst):
            if not first:
                # the first attempt died before its marks: its line too
                LOG.info('Victim %s of %s (request %s): terminated under '
                         'request id %s (its first attempt left no '
                         'mark)', inst.uuid, new.preemptor,
                         new.request_id, new.action_request)
            mark_victim(acctxt, inst, new.preemptor, new.reason)
        if refused_by:
            _fell_back(acctxt, inst, refused_by, behavior, new)
        try:
            getattr(compute_api(), verb)(acctxt, inst)
        except exception.InstanceInvalidState as exc:
            # refused in a state changed since it was read: the fallback
            fallback_verb = _refused(cctxt, acctxt, inst, new, verb, exc)
            if fallback_verb is None:
                # logged below with the verb Nova refused (not "None")
                raise
            verb = fallback_verb
            getattr(compute_api(), verb)(acctxt, inst)
        return True
    except exception.InstanceNotFound:
        LOG.info('Victim %s is already gone', inst.uuid)
        return False
    except Exception as exc:
        if new.attempts >= opts.max_attempts:
            LOG.error('Could not %s victim %s after %d attempts (%s); the '
                      'reconciler tries again at %s. Check its compute '
                      'service.', verb, inst.uuid, new.attempts, exc,
                      victim_state.format_time(new.next_attempt))
            _fault(acctxt, inst, new, str(exc))
        else:
            LOG.warning('Could not %s victim %s (attempt %d: %s); the '
                        'reconciler tries again at %s', verb, inst.uuid,
                        new.attempts, exc,
                        victim_state.format_time(new.next_attempt))
        return False


def _arriving(inst):
    """True for a shelved and offloaded server with a task under way (an
    unshelve: ``unshelving``, then ``spawning`` on its new host).
    """
    return (inst.vm_state == behaviours.SHELVED_OFFLOADED
            and inst.task_state is not None)


def _released(cctxt, inst, state, behavior, now):
    """A victim its behaviour released: its record becomes the restore
    record its flavor asks for (:func:`opie_sched.preemption.victim_state.
    after_release`), else is cleared. An owner whose server reached its
    flavor's ``opie:max_interruptions`` is told why it stays shelved
    (:func:`tell_restore`).
    """
    specs = getattr(inst.flavor, 'extra_specs', None)
    new = victim_state.after_release(state, behavior, inst.vm_state, specs,
                                     now)
    try:
        if not reservations.swap_state(cctxt, inst, state, new):
            return
    except exception.InstanceNotFound:
        return
    if new is None:
        LOG.info('Victim %s is released (%s, %s); its record is cleared',
                 inst.uuid, behavior, inst.vm_state)
    elif new.state == victim_state.RESTORE_PENDING:
        LOG.info('Victim %s is released (%s, %s); it is restored when '
                 'there is room (interruption %d)', inst.uuid, behavior,
                 inst.vm_state, new.interruptions)
    else:
        limit = victim_state.max_interruptions(specs)
        text = victim_state.given_up_message(new.interruptions, limit)
        LOG.info('Victim %s is released (%s, %s) and not restored: %s',
                 inst.uuid, behavior, inst.vm_state, text)
        tell_restore(cctxt, inst, text)


def tell_restore(cctxt, inst, text):
    """Tell a restore-requesting server's owner what became of it: server
    metadata ``opie:restore_status`` (informational: never read back;
    Nova's API shows an instance fault only for a server in ERROR or
    deleted, never for a shelved one). Errors are logged.
    """
    try:
        main_db.instance_metadata_update(
            cctxt, inst.uuid,
            {RESTORE_STATUS_KEY: text[:victim_state.METADATA_MAX]}, False)
    except Exception:
        LOG.exception('Could not tell the owner of %s: %s', inst.uuid, text)


#: Server metadata key telling a restore-requesting server's owner what
#: became of it (restored, or left shelved and why). Informational only.
RESTORE_STATUS_KEY = 'opie:restore_status'


def _step_wait(behavior, opts):
    """Seconds the request keeps the next step of a victim to itself after
    a first verb that does not free the host yet: the behaviour's grace
    period (``stop``: ``stop_grace_period``), else ``release_timeout``.
    """
    b = behaviours.get(behavior)
    return b.grace(opts) if b.grace_option else opts.release_timeout


def _fell_back(cctxt, inst, refused, applied, state):
    """Tell the owner (an instance fault) and the operator (a WARNING)
    that Nova refuses the victim's behaviour in its state and the fallback
    applies.
    """
    LOG.warning('Victim %s: Nova refuses to %s it in vm_state %s; its '
                'interruption behaviour falls back to %s', inst.uuid,
                refused, inst.vm_state, applied)
    try:
        _add_fault(cctxt, inst, 'Preemption: %s is not possible in state '
                   '%s; %s instead' % (refused, inst.vm_state, applied),
                   'interruption behaviour %s refused by Nova in vm_state '
                   '%s (task state %s); fallback %s (request %s)'
                   % (refused, inst.vm_state, inst.task_state, applied,
                      state.request_id))
    except Exception:
        LOG.exception('Could not record a fault on %s', inst.uuid)


def _refused(cctxt, acctxt, inst, state, verb, exc):
    """Nova refused ``verb`` (InstanceInvalidState): switch the record to
    the behaviour's fallback and return the fallback's verb, or None when
    the behaviour has none (the error stands: the reconciler retries).
    """
    fallback = behaviours.fallback(state.behavior)
    if fallback is None:
        return None
    applied, new_verb = behaviours.resolve(fallback, inst.vm_state,
                                           inst.task_state, first=True)
    if new_verb is None or new_verb == verb:
        return None
    new = dataclasses.replace(state, behavior=applied)
    if not reservations.swap_state(cctxt, inst, state, new):
        LOG.info('Victim %s: its record changed under us (another actor '
                 'acts on it); leaving it alone', inst.uuid)
        return None
    LOG.info('Victim %s: %s refused (%s)', inst.uuid, verb, exc)
    _fell_back(acctxt, inst, state.behavior, applied, new)
    return new_verb


def _verb(inst, behavior, first):
    """The behaviour that applies to a victim now and the compute API
    call of its next step (:func:`opie_sched.preemption.behaviours.
    resolve`: the behaviour's verb for the victim's vm_state, or its
    fallback's when Nova refuses that verb in that state); verb None: the
    victim is released.
    """
    return behaviours.resolve(behavior, inst.vm_state, inst.task_state,
                              first)


def _fault(cctxt, inst, state, details):
    try:
        _add_fault(cctxt, inst, 'Preemption has not completed after %d '
                   'attempts' % state.attempts, details)
    except Exception:
        LOG.exception('Could not record a fault on %s', inst.uuid)


def _log_stuck(cctxt, inst, state):
    """A victim whose compute accepted the delete and never finished it
    (task state ``deleting`` past ``next_attempt``): counted, and an
    ERROR with a fault after ``max_attempts``.
    """
    text = ('the compute service of host %s accepted the delete of victim '
            '%s but has not finished it; deleting again (attempt %d)'
            % (inst.host, inst.uuid, state.attempts))
    if state.attempts >= CONF.opie_preemption.max_attempts:
        LOG.error('Preemption stuck: %s. Check that compute service.', text)
        _fault(cctxt, inst, state, text)
    else:
        LOG.warning('Preemption slow: %s', text)


def finish(ctx, cell_uuid, uuids, preempted_by=None):
    """The next step of victims that ``ctx``'s request stopped or shelved
    first: delete a stopped one, offload a shelved one, clear the record
    of an offloaded one. Each is re-read and re-checked now as
    :func:`terminate` does (step ``finish``): a victim resized to a normal
    flavor meanwhile is spared and its record cleared; one whose record no
    longer names this request is left alone.

    :returns: uuids whose next step was requested.
    """
    cctxt = reservations.cell_context(ctx, cell_uuid)
    try:
        rows = reservations.load_by_uuid(cctxt, uuids)
    except Exception:
        LOG.exception('Could not load victims %s; the reconciler will '
                      'retry', uuids)
        return []
    done = []
    for uuid in uuids:
        inst = rows.get(uuid)
        if inst is None:
            continue
        try:
            if _terminate_one(cctxt, inst, 'finish', preempted_by,
                              ctx.request_id, 'delete'):
                done.append(uuid)
        except Exception:
            LOG.exception('Could not finish interrupting victim %s; the '
                          'reconciler will retry', uuid)
    return done


#: The stop-then-delete mode's second step (:func:`finish`).
delete_stopped = finish


def _states(ctx, cell_uuid, uuids):
    cctxt = reservations.cell_context(ctx, cell_uuid)
    cctxt.read_deleted = 'yes'
    insts = objects.InstanceList.get_by_filters(
        cctxt, {'uuid': list(uuids)}, expected_attrs=['system_metadata'])
    return {i.uuid: i for i in insts}


#: Shortest spacing of the checks of :func:`wait_for`, seconds.
FIRST_POLL = 0.05
#: The checks of :func:`wait_for` are spaced by this fraction of the time
#: waited so far (at least :data:`FIRST_POLL`, at most ``poll_interval``):
#: a victim released after t seconds is seen by max(t + 0.05, 1.125 t).
POLL_FRACTION = 0.125


def poll_pause(waited, interval):
    """Seconds to the next check of :func:`wait_for` after ``waited``
    seconds: ``POLL_FRACTION`` of the time waited so far, at least
    ``FIRST_POLL`` and at most ``interval`` (``[opie_preemption]
    poll_interval``; the smaller wins when it is below ``FIRST_POLL``).

    Measured on the devcloud (3 fake computes, one victim, machine load
    5-8): nova's compute marks a victim deleted 0.4-1.5 s after the
    scheduler's delete, so a doubling schedule (0.02, 0.04, ... capped at
    0.5 s) saw it 0.1-0.35 s late; this schedule sees it at most 12.5 %
    late, with a check every 0.05 s in the first 0.4 s (about 16 indexed
    reads of one instance row for a 1 s wait, 10 for 0.5 s).
    """
    return min(interval, max(FIRST_POLL, POLL_FRACTION * waited))


def wait_for(ctx, cell_uuid, uuids, done, timeout, interval, found=None,
             quiet=False, sparse=None):
    """Poll (one query per round) until ``done(instance)`` holds for all.

    The first round checks at once, the next ones are spaced by
    :func:`poll_pause`, so a victim is seen soon after it went and a slow
    one costs few queries. With ``[opie_preemption]
    release_notifications`` on, a notification of Nova about one of the
    instances (:mod:`opie_sched.scheduler.wakeup`) ends the pause at once:
    the next round reads them again.

    :param found: ``{uuid: Instance}`` just read (deleted rows included)
        for the first round instead of a query, or None.
    :param sparse: seconds between the rounds instead of
        :func:`poll_pause` (the fallback of a wait woken by
        notifications), or None.
    :returns: True when all reached the state before ``timeout`` seconds.
    """
    start = time.monotonic()
    deadline = start + timeout
    pending = set(uuids)
    watch = (wakeup.WAKEUPS.watching(pending)
             if CONF.opie_preemption.release_notifications
             else contextlib.nullcontext())
    with watch as woken:
        while pending:
            if woken is not None:
                # before the read: a notification after it wakes the pause
                woken.clear()
            if found is None:
                found = _states(ctx, cell_uuid, pending)
            pending = {u for u in pending
                       if u in found and not done(found[u])}
            found = None
            if not pending:
                return True
            now = time.monotonic()
            left = deadline - now
            if left <= 0:
                if not quiet:
                    LOG.warning('Timed out after %.1f s waiting for %s',
                                timeout, sorted(pending))
                return False
            pause = (sparse if sparse is not None
                     else poll_pause(now - start, interval))
            if woken is not None:
                woken.wait(min(pause, left))
            else:
                time.sleep(min(pause, left))
    return True


def is_deleted(inst):
    """True when an Instance (read with deleted rows) is deleted."""
    return bool(inst.deleted) or inst.vm_state == 'deleted'


def _not_ours(inst, request_id):
    """True when a victim's record no longer names ``request_id`` (spared
    after a resize, or another actor's): the request does not wait for it.
    """
    state = ownership.victim_state(inst)
    return state is None or state.request_id != (request_id or '')


def _behavior(inst):
    state = ownership.victim_state(inst) if inst is not None else None
    return state.behavior if state is not None else ''


def _behaviour_obj(inst):
    """The registered behaviour of a victim's record (``delete`` when
    none or not registered).
    """
    name = _behavior(inst)
    if not behaviours.is_known(name):
        name = victim_state.DELETE
    return behaviours.get(name)


def release(ctx, cell_uuid, uuids, timeout=None, wait=True):
    """Finish interrupting the victims of ``ctx``'s request and wait until
    they have released their host.

    Each victim follows the behaviour of its record
    (:mod:`opie_sched.preemption.behaviours`). When its first verb does not
    free the host yet (``stop``, ``shelve``), the request waits for that
    step to complete (:meth:`~opie_sched.preemption.behaviours.
    InterruptionBehaviour.step_done`) and, for a behaviour with a grace
    period (``stop``: ``stop_grace_period`` seconds from now), for the
    grace to end, then sends the next step through :func:`finish`, which
    re-checks each victim (``stop``: the delete; ``shelve``: the offload).
    A victim counts as released when its behaviour says so
    (:meth:`~opie_sched.preemption.behaviours.InterruptionBehaviour.
    released`: deleted, or shelved and offloaded), or when its record no
    longer names this request (spared, or another actor's): the request
    does not wait for it.

    :param timeout: seconds (default ``[opie_preemption]
        release_timeout``).
    :param wait: False: only finish the steps (the reconciler), do not
        wait for the deletes.
    :returns: True when all are released within ``timeout``.
    """
    opts = CONF.opie_preemption
    timeout = opts.release_timeout if timeout is None else timeout
    start = time.monotonic()
    rid = ctx.request_id

    def left():
        return max(timeout - (time.monotonic() - start), 0)

    def settled(inst):
        return (is_deleted(inst) or _not_ours(inst, rid)
                or _behaviour_obj(inst).step_done(
                    inst.vm_state, inst.task_state, is_deleted(inst)))

    def released(inst):
        return (is_deleted(inst) or _not_ours(inst, rid)
                or _behaviour_obj(inst).released(
                    inst.vm_state, inst.task_state, is_deleted(inst)))

    found = _states(ctx, cell_uuid, uuids) if uuids else {}
    # victims whose first verb does not free the host, by behaviour
    stepped = {}
    for u in uuids:
        b = _behaviour_obj(found.get(u)) if found.get(u) is not None else None
        if b is not None and b.multi_step:
            stepped.setdefault(b.name, (b, []))[1].append(u)
    graced = [(b, us) for b, us in stepped.values() if b.grace(opts) > 0]
    others = [u for b, us in stepped.values() if b.grace(opts) <= 0
              for u in us]
    for b, us in graced:
        grace = b.grace(opts)
        wait_for(ctx, cell_uuid, us, settled, min(grace, left()),
                 opts.poll_interval)
        grace_left = grace - (time.monotonic() - start)
        if grace_left > 0:
            time.sleep(min(grace_left, left()))
        finish(ctx, cell_uuid, us)
    if others:
        wait_for(ctx, cell_uuid, others, settled, left(),
                 opts.poll_interval)
        finish(ctx, cell_uuid, others)
    if not wait and not others:
        return True
    # nothing happened since ``found`` was read (plain deletes): it is the
    # first round
    ok = wait_for(ctx, cell_uuid, uuids if wait else others, released,
                  left(), opts.poll_interval,
                  found=None if stepped else found)
    if others:
        # clear the records of the released ones (offloaded)
        finish(ctx, cell_uuid, others)
    return ok


def notify_restore(ctx, inst, state, now):
    """Emit ``opie.instance.restore`` for a server running again after an
    automatic restore (:mod:`opie_sched.scheduler.restore`), as
    :func:`notify` does (same format option, publisher and notifier;
    errors logged, never raised).

    :param state: its restore record (``restoring``): ``interruptions``
        and ``since`` (when it began waiting).
    """
    if CONF.notifications.notification_format not in ('both', 'versioned'):
        return
    try:
        note = preempt_notes.restore_notification(
            inst.uuid, inst.project_id, inst.host, state.interruptions,
            max((now - state.since).total_seconds(), 0.0), CONF.host)
        note.emit(rpc.get_versioned_notifier(note.publisher.publisher_id),
                  ctx)
    except Exception:
        LOG.exception('Could not emit %s', preempt_notes.RESTORE_EVENT_TYPE)


def notify(ctx, plan, preempted_by, request_id, action, terminated=None):
    """Emit the ``opie.instance.preempt`` versioned notification.

    A :class:`opie_sched.notifications.preemption.PreemptionNotification`
    (payload ``PreemptionPayload`` 1.0, namespace ``opie_sched``), sent
    through Nova's versioned notifier (its transport and
    ``[notifications] versioned_notifications_topics``) when
    ``[notifications] notification_format`` is ``both`` or
    ``versioned``; publisher ``opie-scheduler:<host>``. Errors are
    logged, never raised.

    :param terminated: uuids actually terminated (default: every planned
        victim); only those are listed.
    """
    if CONF.notifications.notification_format not in ('both', 'versioned'):
        return
    victims = [(inst.uuid, inst.project_id, inst.name, cost)
               for inst, cost in plan.victims
               if terminated is None or inst.uuid in terminated]
    if not victims:
        return
    try:
        note = preempt_notes.preempt_notification(
            plan.host, preempted_by, request_id, action, victims, CONF.host)
        note.emit(rpc.get_versioned_notifier(note.publisher.publisher_id),
                  ctx)
    except Exception:
        LOG.exception('Could not emit %s', EVENT_TYPE)
