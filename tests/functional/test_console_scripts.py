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
"""Start-up smoke tests of the service console scripts, on the installed
nova.

The scripts that start a nova service (``opie-scheduler``,
``opie-reconciler``) are started, each in its own process as its wrapper
runs it, with the nova series the environment has (``tox -e py3-nova31``
... ``py3-nova34``), on a configuration they cannot honour (a lock
directory inside the Python install): they must parse it, load nova's
objects and stop with one clear line and exit code 1, before connecting
anywhere -- never with an ``ImportError`` or a traceback.

That every console script parses its arguments on the installed series
(``--help``) is part of the test of nova internals,
``tests.unit.common.test_nova_signatures.ConsoleScriptStartupTest``; each
``py3-nova3N`` environment runs both.
"""

import os

import fixtures
import testtools

from tests import console_scripts

#: The service scripts and the line their refusal to start must print
#: with the configuration of :meth:`ConsoleScriptsTest.config`. (The
#: others start daemons or commands that connect at once.)
SCRIPTS = {
    'opie-scheduler': 'opie-scheduler refuses to start: The opie_sched '
                      'lock directory would be',
    'opie-reconciler': 'opie-reconciler cannot start: The opie_sched lock '
                       'directory would be',
}


class ConsoleScriptsTest(testtools.TestCase):

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

    def _check_refusal(self, name):
        rc, out, err = console_scripts.run_script(
            name, '--config-file', self.config())
        self.assertEqual(1, rc, (out + err)[-3000:])
        self.assertIn(SCRIPTS[name], out + err)
        self.assertNotIn('Traceback', out + err)


def _add_tests():
    for name in SCRIPTS:
        def check_refusal(self, name=name):
            self._check_refusal(name)
        setattr(ConsoleScriptsTest, 'test_%s_refuses_bad_config'
                % name.replace('-', '_'), check_refusal)


_add_tests()
