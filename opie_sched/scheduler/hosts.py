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
"""Build dual host states from Nova's scheduler data, in bulk.

Nova's ``HostState`` (built from the ComputeNode record, which the resource
tracker fills from *every* instance's flavor) is the **full state**. What the
preemption phase also needs — which instances on a host are preemptible, how
big they are and when they started — is read from the cell databases once per
scheduling request for all candidate hosts together (one query per cell),
never once per host or per instance.

Public Nova objects APIs are used here, except for the light rows of the
preemption phase (:func:`load_instances` ``light``), read with one column
query through nova's own database API and models.
"""

import datetime
import threading

from oslo_log import log as logging
from oslo_serialization import jsonutils
from oslo_utils import timeutils
import sqlalchemy as sa

from nova.compute import task_states
from nova.compute import vm_states
from nova import context as nova_context
from nova.db.main import api as main_db
from nova.db.main import models as main_models
from nova import objects

import nova.conf

from opie_sched.common import flavors
from opie_sched import conf as opie_conf
from opie_sched.preemption import model
from opie_sched.preemption import victim_state as victim_state_mod

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF
opie_conf.register_opts(CONF)

#: Server metadata key set on a victim for its owner to read: the UUID of
#: the instance it makes room for (or a cause). Informational only: the
#: service never reads server metadata (the user owns it).
PREEMPTED_BY_KEY = 'opie:preempted_by'
#: Server metadata key set on a victim: when it was terminated (ISO 8601).
PREEMPTED_AT_KEY = 'opie:preempted_at'
#: Server tag set on a victim (informational, like the metadata).
PREEMPTED_TAG = 'opie-preempted'

_LEAVING_TASK_STATES = frozenset([task_states.DELETING,
                                  task_states.SOFT_DELETING])
_GONE_VM_STATES = frozenset([vm_states.DELETED, vm_states.SOFT_DELETED])

_cell_cache = {}
_cell_lock = threading.Lock()


def flavor_is_preemptible(flavor):
    """True when the (instance's own copy of the) flavor is preemptible,
    by the one definition the market shares
    (:func:`opie_sched.common.flavors.is_marked_preemptible`).
    """
    return flavors.is_marked_preemptible(getattr(flavor, 'extra_specs',
                                                 None))


def disk_gb(root_gb, ephemeral_gb, swap_mb, boot_from_volume=False):
    """Local disk a server holds, counted as Nova counts ``DISK_GB``
    (:func:`opie_sched.common.flavors.disk_gb`), without the root disk when it
    boots from a volume. GB.
    """
    return flavors.disk_gb(0 if boot_from_volume else root_gb,
                           ephemeral_gb, swap_mb)


def flavor_resources(flavor, boot_from_volume=False):
    """:class:`~opie_sched.preemption.model.Resources` a flavor holds on a
    host (vCPU, MB, GB; disk as :func:`disk_gb`).
    """
    return model.Resources(
        flavor.vcpus, flavor.memory_mb,
        disk_gb(flavor.root_gb, flavor.ephemeral_gb,
                getattr(flavor, 'swap', 0) or 0, boot_from_volume))


def instance_boots_from_volume(instance):
    """True when an Instance has no image: it boots from a volume (the
    check Nova makes first; an image-backed volume boot is not told apart
    without a block-device query, which the bulk paths avoid).
    """
    if 'image_ref' not in instance:
        return False
    return not instance.image_ref


def request_is_preemptible(spec_obj):
    """True for a RequestSpec whose flavor is preemptible."""
    flavor = getattr(spec_obj, 'flavor', None)
    return flavor is not None and flavor_is_preemptible(flavor)


def request_resources(spec_obj):
    """Resources a RequestSpec asks for (vCPU, MB, GB as Nova counts
    DISK_GB: no root disk for a boot from volume, swap included).
    """
    flavor = getattr(spec_obj, 'flavor', None)
    swap = getattr(flavor, 'swap', 0) or 0 if flavor is not None else 0
    bfv = bool(spec_obj.obj_attr_is_set('is_bfv') and spec_obj.is_bfv) \
        if hasattr(spec_obj, 'obj_attr_is_set') else False
    return model.Resources(
        spec_obj.vcpus, spec_obj.memory_mb,
        disk_gb(spec_obj.root_gb, spec_obj.ephemeral_gb, swap, bfv))


