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
"""The service-owned state of a victim, and the rules derived from it.

A victim passes through two states, recorded where only the service can
write (Nova's instance *system metadata*, which the compute API never lets a
user set; see :mod:`opie_sched.scheduler.reservations`):

``reserved``
    Chosen by a scheduler worker under the host's lock, for a request that
    has not finished yet. Every other worker counts it as leaving while the
    reservation is younger than its lease; a reservation whose request
    failed is cleared, and one left behind by a dead worker expires.
``terminating``
    Its termination was requested (stop or delete). It counts as leaving
    until it is gone. When the termination does not complete (the delete
    raised, the compute service is down, the scheduler died between stop
    and delete, or the compute accepted the delete and never finished it:
    task state ``deleting`` past ``next_attempt``) the reconciler tries
    again once ``next_attempt`` has passed, with an exponential backoff,
    and raises an operator-visible fault after ``max_attempts``.

Every destructive step (stop, delete, the later delete of a stopped victim,
a retry) is taken only by the actor whose record it is, and only after a
compare-and-set of the record (:func:`may_act`, and
:func:`opie_sched.scheduler.reservations.swap_state`): of two actors that
read the same record, one proceeds.

Nothing a user can write (server metadata, tags, names) takes part in these
rules. This module has no Nova imports.
"""

import dataclasses
import datetime
import typing as ty

from opie_sched.preemption import behaviours

#: System metadata keys (Nova prefixes nothing: these are the stored keys).
KEY_STATE = 'opie_victim_state'
KEY_PREEMPTOR = 'opie_victim_of'
KEY_SINCE = 'opie_victim_since'
KEY_REQUEST = 'opie_victim_request'
KEY_ATTEMPTS = 'opie_victim_attempts'
KEY_NEXT = 'opie_victim_next_attempt'
KEY_REASON = 'opie_victim_reason'
#: The request id of the victim's own termination (its ``preempt``, ``stop``
#: and ``delete`` instance actions), fresh per decision so that the owner's
#: ``server event list`` never shows the preemptor's request id. Kept for
#: admins, who map it to :data:`KEY_REQUEST`.
KEY_ACTION_REQUEST = 'opie_victim_action_request'
#: How the victim is interrupted (:data:`BEHAVIORS`), fixed at its first
#: termination step.
KEY_BEHAVIOR = 'opie_victim_behavior'
#: The tooz member id of the scheduler worker that reserved the victim
#: (see :mod:`opie_sched.scheduler.locks`: its reservations end when it
#: is known dead).
KEY_WORKER = 'opie_victim_worker'
#: How many times the server was interrupted with restore requested
#: (:data:`RESTORE_SPEC`): it outlives the record (see :data:`KEPT_KEYS`),
#: so that ``opie:max_interruptions`` counts every interruption of the
#: server's life.
KEY_INTERRUPTIONS = 'opie_victim_interruptions'
KEYS = (KEY_STATE, KEY_PREEMPTOR, KEY_SINCE, KEY_REQUEST, KEY_ATTEMPTS,
        KEY_NEXT, KEY_REASON, KEY_ACTION_REQUEST, KEY_BEHAVIOR, KEY_WORKER,
        KEY_INTERRUPTIONS)
#: Keys a record's removal or replacement keeps unless the new record
#: writes them (:func:`opie_sched.scheduler.reservations.swap_state`): the
#: interruption count is the server's, not one victim decision's.
KEPT_KEYS = (KEY_INTERRUPTIONS,)

#: The interruption behaviours shipped (:mod:`.behaviours`): ``delete``;
#: ``stop`` (stop, then delete after the grace period); ``shelve`` (shelve
#: and offload: the server stays in its project, its host is freed).
DELETE = 'delete'
STOP = 'stop'
SHELVE = 'shelve'
#: Every registered interruption behaviour (a live sequence: the
#: ``opie_sched.preemption.behaviours`` entry points).
BEHAVIORS = behaviours.Names()
#: Flavor extra spec choosing a flavor's behaviour.
BEHAVIOR_SPEC = 'opie:interruption_behavior'


def interruption_behavior(extra_specs, default):
    """The interruption behaviour of a flavor: its
    ``opie:interruption_behavior`` when it is one of :data:`BEHAVIORS`,
    else ``default`` (the cloud's ``[opie_preemption] action``). A
    malformed value is ignored (the API validates new flavors).
    """
    value = (extra_specs or {}).get(BEHAVIOR_SPEC)
    return value if value in BEHAVIORS else default


