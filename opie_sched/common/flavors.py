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
"""Preemptible flavors: the extra specs that make a flavor preemptible.

A flavor is **preemptible** when its extra specs carry the marker
``opie:preemptible=true`` *and* move its whole request from the standard
Placement resource classes to the custom preemptible ones::

    opie:preemptible=true
    resources:VCPU=0
    resources:MEMORY_MB=0
    resources:DISK_GB=0
    resources:CUSTOM_PREEMPTIBLE_VCPU=<flavor vCPUs>
    resources:CUSTOM_PREEMPTIBLE_MEMORY_MB=<flavor RAM, MB>
    resources:CUSTOM_PREEMPTIBLE_DISK_GB=<root + ephemeral + swap disk, GB>

Nova applies the ``resources:`` overrides when it asks Placement for
allocation candidates (zero amounts are dropped from the query), so the
standard classes count normal instances only: the *normal state* of the
dual host state. The custom classes are given to every compute node by a
provider config file (:mod:`opie_sched.common.provider_config`).

An instance's class comes from its own copy of the flavor
(``instance.flavor.extra_specs``), so editing a flavor later does not change
instances already booted from it.

The pure functions here need nothing but :mod:`oslo_utils`;
:func:`create_preemptible_twin` needs an ``openstack.connection.Connection``.
"""

import logging
import re

from oslo_utils import strutils

from opie_sched.preemption import ownership as own_rules

LOG = logging.getLogger(__name__)

#: Flavor extra spec that marks a flavor preemptible (boolean-like value).
MARKER_KEY = 'opie:preemptible'
#: Flavor extra spec: default bid of a preemptible flavor, currency per hour.
BID_KEY = 'opie:bid'

#: The three preemptible classes, in vCPU, RAM, disk order (units vCPU,
#: MB, GB), and the standard classes a preemptible flavor sets to 0, in
#: the same order: defined once in :mod:`opie_sched.preemption.ownership`.
PREEMPTIBLE_CLASSES = own_rules.PREEMPTIBLE_CLASSES
STANDARD_CLASSES = own_rules.STANDARD_CLASSES
#: Custom Placement resource classes of preemptible vCPUs, RAM and local
#: disk.
VCPU_CLASS, MEMORY_MB_CLASS, DISK_GB_CLASS = PREEMPTIBLE_CLASSES
#: Standard class -> the preemptible class that replaces it.
CLASS_MAP = dict(zip(STANDARD_CLASSES, PREEMPTIBLE_CLASSES))

#: Name suffix of the preemptible twin of a flavor.
TWIN_SUFFIX = '.preemptible'

# Flavor extra spec keys that request resources, as nova parses them:
# "resources[$S]:$RESOURCE_CLASS" ($S = optional granular group suffix).
_RESOURCES_KEY = re.compile(r'^resources([a-zA-Z0-9_-]{1,64})?:(.*)$')
# CPU policies under which nova requests dedicated (PCPU) host CPUs.
_PINNED_POLICIES = ('dedicated', 'mixed')


class FlavorError(ValueError):
    """A preemptible flavor cannot be created or used as asked."""


class InvalidPreemptibleFlavor(FlavorError):
    """A flavor says ``opie:preemptible=true`` but its resources disagree.

    :ivar problems: list of str, one sentence per problem found (see
        :func:`check_preemptible_flavor`).
    """

    def __init__(self, problems, flavor=None):
        self.problems = list(problems)
        self.flavor = flavor
        what = ('flavor %r' % flavor) if flavor else 'the flavor'
        super().__init__('%s is not a valid preemptible flavor: %s'
                         % (what, '; '.join(self.problems)))


def _amount(what, value, minimum):
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError('%s must be an integer, not %r' % (what, value))
    if value < minimum:
        raise ValueError('%s must be >= %d, not %d' % (what, minimum, value))
    return value


