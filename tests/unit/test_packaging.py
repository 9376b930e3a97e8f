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
"""A scheduler host installs ``opie_sched[scheduler]`` (issue 15; nova
left the base requirements in issue 23: tests/unit/test_client_install.py).

The scheduler plugin's modules, the reconciler, the extra-spec validators
and the operator commands of a scheduler host import without the packages
that only another extra (setup.cfg ``[extras]``) installs; ``opie-sched``
starts without them and names the extra a command needs. Each check runs
in a subprocess whose import system refuses the extras' modules, as on a
host that never installed them.

Run with ``stestr run tests.unit.test_packaging``.
"""

import configparser
import json
import os
import re
import subprocess
import sys
import textwrap

import testtools

from opie_sched.cmd import cli

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

#: Top-level modules that only an extra installs.
EXTRA_ONLY = ('numpy', 'scipy', 'matplotlib', 'placement', 'fixtures',
              'testtools', 'testscenarios', 'testresources', 'oslotest',
              'wsgi_intercept', 'openstackclient')

#: What a scheduler host runs from the base install (opie-reconciler's
#: entry module first: it chooses nova's concurrency mode, which must happen
#: before anything imports eventlet).
BASE_MODULES = (
    'opie_sched.cmd.reconciler',
    'opie_sched.conf',
    'opie_sched.scheduler.manager',
    'opie_sched.scheduler.filters',
    'opie_sched.scheduler.weights',
    'opie_sched.scheduler.weights.proportional_share',
    'opie_sched.scheduler.weights.rpm',
    'opie_sched.scheduler.weights.reliability',
    'opie_sched.scheduler.market_weights',
    'opie_sched.scheduler.rpm_plugins',
    'opie_sched.scheduler.reliability',
    'opie_sched.scheduler.extra_specs',
    'opie_sched.scheduler.reconciler',
    'opie_sched.preemption.costs',
    'opie_sched.common.utilisation',
    'opie_sched.common.provider_config',
    'opie_sched.cmd.flavor',
    'opie_sched.cmd.provider_config',
    'opie_sched.cmd.preempt',
    'opie_sched.cmd.reliability',
    'opie_sched.cmd.repack',
    'opie_sched.cmd.autoscaler',
    'opie_sched.services.autoscaler.service',
    'opie_sched.cmd.cli',
)

#: Run in the subprocess before the script: refuse EXTRA_ONLY.
_BLOCKER = textwrap.dedent('''
    import sys
    BLOCKED = set(%r)

    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if name.split('.')[0] in BLOCKED:
                raise ModuleNotFoundError(
                    'No module named %%r (blocked)' %% name, name=name)

    sys.meta_path.insert(0, Blocker())
''') % (EXTRA_ONLY,)