#: Server metadata keys of the guest-visible preemption notice, one
#: contract for the scheduler's and the market's preemptions (served to
#: the guest in meta_data.json "meta"): :func:`notice_metadata`'s text and
#: the deadline. Informational only: the service never reads them back
#: (the owner can write server metadata).
NOTICE_KEY = 'opie:preempt_notice'
DEADLINE_KEY = 'opie:preempt_deadline'
#: Server metadata keys set on every victim (scheduler's and market's)
#: for its owner to read: what preempted it (a cause word or the
#: preemptor's UUID) and when (ISO 8601); and the server tag likewise.
#: Informational only, never read back (the owner can write them).
PREEMPTED_BY_KEY = 'opie:preempted_by'
PREEMPTED_AT_KEY = 'opie:preempted_at'
PREEMPTED_TAG = 'opie-preempted'
#: Server metadata key of the *at risk* mark (the rebalance
#: recommendation) the scheduler's headroom and the market's drills write
#: beside the notice's keys in ``meta_data.json``: the time it was set,
#: ISO 8601 UTC. Informational: never read back.
AT_RISK_KEY = 'opie:rebalance_recommendation'
#: Nova's limit on a metadata value (characters).
METADATA_MAX = 255
#: Nova instance action the scheduler and the reconciler record on a
#: victim when they give it a notice (``openstack server event list``
#: shows it to the owner, under a request id of its own). Unlike the
#: notice's metadata keys, a user cannot write an instance action: it is
#: the service-owned trace the market reads before it accepts an owner's
#: acknowledgement of a notice (:func:`pending_notice`).
NOTICE_ACTION = 'preempt_notice'
#: The instance action of a victim's interruption (the scheduler's
#: ``mark_victim``): it ends the notice before it.
PREEMPT_ACTION = 'preempt'
#: The instance action the scheduler records when it withdraws a notice
#: (the victim is spared: resized to a normal flavor, or its request
#: released it): it ends the notice before it, so notice keys the owner
#: writes back afterwards make no pending notice.
WITHDRAW_ACTION = 'preempt_notice_withdrawn'


def pending_notice(actions, now, window):
    """When the newest service-recorded notice of a server was given, if
    it still stands.

    Rule: the server's newest :data:`NOTICE_ACTION` is pending when no
    :data:`PREEMPT_ACTION` (the victim was interrupted) nor
    :data:`WITHDRAW_ACTION` (it was spared) came after it, and it is
    younger than ``window`` seconds (a notice is never
    longer than that: an older one lapsed, e.g. its scheduler died and
    the reservation expired).

    :param actions: iterable of ``(action name, start time)``, start time
        in epoch seconds (Nova's instance actions of the server; other
        names are ignored).
    :param now: epoch seconds.
    :param window: seconds (>= 0).
    :returns: the notice's epoch seconds, or None when none is pending.
    """
    notice = interrupted = None
    for name, start in actions:
        if start is None:
            continue
        if name == NOTICE_ACTION and (notice is None or start > notice):
            notice = start
        elif name in (PREEMPT_ACTION, WITHDRAW_ACTION) and (
                interrupted is None or start > interrupted):
            interrupted = start
    if notice is None or (interrupted is not None and interrupted >= notice):
        return None
    if now - notice > window:
        return None
    return notice


def notice_metadata(deadline, behavior, reason):
    """The notice keys to write on a victim's server metadata.

    :param deadline: the deadline as ISO 8601 UTC text (whole seconds).
    :param behavior: what happens then (one of :data:`BEHAVIORS`).
    :param reason: the cause told to the owner (text).
    :returns: ``{NOTICE_KEY: "preemption at <deadline> (<behavior>):
        <reason>"`` (cut at :data:`METADATA_MAX`), ``DEADLINE_KEY:
        deadline}``.
    """
    text = 'preemption at %s (%s): %s' % (deadline, behavior, reason)
    return {NOTICE_KEY: text[:METADATA_MAX], DEADLINE_KEY: deadline}


