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
"""Tests of the devcloud process supervision (opie_sched.devcloud.process)."""

import os
import sys

import fixtures
import testtools

from opie_sched.devcloud import process


class TestProcess(testtools.TestCase):

    def test_run_failure_names_command(self):
        log = os.path.join(self.useFixture(fixtures.TempDir()).path, 'l')
        exc = self.assertRaises(
            process.ServiceError, process.run,
            [sys.executable, '-c', 'print("boom"); raise SystemExit(4)'],
            log, name='x')
        self.assertIn('exited with 4', str(exc))
        self.assertIn('boom', process.tail(log))

    def test_start_wait_stop(self):
        log = os.path.join(self.useFixture(fixtures.TempDir()).path, 'l')
        pid = process.start('sleeper', [sys.executable, '-c',
                                        'import time; time.sleep(60)'], log)
        self.addCleanup(process.stop, pid, 2)
        self.assertTrue(process.alive(pid))
        self.assertEqual([pid], process.group_pids(pid))
        self.assertGreater(process.rss_kib([pid]), 0)
        process.stop(pid, timeout=5)
        self.assertFalse(process.alive(pid))

    def test_stop_all_kills_what_ignores_sigterm(self):
        log = os.path.join(self.useFixture(fixtures.TempDir()).path, 'l')
        stubborn = process.start('stubborn', [
            sys.executable, '-c',
            'import signal, time; signal.signal(signal.SIGTERM, '
            'signal.SIG_IGN); print("READY" + "!", flush=True); '
            'time.sleep(60)'],
            log)
        polite = process.start('polite', [
            sys.executable, '-c', 'import time; time.sleep(60)'], log)
        self.addCleanup(process.stop, stubborn, 0)
        process.wait_for(('stubborn', log),
                         lambda: 'READY!' in process.tail(log), 30,
                         interval=0.05)
        killed = process.stop_all([stubborn, polite], timeout=1)
        self.assertEqual([stubborn], killed)
        self.assertFalse(process.alive(stubborn))
        self.assertFalse(process.alive(polite))

    def test_wait_for_dead_process(self):
        log = os.path.join(self.useFixture(fixtures.TempDir()).path, 'l')
        pid = process.start('quick', [sys.executable, '-c', 'pass'], log)
        exc = self.assertRaises(process.ServiceError, process.wait_for,
                                ('quick', log), lambda: False, 30,
                                pids=[pid], interval=0.05)
        self.assertIn('exited during start-up', str(exc))

    def test_wait_for_timeout_names_last_error(self):
        def check():
            raise RuntimeError('refused')
        exc = self.assertRaises(process.ServiceError, process.wait_for,
                                ('svc', None), check, 0.2, interval=0.05)
        self.assertIn('refused', str(exc))

    def test_tail_missing(self):
        self.assertIn('no log', process.tail('/nonexistent/log'))
