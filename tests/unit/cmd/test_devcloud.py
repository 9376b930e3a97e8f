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
"""Tests of ``opie-sched devcloud`` (opie_sched.cmd.devcloud)."""

import json
import os

import fixtures
import testtools

from opie_sched.cmd import cli
from opie_sched.devcloud import layout as layout_mod
from opie_sched.devcloud import preflight
from opie_sched.devcloud import process

from tests.unit.devcloud.helpers import _parse


class TestCLI(testtools.TestCase):

    def _run(self, argv):
        out = self.useFixture(fixtures.StringStream('stdout')).stream
        err = self.useFixture(fixtures.StringStream('stderr')).stream
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', out))
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', err))
        code = cli.main(argv)
        out.seek(0)
        err.seek(0)
        return code, out.read(), err.read()

    def test_bad_counts_are_usage_errors(self):
        for argv in (['--computes', '0'], ['--scheduler-workers', 'x'],
                     ['--compute-ram-mb', '-5']):
            code, _out, err = self._run(['devcloud', 'up'] + argv)
            self.assertEqual(2, code, argv)
            self.assertIn('expected an integer >= 1', err)

    def test_bad_market_and_ratio_options_are_usage_errors(self):
        for argv, message in (
                (['--market-period', '0'], 'integer >= 1 (seconds)'),
                (['--market-notice', '-1'], 'integer >= 0 (seconds)'),
                (['--market-tick', 'x'], 'number >= 0.1 (seconds)'),
                (['--preemptible-cpu-ratio', '0'], 'number > 0'),
                (['--market-capacity-source', 'nova'], 'invalid choice')):
            code, _out, err = self._run(['devcloud', 'up'] + argv)
            self.assertEqual(2, code, argv)
            self.assertIn(message, err)

    def test_up_passes_new_options(self):
        from opie_sched.devcloud import cloud
        root = self.useFixture(fixtures.TempDir()).path
        up = self.useFixture(fixtures.MockPatchObject(
            cloud.Cloud, 'up', side_effect=preflight.MissingError(
                'stop here'))).mock
        code, _out, err = self._run([
            'devcloud', 'up', '--state-dir', root,
            '--preemptible-cpu-ratio', '2', '--market-period', '20',
            '--market-notice', '20', '--market-tick', '2',
            '--market-capacity-source', 'hypervisors', '--reliability',
            '--notifications'])
        self.assertEqual(1, code)
        self.assertIn('stop here', err)
        settings = up.call_args[0][0]
        self.assertEqual((True, False, True), (
            settings.notifications, settings.stock_scheduler,
            settings.unified_limits))
        self._run(['devcloud', 'up', '--state-dir', root, '--legacy-quotas'])
        self.assertFalse(up.call_args[0][0].unified_limits)
        code, _out, err = self._run([
            'devcloud', 'up', '--state-dir', root, '--stock-scheduler'])
        self.assertEqual((1, True), (code, up.call_args[0][0].stock_scheduler))
        self.assertEqual((2.0, 20, 20, 2.0, 'hypervisors', True), (
            settings.preemptible_cpu_ratio, settings.market_period,
            settings.market_notice, settings.market_tick,
            settings.market_capacity_source, settings.reliability))

    def test_small_ram_is_usage_error(self):
        root = self.useFixture(fixtures.TempDir()).path
        code, _out, err = self._run(['devcloud', 'up', '--state-dir', root,
                                     '--compute-ram-mb', '100'])
        self.assertEqual(2, code)
        self.assertIn('compute_ram_mb', err)

    def test_missing_services_fail_at_once(self):
        root = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.MockPatch(
            'opie_sched.devcloud.preflight.check',
            side_effect=preflight.MissingError(
                'cannot start a devcloud: RabbitMQ is not reachable')))
        code, _out, err = self._run(['devcloud', 'up', '--state-dir',
                                     os.path.join(root, 'c')])
        self.assertEqual(1, code)
        self.assertIn('RabbitMQ is not reachable', err)
        # Nothing was created.
        self.assertFalse(os.path.exists(os.path.join(root, 'c')))

    def test_refuses_when_already_up(self):
        root = self.useFixture(fixtures.TempDir()).path
        layout_mod.Layout(root).save({'services': {
            'keystone': {'pid': os.getpid(), 'log': 'x'}}})
        check = self.useFixture(fixtures.MockPatch(
            'opie_sched.devcloud.preflight.check')).mock
        code, _out, err = self._run(['devcloud', 'up', '--state-dir', root])
        self.assertEqual(1, code)
        self.assertIn('already up', err)
        self.assertIn('--replace', err)
        check.assert_not_called()

    def test_up_shows_state_processes_rss_and_health(self):
        from opie_sched.devcloud import cloud
        root = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.MockPatch(
            'opie_sched.devcloud.preflight.check'))
        self.useFixture(fixtures.MockPatchObject(
            cloud.Cloud, '_nova_services', return_value=[]))

        def fake_up(cloud_self, settings):
            # one real service process, as _up starts them
            pid = cloud_self._start('opie-market', ['sleep', '60'], None)
            self.addCleanup(process.stop, pid, 1.0)
            cloud_self.state['status'] = 'up'
            cloud_self._save()
            return cloud_self.summary()
        self.useFixture(fixtures.MockPatchObject(cloud.Cloud, '_up',
                                                 fake_up))
        code, out, _err = self._run(['devcloud', 'up', '--state-dir', root])
        self.assertEqual(0, code, _err)
        [row] = [line for line in out.splitlines() if 'opie-market' in line]
        name, pid, state, procs, rss, health = row.strip('| ').split()
        self.assertEqual(('alive', '1', 'running'), (state, procs, health))
        self.assertGreater(float(rss), 0.0)

    def test_status_without_cloud(self):
        root = self.useFixture(fixtures.TempDir()).path
        code, out, err = self._run(['devcloud', 'status', '--state-dir',
                                    os.path.join(root, 'none')])
        self.assertEqual(3, code)
        self.assertIn('devcloud: no devcloud in ', err)
        self.assertRegex(out, r'\| status +\| absent ')

    def test_status_summary_and_exit_codes(self):
        from opie_sched.devcloud import cloud
        summary = {
            'status': 'up', 'state_dir': '/s', 'clouds_yaml': '/s/c.yaml',
            'clouds': ['devcloud-admin', 'devcloud-demo'],
            'db_prefix': 'opie_x_', 'vhost': 'opie_x',
            'endpoints': {'nova': 'http://127.0.0.1:1/v2.1'},
            'services': {
                'nova-api': {'pid': 11, 'alive': True, 'processes': 3,
                             'rss_mib': 120.5, 'health': 'ok'},
                'opie-scheduler': {'pid': 12, 'alive': False,
                                   'processes': 0, 'rss_mib': 0.0,
                                   'health': 'not running'}}}
        self.useFixture(fixtures.MockPatchObject(
            cloud.Cloud, 'status', return_value=summary))
        code, out, _err = self._run(['devcloud', 'status', '-f', 'json'])
        self.assertEqual(1, code)     # a service died
        self.assertEqual(summary, json.loads(out))
        code, out, _err = self._run(['devcloud', 'status'])
        self.assertEqual(1, code)
        [row] = [line for line in out.splitlines() if 'opie-scheduler' in line]
        self.assertEqual(['opie-scheduler', '12', 'DEAD', '0', '0.0', 'not',
                          'running'], row.strip('| ').split()[:7])
        summary['services']['opie-scheduler']['alive'] = True
        code, out, _err = self._run(['devcloud', 'status', '-c', 'vhost',
                                     '-f', 'value'])
        self.assertEqual((0, 'opie_x\n'), (code, out))

    def test_down_without_cloud(self):
        root = self.useFixture(fixtures.TempDir()).path
        code, out, _err = self._run(['devcloud', 'down', '--state-dir',
                                     os.path.join(root, 'none')])
        self.assertEqual(0, code)
        self.assertIn('0 services stopped', out)

    def test_scheduler_conf_command(self):
        root = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(root, 'sub', 'opie-scheduler.conf')
        code, _out, _err = self._run([
            'devcloud', 'scheduler-conf', '--workers', '2',
            '--base-filters', 'AvailabilityZoneFilter', '--output', path])
        self.assertEqual(0, code)
        with open(path) as f:
            parsed = _parse(f.read())
        self.assertEqual('AvailabilityZoneFilter,PreemptibleFullStateFilter',
                         parsed['filter_scheduler']['enabled_filters'])
        self.assertEqual('2', parsed['scheduler']['workers'])
        code, out, _err = self._run(['devcloud', 'scheduler-conf',
                                     '--reliability'])
        self.assertEqual(0, code)
        self.assertTrue(_parse(out)['filter_scheduler'][
            'enabled_filters'].endswith(',FailureDomainFilter'))
