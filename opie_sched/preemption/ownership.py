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
"""The ownership model's rules: who holds room on a host, may it go.

One answer for every reader (the filter, the weighers, the preemption
decision, the reconciler, transparent placement, ``opie-sched preempt
explain``): :mod:`opie_sched.scheduler.ownership` applies these rules to
Nova's records. This module has no Nova imports.

**Preemptible** is what Placement enforces: an allocation is preemptible
when it holds a ``CUSTOM_PREEMPTIBLE_*`` class (:func:`holds_preemptible`);
a flavor is preemptible when it requests one in its unsuffixed
``resources:`` group (:func:`requests_preemptible`). The flavor marker
``opie:preemptible`` is only a consistency check (:func:`disagreement`):
a flavor whose marker and classes disagree is what its classes say, and
the disagreement is an error for the operator.

**State** of a server holding room (:func:`state`):

``running``
    It holds its room and may be a victim when it is preemptible.
``leaving``
    Its room is about to be freed, until a deadline (:func:`leaving_until`):
    any server in task state ``deleting`` (whoever asked for the delete)
    until ``deleting_grace`` seconds after the delete began; an opie
    victim reserved by a live request (until its lease ends), or
    terminating (until its record's ``next_attempt``, when the reconciler
    terminates it again). Past the deadline it is ``running``
    again (it holds its room, and may be chosen, or deleted again).
``pinned``
    Its owner is moving it: a resize, cold or live migration in progress
    or a resize waiting for confirmation (``VERIFY_RESIZE``). It holds its
    room (on both hosts of the move) and is never a victim: an owner's own
    move never preempts the mover, and never leaves its source host
    counted as free.
"""

import datetime

from opie_sched.preemption import model

#: The preemptible Placement resource classes (units vCPU, MB, GB), in
#: vCPU, RAM, disk order: the one definition (opie_sched.common.flavors
#: names them too).
PREEMPTIBLE_CLASSES = ('CUSTOM_PREEMPTIBLE_VCPU',
                       'CUSTOM_PREEMPTIBLE_MEMORY_MB',
                       'CUSTOM_PREEMPTIBLE_DISK_GB')
#: The standard classes they replace, in the same order.
STANDARD_CLASSES = ('VCPU', 'MEMORY_MB', 'DISK_GB')
_INDEX = dict(zip(STANDARD_CLASSES + PREEMPTIBLE_CLASSES, (0, 1, 2) * 2))
MARKER_KEY = 'opie:preemptible'

RUNNING = 'running'
LEAVING = 'leaving'
PINNED = 'pinned'
STATES = (RUNNING, LEAVING, PINNED)

#: Nova task states of a server its owner (or an admin) is moving: resize
#: and cold migration (``resize_*``), live migration (``migrating``).
MOVE_TASK_STATES = frozenset([
    'resize_prep', 'resize_migrating', 'resize_migrated', 'resize_finish',
    'resize_reverting', 'resize_confirming', 'migrating'])
#: Nova vm states of a moved server not settled yet: ``resized``
#: (``VERIFY_RESIZE``: its owner may still revert).
MOVE_VM_STATES = frozenset(['resized'])
#: The task state of a server being deleted.
DELETING = 'deleting'
#: The vm state of a deleted server.
DELETED = 'deleted'


def holds_preemptible(amounts):
    """True when an allocation (``{resource class: amount}``) holds a
    preemptible class (a positive amount of a ``CUSTOM_PREEMPTIBLE_*``).
    """
    return any((amounts or {}).get(rc) for rc in PREEMPTIBLE_CLASSES)


def amounts_resources(amounts):
    """``Resources`` (vCPU, MB, GB) of a ``{resource class: amount}``
    mapping (an allocation, or Placement's usages), the standard and
    preemptible classes added up; other classes ignored.
    """
    acc = [0, 0, 0]
    for rc, amount in (amounts or {}).items():
        i = _INDEX.get(rc)
        if i is not None:
            acc[i] += amount or 0
    return model.Resources(*acc)


