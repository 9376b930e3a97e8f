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
"""Tests of the scheduler's operation policy
(opie_sched.scheduler.operations)."""

from unittest import mock

import fixtures
import testtools

from opie_sched.scheduler import manager
from opie_sched.scheduler import operations


class PolicyTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.opts = mock.Mock(enabled=True, moves_preempt='resize')
        self.useFixture(fixtures.MockPatchObject(
            manager.CONF, 'opie_preemption', self.opts))

    def decide(self, operation, preemptible=False):
        d = manager.preemption_policy(operation, preemptible)
        return d.preempt, d.fit_full_state, d.check_claim

    def test_default(self):
        self.assertEqual((True, False, False), self.decide(operations.BOOT))
        self.assertEqual((True, False, False),
                         self.decide(operations.UNSHELVE))
        self.assertEqual((False, False, False),
                         self.decide(operations.REBUILD))
        # a resize or cold migration may preempt (asked once, reschedules
        # only to alternates); other moves must fit the full state
        self.assertEqual((True, False, False),
                         self.decide(operations.MIGRATION))
        for move in operations.MOVES - {operations.MIGRATION}:
            self.assertEqual((False, True, True), self.decide(move), move)
        self.assertEqual((False, True, True), self.decide(None, True))
        self.opts.moves_preempt = 'none'
        for move in operations.MOVES:
            self.assertEqual((False, True, True), self.decide(move), move)

    def test_opt_in(self):
        self.opts.moves_preempt = 'evacuate'
        self.assertEqual((True, False, False),
                         self.decide(operations.EVACUATE))
        self.assertEqual((False, True, True),
                         self.decide(operations.LIVE_MIGRATION))
        self.opts.moves_preempt = 'all'
        for move in operations.MOVES:
            self.assertEqual((True, False, False), self.decide(move), move)
        # never a rebuild, never a preemptible request
        self.assertEqual((False, False, False),
                         self.decide(operations.REBUILD))
        self.assertEqual((False, True, True),
                         self.decide(operations.MIGRATION, True))

    def test_disabled(self):
        self.opts.enabled = False
        self.assertEqual((False, False, False), self.decide(operations.BOOT))
        self.assertEqual((False, True, True), self.decide(None, True))
