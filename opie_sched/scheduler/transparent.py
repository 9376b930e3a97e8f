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
"""Transparent normal placement (``[opie_preemption]
transparent_normal_placement``).

Placement already admits a normal request on the *normal state* (its
standard resource classes count normal instances only), but Nova's filters
and weighers read the ``HostState``, which is built from the ComputeNode
record and so counts every instance, preemptible ones included (the *full
state*). Where a normal server lands, and hence how the normal state is
packed for the next normal request, then depends on the preemptible
instances.

With the option on, a normal request is filtered and weighed on
:class:`NormalHostState` views: each HostState with the usage of the
preemptible instances on that host taken out, as the same host would have
it on a cloud without preemptible instances, and opie's full-state weighers
(:mod:`opie_sched.scheduler.weights`) weigh every host alike. The manager
claims and chooses victims on the real HostState afterwards (the
preemption phase, unchanged). Preemptible requests keep the full state.

What a view takes out, per preemptible instance the host's ComputeNode
counts (the request's bulk-loaded instances,
:meth:`opie_sched.scheduler.request_view.RequestView.loaded_instances`, one
query per cell, never one per host, for the hosts where Placement shows
preemptible usage):

* ``vcpus_used``: its flavor's vCPUs;
* ``free_ram_mb``: its flavor's MB are given back;
* ``disk_mb_used`` and ``free_disk_mb``: its local disk as Nova's resource
  tracker counts it (root unless it boots from a volume, ephemeral, swap),
  in MB; ``free_disk_mb`` is nova's minimum of the accounted free disk and
  the hypervisor's ``disk_available_least``, so the preemptible disks are
  taken to be fully allocated on the hypervisor too;
* ``num_instances``: 1; ``num_io_ops``: 1 while it is building, rebuilding,
  resizing, migrating, being snapshotted, backed up, rescued or unshelved
  (nova's ``io_workload``), as its record says now.

Limits (where a view can differ from the cloud without preemptible
instances):

* nova's ComputeNode counts an instance's I/O state as the resource
  tracker last saw it (at its claim, then at each periodic update,
  ``[DEFAULT] update_resources_interval``): a preemptible instance built
  since the last update may still count as building in ``num_io_ops``;
* between a preemptible instance's deletion and the resource tracker's
  next update of the ComputeNode (milliseconds), the ComputeNode still
  counts it and the view, which no longer loads it, leaves it in;
* a preemptible instance soft-deleted by its owner is not loaded and keeps
  counting;
* the per-project and per-state counters in ``HostState.stats``, the
  hypervisor's other reports and ``HostState.instances`` (server group
  members) are left as they are.
"""

import collections

from oslo_log import log as logging

from nova.compute import task_states
from nova.compute import vm_states
import nova.conf

from opie_sched import conf as opie_conf
from opie_sched.scheduler import ownership
from opie_sched.scheduler import request_view
from opie_sched.scheduler import reservations

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF
opie_conf.register_opts(CONF)

#: Task states nova's ``io_workload`` counts (nova.compute.stats).
_IO_TASK_STATES = frozenset([
    task_states.RESIZE_MIGRATING, task_states.REBUILDING,
    task_states.RESIZE_PREP, task_states.IMAGE_SNAPSHOT,
    task_states.IMAGE_BACKUP, task_states.RESCUING, task_states.UNSHELVING])


#: What the preemptible instances of one host hold, as its ComputeNode
#: counts them: vCPU, MB, disk MB, instances, I/O operations.
PreemptibleUsage = collections.namedtuple(
    'PreemptibleUsage', 'vcpus memory_mb disk_mb instances io_ops')

NO_USAGE = PreemptibleUsage(0, 0, 0, 0, 0)


def enabled():
    """True when ``[opie_preemption] transparent_normal_placement`` is on."""
    return bool(CONF.opie_preemption.transparent_normal_placement)


def applies(spec_obj):
    """True when a RequestSpec is to be filtered and weighed on the normal
    state: the option is on, the request's flavor is not preemptible and
    the request is not one that must fit the full state (a move that may
    not preempt, :func:`opie_sched.scheduler.manager.preemption_policy`:
    placed on the normal state it could land where only victims would make
    room, and then be refused).
    """
    if not enabled() or ownership.request_is_preemptible(spec_obj):
        return False
    view = request_view.current_view()
    return view is None or not view.decision().fit_full_state


def instance_usage(inst):
    """:class:`PreemptibleUsage` of one instance (an ``InstanceRow`` or
    ``Instance``), as nova's resource tracker counts it on its host: the
    flavor's vCPU and MB, local disk = root (none when it boots from a
    volume) + ephemeral GB + swap MB, in MB.
    """
    flavor = inst.flavor
    root_gb = 0 if ownership.instance_boots_from_volume(inst) else (
        flavor.root_gb or 0)
    disk_mb = ((root_gb + (flavor.ephemeral_gb or 0)) * 1024
               + (getattr(flavor, 'swap', 0) or 0))
    io = int(inst.vm_state == vm_states.BUILDING
             or inst.task_state in _IO_TASK_STATES)
    return PreemptibleUsage(flavor.vcpus or 0, flavor.memory_mb or 0,
                            disk_mb, 1, io)


