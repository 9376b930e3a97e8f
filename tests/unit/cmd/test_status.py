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
"""The checks of ``opie-status upgrade check``: success, warning, failure.

The checks' sources (the service list, Placement) are injected here;
tests/functional/test_status.py reads them from a real in-process Nova
and Placement. The command itself runs in a subprocess.
"""

import json
import os
import subprocess
import sys

import fixtures
from oslo_config import cfg
from oslo_config import fixture as config_fixture
from oslo_upgradecheck import upgradecheck
import testtools

from opie_sched.cmd import status
from opie_sched import conf as opie_conf
import tests

Code = upgradecheck.Code
ROOT = tests.ROOT
ALL = ('CUSTOM_PREEMPTIBLE_VCPU', 'CUSTOM_PREEMPTIBLE_MEMORY_MB',
       'CUSTOM_PREEMPTIBLE_DISK_GB')


class CoordinationCheckTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        conf = cfg.ConfigOpts()
        opie_conf.register_opts(conf)
        self.fixture = self.useFixture(config_fixture.Config(conf))
        self.conf = conf

    def check(self, hosts, url=None):
        self.fixture.config(coordination_url=url, group='opie_preemption')
        return status.CoordinationCheck(self.conf, lambda: hosts)()

    def test_file_lock_with_several_scheduler_hosts_fails(self):
        for url in (None, 'file:///var/lib/nova/locks'):
            result = self.check({'sched1', 'sched2'}, url)
            self.assertEqual(Code.FAILURE, result.code, url)
            self.assertIn('sched1, sched2', result.details)

    def test_shared_backend_with_several_hosts_succeeds(self):
        result = self.check({'sched1', 'sched2'}, 'etcd3+http://ctl:2379')
        self.assertEqual(Code.SUCCESS, result.code)

    def test_file_lock_with_one_host_succeeds(self):
        self.assertEqual(Code.SUCCESS, self.check({'sched1'}).code)

    def test_unreadable_service_list_warns(self):
        def broken():
            raise RuntimeError('no database')
        self.fixture.config(coordination_url=None, group='opie_preemption')
        result = status.CoordinationCheck(self.conf, broken)()
        self.assertEqual(Code.WARNING, result.code)
        self.assertIn('no database', result.details)
        self.assertIn('Check manually', result.details)


class PlacementRetryCheckTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        # Never this machine's /etc/placement/placement.conf.
        self.useFixture(fixtures.MockPatchObject(
            status, 'DEFAULT_PLACEMENT_CONF',
            os.path.join(self.tmp, 'absent.conf')))

    def check(self, text):
        path = os.path.join(self.tmp, 'placement.conf')
        with open(path, 'w') as f:
            f.write(text)
        return status.PlacementRetryCheck(path)()

    def test_one_retry_succeeds(self):
        result = self.check('[placement]\nallocation_conflict_retry_count '
                            '= 1\n')
        self.assertEqual(Code.SUCCESS, result.code)

    def test_other_value_fails(self):
        result = self.check('[placement]\nallocation_conflict_retry_count '
                            '= 3\n')
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('is 3', result.details)

    def test_unset_is_placements_default_and_fails(self):
        result = self.check('[placement_database]\nconnection = x\n')
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('is 10 (Placement\'s default)', result.details)

    def test_unreadable_value_warns(self):
        result = self.check('[placement]\nallocation_conflict_retry_count '
                            '= many\n')
        self.assertEqual(Code.WARNING, result.code)

    def test_no_file_warns_and_names_the_manual_check(self):
        for path in (None, os.path.join(self.tmp, 'nope.conf')):
            result = status.PlacementRetryCheck(path)()
            self.assertEqual(Code.WARNING, result.code, path)
            self.assertIn('Check manually', result.details)


