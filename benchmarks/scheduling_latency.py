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
"""Scheduling latency: opie-scheduler versus stock Nova 34 (issue 6).

Usage::

    python benchmarks/scheduling_latency.py [--nodes 100,1000] [--repeat N]
    python benchmarks/scheduling_latency.py --quick  # 10, 40 nodes, 2 repeats
    ... [--json PATH] [--profile PREFIX] [--cells N]

``--json PATH`` also writes the medians (ms) per node count, as
``{"rows": {"N": {"a_opie", "a_stock", "b_opie", "b_decide", "b_exec",
"b_stock", "c_retry"}}}`` (and ``"cells": N`` when N > 1);
``--profile PREFIX`` runs the timed calls under cProfile
(``PREFIX-N-{opie,stock}-{a,b}.prof``); ``--cells N`` spreads every
scale's nodes over N cells (below).
Targets (issue 12): (a) opie/stock <= 1.05; (b) decide/stock <= 1.3.

Wall time of one ``select_destinations`` call (one normal ``medium`` server,
2 vCPU / 4000 MB / 40 GB), made directly on the scheduler managers of one
all-in-one Nova 34 running in this process (:class:`EmbeddedCloud`: API,
conductor, scheduler, Placement over wsgi-intercept, sqlite, fake virt
driver). Two managers share the same databases and Placement and are timed
alternately, repetition by repetition, so both see the same machine load:

* **opie** — the scheduler *service* of the cloud,
  ``OpieSchedulerManager``, configured as the DevStack plugin does:
  nova's default ``enabled_filters`` plus ``PreemptibleFullStateFilter``,
  ``weight_classes`` = nova's ``all_weighers`` plus ``PreemptionCostWeigher``
  and ``PreemptibleCountWeigher``;
* **stock** — a plain ``nova.scheduler.manager.SchedulerManager`` built in
  the same process with nova's default filters and weighers.

Scenarios (paper host 8 vCPU / 16000 MB / 200 GB, paper flavors):

(a) *no preemption needed*: every node holds one preemptible ``large``
    (4 / 8000 / 80); the request fits every node's full state.
(b) *preemption needed*: every node's full state is filled with preemptible
    ``large`` + ``medium`` + 2 ``small`` (8 / 16000 / 160). Placement admits
    the normal request on every node (its standard classes count normal
    instances only); opie's manager chooses the victims on the chosen node
    right after the claim, terminates them through nova's compute API and
    holds the request until the fake compute has deleted them
    (``[opie_preemption] poll_interval``, default 0.5 s, sets how often it
    looks). The benchmark asserts that victims were chosen on the selected
    node and that they are gone afterwards. Stock Nova admits the request
    on the same state without preempting anything (it overcommits the
    host), so (b) opie/stock is the price of the preemption phase.
(c) *retry design* (NoValidHost -> terminate -> schedule again): the stock
    manager on the (b) state but with the preemptible instances' Placement
    allocations moved to the standard VCPU / MEMORY_MB / DISK_GB classes
    (preemptibles counted as normal). Timed: the first
    ``select_destinations`` (raises NoValidHost), choosing victims on one
    node (always the same node; one ComputeNode read, one instance query and
    the same exact victim selection opie uses), deleting them the way opie
    does (nova's compute API, then opie's own wait until they released
    the host, ``actions.release``), and the second ``select_destinations``
    (checked to land on that node): the same termination steps as opie's
    (b) total, so "c r/o" compares like with like. This is only the
    scheduling side of that design: a real retry also fails the boot,
    rebuilds the server and goes through the conductor again
    (benchmarks/end_to_end.py).

Burst (``--burst N[,N]``): N normal requests started together, each in
its own thread, alternately on two opie managers (two scheduler workers'
managers in one process: each its own host manager and wait slots, the
same databases, Placement and locks), once on empty nodes (free room, as
on a cloud without preemptibles) and once on the (b) state (every request
must preempt). Printed: requests
served, lost (an error or NoValidHost), timed out (a latency above
``rpc_response_timeout``, after which the conductor's RPC call would have
failed), wall and process CPU time, throughput, p50/p99 latency.

How the state is faked (setup, never timed):

* One nova-compute service (host ``compute1``, fake driver) is started
  normally; its resource tracker creates node ``compute1`` (ComputeNode
  record, Placement provider with the standard inventory plus the
  ``CUSTOM_PREEMPTIBLE_*`` inventory from opie's provider config file).
  The other N-1 nodes are copies of it: ComputeNode records of the same
  service (same fields, own name and uuid) and Placement providers with the
  same inventories and traits, created directly. Starting N services, or
  letting the resource tracker discover N nodes (~0.17 s a node), is too
  slow at N = 1000.
* Bulk (the default; ``--slow-setup`` for the old path): node
  ``compute1-n0001`` and the first preemptible of each flavor in a fill are
  made one by one as described here (``ComputeNode.create``, Placement's
  ``POST /resource_providers`` and two ``PUT``s, ``Instance.create``,
  ``InstanceMapping.create``, ``POST /allocations``); every other node and
  preemptible is a copy of their database rows written with multi-row SQL
  ``INSERT``s (``benchmarks/bulk_setup.py``), and every other node's usage
  columns a copy of a node of the same fill. 1000 nodes are ready in ~16 s
  instead of ~6 min; tests/unit/benchmarks/test_bulk_setup.py checks
  that both paths give the same state for 5 nodes.
* Instances are ``Instance`` records created directly in the cell database
  (``host=compute1``, ``node=<node>``, ``vm_state=active``, the instance's
  own copy of the preemptible flavor with its extra specs, ``launched_at``
  drawn from a seeded generator up to three days back, so the billing-period
  costs differ), with their Placement allocations written in bulk with
  ``POST /allocations`` against the ``CUSTOM_PREEMPTIBLE_*`` classes (or,
  for (c), the standard classes). Every node's ComputeNode usage
  (``vcpus_used``, ``memory_mb_used``, ``free_ram_mb``, ``local_gb_used``,
  ``free_disk_gb``, ``running_vms``, ``stats``) is written to the sum of
  its instances' flavors, as the resource tracker would.
* The scheduler managers are given the host's instance list the way
  nova-compute pushes it with ``track_instance_changes`` (the default):
  ``host_manager._instance_info['compute1'] = {instances, updated: True}``.
  Without that, nova would query the host's instances once per node, a
  cost that only exists because all nodes here belong to one service.
* Between repetitions: the normal request's allocation is deleted; the
  victims of (b)/(c) are re-created (new uuids, same node, flavors and
  launch times) with their allocations, so every repetition sees the same
  state. With ``--check`` (always on with ``--quick``) every node's
  Placement usages are compared with this bookkeeping at each phase.

Cells (``--cells N``, default 1; issue 21): the nodes and their
preemptibles are spread evenly, in blocks of consecutive node indexes,
over cells ``cell1`` .. ``cellN``, each with its own database and cell
mapping (``EmbeddedCloud(cells=N)``) and one compute service (host
``compute<i>`` in ``cell<i>``, with its host mapping; its own node is the
first of its block, the others ``compute<i>-nNNNN``). Both managers'
host managers then read compute nodes and services per cell (nova's
``scatter_gather_cells``) and opie's instance read
(``cell_reads.load_instances``) runs one query per cell of the candidates,
the cells at the same time too (``scatter_gather_cells`` from two cells
on). The bulk set-up copies, in each cell, that
cell's own template node and instances. One artefact: nova's
``CellDatabases`` fixture gives code that reads a cell other than the
default one a process-wide "current database" switched under a lock,
and in-process sqlite under eventlet does not yield during a query, so
here reads of several cells never overlap, neither nova's
scatter-gather nor opie's; with one database server per cell, both
would.

Isolation: every scale runs in a process of its own (results back as
JSON), and the garbage collector runs untimed before every timed call
(``settle_gc``; the objects of the set-up are frozen out of later
collections). Before, a full collection (0.35-0.56 s for the quick run's
~380,000 objects, measured) fell on whichever call crossed its threshold,
and the previous scale's cloud left a running tooz heartbeat thread and
its garbage in the process; issue 21's inflated opie (a) at the scale
after the retry scenario fits one such pause in a median of 2 (not
caught in the act: it did not recur reliably on a loaded machine). Full
collections still inside timed calls are counted and printed per scale
and manager.

Order: one untimed warm-up call per path; (a) opie and stock alternate
call by call (which goes first alternates too); (b) likewise; (c) runs in
blocks between the (b) blocks, b c b c (half of the repetitions each),
because moving 4000 allocations between the custom and the standard
classes takes ~30 s at 1000 nodes. (b) "decide" is opie's time minus its
terminate-and-wait phase (``OpieSchedulerManager._execute``, timed by a
wrapper); it still shares the CPU with the fake compute finishing the
deletion in another thread.

Known artefacts of one service with many nodes: opie's bulk instance query
filters on the host name, which here returns the instances of all N nodes
(N / cells with ``--cells``; as N real hosts would); nova's
``HostState.instances`` of every node holds the whole host's instance dict
(a shared reference; only the affinity filters/weighers read it and they
return early without a server group).
"""