def victim_state(instance):
    """The service-owned :class:`~opie_sched.preemption.victim_state.
    VictimState` of an Instance (from its system metadata, which users
    cannot write), or None.
    """
    if 'system_metadata' not in instance:
        return None
    return victim_state_mod.VictimState.from_metadata(
        instance.system_metadata)


def instance_is_leaving(instance, extra_leaving=(), now=None):
    """True when an Instance is on its way out: being deleted or already
    deleted (vm_state/task_state), a victim whose termination was requested
    or whose reservation by a scheduler worker is younger than
    ``[opie_preemption] reservation_timeout`` (system metadata written by
    the service only), or its uuid is in ``extra_leaving``. Server metadata
    and tags play no part.
    """
    if (instance.uuid in extra_leaving
            or instance.task_state in _LEAVING_TASK_STATES
            or instance.vm_state in _GONE_VM_STATES):
        return True
    state = victim_state(instance)
    if state is None:
        return False
    now = now or timeutils.utcnow(with_timezone=True)
    return state.is_leaving(now, CONF.opie_preemption.reservation_timeout)


def instance_info(instance, extra_leaving=(), now=None, resources=None):
    """:class:`~opie_sched.preemption.model.InstanceInfo` of an Instance
    (``leaving`` as :func:`instance_is_leaving` says; ``resources`` default
    to its flavor's, as :func:`flavor_resources` counts them).
    """
    flavor = instance.flavor
    leaving = instance_is_leaving(instance, extra_leaving, now)
    launched = instance.launched_at
    if launched is not None and launched.tzinfo is None:
        launched = launched.replace(tzinfo=datetime.timezone.utc)
    if resources is None:
        resources = flavor_resources(
            flavor, instance_boots_from_volume(instance))
    return model.InstanceInfo(
        uuid=instance.uuid, resources=resources,
        preemptible=flavor_is_preemptible(flavor), launched_at=launched,
        name=instance.display_name or '', project_id=instance.project_id,
        leaving=leaving)


_CONSUMED = '_opie_consumed_disk'


def note_consumed(host_state, spec_obj, before):
    """Record the disk a request consumed on a HostState.

    Nova's ``HostState.consume_from_request`` lowers ``free_disk_mb`` but
    never raises ``disk_mb_used``, which :func:`full_state` reads; the
    consumed GB are kept on the HostState until nova refreshes it from the
    compute node (each consumption stamps ``HostState.updated``; a refresh
    replaces it with the compute node's ``updated_at``).

    :param before: :func:`consumed_disk_gb` of the host state taken just
        before ``consume_from_request``.
    """
    setattr(host_state, _CONSUMED,
            (host_state.updated, before + request_resources(spec_obj).disk_gb))


def consumed_disk_gb(host_state):
    """GB consumed on a HostState by requests since nova last refreshed it
    (see :func:`note_consumed`).
    """
    mark, gb = getattr(host_state, _CONSUMED, (None, 0))
    if mark is None or mark != host_state.updated:
        return 0
    return gb


def full_state(host_state):
    """``(capacity, used)`` of a HostState's full state.

    capacity = total × allocation ratio; used = what the ComputeNode record
    counts (every instance, normal and preemptible, plus host
    reservations) plus what requests consumed since: ``vcpus_used``,
    ``total − free`` RAM, and ``disk_mb_used`` + the consumed disk (see
    :func:`note_consumed`). Free disk is not used because nova lowers it to
    the hypervisor's ``disk_available_least``, which is physical space, not
    the flavors' claims. Units: vCPU, MB, GB.
    """
    capacity = model.Resources(
        host_state.vcpus_total * host_state.cpu_allocation_ratio,
        host_state.total_usable_ram_mb * host_state.ram_allocation_ratio,
        host_state.total_usable_disk_gb * host_state.disk_allocation_ratio)
    used = model.Resources(
        host_state.vcpus_used,
        host_state.total_usable_ram_mb - host_state.free_ram_mb,
        host_state.disk_mb_used / 1024.0 + consumed_disk_gb(host_state))
    return capacity, used