class PreemptibleInventoryCheckTest(testtools.TestCase):

    def check(self, nodes):
        return status.PreemptibleInventoryCheck(lambda: nodes)()

    def node(self, preemptible=True):
        inv = {'VCPU': {}, 'MEMORY_MB': {}, 'DISK_GB': {}}
        if preemptible:
            inv.update({rc: {} for rc in ALL})
        return inv

    def test_every_compute_has_it(self):
        result = self.check({'c1': self.node(), 'c2': self.node(),
                             'sharing-pool': {'DISK_GB': {}}})
        self.assertEqual(Code.SUCCESS, result.code)
        self.assertIn('All 2 compute nodes', result.details)

    def test_some_without_it_warn(self):
        result = self.check({'c1': self.node(), 'c2': self.node(False)})
        self.assertEqual(Code.WARNING, result.code)
        self.assertIn('1 of 2', result.details)
        self.assertIn('c2', result.details)

    def test_partial_inventory_counts_as_missing(self):
        partial = self.node(False)
        partial['CUSTOM_PREEMPTIBLE_VCPU'] = {}
        result = self.check({'c1': self.node(), 'c2': partial})
        self.assertEqual(Code.WARNING, result.code)

    def test_none_with_it_fails(self):
        result = self.check({'c1': self.node(False),
                             'c2': self.node(False)})
        self.assertEqual(Code.FAILURE, result.code)

    def test_placement_unreachable_warns(self):
        def broken():
            raise RuntimeError('connection refused')
        result = status.PreemptibleInventoryCheck(broken)()
        self.assertEqual(Code.WARNING, result.code)
        self.assertIn('connection refused', result.details)


