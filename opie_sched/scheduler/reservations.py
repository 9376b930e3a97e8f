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

Per claimed host that holds preemptible instances, the lock is taken, and
the allocations and the preemptible instances' rows read, only when the
full state is over capacity after this claim: as the request's provider
summary plus its own claims already shows it, or else as one ``GET
/resource_providers/{uuid}/usages`` shows it now (so the claim that
completes an overcommit, made after other workers' claims the summary
does not show, always sees it). Hosts without preemptible instances are
never read.
"""

import dataclasses

from oslo_log import log as logging
from oslo_utils import timeutils
import sqlalchemy as sa

import nova.conf
from nova import context as nova_context
from nova.db.main import api as main_db
from nova.db.main import models as main_models
from nova import exception
from nova import objects

from opie_sched.common import flavors
from opie_sched.preemption import model
from opie_sched.preemption import ownership as own_rules
from opie_sched.preemption import victim_state
from opie_sched.scheduler import cell_reads
from opie_sched.scheduler import ownership

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF


class PlacementError(Exception):
    """Placement did not answer as expected."""


_as_resources = own_rules.amounts_resources


def is_preemptible_allocation(amounts):
    """True when a consumer's allocation holds preemptible classes
    (:func:`opie_sched.preemption.ownership.holds_preemptible`).
    """
    return own_rules.holds_preemptible(amounts)


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


def buried_in_cell0(ctx, consumers):
    """The consumers that are servers nova buried in cell0: their claims
    run nothing on the provider.

    A scheduler worker that dies after claiming a host for a server
    (before or while it preempts) leaves its Placement claim behind: the
    conductor's call fails, it buries the server in cell0 (ERROR), and nova
    removes the claim only when that server is deleted
    (``nova/conductor/manager.py`` ``schedule_and_build_instances``,
    ``_bury_in_cell0``). Counted as used, such a claim would have the next
    request on the host preempt for room nothing runs in. A consumer whose
    instance mapping has no cell yet (a claim in flight) or a real cell, a
    migration (no instance mapping), is not buried. One API database
    query; when it fails, nothing is left out (logged).

    :param ctx: admin RequestContext (the API database).
    :param consumers: Placement consumer uuids (an iterable).
    :returns: set of consumer uuids.
    """
    consumers = list(consumers)
    if not consumers:
        return set()
    try:
        mappings = objects.InstanceMappingList.get_by_instance_uuids(
            ctx, consumers)
    except Exception:
        LOG.exception('Could not read the instance mappings of consumers '
                      '%s; claims of servers buried in cell0 count as '
                      'used', sorted(consumers))
        return set()
    buried = {m.instance_uuid for m in mappings
              if m.cell_mapping is not None
              and m.cell_mapping.uuid == objects.CellMapping.CELL0_UUID}
    if buried:
        LOG.info('Placement claims of servers buried in cell0 (their '
                 'scheduler worker died after claiming): %s; they hold no '
                 'room on the host', sorted(buried))
    return buried


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


def provider_preemptible_free(client, ctx, rp_uuid):
    """Free room (vCPU, MB, GB) of a provider's preemptible inventories
    now, as Placement admits a preemptible claim: per class
    ``CUSTOM_PREEMPTIBLE_*``, (total − reserved) × allocation ratio less
    its usage (a class without inventory: 0).

    :raises PlacementError: when Placement does not answer 200.
    """
    inv = _get(client, ctx, '/resource_providers/%s/inventories'
               % rp_uuid).get('inventories') or {}
    used = _get(client, ctx, '/resource_providers/%s/usages'
                % rp_uuid).get('usages') or {}
    values = []
    for rc in flavors.PREEMPTIBLE_CLASSES:
        item = inv.get(rc)
        capacity = ((item['total'] - item.get('reserved', 0))
                    * item.get('allocation_ratio', 1.0)) if item else 0
        values.append(capacity - used.get(rc, 0))
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
                                     cell_reads.cell_mapping(ctx, cell_uuid))
    return cctxt


def load_by_uuid(cctxt, uuids):
    """``{uuid: Instance}`` (flavor and system metadata loaded) of the
    instances of the cell that exist and are not deleted (soft-deleted
    ones included).
    """
    if not uuids:
        return {}
    insts = objects.InstanceList.get_by_filters(
        cctxt, {'uuid': sorted(uuids), 'deleted': False,
                'soft_deleted': True},
        expected_attrs=['flavor', 'system_metadata'])
    return {i.uuid: i for i in insts}


def fresh_host_view(ctx, client, rp_uuid, cell_uuid, capacity, name,
                    extra_leaving=(), now=None, cctxt=None):
    """The host's full state as every worker sees it now.

    :param client: nova's ``SchedulerReportClient``.
    :param capacity: ``Resources`` capacity of the provider.
    :param extra_leaving: uuids already chosen by this request.
    :param cctxt: :func:`cell_context` of ``ctx`` and ``cell_uuid``, when
        the caller has one already (default: a new one).
    :returns: ``(HostView, {uuid: InstanceRow})``: used = every
        allocation on the provider (normal and preemptible, in-flight
        claims included) but those of servers buried in cell0
        (:func:`buried_in_cell0`);
        instances = the servers holding preemptible room there, as the
        ownership model reads them
        (:func:`opie_sched.scheduler.ownership.provider_instances`: the
        server behind each consumer, sized by all it holds there, pinned
        by its owner's move, leaving until its deadline).
    :raises PlacementError: when Placement cannot be read.
    """
    now = now or timeutils.utcnow(with_timezone=True)
    allocs = provider_allocations(client, ctx, rp_uuid)
    # a claim of a server nova buried in cell0 holds no room on the host
    for consumer in buried_in_cell0(ctx, allocs):
        del allocs[consumer]
    used = model.Resources.total(_as_resources(a) for a in allocs.values())
    if cctxt is None:
        cctxt = cell_context(ctx, cell_uuid)
    # who holds the preemptible room, its state: the ownership model
    infos, rows = ownership.provider_instances(
        cctxt, allocs, ownership.allocation_owners, extra_leaving, now)
    return model.HostView(name=name, capacity=capacity, used=used,
                          instances=infos), rows


def reserve(cctxt, instances, preemptor, request_id, reasons, now=None,
            worker=''):
    """Record victims as ``reserved`` (system metadata), so every worker
    counts them as leaving.

    Each record is written by compare-and-set (:func:`swap_state`) against
    the record the instance was read with: a victim whose record changed
    since (reserved or cleared by another actor) is not reserved.

    :param instances: Instances (system metadata loaded).
    :param reasons: ``{uuid: text}``: the decision's details (admins).
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
            if swap_state(cctxt, inst, ownership.victim_state(inst), state):
                done.append(inst.uuid)
            else:
                LOG.info('Victim %s changed before its reservation; not '
                         'reserved', inst.uuid)
        except exception.InstanceNotFound:
            LOG.info('Victim %s disappeared before its reservation',
                     inst.uuid)
    return done


#: ``expected`` of :func:`swap_state` that matches any record.
ANY = object()


@main_db.pick_context_manager_writer
def _swap_record(context, uuid, expected, new):
    inst = main_models.Instance.__table__
    meta = main_models.InstanceSystemMetadata.__table__
    # The instance row's lock serializes two actors' compare-and-set of one
    # victim (MySQL/PostgreSQL; SQLite serializes every writer).
    alive = context.session.execute(
        sa.select(inst.c.id).where(inst.c.uuid == uuid, inst.c.deleted == 0)
        .with_for_update()).first()
    if alive is None:
        raise exception.InstanceNotFound(instance_id=uuid)
    # a locking read too: it sees the latest committed record (a plain read
    # could see the transaction's snapshot under REPEATABLE READ)
    rows = context.session.execute(
        sa.select(meta.c.id, meta.c.key, meta.c.value).where(
            meta.c.instance_uuid == uuid, meta.c.deleted == 0,
            meta.c.key.in_(victim_state.KEYS)).with_for_update()).all()
    current = {r.key: r.value for r in rows}
    if (expected is not ANY
            and victim_state.VictimState.from_metadata(current)
            != expected):
        return None
    items = new.as_metadata() if new is not None else {}
    for key in victim_state.KEPT_KEYS:
        # the server's own count: kept unless the new record writes it
        if key in current and key not in items:
            items[key] = current[key]
    ids = {r.key: r.id for r in rows}
    now = timeutils.utcnow()
    gone = [ids[k] for k in current if k not in items]
    if gone:
        context.session.execute(sa.delete(meta).where(meta.c.id.in_(gone)))
    new_rows = []
    for key, value in items.items():
        if key in ids:
            if current[key] != value:
                context.session.execute(
                    sa.update(meta).where(meta.c.id == ids[key]).values(
                        value=value, updated_at=now))
        else:
            new_rows.append({'instance_uuid': uuid, 'key': key,
                             'value': value, 'created_at': now,
                             'deleted': 0})
    if new_rows:
        # the new keys in one statement (a first reservation writes most
        # of the record's keys)
        context.session.execute(sa.insert(meta), new_rows)
    return items


def swap_state(cctxt, inst, expected, new):
    """Compare-and-set of a victim's record: in one database transaction,
    with the instance's row locked, replace the record by ``new`` (None:
    remove it) only when the stored one equals ``expected`` (a
    :class:`~opie_sched.preemption.victim_state.VictimState`, None for no
    record, or :data:`ANY`).

    The keys of :data:`~opie_sched.preemption.victim_state.KEPT_KEYS`
    (the interruption count) are kept when ``new`` does not write them,
    also when the record is removed.

    Only the ``opie_victim_*`` system metadata keys are written (rows
    inserted, updated or deleted one by one): a system metadata key nova
    writes meanwhile is never lost, which ``Instance.save()`` of a whole
    ``system_metadata`` dict would risk.

    :param cctxt: context targeted at the instance's cell (None: the
        instance's own context).
    :param inst: Instance or light row; its ``system_metadata`` is updated
        in memory on success.
    :returns: True when the record was replaced, False when it had changed.
    :raises InstanceNotFound: when the instance is gone (deleted).
    """
    items = _swap_record(cctxt or inst._context, inst.uuid, expected, new)
    if items is None:
        return False
    if 'system_metadata' in inst:
        sysmeta = {k: v for k, v in (inst.system_metadata or {}).items()
                   if k not in victim_state.KEYS}
        sysmeta.update(items)
        inst.system_metadata = sysmeta
        if hasattr(inst, 'obj_reset_changes'):
            inst.obj_reset_changes(['system_metadata'])
    return True


def write_state(inst, state, cctxt=None):
    """Store a :class:`~opie_sched.preemption.victim_state.VictimState` in
    the instance's system metadata, whatever was there (only the record's
    keys are written; see :func:`swap_state`).
    """
    swap_state(cctxt, inst, ANY, state)


def clear_state(inst, expected=ANY, cctxt=None):
    """Remove the victim state from an Instance (system metadata), when it
    is still ``expected`` (default: whatever it is).

    :returns: True when removed (or there was none), False when the record
        changed meanwhile.
    """
    if expected is ANY and not any(
            k in (inst.system_metadata or {}) for k in victim_state.KEYS):
        return True
    return swap_state(cctxt, inst, expected, None)


def unreserve(ctx, cell_uuid, uuids):
    """Clear the ``reserved`` state of victims whose request (``ctx``'s
    request id) failed or could not start terminating them. A record that
    changed meanwhile (terminating, or another request's) is kept.

    :returns: the uuids whose reservation was cleared.
    """
    if not uuids:
        return []
    cctxt = cell_context(ctx, cell_uuid)
    cleared = []
    for inst in load_by_uuid(cctxt, uuids).values():
        state = ownership.victim_state(inst)
        if (state is not None and state.state == victim_state.RESERVED
                and state.request_id == (ctx.request_id or '')):
            try:
                if clear_state(inst, expected=state, cctxt=cctxt):
                    cleared.append(inst.uuid)
            except Exception:
                LOG.exception('Could not clear the reservation of %s; it '
                              'expires after reservation_timeout',
                              inst.uuid)
    return cleared


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
        state = ownership.victim_state(inst)
        if (state is None or state.state != victim_state.RESERVED
                or state.request_id != request_id):
            continue
        try:
            # compare-and-set: a record changed meanwhile (terminating,
            # cleared) is left as it is
            if swap_state(cctxt, inst, state,
                          dataclasses.replace(state, since=now)):
                done.append(inst.uuid)
        except exception.InstanceNotFound:
            pass
    return done
