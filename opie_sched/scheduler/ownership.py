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
"""The ownership model: for every allocation on a resource provider, who
holds it, is it preemptible, what state is it in, may it be a victim, and
since when has it been preemptible.

The only place these questions are answered: the full-state filter, the
weighers, the preemption decision (:mod:`opie_sched.scheduler.
reservations`), the reconciler, transparent placement, the destructive
steps' re-check (:mod:`opie_sched.scheduler.actions`) and ``opie-sched
preempt explain`` read it. The rules themselves, free of Nova, are in
:mod:`opie_sched.preemption.ownership`; this module applies them to Nova's
records (instances, light :class:`~opie_sched.scheduler.cell_reads.InstanceRow`
rows, migrations, Placement allocations).

* **Consumer and server.** A Placement consumer on a provider is an
  instance (soft-deleted ones included) or a migration (the source
  allocation of a resize or migration in progress); the server behind a
  migration is its instance (:func:`allocation_owners`). Consumers that are
  neither (a claim in flight) count as used and belong to no server
  (:func:`provider_instances`).
* **Preemptible** by the resource classes it holds (Placement's
  enforcement): an allocation holding ``CUSTOM_PREEMPTIBLE_*``; a server
  whose own flavor copy requests them (:func:`flavor_is_preemptible`). A
  flavor whose marker ``opie:preemptible`` disagrees is logged at ERROR
  (:func:`flavor_disagreement` for ``opie-status``), never silently
  treated as normal.
* **State** (:func:`instance_state`): ``running``, ``leaving`` until a
  deadline (any server in ``deleting``: ``[opie_preemption]
  retry_interval`` seconds after the delete began), or ``pinned`` by its
  owner's move (a resize, cold or live migration, ``VERIFY_RESIZE``, or a
  migration holding room on the provider read). Pinned servers hold their
  room and are never victims.
* **Lifetime** counts from when the server became preemptible
  (:func:`lifetime_start`: its creation, or the resize that gave it a
  preemptible flavor).
* **Size** is what the server holds in Placement (:func:`flavor_resources`:
  the flavor's ``resources:`` overrides win over its sizes, so a flavor
  with ``resources:DISK_GB=0`` holds no disk, and a preemptible flavor
  holds its ``CUSTOM_PREEMPTIBLE_*`` amounts; a server booted from a
  volume holds no root disk, in ``DISK_GB`` as nova counts it and in
  ``CUSTOM_PREEMPTIBLE_DISK_GB`` as the scheduler claims it,
  :func:`volume_booted_flavor`).
"""

import threading

from oslo_log import log as logging
from oslo_utils import timeutils

import nova.conf
from nova import objects

from opie_sched.common import flavors
from opie_sched import conf as opie_conf
from opie_sched.preemption import model
from opie_sched.preemption import ownership as rules
from opie_sched.preemption import victim_state as victim_state_mod
from opie_sched.scheduler import cell_reads

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF
opie_conf.register_opts(CONF)

RUNNING = rules.RUNNING
LEAVING = rules.LEAVING
PINNED = rules.PINNED

#: Task states of a server on its way out (Nova's ``task_state``): only
#: ``deleting``, and only until a deadline (:func:`instance_state`). A
#: soft-deleted server keeps its allocation until it is reclaimed or
#: restored: it is not leaving, and when preemptible it is a candidate
#: victim like any other.
LEAVING_TASK_STATES = frozenset([rules.DELETING])


# flavors whose disagreement was logged (name -> message): once per
# process and flavor, not once per host per request
_reported = {}
_reported_lock = threading.Lock()
_REPORTED_MAX = 1024


def flavor_disagreement(flavor):
    """Why a flavor's marker ``opie:preemptible`` disagrees with the
    resource classes it requests, or None when they agree (for
    ``opie-status`` and ``opie-sched flavor check``).

    :param flavor: a nova ``Flavor``, an openstacksdk flavor, a
        :class:`~opie_sched.scheduler.cell_reads.RowFlavor`, or anything with
        ``extra_specs`` (and ``name``).
    :returns: str or None.
    """
    return rules.disagreement(getattr(flavor, 'extra_specs', None) or {},
                              getattr(flavor, 'name', '') or '')


def flavor_is_preemptible(flavor):
    """True when a flavor's servers are preemptible: it requests a
    ``CUSTOM_PREEMPTIBLE_*`` class (what Placement holds and enforces).
    A flavor whose marker disagrees is logged at ERROR (once per flavor
    and process).
    """
    specs = getattr(flavor, 'extra_specs', None) or {}
    preemptible = rules.requests_preemptible(specs)
    if preemptible != rules.marked(specs):
        _report(flavor)
    return preemptible


