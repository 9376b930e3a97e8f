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
"""Die-Hard: placing a job's tasks to survive correlated failures.

The model, reliability function and planner of thesis Paper VI (Sedaghat et
al., "Die-Hard: Reliable Scheduling to Survive Correlated Failures in Cloud
Data Centers", in M. Sedaghat's thesis on cluster scheduling). A job needs
``K`` identical tasks, one per host, running throughout ``T`` hours; it
deploys ``N = K + n`` tasks so that at least ``K`` survive with probability
at least ``S_min``.

Failure model (Paper VI §2.1): hosts belong to one network failure domain
and one power failure domain. A domain is served by one or more redundant
nodes (ToR switches, PDUs) that fail independently after an exponentially
distributed time (rate λ per hour) and are never repaired; a domain is down
once all its nodes have failed. A *combined domain* (a "cell" here, F_l in
the thesis) is the set of hosts sharing a network domain and a power domain;
its tasks run while both its domains are up. Host failures are not part of
the thesis' reliability function (eq. 4) and are not modelled.

Units: durations in hours, failure rates per hour, probabilities in [0, 1].

No nova imports: this is a pure library used by ``opie-sched reliability``.
"""

import collections
import collections.abc
import heapq
import itertools
import math
import numbers
import random

import yaml

#: Network node failure rates of the thesis' evaluation, per hour (§2.1, §4).
NETWORK_FAILURE_RATE_RANGE = (0.00022, 0.00032)
#: Default network node failure rate: the middle of that range, per hour.
DEFAULT_NETWORK_FAILURE_RATE = sum(NETWORK_FAILURE_RATE_RANGE) / 2
#: PDU failure rate of the thesis, per hour (§2.1, citing Geng's handbook).
DEFAULT_POWER_FAILURE_RATE = 0.4e-6
#: Default bound on the truncation error of :func:`reliability`.
DEFAULT_TOLERANCE = 1e-10
#: ``method='auto'`` enumerates failure states up to this many states.
EXACT_STATE_LIMIT = 4096

ALGORITHMS = ('diehard', 'proportional', 'hrf')


class TopologyError(ValueError):
    """An invalid topology; ``path`` names the offending field."""

    def __init__(self, path, message):
        super().__init__('%s: %s' % (path, message) if path else message)
        self.path = path


class PlanError(ValueError):
    """Invalid planning input (task count, target, duration, placement)."""


# -- topology -----------------------------------------------------------------

class Domain(collections.namedtuple('Domain', 'name failure_rates')):
    """A network or power failure domain.

    ``failure_rates``: one rate per redundant node, per hour. The domain is
    up while at least one node is (Paper VI §2.1).
    """

    def failure_probability(self, hours):
        """Probability that every node fails within ``hours`` hours."""
        prob = 1.0
        for rate in self.failure_rates:
            prob *= -math.expm1(-rate * hours)
        return prob


class Cell(collections.namedtuple('Cell', 'network power hosts')):
    """A combined failure domain: ``hosts`` hosts (task slots) sharing the
    network domain named ``network`` and the power domain named ``power``.
    """


class Topology(object):
    """Hosts grouped into network domains and power domains.

    :param network_domains: sequence of :class:`Domain`.
    :param power_domains: sequence of :class:`Domain`.
    :param cells: sequence of :class:`Cell` (or ``(network, power, hosts)``
        tuples); at most one per (network, power) pair.
    :raises TopologyError: unknown or duplicate names, negative or
        non-finite rates, a domain without nodes, bad host counts, no hosts.
    """

    def __init__(self, network_domains, power_domains, cells):
        self.network_domains = _check_domains(network_domains,
                                              'network_domains')
        self.power_domains = _check_domains(power_domains, 'power_domains')
        self.cells = _check_cells(cells, self.network_domains,
                                  self.power_domains)
        self._net_index = {d.name: i
                           for i, d in enumerate(self.network_domains)}
        self._pow_index = {d.name: j for j, d in enumerate(self.power_domains)}
        self._cell_index = {(c.network, c.power): i
                            for i, c in enumerate(self.cells)}

    @property
    def capacity(self):
        """Total number of hosts, i.e. of task slots."""
        return sum(c.hosts for c in self.cells)

    def network_of(self, cell):
        """Index of the network domain of cell number ``cell``."""
        return self._net_index[self.cells[cell].network]

    def power_of(self, cell):
        """Index of the power domain of cell number ``cell``."""
        return self._pow_index[self.cells[cell].power]

    def placement_vector(self, placement):
        """``placement`` as a tuple of task counts aligned with ``cells``.

        :param placement: a sequence aligned with :attr:`cells`, or a mapping
            ``{(network name, power name): tasks}`` (missing cells: 0).
        :raises PlanError: unknown cell, wrong length, a count that is not
            an integer in ``[0, hosts]``.
        """
        if isinstance(placement, collections.abc.Mapping):
            vector = [0] * len(self.cells)
            for key, count in placement.items():
                if key not in self._cell_index:
                    raise PlanError('placement: no cell %r in the topology'
                                    % (key,))
                vector[self._cell_index[key]] = count
        else:
            vector = list(placement)
            if len(vector) != len(self.cells):
                raise PlanError('placement: %d counts for %d cells'
                                % (len(vector), len(self.cells)))
        for cell, count in zip(self.cells, vector):
            _check_count(count, cell)
        return tuple(int(c) for c in vector)

    def placement_dict(self, vector):
        """``{(network, power): tasks}`` for the non-empty cells."""
        return collections.OrderedDict(
            ((c.network, c.power), x)
            for c, x in zip(self.cells, vector) if x)


