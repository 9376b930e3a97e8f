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
"""Pluggable utilisation sources: how busy a host really is.

The RPM score (thesis Paper IV §4.3.1) needs, per host, what the deployed
VMs *request* (to get Unreq), what they *actually use* (to get Free, the
efficiency and the imbalance) and a short history of utilisation (R_v, the
coefficient of variation over the last 10 samples, and the triggers).

A source is a class in the stevedore namespace ``opie_sched.utilisation``
(``[opie_rpm] utilisation_source``):

* ``allocations`` — :class:`AllocationSource`: "used" = what the flavors of
  the host's instances hold, from the HostState (the ComputeNode record).
  Always available; then Free = Unreq and R_o is 0 or 1.
* ``metrics`` — :class:`ComputeMetricsSource`: CPU from nova's compute
  monitor metric ``cpu.percent`` in ``HostState.metrics`` (enable
  ``[DEFAULT] compute_monitors = cpu.virt_driver`` on the computes); RAM
  and hosts without the metric fall back to allocations.

Operators add a Prometheus or Gnocchi source by subclassing
:class:`UtilisationSource` and registering an entry point; such a source
should override :meth:`UtilisationSource.usages` to fetch all candidate
hosts in one query, and may override :meth:`UtilisationSource.history`.

History without a database: :class:`UsageHistory` is an in-process ring
buffer keyed by ``(host, node)``, fed from the HostStates every scheduling
request sees (at most one sample per host every ``sample_interval``
seconds; the metrics source records a sample only when the metric's
timestamp changes). It is per scheduler process, starts empty after a
restart, and only knows hosts that requests have looked at; until a host
has two samples its R_v is 0.

Units: vCPU and MB; utilisations are fractions of capacity.
"""

import abc
import collections
import threading
import time

from oslo_log import log as logging

from opie_sched import plugins

LOG = logging.getLogger(__name__)

NAMESPACE = 'opie_sched.utilisation'
#: Nova compute monitor metric (integer percent) read by the metrics source.
CPU_METRIC = 'cpu.percent'


class UtilisationError(Exception):
    """A source that cannot be loaded."""


class Usage(collections.namedtuple(
        'Usage', 'cpu_capacity cpu_requested cpu_used '
                 'ram_capacity ram_requested ram_used')):
    """One host's CPU (vCPU) and RAM (MB): capacity (total × allocation
    ratio), requested by deployed instances, actually used.
    """

    @property
    def cpu_unrequested(self):
        """Unreq of Paper IV eq. 7 for CPU: capacity − requested."""
        return self.cpu_capacity - self.cpu_requested

    @property
    def ram_unrequested(self):
        return self.ram_capacity - self.ram_requested

    @property
    def cpu_free(self):
        """Free of Paper IV eq. 7 for CPU: capacity − actually used."""
        return self.cpu_capacity - self.cpu_used

    @property
    def ram_free(self):
        return self.ram_capacity - self.ram_used

    @property
    def cpu_util(self):
        """Actually used CPU / capacity (0 for a zero capacity)."""
        return _ratio(self.cpu_used, self.cpu_capacity)

    @property
    def ram_util(self):
        return _ratio(self.ram_used, self.ram_capacity)


def _ratio(num, den):
    return float(num) / den if den else 0.0


def allocation_usage(host_state):
    """:class:`Usage` of a HostState with used = requested (the flavors'
    claims, as the resource tracker counts them).
    """
    cpu_cap = host_state.vcpus_total * host_state.cpu_allocation_ratio
    ram_cap = (host_state.total_usable_ram_mb *
               host_state.ram_allocation_ratio)
    cpu_req = host_state.vcpus_used
    ram_req = host_state.total_usable_ram_mb - host_state.free_ram_mb
    return Usage(cpu_cap, cpu_req, cpu_req, ram_cap, ram_req, ram_req)


