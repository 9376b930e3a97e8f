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
scheduling request for all candidate hosts together (one query per cell,
the cells at the same time: :func:`load_instances`), never once per host
or per instance.

Public Nova objects APIs are used here, except for the light rows of the
preemption phase (:func:`load_instances` ``light``), read with one column
query through nova's own database API and models.
"""

import collections
import contextvars
import datetime
import threading

from oslo_log import log as logging
from oslo_serialization import jsonutils
from oslo_utils import timeutils
import sqlalchemy as sa

from nova.compute import task_states
from nova.compute import vm_states
from nova import context as nova_context
from nova.db.api import api as api_db
from nova.db.api import models as api_models
from nova.db.main import api as main_db
from nova.db.main import models as main_models
from nova import exception
from nova import objects
from nova.scheduler import utils as scheduler_utils

import nova.conf

from opie_sched.common import flavors
from opie_sched import conf as opie_conf
from opie_sched.preemption import model
from opie_sched.preemption import victim_state as victim_state_mod
from opie_sched.scheduler import ownership

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF
opie_conf.register_opts(CONF)

#: Owner-visible marks of a victim and keys of the guest-visible notice:
#: one definition for the scheduler and the market
#: (:mod:`opie_sched.preemption.victim_state`). Informational only.
PREEMPTED_BY_KEY = victim_state_mod.PREEMPTED_BY_KEY
PREEMPTED_AT_KEY = victim_state_mod.PREEMPTED_AT_KEY
PREEMPTED_TAG = victim_state_mod.PREEMPTED_TAG
NOTICE_KEY = victim_state_mod.NOTICE_KEY
DEADLINE_KEY = victim_state_mod.DEADLINE_KEY

#: Task states of a server on its way out (see
#: :data:`opie_sched.scheduler.ownership.LEAVING_TASK_STATES`).
LEAVING_TASK_STATES = ownership.LEAVING_TASK_STATES

#: What a scheduling request is for (:func:`request_operation`).
BOOT = 'boot'
UNSHELVE = 'unshelve'
REBUILD = 'rebuild'
EVACUATE = 'evacuate'
LIVE_MIGRATION = 'live-migration'
MIGRATION = 'migration'
MOVE = 'move'
#: Operations that move a server that already runs (or ran) on a host.
MOVES = frozenset([EVACUATE, LIVE_MIGRATION, MIGRATION, MOVE])


def request_operation(ctx, spec_obj, instance_uuids, alloc_reqs_by_rp_uuid):
    """What nova asks the scheduler for, read from nova's own records.

    * ``rebuild``: ``_nova_check_type = rebuild`` (nova's
      ``request_is_rebuild``); nova then fetches no allocation candidates
      and claims nothing (``alloc_reqs_by_rp_uuid`` is None only then).
    * ``boot``: a new server (its instance mapping has no cell yet: the
      conductor creates the instance record in a cell after scheduling),
      or an instance that has no host.
    * ``unshelve``: the instance is ``shelved_offloaded``.
    * ``live-migration``, ``migration`` (cold migration and resize) and
      ``evacuate``: the instance has a host and its task state is
      ``migrating``, ``resize_prep`` or ``rebuilding`` (a same-host
      rebuild was told apart above); ``move`` for any other task state.

    :param ctx: admin RequestContext.
    :returns: one of the constants above. One API database query (the
        instance mapping's cell, one column), and one cell query when the
        instance exists.
    """
    if (alloc_reqs_by_rp_uuid is None
            or scheduler_utils.request_is_rebuild(spec_obj)):
        return REBUILD
    if not instance_uuids:
        return BOOT
    uuid = instance_uuids[0]
    cell_uuid = _mapped_cell(ctx, uuid)
    if cell_uuid is None:
        # no mapping, or a mapping without a cell yet
        return BOOT
    try:
        with nova_context.target_cell(
                ctx, _cell_mapping(ctx, cell_uuid)) as cctxt:
            inst = objects.Instance.get_by_uuid(cctxt, uuid,
                                                expected_attrs=[])
    except exception.InstanceNotFound:
        return BOOT
    if inst.vm_state == vm_states.SHELVED_OFFLOADED:
        return UNSHELVE
    if not inst.host:
        return BOOT
    return {task_states.MIGRATING: LIVE_MIGRATION,
            task_states.RESIZE_PREP: MIGRATION,
            task_states.REBUILDING: EVACUATE}.get(inst.task_state, MOVE)


@api_db.context_manager.reader
def _mapped_cell(context, instance_uuid):
    """The uuid of the cell an instance is mapped to (its instance
    mapping's cell), or None when it has no mapping or no cell yet.
    """
    mapping = api_models.InstanceMapping.__table__
    cell = api_models.CellMapping.__table__
    found = context.session.execute(
        sa.select(cell.c.uuid).select_from(mapping.join(
            cell, cell.c.id == mapping.c.cell_id)).where(
            mapping.c.instance_uuid == instance_uuid)).first()
    return found[0] if found is not None else None


_cell_cache = {}
_cell_lock = threading.Lock()


# The ownership model (who holds room, preemptible by its classes, its
# state, may it be a victim) lives in opie_sched.scheduler.ownership; its
# names stay importable from here.
flavor_is_preemptible = ownership.flavor_is_preemptible
disk_gb = ownership.disk_gb
flavor_resources = ownership.flavor_resources
instance_boots_from_volume = ownership.instance_boots_from_volume
request_is_preemptible = ownership.request_is_preemptible
request_resources = ownership.request_resources
victim_state = ownership.victim_state
instance_state = ownership.instance_state
instance_is_leaving = ownership.instance_is_leaving
instance_info = ownership.instance_info


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


#: The capacity model of every full-state judgement (filter, weighers,
#: alternates, preemption decision, reconciler screen) is Placement's:
#: capacity = (total − reserved) × allocation ratio, used = what the
#: consumers' allocations hold (reserved is never counted as used).


def summary_state(summary):
    """``(capacity, used)`` of a provider summary of ``GET
    /allocation_candidates`` (Placement's own figures, as nova fetched them
    for the request), or None when VCPU or MEMORY_MB is missing (a
    provider without a ``DISK_GB`` inventory, whose disks are volumes, has
    a disk capacity of 0 GB: Placement admits no disk claim there).

    capacity = (total − reserved) × allocation ratio of VCPU, MEMORY_MB and
    DISK_GB (Placement's ``capacity``); used = the standard plus the
    preemptible classes' ``used`` (every consumer, normal and preemptible,
    claims in flight included). Units: vCPU, MB, GB.
    """
    resources = (summary or {}).get('resources') or {}
    try:
        capacity = model.Resources(*(
            resources[rc]['capacity'] if rc in resources or rc != 'DISK_GB'
            else 0 for rc in flavors.STANDARD_CLASSES))
    except (KeyError, TypeError):
        return None
    return capacity, ownership.amounts_resources(
        {rc: (item or {}).get('used') for rc, item in resources.items()})


def _conf_reserved():
    """The host reservations of this process's nova.conf (vCPU, MB, GB):
    the fallback when Placement's inventories are not at hand.
    """
    return model.Resources(CONF.reserved_host_cpus,
                           CONF.reserved_host_memory_mb,
                           CONF.reserved_host_disk_mb / 1024.0)


def full_state(host_state, view=None):
    """``(capacity, used)`` of a HostState's full state, in Placement's
    capacity model (see :func:`summary_state`).

    In a request scheduled by opie-scheduler (``view``, default
    :func:`current_view`, holds the provider summaries nova fetched for
    it) the figures are the provider summary's, plus what this request
    claimed on the host since (:meth:`RequestView.note_claim`): no extra
    database or HTTP call. Otherwise (the stock manager, a host without a
    summary) they come from the HostState, with the host reservations of
    this process's nova.conf taken off the capacity and the usage (the
    ComputeNode record counts them as used): capacity = (total −
    reserved) × ratio; used = ``vcpus_used``, ``total − free`` RAM and
    ``disk_mb_used`` + the consumed disk (see :func:`note_consumed`), less
    reserved. Free disk is not used because nova lowers it to the
    hypervisor's ``disk_available_least``, which is physical space, not
    the flavors' claims. Units: vCPU, MB, GB.
    """
    if view is None:
        view = current_view()
    if view is not None:
        state = view.provider_state(getattr(host_state, 'uuid', None))
        if state is not None:
            return state
    reserved = _conf_reserved()
    capacity = model.Resources(
        (host_state.vcpus_total - reserved[0])
        * host_state.cpu_allocation_ratio,
        (host_state.total_usable_ram_mb - reserved[1])
        * host_state.ram_allocation_ratio,
        (host_state.total_usable_disk_gb - reserved[2])
        * host_state.disk_allocation_ratio)
    used = model.Resources(
        host_state.vcpus_used,
        host_state.total_usable_ram_mb - host_state.free_ram_mb,
        host_state.disk_mb_used / 1024.0 + consumed_disk_gb(host_state))
    return capacity, used - reserved


def compute_node_state(node, reserved=None):
    """``(capacity, used)`` of a ComputeNode record, in Placement's
    capacity model (as :func:`full_state`).

    :param reserved: :class:`~opie_sched.preemption.model.Resources` the
        node's provider reserves (its Placement inventories' ``reserved``,
        see :class:`ReservedCache`); default this process's nova.conf
        ``reserved_host_*``. The ComputeNode record counts them as used;
        they are taken off both sides.
    """
    if reserved is None:
        reserved = _conf_reserved()
    capacity = model.Resources(
        (node.vcpus - reserved[0]) * node.cpu_allocation_ratio,
        (node.memory_mb - reserved[1]) * node.ram_allocation_ratio,
        (node.local_gb - reserved[2]) * node.disk_allocation_ratio)
    used = model.Resources(node.vcpus_used, node.memory_mb_used,
                           node.local_gb_used) - reserved
    return capacity, used


class ReservedCache:
    """The ``reserved`` amounts of compute node providers' standard
    inventories (vCPU, MB, GB), read from Placement once per provider and
    kept for ``ttl`` seconds (and while the node's totals and ratios are
    unchanged): what the reconciler's screen needs to judge a ComputeNode
    record in Placement's capacity model without one HTTP call per host
    per round. A provider Placement cannot answer for falls back to this
    process's nova.conf ``reserved_host_*`` (not cached).
    """

    #: seconds an entry is kept (reservations change when nova-compute is
    #: reconfigured and restarted).
    TTL = 600.0

    def __init__(self, ttl=TTL, clock=None):
        import time
        self.ttl = ttl
        self._clock = clock or time.monotonic
        self._entries = {}
        self._lock = threading.Lock()

    @staticmethod
    def _signature(node):
        return (node.vcpus, node.memory_mb, node.local_gb,
                node.cpu_allocation_ratio, node.ram_allocation_ratio,
                node.disk_allocation_ratio)

    def get(self, client, ctx, node):
        """:class:`~opie_sched.preemption.model.Resources` reserved on the
        node's provider (``node.uuid``).
        """
        now = self._clock()
        sig = self._signature(node)
        with self._lock:
            entry = self._entries.get(node.uuid)
        if entry is not None and entry[0] == sig and now < entry[1]:
            return entry[2]
        try:
            resp = client.get(
                '/resource_providers/%s/inventories' % node.uuid,
                version='1.0',
                global_request_id=getattr(ctx, 'global_id', None))
            if resp is None or resp.status_code != 200:
                raise ValueError('answered %s'
                                 % getattr(resp, 'status_code', None))
            inv = resp.json().get('inventories') or {}
            reserved = model.Resources(*(
                (inv.get(rc) or {}).get('reserved', 0)
                for rc in flavors.STANDARD_CLASSES))
        except Exception as exc:
            LOG.warning('Could not read the inventories of provider %s '
                        '(%s); using this host\'s reserved_host_* options',
                        node.uuid, exc)
            return _conf_reserved()
        with self._lock:
            self._entries[node.uuid] = (sig, now + self.ttl, reserved)
        return reserved


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
        InstanceRow})``: light rows (:func:`instance_rows_by_uuid`: the
        columns, the instance's own flavor and opie's victim record; no
        server metadata), read fresh. Two queries for the instances, one
        for migrations when some consumers are not instances, two more
        when migrations are found.
    """
    consumers = set(consumers)
    if not consumers:
        return {}, {}
    rows = instance_rows_by_uuid(cctxt, consumers)
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
            rows.update(instance_rows_by_uuid(cctxt, extra))
        for inst_uuid, mig_uuids in by_instance.items():
            if inst_uuid in rows:
                owners.update(dict.fromkeys(mig_uuids, inst_uuid))
    return owners, rows