def compute_node_state(node):
    """``(capacity, used)`` of a ComputeNode record (as :func:`full_state`).
    """
    capacity = model.Resources(node.vcpus * node.cpu_allocation_ratio,
                               node.memory_mb * node.ram_allocation_ratio,
                               node.local_gb * node.disk_allocation_ratio)
    used = model.Resources(node.vcpus_used, node.memory_mb_used,
                           node.local_gb_used)
    return capacity, used


def _cell_mapping(ctx, cell_uuid):
    with _cell_lock:
        cell = _cell_cache.get(cell_uuid)
    if cell is None:
        cell = objects.CellMapping.get_by_uuid(ctx, cell_uuid)
        with _cell_lock:
            _cell_cache[cell_uuid] = cell
    return cell


def load_instances(ctx, hosts_by_cell, light=True):
    """Instances on the given hosts, in one query per cell.

    :param ctx: a nova RequestContext (admin rights are needed to read all
        projects' instances).
    :param hosts_by_cell: ``{cell_uuid: set(host names)}``; a cell_uuid of
        None means the context's current database.
    :param light: True (default): :class:`InstanceRow` objects read with
        one column query (plus one for opie's own metadata keys), what the
        scheduler plugins and the reconciler read, at a fraction of the cost
        of whole ``Instance`` objects (building an Instance with its flavor
        was most of a preemption decision's time at 100 and 1000 nodes);
        False: ``Instance`` objects with their flavor and metadata.
    :returns: ``{(host, node): [InstanceRow or Instance, ...]}`` of
        instances that are neither deleted nor soft-deleted.
    """
    found = {}
    for cell_uuid, hosts in hosts_by_cell.items():
        if not hosts:
            continue
        if cell_uuid is None:
            insts = _query_instances(ctx, sorted(hosts), light)
        else:
            with nova_context.target_cell(
                    ctx, _cell_mapping(ctx, cell_uuid)) as cctxt:
                insts = _query_instances(cctxt, sorted(hosts), light)
        for inst in insts:
            found.setdefault((inst.host, inst.node), []).append(inst)
    return found


def _query_instances(ctx, hosts, light):
    if not light:
        return objects.InstanceList.get_by_filters(
            ctx, {'host': hosts, 'deleted': False},
            expected_attrs=['flavor', 'metadata', 'system_metadata'])
    return _instance_rows(ctx, hosts)


#: System metadata keys loaded with :class:`InstanceRow`: opie's victim
#: state only (written by the service; users cannot write system metadata).
ROW_METADATA_PREFIX = 'opie_victim_'
#: Server metadata keys loaded with :class:`InstanceRow`: opie's own
#: (``opie:bid``, read by the market weigher) only.
ROW_SERVER_METADATA_PREFIX = 'opie:'


class RowFlavor:
    """The fields of an instance's own flavor copy that opie reads.

    :ivar vcpus: vCPU. :ivar memory_mb: MB. :ivar root_gb: GB.
    :ivar ephemeral_gb: GB. :ivar extra_specs: dict of str.
    :ivar name: flavor name. :ivar flavorid: flavor id (str).
    """

    __slots__ = ('vcpus', 'memory_mb', 'root_gb', 'ephemeral_gb', 'swap',
                 'extra_specs', 'name', 'flavorid')

    def __init__(self, data):
        self.vcpus = data.get('vcpus', 0)
        self.memory_mb = data.get('memory_mb', 0)
        self.root_gb = data.get('root_gb', 0)
        self.ephemeral_gb = data.get('ephemeral_gb', 0)
        self.swap = data.get('swap', 0)
        self.extra_specs = data.get('extra_specs') or {}
        self.name = data.get('name', '')
        self.flavorid = data.get('flavorid', '')