def disk_gb(root_gb, ephemeral_gb, swap_mb):
    """Disk a flavor claims, as Nova counts ``DISK_GB``
    (``nova.scheduler.utils.resources_from_flavor``): root + ephemeral +
    swap rounded up to a whole GB. GB (int).

    :param root_gb: root disk in GB; ``ephemeral_gb`` in GB; ``swap_mb`` in
        MB (None or '' count as 0, as the compute API may return them).
    """
    return (int(root_gb or 0) + int(ephemeral_gb or 0)
            + -(-int(swap_mb or 0) // 1024))


def preemptible_extra_specs(vcpus, ram_mb, disk_gb):
    """The extra specs that make a flavor of this size preemptible.

    :param vcpus: the flavor's vCPUs (int >= 1).
    :param ram_mb: the flavor's RAM in MB (int >= 1).
    :param disk_gb: the flavor's disk as :func:`disk_gb` counts it (int
        >= 0).
    :returns: dict of str -> str: the marker, the three standard classes
        set to ``'0'`` and the three preemptible classes set to the amounts.
        Other extra specs of the flavor are not included.
    :raises ValueError: when an amount is not an int in range.
    """
    amounts = (_amount('vcpus', vcpus, 1), _amount('ram_mb', ram_mb, 1),
               _amount('disk_gb', disk_gb, 0))
    specs = {MARKER_KEY: 'true'}
    for std in STANDARD_CLASSES:
        specs['resources:%s' % std] = '0'
    for rc, amount in zip(PREEMPTIBLE_CLASSES, amounts):
        specs['resources:%s' % rc] = str(amount)
    return specs


def _marker(extra_specs):
    """Strict boolean value of the marker; None when absent.

    :raises ValueError: when the value is not boolean-like.
    """
    value = (extra_specs or {}).get(MARKER_KEY)
    if value is None:
        return None
    return strutils.bool_from_string(value, strict=True)


def is_marked_preemptible(extra_specs):
    """Whether extra specs carry the marker ``opie:preemptible=true``.

    The one definition of "preemptible" that the scheduler, the reconciler
    and the market share: an instance is preemptible when its own copy of
    the flavor (``instance.flavor.extra_specs``; for openstacksdk, the
    server's embedded ``flavor["extra_specs"]``, API >= 2.47) carries the
    marker with a true value (``oslo_utils.strutils.bool_from_string``,
    not strict: ``true``, ``1``, ``yes``, ``on``, any case). A missing or
    non-boolean value means *not* preemptible: a server is never treated
    as a victim by mistake. A resize to a flavor without the marker ends
    the server's preemptible life. Whether the flavor's resources are
    consistent is a separate check (:func:`is_preemptible`,
    :func:`check_preemptible_flavor`).

    :param extra_specs: mapping of extra specs (str -> str), or None.
    :returns: bool.
    """
    value = (extra_specs or {}).get(MARKER_KEY)
    if value is None or isinstance(value, bool):
        return value is True
    return strutils.bool_from_string(str(value), strict=False)


def _as_int(value):
    if isinstance(value, bool):
        raise ValueError(value)
    return int(str(value).strip())


def _int_spec(specs, key, problems):
    """``specs[key]`` as an int, or None after appending to ``problems``
    (list of str) why it is not an integer.
    """
    try:
        return _as_int(specs[key])
    except ValueError:
        problems.append('%s=%r is not an integer' % (key, specs[key]))
        return None


def check_preemptible_flavor(extra_specs, vcpus=None, ram_mb=None,
                             disk_gb=None):
    """Every reason why these extra specs are not a valid preemptible flavor.

    Checked: the marker is present and true; ``resources:VCPU``,
    ``resources:MEMORY_MB`` and ``resources:DISK_GB`` are present and 0;
    the three preemptible classes are requested in the unsuffixed group with
    the flavor's amounts, except the disk, which may also be 0 or left out
    (a flavor whose disks are volumes, as the twin of a ``resources:DISK_GB=0``
    flavor is: it holds no local disk); no CPU
    pinning (``hw:cpu_policy`` dedicated/mixed or ``resources:PCPU``) and no
    granular group requests standard capacity, since that would be taken from
    the normal capacity Placement keeps for normal instances.

    :param extra_specs: dict of the flavor's extra specs (str -> str).
    :param vcpus: the flavor's vCPUs, or None to check only that the
        preemptible vCPU amount is a positive integer.
    :param ram_mb: the flavor's RAM in MB, or None (likewise).
    :param disk_gb: the flavor's disk as :func:`disk_gb` counts it, or None
        (likewise, >= 0).
    :returns: list of str, one sentence per problem; empty when valid.
    """
    specs = extra_specs or {}
    problems = []

    try:
        marker = _marker(specs)
    except ValueError:
        problems.append('%s=%r is not a boolean' % (MARKER_KEY,
                                                    specs[MARKER_KEY]))
    else:
        if marker is None:
            problems.append('%s is not set' % MARKER_KEY)
        elif not marker:
            problems.append('%s=%s is not true' % (MARKER_KEY,
                                                   specs[MARKER_KEY]))

    for std in STANDARD_CLASSES:
        key = 'resources:%s' % std
        if key not in specs:
            problems.append('%s is missing: it must be 0 so that the flavor '
                            'uses no normal capacity' % key)
            continue
        value = _int_spec(specs, key, problems)
        if value is None:
            continue
        if value != 0:
            problems.append('%s=%d must be 0 so that the flavor uses no '
                            'normal capacity' % (key, value))

    expected = (vcpus, ram_mb, disk_gb)
    units = ('vCPU', 'MB', 'GB')
    minimum = (1, 1, 0)
    for rc, want, unit, low in zip(PREEMPTIBLE_CLASSES, expected, units,
                                   minimum):
        key = 'resources:%s' % rc
        if key not in specs:
            if rc != DISK_GB_CLASS and (want is None or want > 0):
                problems.append('%s is missing%s' % (
                    key, '' if want is None else
                    ' (the flavor has %d %s)' % (want, unit)))
            continue
        value = _int_spec(specs, key, problems)
        if value is None:
            continue
        if rc == DISK_GB_CLASS and value == 0:
            continue
        if want is not None and value != want:
            problems.append('%s=%d does not match the flavor\'s %d %s'
                            % (key, value, want, unit))
        elif want is None and value < low:
            problems.append('%s=%d must be >= %d' % (key, value, low))

    policy = str(specs.get('hw:cpu_policy', '')).strip().lower()
    if policy in _PINNED_POLICIES:
        problems.append('hw:cpu_policy=%s requests dedicated host CPUs '
                        '(PCPU) from the normal capacity' % policy)

    for key in sorted(specs):
        match = _RESOURCES_KEY.match(key)
        if not match:
            continue
        suffix, rc = match.groups()
        if rc in PREEMPTIBLE_CLASSES and suffix:
            problems.append('%s: the preemptible classes must be requested '
                            'in the unsuffixed group (resources:%s)'
                            % (key, rc))
        elif rc == 'PCPU' or (rc in STANDARD_CLASSES and suffix):
            value = _int_spec(specs, key, problems)
            if value is None:
                continue
            if value != 0:
                problems.append('%s=%d requests normal capacity'
                                % (key, value))
    return problems


def resource_class_problems(extra_specs, vcpus=None, ram_mb=None,
                            disk_gb=None):
    """Whether the marker and the resource classes of a flavor agree.

    A flavor marked preemptible (``opie:preemptible`` true) must be a
    valid preemptible flavor (:func:`check_preemptible_flavor`, amounts
    compared for the sizes given); a flavor not marked (marker absent or
    false) must request none of the preemptible classes, else its servers
    would use preemptible capacity while counted as normal instances. A
    marker that is not boolean-like is left to the extra-spec validators.

    :param extra_specs: mapping str -> str, or None.
    :returns: list of str, one sentence per problem; empty when they agree.
    """
    specs = extra_specs or {}
    try:
        marker = _marker(specs)
    except ValueError:
        return []
    if marker:
        return check_preemptible_flavor(specs, vcpus, ram_mb, disk_gb)
    out = []
    for key in sorted(specs):
        match = _RESOURCES_KEY.match(key)
        if not match or match.group(2) not in PREEMPTIBLE_CLASSES:
            continue
        try:
            amount = _as_int(specs[key])
        except ValueError:
            amount = None
        if amount != 0:
            out.append('%s=%s requests preemptible capacity but %s is %s'
                       % (key, specs[key], MARKER_KEY,
                          'not set' if marker is None else 'false'))
    return out


def is_preemptible(extra_specs, vcpus=None, ram_mb=None, disk_gb=None):
    """Whether a flavor (by its extra specs) is preemptible.

    The marker ``opie:preemptible`` decides, parsed with
    ``oslo_utils.strutils.bool_from_string(strict=True)``; a missing marker
    means not preemptible. When the marker is true the resources are
    checked too (:func:`check_preemptible_flavor`; amounts are compared only
    for the sizes given).

    :param extra_specs: dict of extra specs (str -> str), or None.
    :param vcpus: optional flavor vCPUs; ``ram_mb`` optional RAM in MB;
        ``disk_gb`` optional disk as :func:`disk_gb` counts it.
    :returns: bool.
    :raises InvalidPreemptibleFlavor: when the marker is not boolean-like, or
        is true while the resource extra specs are inconsistent.
    """
    try:
        marker = _marker(extra_specs)
    except ValueError:
        raise InvalidPreemptibleFlavor(
            ['%s=%r is not a boolean' % (MARKER_KEY,
                                         extra_specs[MARKER_KEY])])
    if not marker:
        return False
    problems = check_preemptible_flavor(extra_specs, vcpus, ram_mb, disk_gb)
    if problems:
        raise InvalidPreemptibleFlavor(problems)
    return True


def twin_name(base_name):
    """Default name of the preemptible twin of flavor ``base_name``."""
    return base_name + TWIN_SUFFIX


def _one_line(exc):
    return ' '.join(str(exc).split()) or type(exc).__name__


def _find_flavors(compute, name_or_id, sdk_exc):
    """Flavors whose ID or name is ``name_or_id``, private ones included.

    ``is_public=none`` lists every flavor for an admin (nova lists only
    public flavors by default); nova ignores it for other users.
    """
    try:
        return [compute.get_flavor(name_or_id)]
    except (sdk_exc.NotFoundException, sdk_exc.BadRequestException):
        pass
    return [f for f in compute.flavors(details=True, is_public='none')
            if f.name == name_or_id]


def create_preemptible_twin(conn, base, name=None, is_public=None):
    """Create the preemptible twin of a flavor.

    The twin has the base flavor's vCPUs, RAM (MB), root disk, ephemeral
    disk and swap (GB, GB, MB), description and visibility, the base's extra
    specs except its ``resources*:`` ones, and the preemptible extra specs
    of :func:`preemptible_extra_specs` (disk = root + ephemeral + swap
    rounded up to GB, as Nova counts DISK_GB; or the base's
    ``resources:DISK_GB`` when it overrides it: the twin of a
    ``resources:DISK_GB=0`` flavor claims no preemptible disk). A private
    twin of a private base gets the same project access list.

    :param conn: an ``openstack.connection.Connection`` (admin: creating
        flavors is an admin action by default).
    :param base: name or ID of the base flavor.
    :param name: name of the twin; default ``<base name>.preemptible``.
    :param is_public: visibility of the twin; default the base's.
    :returns: the created ``openstack.compute.v2.flavor.Flavor``, with its
        ``extra_specs``.
    :raises FlavorError: the base flavor does not exist or is ambiguous, is
        itself preemptible (or has an invalid marker), requests resources
        the twin cannot carry over (granular groups, PCPU, other classes)
        or a CPU pinning policy; a flavor named like the twin exists; or
        setting the extra specs failed (the new flavor is then deleted).
    :raises openstack.exceptions.SDKException: other API errors (e.g.
        creating the flavor was refused).
    """
    from openstack import exceptions as sdk_exc

    compute = conn.compute
    matches = _find_flavors(compute, base, sdk_exc)
    if not matches:
        raise FlavorError('flavor %r not found' % base)
    if len(matches) > 1:
        raise FlavorError('more than one flavor is named %r: give its ID'
                          % base)
    base_flavor = matches[0]
    if not base_flavor.extra_specs:
        base_flavor = compute.fetch_flavor_extra_specs(base_flavor)
    base_name = base_flavor.name
    base_specs = dict(base_flavor.extra_specs or {})

    try:
        marker = _marker(base_specs)
    except ValueError:
        raise FlavorError('flavor %r has an invalid %s value %r'
                          % (base_name, MARKER_KEY, base_specs[MARKER_KEY]))
    if marker:
        raise FlavorError('flavor %r is itself preemptible (%s=%s)'
                          % (base_name, MARKER_KEY, base_specs[MARKER_KEY]))

    vcpus = base_flavor.vcpus
    ram = base_flavor.ram
    disk = disk_gb(base_flavor.disk, base_flavor.ephemeral, base_flavor.swap)
    # the disk the base's servers hold in Placement: a base that overrides
    # DISK_GB (resources:DISK_GB=0, a Ceph-style flavor whose disks are
    # volumes) holds that much, and so must its twin (issue 30 hole 9)
    override = base_specs.get('resources:DISK_GB')
    if override is not None:
        try:
            disk = _as_int(override)
        except ValueError:
            raise FlavorError('flavor %r has an invalid resources:DISK_GB '
                              'value %r' % (base_name, override))
        if disk < 0:
            raise FlavorError('flavor %r has a negative resources:DISK_GB '
                              '%d' % (base_name, disk))

    specs = {}
    dropped = []
    for key, value in base_specs.items():
        match = _RESOURCES_KEY.match(key)
        if match:
            suffix, rc = match.groups()
            if suffix or rc not in STANDARD_CLASSES:
                dropped.append('%s=%s' % (key, value))
            continue
        if key != MARKER_KEY:
            specs[key] = value
    if dropped:
        raise FlavorError(
            'flavor %r requests resources a preemptible twin cannot take '
            'from preemptible capacity: %s'
            % (base_name, ', '.join(sorted(dropped))))
    specs.update(preemptible_extra_specs(vcpus, ram, disk))
    problems = check_preemptible_flavor(specs, vcpus, ram, disk)
    if problems:
        raise FlavorError('flavor %r cannot have a preemptible twin: %s'
                          % (base_name, '; '.join(problems)))

    target = name or twin_name(base_name)
    if _find_flavors(compute, target, sdk_exc):
        raise FlavorError('a flavor named %r already exists' % target)

    public = base_flavor.is_public if is_public is None else bool(is_public)
    attrs = dict(name=target, vcpus=vcpus, ram=ram,
                 disk=base_flavor.disk or 0,
                 ephemeral=base_flavor.ephemeral or 0,
                 swap=base_flavor.swap or 0,
                 is_public=public)
    if base_flavor.description:
        attrs['description'] = base_flavor.description
    access = []
    if not public and not base_flavor.is_public:
        access = [a['tenant_id'] for a in compute.get_flavor_access(
            base_flavor)]

    try:
        flavor = compute.create_flavor(**attrs)
    except sdk_exc.ConflictException as exc:
        raise FlavorError('cannot create flavor %r: %s'
                          % (target, _one_line(exc)))
    try:
        flavor = compute.create_flavor_extra_specs(flavor, specs)
        for project in access:
            compute.flavor_add_tenant_access(flavor, project)
    except Exception as exc:
        cleanup = 'the new flavor was deleted'
        try:
            compute.delete_flavor(flavor, ignore_missing=True)
        except Exception as del_exc:
            LOG.warning('could not delete flavor %s (%s) after a failure: '
                        '%s', target, flavor.id, _one_line(del_exc))
            cleanup = ('deleting the new flavor %s failed too (%s): delete '
                       'it by hand' % (flavor.id, _one_line(del_exc)))
        raise FlavorError('setting up flavor %r failed (%s); %s'
                          % (target, _one_line(exc), cleanup)) from exc
    LOG.info('created preemptible flavor %s (%s) from %s', target,
             flavor.id, base_name)
    return flavor