def _check_count(count, cell):
    if (isinstance(count, bool) or not isinstance(count, numbers.Integral)
            or not 0 <= count <= cell.hosts):
        raise PlanError('placement: %r tasks in cell (%s, %s) with %d hosts'
                        % (count, cell.network, cell.power, cell.hosts))


def _check_domains(domains, path):
    domains = tuple(Domain(d[0], _rate_tuple(d[1])) for d in domains)
    if not domains:
        raise TopologyError(path, 'at least one domain is required')
    seen = set()
    for i, domain in enumerate(domains):
        where = '%s[%d]' % (path, i)
        _check_name(domain.name, where + '.name')
        if domain.name in seen:
            raise TopologyError(where + '.name',
                                'duplicate name %r' % domain.name)
        seen.add(domain.name)
        if not domain.failure_rates:
            raise TopologyError(where + '.failure_rate',
                                'a domain needs at least one node')
        for k, rate in enumerate(domain.failure_rates):
            _check_rate(rate, '%s.failure_rate[%d]' % (where, k))
    return domains


def _rate_tuple(rates):
    if isinstance(rates, numbers.Real):
        return (rates,)
    return tuple(rates)


def _check_cells(cells, network_domains, power_domains):
    cells = tuple(Cell(*c) for c in cells)
    networks = {d.name for d in network_domains}
    powers = {d.name for d in power_domains}
    seen = set()
    for i, cell in enumerate(cells):
        where = 'cells[%d]' % i
        if cell.network not in networks:
            raise TopologyError(where + '.network', 'unknown network domain '
                                '%r' % (cell.network,))
        if cell.power not in powers:
            raise TopologyError(where + '.power', 'unknown power domain %r'
                                % (cell.power,))
        if (cell.network, cell.power) in seen:
            raise TopologyError(where, 'duplicate cell (%s, %s)'
                                % (cell.network, cell.power))
        seen.add((cell.network, cell.power))
        _check_int(cell.hosts, where + '.hosts', 0)
    if not sum(c.hosts for c in cells):
        raise TopologyError('cells', 'the topology has no hosts')
    return cells


def _check_name(value, path):
    if not isinstance(value, str) or not value.strip():
        raise TopologyError(path, 'must be a non-empty string, got %r'
                            % (value,))
    return value


def _check_rate(value, path):
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not math.isfinite(value) or value < 0):
        raise TopologyError(path, 'must be a finite number >= 0 (per hour), '
                            'got %r' % (value,))
    return float(value)


def _check_int(value, path, minimum):
    if (isinstance(value, bool) or not isinstance(value, numbers.Integral)
            or value < minimum):
        raise TopologyError(path, 'must be an integer >= %d, got %r'
                            % (minimum, value))
    return int(value)


# -- topology files -----------------------------------------------------------

_TOP_KEYS = {'defaults', 'network_domains', 'power_domains'}
_DEFAULT_KEYS = {'network_failure_rate', 'power_failure_rate'}
_POWER_KEYS = {'name', 'failure_rate', 'nodes'}
_NETWORK_KEYS = {'name', 'failure_rate', 'nodes', 'power_domain', 'hosts'}


def load_topology(path):
    """Read a YAML topology file; see :func:`topology_from_dict`.

    :raises TopologyError: unreadable file, invalid YAML or topology.
    """
    try:
        with open(path) as f:
            data = yaml.safe_load(f)
    except OSError as exc:
        raise TopologyError(path, 'cannot read: %s' % (exc.strerror or exc))
    except yaml.YAMLError as exc:
        raise TopologyError(path, 'invalid YAML: %s' % ' '.join(
            str(exc).split()))
    return topology_from_dict(data)


def topology_from_dict(data):
    """A :class:`Topology` from parsed YAML/JSON::

        defaults:                      # optional
          network_failure_rate: 0.00027   # per hour, per network node
          power_failure_rate: 0.4e-6      # per hour, per power node
        power_domains:
          - name: pdu-a
            nodes: 2                   # redundant nodes (default 1)
            failure_rate: 0.4e-6       # per node, or a list (one per node)
        network_domains:
          - name: tor-01
            failure_rate: [0.00025, 0.0003]
            power_domain: pdu-a
            hosts: 160                 # a count or a list of host names
          - name: tor-02               # a network domain over two PDUs:
            hosts: {pdu-a: 80, pdu-b: [h1, h2]}

    :raises TopologyError: naming the offending field, e.g.
        ``network_domains[3].power_domain: unknown power domain 'pdu-x'``.
    """
    top = _mapping(data, 'topology', _TOP_KEYS)
    defaults = _mapping(top.get('defaults', {}), 'defaults', _DEFAULT_KEYS)
    net_rate = _check_rate(defaults.get('network_failure_rate',
                                        DEFAULT_NETWORK_FAILURE_RATE),
                           'defaults.network_failure_rate')
    pow_rate = _check_rate(defaults.get('power_failure_rate',
                                        DEFAULT_POWER_FAILURE_RATE),
                           'defaults.power_failure_rate')
    power = [_power_entry(e, 'power_domains[%d]' % i, pow_rate)
             for i, e in enumerate(_list(top, 'power_domains'))]
    _check_domains(power, 'power_domains')
    power_names = [d.name for d in power]
    network, cells, host_names = [], [], set()
    for i, entry in enumerate(_list(top, 'network_domains')):
        domain, own = _network_entry(entry, 'network_domains[%d]' % i,
                                     net_rate, power_names, host_names)
        network.append(domain)
        cells.extend(own)
    return Topology(network, power, cells)


