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
"""Headroom: free room kept ahead of demand, so that preemptible servers
get their notice before a normal request needs their host.

A *pool* of hosts (a host aggregate, or the hosts in no aggregate) has a
headroom: an amount (vCPU, MB of RAM, GB of disk) or a fraction of the
pool's capacity. The pool's free room is the sum over its hosts of their
projected full-state free resources (:meth:`~.model.HostView.
projected_free`, negative values counted as 0: an overcommitted host is
the overcommit repair's business): every instance counts as used, except
those already leaving, and a victim already under a headroom notice counts
as leaving (its room is on the way). When the free room is below the
headroom in some dimension, the deficit is

    deficit = max(headroom − free, 0)   per dimension

and the victims are the cheapest set of the pool's candidate victims
(preemptible, running, not pinned: the ownership model) freeing at least
the deficit, chosen by the exact selection of the preemption phase
(:func:`opie_sched.preemption.victims.select_victims`, López García et
al., Alg. 5) over the pool's candidates taken together: one pass never
takes more than the deficit needs. When even every candidate cannot
free the deficit, nothing is taken (the decision is logged): headroom is
a best effort ahead of demand, never a reason to empty a pool of its
preemptible servers.

The sum is a pool-wide amount, not one host's slot: a headroom of 4 vCPU
may be one free vCPU on each of four hosts. Size it from the normal
flavors expected (a fraction of the capacity, or a few of the largest
flavor).

This module has no Nova imports.
"""

import dataclasses
import functools
import math
import re

from oslo_config import types

from opie_sched.preemption import model
from opie_sched.preemption import planner
from opie_sched.preemption import victims as victims_mod

#: Aggregate metadata key overriding ``[opie_preemption] headroom`` for
#: the aggregate's hosts (same syntax). Only admins write aggregate
#: metadata; a malformed value is ignored with a WARNING (the option
#: applies).
AGGREGATE_KEY = 'opie_headroom'

#: Unit words of an amount, by dimension index (case-insensitive).
_UNITS = {'vcpu': 0, 'vcpus': 0, 'cpu': 0, 'cpus': 0,
          'mb': 1, 'mib': 1,
          'gb': 2, 'gib': 2}
_TERM = re.compile(r'^\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]+)\s*$')
_SLOTS = re.compile(r'^\s*([0-9]+)\s*[x\u00d7]\s+(.+)$')


@dataclasses.dataclass(frozen=True)
class Headroom:
    """A parsed headroom.

    :param amount: :class:`~.model.Resources` (vCPU, MB, GB) kept free, or
        None for a fraction.
    :param fraction: the fraction (0 < f < 1) of the pool's capacity kept
        free, or None for an amount.
    :param text: the text it was parsed from.
    """

    amount: model.Resources = None
    fraction: float = None
    text: str = ''
    #: > 0: ``amount`` is one slot's size and the pool must hold this many
    #: free slots (each inside one host)
    slots: int = 0

    @property
    def enabled(self):
        """False for a headroom of 0 (off)."""
        if self.slots:
            return True
        if self.fraction is not None:
            return self.fraction > 0
        return self.amount is not None and not self.amount.is_zero()

    def target(self, capacity):
        """The free room to keep in a pool of ``capacity``.

        :param capacity: :class:`~.model.Resources`, the pool's summed
            schedulable capacity.
        :returns: :class:`~.model.Resources`; a fraction is applied to
            each dimension (``fraction × capacity``), an amount as is.
        """
        if self.fraction is not None:
            f = self.fraction
            return model.Resources(capacity[0] * f, capacity[1] * f,
                                   capacity[2] * f)
        return self.amount or model.ZERO


OFF = Headroom(amount=model.ZERO, text='0')