class InstanceRow:
    """One instance as the preemption phase reads it, without building an
    ``Instance`` object (see :func:`load_instances` ``light``).

    Has the attributes of ``Instance`` that opie reads: ``uuid``, ``host``,
    ``node``, ``vm_state``, ``task_state``, ``launched_at`` (timezone-aware
    UTC datetime or None), ``display_name``, ``project_id``, ``user_id``,
    ``flavor`` (:class:`RowFlavor`, or a nova ``Flavor`` for an old record
    whose serialized flavor lacks its extra specs), ``image_ref``,
    ``system_metadata`` (only the keys starting with
    :data:`ROW_METADATA_PREFIX`) and ``metadata`` (only the keys starting
    with :data:`ROW_SERVER_METADATA_PREFIX`). ``'field' in row`` works as
    on an Instance.
    """

    __slots__ = ('uuid', 'host', 'node', 'vm_state', 'task_state',
                 'launched_at', 'display_name', 'project_id', 'user_id',
                 'image_ref', 'flavor', 'system_metadata', 'metadata')

    def __contains__(self, name):
        return name in self.__slots__

    def __repr__(self):
        return 'InstanceRow(%s on %s/%s)' % (self.uuid, self.host, self.node)


def _row_flavor(text):
    data = jsonutils.loads(text)['cur']
    fields = data.get('nova_object.data', {})
    if 'extra_specs' not in fields:
        # An old record: let nova's object load the extra specs.
        return objects.Flavor.obj_from_primitive(data)
    return RowFlavor(fields)


@main_db.pick_context_manager_reader
def _instance_rows(context, hosts):
    """``[InstanceRow]`` on ``hosts`` (not deleted, not soft-deleted): one
    query for the columns and the flavor, one for opie's system metadata
    keys and one for its server metadata keys.
    """
    inst = main_models.Instance.__table__
    extra = main_models.InstanceExtra.__table__
    meta = main_models.InstanceSystemMetadata.__table__
    user_meta = main_models.InstanceMetadata.__table__
    alive = sa.and_(
        inst.c.host.in_(hosts), inst.c.deleted == 0,
        sa.or_(inst.c.vm_state != vm_states.SOFT_DELETED,
               inst.c.vm_state.is_(None)))
    query = sa.select(
        inst.c.uuid, inst.c.host, inst.c.node, inst.c.vm_state,
        inst.c.task_state, inst.c.launched_at, inst.c.display_name,
        inst.c.project_id, inst.c.user_id, inst.c.image_ref,
        extra.c.flavor,
    ).select_from(inst.outerjoin(
        extra, extra.c.instance_uuid == inst.c.uuid)).where(
        alive).order_by(inst.c.id)
    rows = []
    by_uuid = {}
    utc = datetime.timezone.utc
    for rec in context.session.execute(query):
        row = InstanceRow()
        row.uuid = rec.uuid
        row.host = rec.host
        row.node = rec.node
        row.vm_state = rec.vm_state
        row.task_state = rec.task_state
        launched = rec.launched_at
        if launched is not None and launched.tzinfo is None:
            launched = launched.replace(tzinfo=utc)
        row.launched_at = launched
        row.display_name = rec.display_name
        row.project_id = rec.project_id
        row.user_id = rec.user_id
        row.image_ref = rec.image_ref
        row.flavor = _row_flavor(rec.flavor) if rec.flavor else None
        row.system_metadata = {}
        row.metadata = {}
        rows.append(row)
        by_uuid[row.uuid] = row
    for table, prefix, attr in (
            (meta, ROW_METADATA_PREFIX, 'system_metadata'),
            (user_meta, ROW_SERVER_METADATA_PREFIX, 'metadata')):
        if not rows:
            break
        joined = table.join(inst, inst.c.uuid == table.c.instance_uuid)
        query = sa.select(
            table.c.instance_uuid, table.c.key, table.c.value,
        ).select_from(joined).where(
            alive, table.c.deleted == 0,
            table.c.key.like(prefix + '%'))
        for rec in context.session.execute(query):
            row = by_uuid.get(rec.instance_uuid)
            if row is not None:
                getattr(row, attr)[rec.key] = rec.value
    # A row without a flavor record cannot be sized: skip it, as an
    # Instance without its flavor would fail to load.
    return [r for r in rows if r.flavor is not None]


