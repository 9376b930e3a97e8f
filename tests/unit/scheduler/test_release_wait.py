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
"""The wait for victims (:func:`opie_sched.scheduler.actions.wait_for` and
:func:`~opie_sched.scheduler.actions.release`) on a simulated clock: how
late a deletion is seen, how many reads it costs, and that release's own
read is the first round.

The cell database is a stand-in for ``actions._states`` that answers from
the simulated clock: the victim is deleted from ``gone_at`` seconds on.
"""

import dataclasses
import datetime
from unittest import mock

import fixtures
from oslo_utils.fixture import uuidsentinel as uuids
import testtools

from nova import objects

from opie_sched.preemption import victim_state as vs
from opie_sched.scheduler import actions

objects.register_all()

NOW = datetime.datetime(2026, 11, 25, 22, 0, 0,
                        tzinfo=datetime.timezone.utc)
#: The record of a victim whose delete request ``req-1`` started.
RECORD = dataclasses.replace(
    vs.reserve('preemptor', NOW, request_id='req-1').terminating(
        NOW, 60, 600), behavior=vs.DELETE).as_metadata()


class Clock:
    """``time.monotonic`` and ``time.sleep`` of a simulated clock."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        assert seconds >= 0, seconds
        self.now += seconds


class Cell:
    """The victims' rows: ``gone_at[uuid]`` is the simulated time of the
    victim's deletion (None: never); each read is recorded.
    """

    def __init__(self, clock, gone_at):
        self.clock = clock
        self.gone_at = gone_at
        self.reads = []

    def states(self, ctx, cell_uuid, uuids_):
        self.reads.append(self.clock.now)
        out = {}
        for uuid in uuids_:
            at = self.gone_at[uuid]
            gone = at is not None and self.clock.now >= at
            out[uuid] = objects.Instance(
                uuid=uuid, deleted=gone,
                vm_state='deleted' if gone else 'active',
                task_state=None if gone else 'deleting',
                system_metadata=dict(RECORD))
        return out


class _Base(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.clock = Clock()
        self.useFixture(fixtures.MockPatchObject(
            actions.time, 'monotonic', self.clock.monotonic))
        self.useFixture(fixtures.MockPatchObject(
            actions.time, 'sleep', self.clock.sleep))

    def cell(self, **gone_at):
        """Victims ``uuids.<name>`` deleted ``gone_at[name]`` seconds from
        now.
        """
        cell = Cell(self.clock, {
            getattr(uuids, name): (None if at is None
                                   else self.clock.now + at)
            for name, at in gone_at.items()})
        self.useFixture(fixtures.MockPatchObject(
            actions, '_states', cell.states))
        return cell


class PollScheduleTest(_Base):

    def test_pause_is_an_eighth_of_the_wait_within_bounds(self):
        # seconds waited -> seconds to the next check, poll_interval 0.5
        for waited, pause in ((0.0, 0.05), (0.3, 0.05), (0.4, 0.05),
                              (0.8, 0.1), (2.0, 0.25), (4.0, 0.5),
                              (60.0, 0.5)):
            self.assertAlmostEqual(pause, actions.poll_pause(waited, 0.5),
                                   msg='after %s s' % waited)
        # an operator's poll_interval below the first spacing wins
        self.assertEqual(0.01, actions.poll_pause(0.0, 0.01))

    def test_a_deletion_is_seen_at_most_an_eighth_late(self):
        # nova marks a victim deleted 0.4-1.5 s after the delete on the
        # devcloud; the doubling schedule (0.02 s doubling up to 0.5 s)
        # saw one gone at 0.7 s only at 1.12 s
        for gone in (0.03, 0.3, 0.45, 0.7, 1.0, 1.3, 2.5, 3.9):
            self.clock.now = 1000.0
            cell = self.cell(v=gone)
            self.assertTrue(actions.wait_for(
                None, None, [uuids.v], actions.is_deleted, 120, 0.5))
            late = cell.reads[-1] - (1000.0 + gone)
            self.assertGreaterEqual(late, 0)
            self.assertLessEqual(
                late, max(0.05, gone / 8) + 1e-9,
                'deleted at %s s, seen %.3f s late' % (gone, late))

    def test_reads_grow_with_the_log_of_the_wait(self):
        # a 1 s wait: a read every 0.05 s up to 0.4 s, then 1/8 apart
        cell = self.cell(v=1.0)
        actions.wait_for(None, None, [uuids.v], actions.is_deleted, 120,
                         0.5)
        self.assertLessEqual(len(cell.reads), 17)
        # a victim that never goes: a 10 s timeout costs under 45 reads
        self.clock.now = 1000.0
        cell = self.cell(v=None)
        self.assertFalse(actions.wait_for(
            None, None, [uuids.v], actions.is_deleted, 10, 0.5))
        self.assertLess(len(cell.reads), 45)
        self.assertAlmostEqual(1010.0, self.clock.now)

    def test_several_victims_are_waited_for_together(self):
        cell = self.cell(a=0.2, b=0.9)
        self.assertTrue(actions.wait_for(
            None, None, [uuids.a, uuids.b], actions.is_deleted, 120, 0.5))
        self.assertLessEqual(cell.reads[-1] - 1000.9, 0.9 / 8 + 1e-9)


class ReleaseFirstReadTest(_Base):
    """release() reads the victims to learn their behaviour; for plain
    deletes that read is the wait's first round, not a second query.
    """

    def setUp(self):
        super().setUp()
        for name, value in (('release_timeout', 120.0),
                            ('poll_interval', 0.5)):
            self.useFixture(fixtures.MockPatchObject(
                actions.CONF.opie_preemption, name, value))
        self.ctx = mock.Mock(request_id='req-1')

    def test_victims_already_gone_cost_one_read(self):
        cell = self.cell(a=0.0, b=0.0)
        self.assertTrue(actions.release(self.ctx, None,
                                        [uuids.a, uuids.b]))
        self.assertEqual([1000.0], cell.reads)

    def test_the_next_rounds_follow_the_schedule(self):
        cell = self.cell(a=0.12)
        self.assertTrue(actions.release(self.ctx, None, [uuids.a]))
        self.assertEqual([1000.0, 1000.05, 1000.1, 1000.15],
                         [round(t, 6) for t in cell.reads])