def parse(text):
    """Parse a headroom.

    :param text: ``0`` or empty (off); a fraction ``0.1`` or a percentage
        ``10%`` (of the pool's capacity in every dimension; below 1,
        resp. 100 %); amounts ``4 vcpu``, ``8192 MB``, ``100 GB``,
        comma-separated, in any order and subset (MB is RAM, GB is disk,
        as everywhere in opie; a dimension not named is 0), summed over
        the pool's hosts; or slots ``N x <amounts>`` (``2 x 8 vcpu,
        16000 MB``): N free rooms of that size, each inside one host.
    :returns: :class:`Headroom`.
    :raises ValueError: for anything else (a negative, NaN or infinite
        number, a fraction >= 1, an unknown or repeated unit).
    """
    raw = '' if text is None else str(text)
    s = raw.strip()
    if not s or s in ('0', '0.0', '0%'):
        return dataclasses.replace(OFF, text=raw)
    m = _SLOTS.match(s)
    if m:
        count = int(m.group(1))
        slot = parse(m.group(2))
        if slot.amount is None or slot.amount.is_zero():
            raise ValueError('headroom %r: a slot is amounts with their '
                             'units' % raw)
        if count == 0:
            return dataclasses.replace(OFF, text=raw)
        return Headroom(amount=slot.amount, slots=count, text=raw)
    if s.endswith('%'):
        value = _number(s[:-1], raw) / 100.0
        return _fraction(value, raw)
    try:
        value = float(s)
    except ValueError:
        value = None
    if value is not None:
        if not math.isfinite(value) or value < 0:
            raise ValueError('headroom %r: a number must be >= 0' % raw)
        return _fraction(value, raw)
    acc = [None, None, None]
    for term in s.split(','):
        m = _TERM.match(term)
        if not m:
            raise ValueError(
                'headroom %r: %r is not "<number> <vcpu|MB|GB>"'
                % (raw, term.strip()))
        amount, unit = float(m.group(1)), m.group(2).lower()
        if unit not in _UNITS:
            raise ValueError('headroom %r: unknown unit %r (vcpu, MB or '
                             'GB)' % (raw, m.group(2)))
        i = _UNITS[unit]
        if acc[i] is not None:
            raise ValueError('headroom %r: %s given twice'
                             % (raw, model.UNITS[model.DIMENSIONS[i]]))
        acc[i] = amount
    return Headroom(amount=model.Resources(*(a or 0 for a in acc)),
                    text=raw)


def _number(text, raw):
    try:
        value = float(text)
    except ValueError:
        raise ValueError('headroom %r: not a number' % raw)
    if not math.isfinite(value) or value < 0:
        raise ValueError('headroom %r: a number must be >= 0' % raw)
    return value


def _fraction(value, raw):
    if value == 0:
        return dataclasses.replace(OFF, text=raw)
    if value >= 1:
        raise ValueError('headroom %r: a fraction must be below 1 (100 %%); '
                         'write amounts with their units' % raw)
    return Headroom(fraction=value, text=raw)


class OptionType(types.String):
    """oslo.config type of ``[opie_preemption] headroom``: the value is
    parsed when it is read (so :func:`opie_sched.conf.validation.problems`
    refuses a malformed one at start) and kept as the text.
    """

    def __init__(self):
        super().__init__(type_name='headroom')

    def __call__(self, value):
        value = super().__call__(value)
        parse(value)
        return value

    def __eq__(self, other):
        return isinstance(other, OptionType)

    def __hash__(self):
        return hash(OptionType)


@dataclasses.dataclass(frozen=True)
class PoolPlan:
    """What keeping one pool's headroom takes.

    :param pool: the pool's name (aggregate name, or ``(no aggregate)``).
    :param target: :class:`~.model.Resources` to keep free.
    :param free: :class:`~.model.Resources` free now (leaving counted as
        gone).
    :param deficit: ``max(target − free, 0)`` per dimension.
    :param feasible: False when the pool's candidates cannot free the
        deficit (``victims`` then empty).
    :param victims: tuple of ``(host name, InstanceInfo, cost)``.
    :param total_cost: the victims' summed cost (policy units).
    """

    pool: str
    target: model.Resources
    free: model.Resources
    deficit: model.Resources
    feasible: bool = True
    victims: tuple = ()
    total_cost: float = 0.0

    @property
    def needs_preemption(self):
        return not self.deficit.is_zero()


def aggregate_headroom(metadata, default):
    """The headroom of a host aggregate: its :data:`AGGREGATE_KEY`
    metadata when set and well formed, else ``default``.

    :param metadata: the aggregate's metadata (dict or None).
    :param default: :class:`Headroom` of ``[opie_preemption] headroom``.
    :returns: ``(Headroom, problem)``; ``problem`` is None, or the text of
        the :class:`ValueError` of a malformed value (``default`` then
        applies; the caller logs it).
    """
    value = (metadata or {}).get(AGGREGATE_KEY)
    if value is None:
        return default, None
    try:
        return parse_cached(value), None
    except ValueError as exc:
        return default, str(exc)


@functools.lru_cache(maxsize=256)
def _parse_or_error(text):
    try:
        return parse(text), None
    except ValueError as exc:
        return None, exc


def parse_cached(text):
    """:func:`parse`, remembered per text (a scheduler filter asks for
    every candidate host of every request; :class:`Headroom` is
    immutable). Raises the same :class:`ValueError`.
    """
    room, exc = _parse_or_error('' if text is None else str(text))
    if exc is not None:
        raise ValueError(str(exc))
    return room


