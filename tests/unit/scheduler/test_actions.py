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
read is the first round; and the termination of victims (TerminateTest,
on nova objects).

The cell database is a stand-in for ``actions._states`` that answers from
the simulated clock: the victim is deleted from ``gone_at`` seconds on.
"""

import dataclasses
import datetime
import types
from unittest import mock

import fixtures
from oslo_utils.fixture import uuidsentinel as uuids
import testtools

from nova import objects

from opie_sched.preemption import victim_state as vs
from opie_sched.preemption import victim_state
from opie_sched.scheduler import actions
from opie_sched.scheduler import host_capacity
from tests.unit.scheduler import victim_helpers
from tests.unit.scheduler.victim_helpers import flavor
from tests.unit.scheduler.victim_helpers import instance


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


class TerminateTest(testtools.TestCase):
    """actions.terminate on instances as the database returns them: every
    step re-checks the victim and wins the record's compare-and-set first.
    """

    def setUp(self):
        super().setUp()
        from opie_sched.scheduler import actions
        self.actions = actions
        self.rows = {}
        self.useFixture(fixtures.MockPatch(
            'opie_sched.scheduler.reservations.load_by_uuid',
            side_effect=lambda cctxt, uuids: {
                u: self.rows[u] for u in uuids if u in self.rows}))
        self.useFixture(fixtures.MockPatch(
            'opie_sched.scheduler.reservations.cell_context',
            side_effect=lambda ctx, cell: types.SimpleNamespace(
                request_id=ctx.request_id)))
        # one journal of every step, in order
        self.calls = []
        self.cas_wins = True

        def swap(cctxt, inst, expected, new):
            self.calls.append(('swap', inst.uuid, expected, new))
            return self.cas_wins

        self.useFixture(fixtures.MockPatch(
            'opie_sched.scheduler.reservations.swap_state',
            side_effect=swap))
        self.api = mock.Mock()
        for verb in ('delete', 'stop', 'shelve', 'shelve_offload'):
            getattr(self.api, verb).side_effect = (
                lambda c, inst, verb=verb: self.calls.append(
                    (verb, inst.uuid, c.request_id)))
        self.useFixture(fixtures.MockPatchObject(
            actions, 'compute_api', return_value=self.api))
        self.useFixture(fixtures.MockPatchObject(
            actions, 'mark_victim', side_effect=lambda c, inst, *a:
            self.calls.append(('mark', inst.uuid, c.request_id))))
        # retried victims were marked by their first attempt
        self.useFixture(fixtures.MockPatchObject(
            actions, 'is_marked', return_value=True))
        self.ctx = mock.Mock(request_id='req-1')
        # the guest's notice (server metadata); in the journal when
        # journal_notices
        self.notices = {}
        self.journal_notices = False

        def write(cctxt, uuid, metadata, delete):
            self.assertFalse(delete)
            if self.journal_notices:
                self.calls.append(('notice', uuid))
            self.notices.setdefault(uuid, {}).update(metadata)

        def remove(cctxt, uuid, key):
            self.notices.get(uuid, {}).pop(key, None)

        self.useFixture(fixtures.MockPatchObject(
            actions.main_db, 'instance_metadata_update', side_effect=write))
        self.useFixture(fixtures.MockPatchObject(
            actions.main_db, 'instance_metadata_delete', side_effect=remove))
        self.sleep = self.useFixture(fixtures.MockPatch(
            'opie_sched.scheduler.actions.time.sleep')).mock
        # the notice's wait (which ends early when the victims release:
        # tests/functional/test_headroom.py) as one sleep of its length
        self.useFixture(fixtures.MockPatch(
            'opie_sched.scheduler.actions.wait_notice',
            side_effect=lambda ctx, by_cell, seconds: self.sleep(seconds)))

    def reserved(self, uuid, flv=None, request_id='req-1', **kwargs):
        state = vs.reserve(uuids.p, victim_helpers.NOW, request_id, 'details')
        self.rows[uuid] = instance(uuid, flv or flavor(2, 4000, 40),
                                   sysmeta=state.as_metadata(), **kwargs)
        return state

    def test_a_victim_resized_to_a_normal_flavor_is_spared(self):
        state = self.reserved(uuids.a, flavor(2, 4000, 40, False))
        # a notice written before (the market's, or ours before a resize)
        self.notices[uuids.a] = {vs.NOTICE_KEY: 'x',
                                 vs.DEADLINE_KEY: 'y', 'mine': 'z'}
        self.assertEqual([], self.actions.terminate(
            self.ctx, None, [uuids.a], uuids.p, action='delete'))
        # its record is cleared (compare-and-set), nothing else happens
        self.assertEqual([('swap', uuids.a, state, None)], self.calls)
        # and the notice is withdrawn, the owner's keys kept
        self.assertEqual({'mine': 'z'}, self.notices[uuids.a])

    def test_the_guest_is_noticed_before_the_action(self):
        self.useFixture(fixtures.MockPatchObject(
            host_capacity.CONF.opie_preemption, 'notice_seconds', 7.5))
        self.useFixture(fixtures.MockPatchObject(
            host_capacity.CONF.opie_preemption, 'reservation_timeout', 300))
        self.journal_notices = True
        self.reserved(uuids.a)
        self.reserved(uuids.b, request_id='req-other')
        self.assertEqual([uuids.a], self.actions.terminate(
            self.ctx, None, [uuids.a, uuids.b], uuids.p,
            action='stop'))
        self.assertEqual(['notice', 'swap', 'mark', 'stop'],
                         [c[0] for c in self.calls])
        # only the victim this request may act on; the cause word only
        self.assertEqual([uuids.a], list(self.notices))
        notice = self.notices[uuids.a]
        deadline = notice[vs.DEADLINE_KEY]
        self.assertEqual('preemption at %s (stop): preempted by the '
                         'scheduler' % deadline, notice[vs.NOTICE_KEY])
        self.sleep.assert_called_once_with(7.5)

    def test_notice_waits_once_for_all_hosts_and_is_bounded(self):
        self.useFixture(fixtures.MockPatchObject(
            host_capacity.CONF.opie_preemption, 'notice_seconds', 500))
        self.useFixture(fixtures.MockPatchObject(
            host_capacity.CONF.opie_preemption, 'release_timeout', 120))
        self.useFixture(fixtures.MockPatchObject(
            host_capacity.CONF.opie_preemption, 'reservation_timeout', 300))
        self.reserved(uuids.a)
        self.reserved(uuids.b)
        noticed = self.actions.notify_guests(
            self.ctx, [('cell1', [uuids.a], uuids.p),
                       ('cell2', [uuids.b], uuids.p)], 'delete')
        self.assertEqual({uuids.a, uuids.b}, noticed)
        # one wait, bounded by release_timeout and reservation_timeout / 3
        self.sleep.assert_called_once_with(100.0)
        # a retry gives no new notice and does not wait
        self.sleep.reset_mock()
        self.journal_notices = True
        self.calls.clear()
        self.actions.terminate(self.ctx, None, [uuids.a], 'reconciler',
                               action='delete', retry=True)
        self.assertNotIn('notice', [c[0] for c in self.calls])
        self.sleep.assert_not_called()

    def test_record_written_before_the_delete_and_failure_is_kept(self):
        state = self.reserved(uuids.a)
        self.assertEqual([uuids.a], self.actions.terminate(
            self.ctx, None, [uuids.a], uuids.p, action='delete'))
        [swap, mark, delete] = self.calls
        # the ORDER: the record, then the owner's marks, then the delete
        self.assertEqual(('swap', uuids.a, state), swap[:3])
        new = swap[3]
        self.assertEqual((vs.TERMINATING, 1, uuids.p, 'req-1'),
                         (new.state, new.attempts, new.preemptor,
                          new.request_id))
        self.assertIsNotNone(new.next_attempt)
        # the victim's actions carry a fresh request id, never the
        # preemptor's
        self.assertNotEqual('req-1', new.action_request)
        self.assertEqual(('mark', uuids.a, new.action_request), mark)
        self.assertEqual(('delete', uuids.a, new.action_request), delete)
        # a failing delete: nothing done, the record stays terminating
        self.calls.clear()
        self.reserved(uuids.b)
        self.api.delete.side_effect = RuntimeError('compute down')
        with self.assertLogs('opie_sched.scheduler.actions', 'WARNING'):
            done = self.actions.terminate(self.ctx, None, [uuids.b],
                                          uuids.p, action='delete')
        self.assertEqual([], done)
        self.assertEqual(['swap', 'mark'], [c[0] for c in self.calls])

    def test_only_the_record_owner_acts(self):
        # another request's reservation, no record at all, a lost
        # compare-and-set: no stop, no delete, no mark
        self.reserved(uuids.a, request_id='req-other')
        self.rows[uuids.b] = instance(uuids.b, flavor(2, 4000, 40))
        self.assertEqual([], self.actions.terminate(
            self.ctx, None, [uuids.a, uuids.b], uuids.p))
        self.assertEqual([], self.calls)
        self.reserved(uuids.c)
        self.cas_wins = False
        self.assertEqual([], self.actions.terminate(
            self.ctx, None, [uuids.c], uuids.p))
        self.assertEqual(['swap'], [c[0] for c in self.calls])

    def test_gone_and_deleting_victims(self):
        # gone: nothing; being deleted by its owner: the record turns
        # terminating (so a delete that never finishes is retried) but
        # nothing is called now
        self.reserved(uuids.b, task_state='deleting')
        self.assertEqual([], self.actions.terminate(
            self.ctx, None, [uuids.a, uuids.b], uuids.p))
        self.assertEqual(['swap'], [c[0] for c in self.calls])
        self.assertEqual(vs.TERMINATING, self.calls[0][3].state)

    def test_stuck_deleting_victim_is_deleted_again_then_faulted(self):
        state = vs.reserve(uuids.p, victim_helpers.NOW,
                           'req-0').terminating(victim_helpers.NOW, 1, 10)
        state = state.terminating(victim_helpers.NOW, 1, 10)
        self.rows[uuids.a] = instance(uuids.a, flavor(2, 4000, 40),
                                      sysmeta=state.as_metadata(),
                                      task_state='deleting')
        self.useFixture(fixtures.MockPatchObject(
            host_capacity.CONF.opie_preemption, 'max_attempts', 3))
        faults = self.useFixture(fixtures.MockPatchObject(
            self.actions, '_add_fault')).mock
        with mock.patch.object(self.actions.timeutils, 'utcnow',
                               return_value=victim_helpers.NOW
                               + datetime.timedelta(seconds=60)), \
                self.assertLogs('opie_sched.scheduler.actions',
                                'ERROR') as logs:
            self.assertEqual([uuids.a], self.actions.terminate(
                self.ctx, None, [uuids.a], 'reconciler', retry=True))
        self.assertEqual(['swap', 'delete'], [c[0] for c in self.calls])
        self.assertEqual(3, self.calls[0][3].attempts)
        self.assertIn('Preemption stuck', '\n'.join(logs.output))
        faults.assert_called_once()
        # before the new next_attempt: counted as leaving, left alone
        new = self.calls[0][3]
        self.rows[uuids.a].system_metadata = new.as_metadata()
        self.calls.clear()
        with mock.patch.object(self.actions.timeutils, 'utcnow',
                               return_value=new.next_attempt
                               - datetime.timedelta(seconds=1)):
            self.assertEqual([], self.actions.terminate(
                self.ctx, None, [uuids.a], 'reconciler', retry=True))
        self.assertEqual([], self.calls)

    def test_shelve_refused_by_nova_falls_back_to_delete(self):
        # issue 30 hole 3: the state read allowed a shelve, Nova refused
        # it (the state changed since): the record switches to delete and
        # the delete is sent at once, so no retry shelves it again
        from nova import exception
        flv = flavor(2, 4000, 40)
        flv.extra_specs[vs.BEHAVIOR_SPEC] = vs.SHELVE
        self.reserved(uuids.a, flv)
        self.api.shelve.side_effect = exception.InstanceInvalidState(
            attr='vm_state', instance_uuid=uuids.a, state='rescued',
            method='shelve')
        self.useFixture(fixtures.MockPatchObject(
            self.actions, '_add_fault', side_effect=lambda c, inst, msg, d:
            self.calls.append(('fault', inst.uuid, msg))))
        self.assertEqual([uuids.a], self.actions.terminate(
            self.ctx, None, [uuids.a], uuids.p, action='delete'))
        self.assertEqual(['swap', 'mark', 'swap', 'fault', 'delete'],
                         [c[0] for c in self.calls])
        first, second = self.calls[0][3], self.calls[2][3]
        self.assertEqual((vs.SHELVE, first, vs.DELETE),
                         (first.behavior, self.calls[2][2], second.behavior))

    def test_shelve_refused_by_state_is_deleted_without_a_shelve(self):
        flv = flavor(2, 4000, 40)
        flv.extra_specs[vs.BEHAVIOR_SPEC] = vs.SHELVE
        self.reserved(uuids.a, flv, vm_state='rescued')
        self.useFixture(fixtures.MockPatchObject(
            self.actions, '_add_fault', side_effect=lambda c, inst, msg, d:
            self.calls.append(('fault', inst.uuid, msg))))
        self.assertEqual([uuids.a], self.actions.terminate(
            self.ctx, None, [uuids.a], uuids.p, action='delete'))
        self.assertEqual(['swap', 'mark', 'fault', 'delete'],
                         [c[0] for c in self.calls])
        self.assertEqual(vs.DELETE, self.calls[0][3].behavior)
        self.assertIn('shelve is not possible in state rescued',
                      self.calls[2][2])

    def test_behaviour_from_the_flavor_then_from_the_record(self):
        flv = flavor(2, 4000, 40)
        flv.extra_specs[vs.BEHAVIOR_SPEC] = vs.SHELVE
        self.reserved(uuids.a, flv)
        self.assertEqual([uuids.a], self.actions.terminate(
            self.ctx, None, [uuids.a], uuids.p, action='delete'))
        self.assertEqual(['swap', 'mark', 'shelve'],
                         [c[0] for c in self.calls])
        new = self.calls[0][3]
        self.assertEqual(vs.SHELVE, new.behavior)
        # the next step: a shelved victim is offloaded, an offloaded one's
        # record cleared (the retry passes action=delete: the record wins)
        inst = self.rows[uuids.a]
        inst.system_metadata = new.as_metadata()
        inst.vm_state = 'shelved'
        self.calls.clear()
        self.actions.finish(self.ctx, None, [uuids.a])
        self.assertEqual(['swap', 'shelve_offload'],
                         [c[0] for c in self.calls])
        inst.system_metadata = self.calls[0][3].as_metadata()
        inst.vm_state = 'shelved_offloaded'
        self.calls.clear()
        self.actions.finish(self.ctx, None, [uuids.a])
        self.assertEqual(['swap'], [c[0] for c in self.calls])
        self.assertIsNone(self.calls[0][3])


class WithdrawNoticeTest(testtools.TestCase):
    """The scheduler withdraws the notice of a spared victim: its keys go
    and a service-owned action ends the notice, so keys its owner writes
    back afterwards are no pending notice (:meth:`Enforcement.pending`).
    """

    def setUp(self):
        super().setUp()
        from opie_sched.scheduler import actions
        self.actions = actions
        self.db = self.useFixture(fixtures.MockPatchObject(
            actions, 'main_db')).mock
        self.ia = self.useFixture(fixtures.MockPatchObject(
            actions.objects, 'InstanceAction')).mock
        self.ctx = mock.Mock(request_id='req-preemptor')

    def test_keys_removed_and_withdrawal_recorded(self):
        self.db.instance_metadata_get.return_value = {
            victim_state.NOTICE_KEY: 'x', victim_state.DEADLINE_KEY: 'y',
            'owner': 'kept'}
        self.actions.withdraw_notice(self.ctx, 'u1')
        self.assertEqual(
            {victim_state.NOTICE_KEY, victim_state.DEADLINE_KEY},
            {c.args[2] for c in
             self.db.instance_metadata_delete.call_args_list})
        (actx, uuid, name), _ = self.ia.action_start.call_args
        self.assertEqual(('u1', victim_state.WITHDRAW_ACTION), (uuid, name))
        # under a request id of its own, never the preemptor's
        self.assertNotEqual('req-preemptor', actx.request_id)

    def test_no_notice_no_action(self):
        self.db.instance_metadata_get.return_value = {'owner': 'kept'}
        self.actions.withdraw_notice(self.ctx, 'u1')
        self.db.instance_metadata_delete.assert_not_called()
        self.ia.action_start.assert_not_called()

    def test_victims_released_unstarted_are_withdrawn(self):
        from opie_sched.scheduler import manager
        with mock.patch.object(manager.reservations, 'unreserve',
                               return_value=['b']), \
                mock.patch.object(manager.reservations, 'cell_context',
                                  return_value='cctxt'), \
                mock.patch.object(manager.actions,
                                  'withdraw_notice') as withdraw:
            left = manager.OpieSchedulerManager._release_unstarted(
                self.ctx, 'cell', ['a', 'b', 'c'], ['a'])
        self.assertEqual(['a', 'c'], left)
        withdraw.assert_called_once_with('cctxt', 'b')
