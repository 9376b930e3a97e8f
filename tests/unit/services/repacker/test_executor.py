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
"""Tests of the repacker's live-migration executor
(opie_sched.services.repacker.executor)."""

import types

import fixtures
import testtools

from opie_sched.services.repacker import executor as ex

from tests.unit.services.repacker.helpers import FakeConn
from tests.unit.services.repacker.helpers import move


class ExecutorTest(testtools.TestCase):

    def test_failed_migration_is_logged_and_plan_goes_on(self):
        logs = self.useFixture(fixtures.FakeLogger())
        conn = FakeConn({'a': 'h1', 'b': 'h1', 'c': 'h1'}, fail={'h3'})
        outcomes = ex.Executor(conn, block_migration=True,
                               poll_interval=0).execute(
            [move('a', 'h1', 'h3'), move('b', 'h1', 'boom'),
             move('c', 'h1', 'h2')], 5)
        self.assertEqual([ex.FAILED, ex.FAILED, ex.DONE],
                         [o.result for o in outcomes])
        self.assertIn('ACTIVE on h1', outcomes[0].detail)
        self.assertEqual('RuntimeError: HTTP 400: no', outcomes[1].detail)
        self.assertEqual('h2', conn.compute.hosts['c'])
        self.assertEqual(True, conn.compute.calls[0][2])
        self.assertIn('going on with the plan', logs.output)

    def test_dry_run_migrates_nothing(self):
        conn = FakeConn({'a': 'h1'})
        outcomes = ex.Executor(conn).execute([move('a', 'h1', 'h2')], 5,
                                             dry_run=True)
        self.assertEqual([ex.PLANNED], [o.result for o in outcomes])
        self.assertEqual([], conn.compute.calls)

    def test_timeout(self):
        conn = FakeConn({'a': 'h1'})
        conn.compute.get_server = lambda s: types.SimpleNamespace(
            status='MIGRATING', task_state='migrating', compute_host='h1')
        now = [0.0]

        def sleep(s):
            now[0] += 5

        outcome = ex.Executor(conn, timeout=10, poll_interval=5,
                              clock=lambda: now[0], sleep=sleep).migrate(
            move('a', 'h1', 'h2'))
        self.assertEqual(ex.FAILED, outcome.result)
        self.assertIn('still MIGRATING', outcome.detail)