def preemptible_usage(instances):
    """Sum of :func:`instance_usage` over the preemptible instances of a
    list (the instances of one host); :data:`NO_USAGE` when there are none.
    """
    total = [0, 0, 0, 0, 0]
    for inst in instances:
        # the ownership model: a server its owner is moving holds its room
        # (it is never a victim), so it is no room a normal request may
        # count on
        if (not ownership.flavor_is_preemptible(inst.flavor)
                or ownership.instance_is_pinned(inst)):
            continue
        for i, value in enumerate(instance_usage(inst)):
            total[i] += value
    return PreemptibleUsage(*total)


class NormalHostState(object):
    """A nova ``HostState`` as the same host would be on a cloud without
    preemptible instances: the usage fields below have the preemptible
    instances' :class:`PreemptibleUsage` taken out (never below zero used,
    never above the total free); every other attribute, method and
    assignment goes to the real HostState, so that what nova's filters
    write (``limits``, ``allocation_candidates``) and what a request
    consumes stay on it and the view follows.

    :param real: the HostState.
    :param usage: :class:`PreemptibleUsage` of its preemptible instances.
    """

    def __init__(self, real, usage):
        object.__setattr__(self, 'real', real)
        object.__setattr__(self, 'preemptible', usage)

    def __getattr__(self, name):
        return getattr(self.real, name)

    def __setattr__(self, name, value):
        setattr(self.real, name, value)

    def __repr__(self):
        return '%r (normal state)' % (self.real,)

    @property
    def vcpus_used(self):
        """vCPU used by normal instances."""
        return max(self.real.vcpus_used - self.preemptible.vcpus, 0)

    @property
    def free_ram_mb(self):
        """MB free with no preemptible instance."""
        return min(self.real.free_ram_mb + self.preemptible.memory_mb,
                   self.real.total_usable_ram_mb)

    @property
    def disk_mb_used(self):
        """Local disk MB used by normal instances."""
        return max(self.real.disk_mb_used - self.preemptible.disk_mb, 0)

    @property
    def free_disk_mb(self):
        """Local disk MB free with no preemptible instance."""
        return min(self.real.free_disk_mb + self.preemptible.disk_mb,
                   self.real.total_usable_disk_gb * 1024)

    @property
    def num_instances(self):
        """Normal instances on the host."""
        return max(self.real.num_instances - self.preemptible.instances, 0)

    @property
    def num_io_ops(self):
        """I/O-heavy operations of normal instances."""
        return max(self.real.num_io_ops - self.preemptible.io_ops, 0)


def is_normal_view(host_states):
    """True when the HostStates being weighed are :class:`NormalHostState`
    views (the request is placed transparently): opie's full-state weighers
    then weigh every host alike.
    """
    return any(isinstance(hs, NormalHostState) for hs in host_states)


def normal_views(host_states, spec_obj):
    """``[NormalHostState]`` of HostStates, in their order, from the
    request's bulk-loaded instances (one query per cell for all of them).

    Only hosts whose Placement provider summary shows preemptible usage
    (or that have no summary) are loaded: the others hold no preemptible
    instance, and their view is the HostState itself, so a cloud with few
    preemptible servers pays for few rows.
    """
    host_states = list(host_states)
    view = request_view.view_for(spec_obj)
    summaries = getattr(view, 'summaries', None) or {}
    needy = [hs for hs in host_states if reservations.summary_has_preemptible(
        summaries.get(hs.uuid))]
    loaded = (view.loaded_instances(needy, server_metadata=False)
              if needy else {})
    return [NormalHostState(
        hs, preemptible_usage(loaded.get((hs.host, hs.nodename), ())))
        for hs in host_states]


def sorted_hosts(sort, spec_obj, host_states, index):
    """Nova's ``_get_sorted_hosts`` for a request, on the normal state when
    :func:`applies`.

    :param sort: nova's ``SchedulerManager._get_sorted_hosts`` (bound):
        ``sort(spec_obj, host_states, index)`` filters, weighs and orders.
    :returns: the real HostStates in the order ``sort`` chose (the claim
        and the preemption phase work on the full state).

    When the views cannot be built (a database error), the request is
    sorted on the full state and the error is logged: scheduling goes on.
    """
    if not applies(spec_obj):
        return sort(spec_obj, host_states, index)
    host_states = list(host_states)
    try:
        views = normal_views(host_states, spec_obj)
    except Exception:
        LOG.exception('Could not build the normal state of %d hosts; this '
                      'normal request is filtered and weighed on the full '
                      'state', len(host_states))
        return sort(spec_obj, host_states, index)
    return [hs.real if isinstance(hs, NormalHostState) else hs
            for hs in sort(spec_obj, views, index)]
