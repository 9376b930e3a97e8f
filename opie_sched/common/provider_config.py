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
"""Nova provider config files that give compute nodes preemptible capacity.

Preemptible flavors request the custom resource classes
``CUSTOM_PREEMPTIBLE_VCPU``, ``CUSTOM_PREEMPTIBLE_MEMORY_MB`` and
``CUSTOM_PREEMPTIBLE_DISK_GB`` (:mod:`opie_sched.common.flavors`). nova-compute
adds that inventory to its compute node resource providers from the YAML files
in ``[compute] provider_config_location`` (default
``/etc/nova/provider_config/``; schema in ``nova/compute/provider_config.py``)
when it starts.

The preemptible inventory of a node equals its real capacity: the same
total, reserved amount and allocation ratio as the standard class, so
preemptible instances may backfill the whole host. Placement then checks
preemptible requests only against each other; the scheduler's
``PreemptibleFullStateFilter`` checks them against everything on the host.

The totals are static: regenerate the file (and restart nova-compute) when
a host's capacity or allocation ratios change.
"""

import logging
import re

import yaml

from opie_sched.common import flavors

LOG = logging.getLogger(__name__)

#: Provider config schema version written.
SCHEMA_VERSION = '1.0'
#: Special provider uuid: every compute node root provider of the
#: nova-compute service reading the file that no other entry names.
COMPUTE_NODE = '$COMPUTE_NODE'

#: (standard class, total key, reserved key, allocation ratio key,
#: preemptible class) of the provider dicts, in vCPU, RAM, disk order.
DIMENSIONS = (
    ('VCPU', 'vcpus', 'reserved_vcpus', 'cpu_allocation_ratio',
     flavors.VCPU_CLASS),
    ('MEMORY_MB', 'memory_mb', 'reserved_memory_mb', 'ram_allocation_ratio',
     flavors.MEMORY_MB_CLASS),
    ('DISK_GB', 'disk_gb', 'reserved_disk_gb', 'disk_allocation_ratio',
     flavors.DISK_GB_CLASS),
)

_UUID = re.compile(r'^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-'
                   r'[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$')


class ProviderConfigError(ValueError):
    """A provider config cannot be built from what was given."""


def _int(where, key, value, minimum):
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProviderConfigError('%s: %s must be an integer, not %r'
                                  % (where, key, value))
    if value < minimum:
        raise ProviderConfigError('%s: %s=%d must be >= %d'
                                  % (where, key, value, minimum))
    return value