import argparse
import collections
import contextlib
import datetime
import gc
import json
import logging
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings

#: The normal flavor requested in every scenario.
REQUEST_FLAVOR = 'medium'
#: Preemptible fill of one node in (a) and, added to it, in (b).
FILL_A = ('large',)
FILL_B_EXTRA = ('medium', 'small', 'small')
COMPUTE_HOST = 'compute1'
#: Image of the faked preemptibles (image-backed: their root disk counts).
IMAGE_REF = '155d900f-4e14-4e4c-a73d-069cbf4541e6'
PROJECT = 'bench-project'
USER = 'bench-user'

STANDARD = ('VCPU', 'MEMORY_MB', 'DISK_GB')
CUSTOM = ('CUSTOM_PREEMPTIBLE_VCPU', 'CUSTOM_PREEMPTIBLE_MEMORY_MB',
          'CUSTOM_PREEMPTIBLE_DISK_GB')


def _quiet():
    """Keep nova's deprecation and eventlet chatter off the table."""
    warnings.filterwarnings('ignore')
    os.environ.setdefault('OS_DEBUG', '0')


class NoValid(Exception):
    pass


class CheckFailed(Exception):
    """A check of the benchmark's own state failed: the run is void."""


def require(ok, message):
    """A check that ``python -O`` keeps (unlike ``assert``).

    :raises CheckFailed: ``ok`` is false; ``message`` says what.
    """
    if not ok:
        raise CheckFailed(message)


def build_cloud_class():
    # Imported late: nova's import-time setup is slow and noisy.
    logging.getLogger('oslo_service.periodic_task').setLevel(logging.WARNING)
    from nova import conf as nova_conf
    # nova's concurrency mode (eventlet here: importing nova's fixtures
    # patches) first, as nova-scheduler does; opie's per-request view is a
    # context variable, one per green thread whatever the import order
    # (tests/unit/scheduler/test_request_view.py)
    from nova.tests import fixtures  # noqa: F401
    from opie_sched.demo import cloud
    from opie_sched.scheduler import manager  # noqa: F401 (registers opts)

    conf = nova_conf.CONF
    stock_filters = list(conf._get_opt_info(
        'enabled_filters', 'filter_scheduler')['opt'].default)
    stock_weighers = list(conf._get_opt_info(
        'weight_classes', 'filter_scheduler')['opt'].default)

    class BenchCloud(cloud.EmbeddedCloud):
        """One compute service; the scheduler service runs opie."""

        STOCK_FILTERS = stock_filters
        STOCK_WEIGHERS = stock_weighers
        OPIE_FLAGS = {
            'available_filters': [
                'nova.scheduler.filters.all_filters',
                'opie_sched.scheduler.filters.all_filters'],
            'enabled_filters': stock_filters + ['PreemptibleFullStateFilter'],
            'weight_classes': stock_weighers + [
                'opie_sched.scheduler.weights.preemption_cost.'
                'PreemptionCostWeigher',
                'opie_sched.scheduler.weights.preemptible_count.'
                'PreemptibleCountWeigher'],
        }

        def __init__(self, poll_interval=None, cells=1):
            extra = {'filter_scheduler': dict(self.OPIE_FLAGS),
                     # the reconciler must not run in the middle of a rep
                     'opie_reconciler': {'run_in_scheduler': False},
                     # one process: a long burst of CPU-bound selects can
                     # starve the compute's heartbeat green thread past
                     # 60 s, and ComputeFilter then drops every node
                     'DEFAULT': {'service_down_time': 3600}}
            if poll_interval is not None:
                extra['opie_preemption'] = {'poll_interval': poll_interval}
            super().__init__(hosts=cells, opie=True, extra_flags=extra,
                             cells=cells)
            # one compute service per cell: compute1 in cell1, ...
            self.HOSTS = (COMPUTE_HOST,) + tuple(
                'compute%d' % (c + 1) for c in range(1, cells))

    return BenchCloud


