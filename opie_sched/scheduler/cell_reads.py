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
"""Reads of the cell databases, in bulk: the instances on a set of hosts
(:func:`load_instances`, one query per cell, the cells at the same time,
never once per host or per instance), their server metadata
(:func:`load_server_metadata`) and instances by uuid
(:func:`instance_rows_by_uuid`), as light :class:`InstanceRow` rows read
with one column query through nova's own database API and models (or
whole nova ``Instance`` objects, :func:`load_instances` ``light=False``);
the concurrent read of several cells (:func:`_read_cells`, failing as a
whole with :class:`CellReadError`) and the cache of cell mappings
(:func:`cell_mapping`).
"""

import datetime
import threading

from oslo_serialization import jsonutils
import sqlalchemy as sa

from nova import context as nova_context
from nova.db.main import api as main_db
from nova.db.main import models as main_models
from nova import objects

_cell_cache = {}
_cell_lock = threading.Lock()


def cell_mapping(ctx, cell_uuid):
    """The ``CellMapping`` with that uuid, read from the API database
    once per process and kept (a cell's mapping does not change while the
    cell serves).

    :raises nova.exception.CellMappingNotFound: no such cell.
    """
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
            mappings[cell_uuid] = cell_mapping(ctx, cell_uuid)
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


def _read_here(ctx, mapping, job):
    """One cell's job of :func:`_read_cells` in the calling thread: its
    result, or the exception it raised (as ``scatter_gather_cells``
    gives it). ``mapping`` None: ``ctx``'s current database.
    """
    fn, args = job
    try:
        if mapping is None:
            return fn(ctx, *args)
        with nova_context.target_cell(ctx, mapping) as cctxt:
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
        without their instances.
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
    :func:`~opie_sched.scheduler.ownership.victim_state` and the
    reservations read). Their server metadata
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
