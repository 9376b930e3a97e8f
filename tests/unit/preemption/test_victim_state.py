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
"""The service-owned victim state (pure rules, no Nova)."""

import dataclasses
import datetime

import testtools

from opie_sched.preemption import victim_state as vs
from opie_sched.preemption import victim_state


T0 = datetime.datetime(2026, 11, 23, 12, 0, 0, tzinfo=datetime.timezone.utc)


def later(seconds):
    return T0 + datetime.timedelta(seconds=seconds)


class VictimStateTest(testtools.TestCase):

    def test_round_trip_through_metadata(self):
        state = vs.reserve('preemptor-uuid', T0, 'req-1', 'why').terminating(
            later(5), 60, 3600)
        meta = state.as_metadata()
        self.assertTrue(all(isinstance(v, str) for v in meta.values()))
        self.assertTrue(set(meta) <= set(vs.KEYS))
        self.assertEqual(state, vs.VictimState.from_metadata(meta))

    def test_missing_or_garbled_record_is_no_record(self):
        self.assertIsNone(vs.VictimState.from_metadata({}))
        self.assertIsNone(vs.VictimState.from_metadata(None))
        meta = vs.reserve('x', T0).as_metadata()
        self.assertIsNone(vs.VictimState.from_metadata(
            dict(meta, **{vs.KEY_STATE: 'leaving-forever'})))
        self.assertIsNone(vs.VictimState.from_metadata(
            dict(meta, **{vs.KEY_SINCE: 'yesterday'})))
        # a bad attempt count is read as 0, not as an error
        state = vs.VictimState.from_metadata(
            dict(meta, **{vs.KEY_ATTEMPTS: 'many'}))
        self.assertEqual(0, state.attempts)

    def test_reservation_is_leaving_only_during_its_lease(self):
        state = vs.reserve('x', T0)
        self.assertTrue(state.is_leaving(later(299), lease=300))
        self.assertFalse(state.is_leaving(later(300), lease=300))

    def test_terminating_is_always_leaving(self):
        state = vs.reserve('x', T0).terminating(T0, 60, 3600)
        self.assertTrue(state.is_leaving(later(10 ** 6), lease=1))

    def test_retry_is_due_after_the_backoff(self):
        state = vs.reserve('x', T0).terminating(T0, 60, 3600)
        self.assertEqual(1, state.attempts)
        self.assertFalse(state.retry_due(later(59)))
        self.assertTrue(state.retry_due(later(60)))
        second = state.terminating(later(60), 60, 3600)
        self.assertEqual(2, second.attempts)
        self.assertEqual(later(180), second.next_attempt)
        self.assertFalse(vs.reserve('x', T0).retry_due(later(10 ** 6)))

    def test_backoff_doubles_up_to_the_maximum(self):
        self.assertEqual([60, 120, 240, 480, 500],
                         [vs.backoff(n, 60, 500) for n in range(1, 6)])
        self.assertEqual(500, vs.backoff(10 ** 6, 60, 500))
        self.assertRaises(ValueError, vs.backoff, 0, 60, 500)
        self.assertRaises(ValueError, vs.backoff, 1, -1, 500)

    def test_times_are_utc_text(self):
        self.assertEqual('2026-11-23T12:00:00Z', vs.format_time(T0))
        self.assertEqual(T0, vs.parse_time('2026-11-23T12:00:00Z'))
        self.assertIsNone(vs.parse_time('2026-11-23 12:00'))


