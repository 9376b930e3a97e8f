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
"""Hosts and the VMs placed on them, with per-host sums and accounting.

:class:`Hosts` is the one host model of the simulator. A host has a
capacity in ``d`` resource dimensions (e.g. vCPU, MB, GB; or ECU and GB;
or compute units); a VM has one ``d``-vector per *measure* (e.g. its size;
or its reservation and its current use) and is identified by a dense
integer id, so that scenarios can keep per-VM numpy arrays. For each
measure the model keeps every host's sum over its VMs, updated element by
element on each change (the same float operations whatever the scenario),
or recomputed from scratch by :meth:`Hosts.refresh`.

State changes and what they do:

* :meth:`~Hosts.place` -- an unplaced VM onto a host: the host's sums grow
  by the VM's measures, its VM count by one (the host becomes *active* if
  it was empty); counted in ``moves['placements']``.
* :meth:`~Hosts.remove` -- a placed VM off its host (the reverse);
  ``moves['removals']``.
* :meth:`~Hosts.migrate` -- a placed VM from its host to another:
  removal then placement, counted once in ``moves['migrations']`` (not as
  a placement or removal).
* :meth:`~Hosts.relocate` -- the same state change as a migration, not
  counted: a what-if move that a scenario may undo.

Capacity is not enforced here: what fits is each scenario's rule (its
filters, thresholds, overbooking). Units are the scenario's.
"""

import collections

import numpy as np


class HostsError(ValueError):
    """A state change the model cannot make (message says which)."""


