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
"""What a scheduling request is for: boot, unshelve, rebuild, evacuate,
live migration, migration (cold migration and resize) or another move,
read from nova's own records (:func:`request_operation`).
"""

import sqlalchemy as sa

from nova.compute import task_states
from nova.compute import vm_states
from nova import context as nova_context
from nova.db.api import api as api_db
from nova.db.api import models as api_models
from nova import exception
from nova import objects
from nova.scheduler import utils as scheduler_utils

from opie_sched.scheduler import cell_reads

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
                ctx, cell_reads.cell_mapping(ctx, cell_uuid)) as cctxt:
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
