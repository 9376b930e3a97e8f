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
"""The planner's input, read from Nova and Placement through openstacksdk.

Per period the collector makes a fixed number of calls, whatever the
number of servers (plus one inventory call per compute node):

* ``compute.hypervisors(details=True)``: compute nodes, their service host
  (the live-migration target) and whether they are enabled and up (a
  disabled or down host is profiled but receives nothing);
* Placement ``GET /resource_providers`` and, per node,
  ``GET /resource_providers/{uuid}/inventories``: capacity ``total −
  reserved`` of VCPU and MEMORY_MB (utilisations are fractions of it) and
  the request limit
  ``capacity × allocation_ratio`` the scheduler enforces (Nova >= 2.88 no
  longer reports sizes in os-hypervisors);
* ``compute.servers(details=True, all_projects=True)``: servers with
  their embedded flavor (API >= 2.47): requested vCPU and MB, preemptible
  when the flavor is (:func:`opie_sched.common.flavors.is_preemptible`); a
  server moves only when it is ACTIVE with no task;
* ``compute.aggregates()``: topology from aggregate metadata
  ``opie:topology_group`` / ``opie:topology_cluster`` (the keys of the RPM
  weighers, :mod:`opie_sched.scheduler.rpm_terms`; Paper IV §3).

"Actually used" is what the flavors allocate (the ``allocations``
utilisation source of :mod:`opie_sched.common.utilisation`): a host's sample is
``(Σ vCPU / capacity, Σ MB / capacity)``. The history of samples lives in
memory between periods (:class:`History`), optionally saved as JSON in the
state directory so that ``--once`` runs accumulate the trigger window.
"""

import collections
import json
import logging
import os
import tempfile
import threading
import time

from opie_sched.common import flavors
from opie_sched.rpm import planner

LOG = logging.getLogger(__name__)

#: Aggregate metadata keys of the topology (same as the RPM weighers').
GROUP_KEY = 'opie:topology_group'
CLUSTER_KEY = 'opie:topology_cluster'


class CollectError(Exception):
    """Nova or Placement could not be read (message says what)."""


class History:
    """Utilisation samples per host with their wall-clock time.

    :param length: samples kept per host (>= 1).
    :param path: JSON file to load at creation and :meth:`save` to; None
        keeps the history in memory only.
    :param clock: ``time.time``-like callable, seconds.
    """

    def __init__(self, length, path=None, clock=time.time):
        if length < 1:
            raise ValueError('history length must be >= 1, got %r'
                             % (length,))
        self.length = length
        self.path = path
        self._clock = clock
        self._lock = threading.Lock()
        self._samples = {}
        if path and os.path.exists(path):
            self._load()

    def _buffer(self, host):
        buf = self._samples.get(host)
        if buf is None:
            buf = self._samples[host] = collections.deque(maxlen=self.length)
        return buf

    def record(self, host, cpu, mem, interval=0.0):
        """Append ``(cpu, mem)`` (fractions) for ``host`` unless its last
        sample is younger than ``interval`` seconds; True when kept.
        """
        now = self._clock()
        with self._lock:
            buf = self._buffer(host)
            if buf and now - buf[-1][0] < interval:
                return False
            buf.append((now, float(cpu), float(mem)))
            return True

    def samples(self, host):
        """``([cpu, ...], [mem, ...])`` of ``host``, oldest first."""
        with self._lock:
            buf = list(self._samples.get(host, ()))
        return [c for _, c, _ in buf], [m for _, _, m in buf]

    def forget(self, keep):
        """Drop the hosts not in ``keep`` (deleted computes)."""
        with self._lock:
            for host in set(self._samples) - set(keep):
                del self._samples[host]

    def save(self):
        """Write the history to ``path`` atomically (no-op without one)."""
        if not self.path:
            return
        with self._lock:
            doc = {h: [list(s) for s in buf]
                   for h, buf in self._samples.items()}
        directory = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, suffix='.tmp')
        with os.fdopen(fd, 'w') as f:
            json.dump(doc, f)
        os.replace(tmp, self.path)

    def _load(self):
        try:
            with open(self.path) as f:
                doc = json.load(f)
            for host, rows in doc.items():
                buf = self._buffer(host)
                for stamp, cpu, mem in rows:
                    buf.append((float(stamp), float(cpu), float(mem)))
        except (OSError, ValueError, TypeError) as exc:
            LOG.warning('Ignoring the unreadable history %s: %s',
                        self.path, exc)
            self._samples.clear()


