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
"""opie's per-request instance read over two cells (issue 21), on a real
in-process Nova with two cell databases (nova's ``CellDatabases``
fixture, one compute host in each cell): both cells are read, at the
same time, and a cell that fails or does not answer fails the read
(``cell_reads.CellReadError``) instead of showing its hosts without
instances, so the scheduler's weighers leave the order alone rather than
take that cell's full hosts for hosts with nothing to preempt.

The same in native threading mode, as production opie-scheduler runs
(a subprocess, as in test_native_threading): the two cells' reads run on
two cell worker threads at once, and a preempting boot onto the two
cells' full hosts reads both.
"""

import threading

import fixtures
import testtools

from nova import context as nova_context
from nova import objects
from nova.scheduler import weights as nova_weights

from opie_sched.scheduler import cell_reads
from opie_sched.scheduler import request_view
from opie_sched.scheduler.weights import preemptible_count
from tests.functional import base
from tests.functional import test_native_threading


class TwoCellsReadTest(base.OpieNovaTestCase):
    """host1 in cell1, host2 in cell2, both with preemptible servers."""

    NUMBER_OF_CELLS = 2
    HOSTS = ('host1', 'host2')
    CELL_OF = {'host1': 'cell1', 'host2': 'cell2'}
    EXTRA_FLAGS = {'opie_reconciler': {'run_in_scheduler': False}}

    def _setup_compute_service(self):
        computes = [self._start_compute(h, cell_name=self.CELL_OF[h])
                    for h in self.HOSTS]
        return computes[0]

    def setUp(self):
        super().setUp()
        self.ctx = nova_context.get_admin_context()
        self.cell1 = self.cell_mappings['cell1'].uuid
        self.cell2 = self.cell_mappings['cell2'].uuid
        self.addCleanup(request_view.set_current_view, None)

    def fill(self):
        """host1: a large and a medium preemptible server (6 of 8 vCPU),
        host2: a large, a medium and a small one (7 of 8): a large normal
        server fits neither host without preemption.
        """
        self.servers = {
            'host1': [self.boot(f + '.preemptible', host='host1')['id']
                      for f in ('large', 'medium')],
            'host2': [self.boot(f + '.preemptible', host='host2')['id']
                      for f in ('large', 'medium', 'small')]}

    def read(self, **kwargs):
        return cell_reads.load_instances(
            self.ctx, {self.cell1: {'host1'}, self.cell2: {'host2'}},
            **kwargs)

    def uuids(self, found):
        return {key: sorted(r.uuid for r in rows)
                for key, rows in found.items()}

    def fail_in_cell2(self, name, fail):
        """Make ``cell_reads.<name>`` (a per-cell read) call ``fail()`` in
        cell2 instead of reading; cell1 is read as usual.
        """
        real = getattr(cell_reads, name)
        cell2 = self.cell2

        def read(cctxt, *args, **kwargs):
            if cctxt.cell_uuid == cell2:
                return fail()
            return real(cctxt, *args, **kwargs)
        self.useFixture(fixtures.MonkeyPatch(
            'opie_sched.scheduler.cell_reads.' + name, read))

    def count_weights(self):
        """``{host: weight}`` of opie's PreemptibleCountWeigher for a large
        normal server, over the scheduler's own host states of both cells,
        with a fresh request view (as one scheduling request has).
        """
        flavor = objects.Flavor.get_by_flavor_id(
            self.ctx, self.flavor_ids['large'])
        spec = objects.RequestSpec(flavor=flavor, num_instances=1)
        host_manager = self.scheduler.manager.host_manager
        host_states = list(host_manager.get_host_states_by_uuids(
            self.ctx, [self._get_provider_uuid_by_host(h)
                       for h in self.HOSTS], spec))
        self.assertEqual({'host1': self.cell1, 'host2': self.cell2},
                         {hs.host: hs.cell_uuid for hs in host_states})
        request_view.set_current_view(request_view.RequestView(self.ctx))
        weighed = nova_weights.HostWeightHandler().get_weighed_objects(
            [preemptible_count.PreemptibleCountWeigher()], host_states, spec)
        return {w.obj.host: round(w.weight, 6) for w in weighed}

    def assert_cell2_failed(self, exc, reason):
        self.assertEqual([self.cell2], list(exc.failures))
        self.assertIn(reason, exc.failures[self.cell2])
        self.assertIn(self.cell2, str(exc))
        self.assertIn(reason, str(exc))

    # -- both cells ------------------------------------------------------

    def test_both_cells_read_and_merged(self):
        self.fill()
        found = self.read()
        self.assertEqual(
            {('host1', 'host1'): sorted(self.servers['host1']),
             ('host2', 'host2'): sorted(self.servers['host2'])},
            self.uuids(found))
        # the same rows as each cell read alone
        alone = {}
        for cell, host in ((self.cell1, 'host1'), (self.cell2, 'host2')):
            alone.update(cell_reads.load_instances(self.ctx, {cell: {host}}))
        self.assertEqual(self.uuids(alone), self.uuids(found))
        # whole Instance objects too
        self.assertEqual(self.uuids(found), self.uuids(self.read(
            light=False)))
        # and the server metadata of rows of both cells read later
        bid = self.servers['host2'][0]
        self.api.post_server_metadata(bid, {'opie:bid': '0.5'})
        rows = self.read(server_metadata=False)
        by_uuid = {r.uuid: r for rs in rows.values() for r in rs}
        self.assertEqual({}, by_uuid[bid].metadata)
        cell_reads.load_server_metadata(self.ctx, {
            self.cell1: rows[('host1', 'host1')],
            self.cell2: rows[('host2', 'host2')]})
        self.assertEqual({'opie:bid': '0.5'}, by_uuid[bid].metadata)
        self.assertEqual({}, by_uuid[self.servers['host1'][0]].metadata)

    def test_cells_read_at_the_same_time(self):
        # each cell's read waits for the other's to start: read one cell
        # after the other, the first would wait alone and fail
        both = threading.Barrier(2, timeout=10)
        real = cell_reads._query_instances

        def read(cctxt, *args, **kwargs):
            both.wait()
            return real(cctxt, *args, **kwargs)
        self.useFixture(fixtures.MonkeyPatch(
            'opie_sched.scheduler.cell_reads._query_instances', read))
        self.boot('small.preemptible', host='host1')
        self.boot('small.preemptible', host='host2')
        found = self.read()
        self.assertEqual([('host1', 'host1'), ('host2', 'host2')],
                         sorted(found))

    def test_one_cell_read_in_the_calling_thread(self):
        server = self.boot('small.preemptible', host='host2')
        scatter = self.useFixture(fixtures.MockPatch(
            'nova.context.scatter_gather_cells',
            side_effect=nova_context.scatter_gather_cells))
        found = cell_reads.load_instances(
            self.ctx, {self.cell2: {'host2'}, self.cell1: set()})
        self.assertEqual({('host2', 'host2'): [server['id']]},
                         self.uuids(found))
        scatter.mock.assert_not_called()
        self.read()
        self.assertEqual(1, scatter.mock.call_count)

    # -- a cell that fails -------------------------------------------------

    def test_cell_whose_read_raises_fails_the_read(self):
        self.fill()
        # what the weigher says when both cells are read: host1, with
        # fewer preemptible servers to terminate, first
        self.assertEqual({'host1': 1.0, 'host2': 0.0}, self.count_weights())

        def fail():
            raise RuntimeError('cell2 database gone')
        self.fail_in_cell2('_query_instances', fail)
        exc = self.assertRaises(cell_reads.CellReadError, self.read)
        self.assert_cell2_failed(exc, 'RuntimeError: cell2 database gone')
        self.assertIsInstance(exc.__cause__, RuntimeError)
        # host2 is not taken for a host with nothing to preempt (it would
        # then come first): the weigher leaves the order to the others
        self.assertEqual({'host1': 0.0, 'host2': 0.0}, self.count_weights())

    def test_cell_whose_metadata_read_raises_fails_the_read(self):
        self.fill()
        rows = self.read(server_metadata=False)

        def fail():
            raise RuntimeError('cell2 database gone')
        self.fail_in_cell2('_server_metadata', fail)
        for row in rows[('host1', 'host1')]:
            row.metadata = {'unread': True}
        exc = self.assertRaises(
            cell_reads.CellReadError, cell_reads.load_server_metadata,
            self.ctx, {
                self.cell1: rows[('host1', 'host1')],
                self.cell2: rows[('host2', 'host2')]})
        self.assert_cell2_failed(exc, 'cell2 database gone')
        # no row changed, cell1's neither
        self.assertEqual([{'unread': True}] * 2,
                         [r.metadata for r in rows[('host1', 'host1')]])

    def test_cell_that_does_not_answer_fails_the_read(self):
        self.fill()
        self.useFixture(fixtures.MonkeyPatch('nova.context.CELL_TIMEOUT',
                                             0.5))
        answer = threading.Event()
        # cell2's reads left waiting finish when the test ends
        self.addCleanup(answer.set)
        self.fail_in_cell2('_query_instances', lambda: answer.wait(30))
        exc = self.assertRaises(cell_reads.CellReadError, self.read)
        self.assert_cell2_failed(exc, 'did not answer within 0.5 s')
        self.assertIsNone(exc.__cause__)
        self.assertEqual({'host1': 0.0, 'host2': 0.0}, self.count_weights())