def _cell_mapping(ctx, cell_uuid):
    with _cell_lock:
        cell = _cell_cache.get(cell_uuid)
    if cell is None:
        cell = objects.CellMapping.get_by_uuid(ctx, cell_uuid)
        with _cell_lock:
            _cell_cache[cell_uuid] = cell
    return cell


class CellReadError(Exception):
    """One or more cells' databases could not be read (the read raised, or
    did not answer within the timeout): what was read of the other cells
    is not returned, so no cell's hosts are ever taken for hosts without
    instances.

    :ivar failures: ``{cell_uuid: reason}`` (str) of every cell that
        failed; a cell_uuid of None is the context's current database.
    """

    def __init__(self, failures):
        self.failures = dict(failures)
        super().__init__('could not read cell(s) %s' % (
            '; '.join('%s: %s' % (cell, reason) for cell, reason in
                      sorted(self.failures.items(), key=_by_cell))))


def _by_cell(item):
    return str(item[0])


def _read_cells(ctx, jobs):
    """Run one read per cell, the cells concurrently.

    :param jobs: ``{cell_uuid: (fn, args)}``: ``fn(cell_context, *args)``
        is called once per cell, with a context targeted at that cell (a
        cell_uuid of None: ``ctx`` itself, the context's current
        database).
    :returns: ``{cell_uuid: fn's result}``.
    :raises CellReadError: when any cell's ``fn`` raised, or did not
        return within ``nova.context.CELL_TIMEOUT`` seconds (60: the
        time nova's host manager waits for its own reads of the cells);
        it names every such cell (the exception of the first one, in
        cell uuid order, chained).

    Two or more cells targeted by uuid are read with nova's
    ``scatter_gather_cells`` (in native threading mode, at most
    ``[DEFAULT] cell_worker_thread_pool_size`` cells at once, a pool
    shared with nova's own reads of the cells): the read takes as long as
    its slowest cell, not the sum of the cells' round trips. A single
    cell, and the current database (None), are read in the calling
    thread, without the thread hop (0.1 to 0.4 ms a read, measured) and
    without the timeout: a slow database there takes the database
    driver's own time to fail, as before.
    """
    # {cell_uuid: result, or the exception raised, or nova's
    # did_not_respond_sentinel}
    outcomes = {}
    mappings = {}
    for cell_uuid in sorted(cell for cell in jobs if cell is not None):
        try:
            mappings[cell_uuid] = _cell_mapping(ctx, cell_uuid)
        except Exception as exc:
            outcomes[cell_uuid] = exc
    timeout = nova_context.CELL_TIMEOUT
    if len(mappings) > 1:
        outcomes.update(nova_context.scatter_gather_cells(
            ctx, list(mappings.values()), timeout, _read_cell, jobs))
    else:
        for cell_uuid, mapping in mappings.items():
            outcomes[cell_uuid] = _read_here(ctx, mapping, jobs[cell_uuid])
    if None in jobs:
        outcomes[None] = _read_here(ctx, None, jobs[None])
    failures = {}
    for cell_uuid, outcome in outcomes.items():
        if outcome is nova_context.did_not_respond_sentinel:
            failures[cell_uuid] = 'did not answer within %s s' % timeout
        elif isinstance(outcome, Exception):
            failures[cell_uuid] = '%s: %s' % (type(outcome).__name__,
                                              outcome)
    if failures:
        causes = sorted(((cell, outcome) for cell, outcome in
                         outcomes.items() if isinstance(outcome, Exception)),
                        key=_by_cell)
        raise CellReadError(failures) from (causes[0][1] if causes
                                            else None)
    return outcomes