class Bench:
    """State faking and timed calls for one cloud of N nodes."""

    def __init__(self, cloud, n_nodes, seed, bulk=False):
        from nova import context as nova_context
        from nova import objects
        from nova.scheduler import manager as nova_manager

        self.cloud = cloud
        self.n = n_nodes
        self.bulk = bulk
        #: launch times are drawn back from this instant (UTC)
        self.epoch = datetime.datetime.now(datetime.timezone.utc)
        self.rng = random.Random(seed)
        self.objects = objects
        self.ctx = nova_context.get_admin_context()
        self.ctx.project_id = PROJECT
        self.ctx.user_id = USER
        self.cctx = nova_context.RequestContext.from_dict(self.ctx.to_dict())
        nova_context.set_target_cell(self.cctx, cloud.cell)
        #: the compute service (host) of each cell and the cells' contexts
        self.host_cell = {h: cloud.cell_of_host(h) for h in cloud.HOSTS}
        self.cell_ctx = {'cell1': self.cctx}
        for cell in sorted(set(self.host_cell.values()) - {'cell1'}):
            cctx = nova_context.RequestContext.from_dict(self.ctx.to_dict())
            nova_context.set_target_cell(cctx, cloud.cell_mappings[cell])
            self.cell_ctx[cell] = cctx
        #: node name -> its compute host (service) and that host's cell
        self.node_host = {}
        self.node_cell = {}
        #: bulk SQL writers (:mod:`bulk_setup`) by cell name
        self._writers = {}
        #: set by :func:`probe_cells`: requests limited to that cell
        self.destination = None
        self.placement = cloud.placement
        self.flavors = {}
        for name, fid in cloud.flavor_ids.items():
            self.flavors[name] = objects.Flavor.get_by_flavor_id(self.ctx, fid)
        self.opie = cloud.scheduler.manager
        # The stock manager: nova's defaults for filters and weighers.
        cloud.flags(enabled_filters=cloud.STOCK_FILTERS,
                    weight_classes=cloud.STOCK_WEIGHERS,
                    group='filter_scheduler')
        with _no_instance_info_init():
            self.stock = nova_manager.SchedulerManager()
        cloud.flags(group='filter_scheduler', **cloud.OPIE_FLAGS)
        # a second opie scheduler worker (the burst's two workers): its own
        # manager, host manager and wait slots, the same databases
        from opie_sched.scheduler import manager as opie_manager
        with _no_instance_info_init():
            self.opie2 = opie_manager.OpieSchedulerManager()
        # instrument opie's termination phase (terminate + wait)
        self.exec_log = []
        self.exec_cpu = []
        #: CPU seconds of this thread in the last select (see select)
        self.last_cpu = 0.0
        #: seconds of full garbage collections in the last select
        self.last_gc = 0.0
        for mgr in (self.opie, self.opie2):
            self._instrument(mgr)
        # (node name -> ComputeNode), (uuid -> (node, flavor, launched_at))
        self.nodes = {}
        self.node_uuid = {}
        self.instances = {}
        self.by_node = collections.defaultdict(set)
        self.alloc_classes = CUSTOM
        self.consumer_gen = {}
        #: ``{(manager 'opie' or 'stock', scenario 'a' or 'b'):
        #: cProfile.Profile}``
        self.profiles = {}
        #: scenario of the calls being timed (profile key)
        self.scenario = 'a'

    def _instrument(self, mgr):
        real_execute = mgr._execute

        def _execute(context, pending):
            start = time.perf_counter()
            cpu = time.thread_time()
            try:
                return real_execute(context, pending)
            finally:
                self.exec_cpu.append(time.thread_time() - cpu)
                self.exec_log.append((time.perf_counter() - start, [
                    (p.plan.host, [i.uuid for i, _ in p.plan.victims])
                    for p in pending]))
        mgr._execute = _execute

    # -- nodes ---------------------------------------------------------

    def make_nodes(self):
        """The N nodes, spread evenly (in blocks of consecutive indexes)
        over the compute hosts, one host per cell; node 0 of each block is
        the host's own node, the others ``HOST-nNNNN`` (NNNN: the node's
        index among all N).
        """
        hosts = self.cloud.HOSTS
        start = 0
        for c, host in enumerate(hosts):
            count = self.n * (c + 1) // len(hosts) - self.n * c // len(hosts)
            require(count >= 1, 'no node for host %s' % host)
            self._make_host_nodes(host, start, count)
            start += count
        require(len(self.nodes) == self.n, '%s set-up made %d nodes, not %d'
                % ('bulk' if self.bulk else 'slow', len(self.nodes), self.n))
        self.node_uuid = {n: cn.uuid for n, cn in self.nodes.items()}
        self.node_order = sorted(self.nodes)

    def _make_host_nodes(self, host, start, count):
        """Nodes ``start`` .. ``start + count - 1`` of one compute host
        (the first is the host's own node), in the host's cell.
        """
        objects = self.objects
        cell = self.host_cell[host]
        cctx = self.cell_ctx[cell]
        tmpl = objects.ComputeNodeList.get_all_by_host(cctx, host)[0]
        inv = self.placement.get('/resource_providers/%s/inventories'
                                 % tmpl.uuid).body['inventories']
        traits = self.placement.get('/resource_providers/%s/traits'
                                    % tmpl.uuid, version='1.6').body['traits']
        skip = {'id', 'uuid', 'hypervisor_hostname', 'created_at',
                'updated_at', 'deleted_at', 'deleted'}
        fields = [f for f in tmpl.fields
                  if f not in skip and tmpl.obj_attr_is_set(f)]
        mine = {tmpl.hypervisor_hostname: tmpl}
        # the slow path: all nodes; bulk: the first, copied to the others
        stop = start + (count if not self.bulk else min(count, 2))
        for i in range(start + 1, stop):
            name = '%s-n%04d' % (host, i)
            cn = objects.ComputeNode(context=cctx)
            for f in fields:
                setattr(cn, f, getattr(tmpl, f))
            cn.hypervisor_hostname = name
            cn.create()
            self.placement.post('/resource_providers',
                                {'name': name, 'uuid': cn.uuid},
                                version='1.20')
            self.placement.put('/resource_providers/%s/inventories' % cn.uuid,
                               {'resource_provider_generation': 0,
                                'inventories': inv})
            self.placement.put('/resource_providers/%s/traits' % cn.uuid,
                               {'resource_provider_generation': 1,
                                'traits': traits}, version='1.6')
            mine[name] = cn
        if self.bulk and count > 2:
            from oslo_utils import uuidutils
            first = mine['%s-n%04d' % (host, start + 1)]
            self.writer(cell).copy_nodes(first.uuid, [
                ('%s-n%04d' % (host, i), uuidutils.generate_uuid())
                for i in range(start + 2, start + count)])
            for cn in objects.ComputeNodeList.get_all_by_host(cctx, host):
                mine.setdefault(cn.hypervisor_hostname, cn)
        require(len(mine) == count, 'host %s has %d nodes, not %d'
                % (host, len(mine), count))
        for name, cn in mine.items():
            self.nodes[name] = cn
            self.node_host[name] = host
            self.node_cell[name] = cell

    def ctx_of(self, node):
        """A context targeted at the cell of ``node``."""
        return self.cell_ctx[self.node_cell[node]]

    # -- instances -----------------------------------------------------

    def _resources(self, flavor_name, classes):
        f = self.flavors[flavor_name]
        return dict(zip(classes, (f.vcpus, f.memory_mb,
                                  f.root_gb + f.ephemeral_gb)))

    def writer(self, cell='cell1'):
        """The bulk SQL writer (:mod:`bulk_setup`) of one cell's database
        (and of Placement's and the API database, shared by all).
        """
        if cell not in self._writers:
            import bulk_setup
            self._writers[cell] = bulk_setup.BulkWriter(self.cell_ctx[cell])
        return self._writers[cell]

    def create_instances(self, specs):
        """Instance records + their Placement allocations.

        In bulk mode (more than a few specs), the first instance of each
        flavor in each cell is made the slow way and the others (of that
        cell) are copies of its rows
        (:meth:`bulk_setup.BulkWriter.copy_instances`).

        :param specs: list of ``(node, flavor name, launched_at)``.
        :returns: list of new uuids.
        """
        if not self.bulk or len(specs) <= 8 or self.alloc_classes != CUSTOM:
            return self._create_slowly(specs)
        from oslo_utils import uuidutils
        first = {}
        rest = []
        for spec in specs:
            key = (self.node_cell[spec[0]], spec[1])
            if key in first:
                rest.append(spec)
            else:
                first[key] = spec
        made = dict(zip(first, self._create_slowly(list(first.values()))))
        new = list(made.values())
        by_flavor = collections.defaultdict(list)
        for node, fname, launched in rest:
            u = uuidutils.generate_uuid()
            key = (self.node_cell[node], fname)
            by_flavor[key].append({
                'uuid': u, 'node': node, 'compute_id': self.nodes[node].id,
                'rp_uuid': self.node_uuid[node],
                'launched_at': launched.astimezone(
                    datetime.timezone.utc).replace(tzinfo=None)})
            self.instances[u] = (node, fname, launched)
            self.by_node[node].add(u)
            self.consumer_gen[u] = self.consumer_gen[made[key]]
            new.append(u)
        for (cell, fname), copies in by_flavor.items():
            self.writer(cell).copy_instances(made[cell, fname], copies)
        # one generation more for the providers the templates' POST did
        # not write to, as one POST /allocations of all would
        self.writer().bump_generations(
            {self.node_uuid[s[0]] for s in rest}
            - {self.node_uuid[s[0]] for s in first.values()})
        return new

    def _create_slowly(self, specs):
        """Instance objects, mappings and POST /allocations (see
        :meth:`create_instances`).
        """
        objects = self.objects
        from nova.network import model as network_model
        from oslo_utils import uuidutils
        new = []
        for node, fname, launched in specs:
            flavor = self.flavors[fname + '.preemptible']
            host = self.node_host[node]
            inst = objects.Instance(
                context=self.ctx_of(node), uuid=uuidutils.generate_uuid(),
                project_id=PROJECT, user_id=USER, host=host,
                node=node, compute_id=self.nodes[node].id,
                vm_state='active', power_state=1,
                task_state=None, display_name='p-%s' % fname,
                flavor=flavor, instance_type_id=flavor.id,
                vcpus=flavor.vcpus, memory_mb=flavor.memory_mb,
                root_gb=flavor.root_gb, ephemeral_gb=flavor.ephemeral_gb,
                launched_at=launched, launched_on=host,
                availability_zone='nova', image_ref=IMAGE_REF, metadata={},
                system_metadata={},
                info_cache=objects.InstanceInfoCache(
                    network_info=network_model.NetworkInfo()))
            inst.create()
            objects.InstanceMapping(
                context=self.ctx, instance_uuid=inst.uuid,
                cell_mapping=self.cloud.cell_mappings[self.node_cell[node]],
                project_id=PROJECT,
                user_id=USER, queued_for_delete=False).create()
            self.instances[inst.uuid] = (node, fname, launched)
            self.by_node[node].add(inst.uuid)
            new.append(inst.uuid)
        self.write_allocations(new, self.alloc_classes, fresh=True)
        return new

    def write_allocations(self, uuids, classes, fresh=False):
        for start in range(0, len(uuids), 500):
            body = {}
            for u in uuids[start:start + 500]:
                node, fname, _ = self.instances[u]
                body[u] = {
                    'allocations': {self.node_uuid[node]: {
                        'resources': self._resources(fname, classes)}},
                    'project_id': PROJECT, 'user_id': USER,
                    'consumer_generation': (None if fresh
                                            else self.consumer_gen[u])}
            self.placement.post('/allocations', body, version='1.28')
            for u in body:
                self.consumer_gen[u] = (0 if fresh
                                        else self.consumer_gen[u]) + 1
        if fresh and uuids and not hasattr(self, '_gen_checked'):
            # learn the generation placement gives a new consumer
            got = self.placement.get('/allocations/%s' % uuids[0],
                                     version='1.28').body
            delta = got['consumer_generation'] - self.consumer_gen[uuids[0]]
            self._gen_checked = delta
        if fresh:
            for u in uuids:
                self.consumer_gen[u] += self._gen_checked

    def check_usages(self, extra=()):
        """Untimed sanity check: Placement usages = our bookkeeping."""
        want = {n: collections.Counter() for n in self.nodes}
        for u, (node, fname, _) in self.instances.items():
            want[node].update(self._resources(fname, self.alloc_classes))
        for node, rp in self.node_uuid.items():
            got = self.placement.get('/resource_providers/%s/usages'
                                     % rp).body['usages']
            got = {k: v for k, v in got.items() if v}
            require(got == dict(want[node]), 'Placement usages of %s are '
                    '%s, the benchmark expects %s' % (node, got,
                                                      dict(want[node])))

    def switch_allocations(self, classes):
        """Move every preemptible's allocation to ``classes``."""
        if classes != self.alloc_classes:
            self.write_allocations(sorted(self.instances), classes)
            self.alloc_classes = classes

    def forget(self, uuids):
        for u in uuids:
            node = self.instances.pop(u)[0]
            self.by_node[node].discard(u)
            self.consumer_gen.pop(u, None)

    def fill(self, flavor_names):
        """Add one preemptible of each flavor to every node."""
        specs = []
        now = self.epoch
        for node in self.node_order:
            for fname in flavor_names:
                specs.append((node, fname, now - datetime.timedelta(
                    seconds=self.rng.uniform(600, 3 * 86400))))
        self.create_instances(specs)
        if not self.bulk:
            for node in self.node_order:
                self.set_usage(node)
        else:
            # nodes of the same instance flavors (and cell): one saved,
            # its usage columns copied to the others
            groups = collections.defaultdict(list)
            for node in self.node_order:
                groups[self.node_cell[node], tuple(sorted(
                    self.instances[u][1]
                    for u in self.by_node[node]))].append(node)
            for (cell, _), nodes in groups.items():
                self.set_usage(nodes[0])
                values = self.writer(cell).copy_usage(
                    self.nodes[nodes[0]].uuid,
                    [self.nodes[n].uuid for n in nodes[1:]])
                src = self.nodes[nodes[0]]
                for n in nodes[1:]:
                    cn = self.nodes[n]
                    for f in ('vcpus_used', 'memory_mb_used', 'free_ram_mb',
                              'local_gb_used', 'free_disk_gb', 'running_vms',
                              'stats'):
                        setattr(cn, f, getattr(src, f))
                    cn.updated_at = values['updated_at']
                    cn.obj_reset_changes()
        self.push_instance_info()

    def set_usage(self, node):
        """ComputeNode usage = the sum of the node's instances' flavors."""
        cn = self.nodes[node]
        vcpus = mem = disk = 0
        for u in self.by_node[node]:
            f = self.flavors[self.instances[u][1]]
            vcpus += f.vcpus
            mem += f.memory_mb
            disk += f.root_gb + f.ephemeral_gb
        cn.vcpus_used = vcpus
        cn.memory_mb_used = mem
        cn.free_ram_mb = cn.memory_mb - mem
        cn.local_gb_used = disk
        cn.free_disk_gb = cn.local_gb - disk
        cn.running_vms = len(self.by_node[node])
        stats = dict(cn.stats or {})
        stats.update(num_instances=str(len(self.by_node[node])),
                     num_vm_active=str(len(self.by_node[node])))
        cn.stats = stats
        cn.save()

    def push_instance_info(self):
        """What nova-compute pushes with track_instance_changes (each
        compute host its own instances).
        """
        insts = {h: {} for h in self.cloud.HOSTS}
        for u, (node, _, _) in self.instances.items():
            insts[self.node_host[node]][u] = self.objects.Instance(
                self.ctx_of(node), uuid=u)
        for mgr in (self.opie, self.opie2, self.stock):
            for host, mine in insts.items():
                mgr.host_manager._instance_info[host] = {
                    'instances': dict(mine), 'updated': True}

    # -- requests ------------------------------------------------------

    def request_spec(self, uuid, ctx=None):
        objects = self.objects
        spec = objects.RequestSpec.from_components(
            ctx or self.ctx, uuid, {'properties': {}},
            self.flavors[REQUEST_FLAVOR], None,
            objects.InstancePCIRequests(requests=[]), {}, None, None,
            project_id=PROJECT, user_id=USER)
        if self.destination is not None:
            spec.requested_destination = self.destination
        return spec

    def new_context(self):
        """An admin context of its own request id (one per request)."""
        from nova import context as nova_context
        ctx = nova_context.get_admin_context()
        ctx.project_id = PROJECT
        ctx.user_id = USER
        return ctx

    def select(self, mgr, uuid, ctx=None):
        """One timed select_destinations; returns (seconds, node)."""
        from nova import exception
        import oslo_messaging
        ctx = ctx or self.ctx
        spec = self.request_spec(uuid, ctx)
        start = time.perf_counter()
        cpu = time.thread_time()
        GC_WATCH.timed += 1
        gc_before = GC_WATCH.full_s
        try:
            sel = mgr.select_destinations(
                ctx, spec_obj=spec, instance_uuids=[uuid],
                return_objects=True, return_alternates=False)
        except (exception.NoValidHost, oslo_messaging.ExpectedException) as e:
            elapsed = time.perf_counter() - start
            self.last_cpu = time.thread_time() - cpu
            inner = getattr(e, 'exc_info', (None, e))[1]
            if not isinstance(inner, exception.NoValidHost):
                raise
            raise NoValid(elapsed)
        finally:
            GC_WATCH.timed -= 1
            #: seconds of full collections inside this call
            self.last_gc = GC_WATCH.full_s - gc_before
        self.last_cpu = time.thread_time() - cpu
        return time.perf_counter() - start, sel[0][0].nodename

    def release_claim(self, uuid):
        self.placement.delete('/allocations/%s' % uuid)

    def new_uuid(self):
        from oslo_utils import uuidutils
        return uuidutils.generate_uuid()

    def _undeleted(self, uuids):
        """Instance records of the benchmark's preemptibles ``uuids``
        not deleted yet (one query per cell).
        """
        by_cell = collections.defaultdict(list)
        for u in uuids:
            by_cell[self.node_cell[self.instances[u][0]]].append(u)
        found = []
        for cell, mine in sorted(by_cell.items()):
            found.extend(self.objects.InstanceList.get_by_filters(
                self.cell_ctx[cell], {'uuid': mine, 'deleted': False},
                expected_attrs=[]))
        return found

    def alive(self, uuids):
        """Victims not yet deleted (opie's own criterion: vm_state)."""
        insts = self._undeleted(uuids)
        return {i.uuid for i in insts if i.vm_state != 'deleted'}

    def wait_destroyed(self, uuids, timeout=60.0):
        """Untimed: let the fake compute finish (row destroyed, Placement
        allocation gone) before the victims are re-created.
        """
        deadline = time.monotonic() + timeout
        while True:
            insts = self._undeleted(uuids)
            allocs = [u for u in uuids if self.placement.get(
                '/allocations/%s' % u).body['allocations']]
            if not insts and not allocs:
                return
            if time.monotonic() > deadline:
                raise CheckFailed('victims not destroyed: %s %s' % (
                    [i.uuid for i in insts], allocs))
            time.sleep(0.02)

    def restore(self, gone):
        """Re-create deleted preemptibles (same node, flavor, launch)."""
        specs = [self.instances[u] for u in gone]
        nodes = {s[0] for s in specs}
        self.forget(gone)
        self.create_instances(specs)
        for node in nodes:
            self.set_usage(node)
        self.push_instance_info()

    # -- the scenarios -------------------------------------------------

    def run_plain(self, mgr, expect_preemption):
        """(a)/(b) on one manager; returns (total s, exec s or None)."""
        settle_gc()
        uuid = self.new_uuid()
        del self.exec_log[:]
        del self.exec_cpu[:]
        name = {id(self.opie): 'opie', id(self.stock): 'stock'}.get(id(mgr))
        prof = self.profiles.get((name, self.scenario))
        if prof is not None:
            prof.enable()
        try:
            elapsed, node = self.select(mgr, uuid)
        finally:
            if prof is not None:
                prof.disable()
        #: the node of the last call
        self.last_node = node
        execd = None
        self.plain_cpu = (self.last_cpu, sum(self.exec_cpu))
        if mgr in (self.opie, self.opie2) and expect_preemption:
            require(len(self.exec_log) == 1, 'opie terminated nothing')
            execd, plans = self.exec_log[0]
            victims = [u for host, us in plans for u in us]
            require(victims, 'opie chose no victims')
            require(all(self.instances[u][0] == node for u in victims),
                    'victims are not on the selected node %s' % node)
            left = self.alive(victims)
            require(not left, 'victims still alive: %s' % sorted(left))
            self.wait_destroyed(victims)
            self.restore(victims)
        else:
            require(not self.exec_log, 'unexpected preemption')
        self.release_claim(uuid)
        return elapsed, execd

    def run_retry(self):
        """(c) NoValidHost -> terminate -> select again; returns seconds."""
        from opie_sched.preemption import model
        from opie_sched.preemption import planner
        from opie_sched.scheduler import actions
        from opie_sched.scheduler import host_capacity
        from opie_sched.scheduler import ownership
        from opie_sched.scheduler import preemption_plans
        from oslo_utils import timeutils

        objects = self.objects
        uuid = self.new_uuid()
        node = self.node_order[0]
        host = self.node_host[node]
        cctx = self.ctx_of(node)
        settle_gc()
        start = time.perf_counter()
        try:
            self.select(self.stock, uuid)
        except NoValid:
            pass
        else:
            raise CheckFailed('(c): the first select did not fail')
        # choose the victims on one node, exactly as opie would
        cn = objects.ComputeNode.get_by_host_and_nodename(cctx, host, node)
        insts = objects.InstanceList.get_by_host_and_node(
            cctx, host, node,
            expected_attrs=['flavor', 'metadata'])
        capacity, used = host_capacity.compute_node_state(cn)
        hv = model.HostView(
            name=node, capacity=capacity, used=used,
            instances=[ownership.instance_info(i) for i in insts])
        f = self.flavors[REQUEST_FLAVOR]
        plan = planner.plan_host(
            hv, model.Resources(f.vcpus, f.memory_mb, f.root_gb),
            preemption_plans.cost_policy(),
            timeutils.utcnow(with_timezone=True))
        victims = [i.uuid for i, _ in plan.victims]
        require(victims, '(c): no victims chosen')
        require(all(self.instances[v][0] == node for v in victims),
                '(c): victims not on %s' % node)
        # the same termination steps as opie's: nova's compute API deletes
        # each victim, then the same wait until they released the host
        by_uuid = {i.uuid: i for i in insts}
        cell_uuid = self.cloud.cell_mappings[self.node_cell[node]].uuid
        api = actions.compute_api()
        for v in victims:
            api.delete(cctx, by_uuid[v])
        # (actions.release would not wait for them: they carry no victim
        # record of this request; its polling loop is the same)
        from nova import conf as nova_conf
        opts = nova_conf.CONF.opie_preemption
        require(actions.wait_for(cctx, cell_uuid, victims,
                                 actions.is_deleted, opts.release_timeout,
                                 opts.poll_interval),
                '(c): victims %s not deleted within release_timeout'
                % victims)
        elapsed2, chosen = self.select(self.stock, uuid)
        total = time.perf_counter() - start
        require(chosen == node, '(c): landed on %s, not %s' % (chosen, node))
        self.release_claim(uuid)
        self.wait_destroyed(victims)
        self.restore(victims)
        return total

    def burst(self, n, expect_preemption):
        """N concurrent requests, alternately on the two opie workers.

        Each request runs in its own thread (an RPC worker serves each
        call in a thread of its executor pool); all start together.
        Afterwards (untimed) the claims are released and any victims are
        waited for and re-created, so the state is as before.

        :returns: dict with ``n``, ``ok``, ``lost`` (failed requests),
            ``timed_out`` (latency above ``rpc_response_timeout``),
            ``wall`` (s, first start to last end), ``cpu`` (process CPU
            s), ``latencies`` (s, sorted), ``victims``,
            ``rpc_response_timeout`` (s).
        """
        from nova import conf as nova_conf
        timeout = nova_conf.CONF.rpc_response_timeout
        uuids = [self.new_uuid() for _ in range(n)]
        results = [None] * n
        barrier = threading.Barrier(n + 1)
        del self.exec_log[:]
        del self.exec_cpu[:]
        managers = (self.opie, self.opie2)

        def one(i):
            barrier.wait()
            start = time.perf_counter()
            try:
                elapsed, node = self.select(managers[i % 2], uuids[i],
                                            self.new_context())
                results[i] = ('ok', elapsed, node)
            except NoValid:
                results[i] = ('NoValidHost', time.perf_counter() - start,
                              None)
            except Exception as exc:  # a lost request, reported
                results[i] = ('%s: %s' % (type(exc).__name__, exc),
                              time.perf_counter() - start, None)

        threads = [threading.Thread(target=one, args=(i,), daemon=True)
                   for i in range(n)]
        for t in threads:
            t.start()
        settle_gc()
        cpu = time.process_time()
        barrier.wait()
        start = time.perf_counter()
        for t in threads:
            t.join()
        wall = time.perf_counter() - start
        cpu = time.process_time() - cpu
        chosen = [u for _, plans in self.exec_log
                  for _, us in plans for u in us]
        victims = sorted(set(chosen))
        #: the same victim in the plans of two requests
        shared = len(chosen) - len(victims)
        unknown = [u for u in victims if u not in self.instances]
        require(not unknown, 'burst of %d: victims %s are not preemptibles '
                'of this benchmark; plans %s' % (n, unknown, self.exec_log))
        ok = [r for r in results if r and r[0] == 'ok']
        failures = collections.Counter(r[0] for r in results
                                       if not r or r[0] != 'ok')
        # untimed: back to the state before the burst
        for u, r in zip(uuids, results):
            if r and r[0] == 'ok':
                self.release_claim(u)
        if victims:
            self.wait_destroyed(victims)
            self.restore(victims)
        lat = sorted(r[1] for r in results if r)
        return {'n': n, 'ok': len(ok), 'lost': n - len(ok),
                'failures': dict(failures),
                'timed_out': sum(1 for x in lat if x > timeout),
                'wall': wall, 'cpu': cpu, 'latencies': lat,
                'victims': len(victims), 'shared_victims': shared,
                'rpc_response_timeout': timeout}