#: Seconds the native-threading subprocess may take (a guard against a
#: hang only; it takes about 15 s).
HANG_GUARD = 300

_NATIVE = r'''
import json
import threading

from opie_sched.demo import cloud as cloud_mod

native = cloud_mod.use_native_threading()
try:
    import eventlet.patcher  # noqa: imported by nothing else when native
    patched = eventlet.patcher.is_monkey_patched('thread')
except ImportError:
    patched = False
cloud = cloud_mod.EmbeddedCloud(hosts=2, cells=2, extra_flags={
    'opie_reconciler': {'run_in_scheduler': False}}).start()
from nova import context as nova_context
from opie_sched.scheduler import cell_reads


def boot(conn, flavor, name):
    server = conn.compute.create_server(
        name=name, flavor_id=cloud.flavor_ids[flavor],
        image_id=cloud.image_id, networks='none')
    return conn.compute.wait_for_server(server, wait=300, interval=0.2)


def two_reads_at_once(ctx, cells):
    # each cell's read waits for the other's to start
    both = threading.Barrier(2, timeout=10)
    threads = []
    real = cell_reads._query_instances

    def query(cctxt, *args, **kwargs):
        threads.append(threading.current_thread().name)
        both.wait()
        return real(cctxt, *args, **kwargs)
    cell_reads._query_instances = query
    try:
        return cell_reads.load_instances(ctx, cells), threads
    finally:
        cell_reads._query_instances = real


def scheduler_loads(conn):
    # the scheduler's reads during a preempting boot: [cells, error]
    loads = []
    real = cell_reads.load_instances

    def load(ctx, hosts_by_cell, *args, **kwargs):
        try:
            got = real(ctx, hosts_by_cell, *args, **kwargs)
        except Exception as exc:
            loads.append([len(hosts_by_cell), repr(exc)])
            raise
        loads.append([len(hosts_by_cell), None])
        return got
    cell_reads.load_instances = load
    try:
        return boot(conn, 'large', 'n0'), loads
    finally:
        cell_reads.load_instances = real


try:
    conn = cloud.connection()
    # two large preemptible servers fill each host (host1 in cell1, host2
    # in cell2)
    pre = [boot(conn, 'large.preemptible', 'p%d' % i) for i in range(4)]
    cells = {cloud.cell_mappings[c].uuid: {h}
             for c, h in (('cell1', 'host1'), ('cell2', 'host2'))}
    found, read_threads = two_reads_at_once(
        nova_context.get_admin_context(), cells)
    normal, loads = scheduler_loads(conn)
    alive = {s.id for s in conn.compute.servers()}
    print(json.dumps({
        'native': native, 'eventlet_patched': patched,
        'found': {'%s/%s' % key: len(rows) for key, rows in found.items()},
        'read_threads': read_threads,
        'caller': threading.current_thread().name,
        'normal_status': normal.status, 'loads': loads,
        'victims': len([p for p in pre if p.id not in alive])}), flush=True)
finally:
    cloud.stop()
'''


class NativeThreadingTwoCellsTest(testtools.TestCase):
    """Two cells, native threads: the cells' reads run at the same time,
    on cell worker threads, and a preempting boot reads both cells.
    """

    def test_two_cells_read_on_worker_threads(self):
        test_native_threading.require_native_embedded_nova(self)
        seen = test_native_threading.run_native(self, _NATIVE, HANG_GUARD)
        self.assertEqual({'host1/host1': 2, 'host2/host2': 2},
                         seen['found'])
        self.assertEqual(2, len(set(seen['read_threads'])), seen)
        self.assertNotIn(seen['caller'], seen['read_threads'])
        self.assertEqual('ACTIVE', seen['normal_status'])
        # the weighers read the full hosts of both cells, without error
        self.assertIn([2, None], seen['loads'], seen)
        self.assertEqual([], [x for x in seen['loads'] if x[1]], seen)
        self.assertEqual(1, seen['victims'], seen)