@dataclasses.dataclass(frozen=True)
class PoolRoom:
    """A pool's free room against its headroom, summed once (the
    Keeper's reading of a pool, and the scheduler filter's for every
    candidate host of a request: :func:`keeps_headroom` is then O(1)).

    :param headroom: the pool's :class:`Headroom`.
    :param target: :class:`~.model.Resources` to keep free (a slot headroom:
        N x the slot).
    :param free: summed free room of the pool's hosts (negatives as 0).
    :param slots: whole slots in the hosts' free rooms (a slot headroom;
        0 otherwise).
    """

    headroom: Headroom
    target: model.Resources
    free: model.Resources
    slots: int = 0

    @property
    def missing_slots(self):
        """Slots wanted and not free (a slot headroom), >= 0."""
        return max(self.headroom.slots - self.slots, 0) \
            if self.headroom.slots else 0

    @property
    def deficit(self):
        """What restoring the headroom must free: ``max(target − free,
        0)`` per dimension; a slot headroom: the missing slots x the slot.
        """
        if self.headroom.slots:
            return model.Resources(*(d * self.missing_slots
                                     for d in self.headroom.amount))
        return (self.target - self.free).clip_negative()


def pool_room(headroom, frees, capacities):
    """Sum a pool's free room once.

    :param headroom: :class:`Headroom` (enabled).
    :param frees: one :class:`~.model.Resources` per host of the pool, its
        free room (the Keeper: projected, leaving counted as gone; the
        scheduler filter: the full state); negatives count as 0.
    :param capacities: the hosts' capacities (a fraction is of their sum).
    :returns: :class:`PoolRoom`.
    """
    frees = list(frees)
    free = model.Resources.total(f.clip_negative() for f in frees)
    if headroom.slots:
        slot = headroom.amount
        return PoolRoom(headroom, model.Resources(
            *(d * headroom.slots for d in slot)), free,
            slots=sum(host_slots(f, slot) for f in frees))
    return PoolRoom(headroom, headroom.target(
        model.Resources.total(capacities)), free)


def keeps_headroom(room, host_free, request):
    """True when placing ``request`` on one host of a pool leaves the pool
    at or above its headroom (the Keeper would then take nothing): the
    rule of :class:`opie_sched.scheduler.filters.headroom.HeadroomFilter`.

    Amounts and fractions: the pool's free room after the placement,
    ``free − max(host_free, 0) + max(host_free − request, 0)`` per
    dimension, is at least the target in every dimension. Slots: the free
    slots after the placement, ``slots − slots(host_free) +
    slots(host_free − request)``, are at least N. A pool already below
    its headroom keeps no placement (every one leaves it below).

    :param room: :class:`PoolRoom` of the pool (the host counted in it).
    :param host_free: :class:`~.model.Resources`, that host's free room as
        counted in ``room``.
    :param request: :class:`~.model.Resources` placed (vCPU, MB, GB).
    """
    after = host_free - request
    if room.headroom.slots:
        slot = room.headroom.amount
        left = (room.slots - host_slots(host_free, slot)
                + host_slots(after, slot))
        return left >= room.headroom.slots
    free = room.free - host_free.clip_negative() + after.clip_negative()
    return (room.target - free).is_zero()


def pool_free(views):
    """Summed projected free room of ``views`` (negatives as 0)."""
    return model.Resources.total(v.projected_free().clip_negative()
                                 for v in views)


def pool_capacity(views):
    """Summed capacity of ``views``."""
    return model.Resources.total(v.capacity for v in views)


def host_slots(free, slot):
    """Whole slots of size ``slot`` in ``free`` (one host's free room),
    the dimensions of the slot that are 0 not counted; >= 0.
    """
    counts = [math.floor(f / d + 1e-9) for f, d in zip(free, slot) if d > 0]
    return max(min(counts), 0) if counts else 0


def plan_pool(pool, views, headroom, policy, now):
    """The cheapest victims restoring a pool's headroom.

    :param pool: the pool's name (for reports).
    :param views: the pool's :class:`~.model.HostView` (victims already
        under a headroom notice marked leaving); host names unique.
    :param headroom: :class:`Headroom`.
    :param policy: :class:`~.costs.CostPolicy`.
    :param now: timezone-aware UTC datetime.
    :returns: :class:`PoolPlan`.
    :raises opie_sched.preemption.costs.CostModuleError: on a bad cost.
    """
    if headroom.slots:
        return _plan_slots(pool, views, headroom, policy, now)
    room = pool_room(headroom, [v.projected_free() for v in views],
                     [v.capacity for v in views])
    target, free, deficit = room.target, room.free, room.deficit
    if deficit.is_zero():
        return PoolPlan(pool, target, free, model.ZERO)
    candidates = []
    host_of = {}
    for view in views:
        for inst, cost in planner.instance_costs(view, policy, now):
            candidates.append((inst, cost))
            host_of[inst.uuid] = view.name
    selection = victims_mod.select_victims(candidates, deficit)
    if selection is None:
        return PoolPlan(pool, target, free, deficit, feasible=False)
    return PoolPlan(pool, target, free, deficit, victims=tuple(
        (host_of[inst.uuid], inst, cost) for inst, cost in
        selection.victims), total_cost=selection.total_cost)