def _mapping(value, path, allowed):
    if not isinstance(value, dict):
        raise TopologyError(path, 'must be a mapping, got %s'
                            % type(value).__name__)
    unknown = sorted(str(k) for k in set(value) - allowed)
    if unknown:
        raise TopologyError(path, 'unknown field(s) %s (allowed: %s)'
                            % (', '.join(unknown), ', '.join(sorted(allowed))))
    return value


def _list(top, key):
    if key not in top:
        raise TopologyError(key, 'missing')
    value = top[key]
    if not isinstance(value, list) or not value:
        raise TopologyError(key, 'must be a non-empty list')
    return value


def _failure_rates(entry, path, default_rate):
    nodes = entry.get('nodes')
    if nodes is not None:
        nodes = _check_int(nodes, path + '.nodes', 1)
    rate = entry.get('failure_rate', default_rate)
    if isinstance(rate, list):
        rates = tuple(_check_rate(r, '%s.failure_rate[%d]' % (path, k))
                      for k, r in enumerate(rate))
        if not rates:
            raise TopologyError(path + '.failure_rate', 'empty list')
        if nodes is not None and nodes != len(rates):
            raise TopologyError(path + '.nodes', '%d nodes but %d failure '
                                'rates' % (nodes, len(rates)))
        return rates
    return (_check_rate(rate, path + '.failure_rate'),) * (nodes or 1)


def _power_entry(entry, path, default_rate):
    entry = _mapping(entry, path, _POWER_KEYS)
    name = _check_name(entry.get('name'), path + '.name')
    return Domain(name, _failure_rates(entry, path, default_rate))


def _network_entry(entry, path, default_rate, power_names, host_names):
    entry = _mapping(entry, path, _NETWORK_KEYS)
    name = _check_name(entry.get('name'), path + '.name')
    domain = Domain(name, _failure_rates(entry, path, default_rate))
    hosts = entry.get('hosts')
    if isinstance(hosts, dict):
        if 'power_domain' in entry:
            raise TopologyError(path + '.power_domain', 'not allowed when '
                                'hosts maps power domains to hosts')
        groups = [(power, group, '%s.hosts.%s' % (path, power))
                  for power, group in hosts.items()]
    else:
        groups = [(entry.get('power_domain'), hosts, path + '.hosts')]
    cells = []
    for power, group, field in groups:
        if power not in power_names:
            raise TopologyError(
                field if isinstance(hosts, dict) else path + '.power_domain',
                'unknown power domain %r (known: %s)'
                % (power, ', '.join(power_names)))
        cells.append(Cell(name, power,
                          _host_count(group, field, host_names)))
    return domain, cells


def _host_count(value, path, host_names):
    if isinstance(value, list):
        for k, host in enumerate(value):
            _check_name(host, '%s[%d]' % (path, k))
            if host in host_names:
                raise TopologyError('%s[%d]' % (path, k),
                                    'host %r listed twice' % host)
            host_names.add(host)
        return len(value)
    if value is None:
        raise TopologyError(path, 'missing (a host count or list of names)')
    return _check_int(value, path, 0)


#: A host of the Paper VI evaluation (§4): 4 CPU cores, 16 GB of memory.
HOST_CORES, HOST_MEMORY_GB = 4, 16


def host_slots(rng, task_cores, task_memory_gb, background=True,
               cores=HOST_CORES, memory_gb=HOST_MEMORY_GB):
    """Tasks of one job a host can take (Paper VI §4).

    The host carries a background load "uniformly chosen within the
    available capacity range": a CPU and a memory load drawn independently
    and uniformly in [0, ``cores``] and [0, ``memory_gb``]. The job's
    identical tasks (``task_cores`` cores, ``task_memory_gb`` GB) fill what
    is left: ``min(floor(free cores / task cores), floor(free GB / task
    GB))``.

    :param rng: :class:`random.Random`.
    :param background: False for an idle host (the whole capacity free).
    :returns: int >= 0.
    :raises PlanError: a non-positive task size.
    """
    if not task_cores > 0 or not task_memory_gb > 0:
        raise PlanError('task size must be > 0, got %r cores, %r GB'
                        % (task_cores, task_memory_gb))
    free_cpu, free_mem = float(cores), float(memory_gb)
    if background:
        free_cpu -= rng.uniform(0, cores)
        free_mem -= rng.uniform(0, memory_gb)
    return int(min(math.floor(free_cpu / task_cores + 1e-9),
                   math.floor(free_mem / task_memory_gb + 1e-9)))


