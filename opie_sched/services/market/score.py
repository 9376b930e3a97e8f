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
"""The placement score: would ``count`` servers of a flavor fit, per zone?

Pure functions over the dual host state (López García et al., FGCS 2019,
§3; :mod:`opie_sched.preemption.model`): the **full state** of a host
counts every instance, the **normal state** only normal ones. Inputs are
Placement's own figures (:func:`provider_states`: ``capacity`` and
``used`` of each resource class of a provider summary of ``GET
/allocation_candidates``, the read the scheduler gets for a boot) and the
preemptible servers the market priced in its newest period (their bids).

One status per zone, the first that holds (:func:`classify`):

``fits_now``
    ``count`` servers fit the free room of the full state
    (capacity − normal used − preemptible used; a preemptible flavor also
    within the preemptible inventory), and a preemptible flavor's bid
    covers the flavor's price per hour now. A boot lands without
    preempting anyone.
``out_of_bid``
    (preemptible flavors) there is room, but the bid is below what the
    flavor costs per hour at the current price (``price_per_hour``): the
    servers would be given notice at the market's next period.
``preempting``
    ``count`` fit only where preemptible servers run now. A normal
    flavor's boot preempts some of them (the scheduler picks the victims
    by cost). A preemptible flavor's boot is refused now (the scheduler
    never preempts for a preemptible request); its refused demand enters
    the market's price, which gives the cheaper servers notice: room for
    ``count`` exists once the preemptible servers bidding at most
    ``at_bid`` (currency per hour) are gone, so a bid above ``at_bid``
    is needed.
``no_room``
    not even the normal state (every preemptible server gone; for a
    preemptible flavor, every one bidding less than the bid) holds them.

Fit counts per host are ``min_r floor(free_r / need_r)`` over the
resources the flavor needs (vCPU, MB, GB), summed over the zone's hosts.
Room freed by a preemptible server counts its vCPU and RAM (the market's
snapshot knows no disk sizes); its disk only when every preemptible
server of the host goes (then the host's whole preemptible disk usage).
"""

import dataclasses
import decimal
import math

from opie_sched.common import flavors

FITS_NOW = 'fits_now'
OUT_OF_BID = 'out_of_bid'
PREEMPTING = 'preempting'
NO_ROOM = 'no_room'
STATUSES = (FITS_NOW, OUT_OF_BID, PREEMPTING, NO_ROOM)

_DIMS = 3  # vCPU, MB, GB


@dataclasses.dataclass(frozen=True)
class Running:
    """A preemptible server on a host: ``bid`` (Decimal, currency per
    hour), ``vcpus``, ``memory_mb``.
    """
    bid: decimal.Decimal
    vcpus: int
    memory_mb: int


@dataclasses.dataclass(frozen=True)
class HostState:
    """One host's dual state in Placement's capacity model
    (capacity = (total − reserved) × allocation ratio).

    :ivar capacity: ``(vCPU, MB, GB)`` of the standard classes.
    :ivar normal_used: ``(vCPU, MB, GB)`` the standard classes' consumers
        (normal instances) hold.
    :ivar preemptible_used: ``(vCPU, MB, GB)`` of the preemptible classes.
    :ivar preemptible_capacity: ``(vCPU, MB, GB)`` of the preemptible
        classes (None: no preemptible inventory).
    :ivar zone: availability zone (None: unknown).
    :ivar price_per_hour: what the flavor asked costs per hour in the
        host's pool now (Decimal), or None (no price yet).
    :ivar running: :class:`Running` preemptible servers of the host.
    """
    host: str
    capacity: tuple
    normal_used: tuple
    preemptible_used: tuple
    preemptible_capacity: tuple = None
    zone: str = None
    price_per_hour: decimal.Decimal = None
    running: tuple = ()


def fit_count(free, need, limit):
    """How many of ``need`` fit in ``free`` (both ``(vCPU, MB, GB)``),
    at most ``limit``: ``min_r floor(free_r / need_r)`` over ``need_r >
    0``; ``limit`` when the flavor needs nothing; never below 0.
    """
    best = limit
    for f, n in zip(free, need):
        if n > 0:
            best = min(best, max(0, math.floor((f + 1e-9) / n)))
    return best


def _sub(a, b):
    return tuple(x - y for x, y in zip(a, b))


def _add(a, b):
    return tuple(x + y for x, y in zip(a, b))


def room_now(state, need, preemptible, limit):
    """Servers of ``need`` that fit ``state``'s full state now."""
    free = _sub(_sub(state.capacity, state.normal_used),
                state.preemptible_used)
    n = fit_count(free, need, limit)
    if preemptible:
        if state.preemptible_capacity is None:
            return 0
        n = min(n, fit_count(_sub(state.preemptible_capacity,
                                  state.preemptible_used), need, limit))
    return n


def room_without(state, need, gone, limit):
    """Servers of ``need`` that fit once the :class:`Running` ``gone``
    (a subset of ``state.running``) left (see the module's note on
    disk).
    """
    freed = (sum(r.vcpus for r in gone), sum(r.memory_mb for r in gone),
             0)
    if gone and len(gone) == len(state.running):
        freed = (freed[0], freed[1], state.preemptible_used[2])
    free = _add(_sub(_sub(state.capacity, state.normal_used),
                     state.preemptible_used), freed)
    return fit_count(free, need, limit)