RESERVED = 'reserved'
TERMINATING = 'terminating'
#: Automatic restore (:data:`RESTORE_SPEC`): shelved and offloaded by the
#: ``shelve`` behaviour, waiting for free room; ``since`` is when it began
#: waiting. Not leaving, not a candidate (it is on no host).
RESTORE_PENDING = 'restore_pending'
#: Its unshelve was requested by the reconciler (``next_attempt``: when);
#: ``since`` is still when it began waiting. Cleared once it runs again;
#: back to :data:`RESTORE_PENDING` when the unshelve found no room.
RESTORING = 'restoring'
#: Interrupted ``opie:max_interruptions`` times: it stays shelved and its
#: owner is told why; cleared when its owner unshelves it.
RESTORE_GIVEN_UP = 'restore_given_up'
RESTORE_STATES = (RESTORE_PENDING, RESTORING, RESTORE_GIVEN_UP)
#: Under a headroom notice (:mod:`opie_sched.scheduler.headroom`): the
#: guest has its notice and the reconciler acts at ``next_attempt`` (the
#: deadline). Still running and an ordinary candidate victim for every
#: other actor (a normal request beyond the headroom may take it at once:
#: its notice is cut); only the headroom counts its room as on the way.
NOTICED = 'noticed'
STATES = (RESERVED, TERMINATING, NOTICED) + RESTORE_STATES

#: Cause words: what a victim's owner is told preempted it (the only detail
#: owners see; hosts, preemptors, requests and costs are for admins).
CAUSE_SCHEDULER = 'scheduler'
CAUSE_MARKET = 'market'
CAUSE_LIFETIME = 'max-lifetime'
CAUSE_RECONCILER = 'reconciler'
#: The reconciler keeping a pool's headroom (free room ahead of demand).
CAUSE_HEADROOM = 'headroom'
CAUSES = (CAUSE_SCHEDULER, CAUSE_MARKET, CAUSE_LIFETIME, CAUSE_RECONCILER,
          CAUSE_HEADROOM)


def cause_of(preemptor):
    """The cause word of a record's ``preemptor``: itself when it is one of
    :data:`CAUSES`, else ``scheduler`` (an instance uuid: the scheduler made
    room for that instance).
    """
    return preemptor if preemptor in CAUSES else CAUSE_SCHEDULER


_TIME_FORMAT = '%Y-%m-%dT%H:%M:%SZ'


def format_time(when):
    """ISO 8601 UTC text of a timezone-aware datetime (second precision)."""
    return when.astimezone(datetime.timezone.utc).strftime(_TIME_FORMAT)


def parse_time(text):
    """The timezone-aware datetime of :func:`format_time`'s text, or None
    when ``text`` is missing or not of that form.
    """
    if not text:
        return None
    try:
        return datetime.datetime.strptime(text, _TIME_FORMAT).replace(
            tzinfo=datetime.timezone.utc)
    except (TypeError, ValueError):
        return None


