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

import json
import os

import fixtures

from opie_sched.cmd import cli

from tests.unit.cmd.helpers import CLITestCase


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
