"""The loop lifecycle shared by opie-autoscaler and opie-repacker."""

import os
import signal

import testtools

from opie_sched import coordination


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
