#!/usr/bin/env python
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
"""Per-cell reads of one scheduling pass: opie's against nova's (issue 21).

Usage::

    python benchmarks/cell_reads.py [--nodes 1000] [--cells 1,4,16]
        [--repeat 15]

For each cell count C (each in a process of its own), the scheduling
benchmark's (b) state (``scheduling_latency.py --cells C``: N nodes spread
over C cells, 4 preemptibles each, bulk set-up) is made and three reads
of all N nodes are timed, ``--repeat`` times each (median wall and CPU ms
of the calling thread; the garbage collector runs untimed before each):

* ``opie load_instances``: opie's preemption-phase instance read
  (``cell_reads.load_instances``, light rows), one query per cell, the cells
  at the same time (``scatter_gather_cells``, from two cells on), for the
  host states of all N nodes;
* ``nova computes``: nova's host manager's compute node and service read
  (``_get_computes_for_cells``, ``scatter_gather_cells``: every cell
  concurrently);
* ``nova host states``: that read plus building the host states
  (``get_host_states_by_uuids``).

The whole ``select_destinations`` (``scheduling_latency.py --cells``)
varies by more than these reads on a shared machine; this shows how the
reads alone grow with the number of cells. In this process the cell
databases are in-memory sqlite behind nova's ``CellDatabases`` fixture:
reads of two cells never overlap (see scheduling_latency.py, Cells), so
nova's and opie's concurrent reads both cost their cells' sum here.
"""

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time


def measure(n_nodes, cells, repeat, log):
    """One cell count in this process: ``{read: (wall ms, CPU ms)}``."""
    import scheduling_latency as sl
    cloud = sl.build_cloud_class()(cells=cells)
    cloud.start()
    try:
        import logging
        logging.getLogger().setLevel(logging.WARNING)
        bench = sl.Bench(cloud, n_nodes, 42, bulk=True)
        bench.make_nodes()
        bench.push_instance_info()
        bench.fill(sl.FILL_A)
        bench.fill(sl.FILL_B_EXTRA)
        from opie_sched.scheduler import cell_reads
        hm = bench.opie.host_manager
        uuids = sorted(bench.node_uuid.values())
        hosts_by_cell, nodes_by_cell = {}, {}
        for hs in hm.get_host_states_by_uuids(bench.ctx, uuids, None):
            hosts_by_cell.setdefault(hs.cell_uuid, set()).add(hs.host)
            nodes_by_cell.setdefault(hs.cell_uuid, set()).add(hs.nodename)
        found = cell_reads.load_instances(bench.ctx, hosts_by_cell,
                                     nodes_by_cell=nodes_by_cell)
        sl.require(sum(len(v) for v in found.values())
                   == len(bench.instances),
                   'opie read %d instances, not %d' % (
                       sum(len(v) for v in found.values()),
                       len(bench.instances)))
        mappings = [m for name, m in sorted(cloud.cell_mappings.items())
                    if name != 'cell0']
        reads = {
            'opie load_instances': lambda: cell_reads.load_instances(
                bench.ctx, hosts_by_cell, nodes_by_cell=nodes_by_cell),
            'nova computes': lambda: hm._get_computes_for_cells(
                bench.ctx, mappings, uuids),
            'nova host states': lambda: list(hm.get_host_states_by_uuids(
                bench.ctx, uuids, None)),
        }
        gc.collect()
        gc.freeze()
        out = {}
        for name, read in reads.items():
            read()      # warm-up
            wall, cpu = [], []
            for _ in range(repeat):
                gc.collect()
                start, cpu0 = time.perf_counter(), time.thread_time()
                read()
                wall.append(time.perf_counter() - start)
                cpu.append(time.thread_time() - cpu0)
            out[name] = (statistics.median(wall) * 1000.0,
                         statistics.median(cpu) * 1000.0)
        log('  %d cells: %s' % (cells, out))
        return out
    finally:
        cloud.stop()
        gc.unfreeze()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--nodes', type=int, default=1000)
    parser.add_argument('--cells', default='1,4,16',
                        help='comma-separated cell counts (default 1,4,16)')
    parser.add_argument('--repeat', type=int, default=15)
    parser.add_argument('--one', type=int, help=argparse.SUPPRESS)
    parser.add_argument('--json', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    cells = [args.one] if args.one else [
        int(c) for c in args.cells.split(',') if c.strip()]
    if args.repeat < 1 or not cells or min(cells) < 1 \
            or max(cells) > args.nodes:
        parser.error('need --repeat >= 1 and 1 <= cells <= nodes')

    def log(msg):
        print(msg, file=sys.stderr)
        sys.stderr.flush()

    import scheduling_latency as sl
    sl._quiet()
    if args.one:
        with open(args.json, 'w') as f:
            json.dump(measure(args.nodes, args.one, args.repeat, log), f)
        return None
    print('%d nodes, (b) state; median of %d (ms, wall / CPU of the '
          'calling thread); load %s' % (
              args.nodes, args.repeat,
              ' '.join('%.2f' % x for x in os.getloadavg())))
    rows = []
    for c in cells:
        path = os.path.join(os.environ.get('TMPDIR', '/tmp'),
                            'opie-cell-reads-%d-%d.json' % (os.getpid(), c))
        try:
            proc = subprocess.run(
                [sys.executable] + (['-O'] if sys.flags.optimize else []) + [
                    os.path.abspath(__file__), '--nodes',
                 str(args.nodes), '--repeat', str(args.repeat), '--one',
                 str(c), '--json', path], stdout=sys.stderr)
            if proc.returncode:
                raise sl.CheckFailed('%d cells failed' % c)
            with open(path) as f:
                rows.append((c, json.load(f)))
        finally:
            if os.path.exists(path):
                os.unlink(path)
    names = list(rows[0][1])
    print('%6s | %s' % ('cells', ' | '.join('%21s' % n for n in names)))
    for c, r in rows:
        print('%6d | %s' % (c, ' | '.join(
            '%9.1f / %9.1f' % tuple(r[n]) for n in names)))
    print('load %s' % ' '.join('%.2f' % x for x in os.getloadavg()))
    return rows


if __name__ == '__main__':
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