class _GCWatch:
    """Full (generation 2) garbage collections that ran inside timed
    calls: their number and seconds (``gc.callbacks``).

    A full collection walks every object of the process: ~0.4-0.6 s with
    the in-process cloud of the quick run (~380,000 objects), longer at
    1000+ nodes. Whichever timed call happens to cross the collector's
    threshold pays it all, so garbage left by the untimed set-up (or by a
    previous cloud in the same process) used to land on one manager's
    calls (issue 21: after the retry scenario of one scale, the next
    scale's opie (a) calls were 2-3.5x stock's with 2 repetitions; such a
    pause is the likeliest cause; not caught in the act).
    :func:`settle_gc` before every timed call and one process per scale
    remove that; this counter shows what is left.
    """

    def __init__(self):
        self.timed = 0
        self.full = 0
        self.full_s = 0.0
        self._start = None

    def __call__(self, phase, info):
        if info.get('generation') != 2:
            return
        if phase == 'start':
            self._start = time.perf_counter()
        elif self._start is not None:
            if self.timed:
                self.full += 1
                self.full_s += time.perf_counter() - self._start
            self._start = None


GC_WATCH = _GCWatch()


def settle_gc():
    """Untimed: collect the garbage made so far (set-up, restoring
    victims, the previous repetition), so that a timed call pays only for
    collections of its own garbage. Objects alive after the set-up are
    frozen (``gc.freeze``, see :func:`run_scale`) and not walked again.
    """
    gc.collect()