def thesis_topology(seed=0, task=None, background=True):
    """The evaluation cluster of Paper VI §4, as far as the text fixes it.

    9600 hosts (racks of 80) behind 120 ToR switches form 61 network
    domains: 59 two-rack domains (160 hosts) dual-homed to a redundant ToR
    pair and 2 one-rack domains (80 hosts) behind a single ToR, which is the
    only split giving 61 domains, 120 switches and 9600 hosts. ToR failure
    rates are drawn uniformly from :data:`NETWORK_FAILURE_RATE_RANGE` with
    ``random.Random(seed)`` (the thesis averages 10 such draws).

    4 power domains (30 racks each: 16, 15, 15, 15 network domains). The
    thesis' 3 PDUs feeding 4 domains cannot be mirrored under its own
    assumption that domains fail independently; we give two domains one
    PDU and two a redundant pair, so that the uncoverable power risk over
    80 h (about 2·λT = 6.4e-5) matches the plateau of the thesis' Table 1
    (1 − 0.9999376 = 6.2e-5): a calibration to Table 1, not a derivation.

    Capacity (a cell's ``hosts`` are task slots):

    * ``task`` None: one task per host, every host free (the thesis'
      background load not modelled);
    * ``task = (cores, GB)``: each host's slots for tasks of that size
      (:func:`host_slots`) under the random background load of §4 (drawn
      with ``random.Random('<seed>-background')``, so the ToR rates do not
      change), or with the whole host free when ``background`` is False.

    :raises PlanError: a non-positive task size.
    """
    rng = random.Random(seed)
    low, high = NETWORK_FAILURE_RATE_RANGE
    power = [Domain('pdu-%d' % (j + 1), (DEFAULT_POWER_FAILURE_RATE,) *
                    (1 if j < 2 else 2)) for j in range(4)]
    pdus = [0] * 16 + [1] * 15 + [2] * 15 + [3] * 15
    bg_rng = random.Random('%s-background' % seed)
    network, cells = [], []
    for i, pdu in enumerate(pdus):
        tors = 1 if i >= 59 else 2
        name = 'net-%02d' % (i + 1)
        network.append(Domain(name, tuple(rng.uniform(low, high)
                                          for _ in range(tors))))
        hosts = 80 * tors
        if task is not None:
            hosts = sum(host_slots(bg_rng, task[0], task[1], background)
                        for _ in range(hosts))
        cells.append(Cell(name, power[pdu].name, hosts))
    return Topology(network, power, cells)


# -- reliability S(x) ---------------------------------------------------------

class Reliability(collections.namedtuple(
        'Reliability', 'value error_bound method network_terms power_terms')):
    """S(x) for one placement.

    ``value`` is a lower bound of the job's reliability and
    ``value + error_bound`` an upper bound (``error_bound`` is 0 when
    exact). ``method`` is ``'exact'`` or ``'truncated'``;
    ``network_terms``/``power_terms`` are the largest numbers of failed
    (task-hosting) network/power domains summed over.
    """


class _FailureModel(object):
    """The domains that host tasks of a placement, with their failure
    probabilities over the job's duration."""

    def __init__(self, topology, vector, hours):
        used = [c for c, x in enumerate(vector) if x]
        self.networks = sorted({topology.network_of(c) for c in used})
        self.powers = sorted({topology.power_of(c) for c in used})
        net_pos = {i: k for k, i in enumerate(self.networks)}
        pow_pos = {j: k for k, j in enumerate(self.powers)}
        self.q_net = [topology.network_domains[i].failure_probability(hours)
                      for i in self.networks]
        self.q_pow = [topology.power_domains[j].failure_probability(hours)
                      for j in self.powers]
        # loads[r][w]: tasks in network domain r and power domain w.
        self.loads = [[0] * len(self.powers) for _ in self.networks]
        for c in used:
            r = net_pos[topology.network_of(c)]
            self.loads[r][pow_pos[topology.power_of(c)]] += vector[c]
        self.total = sum(vector)

    @property
    def state_count(self):
        return 2 ** (len(self.q_net) + len(self.q_pow))


