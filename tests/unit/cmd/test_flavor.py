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
"""Tests of ``opie-sched flavor`` (opie_sched.cmd.flavor)."""

import json

import fixtures

from openstack import exceptions as sdk_exc

from opie_sched.common import flavors
from tests.unit.cmd.helpers import CLITestCase
from tests.unit.common import test_flavors


class FlavorCommandTest(CLITestCase):

    def setUp(self):
        super().setUp()
        self.nova = self.useFixture(test_flavors.FakeNova())
        self.nova.add('m1.small', vcpus=1, ram=2048, disk=20)
        self.use_connection(test_flavors.sdk_connection(
            compute=test_flavors.NOVA))

    def test_create(self):
        self.assertEqual(0, self.run_cli('flavor', 'create-preemptible',
                                         'm1.small', '-f', 'json'))
        shown = json.loads(self.stdout.getvalue())
        stored = self.nova.by_name('m1.small.preemptible')[0]
        self.assertEqual(stored['id'], shown['id'])
        self.assertEqual(('m1.small.preemptible', 1, 2048, 20, True),
                         (shown['name'], shown['vcpus'], shown['ram'],
                          shown['disk'], shown['is_public']))
        self.assertEqual(stored['extra_specs'], shown['extra_specs'])
        self.assertEqual('20', shown['extra_specs'][
            'resources:CUSTOM_PREEMPTIBLE_DISK_GB'])
        self.assertTrue(flavors.is_preemptible(stored['extra_specs'], 1,
                                               2048, 20))

    def test_create_table(self):
        self.assertEqual(0, self.run_cli('flavor', 'create-preemptible',
                                         'm1.small'))
        out = self.stdout.getvalue()
        self.assertIn('| name        | m1.small.preemptible', out)
        self.assertIn('resources:CUSTOM_PREEMPTIBLE_DISK_GB=20', out)

    def test_create_named_private(self):
        self.assertEqual(0, self.run_cli(
            'flavor', 'create-preemptible', 'm1.small', '--name', 'spot',
            '--private'))
        self.assertFalse(self.nova.by_name('spot')[0]['is_public'])

    def test_errors_are_one_line(self):
        self.run_cli('flavor', 'create-preemptible', 'm1.small')
        self.stdout.truncate(0)
        self.assertEqual(1, self.run_cli('flavor', 'create-preemptible',
                                         'm1.small'))
        self.assertOneLineError(
            "a flavor named 'm1.small.preemptible' already exists")

    def test_sdk_errors(self):
        def boom(*a, **kw):
            raise sdk_exc.HttpException('Forbidden\npolicy does not allow')
        self.useFixture(fixtures.MonkeyPatch(
            'opie_sched.common.flavors.create_preemptible_twin', boom))
        self.assertEqual(1, self.run_cli('flavor', 'create-preemptible',
                                         'm1.small'))
        self.assertOneLineError('Forbidden policy does not allow')

    def test_unexpected_errors(self):
        def boom(*a, **kw):
            raise RuntimeError('first\nsecond')
        self.useFixture(fixtures.MonkeyPatch(
            'opie_sched.common.flavors.create_preemptible_twin', boom))
        self.assertEqual(1, self.run_cli('flavor', 'create-preemptible',
                                         'm1.small'))
        self.assertOneLineError('unexpected RuntimeError: first second')