def classify(states, need, count, preemptible, bid=None):
    """The status of ``count`` servers of ``need`` in one zone.

    :param states: the zone's :class:`HostState` list.
    :param need: ``(vCPU, MB, GB)`` of one server.
    :param count: servers asked (>= 1).
    :param preemptible: the flavor is preemptible.
    :param bid: the preemptible flavor's bid (Decimal, currency per hour).
    :returns: dict ``status`` (:data:`STATUSES`), ``fit_now`` (servers
        that fit now, at most ``count``), ``fit_preempting`` (at most
        ``count``, with the preemptible servers that may go gone),
        ``at_bid`` (Decimal or None: see ``preempting``),
        ``price_per_hour`` (the highest price of the zone's hosts with
        room, or None).
    """
    fit_now = sum(room_now(s, need, preemptible, count) for s in states)
    fit_now = min(fit_now, count)
    prices = [s.price_per_hour for s in states
              if s.price_per_hour is not None
              and room_now(s, need, preemptible, count) > 0]
    price = max(prices) if prices else None
    result = {'fit_now': fit_now, 'fit_preempting': fit_now,
              'at_bid': None, 'price_per_hour': price}
    if fit_now >= count:
        if preemptible and price is not None and (bid is None
                                                  or bid < price):
            return dict(result, status=OUT_OF_BID)
        return dict(result, status=FITS_NOW)
    if not preemptible:
        # the normal state: Placement admits a normal request on it and
        # the scheduler preempts whatever the full state lacks
        fit = min(count, sum(fit_count(_sub(s.capacity, s.normal_used),
                                       need, count) for s in states))
        return dict(result, fit_preempting=fit,
                    status=PREEMPTING if fit >= count else NO_ROOM)
    # cheapest bids first: the lowest threshold t such that, with every
    # preemptible server bidding <= t gone, count fit
    thresholds = sorted({r.bid for s in states for r in s.running})
    fit, at_bid = fit_now, None
    for t in thresholds:
        if bid is not None and t >= bid:
            break  # only cheaper servers than the bid are preempted
        fit = min(count, sum(room_without(
            s, need, tuple(r for r in s.running if r.bid <= t), count)
            for s in states))
        if fit >= count:
            at_bid = t
            break
    result.update(fit_preempting=fit, at_bid=at_bid)
    return dict(result, status=PREEMPTING if at_bid is not None
                else NO_ROOM)


def flavor_need(vcpus, memory_mb, disk_gb, extra_specs):
    """``((vCPU, MB, GB), preemptible)`` a flavor claims, with its
    ``resources:`` overrides (:mod:`opie_sched.common.flavors`): a
    preemptible flavor's amounts are its ``CUSTOM_PREEMPTIBLE_*``
    classes.

    :param disk_gb: root + ephemeral + swap, GB
        (:func:`opie_sched.common.flavors.disk_gb`).
    """
    specs = extra_specs or {}
    preemptible = flavors.is_marked_preemptible(specs)
    classes = (flavors.PREEMPTIBLE_CLASSES if preemptible
               else flavors.STANDARD_CLASSES)
    need = []
    for rc, default in zip(classes, (vcpus, memory_mb, disk_gb)):
        value = specs.get('resources:%s' % rc)
        try:
            need.append(int(value) if value is not None else int(default))
        except (TypeError, ValueError):
            need.append(int(default))
    return tuple(need), preemptible


def placement_query(need, preemptible):
    """The ``resources`` query value of ``GET /allocation_candidates``
    for one server (zero amounts dropped, as Nova does).
    """
    classes = (flavors.PREEMPTIBLE_CLASSES if preemptible
               else flavors.STANDARD_CLASSES)
    return ','.join('%s:%d' % (rc, n) for rc, n in zip(classes, need)
                    if n > 0)


def placement_params(need, preemptible, extra_specs):
    """The query of ``GET /allocation_candidates`` for one server of the
    flavor: ``{"resources": ...}`` (:func:`placement_query`) and, when the
    flavor's extra specs ask for traits (``trait:<NAME>=required`` or
    ``forbidden``, as Nova reads them), ``"required"`` (forbidden ones
    prefixed ``!``, Placement 1.22). Other Nova filters (aggregates,
    image properties) are not applied.
    """
    params = {'resources': placement_query(need, preemptible)}
    traits = []
    for key, value in sorted((extra_specs or {}).items()):
        if not key.startswith('trait:'):
            continue
        name = key[len('trait:'):]
        if value == 'required':
            traits.append(name)
        elif value == 'forbidden':
            traits.append('!' + name)
    if traits:
        params['required'] = ','.join(traits)
    return params


def provider_states(summaries):
    """``{provider uuid: (capacity, normal_used, preemptible_used,
    preemptible_capacity)}`` from the ``provider_summaries`` of ``GET
    /allocation_candidates`` (each ``{"resources": {class: {"capacity",
    "used"}}}``); a provider without the three standard classes is left
    out.
    """
    out = {}
    for uuid, summary in (summaries or {}).items():
        res = (summary or {}).get('resources') or {}
        if not all(rc in res for rc in flavors.STANDARD_CLASSES):
            continue

        def of(classes, key):
            return tuple((res.get(rc) or {}).get(key) or 0
                         for rc in classes)
        pre_cap = None
        if any(rc in res for rc in flavors.PREEMPTIBLE_CLASSES):
            pre_cap = of(flavors.PREEMPTIBLE_CLASSES, 'capacity')
        out[uuid] = (of(flavors.STANDARD_CLASSES, 'capacity'),
                     of(flavors.STANDARD_CLASSES, 'used'),
                     of(flavors.PREEMPTIBLE_CLASSES, 'used'), pre_cap)
    return out
