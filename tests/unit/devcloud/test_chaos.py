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
"""The devcloud's fault injection helpers (no cloud: a state directory
with a dummy service).
"""

import datetime
import os
import sys

import fixtures
import testtools

from opie_sched.devcloud import chaos
from opie_sched.devcloud import config
from opie_sched.devcloud import layout as layout_mod
from opie_sched.devcloud import process

LINE = ('2026-11-25 16:30:02.729 31086 INFO opie_sched.scheduler.manager '
        '[None req-1 - - - - - -] Preemption decision for instance x')


class LogLineTest(testtools.TestCase):

    def test_pid_and_time_of_an_oslo_line(self):
        self.assertEqual(31086, chaos.pid_of(LINE))
        self.assertEqual(
            datetime.datetime(2026, 11, 25, 16, 30, 2, 729000).timestamp(),
            chaos.time_of(LINE))

    def test_other_lines(self):
        for line in ('', 'Traceback (most recent call last):',
                     '==== 2026-11-25 16:30:02: opie-scheduler'):
            self.assertIsNone(chaos.pid_of(line))
            self.assertIsNone(chaos.time_of(line))


class LogWatchTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                 'svc.log')
        with open(self.path, 'w') as f:
            f.write('old line\n')

    def _append(self, text):
        with open(self.path, 'a') as f:
            f.write(text)

    def test_only_lines_written_after_the_watch(self):
        watch = chaos.LogWatch(self.path)
        self._append('one\ntw')
        self.assertEqual(['one'], watch.lines())
        self._append('o\n')
        self.assertEqual(['two'], watch.lines())
        self.assertEqual([], watch.lines())

    def test_wait_for_keeps_the_lines_after_the_match(self):
        watch = chaos.LogWatch(self.path)
        self._append('a start 1\nb start 2\nc\n')
        line, _ = watch.wait_for('start', 1)
        self.assertEqual('a start 1', line)
        # The second match was read with the first one: still found.
        line, _ = watch.wait_for('start', 1)
        self.assertEqual('b start 2', line)
        self.assertEqual(['c'], watch.lines())

    def test_several_files(self):
        other = self.path + '.2'
        with open(other, 'w') as f:
            f.write('old\n')
        watch = chaos.LogWatch([self.path, other])
        self._append('one\n')
        with open(other, 'a') as f:
            f.write('two\n')
        self.assertEqual(['one', 'two'], sorted(watch.lines()))

    def test_wait_for_times_out(self):
        watch = chaos.LogWatch(self.path)
        self._append('nothing here\n')
        self.assertRaises(chaos.FaultError, watch.wait_for, 'start', 0.05)


class FaultsTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path
        self.layout = layout_mod.Layout(self.root)
        os.makedirs(self.layout.logs)
        os.makedirs(self.layout.etc)
        log = self.layout.log('dummy')
        argv = [sys.executable, '-c', 'import time; time.sleep(60)']
        pid = process.start('dummy', argv, log)
        self.addCleanup(self._stop)
        settings = config.Settings({'keystone': 21000}, password='pw')
        self.layout.save({'settings': settings.to_dict(), 'services': {
            'dummy': {'pid': pid, 'log': log, 'argv': argv}}})

    def _stop(self):
        state = self.layout.load()
        process.stop(state['services']['dummy']['pid'], timeout=2)

    def test_no_cloud(self):
        self.assertRaises(chaos.FaultError, chaos.Faults,
                          os.path.join(self.root, 'none'))

    def test_unknown_service(self):
        faults = chaos.Faults(self.root)
        self.assertRaises(chaos.FaultError, faults.processes, 'nova-api')

    def test_services_by_prefix(self):
        faults = chaos.Faults(self.root)
        self.assertEqual(['dummy'], faults.services('dummy'))
        self.assertEqual([], faults.services('dumm'))

    def test_kill_and_restart_recorded_in_the_state_file(self):
        faults = chaos.Faults(self.root)
        old = faults.processes('dummy')
        self.assertEqual(1, len(old))
        faults.kill_service('dummy')
        self.assertEqual([], faults.processes('dummy'))
        overlay = faults.overlay('dummy', {'g': {'k': 1}})
        with open(overlay) as f:
            self.assertEqual('[g]\nk = 1\n', f.read())
        pid, argv = faults.restart('dummy', ['--x'])
        self.assertNotEqual(old[0], pid)
        self.assertEqual('--x', argv[-1])
        state = self.layout.load()['services']['dummy']
        # devcloud down stops the recorded pid: the new one.
        self.assertEqual((pid, argv), (state['pid'], state['argv']))
        self.assertTrue(process.alive(pid))

    def test_freeze_and_thaw(self):
        faults = chaos.Faults(self.root)
        pid = faults.processes('dummy')[0]

        def state():
            with open('/proc/%d/stat' % pid) as f:
                return f.read().rsplit(')', 1)[1].split()[0]
        self.assertTrue(faults.freeze('dummy'))
        process.wait_for(('dummy', None), lambda: state() == 'T', 5)
        self.assertTrue(faults.thaw('dummy'))
        process.wait_for(('dummy', None), lambda: state() != 'T', 5)