def _ratio(where, key, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProviderConfigError('%s: %s must be a number, not %r'
                                  % (where, key, value))
    if not value > 0 or value == float('inf'):
        raise ProviderConfigError('%s: %s must be > 0, not %r'
                                  % (where, key, value))
    return float(value)


def identification(provider):
    """The nova ``identification`` of a provider dict.

    ``uuid`` (a UUID or ``$COMPUTE_NODE``) wins over ``name``.

    :raises ProviderConfigError: neither is given or the value is invalid.
    """
    uuid = provider.get('uuid')
    name = provider.get('name')
    if uuid:
        if uuid != COMPUTE_NODE and not _UUID.match(str(uuid)):
            raise ProviderConfigError('%r is neither a UUID nor %s'
                                      % (uuid, COMPUTE_NODE))
        return {'uuid': str(uuid)}
    if name:
        if not isinstance(name, str) or len(name) > 200:
            raise ProviderConfigError('invalid provider name %r (a string '
                                      'of 1 to 200 characters)' % (name,))
        return {'name': name}
    raise ProviderConfigError('a provider needs a uuid or a name: %r'
                              % (provider,))


def inventory(provider):
    """The preemptible ``additional`` inventories of one provider dict.

    :param provider: see :func:`build_provider_config`.
    :returns: list of three one-key dicts ``{CLASS: {total, reserved,
        min_unit, max_unit, step_size, allocation_ratio}}``.
    :raises ProviderConfigError: a size is missing or out of range.
    """
    where = next(iter(identification(provider).values()))
    items = []
    for _std, total_key, reserved_key, ratio_key, rc in DIMENSIONS:
        if total_key not in provider:
            raise ProviderConfigError('%s: %s is missing' % (where, total_key))
        total = _int(where, total_key, provider[total_key], 1)
        reserved = _int(where, reserved_key,
                        provider.get(reserved_key) or 0, 0)
        if reserved > total:
            raise ProviderConfigError('%s: %s=%d is more than %s=%d'
                                      % (where, reserved_key, reserved,
                                         total_key, total))
        ratio = _ratio(where, ratio_key, provider.get(ratio_key, 1.0))
        items.append({rc: {
            'total': total,
            'reserved': reserved,
            'min_unit': 1,
            'max_unit': total,
            'step_size': 1,
            'allocation_ratio': ratio,
        }})
    return items


def build_provider_config(providers):
    """The nova provider config document giving preemptible capacity.

    :param providers: iterable of dicts, one per compute node resource
        provider::

            {'uuid': UUID or '$COMPUTE_NODE',   # or 'name': the RP name
             'vcpus': int,                       # VCPU total (vCPU)
             'memory_mb': int,                   # MEMORY_MB total (MB)
             'disk_gb': int,                     # DISK_GB total (GB)
             'reserved_vcpus': int,              # optional, default 0
             'reserved_memory_mb': int,          # optional, default 0
             'reserved_disk_gb': int,            # optional, default 0
             'cpu_allocation_ratio': float,      # optional, default 1.0
             'ram_allocation_ratio': float,      # optional, default 1.0
             'disk_allocation_ratio': float}     # optional, default 1.0

        Give the values of the node's standard VCPU / MEMORY_MB / DISK_GB
        inventory (as nova-compute reports them to Placement). When both
        ``uuid`` and ``name`` are present the uuid identifies the provider.
    :returns: dict ``{'meta': {'schema_version': '1.0'}, 'providers':
        [{'identification': {...}, 'inventories': {'additional': [...]}}]}``
        with one ``CUSTOM_PREEMPTIBLE_*`` entry per class: total, reserved
        and allocation ratio of the standard class, ``max_unit`` = total.
    :raises ProviderConfigError: no providers, a provider identified twice,
        or a missing / invalid value.
    """
    entries = []
    seen = set()
    for provider in providers:
        ident = identification(provider)
        key = next(iter(ident.items()))
        if key in seen:
            raise ProviderConfigError('provider %s=%s is given twice' % key)
        seen.add(key)
        entries.append({'identification': ident,
                        'inventories': {'additional': inventory(provider)}})
    if not entries:
        raise ProviderConfigError('no providers to configure')
    return {'meta': {'schema_version': SCHEMA_VERSION}, 'providers': entries}


def inventories_from_placement(conn, names_or_uuids=None):
    """Provider dicts of the compute nodes, read from Placement.

    Every resource provider with VCPU, MEMORY_MB and DISK_GB inventory (the
    compute node root providers, as nova-compute reports them) is returned;
    others (nested providers such as NUMA nodes or GPUs, sharing storage
    providers) are skipped with a warning.

    :param conn: an ``openstack.connection.Connection`` with access to
        Placement (admin by default).
    :param names_or_uuids: optional iterable of provider names (hypervisor
        hostnames) or UUIDs to read; default all providers.
    :returns: list of provider dicts for :func:`build_provider_config`
        (``uuid``, ``name``, totals, reserved amounts and allocation ratios),
        sorted by name.
    :raises ProviderConfigError: a requested provider does not exist, or
        lacks one of the three standard inventories.
    :raises openstack.exceptions.SDKException: Placement API errors.
    """
    placement = conn.placement
    providers = list(placement.resource_providers())
    wanted = None
    if names_or_uuids:
        wanted = []
        ids = set()
        for ref in names_or_uuids:
            found = [rp for rp in providers if ref in (rp.id, rp.name)]
            if not found:
                raise ProviderConfigError(
                    'resource provider %r not found in Placement' % ref)
            for rp in found:
                if rp.id not in ids:
                    ids.add(rp.id)
                    wanted.append(rp)
        providers = wanted

    result = []
    for rp in providers:
        inv = {i.resource_class: i
               for i in placement.resource_provider_inventories(rp)}
        missing = [std for std, *_ in DIMENSIONS if std not in inv]
        if missing:
            msg = ('resource provider %s (%s) has no %s inventory: not a '
                   'compute node root provider?'
                   % (rp.name, rp.id, '/'.join(missing)))
            if wanted is not None:
                raise ProviderConfigError(msg)
            LOG.warning('skipping %s', msg)
            continue
        item = {'uuid': rp.id, 'name': rp.name}
        for std, total_key, reserved_key, ratio_key, _rc in DIMENSIONS:
            record = inv[std]
            item[total_key] = record.total
            item[reserved_key] = record.reserved or 0
            ratio = record.allocation_ratio
            item[ratio_key] = 1.0 if ratio is None else float(ratio)
        result.append(item)
    result.sort(key=lambda p: (p['name'] or '', p['uuid']))
    return result


HEADER = """\
# nova provider config: preemptible capacity for opie_sched.
# Generated by opie-sched provider-config. Install in nova-compute's
# [compute] provider_config_location and restart nova-compute; regenerate
# when the host's capacity or allocation ratios change.
"""


def dump_yaml(doc, header=HEADER):
    """The provider config document as YAML text.

    :param doc: dict from :func:`build_provider_config`.
    :param header: comment lines put first (each starting with ``#``), or
        None for none.
    :returns: str (``yaml.safe_dump``, keys in document order).
    """
    body = yaml.safe_dump(doc, default_flow_style=False, sort_keys=False)
    return (header or '') + body
