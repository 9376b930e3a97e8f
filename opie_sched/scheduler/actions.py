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

Each victim's owner can see why it went:

* server metadata ``opie:preempted_by`` (the instance the room was made for,
  or ``reconciler``) and ``opie:preempted_at``, and the tag
  ``opie-preempted``;
* an instance fault ``Preempted: ...`` (shown with the server once it is
  deleted or in error) and the ``preempt`` instance action followed by
  ``stop``/``delete`` (``openstack server event list``, which still works
  once the server is deleted; server metadata and tags are deleted with
  it);
* a versioned notification ``opie.instance.preempt`` naming the preemptor's
  request, the host, each victim and its cost.

Victims are terminated through Nova's compute API (the same code path as
``openstack server delete``/``stop``), with an admin context.
"""

import threading
import time

from oslo_log import log as logging
from oslo_utils import timeutils

import nova.conf
from nova import exception
from nova import objects
from nova import rpc

from opie_sched.preemption import victim_state
from opie_sched.scheduler import hosts
from opie_sched.scheduler import reservations

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF

EVENT_TYPE = 'opie.instance.preempt'
#: Instance action recorded on every victim (``openstack server event list``).
PREEMPT_ACTION = 'preempt'

_compute_api = None
_api_lock = threading.Lock()


def compute_api():
    """Nova's compute API, created once per process."""
    global _compute_api
    with _api_lock:
        if _compute_api is None:
            from nova.compute import api as nova_compute_api
            _compute_api = nova_compute_api.API()
    return _compute_api


class PreemptionError(Exception):
    """A victim could not be terminated."""


def _add_fault(cctxt, instance, message, details):
    fault = objects.InstanceFault(context=cctxt)
    fault.instance_uuid = instance.uuid
    fault.code = 409
    fault.message = message[:255]
    fault.details = details
    fault.host = CONF.host
    fault.create()


def mark_victim(cctxt, instance, preempted_by, reason):
    """Tell the owner why the instance is being preempted: server metadata
    and tag (informational: the service never reads them back), an
    instance fault and the ``preempt`` instance action.
    """
    now = timeutils.utcnow(with_timezone=True).strftime('%Y-%m-%dT%H:%M:%SZ')
    instance.metadata = dict(instance.metadata or {},
                             **{hosts.PREEMPTED_BY_KEY: preempted_by,
                                hosts.PREEMPTED_AT_KEY: now})
    instance.save()
    try:
        objects.Tag(context=cctxt, resource_id=instance.uuid,
                    tag=hosts.PREEMPTED_TAG).create()
    except exception.TooManyTags:
        LOG.warning('Instance %s has too many tags to add %s',
                    instance.uuid, hosts.PREEMPTED_TAG)
    _add_fault(cctxt, instance, 'Preempted: %s' % reason, reason)
    # "openstack server event list" shows this action, with the request id
    # of the preemptor's request, even after the victim is deleted.
    objects.InstanceAction.action_start(cctxt, instance.uuid, PREEMPT_ACTION,
                                        want_result=False)
    objects.InstanceAction.action_finish(cctxt, instance.uuid,
                                         want_result=False)


def terminate(ctx, cell_uuid, uuids, preempted_by, reasons, action=None):
    """Terminate victims, recording each attempt in their service-owned
    state so that a failed or interrupted termination is retried by the
    reconciler (:mod:`opie_sched.preemption.victim_state`).

    :param ctx: admin RequestContext.
    :param cell_uuid: cell of the victims' host (None: current database).
    :param uuids: victim instance uuids.
    :param preempted_by: the preemptor's instance uuid, or a cause
        (``reconciler``, ``max-lifetime``).
    :param reasons: ``{uuid: text}`` shown to each victim's owner (or one
        text for all).
    :param action: ``delete`` or ``stop`` (default ``[opie_preemption]
        action``).
    :returns: list of uuids whose termination was requested now (victims
        already gone, already being deleted by someone else or no longer
        preemptible are skipped).
    """
    opts = CONF.opie_preemption
    action = action or opts.action
    if isinstance(reasons, str):
        reasons = dict.fromkeys(uuids, reasons)
    cctxt = reservations.cell_context(ctx, cell_uuid)
    rows = {}
    try:
        rows = reservations.load_by_uuid(cctxt, uuids)
    except Exception:
        LOG.exception('Could not load victims %s', uuids)
    done = []
    for uuid in uuids:
        inst = rows.get(uuid)
        if inst is None:
            LOG.info('Victim %s is already gone', uuid)
            continue
        if inst.task_state in hosts._LEAVING_TASK_STATES:
            LOG.info('Victim %s is already being deleted', uuid)
            continue
        if not hosts.flavor_is_preemptible(inst.flavor):
            # resized to a normal flavor since it was chosen
            LOG.warning('Victim %s is no longer preemptible; not '
                        'terminating it', uuid)
            reservations.clear_state(inst)
            continue
        if _terminate_one(cctxt, inst, preempted_by, reasons.get(uuid, ''),
                          action, ctx.request_id):
            done.append(uuid)
    return done