def percentile(values, q):
    """The ``q`` percentile (0..100) of sorted ``values``, nearest rank."""
    if not values:
        return float('nan')
    k = max(0, min(len(values) - 1,
                   int(math.ceil(q / 100.0 * len(values))) - 1))
    return values[k]


@contextlib.contextmanager
def _no_instance_info_init():
    """Build a HostManager without its async instance-info load (nova's
    docstring suggests mocking it; push_instance_info fills it).
    """
    from nova.scheduler import host_manager
    real = host_manager.HostManager._init_instance_info
    host_manager.HostManager._init_instance_info = lambda self, *a: None
    try:
        yield
    finally:
        host_manager.HostManager._init_instance_info = real


def run_scale(cloud_cls, n_nodes, repeat, seed, poll_interval, log,
              check=False, profile=None, bursts=(), burst_only=False,
              skip_retry=False, bulk=True, cells=1):
    """One scale: ``{key: [seconds]}`` (see :func:`main` for the keys).

    :param profile: a path prefix, or None; when given, the timed calls of
        each manager and scenario run under :mod:`cProfile` and the stats
        are written to ``PREFIX-N-{opie,stock}-{a,b}.prof``.
    :param bursts: burst sizes: each runs on the (a) state (free room)
        and on the (b) state (every request preempts), see
        :meth:`Bench.burst`; results under ``bursts``.
    :param burst_only: skip the timed scenarios a, b and c.
    :param skip_retry: skip scenario c (and moving the allocations it
        needs, minutes at 5000 nodes).
    :param bulk: set up nodes and preemptibles with bulk SQL copies
        (:mod:`bulk_setup`); False: one by one through Placement's API and
        nova's objects.
    :param cells: number of cells the nodes are spread over (one compute
        service in each).
    """
    import cProfile
    t0 = time.monotonic()
    if GC_WATCH not in gc.callbacks:
        gc.callbacks.append(GC_WATCH)
    cloud = cloud_cls(poll_interval=poll_interval, cells=cells)
    cloud.start()
    try:
        # nova's StandardLogging formats every DEBUG record; keep the
        # benchmark's own overhead (equal for both managers) low.
        logging.getLogger().setLevel(logging.INFO)
        # Placement's one line per request is not a result
        logging.getLogger('placement.requestlog').setLevel(logging.WARNING)
        bench = Bench(cloud, n_nodes, seed, bulk=bulk)
        res = collections.defaultdict(list)
        t1 = time.monotonic()
        bench.make_nodes()
        res['nodes_s'] = [time.monotonic() - t1]
        log('  nova up and %d nodes made at %.1f s (nodes %.1f s)'
            % (n_nodes, time.monotonic() - t0, res['nodes_s'][0]))
        if cells > 1:
            log('  nodes per cell: %s' % ', '.join(
                '%s %d' % kv for kv in sorted(collections.Counter(
                    bench.node_cell.values()).items())))
        bench.push_instance_info()
        for b in bursts:
            # free room: empty nodes, as on a cloud without preemptibles
            r = bench.burst(b, False)
            r['state'] = 'free room'
            res['bursts'].append(r)
            log('  burst of %d on free room: %.1f s wall' % (b, r['wall']))
        t1 = time.monotonic()
        bench.fill(FILL_A)
        res['fill_a_s'] = [time.monotonic() - t1]
        # the set-up's objects: collected once, then left out of every
        # later collection (see settle_gc)
        gc.collect()
        gc.freeze()
        setup = time.monotonic() - t0
        log('  %d nodes ready in %.1f s' % (n_nodes, setup))
        # warm-up (first-call imports and caches), not counted
        bench.run_plain(bench.opie, False)
        bench.run_plain(bench.stock, False)
        if profile:
            bench.profiles = {(m, sc): cProfile.Profile()
                              for m in ('opie', 'stock') for sc in 'ab'}
        # (a) interleaved
        for i in range(0 if burst_only else repeat):
            pair = [(bench.opie, 'a_opie'), (bench.stock, 'a_stock')]
            if i % 2:
                pair.reverse()
            for mgr, key in pair:
                res[key].append(bench.run_plain(mgr, False)[0])
                res[key + '_cpu'].append(bench.plain_cpu[0])
                res[key + '_gc'].append(bench.last_gc)
        log('  (a) done at %.1f s' % (time.monotonic() - t0))
        bench.scenario = None  # warm-ups and bursts: not profiled
        t1 = time.monotonic()
        bench.fill(FILL_B_EXTRA)
        res['fill_b_s'] = [time.monotonic() - t1]
        gc.collect()
        gc.freeze()
        if check:
            bench.check_usages()
        log('  full state filled at %.1f s (%d preemptibles)'
            % (time.monotonic() - t0, len(bench.instances)))
        bench.run_plain(bench.opie, True)  # warm-up of the preemption path
        bench.run_plain(bench.opie2, True)
        for b in bursts:
            r = bench.burst(b, True)
            r['state'] = 'preemption'
            res['bursts'].append(r)
            log('  burst of %d needing preemption: %.1f s wall'
                % (b, r['wall']))
        if burst_only:
            repeat = 0
        # (b) and (c) in two rounds of blocks, b c b c: moving every
        # preemptible's allocation between the custom and the standard
        # classes costs seconds at 1000 nodes, so it is not done per rep.
        bench.scenario = 'b'
        half = (repeat + 1) // 2
        for block in (range(half), range(half, repeat)):
            if not len(block):
                continue
            t1 = time.monotonic()
            bench.switch_allocations(CUSTOM)
            if check:
                bench.check_usages()
            log('  allocations -> custom classes in %.1f s'
                % (time.monotonic() - t1))
            for i in block:
                pair = [(bench.opie, 'b_opie'), (bench.stock, 'b_stock')]
                if i % 2:
                    pair.reverse()
                for mgr, key in pair:
                    total, execd = bench.run_plain(mgr, mgr is bench.opie)
                    res[key].append(total)
                    cpu, exec_cpu = bench.plain_cpu
                    res[key + '_cpu'].append(cpu)
                    res[key + '_gc'].append(bench.last_gc)
                    if execd is not None:
                        res['b_opie_decide_cpu'].append(cpu - exec_cpu)
                        res['b_opie_exec'].append(execd)
                        res['b_opie_decide'].append(total - execd)
            if skip_retry:
                continue
            t1 = time.monotonic()
            bench.switch_allocations(STANDARD)
            if check:
                bench.check_usages()
            log('  (b) x%d, allocations -> standard classes in %.1f s'
                % (len(block), time.monotonic() - t1))
            if block[0] == 0:
                bench.run_retry()  # warm-up
            for i in block:
                res['c_retry'].append(bench.run_retry())
            log('  (c) x%d at %.1f s' % (len(block), time.monotonic() - t0))
        log('  (b), (c) done at %.1f s' % (time.monotonic() - t0))
        for (name, scenario), prof in bench.profiles.items():
            path = '%s-%d-%s-%s.prof' % (profile, n_nodes, name, scenario)
            prof.dump_stats(path)
            log('  profile written to %s' % path)
    except Exception:
        # nova's fixtures keep the log in memory: show its end
        out = getattr(getattr(cloud, 'stdlog', None), 'logger', None)
        if out is not None:
            log('\n'.join(out.output.splitlines()[-60:]))
        raise
    finally:
        # the fixtures' log capture ends before the thread pools' INFO
        # goodbyes; keep them off stdout
        logging.getLogger('nova.thread_pool_factory').setLevel(
            logging.WARNING)
        cloud.stop()        # with opie's coordinators and compute API
        gc.unfreeze()
    res['setup_s'] = [setup]
    res['gc_full_timed'] = [GC_WATCH.full]
    res['gc_full_timed_s'] = [GC_WATCH.full_s]
    res['total_s'] = [time.monotonic() - t0]
    return res


