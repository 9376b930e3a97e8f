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
"""Simulated time: timed events, arrivals and fixed steps.

Times are floats in the model's unit (seconds for the event-driven models,
minutes or periods for the stepped ones); nothing here reads a wall clock.

* :class:`EventQueue` -- events (departures, deferred work) ordered by
  ``(time, priority, insertion)``: deterministic, first in first out among
  equals.
* :class:`Arrivals` -- a workload's items sorted once by a key, handed out
  as simulated time passes them.
* :func:`merge` -- the event loop of the event-driven models: queued events
  and arrivals in time order, queued events first at equal times.
* :class:`StepClock` -- time advancing in equal steps, with a jump over
  idle time to the step grid (:meth:`StepClock.run`, the loop of the
  stepped models).
"""

import heapq
import math
import numbers

#: What :func:`merge` yields first in each tuple.
EVENT = 'event'
ARRIVAL = 'arrival'


class EventQueue:
    """Pending events, earliest first.

    Ties at the same time are broken by ``priority`` (lower first), then by
    insertion order, so a run is reproducible whatever the items are
    (items themselves are never compared).
    """

    def __init__(self):
        self._heap = []
        self._seq = 0

    def push(self, t, item, priority=0):
        """Schedule ``item`` at time ``t``."""
        self._seq += 1
        heapq.heappush(self._heap, (t, priority, self._seq, item))

    def pop(self):
        """``(t, item)`` of the earliest event.

        :raises IndexError: the queue is empty.
        """
        t, _, _, item = heapq.heappop(self._heap)
        return t, item

    def next_time(self):
        """Time of the earliest event, or None when empty."""
        return self._heap[0][0] if self._heap else None

    def drain(self):
        """The event loop of a model whose every event is queued: yields
        ``(t, item)`` until the queue is empty, events pushed meanwhile
        included.
        """
        while self._heap:
            yield self.pop()

    def __len__(self):
        return len(self._heap)

    def __bool__(self):
        return bool(self._heap)


class Arrivals:
    """A workload in arrival order.

    :param items: the workload (any iterable; read once).
    :param key: sort key of an item (default: the item); the sort is
        stable, so items with equal keys keep their input order.
    :param time: an item's arrival time (default: ``key``).

    :attr:`position` counts the items handed out; it is also the index,
    in arrival order, of the next one.
    """

    def __init__(self, items, key=None, time=None):
        key = key or (lambda item: item)
        self._items = sorted(items, key=key)
        self._time = time or key
        self.position = 0

    def __len__(self):
        """Items not handed out yet."""
        return len(self._items) - self.position

    def __bool__(self):
        return self.position < len(self._items)

    @property
    def total(self):
        """Items in the workload."""
        return len(self._items)

    @property
    def items(self):
        """Every item, in arrival order (a list; do not change it)."""
        return self._items

    def last_time(self):
        """Arrival time of the last item, or None for an empty workload."""
        return self._time(self._items[-1]) if self._items else None

    def next_time(self):
        """Arrival time of the next item, or None when all are out."""
        if self.position >= len(self._items):
            return None
        return self._time(self._items[self.position])

    def pop(self):
        """``(index, item)`` of the next arrival (index in arrival order).

        :raises IndexError: every item is out.
        """
        if self.position >= len(self._items):
            raise IndexError('no arrival left')
        index = self.position
        self.position += 1
        return index, self._items[index]

    def due(self, now):
        """The items arriving at or before ``now``, in arrival order."""
        out = []
        items, time_of = self._items, self._time
        while self.position < len(items) and \
                time_of(items[self.position]) <= now:
            out.append(items[self.position])
            self.position += 1
        return out


def merge(arrivals, queue):
    """The event loop: queued events and arrivals in time order.

    Yields ``(EVENT, t, item)`` for a popped :class:`EventQueue` event and
    ``(ARRIVAL, t, (index, item))`` for the next of :class:`Arrivals`.
    A queued event at time ``t`` comes before an arrival at ``t`` (a
    departure frees its room before the next request is placed). Events
    pushed while the loop runs are seen at once.
    """
    while arrivals or queue:
        nxt = arrivals.next_time()
        if queue and (nxt is None or queue.next_time() <= nxt):
            t, item = queue.pop()
            yield EVENT, t, item
        else:
            yield ARRIVAL, nxt, arrivals.pop()


class StepClock:
    """Time advancing in equal steps.

    :param step: length of a step (> 0), in the model's unit.
    :param start: initial time.
    :raises ValueError: ``step`` not a finite number > 0.

    :attr:`now` is the current time, :attr:`ticks` the number of
    :meth:`tick` calls.
    """

    def __init__(self, step, start=0.0):
        if isinstance(step, bool) or not isinstance(step, numbers.Real) \
                or not math.isfinite(step) or step <= 0:
            raise ValueError('step must be a finite number > 0, got %r'
                             % (step,))
        self.step = step
        self.now = start
        self.ticks = 0

    def tick(self):
        """Advance one step; returns the new time."""
        self.now += self.step
        self.ticks += 1
        return self.now

    def skip_to(self, t):
        """Jump over idle time: to the last step boundary at or before
        ``t`` (``step × floor(t / step)``), never backwards.
        """
        self.now = max(self.now, self.step * math.floor(t / self.step))
        return self.now

    def run(self, arrivals, busy):
        """The loop of a stepped model fed by :class:`Arrivals`.

        Yields ``(now, due)`` once per step while arrivals remain or
        ``busy()`` is true, ``due`` being the arrivals up to ``now``. The
        caller advances the clock in the step (:meth:`tick`); when
        ``busy()`` is false after a step, the clock jumps to the step of
        the next arrival (:meth:`skip_to`).
        """
        while arrivals or busy():
            yield self.now, arrivals.due(self.now)
            if not busy() and arrivals:
                self.skip_to(arrivals.next_time())

    def steps(self, n):
        """``(k, k × step)`` for ``k`` in ``0..n-1`` (each time computed
        from its index, not accumulated); sets :attr:`now` as it goes.
        """
        for k in range(n):
            self.now = k * self.step
            self.ticks = k
            yield k, self.now
