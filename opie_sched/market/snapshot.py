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
"""Market snapshots: hosts and bidding VMs, as JSON, for
:func:`opie_sched.market.pricing.allocate` (``opie-sched market allocate``).

Snapshot format (JSON)::

    {"reserve_price": {"vcpus": 0.01, "memory_mb": 0.00001},
     "default_bid": 0.05,
     "max_bid": 100,
     "hosts": [{"name": "node-1", "pool": "default",
                "capacity": {"vcpus": 100, "memory_mb": 65536}}],
     "vms": [{"uuid": "vm-1", "host": "node-1", "bid": 12,
              "request": {"vcpus": 4, "memory_mb": 8192}},
             {"uuid": "vm-2", "pool": "default",
              "bid": {"vcpus": "0.04", "memory_mb": "0.00001"}},
             {"uuid": "vm-3", "host": "node-1",
              "metadata": {"opie:bid": "0.08"},
              "flavor_extra_specs": {"opie:bid": "0.05"}}]}

* Resources are ``vcpus`` (vCPU) and ``memory_mb`` (MB); every host has
  the same ones, each capacity > 0. ``pool`` (e.g. a host aggregate)
  defaults to ``"default"``; each pool is one market.
* Bids are currency per hour, numbers or decimal text. A VM's ``bid`` is
  either one number, split over the resources in proportion to the
  fraction of the pool it requests (:func:`.pricing.split_bid`; equally
  without a ``request``), or an object with one bid per resource. Without
  ``bid``, the bid comes from ``metadata`` ``opie:bid``, else
  ``flavor_extra_specs`` ``opie:bid``, else ``default_bid``
  (:func:`.bids.resolve_bid`). A bid above ``max_bid`` is an error.
* ``request``: the most the VM can use of each resource (its flavor);
  nobody gets more than it requests or than one host has.
* ``host``: where the VM runs; null or absent to be placed, in ``pool``.
* ``reserve_price``: currency per unit-hour per resource, default 0.

JSON output: ``{"resources": [...], "reserve_price": {r: p},
"pools": [{"pool", "capacity", "bids", "prices"}], "hosts": [{"name",
"pool", "capacity", "bids", "prices", "vms"}], "vms": [{"uuid", "host",
"pool", "placed", "bid_source", "bids", "cluster_share", "host_share",
"errors", "error"}]}``, each of ``capacity``, ``bids``, ``prices``,
shares and ``errors`` a mapping by resource; numbers are JSON numbers.
Invalid snapshots fail with the path of the offending field, e.g.
``vms[2].bid: must not be negative, got -1``.
"""

import json
import sys

import jsonschema

from opie_sched.market import bids as market_bids
from opie_sched.market import pricing

_POSITIVE = {'type': 'number', 'exclusiveMinimum': 0}
_NON_NEGATIVE = {'type': 'number', 'minimum': 0}
_RAW_BID = {'type': ['number', 'string']}


def _by_resource(value_schema, **extra):
    schema = {'type': 'object', 'additionalProperties': False,
              'properties': {r: value_schema for r in pricing.RESOURCES}}
    schema.update(extra)
    return schema


_BID_SPECS = {'type': 'object',
              'additionalProperties': {'type': ['string', 'number']}}

_HOST = {
    'type': 'object',
    'required': ['name', 'capacity'],
    'additionalProperties': False,
    'properties': {
        'name': {'type': 'string', 'minLength': 1},
        'pool': {'type': 'string', 'minLength': 1},
        'capacity': _by_resource(_POSITIVE, minProperties=1),
    },
}

_VM = {
    'type': 'object',
    'required': ['uuid'],
    'additionalProperties': False,
    'properties': {
        'uuid': {'type': 'string', 'minLength': 1},
        'host': {'type': ['string', 'null']},
        'pool': {'type': 'string', 'minLength': 1},
        'bid': {'oneOf': [_RAW_BID, _by_resource(_RAW_BID)]},
        'metadata': _BID_SPECS,
        'flavor_extra_specs': _BID_SPECS,
        'request': _by_resource(_NON_NEGATIVE),
    },
}