def _read_cell(cctxt, jobs):
    """One cell's job of :func:`_read_cells`, in a cell worker thread
    (``cctxt`` is targeted at that cell).
    """
    fn, args = jobs[cctxt.cell_uuid]
    return fn(cctxt, *args)


def _read_here(ctx, cell_mapping, job):
    """One cell's job of :func:`_read_cells` in the calling thread: its
    result, or the exception it raised (as ``scatter_gather_cells``
    gives it). ``cell_mapping`` None: ``ctx``'s current database.
    """
    fn, args = job
    try:
        if cell_mapping is None:
            return fn(ctx, *args)
        with nova_context.target_cell(ctx, cell_mapping) as cctxt:
            return fn(cctxt, *args)
    except Exception as exc:
        return exc


def load_instances(ctx, hosts_by_cell, light=True, nodes_by_cell=None,
                   server_metadata=True):
    """Instances on the given hosts, in one query per cell, the cells read
    concurrently (see :func:`_read_cells`).

    :param ctx: a nova RequestContext (admin rights are needed to read all
        projects' instances).
    :param hosts_by_cell: ``{cell_uuid: set(host names)}``; a cell_uuid of
        None means the context's current database.
    :param light: True (default): :class:`InstanceRow` objects read with
        one column query (with opie's own system metadata keys; one more
        for its server metadata keys), what the
        scheduler plugins and the reconciler read, at a fraction of the cost
        of whole ``Instance`` objects (building an Instance with its flavor
        was most of a preemption decision's time at 100 and 1000 nodes);
        False: ``Instance`` objects with their flavor and metadata.
    :param nodes_by_cell: ``{cell_uuid: set(node names)}`` or None: with
        ``light``, only the instances of these nodes are read (a compute
        service managing many nodes, e.g. ironic's, has the instances of
        every node under its host name; a request's candidates may be a
        few of them).
    :param server_metadata: with ``light``, False leaves the rows' server
        metadata unread (``metadata`` empty; one query less per cell):
        only the market's weigher reads it (:func:`load_server_metadata`
        reads it later for rows loaded without).
    :returns: ``{(host, node): [InstanceRow or Instance, ...]}`` of
        instances that are not deleted (soft-deleted ones included: they
        hold their allocation until reclaimed), all cells' together.
    :raises CellReadError: when a cell's read fails or, with two cells or
        more, does not answer within ``nova.context.CELL_TIMEOUT`` seconds
        (60): nothing is returned then, never a failed cell's hosts
        without their instances. The scheduler plugins catch it as any
        error of theirs and never let it reach nova: opie's weighers (the
        market's too) give every host the same weight for the request,
        leaving the order to the other weighers; the transparent
        placement of a normal request falls back to the full state. The
        reconciler reads one cell at a time (cell None, in its calling
        thread) and skips a cell whose read fails for that round.
    """
    jobs = {}
    for cell_uuid, hosts in hosts_by_cell.items():
        if not hosts:
            continue
        nodes = (nodes_by_cell or {}).get(cell_uuid)
        nodes = sorted(nodes) if nodes and None not in nodes else None
        jobs[cell_uuid] = (_query_instances,
                           (sorted(hosts), light, nodes, server_metadata))
    found = {}
    read = _read_cells(ctx, jobs)
    # merged in the order of hosts_by_cell, as when read one by one
    for cell_uuid in jobs:
        for inst in read[cell_uuid]:
            found.setdefault((inst.host, inst.node), []).append(inst)
    return found