def requested_amounts(extra_specs):
    """``{resource class: int amount}`` of a flavor's unsuffixed
    ``resources:CLASS`` extra specs (malformed amounts left out).
    """
    found = {}
    for key, value in (extra_specs or {}).items():
        if not isinstance(key, str) or not key.startswith('resources:'):
            continue
        try:
            found[key[len('resources:'):]] = int(str(value).strip())
        except (TypeError, ValueError):
            continue
    return found


PREEMPTIBLE_DISK_KEY = 'resources:CUSTOM_PREEMPTIBLE_DISK_GB'


def volume_booted_specs(extra_specs, ephemeral_gb, swap_mb):
    """The extra specs a server that boots from a volume claims with:
    ``resources:CUSTOM_PREEMPTIBLE_DISK_GB`` lowered to the local disk such
    a server uses, its ephemeral disk plus its swap (GB, swap rounded up),
    never raised above the flavor's amount.

    The rule is nova's own for ``DISK_GB``: a request spec with ``is_bfv``
    leaves the root disk out of the disk it asks Placement for
    (``nova.scheduler.utils.ResourceRequest.from_request_spec``: ephemeral
    + swap, root only when not ``is_bfv``). A preemptible flavor asks for
    its disk in the preemptible class instead (``resources:DISK_GB=0``),
    where nova's rule does not reach, so without this a volume-booted
    preemptible server holds a root disk it never uses on its host, and a
    normal server needing that disk preempts it for nothing (issue 30,
    hole 9). The minimum (not the amount less the root disk) keeps the
    rule idempotent and never asks more than the flavor does; for a twin
    made by ``opie-sched flavor create-preemptible`` (amount = root +
    ephemeral + swap) both are the same.

    :param extra_specs: the flavor's extra specs (mapping str -> str).
    :param ephemeral_gb: the flavor's ephemeral disk, GB (None = 0).
    :param swap_mb: the flavor's swap, MB (None = 0).
    :returns: a new dict when the amount is lowered; otherwise
        ``extra_specs`` itself (no such key, a malformed amount, or an
        amount already within ephemeral + swap).
    """
    specs = extra_specs or {}
    value = specs.get(PREEMPTIBLE_DISK_KEY)
    if value is None:
        return extra_specs
    try:
        amount = int(str(value).strip())
    except (TypeError, ValueError):
        return extra_specs
    local = int(ephemeral_gb or 0) + -(-int(swap_mb or 0) // 1024)
    if amount <= local:
        return extra_specs
    lowered = dict(specs)
    lowered[PREEMPTIBLE_DISK_KEY] = str(max(local, 0))
    return lowered


def requests_preemptible(extra_specs):
    """True when a flavor (its extra specs) requests a preemptible class
    from Placement: what its servers will hold, what Placement enforces.
    """
    amounts = requested_amounts(extra_specs)
    return any(amounts.get(rc, 0) > 0 for rc in PREEMPTIBLE_CLASSES)


def marked(extra_specs):
    """True when the marker ``opie:preemptible`` is set to a true value
    (``true``, ``1``, ``yes``, ``on``, any case).
    """
    value = (extra_specs or {}).get(MARKER_KEY)
    if isinstance(value, bool):
        return value
    if value is None:
        return False
    return str(value).strip().lower() in ('1', 't', 'true', 'on', 'y',
                                          'yes')


def disagreement(extra_specs, name=''):
    """Why a flavor's marker disagrees with the classes it requests, or
    None when they agree.

    :param extra_specs: the flavor's extra specs (mapping str -> str).
    :param name: the flavor's name, for the message.
    :returns: one sentence (str) naming the flavor and saying which of
        the two the model follows (the classes), or None.
    """
    by_classes = requests_preemptible(extra_specs)
    if by_classes == marked(extra_specs):
        return None
    what = ('flavor %r' % name) if name else 'a flavor'
    if by_classes:
        return ('%s requests preemptible resource classes without the '
                'marker %s=true: its servers are preemptible (Placement '
                'holds them as such); set the marker or remove the '
                'classes' % (what, MARKER_KEY))
    return ('%s has the marker %s=true but requests no preemptible '
            'resource class: its servers are normal (Placement holds them '
            'in the standard classes); remove the marker or fix the '
            'flavor (opie-sched flavor create-preemptible)'
            % (what, MARKER_KEY))


def is_moving(task_state, vm_state):
    """True when a server's owner is moving it (see ``pinned``)."""
    return task_state in MOVE_TASK_STATES or vm_state in MOVE_VM_STATES


def _aware(when):
    if when is not None and when.tzinfo is None:
        return when.replace(tzinfo=datetime.timezone.utc)
    return when


def leaving_until(task_state, vm_state, changed_at, record, now, lease,
                  deleting_grace):
    """Until when a server counts as leaving, or None when it does not.

    :param task_state: Nova task state (str or None).
    :param vm_state: Nova vm state (str).
    :param changed_at: when the server record last changed (its
        ``updated_at``: a delete sets the task state ``deleting``, which
        stamps it), aware or naive UTC datetime, or None.
    :param record: the victim's
        :class:`~opie_sched.preemption.victim_state.VictimState`, or None.
    :param now: aware datetime.
    :param lease: seconds a ``reserved`` record counts as leaving
        (``reservation_timeout``).
    :param deleting_grace: seconds a server in ``deleting`` without a
        ``terminating`` record counts as leaving (``retry_interval``).
    :returns: an aware datetime, :data:`FOREVER` for a deleted server
        (or a terminating victim without a retry time), or None
        (running). A ``terminating`` victim's deadline is its record's
        ``next_attempt``, which the reconciler's retry moves on (the
        deadline may then be past until its next round).
    """
    if vm_state == DELETED:
        return FOREVER
    if record is not None and record.state == 'terminating':
        # an opie victim: the reconciler terminates it again at
        # next_attempt (deleting included), with backoff and a fault
        # after max_attempts; it leaves until then, then until the next
        return record.next_attempt or FOREVER
    if task_state == DELETING:
        start = _aware(changed_at)
        if start is None:
            return None
        until = start + datetime.timedelta(seconds=deleting_grace)
        return until if now < until else None
    if record is not None and record.state == 'reserved':
        until = record.since + datetime.timedelta(seconds=lease)
        return until if now < until else None
    return None


#: "Leaving with no deadline": a deleted server (it holds nothing).
FOREVER = datetime.datetime.max.replace(tzinfo=datetime.timezone.utc)


def state(task_state, vm_state, changed_at, record, now, lease,
          deleting_grace, moving=False):
    """The state of a server holding room: :data:`PINNED`,
    :data:`LEAVING` or :data:`RUNNING` (see the module docstring).

    :param moving: True when a migration of the server holds room on the
        provider being read (a move in progress whatever the task state).
    """
    if leaving_until(task_state, vm_state, changed_at, record, now, lease,
                     deleting_grace) is not None:
        return LEAVING
    if moving or is_moving(task_state, vm_state):
        return PINNED
    return RUNNING


def may_be_victim(preemptible, server_state):
    """True when a server may be chosen as a victim: preemptible by the
    classes it holds, and ``running`` (neither leaving nor pinned).
    """
    return bool(preemptible) and server_state == RUNNING


def lifetime_start(created_at, became_preemptible_at=()):
    """When a server's preemptible life began: the latest of its creation
    and the moves that made it preemptible (a resize from a normal to a
    preemptible flavor).

    :param created_at: aware or naive UTC datetime.
    :param became_preemptible_at: datetimes of such moves.
    :returns: aware datetime.
    """
    start = _aware(created_at)
    for when in became_preemptible_at:
        when = _aware(when)
        if when is not None and (start is None or when > start):
            start = when
    return start
