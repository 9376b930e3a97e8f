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
"""Tests of ``opie-sched provider-config`` (opie_sched.cmd.provider_config)."""

import os

import yaml

from nova.compute import provider_config as nova_pc

from tests.unit.cmd.helpers import CLITestCase
from tests.unit.common import test_flavors
from tests.unit.common import test_provider_config


UUID1 = test_provider_config.UUID1


class ProviderConfigCommandTest(CLITestCase):

    def test_manual_to_stdout_with_nova_defaults(self):
        self.assertEqual(0, self.run_cli(
            'provider-config', '--vcpus', '8', '--memory-mb', '16000',
            '--disk-gb', '200'))
        doc = yaml.safe_load(self.stdout.getvalue())
        self.assertEqual([{'uuid': '$COMPUTE_NODE'}],
                         [p['identification'] for p in doc['providers']])
        inv = [next(iter(i.values()))
               for i in doc['providers'][0]['inventories']['additional']]
        self.assertEqual([8, 16000, 200], [i['total'] for i in inv])
        self.assertEqual([0, 512, 0], [i['reserved'] for i in inv])
        self.assertEqual([4.0, 1.0, 1.0],
                         [i['allocation_ratio'] for i in inv])
        self.assertEqual('', self.stderr.getvalue())

    def test_manual_options(self):
        self.assertEqual(0, self.run_cli(
            'provider-config', '--host', 'cmp1', '--vcpus', '8',
            '--memory-mb', '16000', '--disk-gb', '200',
            '--reserved-vcpus', '1', '--reserved-memory-mb', '0',
            '--reserved-disk-gb', '5', '--cpu-allocation-ratio', '1',
            '--ram-allocation-ratio', '1.5', '--disk-allocation-ratio',
            '2'))
        doc = yaml.safe_load(self.stdout.getvalue())
        provider = doc['providers'][0]
        self.assertEqual({'name': 'cmp1'}, provider['identification'])
        inv = [next(iter(i.values()))
               for i in provider['inventories']['additional']]
        self.assertEqual([1, 0, 5], [i['reserved'] for i in inv])
        self.assertEqual([1.0, 1.5, 2.0],
                         [i['allocation_ratio'] for i in inv])

    def test_host_uuid(self):
        self.assertEqual(0, self.run_cli(
            'provider-config', '--host', UUID1, '--vcpus', '1',
            '--memory-mb', '1024', '--disk-gb', '1'))
        doc = yaml.safe_load(self.stdout.getvalue())
        self.assertEqual({'uuid': UUID1},
                         doc['providers'][0]['identification'])

    def test_output_file_loaded_by_nova(self):
        out_dir = os.path.join(self.tmp, 'provider_config')
        os.mkdir(out_dir)
        path = os.path.join(out_dir, 'opie.yaml')
        self.assertEqual(0, self.run_cli(
            'provider-config', '--vcpus', '4', '--memory-mb', '8192',
            '--disk-gb', '100', '--output', path))
        self.assertIn('wrote %s' % path, self.stdout.getvalue())
        self.assertEqual(['opie.yaml'], os.listdir(out_dir))
        configs = nova_pc.get_provider_configs(out_dir)
        self.assertEqual({'$COMPUTE_NODE'}, set(configs))

    def test_output_error(self):
        path = os.path.join(self.tmp, 'missing-dir', 'x.yaml')
        self.assertEqual(1, self.run_cli(
            'provider-config', '--vcpus', '4', '--memory-mb', '8192',
            '--disk-gb', '100', '--output', path))
        self.assertEqual(
            "opie-sched: error: [Errno 2] No such file or directory: %r\n"
            % path, self.stderr.getvalue())
        # the path given, not the temporary file beside it
        self.assertNotIn('.tmp', self.stderr.getvalue())
        # a directory given as the output: its name, and nothing left over
        self.stderr.truncate(0)
        self.stderr.seek(0)
        a_dir = os.path.join(self.tmp, 'a-dir')
        os.mkdir(a_dir)
        self.assertEqual(1, self.run_cli(
            'provider-config', '--vcpus', '4', '--memory-mb', '8192',
            '--disk-gb', '100', '--output', a_dir))
        self.assertOneLineError('Is a directory: %r' % a_dir)
        self.assertNotIn('.tmp', self.stderr.getvalue())
        self.assertEqual([], [n for n in os.listdir(self.tmp)
                              if n.endswith('.tmp')])

    def test_invalid_values(self):
        self.assertEqual(1, self.run_cli(
            'provider-config', '--vcpus', '0', '--memory-mb', '8192',
            '--disk-gb', '100'))
        self.assertOneLineError('vcpus=0 must be >= 1')
        self.stderr.truncate(0)
        self.stderr.seek(0)
        self.assertEqual(1, self.run_cli(
            'provider-config', '--vcpus', '1', '--memory-mb', '256',
            '--disk-gb', '100'))
        self.assertOneLineError(
            '$COMPUTE_NODE: reserved_memory_mb=512 is more than '
            'memory_mb=256')

    def test_usage(self):
        self.assertEqual(2, self.run_cli('provider-config', '--vcpus', '4'))
        self.assertOneLineError('--memory-mb, --disk-gb required')
        self.stderr.truncate(0)
        self.stderr.seek(0)
        self.assertEqual(2, self.run_cli(
            'provider-config', '--vcpus', '4', '--memory-mb', '1',
            '--disk-gb', '1', '--node', 'x'))
        self.assertOneLineError('--node needs --from-placement')
        self.stderr.truncate(0)
        self.stderr.seek(0)
        self.assertEqual(2, self.run_cli(
            'provider-config', '--from-placement', '--host', 'x',
            '--cpu-allocation-ratio', '2'))
        self.assertOneLineError(
            'do not give --host, --cpu-allocation-ratio')

    def test_from_placement(self):
        placement = self.useFixture(test_provider_config.FakePlacement())
        placement.add('cmp1', 8, 16000, 200, rp_uuid=UUID1)
        placement.add('cmp2', 4, 8000, 100)
        calls = self.use_connection(test_flavors.sdk_connection(
            placement=test_provider_config.PLACEMENT))
        self.assertEqual(0, self.run_cli(
            '--os-cloud', 'alpha', 'provider-config', '--from-placement',
            '--node', 'cmp1'))
        self.assertEqual('alpha', calls[0].os_cloud)
        doc = yaml.safe_load(self.stdout.getvalue())
        self.assertEqual([{'uuid': UUID1}],
                         [p['identification'] for p in doc['providers']])

    def test_from_placement_errors(self):
        placement = self.useFixture(test_provider_config.FakePlacement())
        self.use_connection(test_flavors.sdk_connection(
            placement=test_provider_config.PLACEMENT))
        self.assertEqual(1, self.run_cli('provider-config',
                                         '--from-placement'))
        self.assertOneLineError('no compute node resource providers')
        placement.add('cmp1', 8, 16000, 200)
        self.stderr.truncate(0)
        self.stderr.seek(0)
        self.assertEqual(1, self.run_cli('provider-config',
                                         '--from-placement', '--node', 'x'))
        self.assertOneLineError("resource provider 'x' not found")
