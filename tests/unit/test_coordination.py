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
"""The loop lifecycle shared by opie-autoscaler and opie-repacker."""

import os
import signal

import testtools

from opie_sched.common import coordination


class _Loop(coordination.CoordinatedLoop):

    def __init__(self, coordinator=None):
        self._init_loop(coordinator)
        self.member_id = 'test'
        self._conn = None
        self.rounds = 0

    def _coordination_url(self):
        return 'file:///nonexistent'

    def run_forever(self):
        while not self._stop.is_set():
            self.rounds += 1
            if self.rounds == 2:
                os.kill(os.getpid(), signal.SIGTERM)
            self._stop.wait(0.01)


class CoordinatedLoopTest(testtools.TestCase):

    def test_sigterm_stops_after_the_current_round(self):
        previous = signal.getsignal(signal.SIGTERM)
        self.addCleanup(signal.signal, signal.SIGTERM, previous)
        self.addCleanup(signal.signal, signal.SIGINT,
                        signal.getsignal(signal.SIGINT))
        loop = _Loop()
        loop.run_until_signalled()
        self.assertEqual(2, loop.rounds)

    def test_given_coordinator_is_not_stopped(self):
        stopped = []

        class Coordinator:
            def stop(self):
                stopped.append(True)

        loop = _Loop(Coordinator())
        self.assertIs(loop, loop.start())
        loop.stop()
        self.assertEqual([], stopped)
        self.assertTrue(loop._stop.is_set())