def _report(flavor):
    message = flavor_disagreement(flavor)
    if message is None:
        return
    name = getattr(flavor, 'name', '') or ''
    with _reported_lock:
        if _reported.get(name) == message:
            return
        if len(_reported) >= _REPORTED_MAX:
            _reported.clear()
        _reported[name] = message
    LOG.error('Inconsistent preemptible flavor: %s', message)


def request_is_preemptible(spec_obj):
    """True for a RequestSpec whose flavor is preemptible
    (:func:`flavor_is_preemptible`).
    """
    flavor = getattr(spec_obj, 'flavor', None)
    return flavor is not None and flavor_is_preemptible(flavor)


def disk_gb(root_gb, ephemeral_gb, swap_mb, boot_from_volume=False):
    """Local disk a server holds, counted as Nova counts ``DISK_GB``
    (:func:`opie_sched.common.flavors.disk_gb`), without the root disk when it
    boots from a volume. GB.
    """
    return flavors.disk_gb(0 if boot_from_volume else root_gb,
                           ephemeral_gb, swap_mb)


def _held(extra_specs, vcpus, memory_mb, disk):
    """What a flavor holds in Placement: nova's standard amounts, each
    replaced by the flavor's ``resources:<standard class>`` override when
    it has one, plus its ``resources:CUSTOM_PREEMPTIBLE_*`` amounts
    (nova's ``ResourceRequest.from_request_spec``).
    """
    amounts = rules.requested_amounts(extra_specs)
    base = (vcpus, memory_mb, disk)
    return model.Resources(*(
        max(amounts.get(std, base[i]), 0) + max(amounts.get(pre, 0), 0)
        for i, (std, pre) in enumerate(zip(flavors.STANDARD_CLASSES,
                                           flavors.PREEMPTIBLE_CLASSES))))


def flavor_resources(flavor, boot_from_volume=False):
    """:class:`~opie_sched.preemption.model.Resources` a server of this
    flavor holds on its host in Placement (vCPU, MB, GB): the flavor's
    sizes (disk as :func:`disk_gb`), its ``resources:`` overrides winning
    (a ``resources:DISK_GB=0`` flavor holds no disk; a preemptible one its
    ``CUSTOM_PREEMPTIBLE_*`` amounts).
    """
    swap = getattr(flavor, 'swap', 0) or 0
    specs = getattr(flavor, 'extra_specs', None) or {}
    if boot_from_volume:
        specs = rules.volume_booted_specs(specs, flavor.ephemeral_gb, swap)
    return _held(specs, flavor.vcpus, flavor.memory_mb,
                 disk_gb(flavor.root_gb, flavor.ephemeral_gb, swap,
                         boot_from_volume))


def request_resources(spec_obj):
    """Resources a RequestSpec claims (vCPU, MB, GB), as
    :func:`flavor_resources` counts them (no root disk for a boot from
    volume, swap included, the flavor's ``resources:`` overrides).
    """
    flavor = getattr(spec_obj, 'flavor', None)
    swap = getattr(flavor, 'swap', 0) or 0 if flavor is not None else 0
    bfv = request_is_bfv(spec_obj) \
        if hasattr(spec_obj, 'obj_attr_is_set') else False
    specs = getattr(flavor, 'extra_specs', None) or {}
    if bfv:
        specs = rules.volume_booted_specs(specs, spec_obj.ephemeral_gb, swap)
    return _held(specs, spec_obj.vcpus, spec_obj.memory_mb,
                 disk_gb(spec_obj.root_gb, spec_obj.ephemeral_gb, swap, bfv))


def request_is_bfv(spec_obj):
    """True for a RequestSpec of a server booted from a volume (nova's
    ``is_bfv``, set by the API at boot and healed by the conductor for
    older request specs).
    """
    return bool(spec_obj.obj_attr_is_set('is_bfv') and spec_obj.is_bfv)


def volume_booted_flavor(spec_obj):
    """The flavor a volume-booted request claims with, or None when it is
    the request's own.

    For a RequestSpec with ``is_bfv`` whose flavor asks for more
    ``CUSTOM_PREEMPTIBLE_DISK_GB`` than the server's local disk
    (ephemeral + swap), a copy of the flavor with that amount lowered
    (:func:`opie_sched.preemption.ownership.volume_booted_specs`, nova's
    rule for ``DISK_GB``); the copy is never saved.

    :param spec_obj: nova ``RequestSpec``.
    :returns: a nova ``Flavor`` (a clone) or None.
    """
    flavor = getattr(spec_obj, 'flavor', None) \
        if spec_obj.obj_attr_is_set('flavor') else None
    if flavor is None or not request_is_bfv(spec_obj):
        return None
    specs = flavor.extra_specs if 'extra_specs' in flavor else {}
    lowered = rules.volume_booted_specs(specs, flavor.ephemeral_gb,
                                        getattr(flavor, 'swap', 0) or 0)
    if lowered is specs:
        return None
    clone = flavor.obj_clone()
    clone.extra_specs = lowered
    return clone


