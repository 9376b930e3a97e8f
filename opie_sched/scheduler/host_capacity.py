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
"""The full state of a host in Placement's capacity model, from each
source the scheduler has: a provider summary of ``GET
/allocation_candidates`` (:func:`summary_state`), nova's ``HostState``
(:func:`full_state`, with the disk a request consumed on it,
:func:`note_consumed`) and a ``ComputeNode`` record with its provider's
reservations (:func:`compute_node_state`, :class:`ReservedCache`).

The capacity model of every full-state judgement (filter, weighers,
alternates, preemption decision, reconciler screen) is Placement's:
capacity = (total − reserved) × allocation ratio, used = what the
consumers' allocations hold (reserved is never counted as used).
"""

import threading
import time

from oslo_log import log as logging

import nova.conf

from opie_sched.common import flavors
from opie_sched import conf as opie_conf
from opie_sched.preemption import model
from opie_sched.scheduler import ownership

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF
opie_conf.register_opts(CONF)

_CONSUMED = '_opie_consumed_disk'


def note_consumed(host_state, spec_obj, before):
    """Record the disk a request consumed on a HostState.

    Nova's ``HostState.consume_from_request`` lowers ``free_disk_mb`` but
    never raises ``disk_mb_used``, which :func:`full_state` reads; the
    consumed GB are kept on the HostState until nova refreshes it from the
    compute node (each consumption stamps ``HostState.updated``; a refresh
    replaces it with the compute node's ``updated_at``).

    :param before: :func:`consumed_disk_gb` of the host state taken just
        before ``consume_from_request``.
    """
    gb = before + ownership.request_resources(spec_obj).disk_gb
    setattr(host_state, _CONSUMED, (host_state.updated, gb))


def consumed_disk_gb(host_state):
    """GB consumed on a HostState by requests since nova last refreshed it
    (see :func:`note_consumed`).
    """
    mark, gb = getattr(host_state, _CONSUMED, (None, 0))
    if mark is None or mark != host_state.updated:
        return 0
    return gb


def summary_state(summary):
    """``(capacity, used)`` of a provider summary of ``GET
    /allocation_candidates`` (Placement's own figures, as nova fetched them
    for the request), or None when VCPU or MEMORY_MB is missing (a
    provider without a ``DISK_GB`` inventory, whose disks are volumes, has
    a disk capacity of 0 GB: Placement admits no disk claim there).

    capacity = (total − reserved) × allocation ratio of VCPU, MEMORY_MB and
    DISK_GB (Placement's ``capacity``); used = the standard plus the
    preemptible classes' ``used`` (every consumer, normal and preemptible,
    claims in flight included). Units: vCPU, MB, GB.
    """
    resources = (summary or {}).get('resources') or {}
    try:
        capacity = model.Resources(*(
            resources[rc]['capacity'] if rc in resources or rc != 'DISK_GB'
            else 0 for rc in flavors.STANDARD_CLASSES))
    except (KeyError, TypeError):
        return None
    return capacity, ownership.amounts_resources(
        {rc: (item or {}).get('used') for rc, item in resources.items()})


def _conf_reserved():
    """The host reservations of this process's nova.conf (vCPU, MB, GB):
    the fallback when Placement's inventories are not at hand.
    """
    return model.Resources(CONF.reserved_host_cpus,
                           CONF.reserved_host_memory_mb,
                           CONF.reserved_host_disk_mb / 1024.0)