class Hosts:
    """Hosts, VMs, per-host sums of the VMs' measures.

    :param capacity: array-like ``(n_hosts, d)`` (or ``(n_hosts,)`` for
        one dimension), each host's capacity.
    :param measures: names of the per-VM ``d``-vectors summed per host
        (default one, ``'size'``).
    :param zero_when_empty: set a host's sums to exactly 0 when its last VM
        leaves (drops the float residue of many additions and
        subtractions).
    :raises HostsError: no host, or no measure.

    Attributes: ``cap`` ``(n_hosts, d)``; ``sums[measure]`` ``(n_hosts,
    d)``; ``count`` ``(n_hosts,)`` VMs per host; ``active_hosts`` hosts
    with at least one VM; ``host`` ``(n_ids,)`` each VM id's host (-1:
    not placed); ``values[measure]`` ``(n_ids, d)``; ``moves`` a
    :class:`collections.Counter` of placements, removals and migrations.
    The arrays are changed in place (views of their columns stay valid),
    except ``host`` and ``values``, which are reallocated when
    :meth:`register` needs more ids.
    """

    def __init__(self, capacity, measures=('size',), zero_when_empty=False):
        cap = np.array(capacity, dtype=float)
        if cap.ndim == 1:
            cap = cap.reshape(-1, 1)
        if cap.ndim != 2 or cap.shape[0] < 1:
            raise HostsError('capacity must be (n_hosts, d) with n_hosts '
                             '>= 1, got shape %r' % (cap.shape,))
        self.measures = tuple(measures)
        if not self.measures:
            raise HostsError('at least one measure is needed')
        n, d = cap.shape
        self.dims = d
        # Fortran order: a dimension's column is contiguous.
        self.cap = np.asfortranarray(cap)
        self.sums = {m: np.zeros((n, d), order='F') for m in self.measures}
        self.count = np.zeros(n, dtype=np.int64)
        self.active_hosts = 0
        self.zero_when_empty = bool(zero_when_empty)
        self.host = np.full(0, -1, dtype=np.int64)
        self.values = {m: np.zeros((0, d)) for m in self.measures}
        self._used_ids = 0
        self._free_ids = []
        self._on = [dict() for _ in range(n)]
        self.moves = collections.Counter()

    @property
    def n_hosts(self):
        return self.cap.shape[0]

    @property
    def n_placed(self):
        """VMs placed now."""
        return int(self.count.sum())

    # -- VM ids -------------------------------------------------------------

    def _grow(self, need, exact=False):
        size = len(self.host)
        if need <= size:
            return
        new = need if exact else max(need, 2 * size, 16)
        self.host = np.concatenate([self.host, np.full(new - size, -1,
                                                       dtype=np.int64)])
        for m in self.measures:
            self.values[m] = np.concatenate(
                [self.values[m], np.zeros((new - size, self.dims))])

    def _check_values(self, values):
        unknown = set(values) - set(self.measures)
        if unknown:
            raise HostsError('unknown measure(s) %s (known: %s)' % (
                ', '.join(sorted(unknown)), ', '.join(self.measures)))

    def register(self, **values):
        """A new VM id (a freed one is reused) with its measures
        (``measure=d-vector``; a measure not given is 0).

        :raises HostsError: unknown measure.
        """
        self._check_values(values)
        if self._free_ids:
            vm = self._free_ids.pop()
        else:
            vm = self._used_ids
            self._used_ids += 1
            self._grow(self._used_ids)
        for m in self.measures:
            self.values[m][vm] = values.get(m, 0.0)
        return vm

    def register_many(self, count, **values):
        """``count`` new ids ``first .. first+count-1`` (never reused ones),
        each measure an array-like ``(count, d)`` (or ``(count,)`` for one
        dimension); returns the range. The id arrays grow to exactly the
        ids handed out, so that per-VM views of ``host`` and ``values``
        have one entry per VM.

        :raises HostsError: unknown measure or wrong shape.
        """
        self._check_values(values)
        first = self._used_ids
        self._used_ids += count
        self._grow(self._used_ids, exact=True)
        for m in self.measures:
            if m in values:
                arr = np.asarray(values[m], dtype=float).reshape(
                    count, self.dims)
                self.values[m][first:first + count] = arr
        return range(first, first + count)

    def release(self, vm):
        """Free an unplaced VM's id for :meth:`register`.

        :raises HostsError: the VM is placed.
        """
        if self.host[vm] >= 0:
            raise HostsError('vm %d is placed on host %d'
                             % (vm, self.host[vm]))
        self._free_ids.append(vm)

    def ids(self):
        """The ids handed out so far (freed ones included), as a range."""
        return range(self._used_ids)

    # -- state changes ------------------------------------------------------

    def _add(self, vm, host):
        for m in self.measures:
            s, v = self.sums[m], self.values[m][vm]
            for k in range(self.dims):
                s[host, k] = s[host, k] + v[k]
        before = self.count[host]
        self.count[host] = before + 1
        if before == 0:
            self.active_hosts += 1
        self.host[vm] = host
        self._on[host][vm] = None

    def _sub(self, vm):
        host = int(self.host[vm])
        if host < 0:
            raise HostsError('vm %d is not placed' % vm)
        for m in self.measures:
            s, v = self.sums[m], self.values[m][vm]
            for k in range(self.dims):
                s[host, k] = s[host, k] - v[k]
        after = self.count[host] - 1
        self.count[host] = after
        if after == 0:
            self.active_hosts -= 1
            if self.zero_when_empty:
                for m in self.measures:
                    self.sums[m][host] = 0.0
        self.host[vm] = -1
        del self._on[host][vm]
        return host

    def place(self, vm, host):
        """Put unplaced ``vm`` on ``host``.

        :raises HostsError: ``vm`` is already placed, or no such host.
        """
        if self.host[vm] >= 0:
            raise HostsError('vm %d is already on host %d'
                             % (vm, self.host[vm]))
        if not 0 <= host < self.n_hosts:
            raise HostsError('no host %r (0..%d)' % (host, self.n_hosts - 1))
        self._add(vm, host)
        self.moves['placements'] += 1

    def remove(self, vm):
        """Take ``vm`` off its host; returns the host.

        :raises HostsError: ``vm`` is not placed.
        """
        host = self._sub(vm)
        self.moves['removals'] += 1
        return host

    def relocate(self, vm, dst):
        """Move ``vm`` to ``dst`` without counting it; returns the source.

        :raises HostsError: ``vm`` not placed, or no such host.
        """
        if not 0 <= dst < self.n_hosts:
            raise HostsError('no host %r (0..%d)' % (dst, self.n_hosts - 1))
        src = self._sub(vm)
        self._add(vm, dst)
        return src

    def migrate(self, vm, dst):
        """Migrate ``vm`` to ``dst``; returns the source host.

        :raises HostsError: ``vm`` not placed, already on ``dst``, or no
            such host.
        """
        if self.host[vm] == dst:
            raise HostsError('vm %d is already on host %d' % (vm, dst))
        src = self.relocate(vm, dst)
        self.moves['migrations'] += 1
        return src

    def remove_many(self, vms):
        """Take every VM of ``vms`` (ids, all placed) off its host, then
        :meth:`refresh` the sums.

        :raises HostsError: one of them is not placed (nothing changed).
        """
        vms = np.asarray(vms, dtype=np.int64).reshape(-1)
        if (self.host[vms] < 0).any():
            raise HostsError('vm(s) %s not placed'
                             % vms[self.host[vms] < 0].tolist())
        for vm in vms.tolist():
            del self._on[self.host[vm]][vm]
        self.host[vms] = -1
        self.moves['removals'] += len(vms)
        self.refresh()

    def refresh(self):
        """Recompute every host's sums and VM count from the placed VMs
        (numpy ``bincount`` in VM id order): after a scenario changed
        ``values`` of placed VMs in bulk.
        """
        n = self.n_hosts
        on = self.host >= 0
        h = self.host[on]
        for m in self.measures:
            vals = self.values[m][on]
            for k in range(self.dims):
                self.sums[m][:, k] = np.bincount(h, vals[:, k], n)
        self.count[:] = np.bincount(h, minlength=n)
        self.active_hosts = int((self.count > 0).sum())

    # -- queries ------------------------------------------------------------

    def vms_on(self, host):
        """The VM ids on ``host``, in the order they were placed there."""
        return list(self._on[host])

    def is_placed(self, vm):
        return vm < len(self.host) and self.host[vm] >= 0

    def free(self, host, measure=None):
        """``cap - sums[measure]`` of a host (default the first measure),
        a ``(d,)`` array.
        """
        return self.cap[host] - self.sums[measure or self.measures[0]][host]

    def active(self):
        """Bool array ``(n_hosts,)``: hosts with at least one VM."""
        return self.count > 0