def instance_boots_from_volume(instance):
    """True when an Instance has no image: it boots from a volume (the
    check Nova makes first; an image-backed volume boot is not told apart
    without a block-device query, which the bulk paths avoid).
    """
    if 'image_ref' not in instance:
        return False
    return not instance.image_ref


def victim_state(instance):
    """The service-owned :class:`~opie_sched.preemption.victim_state.
    VictimState` of an Instance (from its system metadata, which users
    cannot write), or None.
    """
    if 'system_metadata' not in instance:
        return None
    return victim_state_mod.VictimState.from_metadata(
        instance.system_metadata)


def _changed_at(instance):
    if 'updated_at' not in instance:
        return None
    return getattr(instance, 'updated_at', None)


def instance_state(instance, extra_leaving=(), now=None, moving=False):
    """The state of an Instance (or light row) in the ownership model:
    ``leaving``, ``pinned`` or ``running``
    (:func:`opie_sched.preemption.ownership.state`).

    Leaving: its uuid is in ``extra_leaving`` (victims chosen by this
    request), it is deleted, it is in task state ``deleting`` for less
    than ``[opie_preemption] retry_interval`` seconds (whoever asked for
    the delete; an opie victim's own record decides for it), or its victim
    record says so (``reservation_timeout``). Pinned: its owner is moving
    it (task state ``resize_*`` or ``migrating``, vm state ``resized``),
    or ``moving`` (a migration of it holds room on the provider read).
    Server metadata and tags play no part.
    """
    if instance.uuid in extra_leaving:
        return LEAVING
    now = now or timeutils.utcnow(with_timezone=True)
    opts = CONF.opie_preemption
    return rules.state(instance.task_state, instance.vm_state,
                       _changed_at(instance), victim_state(instance), now,
                       opts.reservation_timeout, opts.retry_interval,
                       moving)


def instance_is_leaving(instance, extra_leaving=(), now=None):
    """True when an Instance is ``leaving`` (:func:`instance_state`)."""
    return instance_state(instance, extra_leaving, now) == LEAVING


def instance_is_pinned(instance, moving=False):
    """True when an Instance's owner is moving it (never a victim)."""
    return moving or rules.is_moving(instance.task_state, instance.vm_state)


def may_be_victim(instance, now=None):
    """The re-check before every destructive step: True when an Instance
    may be stopped, shelved or deleted by opie now: its own flavor is
    preemptible (:func:`flavor_is_preemptible`) and its owner is not
    moving it. (Leaving victims are handled by their record.)
    """
    flavor = getattr(instance, 'flavor', None)
    return (flavor is not None and flavor_is_preemptible(flavor)
            and not instance_is_pinned(instance))


def instance_info(instance, extra_leaving=(), now=None, resources=None,
                  preemptible=None, moving=False):
    """:class:`~opie_sched.preemption.model.InstanceInfo` of an Instance
    (``leaving`` and ``pinned`` as :func:`instance_state` says;
    ``resources`` default to what its flavor holds,
    :func:`flavor_resources`; ``preemptible`` to
    :func:`flavor_is_preemptible` of its flavor).
    """
    import datetime
    flavor = instance.flavor
    state = instance_state(instance, extra_leaving, now, moving)
    launched = instance.launched_at
    if launched is not None and launched.tzinfo is None:
        launched = launched.replace(tzinfo=datetime.timezone.utc)
    if resources is None:
        resources = flavor_resources(
            flavor, instance_boots_from_volume(instance))
    if preemptible is None:
        preemptible = flavor_is_preemptible(flavor)
    return model.InstanceInfo(
        uuid=instance.uuid, resources=resources,
        preemptible=preemptible, launched_at=launched,
        name=instance.display_name or '', project_id=instance.project_id,
        leaving=state == LEAVING, pinned=state == PINNED)


def moving_owners(owners):
    """Instance uuids that a migration consumer of ``owners`` (``{consumer
    uuid: instance uuid}``) belongs to: a move of theirs
    holds room on the provider, so they are pinned.
    """
    return {owner for consumer, owner in owners.items() if consumer != owner}


