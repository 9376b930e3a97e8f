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
"""Tests of the devcloud preflight checks (opie_sched.devcloud.preflight)."""

import os
import socket
import sys

import fixtures
import testtools

from opie_sched.devcloud import preflight


class TestPreflight(testtools.TestCase):

    def _closed_port(self):
        with socket.socket() as sock:
            sock.bind(('127.0.0.1', 0))
            return sock.getsockname()[1]

    def test_mariadb_unreachable(self):
        port = self._closed_port()
        problem = preflight.mariadb_problem('127.0.0.1', port)
        self.assertIn('MariaDB', problem)
        self.assertIn(str(port), problem)

    def test_rabbitmq_unreachable(self):
        port = self._closed_port()
        self.assertIn('RabbitMQ',
                      preflight.rabbitmq_problem('127.0.0.1', port))

    def test_missing_package_named(self):
        self.assertEqual(['not-a-dist'], preflight.missing_packages(
            {'opie_sched_no_such_module': 'not-a-dist', 'os': 'os'}))

    def test_check_names_everything(self):
        self.useFixture(fixtures.MockPatch(
            'opie_sched.devcloud.preflight.missing_packages',
            return_value=['keystone']))
        port = self._closed_port()
        exc = self.assertRaises(preflight.MissingError, preflight.check,
                                mysql_port=port, rabbit_port=port)
        message = str(exc)
        for word in ('keystone', 'MariaDB', 'RabbitMQ',
                     'devcloud-constraints'):
            self.assertIn(word, message)

    def test_neutron_package_checked_when_needed(self):
        seen = []

        def missing(packages=None):
            seen.append(sorted(packages or preflight.PACKAGES))
            return []
        self.useFixture(fixtures.MockPatch(
            'opie_sched.devcloud.preflight.missing_packages',
            side_effect=missing))
        self.useFixture(fixtures.MockPatch(
            'opie_sched.devcloud.preflight.missing_programs',
            return_value=[]))
        self.useFixture(fixtures.MockPatch(
            'opie_sched.devcloud.preflight.mariadb_problem',
            return_value=None))
        self.useFixture(fixtures.MockPatch(
            'opie_sched.devcloud.preflight.rabbitmq_problem',
            return_value=None))
        preflight.check(neutron=True)
        self.assertIn(['neutron'], seen)
        seen[:] = []
        self.useFixture(fixtures.MockPatch(
            'opie_sched.devcloud.preflight.redis_problem',
            return_value='Redis is not reachable'))
        self.assertRaisesRegex(preflight.MissingError, 'Redis is not',
                               preflight.check, redis=True)
        self.assertIn(['redis'], seen)
        seen[:] = []
        preflight.check()
        self.assertNotIn(['neutron'], seen)

    def test_bin_path_prefers_environment(self):
        self.assertEqual(sys.executable, preflight.bin_path(
            os.path.basename(sys.executable)))
        self.assertIsNone(preflight.bin_path('opie-no-such-program-x'))
