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
"""Die-Hard in Nova: the per-request plan over failure domains.

Thesis Paper VI (see :mod:`opie_sched.diehard`): a job of K identical
tasks, one per host, must keep K running for T hours with probability
S_min; the planner deploys N = K + n tasks with a quota per combined
failure domain (network domain × power domain, a "cell"). Here a job is a
multi-create request (``min_count = max_count = N``). This module makes
and keeps the request's plan (:func:`request_plan`); two plugins apply
it:

* :class:`opie_sched.scheduler.filters.failure_domain.FailureDomainFilter`
  lets a host pass only while its cell still has quota for this request,
  and never a host that already holds a task of the job (one task per
  host);
* :class:`opie_sched.scheduler.weights.reliability.ReliabilityWeigher`
  prefers hosts of the cell with the most quota left, i.e. the domain the
  plan wants next.

Enable in nova.conf (put the filter *last*: the plan is made from the
hosts that reach it for the first instance)::

    [filter_scheduler]
    available_filters = nova.scheduler.filters.all_filters
    available_filters = opie_sched.scheduler.filters.all_filters
    enabled_filters = ...,FailureDomainFilter
    weight_classes = ...,
        opie_sched.scheduler.weights.reliability.ReliabilityWeigher

**The request** (:func:`constraint`). Scheduler hints ``opie_tasks`` (K,
integer >= 1), ``opie_target`` (S_min in (0, 1), default
``[opie_reliability] default_target``) and ``opie_hours`` (T >= 0, default
``default_hours``). Nova's API gives server groups no free-form field, so a
server group carries them in its *name* as the same ``key=value`` tokens,
e.g. ``etl opie_tasks=8 opie_target=0.999 opie_hours=48``; hints win over
the group. Requests without ``opie_tasks`` are not constrained and every
host passes.

**Invalid requests fail cleanly**: a malformed hint, a target the planner
cannot reach with the candidate hosts, or a multi-create smaller than the
plan's N makes the filter reject every host and log an error saying why;
nova then reports NoValidHost. We chose this over ignoring the constraint
because a job that asked for a reliability guarantee must not silently run
without one. A multi-create *larger* than N gets the surplus spread one
task at a time over the cells with the fewest planned tasks (adding tasks
never lowers S(x)).

**Failure domains of hosts** (:func:`host_domains`). With ``[opie_reliability]
topology_file`` set, the Die-Hard YAML (host *names* listed under the
network domains) is the only source. Otherwise host aggregate metadata:
``opie:network_domain`` (required: hosts without it are not candidates of
a reliability request), ``opie:power_domain`` (optional: hosts without it
share the implicit power domain ``opie-default-power``), and optionally
``opie:network_failure_rate`` / ``opie:power_failure_rate`` (per node, per
hour; defaults in ``[opie_reliability]``) and ``opie:network_nodes`` /
``opie:power_nodes`` (redundant nodes, default 1). When hosts disagree
about a domain's rate or node count the largest rate and the smallest node
count are used (the less reliable reading).

**What was already placed** in this request: nova calls the filters once
per instance of a multi-create and consumes the chosen host in between.
With a server group nova appends each chosen host to
``spec_obj.instance_group.hosts``: hosts added since the first instance are
this request's placements (hosts there before hold earlier members of the
group and are excluded). Without a group, a per-request record (keyed by
the RequestSpec object, weakly) notes each host's ``num_instances`` when
first seen; nova's ``consume_from_request`` raises it for the chosen host.
Two concurrent requests in one scheduler process share HostStates, so the
group form is the exact one; use it when several jobs start at once.

No database query per host: everything comes from HostStates and
aggregates already loaded by nova; the topology file is read once per
modification.
"""

import collections
import os
import re
import threading
import weakref

from oslo_log import log as logging
import yaml

import nova.conf

from opie_sched.conf import rpm as rpm_opts
from opie_sched.diehard import planner as dh_plan
from opie_sched.diehard import topology as dh_topo

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF
rpm_opts.register_opts(CONF)

TASKS_HINT = 'opie_tasks'
TARGET_HINT = 'opie_target'
HOURS_HINT = 'opie_hours'
HINTS = (TASKS_HINT, TARGET_HINT, HOURS_HINT)

NETWORK_KEY = 'opie:network_domain'
POWER_KEY = 'opie:power_domain'
NETWORK_RATE_KEY = 'opie:network_failure_rate'
POWER_RATE_KEY = 'opie:power_failure_rate'
NETWORK_NODES_KEY = 'opie:network_nodes'
POWER_NODES_KEY = 'opie:power_nodes'
#: Power domain of hosts whose aggregates name none.
DEFAULT_POWER_DOMAIN = 'opie-default-power'

