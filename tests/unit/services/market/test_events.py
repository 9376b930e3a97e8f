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
"""Tests of the durable record of interruptions: the scheduler's
notifications and the market's own (opie_sched.services.market.events)."""

from decimal import Decimal as D
from unittest import mock
import uuid as uuidlib

import testtools

from opie_sched.notifications import preemption as preempt_notes
from opie_sched.services.market import events
from tests.unit.services.market import helpers as base
from tests.unit.services.market.planning_helpers import preempt_payload


class RecorderTest(testtools.TestCase):
    """:class:`events.EventRecorder` on the scheduler's real payloads."""

    def setUp(self):
        super().setUp()
        self.store = base.new_store(base.sqlite_url(self))
        self.recorder = events.EventRecorder(self.store)
        self.v1, self.v2 = str(uuidlib.uuid4()), str(uuidlib.uuid4())
        for v in (self.v1, self.v2):
            self.store.start_lifetime(v, 'pA', 100.0, 'spot.small', 2, 4000,
                                      'h1')

    def test_scheduler_preemption_is_recorded_once(self):
        payload = preempt_payload(str(uuidlib.uuid4()),
                                  [(self.v1, 'pA'), (self.v2, 'pA')])
        self.assertEqual(2, self.recorder.apply(
            events.EVENT_SCHEDULER_PREEMPT, payload, 500.0))
        # a redelivered notification adds nothing
        self.assertEqual(0, self.recorder.apply(
            events.EVENT_SCHEDULER_PREEMPT, payload, 500.0))
        rows, more = self.store.events_page('pA')
        self.assertEqual([('interruption', 'scheduler', 'delete')] * 2,
                         [(r['kind'], r['cause'], r['action'])
                          for r in rows])
        self.assertEqual({('interrupted', 500.0)}, {
            (lt['end'], lt['ended_at']) for lt in self.store.lifetimes()})
        # the victim's deletion that follows does not censor it
        self.recorder.apply(events.EVENT_DELETE_END, {
            'nova_object.data': {
                'uuid': self.v1, 'tenant_id': 'pA', 'flavor': {
                    'nova_object.data': {
                        'name': 'spot.small', 'extra_specs':
                            base.flavors.preemptible_extra_specs(2, 4000,
                                                                 40)}}}},
            501.0)
        self.assertEqual('interrupted', self.store.lifetimes()[0]['end'])

    def test_restore_is_recorded_once(self):
        note = preempt_notes.restore_notification(
            self.v1, 'pA', 'h2', 2, 120.0, 'sched-host')
        payload = note.message()[3]
        self.assertEqual(1, self.recorder.apply(
            events.EVENT_SCHEDULER_RESTORE, payload, 700.0))
        self.assertEqual(0, self.recorder.apply(
            events.EVENT_SCHEDULER_RESTORE, payload, 700.0))
        rows, _ = self.store.events_page('pA')
        self.assertEqual([('restore', 'reconciler', 'h2', 'spot.small')],
                         [(r['kind'], r['cause'], r['host'], r['flavor'])
                          for r in rows])
        self.assertIn('2 interruption', rows[0]['detail'])
        # another project's listing has none of it
        self.assertEqual([], self.store.events_page('pB')[0])

    def test_cause_words_and_drills(self):
        self.recorder.apply(events.EVENT_SCHEDULER_PREEMPT, preempt_payload(
            'reconciler', [(self.v1, 'pA')], 'stop'), 300.0)
        self.recorder.apply(events.EVENT_SCHEDULER_PREEMPT, preempt_payload(
            'drill', [(self.v2, 'pA')], 'stop'), 300.0)
        rows, _ = self.store.events_page('pA')
        self.assertEqual([('interruption', 'reconciler'), ('drill', 'drill')],
                         [(r['kind'], r['cause']) for r in rows])
        ends = {lt['server_uuid']: lt['end'] for lt in self.store.lifetimes()}
        # a drill never ends a life (never counted in rates or the curve)
        self.assertEqual({self.v1: 'interrupted', self.v2: None}, ends)

    def test_a_late_interruption_replaces_a_censoring_end(self):
        # the engine saw the victim gone before the notification came
        events.observe(self.store, [], 600.0)
        self.recorder.apply(events.EVENT_SCHEDULER_PREEMPT, preempt_payload(
            str(uuidlib.uuid4()), [(self.v1, 'pA')]), 550.0)
        ends = {lt['server_uuid']: (lt['end'], lt['ended_at'])
                for lt in self.store.lifetimes()}
        self.assertEqual({self.v1: ('interrupted', 550.0),
                          self.v2: ('left', 600.0)}, ends)

    def test_scheduler_actions_recorded_without_the_listener(self):
        # Nova's instance actions of the victim (newest first), as
        # Cloud.instance_actions reads them: notice, preempt, then the verb
        cloud = mock.Mock()
        cloud.instance_actions.side_effect = lambda uuid: {
            self.v1: [('delete', 520.0), ('preempt', 520.0),
                      ('preempt_notice', 400.0), ('create', 100.0)],
        }.get(uuid, [('stop', 580.0), ('create', 100.0)])
        events.observe(self.store, [], 600.0, cloud)
        rows, _ = self.store.events_page('pA')
        self.assertEqual(
            [(self.v1, 'notice', 'scheduler', None, 400.0),
             (self.v1, 'interruption', 'scheduler', 'delete', 520.0)],
            [(r['server_uuid'], r['kind'], r['cause'], r['action'],
              r['at']) for r in rows])
        ends = {lt['server_uuid']: (lt['end'], lt['ended_at'])
                for lt in self.store.lifetimes()}
        # v2 was stopped by its owner: censored, no event
        self.assertEqual({self.v1: ('interrupted', 520.0),
                          self.v2: ('left', 600.0)}, ends)
        # the listener's notification of the same interruption, seconds
        # later, and a second period's read add nothing
        self.assertEqual(0, self.recorder.apply(
            events.EVENT_SCHEDULER_PREEMPT, preempt_payload(
                str(uuidlib.uuid4()), [(self.v1, 'pA')]), 522.0))
        events.observe(self.store, [], 4200.0, cloud)
        self.assertEqual(2, len(self.store.events_page('pA')[0]))
        # another project sees none of it
        self.assertEqual([], self.store.events_page('pB')[0])

    def test_listener_first_then_actions_one_interruption(self):
        self.recorder.apply(events.EVENT_SCHEDULER_PREEMPT, preempt_payload(
            'reconciler', [(self.v1, 'pA')], 'shelve'), 523.0)
        # its life closed by the listener; the last period's snapshot has
        # it, so the next period reads its actions
        self.store.create_period(0, 3600, 'me', [{
            'server_uuid': self.v1, 'project': 'pA', 'pool': 'default',
            'host': 'h1', 'bid': D('0.5'), 'bid_source': 'metadata',
            'vcpus': 2, 'memory_mb': 4000, 'created_at': 100.0}], {})
        cloud = mock.Mock()
        cloud.instance_actions.return_value = [
            ('shelve', 521.0), ('preempt', 520.0)]
        events.observe(self.store, [], 600.0, cloud)
        rows, _ = self.store.events_page('pA')
        # the listener's (its cause word) is kept, the second not added
        self.assertEqual([('interruption', 'reconciler', 523.0)],
                         [(r['kind'], r['cause'], r['at']) for r in rows
                          if r['server_uuid'] == self.v1])

    def test_scheduler_events_from_actions(self):
        self.assertEqual(
            [('notice', 10.0, None), ('interruption', 20.0, 'shelve'),
             ('interruption', 90.0, None)],
            events.scheduler_events([
                ('preempt', 90.0), ('unshelve', 60.0),
                ('shelveOffload', 21.0), ('shelve', 20.0),
                ('preempt', 20.0), ('preempt_notice', 10.0),
                ('create', 1.0), ('preempt_notice', None)]))
        self.assertEqual([('interruption', 90.0, None)],
                         events.scheduler_events(
                             [('preempt', 90.0), ('preempt', 20.0)],
                             since=50.0))

    def test_junk_never_raises(self):
        self.recorder.info({}, 'p', events.EVENT_SCHEDULER_PREEMPT,
                           {'opie_object.data': {'victims': [
                               {'opie_object.data': {'uuid': 'not-a-uuid',
                                                     'project_id': 'pA'}}]}},
                           {'timestamp': '2026-11-28 05:00:00.000000'})
        self.recorder.info({}, 'p', 'instance.delete.end', None, {})
        self.assertEqual([], self.store.events_page()[0])
