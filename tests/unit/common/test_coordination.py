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
"""The daemon lifecycle shared by the companion services: oslo.service
services running periodic rounds, tooz coordination, signals.
"""

import os
import signal
import subprocess
import sys
import threading
from unittest import mock

import fixtures
import testtools

from opie_sched.common import compat
from opie_sched.common import coordination

#: Generous bound (seconds) on waits that only guard against a hang.
HANG_GUARD = 120


class _Periodic(coordination.PeriodicService):
    round_failed = 'test round failed'

    def __init__(self, body, interval=0.0):
        super().__init__(interval, 'test')
        self.body = body

    def run_round(self):
        self.body()


class PeriodicServiceTest(testtools.TestCase):

    def test_stop_mid_round_finishes_it_and_starts_no_other(self):
        inside, release = threading.Event(), threading.Event()
        rounds = []

        def body():
            rounds.append('begin')
            inside.set()
            release.wait(HANG_GUARD)
            rounds.append('end')

        svc = _Periodic(body)
        svc.start()
        self.assertTrue(inside.wait(HANG_GUARD))
        stopper = threading.Thread(target=svc.stop)
        stopper.start()
        svc.wait_for_stop_request()  # from here on, no round starts
        # stop() waits for the round in progress.
        self.assertTrue(stopper.is_alive())
        release.set()
        stopper.join(HANG_GUARD)
        self.assertFalse(stopper.is_alive())
        self.assertEqual(['begin', 'end'], rounds)
        svc.wait()
        self.assertEqual(['begin', 'end'], rounds)

    def test_a_failing_round_is_logged_and_the_next_one_runs(self):
        calls = []
        done = threading.Event()

        def body():
            calls.append(1)
            if len(calls) == 1:
                raise RuntimeError('boom')
            done.set()

        log = self.useFixture(fixtures.FakeLogger())
        svc = _Periodic(body)
        svc.start()
        self.assertTrue(done.wait(HANG_GUARD))
        svc.stop()
        self.assertGreaterEqual(len(calls), 2)
        self.assertIn('test round failed', log.output)
        self.assertIn('RuntimeError: boom', log.output)

    def test_stopped_before_start_never_runs(self):
        calls = []
        svc = _Periodic(lambda: calls.append(1))
        svc.stop()
        svc.start()
        svc.wait()
        self.assertEqual([], calls)

    def test_request_stop_wakes_the_waiter_only(self):
        svc = _Periodic(lambda: None)
        waiter = threading.Thread(target=svc.wait_for_stop_request)
        waiter.start()
        svc.request_stop()
        waiter.join(HANG_GUARD)
        self.assertFalse(waiter.is_alive())


class _Rounds(coordination.CoordinatedRounds):

    def __init__(self, coordinator=None, interval=0.0):
        self._init_coordination(coordinator)
        self.member_id = 'test'
        self._conn = None
        self.interval = interval
        self.rounds = 0
        self.third = threading.Event()

    def _coordination_url(self):
        return 'file:///nonexistent'

    def round_interval(self):
        return self.interval

    def run_round(self):
        self.rounds += 1
        if self.rounds == 3:
            self.third.set()


class _Coordinator:
    def __init__(self):
        self.stopped = []

    def stop(self):
        self.stopped.append(True)