def run_without_extras(script, timeout=600):
    """Run ``script`` with EXTRA_ONLY unimportable; (rc, stdout, stderr)."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE='1')
    proc = subprocess.run(
        [sys.executable, '-c', _BLOCKER + textwrap.dedent(script)],
        capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)
    return proc.returncode, proc.stdout, proc.stderr


def read_setup_cfg():
    parser = configparser.ConfigParser()
    parser.read(os.path.join(ROOT, 'setup.cfg'))
    return parser


def requirement_names(lines):
    names = set()
    for line in lines:
        line = line.split('#', 1)[0].strip()
        if line and not line.startswith('-'):
            names.add(re.split(r'[<>=!~\[; ]', line, 1)[0].lower())
    return names


class BaseInstallTest(testtools.TestCase):

    def test_base_modules_import_without_the_extras(self):
        rc, out, err = run_without_extras('''
            import importlib, json
            failed = {}
            for name in %r:
                try:
                    importlib.import_module(name)
                except Exception as exc:
                    failed[name] = '%%s: %%s' %% (type(exc).__name__, exc)
            print(json.dumps({'failed': failed, 'loaded': sorted(
                m for m in sys.modules if m.split('.')[0] in BLOCKED)}))
        ''' % (BASE_MODULES,))
        self.assertEqual(0, rc, err[-2000:])
        result = json.loads(out.strip().splitlines()[-1])
        self.assertEqual({}, result['failed'])
        self.assertEqual([], result['loaded'])

    def test_opie_scheduler_imports_without_the_extras(self):
        # Its own process: opie-scheduler sets nova's concurrency mode too.
        rc, out, err = run_without_extras('''
            import opie_sched.cmd.scheduler
            print(sorted(m for m in sys.modules
                         if m.split('.')[0] in BLOCKED))
        ''')
        self.assertEqual(0, rc, err[-2000:])
        self.assertEqual('[]', out.strip().splitlines()[-1])

    def test_opie_sched_names_the_extra_a_command_needs(self):
        rc, out, err = run_without_extras('''
            import contextlib, io, json
            from opie_sched.cmd import cli
            res = {}
            for argv in (['--help'], ['simulate', '--seed', '1'],
                         ['market', 'demo'], ['demo']):
                o, e = io.StringIO(), io.StringIO()
                with contextlib.redirect_stdout(o), \\
                        contextlib.redirect_stderr(e):
                    try:
                        code = cli.main(argv)
                    except SystemExit as exc:
                        code = exc.code
                res[' '.join(argv)] = [code, o.getvalue(), e.getvalue()]
            print(json.dumps(res))
        ''')
        self.assertEqual(0, rc, err[-2000:])
        res = json.loads(out.strip().splitlines()[-1])
        code, text, _ = res['--help']
        self.assertEqual(0, code)
        self.assertIn('(needs: pip install opie_sched[sim])', text)
        self.assertIn('flavor', text)
        for argv, extra, module in (
                ('simulate --seed 1', 'sim', 'numpy'),
                ('market demo', 'demo', 'fixtures'),
                ('demo', 'demo', 'matplotlib')):
            code, _, errors = res[argv]
            self.assertEqual(1, code, errors)
            self.assertIn('opie-sched %s needs: pip install opie_sched[%s]'
                          % (argv.split(' --')[0], extra), errors)
            self.assertIn("No module named '%s" % module, errors)


class DeclarationTest(testtools.TestCase):

    def test_requirements_hold_only_the_base(self):
        extras = read_setup_cfg()['extras']
        with open(os.path.join(ROOT, 'requirements.txt')) as f:
            light = requirement_names(f)
        self.assertNotIn('nova', light)
        # a scheduler host: the base and the scheduler extra
        base = light | requirement_names(extras['scheduler'].splitlines())
        self.assertIn('nova', base)
        only_extras = set()
        for name in ('market', 'sim', 'demo'):
            only_extras |= requirement_names(extras[name].splitlines())
        # What a scheduler host does not need stays out of the base,
        # except what nova requires itself (it is installed anyway).
        for name in ('numpy', 'scipy', 'matplotlib', 'openstack-placement',
                     'fixtures', 'testtools', 'oslotest', 'wsgi-intercept',
                     'python-openstackclient', 'osc-lib', 'alembic',
                     'keystonemiddleware', 'routes'):
            self.assertNotIn(name, base)
            self.assertIn(name, only_extras)

    def test_the_cli_names_declared_extras(self):
        declared = set(read_setup_cfg()['extras'])
        self.assertTrue({'scheduler', 'market', 'repacker', 'sim', 'demo',
                         'devcloud', 'client'} <= declared, declared)
        named = (set(cli.EXTRA_OF_MODULE.values())
                 | set(cli.EXTRA_OF_COMMAND.values()))
        self.assertEqual(set(), named - declared)

    def test_tox_py3_installs_every_extra(self):
        tox = configparser.ConfigParser(interpolation=None)
        tox.read(os.path.join(ROOT, 'tox.ini'))
        extras = set(tox['testenv']['extras'].split())
        self.assertEqual({'scheduler', 'market', 'repacker', 'sim', 'demo'},
                         extras)