#: JSON schema of a snapshot (draft 7).
SCHEMA = {
    'type': 'object',
    'required': ['hosts', 'vms'],
    'additionalProperties': False,
    'properties': {
        'reserve_price': _by_resource(_NON_NEGATIVE),
        'default_bid': _RAW_BID,
        'max_bid': _NON_NEGATIVE,
        'hosts': {'type': 'array', 'items': _HOST, 'minItems': 1},
        'vms': {'type': 'array', 'items': _VM},
    },
}


class SnapshotError(ValueError):
    """A market snapshot is not valid; the message names the field."""


def _path(parts):
    text = ''
    for part in parts:
        if isinstance(part, int):
            text += '[%d]' % part
        else:
            text += ('.' if text else '') + str(part)
    return text or '(top level)'


def _validate(doc):
    validator = jsonschema.Draft7Validator(SCHEMA)
    errors = sorted(validator.iter_errors(doc),
                    key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        error = jsonschema.exceptions.best_match(errors)
        # oneOf errors say little; the deepest failing branch says more.
        while error.context:
            error = jsonschema.exceptions.best_match(error.context)
        raise SnapshotError('%s: %s' % (_path(error.absolute_path),
                                        error.message))


def _no_constant(name):
    raise SnapshotError('not valid JSON: %s is not a number' % name)


def read(path):
    """The decoded snapshot at ``path`` (``-``: stdin), numbers exact.

    Non-integral numbers are decoded as :class:`~decimal.Decimal`;
    ``NaN`` and ``Infinity`` are refused.

    :raises SnapshotError: unreadable file, bad JSON.
    """
    try:
        if path == '-':
            text = sys.stdin.read()
        else:
            with open(path, encoding='utf-8') as f:
                text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise SnapshotError('cannot read %s: %s' % (path, exc))
    try:
        return json.loads(text, parse_float=pricing.as_decimal,
                          parse_constant=_no_constant)
    except SnapshotError as exc:
        raise SnapshotError('%s: %s' % (path, exc))
    except ValueError as exc:
        raise SnapshotError('%s: not valid JSON: %s' % (path, exc))


def _check_hosts(doc):
    names = set()
    resources = None
    for i, host in enumerate(doc['hosts']):
        if host['name'] in names:
            raise SnapshotError('hosts[%d].name: duplicate host %r'
                                % (i, host['name']))
        names.add(host['name'])
        these = sorted(host['capacity'])
        if resources is None:
            resources = these
        elif these != resources:
            raise SnapshotError(
                'hosts[%d].capacity: has %s, hosts[0] has %s (every host '
                'needs the same resources)'
                % (i, ', '.join(these), ', '.join(resources)))
    return pricing.order_resources(resources)


def _check_vm(i, vm, hosts, resources):
    where = 'vms[%d]' % i
    if vm.get('host') is not None and vm['host'] not in hosts:
        raise SnapshotError('%s.host: unknown host %r' % (where, vm['host']))
    if vm.get('host') is not None and 'pool' in vm:
        pool = hosts[vm['host']].pool
        if vm['pool'] != pool:
            raise SnapshotError('%s.pool: %r, but host %r is in pool %r'
                                % (where, vm['pool'], vm['host'], pool))
    if vm.get('host') is None:
        pool = vm.get('pool', pricing.DEFAULT_POOL)
        if not any(h.pool == pool for h in hosts.values()):
            raise SnapshotError('%s.pool: no host in pool %r to place the '
                                'VM on' % (where, pool))
    for field in ('request', 'bid'):
        value = vm.get(field)
        if isinstance(value, dict):
            for r in value:
                if r not in resources:
                    raise SnapshotError('%s.%s.%s: no host has resource %s'
                                        % (where, field, r, r))


def _vm_bids(i, vm, doc, capacity):
    """``({resource: bid}, source)`` of the i-th VM, validated."""
    where = 'vms[%d]' % i
    cap = doc.get('max_bid')
    raw = vm.get('bid')
    if isinstance(raw, dict):
        parsed = {r: market_bids.parse_bid(v, cap, '%s.bid.%s' % (where, r))
                  for r, v in raw.items()}
        total = sum(parsed.values(), pricing.ZERO)
        if cap is not None and total > cap:
            raise market_bids.BidError(
                '%s.bid: total %s is above the largest accepted bid %s'
                % (where, total, cap))
        return parsed, 'bid'
    if raw is not None:
        bid, source = market_bids.parse_bid(raw, cap, where + '.bid'), 'bid'
    else:
        try:
            bid, source = market_bids.resolve_bid(
                vm.get('metadata'), vm.get('flavor_extra_specs'),
                doc.get('default_bid'), cap)
        except market_bids.BidError as exc:
            raise market_bids.BidError('%s: %s' % (where, exc))
    return pricing.split_bid(bid, capacity, vm.get('request')), source


def parse(doc):
    """Hosts, VMs and reserve prices of a decoded snapshot.

    :returns: ``(hosts, vms, reserve, sources)``: lists of
        :class:`.pricing.Host` and :class:`.pricing.VM`, a mapping
        ``resource -> reserve price`` and ``uuid -> bid source``.
    :raises SnapshotError: schema violation, duplicate or unknown names.
    :raises opie_sched.market.bids.BidError: an invalid bid.
    """
    _validate(doc)
    resources = _check_hosts(doc)
    hosts = {}
    for h in doc['hosts']:
        hosts[h['name']] = pricing.Host(
            h['name'], {r: h['capacity'][r] for r in resources},
            h.get('pool', pricing.DEFAULT_POOL))
    pool_capacity = {}
    for host in hosts.values():
        cap = pool_capacity.setdefault(host.pool, dict.fromkeys(resources, 0))
        for r in resources:
            cap[r] += host.capacity[r]
    vms, sources, seen = [], {}, set()
    for i, vm in enumerate(doc['vms']):
        if vm['uuid'] in seen:
            raise SnapshotError('vms[%d].uuid: duplicate VM %r'
                                % (i, vm['uuid']))
        seen.add(vm['uuid'])
        _check_vm(i, vm, hosts, resources)
        host = vm.get('host')
        if host:
            pool = hosts[host].pool
        else:
            pool = vm.get('pool', pricing.DEFAULT_POOL)
        bids, sources[vm['uuid']] = _vm_bids(i, vm, doc, pool_capacity[pool])
        vms.append(pricing.VM(vm['uuid'], bids, host,
                              dict(vm.get('request', {})), pool))
    reserve = {r: doc.get('reserve_price', {}).get(r, 0) for r in resources}
    return list(hosts.values()), vms, reserve, sources


def _numbers(mapping):
    return {k: float(v) for k, v in mapping.items()}


def to_json(allocation, reserve, sources):
    """The JSON-ready dict of an :class:`.pricing.Allocation`."""
    return {
        'resources': list(allocation.resources),
        'reserve_price': _numbers(
            {r: pricing.as_decimal(reserve[r])
             for r in allocation.resources}),
        'pools': [{'pool': p.pool, 'capacity': _numbers(p.capacity),
                   'bids': _numbers(p.bids), 'prices': _numbers(p.prices)}
                  for p in allocation.pools.values()],
        'hosts': [{'name': h.name, 'pool': h.pool,
                   'capacity': _numbers(h.capacity),
                   'bids': _numbers(h.bids), 'prices': _numbers(h.prices),
                   'vms': list(h.vms)}
                  for h in allocation.hosts.values()],
        'vms': [{'uuid': v.uuid, 'host': v.host, 'pool': v.pool,
                 'placed': v.placed, 'bid_source': sources[v.uuid],
                 'bids': _numbers(v.bids),
                 'cluster_share': _numbers(v.cluster),
                 'host_share': _numbers(v.host_shares),
                 'errors': _numbers(v.errors), 'error': float(v.error)}
                for v in allocation.vms.values()],
    }
