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
"""Tests of the opie-sched command line."""

import io
import json
import logging
import os

import fixtures
import testtools
import yaml

from nova.compute import provider_config as nova_pc
from openstack import exceptions as sdk_exc

from opie_sched.cmd import cli
from opie_sched.common import flavors
from tests.unit.common import test_flavors
from tests.unit.common import test_provider_config

UUID1 = test_provider_config.UUID1

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


#: Every command of opie-sched (setup.cfg [entry_points] opie_sched.cli).
COMMANDS = {
    'demo', 'preempt explain', 'preempt list', 'flavor check',
    'flavor create-preemptible',
    'provider-config', 'reliability plan', 'repack plan', 'repack simulate',
    'market allocate', 'market demo', 'simulate', 'devcloud up',
    'devcloud status', 'devcloud down', 'devcloud scheduler-conf'}


class Hello(cli.Lister):
    """Say hello."""

    errors = (LookupError,)

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('who')
        return parser

    def take_action(self, args):
        if args.who == 'usage':
            raise cli.UsageError('who must not be usage')
        if args.who == 'nobody':
            raise LookupError('nobody\nis here')
        if args.who == 'bug':
            raise RuntimeError('first\nsecond')
        return ('greeting', 'who'), [('hello', args.who), ('hi', args.who)]


class RegistrationTest(CLITestCase):

    def app(self, *argv):
        app = cli.OpieSched(list(argv))
        app.command_manager.add_command('hello', Hello)
        return app

    def test_entry_points(self):
        manager = cli.OpieSched([]).command_manager
        names = {name for name, _ in manager} - {'help', 'complete'}
        self.assertEqual(COMMANDS, names)
        bases = (cli.Command, cli.Lister, cli.ShowOne)
        for name in COMMANDS:
            factory = dict(manager)[name].load()
            self.assertTrue(issubclass(factory, bases), name)
            # a one-line summary for the command list
            self.assertTrue(factory.__doc__.split('\n')[0].strip(), name)

    def test_commands(self):
        self.assertEqual(0, self.run_cli('--help'))
        out = self.stdout.getvalue()
        for command in COMMANDS:
            self.assertIn('  %s ' % command, out)
        self.assertIn('--os-cloud', out)

    def test_a_lister_gets_the_formatters(self):
        self.assertEqual(0, self.app().run(['hello', 'world', '-f', 'json',
                                            '-c', 'greeting']))
        self.assertEqual([{'greeting': 'hello'}, {'greeting': 'hi'}],
                         json.loads(self.stdout.getvalue()))
        self.stdout.truncate(0)
        self.stdout.seek(0)
        self.assertEqual(0, self.app().run(['hello', 'world', '-f', 'csv']))
        self.assertEqual('"greeting","who"\n"hello","world"\n'
                         '"hi","world"\n',
                         self.stdout.getvalue().replace('\r', ''))

    def test_errors_and_exit_codes(self):
        self.assertEqual(2, self.app().run(['hello', 'usage']))
        self.assertOneLineError('who must not be usage')
        for who, fragment in (('nobody', 'nobody is here'),
                              ('bug', 'unexpected RuntimeError: first '
                                      'second (run with --debug')):
            self.stderr.truncate(0)
            self.stderr.seek(0)
            self.assertEqual(1, self.app().run(['hello', who]))
            self.assertOneLineError(fragment)
        self.stderr.truncate(0)
        self.stderr.seek(0)
        self.assertEqual(2, self.app().run(['hello', 'x', '-c', 'nope']))
        self.assertOneLineError('-c: No recognized column names')

    def test_a_missing_extra_is_named(self):
        class EntryPoint:
            value = 'opie_test:Cmd'

            def load(self):
                raise ModuleNotFoundError("No module named 'numpy'",
                                          name='numpy')

        app = cli.OpieSched([])
        app.command_manager.commands['numbers'] = cli._Guarded(
            EntryPoint(), 'numbers')
        self.assertEqual(1, app.run(['numbers', '--seed', '1']))
        self.assertOneLineError('opie-sched numbers needs: pip install '
                                'opie_sched[sim] (No module named')
        app = cli.OpieSched(['--help'])
        app.command_manager.commands['numbers'] = cli._Guarded(
            EntryPoint(), 'numbers')
        self.assertRaises(SystemExit, app.run, ['--help'])
        self.assertIn('(needs: pip install opie_sched[sim])',
                      self.stdout.getvalue())

    def test_usage_errors(self):
        self.assertEqual(2, self.run_cli())
        self.assertEqual(2, self.run_cli('bogus'))
        self.assertEqual(2, self.run_cli('flavor'))
        self.assertEqual(2, self.run_cli('flavor', 'create-preemptible'))
        self.assertEqual(2, self.run_cli('provider-config', '--vcpus', 'x'))
        self.assertEqual(2, self.run_cli('preempt', 'explain', 'x.json',
                                         '-f', 'csv'))
        lines = self.stderr.getvalue().splitlines()
        self.assertEqual(6, len(lines), lines)
        self.assertEqual('opie-sched: error: a command is required (see '
                         'opie-sched --help)', lines[0])
        self.assertEqual('opie-sched: error: bogus is not an opie-sched '
                         'command (see opie-sched --help)', lines[1])
        self.assertEqual('opie-sched: error: flavor is not an opie-sched '
                         'command; did you mean: flavor check, flavor '
                         'create-preemptible (see opie-sched --help)',
                         lines[2])
        self.assertEqual(
            "opie-sched provider-config: error: argument --vcpus: invalid "
            "int value: 'x' (see --help)", lines[4])
        self.assertIn("argument -f/--format: invalid choice: 'csv'",
                      lines[5])

    def test_unknown_cost_module_is_one_line(self):
        snap = os.path.join(self.tmp, 'snap.json')
        with open(snap, 'w') as f:
            json.dump({'request': {'vcpus': 1, 'memory_mb': 1, 'disk_gb': 1},
                       'hosts': []}, f)
        self.assertEqual(1, self.run_cli('preempt', 'explain', snap,
                                         '--cost', 'nonexistent'))
        self.assertOneLineError("unknown cost module 'nonexistent'")
        # stevedore's own "Could not load nonexistent" warning is not shown
        self.assertNotIn('nonexistent', self.log.output)

    def test_subcommand_help(self):
        self.assertEqual(0, self.run_cli('provider-config', '--help'))
        self.assertIn('--from-placement', self.stdout.getvalue())
        self.stdout.truncate(0)
        self.stdout.seek(0)
        self.assertEqual(0, self.run_cli('help', 'preempt', 'list'))
        self.assertIn('--since', self.stdout.getvalue())
        self.assertIn('-f {csv,json,table,value,yaml}',
                      self.stdout.getvalue())


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