def _plain(value):
    """JSON-able copy of an object primitive without the keys that differ
    between two equal set-ups (database ids, uuids, timestamps).
    """
    from oslo_serialization import jsonutils
    drop = {'id', 'uuid', 'instance_uuid', 'created_at', 'updated_at',
            'compute_id', 'nova_object.changes', '_changed_fields',
            '_context'}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k not in drop}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return jsonutils.to_primitive(value, convert_instances=True)


def state_snapshot(bench):
    """What the schedulers can see of the faked state, keyed by names and
    launch times (not by the random uuids): every node's ComputeNode
    fields and its provider (generation, inventories, traits, usages)
    through Placement's API; every preemptible's Instance (flavor,
    metadata, system metadata, info cache), its mapping and its
    allocations. Used to check the bulk set-up against the slow one.
    """
    from nova.objects import base as ovo_base
    objects = bench.objects
    rp_name = {}
    out = {'nodes': {}, 'providers': {}, 'instances': {}}
    cells = [bench.cell_ctx[c] for c in sorted(bench.cell_ctx)]
    for cctx in cells:
        for cn in objects.ComputeNodeList.get_all(cctx):
            out['nodes'][cn.hypervisor_hostname] = _plain(
                ovo_base.obj_to_primitive(cn))
    for rp in bench.placement.get('/resource_providers',
                                  version='1.14').body['resource_providers']:
        rp_name[rp['uuid']] = rp['name']
        base = '/resource_providers/%s' % rp['uuid']
        out['providers'][rp['name']] = {
            'generation': rp['generation'],
            'parent': rp['parent_provider_uuid'],
            'root_is_self': rp['root_provider_uuid'] == rp['uuid'],
            'inventories': bench.placement.get(
                base + '/inventories').body['inventories'],
            'traits': sorted(bench.placement.get(
                base + '/traits', version='1.6').body['traits']),
            'usages': bench.placement.get(base + '/usages').body['usages']}
    insts = []
    for cctx in cells:
        insts.extend(objects.InstanceList.get_by_filters(
            cctx, {'deleted': False},
            expected_attrs=['flavor', 'metadata', 'system_metadata',
                            'info_cache']))
    # identifiers each cloud draws at random, by name
    names = {fid: name for name, fid in bench.cloud.flavor_ids.items()}
    for inst in insts:
        age = (bench.epoch - inst.launched_at).total_seconds()
        key = '%s %s %.6f s old' % (inst.node, inst.display_name, age)
        inst.launched_at = None
        inst.flavor.flavorid = names[inst.flavor.flavorid]
        require(key not in out['instances'], 'two instances %s' % key)
        alloc = bench.placement.get('/allocations/%s' % inst.uuid,
                                    version='1.28').body
        mapping = objects.InstanceMapping.get_by_instance_uuid(
            bench.ctx, inst.uuid)
        prim = _plain(ovo_base.obj_to_primitive(inst))
        # instance-%08x of the database id
        require(prim.pop('name', None) == inst.name, 'no instance name')
        out['instances'][key] = {
            'instance': prim,
            'compute_node': bench.nodes[inst.node].id == inst.compute_id,
            'mapping': [mapping.cell_mapping.name, mapping.project_id,
                        mapping.user_id, mapping.queued_for_delete],
            'allocations': {rp_name[k]: v['resources']
                            for k, v in alloc['allocations'].items()},
            'consumer': [alloc['consumer_generation'], alloc['project_id'],
                         alloc['user_id']]}
    return out


def _filled_bench(cloud, n_nodes, seed, bulk):
    """A :class:`Bench` of ``n_nodes`` nodes on the started ``cloud`` with
    the (a) and (b) fill (the slow or the bulk way), Placement's usages
    checked; INFO logging, Placement's request log off.
    """
    logging.getLogger().setLevel(logging.INFO)
    logging.getLogger('placement.requestlog').setLevel(logging.WARNING)
    bench = Bench(cloud, n_nodes, seed, bulk=bulk)
    bench.make_nodes()
    bench.push_instance_info()
    bench.fill(FILL_A)
    bench.fill(FILL_B_EXTRA)
    bench.check_usages()
    return bench


def dump_setup(cloud_cls, n_nodes, seed, bulk, path, log, cells=1):
    """Set up ``n_nodes`` nodes with the (a) and (b) fill, the slow or
    the bulk way, and write :func:`state_snapshot` to ``path`` (JSON).
    """
    t0 = time.monotonic()
    cloud = cloud_cls(cells=cells)
    cloud.start()
    try:
        bench = _filled_bench(cloud, n_nodes, seed, bulk)
        log('  %d nodes set up (%s) in %.1f s' % (
            n_nodes, 'bulk' if bulk else 'slow', time.monotonic() - t0))
        snap = state_snapshot(bench)
    finally:
        cloud.stop()
    with open(path, 'w') as f:
        json.dump(snap, f, indent=1, sort_keys=True)


