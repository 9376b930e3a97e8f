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
"""Helpers shared by the tests of this package."""

import io
import logging
import os

import fixtures
import testtools
import yaml

from opie_sched.cmd import cli


CLOUDS = {'clouds': {
    'alpha': {'auth': {'auth_url': 'http://keystone.example/v3',
                       'username': 'admin', 'password': 'secret',
                       'project_name': 'admin',
                       'user_domain_name': 'Default',
                       'project_domain_name': 'Default'},
              'region_name': 'RegionA'},
    'beta': {'auth': {'auth_url': 'http://keystone.example/v3',
                      'username': 'demo', 'password': 'secret',
                      'project_name': 'demo',
                      'user_domain_name': 'Default',
                      'project_domain_name': 'Default'},
             'region_name': 'RegionB'},
}}


class CLITestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        self.tmp = tmp
        clouds = os.path.join(tmp, 'clouds.yaml')
        with open(clouds, 'w') as f:
            yaml.safe_dump(CLOUDS, f)
        for var in [v for v in os.environ
                    if v.startswith('OS_') and not v.endswith('_CAPTURE')
                    and v != 'OS_TEST_TIMEOUT']:
            self.useFixture(fixtures.EnvironmentVariable(var))
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_CLIENT_CONFIG_FILE', clouds))
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_CLIENT_SECURE_FILE', os.path.join(tmp, 'secure.yaml')))
        self.useFixture(fixtures.EnvironmentVariable('HOME', tmp))
        self.log = self.useFixture(fixtures.FakeLogger())
        stevedore_log = logging.getLogger('stevedore')
        self.addCleanup(stevedore_log.setLevel, stevedore_log.level)
        self.stdout = io.StringIO()
        self.stderr = io.StringIO()
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', self.stdout))
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', self.stderr))

    def run_cli(self, *argv):
        return cli.main(list(argv))

    def use_connection(self, conn):
        calls = []

        def connect(args):
            calls.append(args)
            return conn
        self.useFixture(fixtures.MonkeyPatch(
            'opie_sched.cmd.cli.connect', connect))
        return calls

    def assertOneLineError(self, fragment):
        err = self.stderr.getvalue()
        self.assertEqual(1, err.count('\n'), err)
        self.assertTrue(err.startswith('opie-sched: error: '), err)
        self.assertIn(fragment, err)
        self.assertNotIn('Traceback', err)
