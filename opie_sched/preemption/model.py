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
"""The dual host state of the preemptible-instances scheduler.

Terms follow López García et al., "An efficient cloud scheduler design
supporting preemptible instances" (Future Generation Computer Systems, 2019),
§3: every host has a **full state**, in which every instance counts, and a
**normal state**, in which preemptible instances do not count. Normal requests
are admitted on the normal state (Placement enforces it in Nova), preemptible
requests on the full state; ranking always uses the full state; a normal
instance admitted on a host whose full state is over capacity makes the
cheapest preemptible instances of that host the *victims*.

This module has no Nova imports: the scheduler plugins, the reconciler, the
what-if CLI and the simulator all build these objects from their own source.
"""

import dataclasses
import datetime
import typing as ty

#: Units of the three dimensions, in :class:`Resources` order.
DIMENSIONS = ('vcpus', 'memory_mb', 'disk_gb')
UNITS = {'vcpus': 'vCPU', 'memory_mb': 'MB', 'disk_gb': 'GB'}


_new = tuple.__new__


class Resources(ty.NamedTuple):
    """An amount of the three scheduled resources.

    :param vcpus: virtual CPUs (vCPU); may be fractional after an
        allocation ratio is applied.
    :param memory_mb: RAM in MB.
    :param disk_gb: local disk in GB.

    Values may be negative where they mean a deficit (a host whose full
    state is over capacity has negative free resources).
    """

    vcpus: float = 0
    memory_mb: float = 0
    disk_gb: float = 0

    # Written out for the three dimensions: these run for every host of
    # every scheduling request, and generator forms cost several times
    # more.
    def __add__(self, other):
        a0, a1, a2 = self
        b0, b1, b2 = other
        return _new(Resources, (a0 + b0, a1 + b1, a2 + b2))

    def __sub__(self, other):
        a0, a1, a2 = self
        b0, b1, b2 = other
        return _new(Resources, (a0 - b0, a1 - b1, a2 - b2))

    def fits_in(self, other):
        """True when every dimension of ``self`` is <= ``other``'s."""
        a0, a1, a2 = self
        b0, b1, b2 = other
        return a0 <= b0 and a1 <= b1 and a2 <= b2

    def clip_negative(self):
        """The same amounts with negative dimensions set to 0."""
        a0, a1, a2 = self
        return _new(Resources, (max(a0, 0), max(a1, 0), max(a2, 0)))

    def is_zero(self):
        a0, a1, a2 = self
        return a0 <= 0 and a1 <= 0 and a2 <= 0

    @classmethod
    def total(cls, items):
        acc = cls()
        for item in items:
            acc = acc + item
        return acc


ZERO = Resources()


@dataclasses.dataclass(frozen=True)
class InstanceInfo:
    """What the preemption phase needs to know of one instance.

    :param uuid: instance UUID (str).
    :param resources: the :class:`Resources` its flavor holds on the host.
    :param preemptible: True for a preemptible instance (flavor extra spec
        ``opie:preemptible=true``), False for a normal one. Normal instances
        are never victims.
    :param launched_at: when it started running (timezone-aware datetime,
        UTC), or None when it has not started yet; cost modules treat a
        missing value as "started now" (runtime 0 s).
    :param name: display name, for reports only.
    :param project_id: owner project, for reports and notifications.
    :param leaving: True when it is already being preempted or deleted; its
        resources are about to be released, so it is not a candidate victim
        and does not count as used in :meth:`HostView.projected_used`.
    :param pinned: True when its owner is moving it (a resize, migration
        or ``VERIFY_RESIZE``: :mod:`opie_sched.preemption.ownership`): it
        holds its room and is never a candidate victim.
    """

    uuid: str
    resources: Resources
    preemptible: bool
    launched_at: ty.Optional[datetime.datetime] = None
    name: str = ''
    project_id: str = ''
    leaving: bool = False
    pinned: bool = False

    def runtime_seconds(self, now):
        """Seconds since ``launched_at`` at ``now`` (>= 0)."""
        if self.launched_at is None:
            return 0.0
        return max((now - self.launched_at).total_seconds(), 0.0)


@dataclasses.dataclass
class HostView:
    """The dual state of one host (a compute node).

    :param name: host name (the compute node's hypervisor hostname).
    :param capacity: schedulable capacity in Placement's model:
        ``(total − reserved) × allocation ratio`` per dimension (vCPU, MB,
        GB).
    :param used: full-state usage, every instance (every allocation)
        counted, host reservations not (they are off the capacity), per
        dimension.
    :param instances: the instances on the host (:class:`InstanceInfo`).
    """

    name: str
    capacity: Resources
    used: Resources
    instances: list = dataclasses.field(default_factory=list)

    @property
    def full_free(self):
        """Free resources in the full state (negative when overcommitted)."""
        return self.capacity - self.used

    @property
    def preemptible_instances(self):
        """Preemptible instances that could still be chosen as victims
        (neither leaving nor pinned by their owner's move).
        """
        return [i for i in self.instances
                if i.preemptible and not i.leaving and not i.pinned]

    @property
    def leaving_resources(self):
        """Resources held by instances already on their way out."""
        return Resources.total(i.resources for i in self.instances
                               if i.leaving)

    def projected_free(self):
        """Full-state free resources once leaving instances are gone."""
        return self.full_free + self.leaving_resources

    def reclaimable_free(self):
        """Full-state free resources once leaving instances are gone and
        every candidate victim (:attr:`preemptible_instances`) is
        terminated: the most preemption can make room for on this host.
        """
        return self.projected_free() + Resources.total(
            i.resources for i in self.preemptible_instances)

    def normal_free(self):
        """Free resources in the normal state (preemptibles not counted)."""
        pre = Resources.total(i.resources for i in self.instances
                              if i.preemptible)
        return self.full_free + pre

    def deficit(self, request=ZERO):
        """What preemption must free so that ``request`` fits.

        :param request: :class:`Resources` still to be placed on the host
            (ZERO when the request has already been consumed into ``used``).
        :returns: :class:`Resources`, 0 in every dimension that already fits.
        """
        return (request - self.projected_free()).clip_negative()

    def fits(self, request=ZERO):
        return self.deficit(request).is_zero()