@dataclasses.dataclass(frozen=True)
class VictimState:
    """One victim's service-owned record.

    :param state: ``reserved``, ``terminating`` or ``noticed``.
    :param preemptor: the uuid of the instance the room is made for, or a
        word naming the cause (``reconciler``, ``max-lifetime``).
    :param since: when the state was entered (aware datetime, UTC).
    :param request_id: the request that chose the victim.
    :param attempts: terminations requested so far (>= 0).
    :param next_attempt: when the reconciler may try again (aware datetime)
        or None.
    :param reason: the details of the decision (host, preemptor, costs),
        for admins.
    :param action_request: request id of this victim's termination (see
        :data:`KEY_ACTION_REQUEST`), '' before it starts.
    :param behavior: one of :data:`BEHAVIORS`, '' before the first step.
    :param worker: tooz member id of the worker that reserved it ('' when
        unknown).
    :param interruptions: interruptions of the server with restore
        requested so far (>= 0; :data:`KEY_INTERRUPTIONS`). Not part of a
        record's identity in a compare-and-set: it is the server's count,
        which a new record (a reservation) keeps.
    """
    state: str
    preemptor: str
    since: datetime.datetime
    request_id: str = ''
    attempts: int = 0
    next_attempt: ty.Optional[datetime.datetime] = None
    reason: str = ''
    action_request: str = ''
    behavior: str = ''
    worker: str = ''
    interruptions: int = dataclasses.field(default=0, compare=False)

    def as_metadata(self):
        """The system metadata items (str → str) recording this state."""
        items = {KEY_STATE: self.state, KEY_PREEMPTOR: self.preemptor,
                 KEY_SINCE: format_time(self.since),
                 KEY_REQUEST: self.request_id or '',
                 KEY_ATTEMPTS: str(self.attempts),
                 KEY_REASON: (self.reason or '')[:255]}
        if self.next_attempt is not None:
            items[KEY_NEXT] = format_time(self.next_attempt)
        if self.action_request:
            items[KEY_ACTION_REQUEST] = self.action_request
        if self.behavior:
            items[KEY_BEHAVIOR] = self.behavior
        if self.worker:
            items[KEY_WORKER] = self.worker[:255]
        if self.interruptions > 0:
            items[KEY_INTERRUPTIONS] = str(self.interruptions)
        return items

    @classmethod
    def from_metadata(cls, sysmeta):
        """The state recorded in ``sysmeta`` (a mapping), or None when there
        is none or it is unreadable (an unreadable record is no record: the
        instance is then an ordinary candidate again).
        """
        if not sysmeta:
            return None
        state = sysmeta.get(KEY_STATE)
        since = parse_time(sysmeta.get(KEY_SINCE))
        if state not in STATES or since is None:
            return None
        try:
            attempts = max(int(sysmeta.get(KEY_ATTEMPTS) or 0), 0)
        except (TypeError, ValueError):
            attempts = 0
        return cls(state=state, preemptor=sysmeta.get(KEY_PREEMPTOR) or '',
                   since=since, request_id=sysmeta.get(KEY_REQUEST) or '',
                   attempts=attempts,
                   next_attempt=parse_time(sysmeta.get(KEY_NEXT)),
                   reason=sysmeta.get(KEY_REASON) or '',
                   action_request=sysmeta.get(KEY_ACTION_REQUEST) or '',
                   behavior=sysmeta.get(KEY_BEHAVIOR) or '',
                   worker=sysmeta.get(KEY_WORKER) or '',
                   interruptions=interruptions_of(sysmeta))

    def names(self, preemptor, request_id):
        """True when this record was made for ``preemptor`` (instance uuid
        or cause word) by the request ``request_id``.
        """
        return (self.preemptor == preemptor
                and self.request_id == (request_id or ''))

    def is_leaving(self, now, lease):
        """True when the victim's resources count as released.

        A ``terminating`` victim always does; a ``reserved`` one while its
        reservation is younger than ``lease`` seconds; no other (a
        ``noticed`` one still runs; a restore record's server is on no
        host, or runs again).
        """
        if self.state == TERMINATING:
            return True
        if self.state != RESERVED:
            return False
        return (now - self.since).total_seconds() < lease

    def retry_due(self, now):
        """True when a ``terminating`` victim may be terminated again (also
        when its task state is ``deleting``: a compute that accepted the
        delete and never finished it counts as leaving only until
        ``next_attempt``).
        """
        return (self.state == TERMINATING
                and (self.next_attempt is None or now >= self.next_attempt))

    def terminating(self, now, retry_interval, max_backoff):
        """The state after one more termination attempt starts at ``now``:
        ``attempts`` + 1 and ``next_attempt`` after
        :func:`backoff` seconds.
        """
        attempts = self.attempts + 1
        return dataclasses.replace(
            self, state=TERMINATING, attempts=attempts,
            next_attempt=now + datetime.timedelta(
                seconds=backoff(attempts, retry_interval, max_backoff)))


def backoff(attempts, interval, maximum):
    """Seconds to wait after the ``attempts``-th termination attempt before
    the next one: ``interval × 2^(attempts − 1)``, at most ``maximum``.

    :raises ValueError: for attempts < 1 or a negative interval/maximum.
    """
    if attempts < 1 or interval < 0 or maximum < 0:
        raise ValueError('attempts must be >= 1 and interval, maximum >= 0')
    return min(interval * (2 ** min(attempts - 1, 30)), maximum)


