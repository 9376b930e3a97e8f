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
"""Tests of who may preempt whom and the victims' states
(opie_sched.preemption.ownership)."""

import testtools

from nova import objects

from opie_sched.common import flavors
from opie_sched.preemption import model
from opie_sched.preemption import ownership as rules
from opie_sched.preemption import victim_state as vs
from opie_sched.scheduler import ownership

from tests.unit.scheduler.ownership_helpers import ago
from tests.unit.scheduler.ownership_helpers import NOW
from tests.unit.scheduler.ownership_helpers import PRE


class PreemptibleByClassesTest(testtools.TestCase):

    def test_allocations(self):
        self.assertTrue(rules.holds_preemptible(
            {flavors.VCPU_CLASS: 1, 'VCPU': 0}))
        self.assertFalse(rules.holds_preemptible(
            {'VCPU': 4, flavors.DISK_GB_CLASS: 0}))
        self.assertFalse(rules.holds_preemptible({}))

    def test_flavor_classes_decide_not_the_marker(self):
        unmarked = {k: v for k, v in PRE.items() if k != flavors.MARKER_KEY}
        self.assertTrue(rules.requests_preemptible(PRE))
        self.assertTrue(rules.requests_preemptible(unmarked))
        self.assertFalse(rules.requests_preemptible(
            {flavors.MARKER_KEY: 'true'}))
        # a suffixed group is not what the model counts
        self.assertFalse(rules.requests_preemptible(
            {'resources1:%s' % flavors.VCPU_CLASS: '2'}))
        self.assertFalse(rules.requests_preemptible(
            {'resources:%s' % flavors.VCPU_CLASS: 'lots'}))

    def test_disagreement_names_the_flavor_and_the_winner(self):
        self.assertIsNone(rules.disagreement(PRE, 'x'))
        self.assertIsNone(rules.disagreement({}, 'x'))
        unmarked = {k: v for k, v in PRE.items() if k != flavors.MARKER_KEY}
        self.assertIn("flavor 'x' requests preemptible resource classes "
                      "without the marker", rules.disagreement(unmarked, 'x'))
        self.assertIn('its servers are normal', rules.disagreement(
            {flavors.MARKER_KEY: 'yes'}, 'y'))

    def test_flavor_disagreement_for_opie_status_and_error_log(self):
        ownership._reported.clear()
        self.addCleanup(ownership._reported.clear)
        flv = objects.Flavor(name='typo', vcpus=2, memory_mb=4000,
                             root_gb=40, ephemeral_gb=0, swap=0,
                             extra_specs={flavors.MARKER_KEY: 'true'})
        self.assertIn('typo', ownership.flavor_disagreement(flv))
        with self.assertLogs('opie_sched.scheduler.ownership',
                             level='ERROR') as logs:
            self.assertFalse(ownership.flavor_is_preemptible(flv))
        self.assertEqual(1, len(logs.output))


class StateTest(testtools.TestCase):

    def state(self, task_state=None, vm_state='active', changed_at=None,
              record=None, moving=False):
        return rules.state(task_state, vm_state, changed_at, record, NOW,
                           300, 60, moving)

    def test_deleting_leaves_until_its_deadline_whoever_asked(self):
        self.assertEqual(rules.LEAVING,
                         self.state('deleting', changed_at=ago(59)))
        self.assertEqual(rules.RUNNING,
                         self.state('deleting', changed_at=ago(61)))
        # naive UTC as nova's columns give it
        self.assertEqual(rules.LEAVING, self.state(
            'deleting', changed_at=ago(1).replace(tzinfo=None)))
        self.assertEqual(rules.LEAVING, self.state(vm_state='deleted'))

    def test_victim_records(self):
        reserved = vs.reserve('p', ago(10))
        self.assertEqual(rules.LEAVING, self.state(record=reserved))
        self.assertEqual(rules.RUNNING,
                         self.state(record=vs.reserve('p', ago(301))))
        terminating = reserved.terminating(ago(5), 60, 3600)
        self.assertEqual(rules.LEAVING, self.state(record=terminating))
        self.assertEqual(terminating.next_attempt, rules.leaving_until(
            'deleting', 'active', ago(500), terminating, NOW, 300, 60))

    def test_owner_moves_pin(self):
        for task_state in ('resize_prep', 'resize_migrating',
                           'resize_finish', 'resize_reverting',
                           'migrating'):
            self.assertEqual(rules.PINNED, self.state(task_state),
                             task_state)
        self.assertEqual(rules.PINNED, self.state(vm_state='resized'))
        self.assertEqual(rules.PINNED, self.state(moving=True))
        # soft-deleted, shelving, rescued: not moving
        for vm_state in ('soft-delete', 'rescued', 'stopped'):
            self.assertEqual(rules.RUNNING, self.state(vm_state=vm_state))
        self.assertFalse(rules.may_be_victim(True, rules.PINNED))
        self.assertFalse(rules.may_be_victim(True, rules.LEAVING))
        self.assertFalse(rules.may_be_victim(False, rules.RUNNING))
        self.assertTrue(rules.may_be_victim(True, rules.RUNNING))

    def test_pinned_is_never_a_candidate_and_holds_its_room(self):
        pinned = model.InstanceInfo('a', model.Resources(4, 8000, 80), True,
                                    pinned=True)
        running = model.InstanceInfo('b', model.Resources(2, 4000, 40),
                                     True)
        hv = model.HostView('h', model.Resources(8, 16000, 200),
                            model.Resources(10, 20000, 200),
                            [pinned, running])
        self.assertEqual([running], hv.preemptible_instances)
        self.assertEqual((0, 0, 40), tuple(hv.reclaimable_free()))
