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
"""A host's authoritative full state, and victim reservations.

When several scheduler workers (on one or several scheduler hosts) place
normal instances on the same host at once, each worker's ``HostState`` lacks
the others' claims. The decision is therefore made under the host's lock
(:mod:`opie_sched.scheduler.locks`) on what every worker shares:

* **Placement's allocations on the resource provider**: every claim of
  every worker, normal (``VCPU``, ``MEMORY_MB``, ``DISK_GB``) and
  preemptible (``CUSTOM_PREEMPTIBLE_*``), counted exactly as Nova counts
  them (swap in, boot-from-volume root out), the moment it is made;
* **the victims' service-owned state** in their system metadata
  (:mod:`opie_sched.preemption.victim_state`): a victim reserved by one
  worker is leaving for all others.

Per claimed host that holds preemptible instances, one ``GET
/resource_providers/{uuid}/usages`` tells whether the full state is over
capacity now (after this claim, so the claim that completes an overcommit
always sees it); only then is the lock taken, and the allocations and the
preemptible instances' rows read. Hosts without preemptible instances are
never read.
"""

import dataclasses

from oslo_log import log as logging
from oslo_utils import timeutils

import nova.conf
from nova import context as nova_context
from nova import exception
from nova import objects

from opie_sched.common import flavors
from opie_sched.preemption import model
from opie_sched.preemption import victim_state
from opie_sched.scheduler import hosts

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF

_STANDARD = dict(zip(flavors.STANDARD_CLASSES, range(3)))
_PREEMPTIBLE = dict(zip(flavors.PREEMPTIBLE_CLASSES, range(3)))


class PlacementError(Exception):
    """Placement did not answer as expected."""


def _as_resources(amounts):
    """``Resources`` of a ``{resource class: amount}`` mapping, standard and
    preemptible classes added up; other classes ignored.
    """
    acc = [0, 0, 0]
    for rc, amount in (amounts or {}).items():
        i = _STANDARD.get(rc, _PREEMPTIBLE.get(rc))
        if i is not None:
            acc[i] += amount
    return model.Resources(*acc)


def is_preemptible_allocation(amounts):
    """True when a consumer's allocation holds preemptible classes."""
    return any(amounts.get(rc) for rc in flavors.PREEMPTIBLE_CLASSES)


def summary_capacity(summary):
    """Full-state capacity (vCPU, MB, GB) of a provider summary of
    ``GET /allocation_candidates`` (capacity = (total − reserved) ×
    allocation ratio, as Placement computes it), or None when a standard
    class is missing.
    """
    resources = (summary or {}).get('resources') or {}
    try:
        return model.Resources(*(resources[rc]['capacity']
                                 for rc in flavors.STANDARD_CLASSES))
    except (KeyError, TypeError):
        return None


def summary_has_preemptible(summary):
    """True when a provider summary shows preemptible usage (or is missing,
    when nothing can be said).
    """
    if not summary:
        return True
    resources = summary.get('resources') or {}
    return any((resources.get(rc) or {}).get('used')
               for rc in flavors.PREEMPTIBLE_CLASSES)


def _get(client, ctx, url):
    resp = client.get(url, version='1.0',
                      global_request_id=getattr(ctx, 'global_id', None))
    if resp is None or resp.status_code != 200:
        raise PlacementError('GET %s answered %s' % (
            url, getattr(resp, 'status_code', None)))
    return resp.json()


def provider_allocations(client, ctx, rp_uuid):
    """``{consumer uuid: {resource class: amount}}`` on a provider.

    :param client: nova's ``SchedulerReportClient``.
    :raises PlacementError: when Placement does not answer 200.
    """
    data = _get(client, ctx, '/resource_providers/%s/allocations' % rp_uuid)
    return {consumer: (body or {}).get('resources') or {}
            for consumer, body in (data.get('allocations') or {}).items()}


def provider_used(client, ctx, rp_uuid):
    """Full-state usage (vCPU, MB, GB) of a provider now: every consumer's
    standard and preemptible classes (``GET /resource_providers/{uuid}/
    usages``).

    :raises PlacementError: when Placement does not answer 200.
    """
    data = _get(client, ctx, '/resource_providers/%s/usages' % rp_uuid)
    return _as_resources(data.get('usages') or {})


def provider_capacity(client, ctx, rp_uuid):
    """Full-state capacity (vCPU, MB, GB) of a provider from its
    inventories: (total − reserved) × allocation ratio, per standard class.

    :raises PlacementError: when Placement does not answer 200.
    """
    data = _get(client, ctx, '/resource_providers/%s/inventories' % rp_uuid)
    inv = data.get('inventories') or {}
    values = []
    for rc in flavors.STANDARD_CLASSES:
        item = inv.get(rc)
        if not item:
            values.append(0)
            continue
        values.append((item['total'] - item.get('reserved', 0))
                      * item.get('allocation_ratio', 1.0))
    return model.Resources(*values)


def cell_context(ctx, cell_uuid):
    """A copy of the admin ``ctx`` targeted at the cell (None: as is),
    stamped now: Nova records an instance action's start time from its
    context's timestamp, so every step (mark, stop, delete) gets a fresh
    one.
    """
    cctxt = nova_context.RequestContext.from_dict(ctx.to_dict())
    cctxt.timestamp = timeutils.utcnow()
    if cell_uuid is not None:
        nova_context.set_target_cell(cctxt,
                                     hosts._cell_mapping(ctx, cell_uuid))
    return cctxt


