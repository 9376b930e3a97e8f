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
"""Tests of the ``opie-repacker`` command (opie_sched.cmd.repacker)."""

import io
import os
from unittest import mock

import fixtures
import testtools

from opie_sched.cmd import repacker as cmd
from opie_sched.conf import repacker as opts
from opie_sched.services.repacker import service as svc

from tests.unit.rpm import test_planner
from tests.unit.services.repacker.helpers import FakeCollector
from tests.unit.services.repacker.helpers import FakeConn


class CommandTest(testtools.TestCase):

    def test_options(self):
        conf = cmd.parse_config(['--dry-run', '--once'])
        self.assertTrue(conf.opie_repacker.dry_run)
        self.assertTrue(conf.once)
        self.assertEqual(600.0, conf.opie_repacker.interval)
        self.assertEqual([opts.repacker_group],
                         [g for g, _ in opts.list_opts()])

    def test_once_dry_run_prints_table(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        hosts = test_planner.BudgetTest.hosts(self)
        conf_file = os.path.join(tmp, 'r.conf')
        with open(conf_file, 'w') as f:
            f.write('[opie_repacker]\nstate_dir = %s\n' % tmp)
        out = io.StringIO()
        with mock.patch.object(svc.RepackerService, 'collector',
                               FakeCollector(hosts)), \
                mock.patch('sys.stdout', out):
            rc = cmd.main(['--config-file', conf_file, '--once',
                           '--dry-run'], conn=FakeConn({}))
        self.assertEqual(0, rc)
        self.assertIn('p1', out.getvalue())
        self.assertIn('underload', out.getvalue())

    def test_bad_option(self):
        err = io.StringIO()
        with mock.patch('sys.stderr', err):
            self.assertEqual(2, cmd.main(['--nope']))
        self.assertIn('unrecognized arguments: --nope', err.getvalue())