def full_state(host_state, view=None):
    """``(capacity, used)`` of a HostState's full state, in Placement's
    capacity model (see :func:`summary_state`).

    In a request scheduled by opie-scheduler (``view``: the
    :class:`~opie_sched.scheduler.request_view.RequestView` of the
    request, which callers pass explicitly, usually
    :func:`~opie_sched.scheduler.request_view.current_view`; it holds the
    provider summaries nova fetched for the request) the figures are the
    provider summary's, plus what this request claimed on the host since
    (:meth:`~opie_sched.scheduler.request_view.RequestView.note_claim`):
    no extra database or HTTP call. Otherwise (the stock manager, no
    view, a host without a summary) they come from the HostState, with
    the host reservations of this process's nova.conf taken off the
    capacity and the usage (the ComputeNode record counts them as used):
    capacity = (total − reserved) × ratio; used = ``vcpus_used``,
    ``total − free`` RAM and ``disk_mb_used`` + the consumed disk (see
    :func:`note_consumed`), less reserved. Free disk is not used because
    nova lowers it to the hypervisor's ``disk_available_least``, which is
    physical space, not
    the flavors' claims. Units: vCPU, MB, GB.
    """
    if view is not None:
        state = view.provider_state(getattr(host_state, 'uuid', None))
        if state is not None:
            return state
    reserved = _conf_reserved()
    capacity = model.Resources(
        (host_state.vcpus_total - reserved[0])
        * host_state.cpu_allocation_ratio,
        (host_state.total_usable_ram_mb - reserved[1])
        * host_state.ram_allocation_ratio,
        (host_state.total_usable_disk_gb - reserved[2])
        * host_state.disk_allocation_ratio)
    used = model.Resources(
        host_state.vcpus_used,
        host_state.total_usable_ram_mb - host_state.free_ram_mb,
        host_state.disk_mb_used / 1024.0 + consumed_disk_gb(host_state))
    return capacity, used - reserved


def compute_node_state(node, reserved=None):
    """``(capacity, used)`` of a ComputeNode record, in Placement's
    capacity model (as :func:`full_state`).

    :param reserved: :class:`~opie_sched.preemption.model.Resources` the
        node's provider reserves (its Placement inventories' ``reserved``,
        see :class:`ReservedCache`); default this process's nova.conf
        ``reserved_host_*``. The ComputeNode record counts them as used;
        they are taken off both sides.
    """
    if reserved is None:
        reserved = _conf_reserved()
    capacity = model.Resources(
        (node.vcpus - reserved[0]) * node.cpu_allocation_ratio,
        (node.memory_mb - reserved[1]) * node.ram_allocation_ratio,
        (node.local_gb - reserved[2]) * node.disk_allocation_ratio)
    used = model.Resources(node.vcpus_used, node.memory_mb_used,
                           node.local_gb_used) - reserved
    return capacity, used


class ReservedCache:
    """The ``reserved`` amounts of compute node providers' standard
    inventories (vCPU, MB, GB), read from Placement once per provider and
    kept for ``ttl`` seconds (and while the node's totals and ratios are
    unchanged): what the reconciler's screen needs to judge a ComputeNode
    record in Placement's capacity model without one HTTP call per host
    per round. A provider Placement cannot answer for falls back to this
    process's nova.conf ``reserved_host_*`` (not cached).
    """

    #: seconds an entry is kept (reservations change when nova-compute is
    #: reconfigured and restarted).
    TTL = 600.0

    def __init__(self, ttl=TTL, clock=None):
        self.ttl = ttl
        self._clock = clock or time.monotonic
        self._entries = {}
        self._lock = threading.Lock()

    @staticmethod
    def _signature(node):
        return (node.vcpus, node.memory_mb, node.local_gb,
                node.cpu_allocation_ratio, node.ram_allocation_ratio,
                node.disk_allocation_ratio)

    def get(self, client, ctx, node):
        """:class:`~opie_sched.preemption.model.Resources` reserved on the
        node's provider (``node.uuid``).
        """
        now = self._clock()
        sig = self._signature(node)
        with self._lock:
            entry = self._entries.get(node.uuid)
        if entry is not None and entry[0] == sig and now < entry[1]:
            return entry[2]
        try:
            resp = client.get(
                '/resource_providers/%s/inventories' % node.uuid,
                version='1.0',
                global_request_id=getattr(ctx, 'global_id', None))
            if resp is None or resp.status_code != 200:
                raise ValueError('answered %s'
                                 % getattr(resp, 'status_code', None))
            inv = resp.json().get('inventories') or {}
            reserved = model.Resources(*(
                (inv.get(rc) or {}).get('reserved', 0)
                for rc in flavors.STANDARD_CLASSES))
        except Exception as exc:
            LOG.warning('Could not read the inventories of provider %s '
                        '(%s); using this host\'s reserved_host_* options',
                        node.uuid, exc)
            return _conf_reserved()
        with self._lock:
            self._entries[node.uuid] = (sig, now + self.ttl, reserved)
        return reserved
