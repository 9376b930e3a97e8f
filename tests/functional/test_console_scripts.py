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
"""Start-up smoke tests of every console script, on the installed nova.

Each console script of the installed distribution runs in its own process
(as its wrapper does: import the entry point's module, call the function),
with the nova series the environment has (``tox -e py3-nova31`` ...
``py3-nova34``). ``--help`` must print the usage and exit 0: that runs the
script's whole start-up module, the series-dependent patching
(:mod:`opie_sched.common.compat`) included. The scripts that start a nova
service (``opie-scheduler``, ``opie-reconciler``) are also started on a
configuration they cannot honour (a lock directory inside the Python
install): they must parse it, load nova's objects and stop with one clear
line and exit code 1, before connecting anywhere -- never with an
``ImportError`` or a traceback.
"""

from importlib import metadata
import os
import subprocess
import sys

import fixtures
import testtools

#: Run the entry point as its console-script wrapper does.
_RUN = ('import sys; from %s import %s as main; sys.argv[0] = %r; '
        'sys.exit(main())')

#: Every console script and the line its refusal to start must print with
#: the configuration of :meth:`ConsoleScriptsTest.config` (None: --help
#: only; those scripts start daemons or commands that connect at once).
SCRIPTS = {
    'opie-sched': None,
    'opie-scheduler': 'opie-scheduler refuses to start: The opie_sched '
                      'lock directory would be',
    'opie-reconciler': 'opie-reconciler cannot start: The opie_sched lock '
                       'directory would be',
    'opie-autoscaler': None,
    'opie-repacker': None,
    'opie-market': None,
    'opie-status': None,
}

#: Seconds a start-up may take (nova's import on a loaded 2-core machine).
TIMEOUT = 300


def console_scripts():
    """``{name: 'module:function'}`` of the installed opie_sched."""
    dist = metadata.distribution('opie_sched')
    return {ep.name: ep.value for ep in dist.entry_points
            if ep.group == 'console_scripts'}


def run_script(name, *args):
    """Run console script ``name`` with ``args`` in a new process.

    :returns: ``(exit code, stdout, stderr)``.
    """
    module, _, func = console_scripts()[name].partition(':')
    env = dict(os.environ)
    env.pop('OS_NOVA_DISABLE_EVENTLET_PATCHING', None)
    proc = subprocess.run(
        [sys.executable, '-c', _RUN % (module, func, name)] + list(args),
        capture_output=True, text=True, timeout=TIMEOUT, env=env,
        stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stdout, proc.stderr


class ConsoleScriptsTest(testtools.TestCase):

    def test_every_console_script_is_smoke_tested(self):
        self.assertEqual(sorted(SCRIPTS), sorted(console_scripts()))

    def config(self):
        """A nova configuration without a reachable backend: sqlite files
        in a temporary directory, the fake message transport.
        """
        tmp = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(tmp, 'nova.conf')
        with open(path, 'w') as f:
            f.write('[DEFAULT]\ntransport_url = fake:/\n'
                    '[database]\nconnection = sqlite:///%s/main.db\n'
                    '[api_database]\nconnection = sqlite:///%s/api.db\n'
                    % (tmp, tmp))
        return path

    def _check_help(self, name):
        rc, out, err = run_script(name, '--help')
        self.assertEqual(0, rc, err[-3000:])
        self.assertIn('usage: %s' % name, out)
        self.assertNotIn('Traceback', err)

    def _check_refusal(self, name):
        rc, out, err = run_script(name, '--config-file', self.config())
        self.assertEqual(1, rc, (out + err)[-3000:])
        self.assertIn(SCRIPTS[name], out + err)
        self.assertNotIn('Traceback', out + err)


def _add_tests():
    for name in SCRIPTS:
        attr = name.replace('-', '_')

        def check_help(self, name=name):
            self._check_help(name)
        setattr(ConsoleScriptsTest, 'test_%s_help' % attr, check_help)
        if SCRIPTS[name]:
            def check_refusal(self, name=name):
                self._check_refusal(name)
            setattr(ConsoleScriptsTest, 'test_%s_refuses_bad_config' % attr,
                    check_refusal)


_add_tests()