def _query_instances(ctx, hosts, light, nodes=None, server_metadata=True):
    if not light:
        return objects.InstanceList.get_by_filters(
            ctx, {'host': hosts, 'deleted': False, 'soft_deleted': True},
            expected_attrs=['flavor', 'metadata', 'system_metadata'])
    return _instance_rows(ctx, hosts, nodes, server_metadata)


def load_server_metadata(ctx, rows_by_cell):
    """Read the server metadata keys of :class:`InstanceRow` objects loaded
    without them (``server_metadata=False``), one query per cell, the
    cells read concurrently (see :func:`_read_cells`): each
    row's ``metadata`` is replaced by its keys starting with
    :data:`ROW_SERVER_METADATA_PREFIX`.

    :param rows_by_cell: ``{cell_uuid: [InstanceRow]}``; a cell_uuid of
        None means the context's current database.
    :raises CellReadError: as :func:`load_instances`; no row is changed
        then.
    """
    jobs = {cell_uuid: (_server_metadata, (sorted({r.uuid for r in rows}),))
            for cell_uuid, rows in rows_by_cell.items() if rows}
    read = _read_cells(ctx, jobs)
    for cell_uuid in jobs:
        found = read[cell_uuid]
        for row in rows_by_cell[cell_uuid]:
            row.metadata = dict(found.get(row.uuid, {}))


