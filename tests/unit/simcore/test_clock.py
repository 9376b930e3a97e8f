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
"""Tests of the simulation clock and event queue (opie_sched.simcore.clock)."""

import fractions

import testtools

from opie_sched.simcore import clock


class EventQueueTest(testtools.TestCase):

    def test_time_then_priority_then_insertion(self):
        q = clock.EventQueue()
        q.push(5.0, 'late')
        q.push(1.0, 'b', priority=1)
        q.push(1.0, 'a', priority=0)
        q.push(1.0, 'c', priority=1)
        self.assertEqual(1.0, q.next_time())
        self.assertEqual(4, len(q))
        got = [q.pop() for _ in range(4)]
        self.assertEqual([(1.0, 'a'), (1.0, 'b'), (1.0, 'c'),
                          (5.0, 'late')], got)
        self.assertFalse(q)
        self.assertIsNone(q.next_time())
        self.assertRaises(IndexError, q.pop)

    def test_items_are_never_compared(self):
        q = clock.EventQueue()
        q.push(1.0, {'x': 1})
        q.push(1.0, {'y': 2})        # dicts do not order: no TypeError
        self.assertEqual({'x': 1}, q.pop()[1])

    def test_drain_sees_pushes(self):
        q = clock.EventQueue()
        q.push(1.0, 'a')
        got = []
        for t, item in q.drain():
            got.append((t, item))
            if item == 'a':
                q.push(0.5, 'late push, earlier time')
                q.push(2.0, 'b')
        self.assertEqual([(1.0, 'a'), (0.5, 'late push, earlier time'),
                          (2.0, 'b')], got)
        self.assertFalse(q)

    def test_tuple_priority(self):
        q = clock.EventQueue()
        q.push(2.0, 'dep 7', priority=(3, 7))
        q.push(2.0, 'dep 3', priority=(3, 3))
        q.push(2.0, 'sample', priority=(0, -1))
        self.assertEqual(['sample', 'dep 3', 'dep 7'],
                         [q.pop()[1] for _ in range(3)])


class ArrivalsTest(testtools.TestCase):

    def test_sorted_stably_and_handed_out_by_time(self):
        items = [('c', 3.0), ('a', 1.0), ('b', 1.0), ('d', 7.0)]
        arr = clock.Arrivals(items, key=lambda x: x[1])
        self.assertEqual(4, arr.total)
        self.assertEqual(7.0, arr.last_time())
        self.assertEqual(1.0, arr.next_time())
        self.assertEqual([('a', 1.0), ('b', 1.0)], arr.due(2.0))
        self.assertEqual([], arr.due(2.5))
        self.assertEqual((2, ('c', 3.0)), arr.pop())
        self.assertEqual(1, len(arr))
        self.assertEqual([('d', 7.0)], arr.due(7.0))
        self.assertFalse(arr)
        self.assertIsNone(arr.next_time())
        self.assertRaises(IndexError, arr.pop)

    def test_separate_time_and_key(self):
        items = [(1.0, 9), (1.0, 2), (0.5, 5)]
        arr = clock.Arrivals(items, key=lambda x: (x[0], x[1]),
                             time=lambda x: x[0])
        self.assertEqual([(0.5, 5), (1.0, 2), (1.0, 9)], arr.items)
        self.assertEqual(0.5, arr.next_time())

    def test_empty(self):
        arr = clock.Arrivals([])
        self.assertIsNone(arr.last_time())
        self.assertEqual([], arr.due(1e9))


class MergeTest(testtools.TestCase):

    def test_events_first_at_equal_times_and_pushes_seen(self):
        arr = clock.Arrivals([1.0, 2.0, 4.0])
        q = clock.EventQueue()
        q.push(2.0, 'd0')
        seen = []
        for kind, t, item in clock.merge(arr, q):
            seen.append((kind, t, item))
            if kind is clock.ARRIVAL and item[0] == 0:
                q.push(3.0, 'd1')          # pushed during the loop
        self.assertEqual([
            (clock.ARRIVAL, 1.0, (0, 1.0)),
            (clock.EVENT, 2.0, 'd0'),
            (clock.ARRIVAL, 2.0, (1, 2.0)),
            (clock.EVENT, 3.0, 'd1'),
            (clock.ARRIVAL, 4.0, (2, 4.0))], seen)


class StepClockTest(testtools.TestCase):

    def test_tick_and_skip(self):
        c = clock.StepClock(300.0)
        self.assertEqual(0.0, c.now)
        self.assertEqual(300.0, c.tick())
        self.assertEqual(1, c.ticks)
        self.assertEqual(1500.0, c.skip_to(1799.0))    # floor to the grid
        self.assertEqual(1500.0, c.skip_to(10.0))      # never backwards
        self.assertEqual(1800.0, c.tick())

    def test_run_jumps_over_idle_time(self):
        c = clock.StepClock(10.0)
        arr = clock.Arrivals([3.0, 4.0, 95.0])
        running = []
        seen = []
        for now, due in c.run(arr, lambda: running):
            seen.append((now, list(due)))
            running.extend(due)
            c.tick()
            if now >= 10.0:
                running.clear()        # the work is done after two steps
        self.assertEqual([(0.0, []), (10.0, [3.0, 4.0]), (90.0, []),
                          (100.0, [95.0])], seen)

    def test_steps_from_index(self):
        c = clock.StepClock(60.0)
        self.assertEqual([(0, 0.0), (1, 60.0), (2, 120.0)],
                         list(c.steps(3)))
        self.assertEqual(120.0, c.now)

    def test_exact_step(self):
        c = clock.StepClock(fractions.Fraction(1, 12))
        for _ in range(12):
            c.tick()
        self.assertEqual(1, c.now)

    def test_bad_step(self):
        for bad in (0, -1.0, float('inf'), float('nan'), True, '1'):
            self.assertRaises(ValueError, clock.StepClock, bad)
