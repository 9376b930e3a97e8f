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
"""Bulk set-up of the scheduling benchmark's nodes and preemptibles.

The slow path (``scheduling_latency.Bench`` with ``bulk=False``) makes
every node with one ``ComputeNode.create`` and three Placement calls
(``POST /resource_providers``, ``PUT .../inventories``,
``PUT .../traits``) and every preemptible with ``Instance.create``, an
``InstanceMapping`` and its share of a ``POST /allocations``: ~0.35 s a
node, about an hour at 10,000 nodes on 2 loaded cores (issue 21).

Here ONE node and ONE instance per flavor are made that slow way (the
templates) and every other one is a copy of the template's database rows,
written with SQLAlchemy Core ``INSERT``s of many rows at once into the
same databases (Placement's, the cell's and the API database), changing
only what differs between two nodes or two instances: ids, uuids, names,
the node an instance runs on and its launch time. Because the rows are
copied rather than composed, the copies hold whatever the slow path
writes (JSON blobs of the flavor, info cache, stats ...), and
``tests/unit/benchmarks/test_bulk_setup.py`` checks that a 5-node
cloud set up either way looks the same through Placement's API and nova's
objects.

The one difference left: a resource provider's generation goes up once
per fill that writes allocations to it, as it does once per
``POST /allocations`` on the slow path -- which sends 500 consumers a
call, so there a node whose instances straddle two calls is bumped twice.
"""

import datetime


def _copies(row, overrides):
    """Rows like ``row`` (a mapping), without ``id``, with ``overrides``
    (a list of dicts) applied.
    """
    base = {k: v for k, v in row.items() if k != 'id'}
    for o in overrides:
        d = dict(base)
        d.update(o)
        yield d


def _insert(conn, table, rows, chunk=2000):
    """Multi-row inserts, ``chunk`` rows a statement."""
    for start in range(0, len(rows), chunk):
        conn.execute(table.insert(), rows[start:start + chunk])


