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
"""Tests of the devcloud WSGI entry points (opie_sched.devcloud.wsgi)."""

import importlib
import sys

import fixtures
import testtools

from opie_sched.devcloud import neutron_standin


class TestWSGI(testtools.TestCase):

    def test_standin_loaded_and_argv_reset(self):
        self.useFixture(fixtures.EnvironmentVariable(
            'OPIE_DEVCLOUD_WSGI', 'neutron-standin'))
        self.useFixture(fixtures.MonkeyPatch(
            'sys.argv', ['gunicorn', '--bind', 'x']))
        wsgi = importlib.import_module('opie_sched.devcloud.wsgi')
        self.assertIs(neutron_standin.application, wsgi.application)
        sys.argv[1:] = ['--bind', 'y']
        app = wsgi.load('neutron-standin', {})
        self.assertIs(neutron_standin.application, app)
        self.assertEqual(['gunicorn'], sys.argv)
