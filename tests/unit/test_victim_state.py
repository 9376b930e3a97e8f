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
