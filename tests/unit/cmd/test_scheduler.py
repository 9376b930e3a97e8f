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
"""Tests of the ``opie-scheduler`` command (opie_sched.cmd.scheduler): it
does not start when the locks' check says no."""

import subprocess
import sys

import testtools


#: opie-scheduler's main() with nova's start-up mocked and the check's
#: answer given in argv[1] ('' = nothing wrong); prints the exit code and
#: whether the service was created.
_SCHEDULER_MAIN = """
import sys
from unittest import mock
from opie_sched.cmd import scheduler as cmd
from opie_sched.scheduler import locks
with mock.patch.object(cmd.config, 'parse_args'), \\
        mock.patch.object(cmd.logging, 'setup'), \\
        mock.patch.object(cmd.objects, 'register_all'), \\
        mock.patch.object(cmd.objects.Service, 'enable_min_version_cache'), \\
        mock.patch.object(cmd.compat, 'reset_executors'), \\
        mock.patch.object(cmd.service, 'serve'), \\
        mock.patch.object(cmd.service, 'wait'), \\
        mock.patch.object(locks, 'startup_error',
                          return_value=sys.argv[1] or None), \\
        mock.patch.object(cmd.service.Service, 'create') as create:
    rc = cmd.main()
print('rc=%s created=%s' % (rc, create.called), flush=True)
"""


class SchedulerStartTest(testtools.TestCase):
    """opie-scheduler does not start when the locks' check says no (a
    subprocess: the console script patches nova for native threads).
    """

    def main(self, error):
        proc = subprocess.run(
            [sys.executable, '-c', _SCHEDULER_MAIN, error],
            capture_output=True, text=True, timeout=120)
        self.assertEqual(0, proc.returncode, proc.stderr)
        return proc.stdout.strip().splitlines()[-1], proc.stderr

    def test_refuses_to_start(self):
        out, err = self.main('scheduler hosts share file locks')
        self.assertEqual('rc=1 created=False', out)
        self.assertIn('opie-scheduler refuses to start: scheduler hosts '
                      'share file locks', err)

    def test_starts(self):
        out, _err = self.main('')
        self.assertEqual('rc=None created=True', out)
