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
"""The Tempest tier cannot pass without testing.

``unexpected_skips`` reads the output of a real ``stestr run`` (the test
runner ``tempest run`` drives) over a package whose tests skip the way
our plugin's do; ``main`` is checked with MariaDB/RabbitMQ unreachable,
with and without ``CI``.
"""

import io
import os
import subprocess
import sys
from unittest import mock

import fixtures
import testtools

from opie_sched_tempest_plugin import runner

SKIPPING = '''
import unittest


class Market(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise unittest.SkipTest('[opie] market = false')

    def test_price(self):
        pass


class Reliability(unittest.TestCase):
    def test_spread(self):
        self.skipTest('needs 3 compute hosts, the cloud has 2')

    def test_passes(self):
        pass
'''


class UnexpectedSkipsTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        pkg = os.path.join(self.tmp, 'fakeplugin')
        os.makedirs(pkg)
        open(os.path.join(pkg, '__init__.py'), 'w').close()
        with open(os.path.join(pkg, 'test_skips.py'), 'w') as f:
            f.write(SKIPPING)
        with open(os.path.join(self.tmp, '.stestr.conf'), 'w') as f:
            f.write('[DEFAULT]\ntest_path=./fakeplugin\ntop_dir=./\n')
        env = dict(os.environ, PYTHONPATH=self.tmp)
        self.output = subprocess.run(
            [sys.executable, '-m', 'stestr', 'run', '--serial'],
            cwd=self.tmp, env=env, capture_output=True, text=True).stdout
        self.conf = os.path.join(self.tmp, 'tempest.conf')

    def write_conf(self, text):
        with open(self.conf, 'w') as f:
            f.write(text)

    def test_skip_of_a_feature_the_tier_turned_off_is_fine(self):
        self.write_conf('[opie]\nmarket = False\nreliability = True\n')
        self.assertEqual(
            [('fakeplugin.test_skips.Reliability.test_spread',
              'needs 3 compute hosts, the cloud has 2')],
            runner.unexpected_skips(self.output, self.conf))

    def test_feature_skip_is_unexpected_when_the_tier_enabled_it(self):
        self.write_conf('[opie]\nmarket = True\n')
        self.assertEqual(
            ['fakeplugin.test_skips.Reliability.test_spread',
             'setUpClass (fakeplugin.test_skips.Market)'],
            sorted(t for t, _ in runner.unexpected_skips(self.output,
                                                         self.conf)))

    def test_no_skip_none_unexpected(self):
        self.write_conf('[opie]\nmarket = True\n')
        self.assertEqual([], runner.unexpected_skips(
            '{0} fakeplugin.A.test_x [0.1s] ... ok\n', self.conf))


class UnreachableTest(testtools.TestCase):

    def run_main(self, ci):
        env = {k: v for k, v in os.environ.items() if k != 'CI'}
        if ci is not None:
            env['CI'] = ci
        out = io.StringIO()
        with mock.patch.dict(os.environ, env, clear=True), \
                mock.patch.object(runner, 'unreachable',
                                  return_value='MariaDB is not reachable '
                                               'on 127.0.0.1:3306'), \
                mock.patch.object(runner, '_run') as run, \
                mock.patch('sys.stdout', out):
            rc = runner.main(['--state-dir',
                              self.useFixture(fixtures.TempDir()).path])
        run.assert_not_called()
        return rc, out.getvalue()

    def test_laptop_skips_with_one_line(self):
        rc, out = self.run_main(None)
        self.assertEqual(0, rc)
        self.assertEqual('tempest tier: skipped: MariaDB is not reachable '
                         'on 127.0.0.1:3306\n', out)

    def test_ci_fails(self):
        rc, out = self.run_main('true')
        self.assertEqual(1, rc)
        self.assertIn('FAILED', out)
        self.assertIn('CI is set', out)

    def test_empty_ci_is_unset(self):
        self.assertEqual(0, self.run_main('')[0])


class TierVerdictTest(testtools.TestCase):
    """``main`` with the cloud and ``tempest`` replaced by recorded
    outputs: a skip of a test the tier enabled fails the tier.
    """

    def run_tier(self, plugin_output):
        state = os.path.join(self.useFixture(fixtures.TempDir()).path, 's')

        def fake_run(cmd, log=None, **kwargs):
            if cmd[1:3] == ['devcloud', 'up']:
                return 0, '{"clouds_yaml": "unused"}'
            if cmd[1] == 'init':
                os.makedirs(os.path.join(cmd[-1], 'etc'))
                return 0, ''
            if cmd[1] == 'run':
                return 0, plugin_output
            return 0, ''  # devcloud down

        out = io.StringIO()
        with mock.patch.object(runner, 'unreachable', return_value=None), \
                mock.patch.object(runner, '_run', side_effect=fake_run), \
                mock.patch.object(runner, 'tempest_conf',
                                  return_value='[opie]\nmarket = True\n'
                                               'autoscaler = False\n'), \
                mock.patch('sys.stdout', out):
            rc = runner.main(['--state-dir', state, '--only', 'opie'])
        return rc, out.getvalue()

    def test_skip_of_an_enabled_test_fails_the_tier(self):
        rc, out = self.run_tier(
            '{0} setUpClass (x.Market) ... SKIPPED: needs 3 compute hosts\n'
            '{0} x.Preemption.test_p [1.0s] ... ok\n'
            ' - Passed: 1\n - Skipped: 1\n - Failed: 0\n')
        self.assertEqual(1, rc)
        self.assertIn('unexpected skip: setUpClass (x.Market): needs 3 '
                      'compute hosts', out)

    def test_skip_of_a_feature_turned_off_passes(self):
        rc, out = self.run_tier(
            '{0} setUpClass (x.Autoscaler) ... SKIPPED: [opie] autoscaler '
            '= false: no opie-autoscaler runs against this cloud\n'
            '{0} x.Preemption.test_p [1.0s] ... ok\n'
            ' - Passed: 1\n - Skipped: 1\n - Failed: 0\n')
        self.assertEqual(0, rc, out)
        self.assertNotIn('unexpected', out)
