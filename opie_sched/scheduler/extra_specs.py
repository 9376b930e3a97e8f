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
"""Nova extra spec validators of the ``opie`` namespace.

Loaded by nova-api through the ``nova.api.extra_spec_validators`` entry
point (``opie = opie_sched.scheduler.extra_specs``). Once the namespace is
registered nova rejects unknown ``opie:*`` flavor extra specs (API
microversion 2.86 and later), which catches typos such as
``opie:premptible``.

Nova calls them only for requests at microversion 2.86 or later; below it
any ``opie:*`` value is stored as given. So the same validators are the
single source of :func:`problems`, which the scheduler applies to every
request (:func:`refuse_invalid`: ``NoValidHost`` naming the bad spec,
never a server scheduled as something its flavor does not say), and
which ``opie-sched flavor check`` and ``opie-status upgrade check`` apply
to every flavor.

This module must stay importable by nova-api on its own: it imports nothing
but nova's validator base and the pure registry of interruption
behaviours (:mod:`opie_sched.preemption.behaviours`: stevedore and
oslo.config only).
"""

from nova.api.validation.extra_specs import base

from opie_sched.preemption import behaviours

EXTRA_SPEC_VALIDATORS = [
    base.ExtraSpecValidator(
        name='opie:preemptible',
        description=(
            'Whether instances of this flavor are preemptible (spot): they '
            'run on capacity left over by normal instances and may be '
            'terminated to make room for them. A preemptible flavor must '
            'also set resources:VCPU=0, resources:MEMORY_MB=0 and '
            'resources:DISK_GB=0 and request the same amounts of '
            'CUSTOM_PREEMPTIBLE_VCPU, CUSTOM_PREEMPTIBLE_MEMORY_MB and '
            'CUSTOM_PREEMPTIBLE_DISK_GB (see "opie-sched flavor '
            'create-preemptible").'
        ),
        value={
            'type': bool,
            'description': 'Whether the flavor is preemptible.',
        },
    ),
    base.ExtraSpecValidator(
        name='opie:bid',
        description=(
            'The default bid of a preemptible flavor, in currency units per '
            'hour: the price its instances are willing to pay when the '
            'user does not give a bid of their own.'
        ),
        value={
            'type': str,
            'description': 'A non-negative decimal number, e.g. 0.05.',
            'pattern': r'[0-9]+(\.[0-9]+)?',
        },
    ),
    base.ExtraSpecValidator(
        name='opie:price',
        description=(
            'The price of one server of this flavor, in currency units per '
            'hour (p_i of the repacking autoscaler, thesis Paper V), used by '
            'opie-autoscaler when an application does not give it.'
        ),
        value={
            'type': str,
            'description': 'A non-negative decimal number, e.g. 0.18.',
            'pattern': r'[0-9]+(\.[0-9]+)?',
        },
    ),
    base.ExtraSpecValidator(
        name='opie:max_lifetime',
        description=(
            'Longest life of a preemptible server of this flavor in '
            'seconds, after which the reconciler terminates it; overrides '
            '[opie_preemption] max_lifetime. 0 means no limit.'
        ),
        value={
            'type': int,
            'description': 'Seconds, 0 or more.',
            'min': 0,
        },
    ),
    base.ExtraSpecValidator(
        name='opie:interruption_behavior',
        description=(
            'What happens to a preemptible server of this flavor when it '
            'is preempted; overrides [opie_preemption] action and '
            '[opie_market] preemption_action. One of the registered '
            'interruption behaviours (opie_sched.preemption.behaviours). '
            'delete: it is deleted. stop: it is stopped, then deleted '
            'after the grace period (stop_grace_period). shelve: it is '
            'shelved and offloaded (it stays in its project, its host is '
            'freed, its owner can unshelve it); deleted instead when Nova '
            'refuses to shelve it (rescued, ERROR, VERIFY_RESIZE, '
            'soft-deleted).'
        ),
        value={
            'type': str,
            'description': 'A registered interruption behaviour: delete, '
                           'stop, shelve, or one added by an entry point.',
            'enum': behaviours.Names(),
        },
    ),
    base.ExtraSpecValidator(
        name='opie:restore',
        description=(
            'Automatic restore of a preemptible server of this flavor '
            'interrupted by the scheduler\'s preemption with the shelve '
            'behaviour (opie:interruption_behavior=shelve): auto: the '
            'reconciler unshelves it (same UUID, ports and volumes) when '
            'free room returns, without preempting anyone, the highest bid '
            'first, then the longest waiting; off (the default): it stays '
            'shelved until its owner unshelves it. Servers interrupted by '
            'the market or for their maximum lifetime are not restored.'
        ),
        value={
            'type': str,
            'description': 'auto or off.',
            'enum': ['auto', 'off'],
        },
    ),
    base.ExtraSpecValidator(
        name='opie:max_interruptions',
        description=(
            'With opie:restore=auto: after this many interruptions a '
            'server of this flavor is no longer restored; it stays '
            'shelved and its owner is told why (an instance fault and the '
            'server metadata opie:restore_status). Unset: no limit.'
        ),
        value={
            'type': int,
            'description': 'Interruptions, 1 or more.',
            'min': 1,
        },
    ),
]