class UsageHistory(object):
    """Thread-safe ring buffers of ``(cpu_util, ram_util)`` per host.

    :param length: samples kept per host.
    :param clock: ``time.monotonic``-like callable (seconds).
    """

    def __init__(self, length=10, clock=time.monotonic):
        self.length = length
        self._clock = clock
        self._lock = threading.Lock()
        self._samples = {}
        self._stamps = {}

    def record(self, key, cpu_util, ram_util, interval=0.0, stamp=None):
        """Append a sample for ``key`` unless the last one is younger than
        ``interval`` seconds, or carries the same ``stamp`` (e.g. the
        metric timestamp). Returns True when recorded.
        """
        now = self._clock()
        with self._lock:
            buf = self._samples.get(key)
            if buf is None or buf.maxlen != self.length:
                buf = collections.deque(buf or (), maxlen=self.length)
                self._samples[key] = buf
            last_time, last_stamp = self._stamps.get(key, (None, None))
            if buf and stamp is not None and stamp == last_stamp:
                return False
            if buf and last_time is not None and now - last_time < interval:
                return False
            buf.append((float(cpu_util), float(ram_util)))
            self._stamps[key] = (now, stamp)
            return True

    def samples(self, key):
        """``([cpu_util, ...], [ram_util, ...])``, oldest first."""
        with self._lock:
            buf = list(self._samples.get(key, ()))
        return [c for c, _ in buf], [r for _, r in buf]

    def clear(self):
        with self._lock:
            self._samples.clear()
            self._stamps.clear()


class UtilisationSource(metaclass=abc.ABCMeta):
    """Base of utilisation sources.

    :param store: the :class:`UsageHistory` to feed (one per process by
        default, :data:`HISTORY`, shared by every source instance).
    :param sample_interval: seconds between two kept samples of a host.
    """

    def __init__(self, store=None, sample_interval=0.0):
        self.store = store if store is not None else HISTORY
        self.sample_interval = sample_interval

    @abc.abstractmethod
    def usage(self, host_state):
        """:class:`Usage` of one HostState (no I/O per host)."""

    def sample_stamp(self, host_state):
        """An identity of the measurement behind :meth:`usage` (None: use
        ``sample_interval`` only).
        """
        return None

    def usages(self, host_states):
        """``{(host, node): Usage}`` for the candidate hosts, recording one
        history sample per host. Override to fetch in bulk.
        """
        found = {}
        for hs in host_states:
            usage = self.usage(hs)
            key = (hs.host, hs.nodename)
            found[key] = usage
            self.store.record(key, usage.cpu_util, usage.ram_util,
                              self.sample_interval, self.sample_stamp(hs))
        return found

    def history(self, host_state):
        """``(cpu_samples, ram_samples)`` of the host, oldest first."""
        return self.store.samples((host_state.host, host_state.nodename))


class AllocationSource(UtilisationSource):
    """Actually used = allocated: the host state's used vCPUs and RAM
    (every instance's flavor). The fallback when nothing measures load.
    """

    description = ('What the flavors of the instances hold, from the '
                   'HostState (nothing measured).')

    def usage(self, host_state):
        return allocation_usage(host_state)


class ComputeMetricsSource(UtilisationSource):
    """CPU actually used from nova's compute monitor metric ``cpu.percent``
    (``HostState.metrics``, an integer percent of the physical CPUs):
    used vCPUs = percent / 100 × vcpus_total. RAM (nova has no memory
    monitor) and hosts without the metric: as :class:`AllocationSource`.
    """

    description = ('CPU from nova\'s compute monitor metric cpu.percent '
                   '(enable [DEFAULT] compute_monitors = cpu.virt_driver); '
                   'RAM from allocations.')

    def _metric(self, host_state):
        metrics = getattr(host_state, 'metrics', None)
        for metric in (getattr(metrics, 'objects', None) or metrics or ()):
            if getattr(metric, 'name', None) == CPU_METRIC:
                return metric
        return None

    def usage(self, host_state):
        base = allocation_usage(host_state)
        metric = self._metric(host_state)
        if metric is None:
            return base
        used = max(0.0, metric.value / 100.0) * host_state.vcpus_total
        return base._replace(cpu_used=used)

    def sample_stamp(self, host_state):
        metric = self._metric(host_state)
        return getattr(metric, 'timestamp', None) if metric else None


#: The process-wide history shared by the sources.
HISTORY = UsageHistory()

_lock = threading.Lock()
_cache = {}


def load_source(name, history_length=10, sample_interval=0.0):
    """The source registered as ``name`` in ``opie_sched.utilisation``
    (cached per arguments); resizes the shared history to
    ``history_length``.

    :raises UtilisationError: no such entry point, or it fails to load.
    """
    key = (name, history_length, sample_interval)
    with _lock:
        HISTORY.length = history_length
        source = _cache.get(key)
        if source is None:
            try:
                source = plugins.load(
                    NAMESPACE, name, kind='utilisation source',
                    kwargs={'sample_interval': sample_interval})
            except plugins.PluginError as exc:
                raise UtilisationError(str(exc)) from exc
            _cache.clear()
            _cache[key] = source
    return source