def load_by_uuid(cctxt, uuids):
    """``{uuid: Instance}`` (flavor and system metadata loaded) of the
    instances of the cell that exist and are not deleted.
    """
    if not uuids:
        return {}
    insts = objects.InstanceList.get_by_filters(
        cctxt, {'uuid': sorted(uuids), 'deleted': False},
        expected_attrs=['flavor', 'system_metadata'])
    return {i.uuid: i for i in insts}


def fresh_host_view(ctx, client, rp_uuid, cell_uuid, capacity, name,
                    extra_leaving=(), now=None):
    """The host's full state as every worker sees it now.

    :param client: nova's ``SchedulerReportClient``.
    :param capacity: ``Resources`` capacity of the provider.
    :param extra_leaving: uuids already chosen by this request.
    :returns: ``(HostView, {uuid: Instance})``: used = every allocation on
        the provider (normal and preemptible, in-flight claims included);
        instances = the preemptible consumers that are instances of the
        cell, sized by their allocation, ``leaving`` as
        :func:`opie_sched.scheduler.hosts.instance_is_leaving` says.
    :raises PlacementError: when Placement cannot be read.
    """
    now = now or timeutils.utcnow(with_timezone=True)
    allocs = provider_allocations(client, ctx, rp_uuid)
    used = model.Resources.total(_as_resources(a) for a in allocs.values())
    pre = {c: a for c, a in allocs.items() if is_preemptible_allocation(a)}
    rows = load_by_uuid(cell_context(ctx, cell_uuid), pre)
    infos = []
    for uuid, amounts in sorted(pre.items()):
        inst = rows.get(uuid)
        if inst is None:
            # a migration record or an instance not in this cell (yet):
            # it holds resources but cannot be chosen
            continue
        infos.append(hosts.instance_info(
            inst, extra_leaving, now, resources=_as_resources(amounts)))
    return model.HostView(name=name, capacity=capacity, used=used,
                          instances=infos), rows


def reserve(cctxt, instances, preemptor, request_id, reasons, now=None,
            worker=''):
    """Record victims as ``reserved`` (system metadata), so every worker
    counts them as leaving.

    :param instances: Instances (system metadata loaded).
    :param reasons: ``{uuid: text}`` shown to the owner later.
    :param worker: the reserving worker's tooz member id (its liveness
        lock held: :meth:`opie_sched.scheduler.locks.Coordinator.
        worker_id`), so the reconciler releases the reservation as soon
        as that worker is dead.
    :returns: the uuids recorded.
    """
    now = now or timeutils.utcnow(with_timezone=True)
    done = []
    for inst in instances:
        state = victim_state.reserve(preemptor, now, request_id,
                                     reasons.get(inst.uuid, ''), worker)
        try:
            write_state(inst, state)
            done.append(inst.uuid)
        except exception.InstanceNotFound:
            LOG.info('Victim %s disappeared before its reservation',
                     inst.uuid)
    return done


def write_state(inst, state):
    """Store a :class:`~opie_sched.preemption.victim_state.VictimState` in
    the instance's system metadata.
    """
    sysmeta = dict(inst.system_metadata or {})
    sysmeta.update(state.as_metadata())
    inst.system_metadata = sysmeta
    inst.save()


def clear_state(inst):
    """Remove the victim state from an Instance (system metadata)."""
    sysmeta = dict(inst.system_metadata or {})
    if not any(k in sysmeta for k in victim_state.KEYS):
        return
    for key in victim_state.KEYS:
        sysmeta.pop(key, None)
    inst.system_metadata = sysmeta
    inst.save()


def unreserve(ctx, cell_uuid, uuids):
    """Clear the ``reserved`` state of victims whose request failed (their
    ``terminating`` state, if any, is kept).
    """
    if not uuids:
        return
    cctxt = cell_context(ctx, cell_uuid)
    for inst in load_by_uuid(cctxt, uuids).values():
        state = hosts.victim_state(inst)
        if state is not None and state.state == victim_state.RESERVED:
            try:
                clear_state(inst)
            except Exception:
                LOG.exception('Could not clear the reservation of %s; it '
                              'expires after reservation_timeout',
                              inst.uuid)


def renew(ctx, cell_uuid, uuids, request_id, now=None):
    """Renew the lease of victims still ``reserved`` by ``request_id``
    (their ``since`` set to ``now``), while that request is alive: a long
    multi-create keeps its victims leaving past ``reservation_timeout``.
    Victims reserved by another request, or already terminating, are left
    alone.

    :returns: the uuids renewed.
    """
    if not uuids:
        return []
    now = now or timeutils.utcnow(with_timezone=True)
    cctxt = cell_context(ctx, cell_uuid)
    done = []
    for inst in load_by_uuid(cctxt, uuids).values():
        state = hosts.victim_state(inst)
        if (state is None or state.state != victim_state.RESERVED
                or state.request_id != request_id):
            continue
        try:
            write_state(inst, dataclasses.replace(state, since=now))
            done.append(inst.uuid)
        except exception.InstanceNotFound:
            pass
    return done