def _terminate_one(cctxt, inst, preempted_by, reason, action, request_id):
    opts = CONF.opie_preemption
    now = timeutils.utcnow(with_timezone=True)
    state = hosts.victim_state(inst) or victim_state.reserve(
        preempted_by, now, request_id, reason)
    first = state.state != victim_state.TERMINATING
    state = state.terminating(now, opts.retry_interval,
                              opts.max_retry_interval)
    try:
        # The service-owned record first: from here on a crash or a
        # failing delete is retried by the reconciler.
        reservations.write_state(inst, state)
        if first:
            mark_victim(cctxt, inst, state.preemptor or preempted_by,
                        state.reason or reason)
        if action == 'stop' and first and inst.vm_state == 'active':
            compute_api().stop(cctxt, inst)
        else:
            compute_api().delete(cctxt, inst)
        return True
    except exception.InstanceNotFound:
        LOG.info('Victim %s is already gone', inst.uuid)
        return False
    except Exception as exc:
        if state.attempts >= opts.max_attempts:
            LOG.error('Could not %s victim %s after %d attempts (%s); the '
                      'reconciler tries again at %s. Check its compute '
                      'service.', action, inst.uuid, state.attempts, exc,
                      victim_state.format_time(state.next_attempt))
            try:
                _add_fault(cctxt, inst,
                           'Preemption failed %d times: %s'
                           % (state.attempts, exc), str(exc))
            except Exception:
                LOG.exception('Could not record a fault on %s', inst.uuid)
        else:
            LOG.warning('Could not %s victim %s (attempt %d: %s); the '
                        'reconciler tries again at %s', action, inst.uuid,
                        state.attempts, exc,
                        victim_state.format_time(state.next_attempt))
        return False


def delete_stopped(ctx, cell_uuid, uuids):
    """Delete victims that were stopped first (graceful mode)."""
    cctxt = reservations.cell_context(ctx, cell_uuid)
    for uuid in uuids:
        try:
            inst = objects.Instance.get_by_uuid(cctxt, uuid)
            if inst.task_state in hosts._LEAVING_TASK_STATES:
                continue
            compute_api().delete(cctxt, inst)
        except exception.InstanceNotFound:
            continue
        except Exception:
            LOG.exception('Could not delete stopped victim %s; the '
                          'reconciler will retry', uuid)


def _states(ctx, cell_uuid, uuids):
    cctxt = reservations.cell_context(ctx, cell_uuid)
    cctxt.read_deleted = 'yes'
    insts = objects.InstanceList.get_by_filters(
        cctxt, {'uuid': list(uuids)}, expected_attrs=[])
    return {i.uuid: i for i in insts}


def wait_for(ctx, cell_uuid, uuids, done, timeout, interval):
    """Poll (one query per round) until ``done(instance)`` holds for all.

    Rounds start 0.02 s apart and the spacing doubles up to ``interval``
    seconds, so a victim that goes quickly is seen quickly and a slow one
    costs few queries.

    :returns: True when all reached the state before ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    pending = set(uuids)
    pause = min(0.02, interval)
    while pending:
        found = _states(ctx, cell_uuid, pending)
        pending = {u for u in pending
                   if u in found and not done(found[u])}
        if not pending:
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            LOG.warning('Timed out after %.1f s waiting for %s',
                        timeout, sorted(pending))
            return False
        time.sleep(min(pause, left))
        pause = min(pause * 2, interval)
    return True


def _is_deleted(inst):
    return bool(inst.deleted) or inst.vm_state == 'deleted'


def _is_stopped(inst):
    return _is_deleted(inst) or (inst.vm_state == 'stopped'
                                 and inst.task_state is None)


def release(ctx, cell_uuid, uuids, timeout=None):
    """Wait until the victims have released their host.

    In ``stop`` mode the victims are first given ``stop_grace_period``
    seconds to shut down (they are stopped by :func:`terminate`), then
    deleted. Returns True when all are deleted within ``timeout`` seconds
    (default ``[opie_preemption] release_timeout``).
    """
    opts = CONF.opie_preemption
    timeout = opts.release_timeout if timeout is None else timeout
    start = time.monotonic()
    if opts.action == 'stop' and uuids:
        wait_for(ctx, cell_uuid, uuids, _is_stopped,
                 min(opts.stop_grace_period, timeout), opts.poll_interval)
        grace_left = opts.stop_grace_period - (time.monotonic() - start)
        if grace_left > 0:
            time.sleep(min(grace_left, max(timeout - (time.monotonic()
                                                      - start), 0)))
        delete_stopped(ctx, cell_uuid, uuids)
    left = max(timeout - (time.monotonic() - start), 0)
    return wait_for(ctx, cell_uuid, uuids, _is_deleted, left,
                    opts.poll_interval)


def notify(ctx, plan, preempted_by, request_id, action, terminated=None):
    """Emit the ``opie.instance.preempt`` versioned notification.

    The payload has the shape of a Nova versioned notification
    (``nova_object.name``/``namespace``/``version``/``data``) but is not a
    registered Nova object: Nova's ``EventType`` only accepts the actions
    of its own ``NotificationAction`` enum, which has no ``preempt``, and
    Nova's object registry belongs to Nova. Consumers (opie-market,
    searchlight-like listeners) read it as a versioned notification of
    namespace ``opie_sched``, version 1.0.

    :param terminated: uuids actually terminated (default: every planned
        victim); only those are listed.
    """
    if CONF.notifications.notification_format not in ('both', 'versioned'):
        return
    victims = [(inst, cost) for inst, cost in plan.victims
               if terminated is None or inst.uuid in terminated]
    if not victims:
        return
    payload = {
        'nova_object.name': 'PreemptionPayload',
        'nova_object.namespace': 'opie_sched',
        'nova_object.version': '1.0',
        'nova_object.data': {
            'host': plan.host,
            'preemptor_uuid': preempted_by,
            'request_id': request_id,
            'action': action,
            'total_cost': sum(cost for _, cost in victims),
            'victims': [{'uuid': inst.uuid, 'project_id': inst.project_id,
                         'name': inst.name, 'cost': cost}
                        for inst, cost in victims],
        },
    }
    try:
        rpc.get_versioned_notifier(
            'opie-scheduler:%s' % CONF.host).info(ctx, EVENT_TYPE, payload)
    except Exception:
        LOG.exception('Could not emit %s', EVENT_TYPE)