_TOKEN = re.compile(r'(opie_tasks|opie_target|opie_hours)=([^\s,;]+)')


class ReliabilityError(ValueError):
    """A reliability request that cannot be honoured (the message says
    why); the filter rejects every host.
    """


class Constraint(collections.namedtuple('Constraint', 'tasks target hours')):
    """K tasks, S_min, T hours (Paper VI §2)."""


# -- the request --------------------------------------------------------------

def _hint(spec_obj, name):
    hints = getattr(spec_obj, 'scheduler_hints', None) or {}
    value = hints.get(name) if hasattr(hints, 'get') else None
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
    return value


def _group_tokens(spec_obj):
    group = getattr(spec_obj, 'instance_group', None)
    if group is None or not group.obj_attr_is_set('name'):
        return {}
    return dict(_TOKEN.findall(group.name or ''))


def constraint(spec_obj):
    """The request's :class:`Constraint`, or None when it has none.

    :raises ReliabilityError: a malformed or out-of-range value, or
        ``opie_target``/``opie_hours`` without ``opie_tasks``.
    """
    values = {name: _hint(spec_obj, name) for name in HINTS}
    where = 'scheduler hint'
    if all(v is None for v in values.values()):
        values = {name: _group_tokens(spec_obj).get(name) for name in HINTS}
        where = 'server group name'
    if values[TASKS_HINT] is None:
        if any(v is not None for v in values.values()):
            raise ReliabilityError('%s %s/%s given without %s'
                                   % (where, TARGET_HINT, HOURS_HINT,
                                      TASKS_HINT))
        return None
    conf = CONF.opie_reliability
    tasks = _parse(values[TASKS_HINT], int, where, TASKS_HINT)
    target = (conf.default_target if values[TARGET_HINT] is None else
              _parse(values[TARGET_HINT], float, where, TARGET_HINT))
    hours = (conf.default_hours if values[HOURS_HINT] is None else
             _parse(values[HOURS_HINT], float, where, HOURS_HINT))
    if tasks < 1:
        raise ReliabilityError('%s %s must be >= 1, got %d'
                               % (where, TASKS_HINT, tasks))
    if not 0 < target < 1:
        raise ReliabilityError('%s %s must be in (0, 1), got %r'
                               % (where, TARGET_HINT, target))
    if not 0 <= hours < float('inf'):
        raise ReliabilityError('%s %s must be a finite number >= 0, got %r'
                               % (where, HOURS_HINT, hours))
    return Constraint(tasks, target, hours)


def _parse(value, kind, where, name):
    try:
        return kind(str(value).strip())
    except (TypeError, ValueError):
        raise ReliabilityError('%s %s=%r is not a valid %s'
                               % (where, name, value, kind.__name__))


# -- failure domains of hosts -------------------------------------------------

class HostDomain(collections.namedtuple('HostDomain',
                                        'network power network_rates '
                                        'power_rates')):
    """A host's network and power domain names and each domain's node
    failure rates (per hour, one per redundant node).
    """


_file_lock = threading.Lock()
_file_cache = {}


def _file_domains(path):
    """``{host: HostDomain}`` from a Die-Hard topology YAML (validated by
    :func:`opie_sched.diehard.topology.load_topology`); cached per mtime.

    :raises opie_sched.diehard.topology.TopologyError: invalid file.
    """
    mtime = os.stat(path).st_mtime
    with _file_lock:
        cached = _file_cache.get(path)
        if cached and cached[0] == mtime:
            return cached[1]
    topo = dh_topo.load_topology(path)
    with open(path) as f:
        data = yaml.safe_load(f)
    rates = {d.name: d.failure_rates
             for d in topo.network_domains + topo.power_domains}
    found = {}
    for entry in data['network_domains']:
        hosts = entry.get('hosts')
        groups = (hosts.items() if isinstance(hosts, dict)
                  else [(entry.get('power_domain'), hosts)])
        for power, names in groups:
            if isinstance(names, list):
                for host in names:
                    found[host] = HostDomain(entry['name'], power,
                                             rates[entry['name']],
                                             rates[power])
    with _file_lock:
        _file_cache[path] = (mtime, found)
    return found