def may_act(state, step, preemptor=None, request_id=None, now=None):
    """Whether an actor may take a destructive ``step`` on a victim whose
    record, read at that moment, is ``state`` (None: no record).

    :param step: ``terminate`` (the first stop/delete of the request that
        reserved the victim: the record must be ``reserved`` and name
        ``preemptor`` and ``request_id``), ``finish`` (the delete of a
        victim the same request stopped: ``terminating`` and naming
        ``request_id``, and ``preemptor`` unless it is None) or
        ``retry`` (the reconciler: ``terminating`` and
        :meth:`VictimState.retry_due` at ``now``).
    :returns: True or False; the caller must still win the compare-and-set
        of the record before acting.
    :raises ValueError: for an unknown step.
    """
    if state is None:
        return False
    if step == 'terminate':
        return (state.state == RESERVED
                and state.names(preemptor, request_id))
    if step == 'finish':
        return (state.state == TERMINATING
                and state.request_id == (request_id or '')
                and (preemptor is None or state.preemptor == preemptor))
    if step == 'retry':
        return state.retry_due(now)
    raise ValueError('unknown step %r' % step)


def reserve(preemptor, now, request_id='', reason='', worker=''):
    """A new ``reserved`` :class:`VictimState` (``worker``: the tooz
    member id of the reserving worker).
    """
    return VictimState(state=RESERVED, preemptor=preemptor, since=now,
                       request_id=request_id or '', reason=reason or '',
                       worker=worker or '')


def interruptions_of(sysmeta):
    """The interruption count kept in ``sysmeta`` (:data:`KEY_INTERRUPTIONS`;
    0 when missing or unreadable), with or without a record.
    """
    try:
        return max(int((sysmeta or {}).get(KEY_INTERRUPTIONS) or 0), 0)
    except (TypeError, ValueError):
        return 0


# -- automatic restore -------------------------------------------------------

#: Flavor extra spec asking for automatic restore of a preemptible server
#: interrupted with the ``shelve`` behaviour: ``auto`` (unshelved by the
#: reconciler when free room returns) or ``off`` (the default: it stays
#: shelved until its owner unshelves it).
RESTORE_SPEC = 'opie:restore'
RESTORE_AUTO = 'auto'
RESTORE_OFF = 'off'
RESTORE_MODES = (RESTORE_AUTO, RESTORE_OFF)
#: Flavor extra spec: after this many interruptions (an int >= 1) a server
#: with restore stays shelved and its owner is told why. Unset: no limit.
MAX_INTERRUPTIONS_SPEC = 'opie:max_interruptions'


def restore_requested(extra_specs):
    """True when a flavor's ``opie:restore`` is ``auto``. Only the
    flavor (admin-written) decides; a malformed value is ``off`` (the API
    validates new flavors).
    """
    return (extra_specs or {}).get(RESTORE_SPEC) == RESTORE_AUTO


def max_interruptions(extra_specs):
    """A flavor's ``opie:max_interruptions`` (an int >= 1), or 0 for no
    limit (unset or malformed: the API validates new flavors).
    """
    try:
        value = int((extra_specs or {}).get(MAX_INTERRUPTIONS_SPEC))
    except (TypeError, ValueError):
        return 0
    return value if value >= 1 else 0


#: Server metadata key of the owner's preference for their own server:
#: ``off`` keeps it shelved while set (its record waits; ``auto`` or
#: removing the key lets it be restored again). It can only opt a server
#: out: the flavor decides whether it has a restore record at all, and
#: nothing here orders, counts or places anybody's restore.
OWNER_RESTORE_KEY = 'opie:restore'


def owner_opted_out(metadata):
    """``(opted out, problem)`` from a server's metadata (user-written,
    so validated here): ``(True, None)`` for ``opie:restore=off``,
    ``(False, None)`` for ``auto`` or no key, ``(False, text)`` for any
    other value (ignored: the flavor's choice applies).
    """
    value = (metadata or {}).get(OWNER_RESTORE_KEY)
    if value is None or value == RESTORE_AUTO:
        return False, None
    if value == RESTORE_OFF:
        return True, None
    return False, ('server metadata %s=%r ignored: auto or off'
                   % (OWNER_RESTORE_KEY, str(value)[:40]))