def register():
    """The validators of the ``opie`` namespace (nova's plugin hook)."""
    return EXTRA_SPEC_VALIDATORS


#: Namespace prefix of the opie extra specs.
PREFIX = 'opie:'


def _one_line(text):
    return ' '.join(str(text).split())


def spec_problems(extra_specs):
    """One sentence per ``opie:*`` extra spec that nova's validators (the
    ones above, with the namespace's unknown-key rule) refuse.

    :param extra_specs: mapping str -> str, or None.
    :returns: list of str, e.g. ``["opie:preemptible=maybe: 'maybe' is not
        a valid boolean-like value."]``; sorted by key.
    """
    from nova.api.validation.extra_specs import validators
    from nova import exception

    out = []
    for key, value in sorted((extra_specs or {}).items()):
        if not key.startswith(PREFIX):
            continue
        try:
            validators.validate(key, value)
        except exception.ValidationError as exc:
            reason = _one_line(exc)
            reason = reason.split('Validation failed; ', 1)[-1]
            out.append('%s=%s: %s' % (key, value, reason))
    return out


def problems(extra_specs, vcpus=None, ram_mb=None, disk_gb=None):
    """Every reason why a flavor's ``opie:`` extra specs cannot be honoured:
    :func:`spec_problems`, then whether the marker and the resource
    classes agree (:func:`opie_sched.common.flavors.
    resource_class_problems`; amounts compared for the sizes given).

    :param extra_specs: mapping str -> str, or None.
    :param vcpus: the flavor's vCPUs, ``ram_mb`` its RAM in MB,
        ``disk_gb`` its disk as :func:`opie_sched.common.flavors.disk_gb`
        counts it; None: not compared.
    :returns: list of str, one sentence per problem; empty when valid.
    """
    from opie_sched.common import flavors

    out = spec_problems(extra_specs)
    out.extend(flavors.resource_class_problems(extra_specs, vcpus, ram_mb,
                                               disk_gb))
    return out


def scheduling_problems(extra_specs):
    """The problems of :func:`refuse_invalid`: :func:`spec_problems`, and
    for a flavor marked preemptible or requesting a preemptible class,
    what keeps it from being a whole preemptible flavor (the marker itself
    and the amounts not compared).

    :param extra_specs: mapping str -> str, or None.
    :returns: list of str, one sentence per problem; empty when valid.
    """
    from opie_sched.common import flavors
    from opie_sched.preemption import ownership

    specs = dict(extra_specs or {})
    out = spec_problems(specs)
    # an unparseable marker is in spec_problems already
    if ownership.marked(specs) or ownership.requests_preemptible(specs):
        specs[ownership.MARKER_KEY] = 'true'
        out.extend(flavors.check_preemptible_flavor(specs))
    return out


def flavor_problems(flavor):
    """:func:`problems` of a nova ``Flavor`` object (sizes compared)."""
    from opie_sched.common import flavors

    return problems(
        getattr(flavor, 'extra_specs', None), flavor.vcpus,
        flavor.memory_mb, flavors.disk_gb(flavor.root_gb,
                                          flavor.ephemeral_gb,
                                          getattr(flavor, 'swap', 0) or 0))


def refuse_invalid(spec_obj):
    """Refuse to schedule a request whose flavor has invalid ``opie:``
    extra specs (whatever the microversion the flavor was written at):
    values nova's validators refuse, or a flavor marked preemptible or
    requesting preemptible classes that is not a whole preemptible flavor
    (:func:`opie_sched.common.flavors.check_preemptible_flavor`: standard
    classes at 0, the preemptible classes requested). A flavor whose
    classes are whole but whose marker is missing or false is scheduled
    as what its classes say (the ownership model logs the disagreement at
    ERROR). Amounts that differ from the flavor's sizes are not refused
    here either (Placement claims what the flavor requests, and refusing
    would also stop the moves of servers already running):
    :func:`flavor_problems` reports both to ``opie-status`` and
    ``opie-sched flavor check``.

    :param spec_obj: nova ``RequestSpec``.
    :raises nova.exception.NoValidHost: the reason names the flavor and
        every problem (the instance goes to ERROR with it as its fault).
    """
    flavor = getattr(spec_obj, 'flavor', None)
    if flavor is None:
        return
    found = scheduling_problems(getattr(flavor, 'extra_specs', None))
    if found:
        from nova import exception
        raise exception.NoValidHost(reason=(
            'flavor %s has invalid opie: extra specs: %s (opie-sched '
            'flavor check lists every such flavor)'
            % (getattr(flavor, 'name', '?'), '; '.join(found))))