@main_db.pick_context_manager_reader
def _server_metadata(context, uuids):
    """``{uuid: {key: value}}`` of the server metadata keys starting with
    :data:`ROW_SERVER_METADATA_PREFIX` of these instances.
    """
    user_meta = main_models.InstanceMetadata.__table__
    query = sa.select(
        user_meta.c.instance_uuid, user_meta.c.key, user_meta.c.value,
    ).where(user_meta.c.instance_uuid.in_(uuids),
            user_meta.c.deleted == 0,
            user_meta.c.key.like(ROW_SERVER_METADATA_PREFIX + '%'))
    found = {}
    for rec in context.session.execute(query):
        found.setdefault(rec.instance_uuid, {})[rec.key] = rec.value
    return found


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
    UTC datetime or None), ``updated_at`` (likewise: when a delete set
    ``deleting``), ``display_name``, ``project_id``, ``user_id``,
    ``flavor`` (:class:`RowFlavor`, or a nova ``Flavor`` for an old record
    whose serialized flavor lacks its extra specs), ``image_ref``,
    ``system_metadata`` (only the keys starting with
    :data:`ROW_METADATA_PREFIX`) and ``metadata`` (only the keys starting
    with :data:`ROW_SERVER_METADATA_PREFIX`). ``'field' in row`` works as
    on an Instance.
    """

    __slots__ = ('uuid', 'host', 'node', 'vm_state', 'task_state',
                 'launched_at', 'display_name', 'project_id', 'user_id',
                 'image_ref', 'flavor', 'system_metadata', 'metadata',
                 'updated_at')

    def __contains__(self, name):
        return name in _ROW_FIELDS

    def __repr__(self):
        return 'InstanceRow(%s on %s/%s)' % (self.uuid, self.host, self.node)


_ROW_FIELDS = frozenset(InstanceRow.__slots__)


def _row_flavor(text):
    data = jsonutils.loads(text)['cur']
    fields = data.get('nova_object.data', {})
    if 'extra_specs' not in fields:
        # An old record: let nova's object load the extra specs.
        return objects.Flavor.obj_from_primitive(data)
    return RowFlavor(fields)


@main_db.pick_context_manager_reader
def _instance_rows(context, hosts, nodes=None, server_metadata=True):
    """``[InstanceRow]`` on ``hosts`` (and ``nodes``, unless None; not
    deleted; soft-deleted ones
    included, they hold their allocation until reclaimed): one
    query for the columns, the flavor and opie's system metadata keys, one
    for its server metadata keys (only when ``server_metadata``).
    """
    inst = main_models.Instance.__table__
    # Soft-deleted instances included: they keep their allocation.
    alive = sa.and_(inst.c.host.in_(hosts), inst.c.deleted == 0)
    if nodes is not None:
        alive = sa.and_(alive, inst.c.node.in_(nodes))
    return _rows_where(context, alive, server_metadata=server_metadata)


@main_db.pick_context_manager_reader
def instance_rows_by_uuid(context, uuids):
    """``{uuid: InstanceRow}`` of the instances of ``context``'s cell with
    these uuids that are not deleted (soft-deleted ones included: they
    hold their allocation until reclaimed): one query for the columns, the
    flavor and opie's system metadata keys (the victim record, what
    :func:`victim_state` and the reservations read). Their server metadata
    is not read (``metadata`` is empty).
    """
    uuids = sorted(set(uuids))
    if not uuids:
        return {}
    inst = main_models.Instance.__table__
    alive = sa.and_(inst.c.uuid.in_(uuids), inst.c.deleted == 0)
    return {r.uuid: r for r in _rows_where(context, alive,
                                            server_metadata=False)}


def _rows_where(context, alive, server_metadata=True):
    """``[InstanceRow]`` of the instances matching ``alive`` (a condition
    on nova's ``instances`` table), in id order, rows without a flavor
    record left out; their server metadata read only when
    ``server_metadata``.

    One query reads the columns, the flavor and opie's system metadata
    keys together (an outer join: one result row per instance and
    ``opie_victim_*`` key, a single one with no key for an instance
    without a victim record, i.e. almost all of them); a second one the
    server metadata keys, when asked for.
    """
    inst = main_models.Instance.__table__
    extra = main_models.InstanceExtra.__table__
    meta = main_models.InstanceSystemMetadata.__table__
    user_meta = main_models.InstanceMetadata.__table__
    # the conditions on the metadata rows belong to the join: in the
    # WHERE clause they would drop the instances without a record
    victim_keys = sa.and_(meta.c.instance_uuid == inst.c.uuid,
                          meta.c.deleted == 0,
                          meta.c.key.like(ROW_METADATA_PREFIX + '%'))
    query = sa.select(
        inst.c.uuid, inst.c.host, inst.c.node, inst.c.vm_state,
        inst.c.task_state, inst.c.launched_at, inst.c.display_name,
        inst.c.project_id, inst.c.user_id, inst.c.image_ref,
        inst.c.updated_at,
        extra.c.flavor, meta.c.key, meta.c.value,
    ).select_from(inst.outerjoin(
        extra, extra.c.instance_uuid == inst.c.uuid).outerjoin(
        meta, victim_keys)).where(alive).order_by(inst.c.id)
    rows = []
    by_uuid = {}
    # the instances of one flavor carry the same serialized flavor: each
    # text is parsed once per read, its flavor shared (nobody modifies it)
    parsed = {}
    utc = datetime.timezone.utc
    row = None
    for (uuid, host, node, vm_state, task_state, launched, display_name,
         project_id, user_id, image_ref, updated_at, text, key,
         value) in context.session.execute(query):
        if row is None or row.uuid != uuid:
            # a new instance (its rows are consecutive: ordered by id)
            row = InstanceRow()
            row.uuid = uuid
            row.host = host
            row.node = node
            row.vm_state = vm_state
            row.task_state = task_state
            if launched is not None and launched.tzinfo is None:
                launched = launched.replace(tzinfo=utc)
            row.launched_at = launched
            row.display_name = display_name
            row.project_id = project_id
            row.user_id = user_id
            row.image_ref = image_ref
            if updated_at is not None and updated_at.tzinfo is None:
                updated_at = updated_at.replace(tzinfo=utc)
            row.updated_at = updated_at
            if text:
                flavor = parsed.get(text)
                if flavor is None:
                    flavor = parsed[text] = _row_flavor(text)
                row.flavor = flavor
            else:
                row.flavor = None
            row.system_metadata = {}
            row.metadata = {}
            rows.append(row)
            by_uuid[uuid] = row
        if key is not None:
            row.system_metadata[key] = value
    if server_metadata and rows:
        joined = user_meta.join(inst,
                                inst.c.uuid == user_meta.c.instance_uuid)
        query = sa.select(
            user_meta.c.instance_uuid, user_meta.c.key, user_meta.c.value,
        ).select_from(joined).where(
            alive, user_meta.c.deleted == 0,
            user_meta.c.key.like(ROW_SERVER_METADATA_PREFIX + '%'))
        for rec in context.session.execute(query):
            found = by_uuid.get(rec.instance_uuid)
            if found is not None:
                found.metadata[rec.key] = rec.value
    # A row without a flavor record cannot be sized: skip it, as an
    # Instance without its flavor would fail to load.
    return [r for r in rows if r.flavor is not None]


#: What the preemption phase may do for one request: ``operation``
#: (:func:`request_operation`, or None when not read), ``preempt`` (choose
#: and terminate victims after each claim), ``fit_full_state`` (hosts
#: whose full state has no room for the request are filtered out) and
#: ``check_claim`` (after each claim, a host left over capacity makes the
#: request take its claim back and fail).
Decision = collections.namedtuple(
    'Decision', 'operation preempt fit_full_state check_claim')
#: A request nobody classified (no opie manager): nothing special.
NO_POLICY = Decision(None, False, False, False)


class RequestView:
    """Per-request cache of host instances and planned victims.

    One object lives for one scheduling request (one ``select_destinations``
    call, possibly a multi-create). Instances are loaded in bulk, as light
    rows (:class:`InstanceRow`), the first time a set of hosts is asked
    for; victims planned for earlier instances of the same request count as
    leaving for the later ones.
    """

    def __init__(self, ctx, summaries=None):
        self.ctx = ctx
        self._instances = {}
        # (host, node) whose instances were loaded
        self._loaded = set()
        # (host, node) whose loaded rows have their server metadata (only
        # the market's weigher reads it: the others load without)
        self._meta_loaded = set()
        # key -> [InstanceInfo], valid for the leaving set _infos_gone
        self._infos = {}
        self._infos_gone = None
        # key -> ((capacity, used, with instances), HostView), valid for
        # the leaving set _infos_gone and the instances loaded so far
        self._views = {}
        # rp uuid -> summary_state() of its summary (fixed per request)
        self._summary_states = {}
        self.planned_victims = set()
        self._lock = threading.Lock()
        #: ``{rp uuid: provider summary}`` nova fetched for the request
        self.summaries = summaries or {}
        #: ``{rp uuid: Resources}`` this request claimed on each provider
        self.claimed = {}
        #: victims reserved so far, one entry per claimed host
        self.pending = []
        #: True once the reserved victims were handed to termination
        self.executed = False
        #: instance uuids whose claim was taken back (see the manager)
        self.refused = []
        self.request_id = getattr(ctx, 'request_id', None)
        self._decide = None
        self._decision = None
        # (spec_obj, its flavor, (preemptible, Resources)) last asked for
        self._facts = None

    def set_policy(self, decide):
        """Give the view the callable that decides, on first need, what
        the request may do (returns a :class:`Decision`; it may read the
        database, so it runs at most once per request).
        """
        self._decide = decide
        self._decision = None

    def decision(self):
        """The request's :class:`Decision` (:data:`NO_POLICY` when no
        policy was set).
        """
        if self._decision is None:
            self._decision = (self._decide() if self._decide is not None
                              else NO_POLICY)
        return self._decision

    def decided(self):
        """The request's :class:`Decision` when :meth:`decision` already
        worked it out, else None (nothing is read).
        """
        return self._decision

    def request_facts(self, spec_obj):
        """``(preemptible, resources)`` of a RequestSpec
        (:func:`request_is_preemptible`, :func:`request_resources`),
        worked out once per spec and flavor object: a filter asks for
        every candidate host.
        """
        flavor = getattr(spec_obj, 'flavor', None)
        cached = self._facts
        if (cached is not None and cached[0] is spec_obj
                and cached[1] is flavor):
            return cached[2]
        facts = (request_is_preemptible(spec_obj),
                 request_resources(spec_obj))
        self._facts = (spec_obj, flavor, facts)
        return facts

    def provider_state(self, rp_uuid):
        """``(capacity, used)`` of a provider from its summary plus what
        this request claimed on it since (see :func:`summary_state`), or
        None without a usable summary.
        """
        try:
            state = self._summary_states[rp_uuid]
        except KeyError:
            state = summary_state(self.summaries.get(rp_uuid))
            self._summary_states[rp_uuid] = state
        if state is None:
            return None
        capacity, used = state
        return capacity, used + self.claimed.get(rp_uuid, model.ZERO)

    def note_claim(self, rp_uuid, resources):
        """Count a claim of this request (:class:`Resources`) on a
        provider, which the provider summary does not show.
        """
        with self._lock:
            self.claimed[rp_uuid] = (
                self.claimed.get(rp_uuid, model.ZERO) + resources)

    def _ensure_loaded(self, host_states, server_metadata=False):
        missing = {}
        nodes = {}
        keys = set()
        for hs in host_states:
            key = (hs.host, hs.nodename)
            if key not in self._loaded:
                cell = getattr(hs, 'cell_uuid', None)
                missing.setdefault(cell, set()).add(hs.host)
                nodes.setdefault(cell, set()).add(hs.nodename)
                keys.add(key)
        if missing:
            loaded = load_instances(self.ctx, missing, nodes_by_cell=nodes,
                                    server_metadata=server_metadata)
            with self._lock:
                for key in keys:
                    self._instances[key] = loaded.get(key, [])
                self._loaded.update(keys)
                if server_metadata:
                    self._meta_loaded.update(keys)
                self._infos = {}
                self._views = {}
        if not server_metadata:
            return
        # rows loaded earlier without their server metadata
        unread = {}
        keys = set()
        for hs in host_states:
            key = (hs.host, hs.nodename)
            if key not in self._meta_loaded:
                keys.add(key)
                unread.setdefault(getattr(hs, 'cell_uuid', None), []).extend(
                    self._instances.get(key, []))
        if keys:
            load_server_metadata(self.ctx, unread)
            with self._lock:
                self._meta_loaded.update(keys)

    def loaded_instances(self, host_states, server_metadata=True):
        """``{(host, node): [InstanceRow]}`` for the given HostStates (bulk
        loaded once per request, see :func:`load_instances`).

        :param server_metadata: False when the caller does not read the
            rows' ``metadata`` (it may then be empty).
        """
        host_states = list(host_states)
        self._ensure_loaded(host_states, server_metadata)
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

        The views are built once per request and shared by every filter
        and weigher that asks (they must not be modified): a host's view
        is built again only when what it is made of changed since, i.e.
        its full state (a claim of this request on the host,
        :meth:`note_claim`, or nova's ``consume_from_request`` on its
        HostState), whether its instances are needed, the leaving set
        (victims planned by this request, ``leaving``) or the instances
        loaded. Each host's
        :class:`~opie_sched.preemption.model.InstanceInfo` are likewise
        built once per leaving set.
        """
        states = []
        needy = []
        view = self.view_of
        for hs in host_states:
            capacity, used = full_state(hs, self)
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
                self._views = {}
                self._infos_gone = gone
            cache = self._infos
            built = self._views
        facts = {}
        return {key: view(key, hs, capacity, used, need, cache, built,
                          gone, now, facts)
                for key, hs, capacity, used, need in states}

    def view_of(self, key, hs, capacity, used, need, cache, built, gone,
                now, facts=None):
        """One host's :class:`~opie_sched.preemption.model.HostView`,
        from ``built`` when it was made of the same full state and
        instances (see :meth:`host_views`), else built and kept there.

        :param facts: a dict shared by the hosts of one call: what a
            flavor object holds on a host (its resources, with or without
            the root disk) and whether it is preemptible, worked out once
            per flavor object (the rows of one bulk read share the flavor
            objects of one serialized flavor) and boot-from-volume flag.
        """
        stamp = (capacity, used, need)
        entry = built.get(key)
        if entry is not None and entry[0] == stamp:
            return entry[1]
        infos = ()
        if need:
            infos = cache.get(key)
            if infos is None:
                if facts is None:
                    facts = {}
                infos = []
                for i in self._instances.get(key, []):
                    flavor = i.flavor
                    bfv = instance_boots_from_volume(i)
                    # an entry holds its flavor object: that id() is not
                    # reused while the entry lives
                    known = facts.get((id(flavor), bfv))
                    if known is None or known[0] is not flavor:
                        known = (flavor, flavor_resources(flavor, bfv),
                                 flavor_is_preemptible(flavor))
                        facts[(id(flavor), bfv)] = known
                    infos.append(instance_info(i, gone, now,
                                               resources=known[1],
                                               preemptible=known[2]))
                cache[key] = infos
        hv = model.HostView(name=hs.nodename or hs.host, capacity=capacity,
                            used=used, instances=list(infos))
        built[key] = (stamp, hv)
        return hv

    def instance(self, host, node, uuid):
        """The loaded row with that uuid on (host, node), or None."""
        for inst in self._instances.get((host, node), []):
            if inst.uuid == uuid:
                return inst
        return None


#: The request being scheduled by this thread (or green thread). A
#: context variable, not a ``threading.local``: a ``threading.local``
#: created before eventlet's monkey-patching (opie imported first, as
#: nova's test fixtures and the embedded demo cloud may do) is one per OS
#: thread, so the green threads of concurrent requests would share it;
#: every native thread and every greenlet (greenlet >= 1.0) has a context
#: of its own, whatever the import order.
_current = contextvars.ContextVar('opie_sched_request_view', default=None)


def current_view():
    """The :class:`RequestView` of the request this thread (or green
    thread) is scheduling, when opie-scheduler runs it; None otherwise.
    """
    return _current.get()


def set_current_view(view):
    """Make ``view`` the current thread's (or green thread's) request
    view (None: no request).
    """
    _current.set(view)


def view_for(spec_obj):
    """The current request's view, or a fresh one for this call only."""
    view = current_view()
    if view is None:
        ctx = getattr(spec_obj, '_context', None) or \
            nova_context.get_admin_context()
        view = RequestView(ctx.elevated() if not ctx.is_admin else ctx)
    return view