def after_release(state, behavior, vm_state, extra_specs, now):
    """The record of a victim its behaviour has just released, or None
    (no record: an ordinary server of its owner, or gone).

    A victim interrupted by the ``shelve`` behaviour, now
    ``shelved_offloaded``, whose flavor asks for restore
    (:func:`restore_requested`) and that was not ended for its maximum
    lifetime gets its interruption counted (``interruptions`` + 1) and
    becomes :data:`RESTORE_PENDING` (waiting since ``now``), or
    :data:`RESTORE_GIVEN_UP` once the count reaches the flavor's
    :func:`max_interruptions`.

    :param state: the victim's :class:`VictimState` (``terminating``).
    :param behavior: the behaviour that released it (after any fallback).
    :param vm_state: its Nova vm_state now.
    :param extra_specs: its flavor's extra specs.
    :param now: aware datetime.
    :returns: :class:`VictimState` or None.
    """
    if (state is None or behavior != SHELVE
            or vm_state != behaviours.SHELVED_OFFLOADED
            or not restore_requested(extra_specs)
            or cause_of(state.preemptor) == CAUSE_LIFETIME):
        return None
    count = state.interruptions + 1
    limit = max_interruptions(extra_specs)
    given_up = bool(limit) and count >= limit
    return dataclasses.replace(
        state, state=RESTORE_GIVEN_UP if given_up else RESTORE_PENDING,
        since=now, attempts=0, next_attempt=None, worker='',
        interruptions=count)


def restoring(state, now):
    """The record once the reconciler requested the unshelve of a
    :data:`RESTORE_PENDING` server at ``now`` (``since`` kept: its place
    in the queue if the unshelve finds no room).
    """
    return dataclasses.replace(state, state=RESTORING, next_attempt=now)


def restore_failed(state):
    """The record of a :data:`RESTORING` server whose unshelve found no
    room (it is shelved and offloaded again): pending again, in its place.
    """
    return dataclasses.replace(state, state=RESTORE_PENDING,
                               next_attempt=None)


def restore_order(bid, state, uuid=''):
    """Sort key of pending restores: the highest ``bid`` first (a number:
    the server's bid, or its flavor's cost when the scheduler knows no
    bid), then the longest waiting (:attr:`VictimState.since`), then the
    uuid (a stable order).
    """
    return (-float(bid), state.since, uuid)


#: Values of the server metadata ``opie:preempted_by`` the market writes
#: on its victims (its preemption; an owner's interruption drill): only a
#: filter of whom to look at (the owner can write them), never proof.
MARKET_MARKS = ('opie-market', 'opie-market-drill')
#: Nova's instance action of a shelve (``nova.compute.instance_actions.
#: SHELVE``): recorded by Nova's API with the user and project of the
#: token that asked for it.
SHELVE_ACTION = 'shelve'


def shelved_by_another_project(actions, project_id):
    """Whether the newest shelve of a server was asked from outside its
    own project: the service-owned proof that the market (its service
    user, with its own project) interrupted the server, not its owner.

    Rule: the server's newest :data:`SHELVE_ACTION` instance action (by
    start time) was asked by a project other than ``project_id``. Users
    cannot write instance actions, and Nova records the project of the
    token that asked: an owner's own shelve (any user of the server's
    project) never passes, nor does a market shelve the owner's later
    unshelve and shelve replaced. A ``shelveOffload`` alone does not
    count (the market offloads a server its owner shelved).

    :param actions: iterable of ``(action name, project id, start time)``
        (start: any ordered value, e.g. a datetime; None is skipped).
    :param project_id: the server's project.
    :returns: bool.
    """
    newest = None
    for name, project, start in actions:
        if name != SHELVE_ACTION or start is None:
            continue
        if newest is None or start > newest[1]:
            newest = (project, start)
    return newest is not None and bool(newest[0]) and \
        newest[0] != project_id


def after_market_release(interruptions, extra_specs, now):
    """The restore record of a server the market shelved and offloaded
    (:func:`shelved_by_another_project`), by the rules of
    :func:`after_release` (``preemptor`` the cause word ``market``): its
    interruption counted (``interruptions`` + 1), then
    :data:`RESTORE_PENDING`, or :data:`RESTORE_GIVEN_UP` at the flavor's
    :func:`max_interruptions`; None when its flavor asks for no restore.

    :param interruptions: the server's count so far
        (:func:`interruptions_of`).
    """
    state = VictimState(state=TERMINATING, preemptor=CAUSE_MARKET,
                        since=now, behavior=SHELVE,
                        interruptions=interruptions)
    return after_release(state, SHELVE, behaviours.SHELVED_OFFLOADED,
                         extra_specs, now)


def given_up_message(count, limit):
    """What the owner of a server left shelved is told (instance fault and
    server metadata): the count and the flavor's limit.
    """
    return ('Not restored: interrupted %d times, the limit of its flavor '
            '(opie:max_interruptions=%d); unshelve it to start it again'
            % (count, limit))