class CoordinatedRoundsTest(testtools.TestCase):

    def test_given_coordinator_is_not_stopped(self):
        coordinator = _Coordinator()
        rounds = _Rounds(coordinator)
        self.assertIs(rounds, rounds.start())
        rounds.stop()
        self.assertEqual([], coordinator.stopped)
        self.assertIs(coordinator, rounds.coordinator)

    def test_own_coordinator_is_joined_and_left(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        rounds = _Rounds()
        rounds._coordination_url = lambda: 'file://' + tmp
        rounds.start()
        self.assertIsNotNone(rounds.coordinator)
        lock = rounds.coordinator.get_lock(b'x')
        self.assertTrue(lock.acquire(blocking=False))
        lock.release()
        rounds.stop()
        self.assertIsNone(rounds.coordinator)

    def test_service_runs_rounds_until_stopped(self):
        rounds = _Rounds(_Coordinator())
        svc = rounds.service('test')
        self.assertEqual('test round failed', svc.round_failed)
        svc.start()
        self.assertTrue(rounds.third.wait(HANG_GUARD))
        svc.stop()
        done = rounds.rounds
        self.assertGreaterEqual(done, 3)
        svc.wait()
        self.assertEqual(done, rounds.rounds)

    def test_service_start_failure_is_kept_and_requests_stop(self):
        rounds = _Rounds()

        def unreachable():
            raise RuntimeError('backend down')

        rounds.start = unreachable
        svc = rounds.service('test')
        self.assertRaises(RuntimeError, svc.start)
        self.assertEqual('backend down', str(svc.start_error))
        svc.wait_for_stop_request()  # returns: the stop was requested
        self.assertEqual(0, rounds.rounds)


#: Runs a daemon's main() (the console script's entry point, reading
#: sys.argv) in a subprocess and reports, after it returns, whether eventlet
#: was ever imported.
_RUNNER = '''
import importlib, sys
module = importlib.import_module(sys.argv[1])
sys.argv = [sys.argv[1]] + sys.argv[2:]
rc = module.main()
print('eventlet imported: %s' % ('eventlet' in sys.modules), flush=True)
if 'eventlet' in sys.modules:
    import eventlet.patcher
    print('eventlet patched: %s'
          % eventlet.patcher.is_monkey_patched('thread'), flush=True)
sys.exit(rc)
'''


_LIBRARIES_IMPORT_EVENTLET = []


def _libraries_import_eventlet():
    """Whether oslo.log's import imports eventlet in this environment:
    the oslo.utils of 2025.2 (``eventletutils``, imported by oslo.log)
    try-imports it, so a daemon can keep eventlet out of its process only
    on newer series (a fresh interpreter, asked once).
    """
    if not _LIBRARIES_IMPORT_EVENTLET:
        out = subprocess.run(
            [sys.executable, '-c', 'import sys, oslo_log.log; '
             'print("eventlet" in sys.modules)'],
            capture_output=True, text=True, check=True,
            timeout=HANG_GUARD).stdout
        _LIBRARIES_IMPORT_EVENTLET.append(out.strip() == 'True')
    return _LIBRARIES_IMPORT_EVENTLET[0]


class SignalTest(testtools.TestCase):
    """The daemons stop on SIGTERM/SIGINT, exit code 0 (a subprocess each:
    the test runner's own signal handlers are left alone).
    """

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        # Only the test's configuration file: no configuration directory
        # of the machine (/etc/<project>/*.conf.d) is read.
        self.no_conf_dir = os.path.join(self.tmp, 'conf.d')
        os.mkdir(self.no_conf_dir)

    def argv(self, module, conf_text):
        conf = os.path.join(self.tmp, 'daemon.conf')
        with open(conf, 'w') as f:
            f.write(conf_text)
        return [sys.executable, '-c', _RUNNER, module, '--config-file', conf,
                '--config-dir', self.no_conf_dir]

    def daemon(self, module, conf_text, marker, env=None, args=()):
        """Start ``module``'s main(); return it once ``marker`` (a round's
        log line) has been logged twice, with the output lines so far.
        """
        proc = subprocess.Popen(
            self.argv(module, conf_text) + list(args), stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True,
            env=dict(os.environ, **(env or {})))
        self.addCleanup(self._reap, proc)
        lines, seen = [], threading.Event()

        def read():
            for line in proc.stdout:
                lines.append(line)
                if sum(marker in x for x in lines) >= 2:
                    seen.set()
            seen.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        self.assertTrue(seen.wait(HANG_GUARD), ''.join(lines))
        self.assertIsNone(proc.poll(), ''.join(lines))
        return proc, lines, reader

    @staticmethod
    def _reap(proc):
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()

    @staticmethod
    def expected_backend(nova_patched=False):
        """How a daemon says it runs: oslo.service's threading backend,
        except on oslo.service 4.1 (2025.1: eventlet only; native threads
        without oslo.service's launcher) and, for the daemon
        patched by nova's ``monkey_patch`` (opie-reconciler), before nova
        33, whose ``patch()`` patches eventlet in unless told not to
        (opie_sched.common.compat).
        """
        if nova_patched and (compat.nova_series() or 0) < 33:
            return 'oslo.service eventlet backend'
        if compat.service_backend() is None:
            return 'native threads: oslo.service 4.1 has no threading backend'
        return 'oslo.service threading backend'

    def assert_stops(self, proc, lines, reader, sig, nova_patched=False):
        proc.send_signal(sig)
        try:
            rc = proc.wait(HANG_GUARD)
        except subprocess.TimeoutExpired:
            self.fail('still running %d s after the signal:\n%s'
                      % (HANG_GUARD, ''.join(lines)))
        reader.join(HANG_GUARD)
        out = ''.join(lines)
        self.assertEqual(0, rc, out)
        backend = self.expected_backend(nova_patched)
        self.assertIn('running (%s)' % backend, out)
        self.assertIn('stopping after the current round', out)
        if 'eventlet' in backend:
            self.assertIn('eventlet imported: True', out)
        elif _libraries_import_eventlet() or 'native' in backend:
            # imported by the libraries (never patched): native threads
            self.assertNotIn('eventlet patched: True', out)
        else:
            self.assertIn('eventlet imported: False', out)
        return out

    def autoscaler_conf(self):
        return ('[opie_autoscaler]\ninterval = 0.1\n'
                'coordination_url = file://%s\n'
                % os.path.join(self.tmp, 'locks'))

    def test_sigterm_stops_the_autoscaler(self):
        proc, lines, reader = self.daemon(
            'opie_sched.cmd.autoscaler', self.autoscaler_conf(),
            'applications_file is not set')
        out = self.assert_stops(proc, lines, reader, signal.SIGTERM)
        self.assertIn('opie-autoscaler: stopped', out)

    def test_sigint_stops_the_autoscaler_the_same_way(self):
        proc, lines, reader = self.daemon(
            'opie_sched.cmd.autoscaler', self.autoscaler_conf(),
            'applications_file is not set')
        out = self.assert_stops(proc, lines, reader, signal.SIGINT)
        self.assertNotIn('KeyboardInterrupt', out)

    def test_sigterm_stops_the_repacker(self):
        # An unknown cloud: every period fails (logged), the service goes
        # on (and would migrate nothing: dry run).
        conf = ('[opie_repacker]\ninterval = 0.1\nsample_interval = 0.1\n'
                'state_dir = %s\ndry_run = true\n'
                'cloud = opie-test-no-such-cloud\n' % self.tmp)
        proc, lines, reader = self.daemon(
            'opie_sched.cmd.repacker', conf, 'Repacker period failed',
            env={'OS_CLIENT_CONFIG_FILE': os.path.join(self.tmp, 'none')})
        self.assert_stops(proc, lines, reader, signal.SIGTERM)

    def test_once_still_runs_one_round_and_exits(self):
        proc = subprocess.run(
            self.argv('opie_sched.cmd.autoscaler', self.autoscaler_conf())
            + ['--once'], capture_output=True, text=True,
            timeout=HANG_GUARD)
        # One round over a missing applications file: exit code 1.
        self.assertEqual(1, proc.returncode, proc.stdout + proc.stderr)
        self.assertIn('applications_file is not set',
                      proc.stdout + proc.stderr)
        self.assertNotIn('oslo.service', proc.stdout + proc.stderr)

    def reconciler_conf(self):
        # No database: every round fails (logged) and the service goes on.
        return ('[DEFAULT]\nstate_path = %s\n'
                '[opie_reconciler]\ninterval = 1\n' % self.tmp)

    def test_sigterm_stops_the_reconciler(self):
        proc, lines, reader = self.daemon(
            'opie_sched.cmd.reconciler', self.reconciler_conf(),
            'Reconciler round failed')
        out = self.assert_stops(proc, lines, reader, signal.SIGTERM,
                                nova_patched=True)
        self.assertIn('opie-reconciler: stopped', out)

    def test_reconciler_once_exit_code(self):
        proc = subprocess.run(
            self.argv('opie_sched.cmd.reconciler', self.reconciler_conf())
            + ['--once'], capture_output=True, text=True,
            timeout=HANG_GUARD)
        # The round failed (no database): exit code 1, no daemon.
        self.assertEqual(1, proc.returncode, proc.stdout + proc.stderr)
        self.assertIn('Reconciler round failed', proc.stdout + proc.stderr)
        self.assertNotIn('running (oslo.service', proc.stdout + proc.stderr)

    def test_sigterm_stops_the_market(self):
        # An unreachable Keystone: every tick's settlement fails (logged)
        # and the service goes on.
        conf = ('[opie_market]\nstate_dir = %s\ntick_interval = 0.2\n'
                % self.tmp)
        env = {'OS_CLIENT_CONFIG_FILE': os.path.join(self.tmp, 'none'),
               'OS_AUTH_URL': 'http://127.0.0.1:9/identity',
               'OS_USERNAME': 'u', 'OS_PASSWORD': 'p',
               'OS_PROJECT_NAME': 'p', 'OS_USER_DOMAIN_NAME': 'Default',
               'OS_PROJECT_DOMAIN_NAME': 'Default'}
        proc, lines, reader = self.daemon(
            'opie_sched.cmd.market_service', conf, 'errors [', env=env,
            args=['run'])
        out = self.assert_stops(proc, lines, reader, signal.SIGTERM)
        self.assertIn('opie-market: stopped', out)


class _Lock:
    """A tooz lock whose backend answers are set by the test."""

    def __init__(self, free=True, still_owner=True):
        self.free = free
        self.still_owner = still_owner
        self.released = 0

    def acquire(self, blocking=True):
        return self.free

    def is_still_owner(self):
        if isinstance(self.still_owner, Exception):
            raise self.still_owner
        return self.still_owner

    def release(self):
        self.released += 1
        return True


class LeadershipTest(testtools.TestCase):
    """The one leadership helper: ownership is confirmed with the backend
    at every check, never cached.
    """

    def setUp(self):
        super().setUp()
        self.lock = _Lock()
        self.coord = mock.Mock()
        self.coord.get_lock.return_value = self.lock
        self.lead = coordination.Leadership(lambda: self.coord, 'opie-x',
                                            'me')

    def test_takes_a_free_lock_and_confirms_it_each_round(self):
        self.assertTrue(self.lead.check())
        self.assertTrue(self.lead.check())
        self.assertTrue(self.lead.held)
        self.coord.get_lock.assert_called_once_with(b'opie-x')

    def test_lost_session_stops_the_leader(self):
        self.assertTrue(self.lead.check())
        # The backend session expired and another member took the lock.
        self.lock.still_owner = False
        self.lock.free = False
        with self.assertLogs('opie_sched.common.leadership', 'WARNING'):
            self.assertFalse(self.lead.check())
        self.assertFalse(self.lead.held)
        self.assertFalse(self.lead.check())

    def test_backend_error_on_the_check_means_not_leader(self):
        self.assertTrue(self.lead.check())
        self.lock.still_owner = RuntimeError('connection lost')
        self.lock.free = False
        with self.assertLogs('opie_sched.common.leadership', 'ERROR'):
            self.assertFalse(self.lead.check())

    def test_driver_without_is_still_owner_uses_heartbeat(self):
        import tooz
        self.assertTrue(self.lead.check())
        self.lock.is_still_owner = mock.Mock(
            side_effect=tooz.NotImplemented('no'))
        self.lock.heartbeat = mock.Mock(return_value=True)
        self.assertTrue(self.lead.check())
        self.lock.heartbeat.side_effect = RuntimeError('lease expired')
        self.lock.free = False
        self.assertFalse(self.lead.check())

    def test_release(self):
        self.assertTrue(self.lead.check())
        self.lead.release()
        self.assertEqual(1, self.lock.released)
        self.assertFalse(self.lead.held)
        self.lead.release()
        self.assertEqual(1, self.lock.released)


def _redis_url(test):
    """A Redis URL in a namespace of its own, or a skip when no Redis
    server answers on 127.0.0.1:6379 (the unit tests run without one).
    """
    import socket
    try:
        socket.create_connection(('127.0.0.1', 6379), timeout=1).close()
    except OSError:
        test.skipTest('no Redis server on 127.0.0.1:6379')
    import uuid
    return 'redis://127.0.0.1:6379?namespace=opie-test-%s' % (
        uuid.uuid4().hex[:8])


class RedisLeadershipTest(testtools.TestCase):
    """Two members on a real Redis: a lost session (the lock's key expired
    while the holder could not heartbeat) ends the old holder's leadership;
    only the new holder leads.
    """

    def test_lost_session_leaves_one_leader(self):
        url = _redis_url(self)
        a = coordination.start_coordinator(url, 'a')
        self.addCleanup(a.stop)
        b = coordination.start_coordinator(url, 'b')
        self.addCleanup(b.stop)
        lead_a = coordination.Leadership(lambda: a, 'opie-reconciler', 'a')
        lead_b = coordination.Leadership(lambda: b, 'opie-reconciler', 'b')
        self.assertTrue(lead_a.check())
        self.assertFalse(lead_b.check())
        self.assertTrue(lead_a.check())
        # What an expired session does: the lock's key is gone.
        import redis
        client = redis.Redis(host='127.0.0.1', port=6379)
        self.addCleanup(client.close)
        # tooz 7.0 (2025.2) writes the namespace and the lock's name as
        # bytes reprs: "b'opie-test-...'_b'opie-reconciler'_lock"
        keys = client.keys('*opie-test-*opie-reconciler*')
        self.assertEqual(1, len(keys), keys)
        client.delete(*keys)
        self.assertTrue(lead_b.check())
        self.assertFalse(lead_a.check())
        self.assertTrue(lead_b.check())
        self.assertFalse(lead_a.check())