def reliability(topology, placement, tasks, hours, method='auto',
                tolerance=DEFAULT_TOLERANCE):
    """S(x): probability that at least ``tasks`` tasks survive ``hours``.

    Paper VI eq. (4): the sum of P^R(r)·P^W(w) over the failure states in
    which N(f, x) >= K. ``method='exact'`` enumerates every state of the
    task-hosting domains; ``'truncated'`` uses the decomposition
    S = Σ_i Σ_j S_{i,j} over the numbers of failed domains (eqs. 5-6) and
    drops the terms with more failures than needed to keep the dropped
    probability mass below ``tolerance``; ``'auto'`` is exact up to
    :data:`EXACT_STATE_LIMIT` states.

    :param placement: task counts per cell, see
        :meth:`Topology.placement_vector`.
    :param tasks: K, the number of tasks that must survive (int >= 1).
    :param hours: T, the job's duration in hours (>= 0).
    :param tolerance: bound on the truncation error (0: sum every term).
    :returns: :class:`Reliability`.
    :raises PlanError: invalid placement, ``tasks``, ``hours``, ``method``
        or ``tolerance``.
    """
    vector = topology.placement_vector(placement)
    _check_tasks(tasks)
    _check_hours(hours)
    if method not in ('auto', 'exact', 'truncated'):
        raise PlanError('method must be auto, exact or truncated, got %r'
                        % (method,))
    if not (isinstance(tolerance, numbers.Real) and 0 <= tolerance < 1):
        raise PlanError('tolerance must be in [0, 1), got %r' % (tolerance,))
    model = _FailureModel(topology, vector, hours)
    if method == 'exact' or (method == 'auto' and
                             model.state_count <= EXACT_STATE_LIMIT):
        return _exact(model, tasks)
    return _truncated(model, tasks, tolerance)


def _exact(model, tasks):
    """Eq. (4) by enumerating the up/down state of every domain."""
    total = 0.0
    for net_up in itertools.product((True, False), repeat=len(model.q_net)):
        p_net = _state_probability(net_up, model.q_net)
        for pow_up in itertools.product((True, False),
                                        repeat=len(model.q_pow)):
            running = sum(load for r, row in enumerate(model.loads)
                          if net_up[r]
                          for w, load in enumerate(row) if pow_up[w])
            if running >= tasks:
                total += p_net * _state_probability(pow_up, model.q_pow)
    return Reliability(min(total, 1.0), 0.0, 'exact', len(model.q_net),
                       len(model.q_pow))


def _state_probability(up, fail_probs):
    prob = 1.0
    for is_up, q in zip(up, fail_probs):
        prob *= (1.0 - q) if is_up else q
    return prob


def _truncated(model, tasks, tolerance):
    """Eqs. (5)-(6): Σ S_{i,j} for i <= i_max, j <= j_max."""
    i_max, net_tail = _truncation_level(model.q_net, tolerance / 2)
    j_max, pow_tail = _truncation_level(model.q_pow, tolerance / 2)
    total = 0.0
    for j in range(j_max + 1):
        for failed in itertools.combinations(range(len(model.q_pow)), j):
            total += (_failed_set_probability(failed, model.q_pow) *
                      _given_power_failures(model, failed, tasks, i_max))
    dropped = pow_tail + (1.0 - pow_tail) * net_tail
    return Reliability(min(total, 1.0), min(dropped, 1.0), 'truncated',
                       i_max, j_max)


def _truncation_level(fail_probs, budget):
    """Smallest m with P(more than m of the domains fail) <= budget, and
    that probability (Poisson-binomial tail, summed from the top)."""
    dist = _failure_count_distribution(fail_probs)
    tail = 0.0
    for m in range(len(fail_probs), -1, -1):
        if tail + dist[m] > budget:
            return m, tail
        tail += dist[m]
    return 0, tail


def _failure_count_distribution(fail_probs):
    dist = [1.0]
    for q in fail_probs:
        dist = [(dist[c] if c < len(dist) else 0.0) * (1.0 - q) +
                (dist[c - 1] * q if c else 0.0)
                for c in range(len(dist) + 1)]
    return dist


def _failed_set_probability(failed, fail_probs):
    failed = set(failed)
    return _state_probability([k not in failed for k in range(
        len(fail_probs))], fail_probs)


def _given_power_failures(model, failed, tasks, max_failures):
    """Σ_{i <= max_failures} S_{i,j} / P^W(w) for one power state w:
    a dynamic programme over the network domains on (failed domains, tasks
    lost), dropping states that lose more than N - K tasks."""
    loads = [sum(load for w, load in enumerate(row) if w not in failed)
             for row in model.loads]
    budget = sum(loads) - tasks
    if budget < 0:
        return 0.0
    states = {(0, 0): 1.0}
    for load, q in zip(loads, model.q_net):
        if load:
            states = _add_network_domain(states, load, q, budget,
                                         max_failures)
    return sum(states.values())


def _add_network_domain(states, load, q, budget, max_failures):
    after = collections.defaultdict(float)
    for (count, lost), prob in states.items():
        after[count, lost] += prob * (1.0 - q)
        if count < max_failures and lost + load <= budget:
            after[count + 1, lost + load] += prob * q
    return after


# -- redundancy ---------------------------------------------------------------

