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
    and delete) the reconciler tries again once ``next_attempt`` has
    passed, with an exponential backoff, and raises an operator-visible
    fault after ``max_attempts``.

Nothing a user can write (server metadata, tags, names) takes part in these
rules. This module has no Nova imports.
"""

import dataclasses
import datetime
import typing as ty

#: System metadata keys (Nova prefixes nothing: these are the stored keys).
KEY_STATE = 'opie_victim_state'
KEY_PREEMPTOR = 'opie_victim_of'
KEY_SINCE = 'opie_victim_since'
KEY_REQUEST = 'opie_victim_request'
KEY_ATTEMPTS = 'opie_victim_attempts'
KEY_NEXT = 'opie_victim_next_attempt'
KEY_REASON = 'opie_victim_reason'
#: The tooz member id of the scheduler worker that reserved the victim
#: (see :mod:`opie_sched.scheduler.locks`: its reservations end when it
#: is known dead).
KEY_WORKER = 'opie_victim_worker'
KEYS = (KEY_STATE, KEY_PREEMPTOR, KEY_SINCE, KEY_REQUEST, KEY_ATTEMPTS,
        KEY_NEXT, KEY_REASON, KEY_WORKER)

RESERVED = 'reserved'
TERMINATING = 'terminating'
STATES = (RESERVED, TERMINATING)

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

    :param state: ``reserved`` or ``terminating``.
    :param preemptor: the uuid of the instance the room is made for, or a
        word naming the cause (``reconciler``, ``max-lifetime``).
    :param since: when the state was entered (aware datetime, UTC).
    :param request_id: the request that chose the victim.
    :param attempts: terminations requested so far (>= 0).
    :param next_attempt: when the reconciler may try again (aware datetime)
        or None.
    :param reason: the text shown to the owner.
    :param worker: tooz member id of the worker that reserved it ('' when
        unknown).
    """
    state: str
    preemptor: str
    since: datetime.datetime
    request_id: str = ''
    attempts: int = 0
    next_attempt: ty.Optional[datetime.datetime] = None
    reason: str = ''
    worker: str = ''

    def as_metadata(self):
        """The system metadata items (str → str) recording this state."""
        items = {KEY_STATE: self.state, KEY_PREEMPTOR: self.preemptor,
                 KEY_SINCE: format_time(self.since),
                 KEY_REQUEST: self.request_id or '',
                 KEY_ATTEMPTS: str(self.attempts),
                 KEY_REASON: (self.reason or '')[:255]}
        if self.next_attempt is not None:
            items[KEY_NEXT] = format_time(self.next_attempt)
        if self.worker:
            items[KEY_WORKER] = self.worker[:255]
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
                   worker=sysmeta.get(KEY_WORKER) or '')

    def is_leaving(self, now, lease):
        """True when the victim's resources count as released.

        A ``terminating`` victim always does; a ``reserved`` one while its
        reservation is younger than ``lease`` seconds.
        """
        if self.state == TERMINATING:
            return True
        return (now - self.since).total_seconds() < lease

    def retry_due(self, now):
        """True when a ``terminating`` victim may be terminated again."""
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


def reserve(preemptor, now, request_id='', reason='', worker=''):
    """A new ``reserved`` :class:`VictimState` (``worker``: the tooz
    member id of the reserving worker).
    """
    return VictimState(state=RESERVED, preemptor=preemptor, since=now,
                       request_id=request_id or '', reason=reason or '',
                       worker=worker or '')