class CommandTest(testtools.TestCase):
    """``python -m opie_sched.cmd.status`` with a scheduler's nova.conf
    that reaches neither a database nor Placement: the two checks that
    need them warn, the Placement file check fails, exit status 2.
    """

    def test_upgrade_check_json(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        nova_conf = os.path.join(tmp, 'nova.conf')
        with open(nova_conf, 'w') as f:
            f.write('[api_database]\nconnection = sqlite:///%s/absent/a.db\n'
                    '[database]\nconnection = sqlite:///%s/absent/m.db\n'
                    '[placement]\nauth_type = password\n'
                    'auth_url = http://127.0.0.1:9/identity\n'
                    'username = nova\npassword = x\nproject_name = s\n'
                    'user_domain_name = Default\n'
                    'project_domain_name = Default\n' % (tmp, tmp))
        placement_conf = os.path.join(tmp, 'placement.conf')
        with open(placement_conf, 'w') as f:
            f.write('[placement]\n')
        env = dict(os.environ, PYTHONPATH=ROOT)
        proc = subprocess.run(
            [sys.executable, '-m', 'opie_sched.cmd.status',
             '--config-file', nova_conf,
             '--placement-config-file', placement_conf,
             'upgrade', 'check', '--json'],
            env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(2, proc.returncode, proc.stderr[-2000:])
        out = json.loads(proc.stdout[proc.stdout.index('{'):])
        codes = {c['check']: c['result'] for c in out['checks']}
        self.assertEqual(
            {status.OptionsCheck.name: Code.SUCCESS,
             status.CoordinationCheck.name: Code.WARNING,
             status.PlacementRetryCheck.name: Code.FAILURE,
             status.PreemptibleInventoryCheck.name: Code.WARNING,
             status.FlavorSpecsCheck.name: Code.WARNING}, codes)
        # no eventlet deprecation noise, no traceback
        self.assertNotIn('Eventlet', proc.stderr)
        self.assertNotIn('Traceback', proc.stdout + proc.stderr)

    def run_status(self, *args):
        env = dict(os.environ, PYTHONPATH=ROOT)
        return subprocess.run(
            [sys.executable, '-m', 'opie_sched.cmd.launch', 'opie-status']
            + list(args), env=env, capture_output=True, text=True,
            timeout=120, cwd=ROOT)

    def test_missing_config_file_is_one_line(self):
        proc = self.run_status('--config-file', '/nonexistent/nova.conf',
                               'upgrade', 'check')
        self.assertEqual(255, proc.returncode)
        self.assertEqual('', proc.stdout)
        self.assertEqual(['opie-status: cannot read the configuration: '
                          'Failed to find some config files: '
                          '/nonexistent/nova.conf'],
                         proc.stderr.splitlines())

    def test_bad_options_fail_and_are_named(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(tmp, 'nova.conf')
        with open(path, 'w') as f:
            f.write('[api_database]\nconnection = sqlite:///%s/a.db\n'
                    '[database]\nconnection = sqlite:///%s/m.db\n'
                    '[opie_preemption]\ncost_modules = nonexistent\n'
                    'cost_module = count\n' % (tmp, tmp))
        proc = self.run_status('--config-file', path, 'upgrade', 'check',
                               '--json')
        self.assertEqual(2, proc.returncode, proc.stderr[-2000:])
        out = json.loads(proc.stdout[proc.stdout.index('{'):])
        checks = {c['check']: c for c in out['checks']}
        options = checks[status.OptionsCheck.name]
        self.assertEqual(Code.FAILURE, options['result'])
        self.assertIn("unknown cost module 'nonexistent'", options['details'])
        self.assertIn('did you mean cost_modules?', options['details'])
        # nova's [profiler] options are registered: the database checks
        # read the (empty) sqlite databases instead of NoSuchOptError
        for name in (status.CoordinationCheck.name,
                     status.FlavorSpecsCheck.name):
            self.assertNotIn('NoSuchOptError', checks[name]['details'])
        self.assertNotIn('Traceback', proc.stdout + proc.stderr)


class OptionsCheckTest(testtools.TestCase):

    def test_valid_and_invalid(self):
        conf = cfg.ConfigOpts()
        opie_conf.register_opts(conf)
        conf([])
        fixture = self.useFixture(config_fixture.Config(conf))
        self.assertEqual(Code.SUCCESS, status.OptionsCheck(conf)().code)
        fixture.config(cost_modules=['count', 'nope'],
                       group='opie_preemption')
        result = status.OptionsCheck(conf)()
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn("unknown cost module 'nope'", result.details)


class FakeFlavor(object):

    def __init__(self, name, extra_specs, vcpus=2, memory_mb=4000,
                 root_gb=40):
        self.name = self.flavorid = name
        self.extra_specs = extra_specs
        self.vcpus, self.memory_mb, self.root_gb = vcpus, memory_mb, root_gb
        self.ephemeral_gb = self.swap = 0


class FlavorSpecsCheckTest(testtools.TestCase):

    def check(self, flavor_list):
        return status.FlavorSpecsCheck(lambda: flavor_list)()

    def test_valid_flavors(self):
        from opie_sched.common import flavors
        result = self.check([
            FakeFlavor('m1', {}),
            FakeFlavor('m1.preemptible',
                       flavors.preemptible_extra_specs(2, 4000, 40))])
        self.assertEqual(Code.SUCCESS, result.code, result.details)
        self.assertIn('all 2 flavors', result.details)

    def test_bad_flavors_fail_and_are_named(self):
        result = self.check([
            FakeFlavor('ok', {}),
            FakeFlavor('maybe', {'opie:preemptible': 'maybe'}),
            FakeFlavor('half', {'opie:preemptible': 'true'})])
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('2 of 3 flavors', result.details)
        self.assertIn("maybe (maybe): opie:preemptible=maybe", result.details)
        self.assertIn('half (half): resources:VCPU is missing',
                      result.details)

    def test_unreadable_flavors_warn(self):
        def broken():
            raise RuntimeError('no api database')
        result = status.FlavorSpecsCheck(broken)()
        self.assertEqual(Code.WARNING, result.code)
        self.assertIn('opie-sched flavor check', result.details)


class ProfilerOptionsTest(testtools.TestCase):
    """nova's database code reads ``[profiler]`` when osprofiler is
    installed (the devcloud's config failed with ``NoSuchOptError:
    profiler``); opie-status registers them as nova's parse_args does.
    osprofiler is not in the py3 environment: a stand-in module plays it.
    """

    def test_registered_when_osprofiler_is_there(self):
        import types
        calls = []
        fake = types.ModuleType('osprofiler.opts')
        fake.set_defaults = lambda conf: calls.append(conf)
        parent = types.ModuleType('osprofiler')
        parent.opts = fake
        self.useFixture(fixtures.MonkeyPatch('sys.modules', dict(
            sys.modules, osprofiler=parent, **{'osprofiler.opts': fake})))
        conf = cfg.ConfigOpts()
        status._profiler_opts(conf)
        self.assertEqual([conf], calls)