def lemma_extra_tasks(tasks, domains, failures):
    """Extra tasks to survive ``failures`` of ``domains`` equal domains.

    Paper VI §3.1, Lemmas 1-2: n = ceil(K·i / (R − i)). It is necessary
    for any placement (pigeonhole) and, for i = 1, sufficient with an even
    placement; for i > 1 integer rounding can leave it short (K=1, R=4,
    i=2 gives 1, yet two of the domains hold both tasks), which is why the
    planner checks S(x) rather than trusting the lemma.

    :raises PlanError: unless ``tasks >= 0`` and ``0 <= failures <
        domains``.
    """
    if tasks < 0 or not 0 <= failures < domains:
        raise PlanError('the lemma needs K >= 0 and 0 <= i < R, got K=%r, '
                        'i=%r, R=%r' % (tasks, failures, domains))
    return -(-tasks * failures // (domains - failures))


def affinity_score(vector):
    """Σ x(x − 1)/2 over the cells (Paper VI eq. 9): the task pairs that
    share a combined failure domain."""
    return sum(x * (x - 1) // 2 for x in vector)


# -- placement families -------------------------------------------------------

def _apportion(total, weights, capacities, rank):
    """D'Hondt apportionment of ``total`` tasks over units with capacities.

    Tasks go one at a time to the unit with room maximising
    weight / (tasks + 1), ties to the lowest ``rank``. Adding a task never
    moves another, so a placement for N + 1 contains the one for N.
    """
    counts = [0] * len(weights)
    heap = [(-weights[u], rank[u], u) for u in range(len(weights))
            if capacities[u] > 0]
    heapq.heapify(heap)
    for _ in range(total):
        if not heap:
            raise PlanError('not enough hosts for %d tasks' % total)
        _, r, u = heapq.heappop(heap)
        counts[u] += 1
        if counts[u] < capacities[u]:
            heapq.heappush(heap, (-weights[u] / (counts[u] + 1), r, u))
    return counts


class _Context(object):
    """One planning problem: topology, K, S_min, T, and memoised S(x)."""

    def __init__(self, topology, tasks, target, hours, tolerance):
        _check_tasks(tasks)
        _check_hours(hours)
        if not (isinstance(target, numbers.Real) and 0 < target < 1):
            raise PlanError('target must be a probability in (0, 1), got %r'
                            % (target,))
        if tasks > topology.capacity:
            raise PlanError('%d tasks do not fit on %d hosts'
                            % (tasks, topology.capacity))
        self.topology = topology
        self.tasks, self.target, self.hours = tasks, target, hours
        self.tolerance = tolerance
        self.q_net = [d.failure_probability(hours)
                      for d in topology.network_domains]
        self.q_pow = [d.failure_probability(hours)
                      for d in topology.power_domains]
        self.q_cell = [1 - (1 - self.q_net[topology.network_of(c)]) *
                       (1 - self.q_pow[topology.power_of(c)])
                       for c in range(len(topology.cells))]
        self.cell_rank = _ranks(self.q_cell)
        self.trace = []
        self._memo = {}

    @property
    def max_extra(self):
        return self.topology.capacity - self.tasks

    def evaluate(self, vector):
        vector = tuple(vector)
        if vector not in self._memo:
            self._memo[vector] = reliability(
                self.topology, vector, self.tasks, self.hours,
                tolerance=self.tolerance)
        return self._memo[vector]

    def meets(self, vector):
        return self.evaluate(vector).value >= self.target

    def record(self, stage, extra, vector, network=None, power=None):
        rel = self.evaluate(vector)
        self.trace.append(Step(stage, network, power, extra, rel.value,
                               rel.value >= self.target))
        return rel.value >= self.target


def _ranks(fail_probs):
    """Rank 0 for the most reliable unit, ties by position."""
    order = sorted(range(len(fail_probs)), key=lambda u: (fail_probs[u], u))
    ranks = [0] * len(order)
    for r, u in enumerate(order):
        ranks[u] = r
    return ranks


def _level_units(ctx, level):
    """Cells grouped by network or power domain, with the domains' failure
    probabilities."""
    topo = ctx.topology
    of = topo.network_of if level == 'network' else topo.power_of
    probs = ctx.q_net if level == 'network' else ctx.q_pow
    groups = [[] for _ in probs]
    for c in range(len(topo.cells)):
        groups[of(c)].append(c)
    return groups, probs


def spread_placement(ctx, total, level):
    """Die-Hard's even placement of ``total`` tasks (Paper VI §3.2).

    Tasks are spread evenly over the ``level`` ('network' or 'power')
    domains within their capacity, i.e. n per domain with the surplus
    trimmed from the least reliable domains; each domain's share is spread
    evenly over its cells the same way.
    """
    groups, probs = _level_units(ctx, level)
    caps = [sum(ctx.topology.cells[c].hosts for c in g) for g in groups]
    shares = _apportion(total, [1.0] * len(groups), caps, _ranks(probs))
    vector = [0] * len(ctx.topology.cells)
    for group, share in zip(groups, shares):
        counts = _apportion(share, [1.0] * len(group),
                            [ctx.topology.cells[c].hosts for c in group],
                            [ctx.cell_rank[c] for c in group])
        for c, x in zip(group, counts):
            vector[c] = x
    return vector


def proportional_placement(ctx, total):
    """Tasks over cells in proportion to their reliability (Paper VI §5.2).

    The thesis says "in proportion to their probabilities of failure" and
    that the result is biased towards reliable domains; we weight each cell
    by 1 / (failure probability over T), so a cell half as likely to fail
    gets twice the tasks, apportioned with D'Hondt (capacity-capped).
    """
    weights = [1.0 / q if q > 0 else math.inf for q in ctx.q_cell]
    caps = [c.hosts for c in ctx.topology.cells]
    return _apportion(total, weights, caps, ctx.cell_rank)


def hrf_placement(ctx, total):
    """Highest-Reliability-First (Paper VI §5.2): fill the most reliable
    cells to capacity first."""
    vector = [0] * len(ctx.topology.cells)
    left = total
    for c in sorted(range(len(vector)), key=lambda c: ctx.cell_rank[c]):
        vector[c] = min(left, ctx.topology.cells[c].hosts)
        left -= vector[c]
    if left:
        raise PlanError('not enough hosts for %d tasks' % total)
    return vector


# -- planners -----------------------------------------------------------------

class Step(collections.namedtuple(
        'Step', 'stage network_failures power_failures extra value met')):
    """One reliability evaluation of a planner: ``stage`` is 'root',
    'node' (a Die-Hard (i, j) tree node), 'bisect', 'trim' or 'search'."""


class Plan(collections.namedtuple(
        'Plan', 'algorithm tasks extra placement reliability target hours '
                'trace')):
    """A planner's result.

    ``extra``: n, the extra tasks; ``placement``: ``{(network, power):
    tasks}`` for the used cells (``K + n`` tasks in all);
    ``reliability``: the :class:`Reliability` S(x) of that placement;
    ``target``: S_min; ``hours``: T; ``trace``: tuple of :class:`Step`.
    """

    @property
    def met(self):
        """Whether S(x) (its lower bound) reaches the target."""
        return self.reliability.value >= self.target

    @property
    def total(self):
        return self.tasks + self.extra

    @property
    def affinity_score(self):
        return affinity_score(self.placement.values())

    def per_network_domain(self):
        """``{network domain: tasks}`` for the used domains."""
        return _sum_by(self.placement, 0)

    def per_power_domain(self):
        """``{power domain: tasks}`` for the used domains."""
        return _sum_by(self.placement, 1)


def _sum_by(placement, position):
    out = collections.OrderedDict()
    for key, x in placement.items():
        out[key[position]] = out.get(key[position], 0) + x
    return out


def plan(topology, tasks, target, hours, algorithm='diehard', max_extra=None,
         tolerance=DEFAULT_TOLERANCE):
    """Plan ``tasks`` (K) tasks for ``hours`` (T) at reliability ``target``
    (S_min) with one of :data:`ALGORITHMS`.

    :param max_extra: largest n to consider (default: every free host).
    :returns: :class:`Plan`; ``plan.met`` is False when no n up to
        ``max_extra`` reaches the target (the plan then shows the largest n
        tried).
    :raises PlanError: K < 1 or more than the hosts, S_min not in (0, 1),
        T < 0, unknown algorithm.
    """
    planners = {'diehard': plan_diehard, 'proportional': plan_proportional,
                'hrf': plan_hrf}
    if algorithm not in planners:
        raise PlanError('unknown algorithm %r (known: %s)'
                        % (algorithm, ', '.join(ALGORITHMS)))
    return planners[algorithm](topology, tasks, target, hours,
                               max_extra=max_extra, tolerance=tolerance)


def _limit(ctx, max_extra):
    if max_extra is None:
        return ctx.max_extra
    if isinstance(max_extra, bool) or not isinstance(
            max_extra, numbers.Integral) or max_extra < 0:
        raise PlanError('max_extra must be an integer >= 0, got %r'
                        % (max_extra,))
    return min(max_extra, ctx.max_extra)


def _result(ctx, algorithm, extra, vector):
    return Plan(algorithm, ctx.tasks, extra,
                ctx.topology.placement_dict(vector), ctx.evaluate(vector),
                ctx.target, ctx.hours, tuple(ctx.trace))


def _bisect(ctx, family, low, high):
    """Smallest n in (low, high] whose placement meets the target, given
    that ``family(high)`` does and ``family(low)`` does not (low may be
    -1). S grows with n because every family only ever adds tasks."""
    while high - low > 1:
        mid = (low + high) // 2
        if ctx.record('bisect', mid, family(mid)):
            high = mid
        else:
            low = mid
    return high


def plan_diehard(topology, tasks, target, hours, max_extra=None,
                 tolerance=DEFAULT_TOLERANCE):
    """The Die-Hard planner (Paper VI §3, Algorithm 1).

    Walks the decision tree of covered failures (i network, j power): from
    (0, 1) it expands along the network branch (1, 0), (2, 0), ... when
    covering one power failure reaches S_min, else along the power branch
    (0, 2), (0, 3), ... At each node n is Lemma 2's n = ceil(K·i/(R−i))
    (resp. W, j) and the K + n tasks are spread evenly over the network
    (resp. power) domains, the surplus trimmed from the least reliable ones.
    The first node reaching S_min and the last one below it bracket n,
    which is then bisected; finally single tasks are trimmed from the least
    reliable domains while S_min still holds (§3.2).

    See :func:`plan` for the parameters and errors.
    """
    ctx = _Context(topology, tasks, target, hours, tolerance)
    limit = _limit(ctx, max_extra)
    network = _Family(ctx, 'network')
    if ctx.record('root', 0, network(0), 0, 0):
        return _result(ctx, 'diehard', 0, network(0))
    found = _walk(ctx, network, _Family(ctx, 'power'), limit)
    if found is None:
        # No tree node reached S_min within the limit: fall back to the
        # smallest n of the even network placement, if any.
        return _search(ctx, 'diehard', network, limit, start=network.failing)
    family, low, high = found
    extra = _bisect(ctx, family, low, high)
    extra, vector = _trim(ctx, extra, family(extra), family.level)
    return _result(ctx, 'diehard', extra, vector)


class _Family(object):
    """Die-Hard's even placements over one level, by extra task count."""

    def __init__(self, ctx, level):
        self.ctx, self.level = ctx, level
        self.failing = -1  # largest n known to miss the target

    def __call__(self, extra):
        return spread_placement(self.ctx, self.ctx.tasks + extra, self.level)

    def visit(self, stage, extra, i, j):
        met = self.ctx.record(stage, extra, self(extra), i, j)
        if not met:
            self.failing = max(self.failing, extra)
        return met


def _domain_count(ctx, level):
    groups, _ = _level_units(ctx, level)
    return sum(1 for g in groups
               if any(ctx.topology.cells[c].hosts for c in g))


def _walk(ctx, network, power, limit):
    """Algorithm 1's tree walk. Returns (family, low, high) bracketing n,
    or None when no node up to ``limit`` extra tasks reaches the target."""
    network.failing = 0  # the root missed the target
    R, W = _domain_count(ctx, 'network'), _domain_count(ctx, 'power')
    power_n = None
    if W >= 2:
        power_n = min(lemma_extra_tasks(ctx.tasks, W, 1), limit)
        if not power.visit('node', power_n, 0, 1):
            return _power_branch(ctx, power, W, limit)
    for i in range(1, R):
        n = min(lemma_extra_tasks(ctx.tasks, R, i), limit)
        if power_n is not None and n >= power_n:
            break
        if network.visit('node', n, i, 0):
            return network, network.failing, n
        if n == limit:
            return None
    if power_n is None:
        return None
    return power, power.failing, power_n


def _power_branch(ctx, power, W, limit):
    previous = lemma_extra_tasks(ctx.tasks, W, 1)
    for j in range(2, W):
        n = min(lemma_extra_tasks(ctx.tasks, W, j), limit)
        if n == previous:
            return None
        if power.visit('node', n, 0, j):
            return power, power.failing, n
        previous = n
    return None


def _trim(ctx, extra, vector, level):
    """Remove single tasks from the least reliable non-empty domain (its
    least reliable cell) while the target still holds (§3.2)."""
    groups, probs = _level_units(ctx, level)
    order = sorted(range(len(groups)), key=lambda u: (-probs[u], -u))
    vector = list(vector)
    while extra > 0:
        domain = next(u for u in order if any(vector[c] for c in groups[u]))
        cell = max((c for c in groups[domain] if vector[c]),
                   key=lambda c: ctx.cell_rank[c])
        candidate = list(vector)
        candidate[cell] -= 1
        if not ctx.record('trim', extra - 1, candidate):
            break
        vector, extra = candidate, extra - 1
    return extra, vector


def _search(ctx, algorithm, family, limit, start=0):
    """Smallest n <= limit meeting the target for a family of placements
    that only adds tasks as n grows: gallop from ``start`` (a failing n, or
    0), then bisect."""
    if start == 0 and ctx.record('search', 0, family(0)):
        return _result(ctx, algorithm, 0, family(0))
    low, high = start, max(1, 2 * start)
    while True:
        high = min(high, limit)
        if ctx.record('search', high, family(high)):
            break
        if high == limit:
            return _result(ctx, algorithm, high, family(high))
        low, high = high, high * 2
    extra = _bisect(ctx, family, low, high)
    return _result(ctx, algorithm, extra, family(extra))


def plan_proportional(topology, tasks, target, hours, max_extra=None,
                      tolerance=DEFAULT_TOLERANCE):
    """The Proportional baseline (Paper VI §5.2): the smallest n whose
    :func:`proportional_placement` reaches S_min. See :func:`plan`."""
    ctx = _Context(topology, tasks, target, hours, tolerance)
    return _search(ctx, 'proportional',
                   lambda n: proportional_placement(ctx, tasks + n),
                   _limit(ctx, max_extra))


def plan_hrf(topology, tasks, target, hours, max_extra=None,
             tolerance=DEFAULT_TOLERANCE):
    """The Highest-Reliability-First baseline (Paper VI §5.2): the smallest
    n whose :func:`hrf_placement` reaches S_min. See :func:`plan`."""
    ctx = _Context(topology, tasks, target, hours, tolerance)
    return _search(ctx, 'hrf', lambda n: hrf_placement(ctx, tasks + n),
                   _limit(ctx, max_extra))


def _check_tasks(tasks):
    if isinstance(tasks, bool) or not isinstance(
            tasks, numbers.Integral) or tasks < 1:
        raise PlanError('tasks (K) must be an integer >= 1, got %r'
                        % (tasks,))


def _check_hours(hours):
    if (isinstance(hours, bool) or not isinstance(hours, numbers.Real)
            or not math.isfinite(hours) or hours < 0):
        raise PlanError('hours (T) must be a finite number >= 0, got %r'
                        % (hours,))