class MayActTest(testtools.TestCase):
    """Who may take a destructive step, from the record read just before."""

    def test_terminate_needs_this_requests_reservation(self):
        state = vs.reserve('inst-a', T0, 'req-1')
        self.assertTrue(vs.may_act(state, 'terminate', 'inst-a', 'req-1'))
        self.assertFalse(vs.may_act(state, 'terminate', 'inst-a', 'req-2'))
        self.assertFalse(vs.may_act(state, 'terminate', 'inst-b', 'req-1'))
        self.assertFalse(vs.may_act(None, 'terminate', 'inst-a', 'req-1'))
        # already terminating: not a second first step
        self.assertFalse(vs.may_act(state.terminating(T0, 60, 60),
                                    'terminate', 'inst-a', 'req-1'))

    def test_finish_needs_this_requests_termination(self):
        state = vs.reserve('inst-a', T0, 'req-1')
        self.assertFalse(vs.may_act(state, 'finish', None, 'req-1'))
        state = state.terminating(T0, 60, 60)
        self.assertTrue(vs.may_act(state, 'finish', None, 'req-1'))
        self.assertTrue(vs.may_act(state, 'finish', 'inst-a', 'req-1'))
        self.assertFalse(vs.may_act(state, 'finish', 'inst-b', 'req-1'))
        self.assertFalse(vs.may_act(state, 'finish', None, 'req-2'))

    def test_retry_only_when_due(self):
        state = vs.reserve('inst-a', T0, 'req-1').terminating(T0, 60, 60)
        self.assertFalse(vs.may_act(state, 'retry', now=later(59)))
        self.assertTrue(vs.may_act(state, 'retry', now=later(60)))
        self.assertFalse(vs.may_act(vs.reserve('x', T0), 'retry',
                                    now=later(10 ** 6)))
        self.assertRaises(ValueError, vs.may_act, state, 'explode')

    def test_action_request_and_cause(self):
        state = vs.reserve('inst-a', T0, 'req-1')
        self.assertNotIn(vs.KEY_ACTION_REQUEST, state.as_metadata())
        state = dataclasses.replace(state, action_request='req-own')
        self.assertEqual(state, vs.VictimState.from_metadata(
            state.as_metadata()))
        self.assertEqual('scheduler', vs.cause_of('0b1e-some-uuid'))
        for word in vs.CAUSES:
            self.assertEqual(word, vs.cause_of(word))


class InterruptionBehaviorTest(testtools.TestCase):

    def test_flavor_wins_over_the_cloud_default(self):
        spec = vs.BEHAVIOR_SPEC
        self.assertEqual('shelve', vs.interruption_behavior(
            {spec: 'shelve'}, 'delete'))
        self.assertEqual('stop', vs.interruption_behavior(
            {spec: 'stop'}, 'delete'))
        self.assertEqual('delete', vs.interruption_behavior({}, 'delete'))
        self.assertEqual('stop', vs.interruption_behavior(None, 'stop'))
        # a malformed value is ignored (the API validates new flavors)
        self.assertEqual('delete', vs.interruption_behavior(
            {spec: 'hibernate'}, 'delete'))

    def test_behavior_round_trips(self):
        state = dataclasses.replace(vs.reserve('x', T0), behavior='shelve')
        self.assertEqual('shelve', vs.VictimState.from_metadata(
            state.as_metadata()).behavior)