def _metadata_value(host_state, key):
    values = {(agg.metadata or {}).get(key)
              for agg in getattr(host_state, 'aggregates', None) or ()}
    values.discard(None)
    if len(values) > 1:
        raise ReliabilityError('host %s has conflicting %s values %s'
                               % (host_state.host, key, sorted(values)))
    return values.pop() if values else None


def _rates(host_state, rate_key, nodes_key, default_rate):
    rate = _metadata_value(host_state, rate_key)
    nodes = _metadata_value(host_state, nodes_key)
    try:
        rate = default_rate if rate is None else float(rate)
        nodes = 1 if nodes is None else int(nodes)
    except ValueError:
        raise ReliabilityError('host %s: invalid %s/%s metadata'
                               % (host_state.host, rate_key, nodes_key))
    if rate < 0 or nodes < 1:
        raise ReliabilityError('host %s: %s must be >= 0 and %s >= 1'
                               % (host_state.host, rate_key, nodes_key))
    return (rate,) * nodes


def aggregate_domain(host_state):
    """:class:`HostDomain` of a HostState from its aggregates' metadata,
    or None when no aggregate names its network domain.

    :raises ReliabilityError: conflicting or invalid metadata.
    """
    network = _metadata_value(host_state, NETWORK_KEY)
    if network is None:
        return None
    power = _metadata_value(host_state, POWER_KEY) or DEFAULT_POWER_DOMAIN
    conf = CONF.opie_reliability
    return HostDomain(
        network, power,
        _rates(host_state, NETWORK_RATE_KEY, NETWORK_NODES_KEY,
               conf.network_failure_rate),
        _rates(host_state, POWER_RATE_KEY, POWER_NODES_KEY,
               conf.power_failure_rate))


def host_domains(host_states):
    """``{host: HostDomain}`` of the HostStates that have one (see the
    module docstring for the sources).

    :raises ReliabilityError: invalid topology file or metadata.
    """
    path = CONF.opie_reliability.topology_file
    if path:
        try:
            known = _file_domains(path)
        except (OSError, dh_topo.TopologyError) as exc:
            raise ReliabilityError('topology file %s: %s' % (path, exc))
        return {hs.host: known[hs.host] for hs in host_states
                if hs.host in known}
    found = {}
    for hs in host_states:
        domain = aggregate_domain(hs)
        if domain is not None:
            found[hs.host] = domain
    return found


def build_topology(domains):
    """A :class:`opie_sched.diehard.topology.Topology` of the given hosts.

    :param domains: ``{host: HostDomain}``.
    :returns: ``(topology, {host: (network, power)})``.
    """
    net_rates, pow_rates = {}, {}
    counts = collections.Counter()
    cell_of = {}
    for host, d in sorted(domains.items()):
        _merge_rates(net_rates, d.network, d.network_rates)
        _merge_rates(pow_rates, d.power, d.power_rates)
        counts[(d.network, d.power)] += 1
        cell_of[host] = (d.network, d.power)
    topology = dh_topo.Topology(
        [dh_topo.Domain(n, r) for n, r in sorted(net_rates.items())],
        [dh_topo.Domain(p, r) for p, r in sorted(pow_rates.items())],
        [dh_topo.Cell(n, p, c) for (n, p), c in sorted(counts.items())])
    return topology, cell_of


def _merge_rates(table, name, rates):
    old = table.get(name)
    if old is None or old == rates:
        table[name] = rates
        return
    LOG.warning('Failure domain %s is described with different rates '
                '(%s, %s); using the less reliable reading', name, old,
                rates)
    nodes = min(len(old), len(rates))
    table[name] = (max(max(old), max(rates)),) * nodes


# -- the per-request plan -----------------------------------------------------

def quotas(plan, total, topology):
    """``{(network, power): tasks}`` for ``total`` instances: the plan's
    placement, plus any surplus over the plan's N one task at a time on
    the cell with the fewest tasks that still has a free host.

    :raises ReliabilityError: ``total`` below the plan's N, or more tasks
        than hosts.
    """
    if total < plan.total:
        raise ReliabilityError(
            'the plan needs N = K + n = %d + %d = %d instances, the '
            'request creates %d; boot with min_count = max_count = %d'
            % (plan.tasks, plan.extra, plan.total, total, plan.total))
    quota = {(c.network, c.power): plan.placement.get(
        (c.network, c.power), 0) for c in topology.cells}
    room = {(c.network, c.power): c.hosts for c in topology.cells}
    for _ in range(total - plan.total):
        open_cells = [k for k in sorted(quota) if quota[k] < room[k]]
        if not open_cells:
            raise ReliabilityError('%d instances do not fit on %d hosts, '
                                   'one per host' % (total,
                                                     topology.capacity))
        quota[min(open_cells, key=lambda k: quota[k])] += 1
    return {k: v for k, v in quota.items() if v}


