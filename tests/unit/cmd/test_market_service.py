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
"""Tests of the ``opie-market`` command (opie_sched.cmd.market_service)."""

import io
import os

import fixtures
import testtools

from opie_sched.cmd import market_service


# -- the command line --------------------------------------------------------

class CommandTest(testtools.TestCase):

    def test_db_sync_and_version(self):
        state = self.useFixture(fixtures.TempDir()).path
        conf = os.path.join(state, 'market.conf')
        with open(conf, 'w') as f:
            f.write('[opie_market]\nstate_dir = %s\n' % state)
        out = self.useFixture(fixtures.StringStream('stdout')).stream
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', out))
        self.assertEqual(0, market_service.main(
            ['--config-file', conf, 'db', 'version']))
        self.assertEqual(0, market_service.main(
            ['--config-file', conf, 'db', 'sync']))
        out.seek(0)
        # (oslo.log may log to stdout too)
        self.assertEqual(['none', '0003'], [
            line for line in out.read().splitlines() if ' ' not in line])
        self.assertTrue(os.path.exists(os.path.join(state, 'market.sqlite')))

    def test_bad_configuration_exits_2(self):
        state = self.useFixture(fixtures.TempDir()).path
        conf = os.path.join(state, 'market.conf')
        with open(conf, 'w') as f:
            f.write('[opie_market]\nstate_dir = %s\nbid_cap = -3\n' % state)
        err = io.StringIO()
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', err))
        self.assertEqual(2, market_service.main(
            ['--config-file', conf, 'tick']))
        self.assertIn('bid_cap: must be a finite number >= 0',
                      err.getvalue())