def probe_cells(cloud_cls, n_nodes, seed, cells, path, log):
    """What the schedulers see of N nodes spread over ``cells`` cells.

    Sets up the (b) state (bulk) and writes to ``path`` (JSON; see
    tests/unit/benchmarks/test_bench_cells.py): ``nodes``, the benchmark's
    nodes per cell name; ``host_states``, per manager (``opie``, ``stock``) the
    host states its host manager builds, per cell; ``preempted``, per
    cell, one opie ``select_destinations`` limited to that cell (the
    request spec's ``requested_destination``) that had to preempt, with
    the checks of scenario (b) (victims on the chosen node, gone
    afterwards): the chosen ``node``, the cell the benchmark put it in
    (``node_cell``) and the time (``s``).
    """
    cloud = cloud_cls(cells=cells)
    cloud.start()
    try:
        bench = _filled_bench(cloud, n_nodes, seed, True)
        names = {m.uuid: name for name, m in cloud.cell_mappings.items()}
        out = {'nodes': dict(collections.Counter(bench.node_cell.values())),
               'host_states': {}, 'preempted': {}}
        for key, mgr in (('opie', bench.opie), ('stock', bench.stock)):
            # as in a select: the providers of Placement's candidates
            states = mgr.host_manager.get_host_states_by_uuids(
                bench.ctx, sorted(bench.node_uuid.values()), None)
            out['host_states'][key] = dict(collections.Counter(
                names.get(st.cell_uuid) for st in states))
        for cell in sorted(bench.cell_ctx):
            bench.destination = bench.objects.Destination(
                cell=cloud.cell_mappings[cell])
            elapsed, _ = bench.run_plain(bench.opie, True)
            out['preempted'][cell] = {
                'node': bench.last_node, 's': elapsed,
                'node_cell': bench.node_cell[bench.last_node]}
            log('  %s: preempted on %s in %.2f s' % (
                cell, bench.last_node, elapsed))
        bench.destination = None
    finally:
        cloud.stop()
    with open(path, 'w') as f:
        json.dump(out, f, indent=1, sort_keys=True)


def med_ms(values):
    """Median in ms; NaN when the scenario was not run."""
    return statistics.median(values) * 1000.0 if values else float('nan')


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--nodes', default='100,1000',
                        help='comma-separated node counts (default 100,1000)')
    parser.add_argument('--repeat', type=int, default=5,
                        help='timed repetitions per scenario and manager '
                             '(default 5)')
    parser.add_argument('--quick', action='store_true',
                        help='10 and 40 nodes, 2 repeats (for the unit '
                             'test)')
    parser.add_argument('--seed', type=int, default=42)
    parser.add_argument('--poll-interval', type=float, default=None,
                        help='[opie_preemption] poll_interval for (b) '
                             '(default: opie\'s default, 0.5 s)')
    parser.add_argument('--check', action='store_true',
                        help='verify Placement usages against the faked '
                             'state after every change of phase (untimed; '
                             'always on with --quick)')
    parser.add_argument('--json', metavar='PATH',
                        help='also write the medians (ms) to PATH (JSON)')
    parser.add_argument('--profile', metavar='PREFIX',
                        help='cProfile the timed calls; stats go to '
                             'PREFIX-N-{opie,stock}-{a,b}.prof')
    parser.add_argument('--burst', default='',
                        help='comma-separated burst sizes N: N concurrent '
                             'normal requests on two opie workers, on free '
                             'room and where each needs preemption '
                             '(default: none)')
    parser.add_argument('--burst-only', action='store_true',
                        help='only the bursts (skip scenarios a, b, c)')
    parser.add_argument('--skip-retry', action='store_true',
                        help='skip scenario c (no c columns)')
    parser.add_argument('--slow-setup', action='store_true',
                        help='create nodes and preemptibles one by one '
                             'through Placement\'s API and nova\'s objects '
                             '(default: bulk SQL copies of one node and '
                             'one instance made that way)')
    parser.add_argument('--cells', type=int, default=1,
                        help='spread the nodes and their preemptibles '
                             'evenly over this many cells, one compute '
                             'service in each (default 1)')
    parser.add_argument('--one-scale', type=int, metavar='N',
                        help=argparse.SUPPRESS)
    parser.add_argument('--probe-cells', metavar='PATH',
                        help=argparse.SUPPRESS)
    parser.add_argument('--dump-state', metavar='PATH',
                        help='with --one-scale N: only set up N nodes '
                             'with the (a) and (b) fill and write what '
                             'the schedulers see of it to PATH (JSON; '
                             'tests/unit/benchmarks/test_bulk_setup.py)')
    args = parser.parse_args(argv)
    try:
        bursts = [int(x) for x in args.burst.split(',') if x.strip()]
    except ValueError:
        parser.error('--burst: comma-separated integers')
    if any(b < 1 for b in bursts) or (args.burst_only and not bursts):
        parser.error('--burst sizes must be >= 1 (and given with '
                     '--burst-only)')
    if args.one_scale and not (args.json or args.dump_state
                               or args.probe_cells):
        parser.error('--one-scale needs --json')
    if args.quick:
        nodes, repeat = [10, 40], 2
    else:
        nodes = [int(x) for x in args.nodes.split(',') if x.strip()]
        repeat = args.repeat
    if repeat < 1 or not nodes or min(nodes) < 2:
        parser.error('need --repeat >= 1 and node counts >= 2')
    if args.cells < 1 or min([args.one_scale or min(nodes)] + nodes) \
            < args.cells:
        parser.error('need --cells >= 1 and at least one node per cell')
    _quiet()

    def log(msg):
        print(msg, file=sys.stderr)
        sys.stderr.flush()

    if args.dump_state:
        if not args.one_scale:
            parser.error('--dump-state needs --one-scale N')
        dump_setup(build_cloud_class(), args.one_scale, args.seed,
                   not args.slow_setup, args.dump_state, log,
                   cells=args.cells)
        return None
    if args.probe_cells:
        if not args.one_scale:
            parser.error('--probe-cells needs --one-scale N')
        probe_cells(build_cloud_class(), args.one_scale, args.seed,
                    args.cells, args.probe_cells, log)
        return None
    if args.one_scale:
        # the child of one scale (see run_isolated): raw results as JSON
        cloud_cls = build_cloud_class()
        from nova import conf as nova_conf
        res = run_scale(cloud_cls, args.one_scale, repeat, args.seed,
                        args.poll_interval, log,
                        check=args.check or args.quick,
                        profile=args.profile, bursts=bursts,
                        burst_only=args.burst_only,
                        skip_retry=args.skip_retry, bulk=not args.slow_setup,
                        cells=args.cells)
        res['poll_interval'] = [
            args.poll_interval if args.poll_interval is not None
            else nova_conf.CONF.opie_preemption.poll_interval]
        with open(args.json, 'w') as f:
            json.dump(res, f)
        return None
    start = time.monotonic()
    print('machine: %d cores (os.cpu_count), %s, Python %s, load %s'
          % (os.cpu_count(), platform.machine(), platform.python_version(),
             ' '.join('%.2f' % x for x in os.getloadavg())))
    rows = []
    for n in nodes:
        log('%d nodes (own process):' % n)
        rows.append((n, run_isolated(n, repeat, args, log)))
        if not args.burst_only:
            # this scale's figures now: a long run stopped later (the
            # next scale's set-up takes long) keeps them
            log_scale(rows[-1], log)
    poll = rows[0][1]['poll_interval'][0]
    print('nova 34 in-process, Placement + sqlite, one process per scale; '
          'request: one normal %s; repeat %d (medians; opie and stock '
          'alternate); opie poll_interval %.2f s'
          % (REQUEST_FLAVOR, repeat, poll))
    if args.cells > 1:
        print('%d cells: the nodes of every scale spread evenly over '
              'cell1..cell%d, one compute service each' % (args.cells,
                                                           args.cells))
    print_bursts(rows)
    if not args.burst_only:
        print_scenarios(rows)
    print('setup+run per scale: %s; total %.0f s' % (
        ', '.join('%d nodes %.0f s (setup %.0f s)' % (
            n, r['total_s'][0], r['setup_s'][0]) for n, r in rows),
        time.monotonic() - start))
    sys.stdout.flush()
    if args.json:
        keys = {'a_opie': 'a_opie', 'a_stock': 'a_stock',
                'b_opie': 'b_opie', 'b_decide': 'b_opie_decide',
                'b_exec': 'b_opie_exec', 'b_stock': 'b_stock',
                'c_retry': 'c_retry', 'a_opie_cpu': 'a_opie_cpu',
                'a_stock_cpu': 'a_stock_cpu',
                'b_decide_cpu': 'b_opie_decide_cpu',
                'b_stock_cpu': 'b_stock_cpu'}
        out = {'rows': {}, 'repeat': repeat, 'seed': args.seed,
               'poll_interval': poll, 'quick': args.quick, 'bursts': {}}
        if args.cells > 1:
            out['cells'] = args.cells
        for n, r in rows:
            if not args.burst_only:
                row = {k: med_ms(r[v]) for k, v in keys.items()}
                row['setup_s'] = r['setup_s'][0]
                for k in ('nodes_s', 'fill_a_s', 'fill_b_s',
                          'gc_full_timed', 'gc_full_timed_s'):
                    if r.get(k):
                        row[k] = r[k][0]
                for k in ('a_opie', 'a_stock', 'b_opie', 'b_stock'):
                    # seconds of full collections in all timed calls
                    row[k + '_gc_s'] = sum(r.get(k + '_gc') or [0.0])
                row['total_s'] = r['total_s'][0]
                out['rows'][str(n)] = row
            if r.get('bursts'):
                out['bursts'][str(n)] = r['bursts']
        with open(args.json, 'w') as f:
            json.dump(out, f, indent=1)
    return rows