class RequestPlan(object):
    """One reliability request: its plan, quotas and placements so far.

    :param spec_obj: the RequestSpec.
    :param host_states: the candidates when the request is first seen.
    :raises ReliabilityError: see :func:`constraint`, :func:`quotas`, or a
        target the planner cannot reach.
    """

    def __init__(self, spec_obj, host_states, wanted):
        self.constraint = wanted
        group = getattr(spec_obj, 'instance_group', None)
        self.grouped = group is not None and group.obj_attr_is_set('hosts')
        self.existing = set(group.hosts or ()) if self.grouped else set()
        self.baseline = {}
        self.lock = threading.Lock()
        candidates = [hs for hs in host_states
                      if hs.host not in self.existing]
        domains = host_domains(candidates)
        if not domains:
            raise ReliabilityError('no candidate host has a failure domain '
                                   '(aggregate metadata %s or the topology '
                                   'file)' % NETWORK_KEY)
        self.topology, self.cell_of = build_topology(domains)
        if wanted.tasks > self.topology.capacity:
            raise ReliabilityError('%d tasks need %d hosts, %d candidate '
                                   'hosts have failure domains'
                                   % (wanted.tasks, wanted.tasks,
                                      self.topology.capacity))
        try:
            self.plan = dh_plan.plan(self.topology, wanted.tasks,
                                     wanted.target, wanted.hours,
                                     CONF.opie_reliability.algorithm)
        except dh_topo.PlanError as exc:
            raise ReliabilityError('planning failed: %s' % exc)
        if not self.plan.met:
            raise ReliabilityError(
                'S_min = %.10g for K = %d over %g h is out of reach on the %d '
                'candidate hosts (best S = %.6g with %d tasks)'
                % (wanted.target, wanted.tasks, wanted.hours,
                   self.topology.capacity, self.plan.reliability.value,
                   self.plan.total))
        self.total = int(getattr(spec_obj, 'num_instances', 1) or 1)
        self.quota = quotas(self.plan, self.total, self.topology)
        self.observe(host_states)
        LOG.info('Reliability plan for K=%d, S_min=%g, T=%g h: %d '
                 'instances, S=%.8f, quotas %s', wanted.tasks, wanted.target,
                 wanted.hours, self.total, self.plan.reliability.value,
                 self.quota)

    def observe(self, host_states):
        """Note ``num_instances`` of hosts seen for the first time."""
        with self.lock:
            for hs in host_states:
                self.baseline.setdefault((hs.host, hs.nodename),
                                         hs.num_instances)

    def placed_hosts(self, spec_obj, host_states):
        """Hosts that received an instance of this request so far."""
        if self.grouped:
            hosts = list(spec_obj.instance_group.hosts or ())
            return {h for h in hosts if h not in self.existing}
        self.observe(host_states)
        with self.lock:
            return {hs.host for hs in host_states
                    if hs.num_instances >
                    self.baseline[(hs.host, hs.nodename)]}

    def remaining(self, placed):
        """``{cell: quota left}`` given the placed hosts."""
        left = dict(self.quota)
        for host in placed:
            cell = self.cell_of.get(host)
            if cell in left:
                left[cell] -= 1
        return left

    def allowed(self, host, placed, left):
        """A host may take the next task: not already used by the job, in
        a cell of the plan with quota left.
        """
        if host in placed or host in self.existing:
            return False
        cell = self.cell_of.get(host)
        return cell is not None and left.get(cell, 0) > 0


_lock = threading.Lock()
_requests = weakref.WeakKeyDictionary()


def request_plan(spec_obj, host_states):
    """The :class:`RequestPlan` of a request (made on first use), or None
    when the request has no reliability constraint.

    :raises ReliabilityError: see :class:`RequestPlan`.
    """
    wanted = constraint(spec_obj)
    if wanted is None:
        return None
    with _lock:
        entry = _requests.get(spec_obj)
    if entry is not None:
        if isinstance(entry, ReliabilityError):
            raise entry
        return entry
    try:
        entry = RequestPlan(spec_obj, host_states, wanted)
    except ReliabilityError as exc:
        entry = exc
    with _lock:
        entry = _requests.setdefault(spec_obj, entry)
    if isinstance(entry, ReliabilityError):
        raise entry
    return entry