def allocation_owners(cctxt, consumers):
    """The instance a termination frees each Placement consumer with.

    A consumer is an instance (soft-deleted ones included: they hold their
    allocation until reclaimed or restored) or a migration (the source
    allocation of an unconfirmed resize or a migration in progress, freed
    when its instance is deleted). Consumers that are neither (a claim in
    flight for a server not yet in the cell, another cell's) are left out:
    they hold resources but no victim frees them.

    :param cctxt: admin RequestContext targeted at the provider's cell.
    :param consumers: consumer uuids.
    :returns: ``({consumer uuid: instance uuid}, {instance uuid:
        InstanceRow})``: light rows
        (:func:`~opie_sched.scheduler.cell_reads.instance_rows_by_uuid`: the
        columns, the instance's own flavor and opie's victim record; no server
        metadata), read fresh. Two queries for the instances, one for
        migrations when some consumers are not instances, two more when
        migrations are found.
    """
    consumers = set(consumers)
    if not consumers:
        return {}, {}
    rows = cell_reads.instance_rows_by_uuid(cctxt, consumers)
    owners = {u: u for u in rows}
    missing = consumers - set(rows)
    if missing:
        migrations = objects.MigrationList.get_by_filters(
            cctxt, {'uuid': sorted(missing)})
        by_instance = {}
        for mig in migrations:
            by_instance.setdefault(mig.instance_uuid, []).append(mig.uuid)
        extra = set(by_instance) - set(rows)
        if extra:
            rows.update(cell_reads.instance_rows_by_uuid(cctxt, extra))
        for inst_uuid, mig_uuids in by_instance.items():
            if inst_uuid in rows:
                owners.update(dict.fromkeys(mig_uuids, inst_uuid))
    return owners, rows


#: ``Resources`` of an allocation, standard and preemptible classes added
#: up (:func:`opie_sched.preemption.ownership.amounts_resources`).
amounts_resources = rules.amounts_resources


def provider_instances(cctxt, allocations, owners_of, extra_leaving=(),
                       now=None):
    """The servers holding preemptible room on one provider, as the
    preemption decision and the reconciler read them.

    :param cctxt: admin RequestContext targeted at the provider's cell.
    :param allocations: ``{consumer uuid: {resource class: amount}}`` of
        the provider (Placement's ``GET /resource_providers/{uuid}/
        allocations``).
    :param owners_of: ``owners_of(cctxt, consumer uuids)`` returns
        ``({consumer uuid: instance uuid}, {instance uuid: InstanceRow})``:
        the server behind each consumer, an instance (soft-deleted ones
        included) or a migration's instance
        (:func:`allocation_owners`).
    :param extra_leaving: instance uuids chosen by this request already.
    :returns: ``([InstanceInfo], {instance uuid: InstanceRow})``: one
        entry per server owning a consumer that holds a preemptible class
        here, sized by everything its
        consumers hold here, preemptible by those classes, pinned when a
        migration of it is one of them (or its task or vm state says it
        is moving), leaving as :func:`instance_state` says.
    """
    now = now or timeutils.utcnow(with_timezone=True)
    pre = [c for c, a in allocations.items() if rules.holds_preemptible(a)]
    owners, rows = owners_of(cctxt, pre)
    moving = moving_owners(owners)
    held = {}
    for consumer, amounts in allocations.items():
        owner = owners.get(consumer)
        if owner is not None:
            held[owner] = (held.get(owner, model.ZERO)
                           + amounts_resources(amounts))
    infos = []
    for uuid, res in sorted(held.items()):
        row = rows[uuid]
        if row.flavor is not None:
            # the marker is checked against the classes (an ERROR when
            # they disagree); the classes held decide
            flavor_is_preemptible(row.flavor)
        infos.append(instance_info(row, extra_leaving, now, resources=res,
                                   preemptible=True,
                                   moving=uuid in moving))
    return infos, rows


def lifetime_start(cctxt, instance):
    """When a server became preemptible (aware UTC datetime): its creation
    (``created_at``, which nova never resets), or the latest resize that
    gave it a preemptible flavor from a normal one (that migration's
    ``created_at``). A resize whose flavors can no longer be read counts
    as such a resize (the owner's benefit of the doubt).

    :param cctxt: admin RequestContext targeted at the instance's cell.
    :returns: aware datetime, or None without ``created_at``.
    """
    moves = []
    try:
        migrations = objects.MigrationList.get_by_filters(
            cctxt, {'instance_uuid': instance.uuid,
                    'migration_type': 'resize'})
    except Exception:
        LOG.exception('Could not read the migrations of %s', instance.uuid)
        migrations = []
    for mig in migrations:
        if mig.old_instance_type_id == mig.new_instance_type_id:
            continue
        try:
            old = objects.Flavor.get_by_id(cctxt, mig.old_instance_type_id)
            new = objects.Flavor.get_by_id(cctxt, mig.new_instance_type_id)
            became = (flavor_is_preemptible(new)
                      and not flavor_is_preemptible(old))
        except Exception:
            became = True
        if became:
            moves.append(mig.created_at)
    return rules.lifetime_start(instance.created_at, moves)