def location_from_aggregates(aggregates):
    """``{host: (group, cluster)}`` from aggregates (``hosts`` and
    ``metadata``); a host with conflicting values in several aggregates
    gets None for that level (unknown, as in the RPM weighers).
    """
    seen = collections.defaultdict(lambda: (set(), set()))
    for agg in aggregates:
        meta = getattr(agg, 'metadata', None) or {}
        for host in getattr(agg, 'hosts', None) or ():
            groups, clusters = seen[host]
            if meta.get(GROUP_KEY):
                groups.add(meta[GROUP_KEY])
            if meta.get(CLUSTER_KEY):
                clusters.add(meta[CLUSTER_KEY])
    out = {}
    for host, (groups, clusters) in seen.items():
        for key, values in ((GROUP_KEY, groups), (CLUSTER_KEY, clusters)):
            if len(values) > 1:
                LOG.warning('Host %s has conflicting %s values %s; its '
                            'location is unknown', host, key, sorted(values))
        out[host] = (groups.pop() if len(groups) == 1 else None,
                     clusters.pop() if len(clusters) == 1 else None)
    return out


def _flavor_field(flavor, name, default=None):
    if flavor is None:
        return default
    if isinstance(flavor, dict):
        return flavor.get(name, default)
    return getattr(flavor, name, default)


def instance_of(server, dirty_rate=0.0):
    """:class:`planner.Instance` of an sdk server (embedded flavor).

    :raises CollectError: the server has no embedded flavor sizes (API
        older than 2.47).
    """
    flavor = getattr(server, 'flavor', None)
    vcpus = _flavor_field(flavor, 'vcpus')
    ram = _flavor_field(flavor, 'ram')
    if not vcpus or not ram:
        raise CollectError('server %s has no embedded flavor sizes (compute '
                           'API >= 2.47 is needed)' % server.id)
    specs = _flavor_field(flavor, 'extra_specs') or {}
    try:
        preemptible = flavors.is_preemptible(specs)
    except flavors.InvalidPreemptibleFlavor as exc:
        LOG.warning('Server %s: invalid preemptible flavor (%s); treated as '
                    'a normal server', server.id, exc)
        preemptible = False
    movable = server.status == 'ACTIVE' and not getattr(server, 'task_state',
                                                        None)
    return planner.Instance(
        id=server.id, name=server.name or '', vcpus=vcpus, memory_mb=ram,
        preemptible=preemptible, live=True, dirty_rate=dirty_rate,
        movable=movable)


class Node(collections.namedtuple('Node', 'host node vcpus memory_mb '
                                          'accepts group cluster cpu_limit '
                                          'memory_limit_mb')):
    """One compute node: service ``host``, hypervisor ``node``, capacity
    (vCPU, MB), whether it may receive servers, topology, and the
    request limits (capacity × allocation ratio).
    """