def _plan_slots(pool, views, headroom, policy, now):
    """:func:`plan_pool` for a headroom of slots.

    Each host holds ``host_slots(projected free, slot)`` slots. When the
    pool holds K fewer than wanted, for every host and j = 1..K the exact
    selection gives the cheapest victims making j more slots there (need =
    ((slots now + j) × slot − free), clipped at 0); a dynamic programme
    over the hosts then picks how many slots each host makes, at the
    least total cost, exactly K in all (making j + 1 slots on a host never
    costs less than j: any set freeing j + 1 frees j). Exact because
    hosts are independent: a victim frees room on its own host only.
    """
    slot = headroom.amount
    room = pool_room(headroom, [v.projected_free() for v in views],
                     [v.capacity for v in views])
    target, free, deficit = room.target, room.free, room.deficit
    missing = room.missing_slots
    if not missing:
        return PoolPlan(pool, target, free, model.ZERO)
    # options[h] = [(j, cost, victims)] for j = 1.. while feasible
    options = []
    for view in sorted(views, key=lambda v: v.name):
        cands = planner.instance_costs(view, policy, now)
        pfree = view.projected_free()
        now_slots = host_slots(pfree, slot)
        opts = []
        for j in range(1, missing + 1):
            need = (model.Resources(*(d * (now_slots + j) for d in slot))
                    - pfree).clip_negative()
            sel = victims_mod.select_victims(cands, need) if cands else None
            if sel is None:
                break
            opts.append((j, sel.total_cost, tuple(
                (view.name, inst, cost) for inst, cost in sel.victims)))
        options.append(opts)
    # best[k] = (cost, victims) making k slots with the hosts seen so far
    best = {0: (0.0, ())}
    for opts in options:
        nxt = dict(best)
        for k, (cost, chosen) in best.items():
            for j, c, vic in opts:
                kk = k + j
                if kk > missing:
                    break
                cand = (cost + c, chosen + vic)
                if kk not in nxt or cand[0] < nxt[kk][0] - 1e-9:
                    nxt[kk] = cand
        best = nxt
    if missing not in best:
        return PoolPlan(pool, target, free, deficit, feasible=False)
    cost, chosen = best[missing]
    return PoolPlan(pool, target, free, deficit, victims=chosen,
                    total_cost=cost)


def describe(plan):
    """One log line for a :class:`PoolPlan`."""
    fmt = planner._fmt
    if not plan.needs_preemption:
        return ('pool %s: %s free, headroom %s kept'
                % (plan.pool, fmt(plan.free), fmt(plan.target)))
    if not plan.feasible:
        return ('pool %s: %s free, below its headroom %s by %s, and its '
                'preemptible servers cannot free that: nothing taken'
                % (plan.pool, fmt(plan.free), fmt(plan.target),
                   fmt(plan.deficit)))
    return ('pool %s: %s free, below its headroom %s by %s: noticing %d '
            'victim(s), total cost %g: %s'
            % (plan.pool, fmt(plan.free), fmt(plan.target),
               fmt(plan.deficit), len(plan.victims), plan.total_cost,
               ', '.join('%s on %s (cost %g)' % (i.uuid, h, c)
                         for h, i, c in plan.victims)))


#: Nova power states (``nova.compute.power_state``) of a guest that is no
#: longer running by itself: SHUTDOWN, CRASHED.
_OFF_POWER_STATES = frozenset([4, 6])
#: vm states of a server its owner stopped, shelved or deleted.
_GONE_VM_STATES = frozenset(['stopped', 'shelved', 'shelved_offloaded',
                             'deleted', 'soft-delete'])
#: task states of the owner's stop, shelve or delete in progress.
_GOING_TASK_STATES = frozenset(['powering-off', 'shelving',
                                'shelving_image_pending_upload',
                                'shelving_image_uploading',
                                'shelving_offloading', 'deleting',
                                'soft-deleting'])


def released_early(vm_state, task_state, power_state, deleted=False):
    """True when a victim under notice no longer needs its notice: its
    guest powered itself off (power state SHUTDOWN or CRASHED, as nova's
    compute records it from the hypervisor's lifecycle event), or its
    owner stopped, shelved or deleted it (vm or task state). Its
    interruption may run now.

    :param vm_state: nova vm state (str).
    :param task_state: nova task state (str or None).
    :param power_state: nova power state (int or None).
    :param deleted: the row is deleted.
    """
    return bool(deleted or vm_state in _GONE_VM_STATES
                or task_state in _GOING_TASK_STATES
                or power_state in _OFF_POWER_STATES)