class RestoreRecordTest(testtools.TestCase):
    """Automatic restore: the record a released victim keeps."""

    AUTO = {vs.RESTORE_SPEC: vs.RESTORE_AUTO}

    def terminating(self, preemptor='preemptor-uuid', interruptions=0):
        state = vs.reserve(preemptor, T0, 'req-1', 'why').terminating(
            T0, 60, 3600)
        return dataclasses.replace(state, behavior=vs.SHELVE,
                                   interruptions=interruptions)

    def test_flavor_specs(self):
        self.assertTrue(vs.restore_requested(self.AUTO))
        for specs in ({}, None, {vs.RESTORE_SPEC: 'off'},
                      {vs.RESTORE_SPEC: 'yes'}):
            self.assertFalse(vs.restore_requested(specs))
        self.assertEqual(3, vs.max_interruptions(
            {vs.MAX_INTERRUPTIONS_SPEC: '3'}))
        for value in (None, '0', '-2', 'many'):
            self.assertEqual(0, vs.max_interruptions(
                {vs.MAX_INTERRUPTIONS_SPEC: value}))

    def test_shelved_victim_with_restore_waits_counted(self):
        new = vs.after_release(self.terminating(), vs.SHELVE,
                               'shelved_offloaded', self.AUTO, later(9))
        self.assertEqual(vs.RESTORE_PENDING, new.state)
        self.assertEqual(later(9), new.since)
        self.assertEqual(1, new.interruptions)
        self.assertIsNone(new.next_attempt)
        self.assertFalse(new.is_leaving(later(10), lease=300))
        # through the system metadata and back, count included
        meta = new.as_metadata()
        self.assertTrue(set(meta) <= set(vs.KEYS))
        back = vs.VictimState.from_metadata(meta)
        self.assertEqual(new, back)
        self.assertEqual(1, back.interruptions)
        self.assertEqual(1, vs.interruptions_of(meta))

    def test_no_record_without_restore_or_not_shelved(self):
        state = self.terminating()
        cases = [
            (vs.SHELVE, 'shelved_offloaded', {}),
            (vs.SHELVE, 'shelved_offloaded', {vs.RESTORE_SPEC: 'off'}),
            (vs.DELETE, 'deleted', self.AUTO),   # fell back to delete
            (vs.SHELVE, 'deleted', self.AUTO),
        ]
        for behavior, vm_state, specs in cases:
            self.assertIsNone(vs.after_release(state, behavior, vm_state,
                                               specs, T0))
        # ended for its maximum lifetime: never restored
        self.assertIsNone(vs.after_release(
            self.terminating(preemptor=vs.CAUSE_LIFETIME), vs.SHELVE,
            'shelved_offloaded', self.AUTO, T0))
        self.assertIsNone(vs.after_release(None, vs.SHELVE,
                                           'shelved_offloaded', self.AUTO,
                                           T0))

    def test_max_interruptions_gives_up(self):
        specs = dict(self.AUTO, **{vs.MAX_INTERRUPTIONS_SPEC: '2'})
        first = vs.after_release(self.terminating(), vs.SHELVE,
                                 'shelved_offloaded', specs, T0)
        self.assertEqual((vs.RESTORE_PENDING, 1),
                         (first.state, first.interruptions))
        second = vs.after_release(self.terminating(interruptions=1),
                                  vs.SHELVE, 'shelved_offloaded', specs, T0)
        self.assertEqual((vs.RESTORE_GIVEN_UP, 2),
                         (second.state, second.interruptions))
        self.assertIn('interrupted 2 times', vs.given_up_message(2, 2))
        self.assertIn('opie:max_interruptions=2', vs.given_up_message(2, 2))

    def test_restoring_and_back_in_place(self):
        pending = vs.after_release(self.terminating(), vs.SHELVE,
                                   'shelved_offloaded', self.AUTO, T0)
        going = vs.restoring(pending, later(30))
        self.assertEqual(vs.RESTORING, going.state)
        self.assertEqual(T0, going.since)
        self.assertFalse(going.is_leaving(later(31), lease=300))
        self.assertFalse(going.retry_due(later(10 ** 6)))
        again = vs.restore_failed(going)
        self.assertEqual(pending, again)

    def test_count_is_not_part_of_the_record_identity(self):
        # a compare-and-set by an actor that built the record afresh (a
        # reservation) still matches the stored one, whose count is kept
        a = vs.reserve('x', T0, 'r')
        self.assertEqual(a, dataclasses.replace(a, interruptions=4))
        self.assertIn(vs.KEY_INTERRUPTIONS, vs.KEPT_KEYS)
        self.assertNotIn(vs.KEY_INTERRUPTIONS, a.as_metadata())
        self.assertEqual(0, vs.interruptions_of({vs.KEY_INTERRUPTIONS: 'x'}))

    def test_restore_order_bid_then_longest_waiting(self):
        old = vs.VictimState(state=vs.RESTORE_PENDING, preemptor='p',
                             since=T0)
        new = dataclasses.replace(old, since=later(60))
        items = [('a', 0.05, new), ('b', 0.05, old), ('c', 0.10, new)]
        items.sort(key=lambda i: vs.restore_order(i[1], i[2], i[0]))
        self.assertEqual(['c', 'b', 'a'], [i[0] for i in items])

    def test_owner_can_only_opt_out(self):
        self.assertEqual((True, None), vs.owner_opted_out(
            {vs.OWNER_RESTORE_KEY: 'off'}))
        for meta in ({}, None, {vs.OWNER_RESTORE_KEY: 'auto'}):
            self.assertEqual((False, None), vs.owner_opted_out(meta))
        # anything else is ignored (the flavor decides), and said
        out, problem = vs.owner_opted_out({vs.OWNER_RESTORE_KEY: 'always'})
        self.assertFalse(out)
        self.assertIn("opie:restore='always' ignored", problem)
        # the owner's key never makes a record: only the flavor does
        state = vs.reserve('p', T0).terminating(T0, 60, 3600)
        state = dataclasses.replace(state, behavior=vs.SHELVE)
        self.assertIsNone(vs.after_release(state, vs.SHELVE,
                                           'shelved_offloaded', {}, T0))

    def test_market_shelve_only_from_another_project(self):
        owner, market = 'p-owner', 'p-market'
        shelve = vs.SHELVE_ACTION
        self.assertTrue(vs.shelved_by_another_project(
            [('create', owner, T0), (shelve, market, later(10))], owner))
        # the owner's own shelve, or none
        self.assertFalse(vs.shelved_by_another_project(
            [('create', owner, T0), (shelve, owner, later(10))], owner))
        self.assertFalse(vs.shelved_by_another_project(
            [('create', owner, T0)], owner))
        # the newest shelve decides: the owner unshelved and shelved again
        self.assertFalse(vs.shelved_by_another_project(
            [(shelve, owner, later(30)), ('unshelve', owner, later(20)),
             (shelve, market, later(10))], owner))
        # the market's offload of a server its owner shelved is not an
        # interruption by the market
        self.assertFalse(vs.shelved_by_another_project(
            [(shelve, owner, later(10)), ('shelveOffload', market,
                                          later(20))], owner))
        # an action without a project or a start proves nothing
        self.assertFalse(vs.shelved_by_another_project(
            [(shelve, None, later(10))], owner))
        self.assertFalse(vs.shelved_by_another_project(
            [(shelve, market, None)], owner))

    def test_market_release_counts_and_caps(self):
        specs = {vs.RESTORE_SPEC: vs.RESTORE_AUTO}
        new = vs.after_market_release(0, specs, T0)
        self.assertEqual((vs.RESTORE_PENDING, 1, vs.CAUSE_MARKET, T0),
                         (new.state, new.interruptions, new.preemptor,
                          new.since))
        capped = dict(specs, **{vs.MAX_INTERRUPTIONS_SPEC: '3'})
        self.assertEqual(vs.RESTORE_PENDING,
                         vs.after_market_release(1, capped, T0).state)
        new = vs.after_market_release(2, capped, T0)
        self.assertEqual((vs.RESTORE_GIVEN_UP, 3),
                         (new.state, new.interruptions))
        self.assertIsNone(vs.after_market_release(0, {}, T0))
        self.assertIsNone(vs.after_market_release(
            0, {vs.RESTORE_SPEC: vs.RESTORE_OFF}, T0))


class PendingNoticeTest(testtools.TestCase):
    """:func:`victim_state.pending_notice`: the rule on instance actions."""

    N, P = victim_state.NOTICE_ACTION, victim_state.PREEMPT_ACTION
    W = victim_state.WITHDRAW_ACTION

    def test_rule(self):
        pending = victim_state.pending_notice
        for actions, now, expected in (
                ([], 100, None),
                ([('create', 0), ('stop', 50)], 100, None),
                ([('create', 0), (self.N, 50)], 100, 50),
                # the newest notice counts; a preempt after it ends it
                ([(self.N, 10), (self.P, 20), (self.N, 60)], 100, 60),
                ([(self.N, 10), (self.P, 20)], 100, None),
                ([(self.N, 20), (self.P, 20)], 100, None),
                # older than the window: lapsed
                ([(self.N, 10)], 71, None),
                ([(self.N, 10)], 70, 10),
                ([(self.N, None)], 70, None),
                # a withdrawal (the victim was spared) ends it too, and
                # a later notice stands again
                ([(self.N, 10), (self.W, 30)], 50, None),
                ([(self.N, 10), (self.W, 30), (self.N, 40)], 50, 40)):
            self.assertEqual(expected, pending(actions, now, 60),
                             (actions, now))
