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
"""Die-Hard's failure model: hosts in network and power failure domains.

Thesis Paper VI (Sedaghat et al., "Die-Hard: Reliable Scheduling to
Survive Correlated Failures in Cloud Data Centers"), §2.1: hosts belong to
one network failure domain and one power failure domain. A domain is served
by one or more redundant nodes (ToR switches, PDUs) that fail independently
after an exponentially distributed time (rate λ per hour) and are never
repaired; a domain is down once all its nodes have failed. A *combined
domain* (a "cell" here, F_l in the thesis) is the set of hosts sharing a
network domain and a power domain; its tasks run while both its domains
are up. Host failures are not part of the thesis' reliability function
(eq. 4) and are not modelled.

This module holds the :class:`Topology` (built in code, from a YAML file
with field-by-field validation, or as the thesis' evaluation cluster) and
the package's errors. Units: failure rates per hour, durations in hours.
"""

import collections
import collections.abc
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
