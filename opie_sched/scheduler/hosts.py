"""Build dual host states from Nova's scheduler data, in bulk.

Nova's ``HostState`` (built from the ComputeNode record, which the resource
tracker fills from *every* instance's flavor) is the **full state**. What the
preemption phase also needs — which instances on a host are preemptible, how
big they are and when they started — is read from the cell databases once per
scheduling request for all candidate hosts together (one query per cell),
never once per host or per instance.

Only public Nova objects APIs are used here.
"""

import datetime
import threading

from oslo_log import log as logging
from oslo_utils import strutils

from nova.compute import task_states
from nova.compute import vm_states
from nova import context as nova_context
from nova import objects

from opie_sched import flavors
from opie_sched.preemption import model

LOG = logging.getLogger(__name__)

#: Server metadata key set on a victim: the UUID of the instance it makes
#: room for (or "reconciler").
PREEMPTED_BY_KEY = 'opie:preempted_by'
#: Server metadata key set on a victim: when it was chosen (ISO 8601, UTC).
PREEMPTED_AT_KEY = 'opie:preempted_at'
#: Server tag set on a victim.
PREEMPTED_TAG = 'opie-preempted'

_LEAVING_TASK_STATES = frozenset([task_states.DELETING,
                                  task_states.SOFT_DELETING])
_GONE_VM_STATES = frozenset([vm_states.DELETED, vm_states.SOFT_DELETED])

_cell_cache = {}
_cell_lock = threading.Lock()


def flavor_is_preemptible(flavor):
    """True when the (instance's own copy of the) flavor is preemptible."""
    specs = getattr(flavor, 'extra_specs', None) or {}
    return strutils.bool_from_string(specs.get(flavors.MARKER_KEY, 'false'))


def flavor_resources(flavor):
    """:class:`~opie_sched.preemption.model.Resources` a flavor holds."""
    return model.Resources(flavor.vcpus, flavor.memory_mb,
                           flavor.root_gb + flavor.ephemeral_gb)


def request_is_preemptible(spec_obj):
    """True for a RequestSpec whose flavor is preemptible."""
    flavor = getattr(spec_obj, 'flavor', None)
    return flavor is not None and flavor_is_preemptible(flavor)


def request_resources(spec_obj):
    """Resources a RequestSpec asks for (vCPU, MB, GB)."""
    return model.Resources(spec_obj.vcpus, spec_obj.memory_mb,
                           spec_obj.root_gb + spec_obj.ephemeral_gb)


def instance_is_leaving(instance, extra_leaving=()):
    """True when an Instance is on its way out: being deleted, already
    deleted, marked as a victim (metadata ``opie:preempted_by``), or its
    uuid is in ``extra_leaving``."""
    meta = instance.metadata if 'metadata' in instance else {}
    return (instance.uuid in extra_leaving
            or instance.task_state in _LEAVING_TASK_STATES
            or instance.vm_state in _GONE_VM_STATES
            or PREEMPTED_BY_KEY in (meta or {}))


def instance_info(instance, extra_leaving=()):
    """:class:`~opie_sched.preemption.model.InstanceInfo` of an Instance
    (``leaving`` as :func:`instance_is_leaving` says)."""
    flavor = instance.flavor
    leaving = instance_is_leaving(instance, extra_leaving)
    launched = instance.launched_at
    if launched is not None and launched.tzinfo is None:
        launched = launched.replace(tzinfo=datetime.timezone.utc)
    return model.InstanceInfo(
        uuid=instance.uuid, resources=flavor_resources(flavor),
        preemptible=flavor_is_preemptible(flavor), launched_at=launched,
        name=instance.display_name or '', project_id=instance.project_id,
        leaving=leaving)


def full_state(host_state):
    """``(capacity, used)`` of a HostState's full state.

    capacity = total × allocation ratio; used = what the ComputeNode record
    counts (every instance's flavor, normal and preemptible, plus host
    reservations): ``vcpus_used``, ``total − free`` RAM and
    ``disk_mb_used``. Free disk is not used because nova lowers it to the
    hypervisor's ``disk_available_least``, which is physical space, not the
    flavors' claims. Units: vCPU, MB, GB.
    """
    capacity = model.Resources(
        host_state.vcpus_total * host_state.cpu_allocation_ratio,
        host_state.total_usable_ram_mb * host_state.ram_allocation_ratio,
        host_state.total_usable_disk_gb * host_state.disk_allocation_ratio)
    used = model.Resources(
        host_state.vcpus_used,
        host_state.total_usable_ram_mb - host_state.free_ram_mb,
        host_state.disk_mb_used / 1024.0)
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


def load_instances(ctx, hosts_by_cell):
    """Instances on the given hosts, in one query per cell.

    :param ctx: a nova RequestContext (admin rights are needed to read all
        projects' instances).
    :param hosts_by_cell: ``{cell_uuid: set(host names)}``; a cell_uuid of
        None means the context's current database.
    :returns: ``{(host, node): [Instance, ...]}`` of instances that are not
        deleted, with their flavor and metadata loaded.
    """
    found = {}
    for cell_uuid, hosts in hosts_by_cell.items():
        if not hosts:
            continue
        filters = {'host': sorted(hosts), 'deleted': False}
        attrs = ['flavor', 'metadata']
        if cell_uuid is None:
            insts = objects.InstanceList.get_by_filters(
                ctx, filters, expected_attrs=attrs)
        else:
            with nova_context.target_cell(
                    ctx, _cell_mapping(ctx, cell_uuid)) as cctxt:
                insts = objects.InstanceList.get_by_filters(
                    cctxt, filters, expected_attrs=attrs)
        for inst in insts:
            found.setdefault((inst.host, inst.node), []).append(inst)
    return found


class RequestView:
    """Per-request cache of host instances and planned victims.

    One object lives for one scheduling request (one ``select_destinations``
    call, possibly a multi-create). Instances are loaded in bulk the first
    time a set of hosts is asked for; victims planned for earlier instances
    of the same request count as leaving for the later ones.
    """

    def __init__(self, ctx):
        self.ctx = ctx
        self._instances = {}
        self._loaded_hosts = set()
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

    def loaded_instances(self, host_states):
        """``{(host, node): [Instance]}`` for the given HostStates (bulk
        loaded once per request, with flavor and metadata)."""
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
        """
        states = {}
        for hs in host_states:
            capacity, used = full_state(hs)
            states[(hs.host, hs.nodename)] = (hs, capacity, used)
        needy = [hs for hs, capacity, used in states.values()
                 if request is None
                 or not request.fits_in(capacity - used)]
        self._ensure_loaded(needy)
        needy = {(hs.host, hs.nodename) for hs in needy}
        gone = set(leaving) | self.planned_victims
        views = {}
        for key, (hs, capacity, used) in states.items():
            insts = self._instances.get(key, []) if key in needy else []
            views[key] = model.HostView(
                name=hs.nodename or hs.host, capacity=capacity, used=used,
                instances=[instance_info(i, gone) for i in insts])
        return views

    def instance(self, host, node, uuid):
        """The loaded Instance object with that uuid on (host, node)."""
        for inst in self._instances.get((host, node), []):
            if inst.uuid == uuid:
                return inst
        return None


_current = threading.local()


def current_view():
    """The :class:`RequestView` of the request this thread is scheduling,
    when opie-scheduler runs it; None otherwise."""
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