class ConnectTest(CLITestCase):

    def connect(self, *argv):
        argv = list(argv) + ['provider-config', '--from-placement']
        options, _ = cli.parse_command(argv)
        return cli.connect(options)

    def test_os_cloud_option(self):
        conn = self.connect('--os-cloud', 'alpha')
        self.assertEqual('alpha', conn.config.name)
        self.assertEqual('RegionA', conn.config.get_region_name())
        self.assertEqual('admin', conn.config.auth['username'])

    def test_os_cloud_environment_and_overrides(self):
        self.useFixture(fixtures.EnvironmentVariable('OS_CLOUD', 'beta'))
        conn = self.connect()
        self.assertEqual('beta', conn.config.name)
        conn = self.connect('--os-interface', 'internal')
        self.assertEqual('beta', conn.config.name)
        self.assertEqual('internal', conn.config.get_interface())
        conn = self.connect('--os-cloud', 'alpha')
        self.assertEqual('alpha', conn.config.name)

    def test_os_environment_without_clouds_yaml(self):
        env = {'OS_AUTH_URL': 'http://keystone.example/v3',
               'OS_USERNAME': 'env-user', 'OS_PASSWORD': 'pw',
               'OS_PROJECT_NAME': 'p', 'OS_USER_DOMAIN_NAME': 'Default',
               'OS_PROJECT_DOMAIN_NAME': 'Default',
               'OS_REGION_NAME': 'EnvRegion'}
        for key, value in env.items():
            self.useFixture(fixtures.EnvironmentVariable(key, value))
        conn = self.connect()
        self.assertEqual('env-user', conn.config.auth['username'])
        self.assertEqual('EnvRegion', conn.config.get_region_name())

    def test_unknown_cloud(self):
        self.assertEqual(1, self.run_cli('--os-cloud', 'nope',
                                         'provider-config',
                                         '--from-placement'))
        self.assertOneLineError('Cloud nope was not found')

    def test_unknown_cloud_from_environment_does_not_break_parsing(self):
        self.useFixture(fixtures.EnvironmentVariable('OS_CLOUD', 'nope'))
        self.assertEqual(0, self.run_cli(
            'provider-config', '--vcpus', '1', '--memory-mb', '1024',
            '--disk-gb', '1'))
        self.assertEqual(1, self.run_cli('provider-config',
                                         '--from-placement'))
        self.assertOneLineError('Cloud nope was not found')

    def test_missing_credentials(self):
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_CLIENT_CONFIG_FILE', os.path.join(self.tmp, 'none.yaml')))
        self.assertEqual(1, self.run_cli('flavor', 'create-preemptible',
                                         'm1.small'))
        self.assertOneLineError(
            'opie-sched: error: no cloud credentials (missing auth_url): '
            'name a cloud of clouds.yaml with --os-cloud NAME or OS_CLOUD, '
            'or give --os-auth-url (OS_AUTH_URL) and the other --os-* '
            'options or OS_* variables of your credentials\n')
        self.assertNotIn('Auth plugin requires', self.stderr.getvalue())