class Collector:
    """Builds :class:`planner.Host` lists from a cloud.

    :param conn: an ``openstack.connection.Connection`` (admin).
    :param history: :class:`History` kept between periods.
    :param dirty_rate: page dirty rate assumed for every server, MB/s.
    """

    def __init__(self, conn, history, dirty_rate=0.0):
        self.conn = conn
        self.history = history
        self.dirty_rate = dirty_rate

    def _call(self, what, func, *args, **kwargs):
        try:
            return list(func(*args, **kwargs))
        except Exception as exc:
            raise CollectError('cannot list %s: %s' % (what, exc))

    def _placement(self, url):
        """JSON of a Placement GET (raw REST: works whatever proxy class
        the SDK picked for the endpoint).
        """
        try:
            resp = self.conn.placement.get(url)
        except Exception as exc:
            raise CollectError('cannot read Placement %s: %s' % (url, exc))
        if resp.status_code >= 400:
            raise CollectError('cannot read Placement %s: HTTP %s %s' % (
                url, resp.status_code, (resp.text or '')[:200]))
        return resp.json()

    def _capacities(self):
        """``{node name: (vCPU, MB, vCPU limit, MB limit)}`` from
        Placement inventories: capacity ``total − reserved``, limit
        capacity × allocation ratio.
        """
        out = {}
        for rp in self._placement('/resource_providers')[
                'resource_providers']:
            invs = self._placement('/resource_providers/%s/inventories'
                                   % rp['uuid'])['inventories']
            if 'VCPU' not in invs or 'MEMORY_MB' not in invs:
                continue
            pair = (invs['VCPU'], invs['MEMORY_MB'])
            caps = [inv['total'] - (inv.get('reserved') or 0)
                    for inv in pair]
            if min(caps) <= 0:
                continue
            out[rp['name']] = tuple(caps) + tuple(
                cap * (inv.get('allocation_ratio') or 1.0)
                for cap, inv in zip(caps, pair))
        return out

    def nodes(self):
        """``{host: Node}`` of the compute nodes with a capacity.

        :raises CollectError: Nova or Placement cannot be read.
        """
        capacities = self._capacities()
        topo = location_from_aggregates(self._call(
            'aggregates', self.conn.compute.aggregates))
        out = {}
        for hyp in self._call('hypervisors', self.conn.compute.hypervisors,
                              details=True):
            service = getattr(hyp, 'service_details', None) or {}
            host = service.get('host') or hyp.name
            if hyp.name not in capacities:
                LOG.warning('Compute node %s has no VCPU/MEMORY_MB inventory '
                            'in Placement; ignored', hyp.name)
                continue
            vcpus, ram, cpu_limit, ram_limit = capacities[hyp.name]
            accepts = hyp.status == 'enabled' and hyp.state == 'up'
            group, cluster = topo.get(host, (None, None))
            out[host] = Node(host, hyp.name, vcpus, ram, accepts, group,
                             cluster, cpu_limit, ram_limit)
        return out

    def servers(self, hosts):
        """``{host: [planner.Instance]}`` of the servers on ``hosts``.

        :raises CollectError: Nova cannot be read or a server has no
            embedded flavor.
        """
        out = {h: [] for h in hosts}
        for server in self._call('servers', self.conn.compute.servers,
                                 details=True, all_projects=True):
            host = getattr(server, 'compute_host', None)
            if host in out:
                out[host].append(instance_of(server, self.dirty_rate))
        return out

    def sample(self, interval=0.0):
        """Read the cloud, record one sample per host (unless the last one
        is younger than ``interval`` seconds) and return the hosts.

        :returns: list of :class:`planner.Host` with their histories.
        :raises CollectError: see :meth:`nodes` and :meth:`servers`.
        """
        nodes = self.nodes()
        servers = self.servers(nodes)
        for host, node in nodes.items():
            insts = servers[host]
            self.history.record(
                host, sum(i.cpu for i in insts) / node.vcpus,
                sum(i.memory for i in insts) / node.memory_mb, interval)
        self.history.forget(nodes)
        try:
            self.history.save()
        except OSError as exc:
            LOG.warning('Cannot save the history to %s: %s',
                        self.history.path, exc)
        return self.hosts(nodes, servers)

    def hosts(self, nodes, servers):
        """:class:`planner.Host` list of collected nodes and servers."""
        out = []
        for host in sorted(nodes):
            node = nodes[host]
            cpu, mem = self.history.samples(host)
            out.append(planner.Host(
                name=host, vcpus=node.vcpus, memory_mb=node.memory_mb,
                instances=tuple(servers[host]), cpu_history=tuple(cpu),
                mem_history=tuple(mem), group=node.group,
                cluster=node.cluster, accepts=node.accepts,
                cpu_limit=node.cpu_limit,
                memory_limit_mb=node.memory_limit_mb))
        return out