class BulkWriter:
    """SQL access to the in-process cloud's three databases.

    :param cctx: a nova context targeted at the cell of the instances.
    """

    def __init__(self, cctx):
        from nova.db.api import api as api_db
        from nova.db.main import api as main_db
        from placement import db_api as placement_db
        import sqlalchemy as sa
        self.placement = placement_db.get_placement_engine()
        self.cell = main_db.get_engine(context=cctx)
        self.api = api_db.get_engine()
        # Reflected once, here: in-memory sqlite has ONE connection
        # (StaticPool), and a reflection inside a transaction checks it
        # out again and rolls the transaction back when it returns it.
        self._meta = {}
        for engine in (self.placement, self.cell, self.api):
            meta = sa.MetaData()
            meta.reflect(bind=engine)
            self._meta[id(engine)] = meta
        #: cell tables keyed by an instance's uuid (not the shadow ones)
        self.instance_tables = sorted(
            name for name, t in self._meta[id(self.cell)].tables.items()
            if 'instance_uuid' in t.c and not name.startswith('shadow_'))

    def table(self, engine, name):
        return self._meta[id(engine)].tables[name]

    # -- nodes ---------------------------------------------------------

    def copy_nodes(self, template_uuid, names_uuids):
        """Copies of one node: its ComputeNode row and its resource
        provider with inventories and traits.

        :param template_uuid: uuid of a node made the slow way (its
            ComputeNode and its provider share it).
        :param names_uuids: ``[(hypervisor_hostname, uuid)]`` of the
            copies.
        """
        import sqlalchemy as sa
        now = datetime.datetime.utcnow()
        cn = self.table(self.cell, 'compute_nodes')
        with self.cell.begin() as conn:
            row = conn.execute(sa.select(cn).where(
                cn.c.uuid == template_uuid)).mappings().one()
            _insert(conn, cn, list(_copies(row, [
                {'uuid': u, 'hypervisor_hostname': name, 'created_at': now,
                 'updated_at': None} for name, u in names_uuids])))
        rp = self.table(self.placement, 'resource_providers')
        inv = self.table(self.placement, 'inventories')
        traits = self.table(self.placement, 'resource_provider_traits')
        with self.placement.begin() as conn:
            tmpl = conn.execute(sa.select(rp).where(
                rp.c.uuid == template_uuid)).mappings().one()
            if (tmpl['parent_provider_id'] is not None
                    or tmpl['root_provider_id'] != tmpl['id']):
                raise ValueError('template provider %s is not a root '
                                 'provider' % template_uuid)
            _insert(conn, rp, list(_copies(tmpl, [
                {'uuid': u, 'name': name, 'root_provider_id': None,
                 'created_at': now, 'updated_at': None}
                for name, u in names_uuids])))
            conn.execute(rp.update().where(
                rp.c.root_provider_id.is_(None)).values(
                    root_provider_id=rp.c.id))
            ids = dict(conn.execute(sa.select(rp.c.uuid, rp.c.id).where(
                rp.c.uuid.in_([u for _, u in names_uuids]))).all())
            for table in (inv, traits):
                rows = conn.execute(sa.select(table).where(
                    table.c.resource_provider_id == tmpl['id'])
                ).mappings().all()
                new = []
                for r in rows:
                    new.extend(_copies(r, [
                        {'resource_provider_id': ids[u], 'created_at': now,
                         'updated_at': None} for _, u in names_uuids]))
                _insert(conn, table, new)

    # -- instances -----------------------------------------------------

    def copy_instances(self, template_uuid, copies):
        """Copies of one instance: its rows in every cell table keyed by
        its uuid, its instance mapping and its Placement consumer and
        allocations.

        :param template_uuid: an instance made the slow way, with its
            allocation written.
        :param copies: ``[{'uuid', 'node', 'compute_id', 'rp_uuid',
            'launched_at'}]`` (``rp_uuid``: the node's provider).
        """
        import sqlalchemy as sa
        now = datetime.datetime.utcnow()
        with self.cell.begin() as conn:
            inst = self.table(self.cell, 'instances')
            row = conn.execute(sa.select(inst).where(
                inst.c.uuid == template_uuid)).mappings().one()
            _insert(conn, inst, list(_copies(row, [
                {'uuid': c['uuid'], 'node': c['node'],
                 'compute_id': c['compute_id'],
                 'launched_at': c['launched_at'], 'created_at': now,
                 'updated_at': None} for c in copies])))
            for name in self.instance_tables:
                table = self.table(self.cell, name)
                rows = conn.execute(sa.select(table).where(
                    table.c.instance_uuid == template_uuid)
                ).mappings().all()
                new = []
                for r in rows:
                    new.extend(_copies(r, [
                        {'instance_uuid': c['uuid'], 'created_at': now}
                        for c in copies]))
                _insert(conn, table, new)
        im = self.table(self.api, 'instance_mappings')
        with self.api.begin() as conn:
            row = conn.execute(sa.select(im).where(
                im.c.instance_uuid == template_uuid)).mappings().one()
            _insert(conn, im, list(_copies(row, [
                {'instance_uuid': c['uuid'], 'created_at': now,
                 'updated_at': None} for c in copies])))
        consumers = self.table(self.placement, 'consumers')
        allocs = self.table(self.placement, 'allocations')
        rp = self.table(self.placement, 'resource_providers')
        with self.placement.begin() as conn:
            row = conn.execute(sa.select(consumers).where(
                consumers.c.uuid == template_uuid)).mappings().one()
            _insert(conn, consumers, list(_copies(row, [
                {'uuid': c['uuid'], 'created_at': now, 'updated_at': None}
                for c in copies])))
            rows = conn.execute(sa.select(allocs).where(
                allocs.c.consumer_id == template_uuid)).mappings().all()
            rp_uuids = sorted({c['rp_uuid'] for c in copies})
            ids = dict(conn.execute(sa.select(rp.c.uuid, rp.c.id).where(
                rp.c.uuid.in_(rp_uuids))).all())
            new = []
            for r in rows:
                new.extend(_copies(r, [
                    {'consumer_id': c['uuid'],
                     'resource_provider_id': ids[c['rp_uuid']],
                     'created_at': now, 'updated_at': None}
                    for c in copies]))
            _insert(conn, allocs, new)

    def bump_generations(self, rp_uuids):
        """Each provider's generation + 1, as one ``POST /allocations``
        that writes to them does.
        """
        rp = self.table(self.placement, 'resource_providers')
        rp_uuids = sorted(rp_uuids)
        with self.placement.begin() as conn:
            for start in range(0, len(rp_uuids), 500):
                conn.execute(rp.update().where(rp.c.uuid.in_(
                    rp_uuids[start:start + 500])).values(
                        generation=rp.c.generation + 1))

    # -- usage of nodes ------------------------------------------------

    def copy_usage(self, template_uuid, node_uuids):
        """The usage columns of one ComputeNode (saved the slow way)
        copied to others of the same instances' flavors.
        """
        import sqlalchemy as sa
        cn = self.table(self.cell, 'compute_nodes')
        cols = ('vcpus_used', 'memory_mb_used', 'free_ram_mb',
                'local_gb_used', 'free_disk_gb', 'running_vms', 'stats',
                'updated_at')
        with self.cell.begin() as conn:
            row = conn.execute(sa.select(cn).where(
                cn.c.uuid == template_uuid)).mappings().one()
            values = {c: row[c] for c in cols}
            for start in range(0, len(node_uuids), 500):
                conn.execute(cn.update().where(cn.c.uuid.in_(
                    node_uuids[start:start + 500])).values(**values))
        return values