class RequestView:
    """Per-request cache of host instances and planned victims.

    One object lives for one scheduling request (one ``select_destinations``
    call, possibly a multi-create). Instances are loaded in bulk, as light
    rows (:class:`InstanceRow`), the first time a set of hosts is asked
    for; victims planned for earlier instances of the same request count as
    leaving for the later ones.
    """

    def __init__(self, ctx):
        self.ctx = ctx
        self._instances = {}
        self._loaded_hosts = set()
        # key -> [InstanceInfo], valid for the leaving set _infos_gone
        self._infos = {}
        self._infos_gone = None
        self.planned_victims = set()
        self._lock = threading.Lock()

    def _ensure_loaded(self, host_states):
        missing = {}
        for hs in host_states:
            if hs.host not in self._loaded_hosts:
                missing.setdefault(getattr(hs, 'cell_uuid', None),
                                   set()).add(hs.host)
        if not missing:
            return
        loaded = load_instances(self.ctx, missing)
        with self._lock:
            self._instances.update(loaded)
            for hosts in missing.values():
                self._loaded_hosts.update(hosts)
            self._infos = {}

    def loaded_instances(self, host_states):
        """``{(host, node): [InstanceRow]}`` for the given HostStates (bulk
        loaded once per request, see :func:`load_instances`).
        """
        host_states = list(host_states)
        self._ensure_loaded(host_states)
        return {(hs.host, hs.nodename):
                self._instances.get((hs.host, hs.nodename), [])
                for hs in host_states}

    def host_views(self, host_states, leaving=(), request=None):
        """``{(host, node): HostView}`` for the given HostStates.

        :param leaving: extra instance uuids to treat as leaving (victims
            already being terminated by another request).
        :param request: :class:`~opie_sched.preemption.model.Resources` to
            be placed, or None. When given, the instances of hosts whose
            full state already fits it are not loaded (their views have no
            instances: nothing there needs to be preempted), which spares
            the bulk load on a cloud with free room.

        The instances' :class:`~opie_sched.preemption.model.InstanceInfo`
        are built once per host and leaving set, so the weighers of one
        request share them.
        """
        states = []
        needy = []
        for hs in host_states:
            capacity, used = full_state(hs)
            fits = request is not None and (
                request[0] <= capacity[0] - used[0]
                and request[1] <= capacity[1] - used[1]
                and request[2] <= capacity[2] - used[2])
            states.append(((hs.host, hs.nodename), hs, capacity, used,
                           not fits))
            if not fits:
                needy.append(hs)
        if needy:
            self._ensure_loaded(needy)
        gone = set(leaving) | self.planned_victims
        now = timeutils.utcnow(with_timezone=True)
        with self._lock:
            if gone != self._infos_gone:
                self._infos = {}
                self._infos_gone = gone
            cache = self._infos
        views = {}
        for key, hs, capacity, used, need in states:
            infos = ()
            if need:
                infos = cache.get(key)
                if infos is None:
                    infos = [instance_info(i, gone, now)
                             for i in self._instances.get(key, [])]
                    cache[key] = infos
            views[key] = model.HostView(
                name=hs.nodename or hs.host, capacity=capacity, used=used,
                instances=list(infos))
        return views

    def instance(self, host, node, uuid):
        """The loaded row with that uuid on (host, node), or None."""
        for inst in self._instances.get((host, node), []):
            if inst.uuid == uuid:
                return inst
        return None


_current = threading.local()


def current_view():
    """The :class:`RequestView` of the request this thread is scheduling,
    when opie-scheduler runs it; None otherwise.
    """
    return getattr(_current, 'view', None)


def set_current_view(view):
    _current.view = view


def view_for(spec_obj):
    """The current request's view, or a fresh one for this call only."""
    view = current_view()
    if view is None:
        ctx = getattr(spec_obj, '_context', None) or \
            nova_context.get_admin_context()
        view = RequestView(ctx.elevated() if not ctx.is_admin else ctx)
    return view