def run_isolated(n_nodes, repeat, args, log):
    """One scale in a process of its own; returns its raw results.

    Each scale gets a fresh interpreter: nova's services, fixtures and
    process-wide state (the tooz coordinator of opie's locks, nova's
    caches, the compute API opie keeps, the garbage collector's history)
    of one cloud cannot slow the next scale's calls (issue 21).

    :raises CheckFailed: the child failed (its exit status and stderr,
        already shown, say why).
    """
    fd, path = tempfile.mkstemp(prefix='opie-bench-%d-' % n_nodes,
                                suffix='.json')
    os.close(fd)
    cmd = [sys.executable] + (['-O'] if sys.flags.optimize else []) + [
        os.path.abspath(__file__), '--one-scale', str(n_nodes),
        '--repeat', str(repeat), '--seed', str(args.seed),
        '--json', path]
    if args.poll_interval is not None:
        cmd += ['--poll-interval', repr(args.poll_interval)]
    if args.check or args.quick:
        cmd.append('--check')
    if args.profile:
        cmd += ['--profile', args.profile]
    if args.burst:
        cmd += ['--burst', args.burst]
    if args.cells != 1:
        cmd += ['--cells', str(args.cells)]
    for flag in ('burst_only', 'skip_retry', 'slow_setup'):
        if getattr(args, flag):
            cmd.append('--' + flag.replace('_', '-'))
    try:
        # the child's stdout carries nothing of the tables: to stderr
        proc = subprocess.run(cmd, stdout=sys.stderr)
        if proc.returncode:
            raise CheckFailed('the %d-node scale failed (exit status %d)'
                              % (n_nodes, proc.returncode))
        with open(path) as f:
            res = json.load(f)
    finally:
        os.unlink(path)
    return collections.defaultdict(list, res)


def log_scale(row, log):
    """One progress line of a scale's medians (ms, CPU ms in brackets)."""
    n, r = row

    def both(key, cpu):
        return '%.1f (%.1f)' % (med_ms(r[key]), med_ms(r[cpu]))
    log('  %d nodes: a opie %s / stock %s; b decide %s / stock %s; '
        'b d/s %.2f (CPU %.2f)' % (
            n, both('a_opie', 'a_opie_cpu'), both('a_stock', 'a_stock_cpu'),
            both('b_opie_decide', 'b_opie_decide_cpu'),
            both('b_stock', 'b_stock_cpu'),
            med_ms(r['b_opie_decide']) / med_ms(r['b_stock']),
            med_ms(r['b_opie_decide_cpu']) / med_ms(r['b_stock_cpu'])))
    log('  %d nodes: set-up: nodes %.1f s, (a) fill %.1f s, (b) fill %.1f s;'
        ' full garbage collections inside timed calls: %d (%.2f s; '
        'seconds in a opie/stock, b opie/stock: %s)' % (
            n, (r.get('nodes_s') or [0])[0], (r.get('fill_a_s') or [0])[0],
            (r.get('fill_b_s') or [0])[0],
            (r.get('gc_full_timed') or [0])[0],
            (r.get('gc_full_timed_s') or [0])[0],
            ' '.join('%.2f' % sum(r.get(k + '_gc') or [0]) for k in (
                'a_opie', 'a_stock', 'b_opie', 'b_stock'))))


def print_bursts(rows):
    """The burst table: opie's two workers, free room vs preemption."""
    if not any(r.get('bursts') for _, r in rows):
        return
    print()
    print('burst: N concurrent normal requests on 2 opie scheduler workers '
          '(threads of one process), all started together')
    print('%6s %-10s %4s %4s %4s %5s %8s %8s %8s %8s %8s %7s' % (
        'nodes', 'state', 'N', 'ok', 'lost', 'tmout', 'wall s', 'CPU s',
        'req/s', 'p50 s', 'p99 s', 'victims'))
    for n, r in rows:
        for b in r.get('bursts', ()):
            lat = b['latencies']
            print('%6d %-10s %4d %4d %4d %5d %8.2f %8.2f %8.2f %8.2f %8.2f '
                  '%7d' % (n, b['state'], b['n'], b['ok'], b['lost'],
                           b['timed_out'], b['wall'], b['cpu'],
                           b['ok'] / b['wall'], percentile(lat, 50),
                           percentile(lat, 99), b['victims']))
            if b['failures']:
                print('       failures: %s' % b['failures'])
            if b['state'] == 'preemption' and b['ok'] and not b['victims']:
                print('       WARNING: requests served on preemptible-full '
                      'nodes without any victim')
            if b['shared_victims']:
                print('       %d victim entries repeated in the plans of '
                      'several requests'
                      % b['shared_victims'])
    for n, r in rows:
        free = {b['n']: b for b in r.get('bursts', ())
                if b['state'] == 'free room'}
        for b in r.get('bursts', ()):
            f = free.get(b['n'])
            if b['state'] == 'preemption' and f:
                print('ratio burst throughput preemption/free room N=%d %d '
                      'nodes: %.2f (timed out: %d, lost: %d; '
                      'rpc_response_timeout %d s)' % (
                          b['n'], n, (b['ok'] / b['wall'])
                          / (f['ok'] / f['wall']), b['timed_out'],
                          b['lost'], b['rpc_response_timeout']))


def print_scenarios(rows):
    """The a/b/c table and ratio lines."""
    print()
    print('%6s | %9s %9s %6s | %9s %9s %9s %9s %6s %6s | %9s %7s %7s'
          % ('nodes', 'a opie', 'a stock', 'a o/s',
             'b opie', '(decide', '+term)', 'b stock', 'b o/s', 'b d/s',
             'c retry', 'c r/o', 'c r/d'))
    for n, r in rows:
        a_o, a_s = med_ms(r['a_opie']), med_ms(r['a_stock'])
        b_o, b_s = med_ms(r['b_opie']), med_ms(r['b_stock'])
        b_d, b_x = med_ms(r['b_opie_decide']), med_ms(r['b_opie_exec'])
        c_r = med_ms(r['c_retry'])
        print('%6d | %9.1f %9.1f %6.2f | %9.1f %9.1f %9.1f %9.1f %6.2f '
              '%6.2f | %9.1f %7.2f %7.2f'
              % (n, a_o, a_s, a_o / a_s, b_o, b_d, b_x, b_s, b_o / b_s,
                 b_d / b_s, c_r, c_r / b_o, c_r / b_d))
    print()
    print('ms = median wall time of one select_destinations (c: NoValidHost '
          '+ victim choice + deletion through nova\'s compute API + the '
          'same wait as opie\'s + second select).')
    print('o/s = opie/stock; d = opie minus its terminate-and-wait phase '
          '(victim choice only); r/o = retry/opie total; r/d = retry/opie '
          'decide.')
    print('CPU ms of the calling OS thread (less sensitive to machine '
          'load than wall time; it holds the scheduler, the in-process '
          'Placement and DB, and any green thread run meanwhile):')
    for n, r in rows:
        print('  %d nodes: a opie %.1f / stock %.1f = %.2f; b decide %.1f / '
              'stock %.1f = %.2f' % (
                  n, med_ms(r['a_opie_cpu']), med_ms(r['a_stock_cpu']),
                  med_ms(r['a_opie_cpu']) / med_ms(r['a_stock_cpu']),
                  med_ms(r['b_opie_decide_cpu']), med_ms(r['b_stock_cpu']),
                  med_ms(r['b_opie_decide_cpu'])
                  / med_ms(r['b_stock_cpu'])))
    for n, r in rows:
        print('ratio a opie/stock %d nodes: %.2f' % (
            n, med_ms(r['a_opie']) / med_ms(r['a_stock'])))
        print('ratio b opie/stock %d nodes: %.2f' % (
            n, med_ms(r['b_opie']) / med_ms(r['b_stock'])))
        print('ratio c retry/opie %d nodes: %.2f' % (
            n, med_ms(r['c_retry']) / med_ms(r['b_opie'])))


if __name__ == '__main__':
    try:
        main()
    except CheckFailed as exc:
        print('benchmark check failed, results void: %s' % exc,
              file=sys.stderr)
        sys.exit(1)
