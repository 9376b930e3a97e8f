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
"""Tests of the ``opie-autoscaler`` command (opie_sched.cmd.autoscaler)."""

import os

import fixtures
import testtools

from opie_sched.cmd import autoscaler as cmd
from opie_sched.conf import autoscaler as opts


class CommandTest(testtools.TestCase):

    def test_parse_config(self):
        d = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(d, 'a.conf')
        with open(path, 'w') as f:
            f.write('[opie_autoscaler]\ninterval = 5\n'
                    'applications_file = /x.yaml\n')
        conf = cmd.parse_config(['--config-file', path, '--once',
                                 '--dry-run'])
        self.assertTrue(conf.once)
        self.assertTrue(conf.opie_autoscaler.dry_run)
        self.assertEqual(5.0, conf.opie_autoscaler.interval)
        self.assertEqual('/x.yaml', conf.opie_autoscaler.applications_file)

    def test_list_opts(self):
        [(group, options)] = opts.list_opts()
        self.assertEqual('opie_autoscaler', group.name)
        names = {o.name for o in options}
        self.assertTrue({'applications_file', 'interval',
                         'stability_interval', 'gain_threshold',
                         'repack_time', 'c_extra', 'dry_run',
                         'coordination_url', 'boot_timeout',
                         'health_url', 'market_url', 'market_pool'} <= names)
        self.assertTrue(opts.DEFAULT_COORDINATION_URL.startswith('file://'))
