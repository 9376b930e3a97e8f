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
"""What-if snapshots: hosts, their instances and a request, as JSON.

The format read by ``opie-sched preempt explain``::

    {"now": "2026-11-22T12:00:00Z",
     "request": {"vcpus": 2, "memory_mb": 4000, "disk_gb": 40},
     "hosts": [{"name": "host-A", "vcpus": 8, "memory_mb": 16000,
                "disk_gb": 200, "cpu_allocation_ratio": 1.0,
                "ram_allocation_ratio": 1.0, "disk_allocation_ratio": 1.0,
                "instances": [{"uuid": "A1", "vcpus": 2, "memory_mb": 4000,
                               "disk_gb": 40, "preemptible": false,
                               "launched_at": "2026-11-22T07:28:00Z"}]}]}

An instance's optional ``state`` is the ownership model's
(:mod:`opie_sched.preemption.ownership`): ``running`` (default),
``leaving`` (its room counts as freed) or ``pinned`` (its owner is moving
it: it holds its room and is never a victim).

Allocation ratios and the host reservations ``reserved_vcpus``,
``reserved_memory_mb``, ``reserved_disk_gb`` are optional (default 1.0 and
0); ``now`` is optional (default: the current time). Host capacity is
vCPU, MB and GB before reservations and allocation ratios; the capacity
judged is Placement's, ``(total − reserved) × ratio``, as in the
scheduler; the host's full-state usage is the sum of its instances.
"""

import datetime
import json

import jsonschema
from oslo_utils import timeutils

from opie_sched.preemption import model
from opie_sched.preemption import ownership

_NUM = {'type': 'number', 'minimum': 0}
_RES = {'vcpus': _NUM, 'memory_mb': _NUM, 'disk_gb': _NUM}
_RATIO = {'type': 'number', 'exclusiveMinimum': 0}

_INSTANCE = {
    'type': 'object',
    'required': ['uuid', 'preemptible'] + list(_RES),
    'additionalProperties': False,
    'properties': dict(
        _RES,
        uuid={'type': 'string', 'minLength': 1},
        name={'type': 'string'},
        preemptible={'type': 'boolean'},
        state={'enum': list(ownership.STATES)},
        launched_at={'type': ['string', 'null']}),
}

_HOST = {
    'type': 'object',
    'required': ['name'] + list(_RES),
    'additionalProperties': False,
    'properties': dict(
        _RES,
        name={'type': 'string', 'minLength': 1},
        reserved_vcpus=_NUM,
        reserved_memory_mb=_NUM,
        reserved_disk_gb=_NUM,
        cpu_allocation_ratio=_RATIO,
        ram_allocation_ratio=_RATIO,
        disk_allocation_ratio=_RATIO,
        instances={'type': 'array', 'items': _INSTANCE}),
}

SCHEMA = {
    'type': 'object',
    'required': ['request', 'hosts'],
    'additionalProperties': False,
    'properties': {
        'now': {'type': 'string'},
        'request': {'type': 'object', 'required': list(_RES),
                    'properties': _RES, 'additionalProperties': False},
        'hosts': {'type': 'array', 'items': _HOST},
    },
}


class SnapshotError(ValueError):
    """A snapshot is not valid; the message names the offending field."""


def _path(error):
    parts = []
    for p in error.absolute_path:
        if isinstance(p, int):
            parts.append('[%d]' % p)
        else:
            parts.append(('.' if parts else '') + str(p))
    return ''.join(parts) or '(top level)'


def _time(value, where):
    try:
        parsed = timeutils.parse_isotime(value)
    except ValueError as exc:
        raise SnapshotError('%s: not an ISO 8601 time: %r (%s)'
                            % (where, value, exc))
    return timeutils.normalize_time(parsed).replace(
        tzinfo=datetime.timezone.utc)


class Snapshot:
    """A parsed snapshot.

    :ivar now: timezone-aware UTC datetime.
    :ivar request: :class:`~.model.Resources`.
    :ivar hosts: list of :class:`~.model.HostView` (full-state usage = sum
        of the instances).
    """

    def __init__(self, now, request, hosts):
        self.now = now
        self.request = request
        self.hosts = hosts


def parse(doc):
    """Build a :class:`Snapshot` from a decoded JSON document.

    :raises SnapshotError: on any schema violation, a bad time, a duplicate
        host name or instance uuid.
    """
    validator = jsonschema.Draft7Validator(SCHEMA)
    errors = sorted(validator.iter_errors(doc),
                    key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        raise SnapshotError('%s: %s' % (_path(err), err.message))
    now = (_time(doc['now'], 'now') if doc.get('now')
           else timeutils.utcnow(with_timezone=True))
    req = doc['request']
    request = model.Resources(req['vcpus'], req['memory_mb'],
                              req['disk_gb'])
    seen_hosts, seen_uuids, views = set(), set(), []
    for hi, h in enumerate(doc['hosts']):
        if h['name'] in seen_hosts:
            raise SnapshotError('hosts[%d].name: duplicate host %r'
                                % (hi, h['name']))
        seen_hosts.add(h['name'])
        for dim in model.DIMENSIONS:
            if h.get('reserved_' + dim, 0) > h[dim]:
                raise SnapshotError('hosts[%d].reserved_%s: %r is more '
                                    'than %s (%r)' % (
                                        hi, dim, h['reserved_' + dim],
                                        dim, h[dim]))
        capacity = model.Resources(
            (h['vcpus'] - h.get('reserved_vcpus', 0))
            * h.get('cpu_allocation_ratio', 1.0),
            (h['memory_mb'] - h.get('reserved_memory_mb', 0))
            * h.get('ram_allocation_ratio', 1.0),
            (h['disk_gb'] - h.get('reserved_disk_gb', 0))
            * h.get('disk_allocation_ratio', 1.0))
        instances = []
        for ii, i in enumerate(h.get('instances', [])):
            where = 'hosts[%d].instances[%d]' % (hi, ii)
            if i['uuid'] in seen_uuids:
                raise SnapshotError('%s.uuid: duplicate instance %r'
                                    % (where, i['uuid']))
            seen_uuids.add(i['uuid'])
            launched = i.get('launched_at')
            instances.append(model.InstanceInfo(
                uuid=i['uuid'],
                resources=model.Resources(i['vcpus'], i['memory_mb'],
                                          i['disk_gb']),
                preemptible=i['preemptible'],
                launched_at=(_time(launched, where + '.launched_at')
                             if launched else None),
                name=i.get('name', ''),
                leaving=i.get('state') == ownership.LEAVING,
                pinned=i.get('state') == ownership.PINNED))
        used = model.Resources.total(i.resources for i in instances)
        views.append(model.HostView(h['name'], capacity, used, instances))
    return Snapshot(now, request, views)


def load(path):
    """Read and parse a snapshot file.

    :raises SnapshotError: when the file cannot be read, is not JSON, or is
        not a valid snapshot.
    """
    try:
        with open(path, encoding='utf-8') as f:
            doc = json.load(f)
    except OSError as exc:
        raise SnapshotError('%s: cannot read: %s' % (path, exc.strerror))
    except (ValueError, UnicodeDecodeError) as exc:
        raise SnapshotError('%s: not valid JSON: %s' % (path, exc))
    try:
        return parse(doc)
    except SnapshotError as exc:
        raise SnapshotError('%s: %s' % (path, exc))
