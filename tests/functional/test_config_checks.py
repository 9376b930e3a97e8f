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
"""Configuration and flavors checked before they hurt (issue 33), on a
real in-process Nova:

* the opie scheduler manager refuses to start with a cost module that is
  not installed, in one line;
* a flavor whose ``opie:`` extra specs nova accepted (below microversion
  2.86 nova does not validate extra specs) is refused by the scheduler:
  its server goes to ERROR with a fault naming the bad spec, never a
  silent normal server.
"""

import fixtures
from nova.tests import fixtures as nova_fixtures
from nova.tests.functional.api import client as api_client

from opie_sched.conf import validation
from opie_sched.scheduler import extra_specs
from tests.functional import base


class ManagerStartTest(base.OpieNovaTestCase):

    HOSTS = ('host1',)
    EXTRA_FLAGS = {'opie_reconciler': {'run_in_scheduler': False}}

    def start_scheduler(self):
        """A second opie scheduler service, as opie-scheduler creates it
        (nova's Service.create builds the manager).
        """
        return self.useFixture(nova_fixtures.ServiceFixture(
            'scheduler', host='sched2', manager=base.OPIE_MANAGER)).service

    def test_unknown_cost_module_refuses_to_start(self):
        self.flags(cost_modules=['billing_period', 'nonexistent'],
                   group='opie_preemption')
        exc = self.assertRaises(validation.ConfigError, self.start_scheduler)
        self.assertEqual(
            "invalid opie configuration: [opie_preemption] cost_modules: "
            "unknown cost module 'nonexistent' (entry-point group "
            "opie_sched.preemption.costs; available: billing_period, count, "
            "runtime, waste)", str(exc))
        # the same service with installed modules starts
        self.flags(cost_modules=['billing_period', 'count:2'],
                   group='opie_preemption')
        self.assertEqual('nova-scheduler', self.start_scheduler().binary)


class _FlavorsTestCase(base.OpieNovaTestCase):

    HOSTS = ('host1',)
    EXTRA_FLAGS = {'opie_reconciler': {'run_in_scheduler': False}}

    def flavor_at(self, microversion, name, specs):
        api = self.api_fixture.admin_api
        before, api.microversion = api.microversion, microversion
        try:
            flavor = api.post_flavor({'flavor': {
                'name': name, 'vcpus': 2, 'ram': 4000, 'disk': 40}})
            api.post_extra_spec(flavor['id'], {'extra_specs': specs})
        finally:
            api.microversion = before
        self.flavor_ids[name] = flavor['id']
        return flavor['id']


class InvalidExtraSpecsTest(_FlavorsTestCase):

    def test_nova_refuses_them_from_2_86(self):
        exc = self.assertRaises(
            api_client.OpenStackApiException, self.flavor_at, '2.86',
            'maybe', {'opie:preemptible': 'maybe'})
        self.assertEqual(400, exc.response.status_code)

    def test_scheduler_refuses_them_below_2_86(self):
        for name, specs, named in (
                ('maybe', {'opie:preemptible': 'maybe'},
                 "opie:preemptible=maybe: 'maybe' is not a valid "
                 "boolean-like value"),
                ('typo', {'opie:premptible': 'true'},
                 "opie:premptible=true: extra spec 'opie:premptible' does "
                 "not appear to be a valid extra spec"),
                ('half', {'resources:CUSTOM_PREEMPTIBLE_VCPU': '2'},
                 'resources:VCPU is missing: it must be 0 so that the '
                 'flavor uses no normal capacity')):
            self.flavor_at('2.85', name, specs)
            server = self.boot(name, expected='ERROR')
            fault = self.api.get_server(server['id'])['fault']['message']
            self.assertIn('No valid host was found. flavor %s has invalid '
                          'opie: extra specs: ' % name, fault)
            self.assertIn(named, fault)
        # a normal flavor still boots
        self.assertEqual('ACTIVE', self.boot('small')['status'])

    def test_flavor_problems_of_the_paper_flavors(self):
        from nova import context as nova_context
        from nova import objects
        ctxt = nova_context.get_admin_context()
        for name in ('small', 'small.preemptible'):
            flavor = objects.Flavor.get_by_flavor_id(
                ctxt, self.flavor_ids[name])
            self.assertEqual([], extra_specs.flavor_problems(flavor), name)


class StatusFlavorCheckTest(_FlavorsTestCase):
    """``opie-status upgrade check`` on this cloud: its flavors read from
    nova's API database, one with a spec nova accepted at 2.85.
    """

    def test_bad_flavor_fails_the_upgrade_check(self):
        import io
        import os
        from unittest import mock

        import nova.conf
        from oslo_upgradecheck import upgradecheck

        from opie_sched.cmd import status

        checks = status.Checks(nova.conf.CONF, configure_db=False)
        self.assertEqual(upgradecheck.Code.SUCCESS,
                         checks._check_flavors().code)
        self.flavor_at('2.85', 'm1.maybe', {'opie:preemptible': 'maybe'})
        result = checks._check_flavors()
        self.assertEqual(upgradecheck.Code.FAILURE, result.code)
        self.assertIn('1 of %d flavors' % len(status.nova_flavors()),
                      result.details)
        self.assertIn("m1.maybe (%s): opie:preemptible=maybe: 'maybe' is not "
                      "a valid boolean-like value." % self.flavor_ids[
                          'm1.maybe'], result.details)
        # the whole command's table (doc/source/cli/opie-status.rst shows it)
        placement_conf = os.path.join(self.useFixture(
            fixtures.TempDir()).path, 'placement.conf')
        with open(placement_conf, 'w') as f:
            f.write('[placement]\nallocation_conflict_retry_count = 1\n')
        self.useFixture(fixtures.MockPatchObject(
            status, 'DEFAULT_PLACEMENT_CONF', placement_conf))
        with mock.patch('sys.stdout', new=io.StringIO()) as out:
            code = checks.check()
        self.assertEqual(upgradecheck.Code.FAILURE, code)
        self.assertIn("Check: Flavors' opie: extra specs", out.getvalue())
        if os.environ.get('OPIE_STATUS_SAMPLE'):
            with open(os.environ['OPIE_STATUS_SAMPLE'], 'w') as f:
                f.write(out.getvalue())

    def test_opie_sched_flavor_check(self):
        import contextlib
        from importlib import metadata
        import io
        import json

        from opie_sched.demo import clients

        cli = self.useFixture(clients.RealClients(self))
        [script] = metadata.entry_points(group='console_scripts',
                                         name='opie-sched')

        def check():
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), \
                    contextlib.redirect_stderr(err):
                rc = script.load()(cli.auth_args + ['flavor', 'check',
                                                    '-f', 'json'])
            return rc, json.loads(out.getvalue() or '[]'), err.getvalue()

        self.assertEqual((0, [], ''), check())
        bad = self.flavor_at('2.85', 'm1.bid', {'opie:bid': 'abc',
                                                'opie:max_lifetime': '-5'})
        rc, rows, err = check()
        self.assertEqual(1, rc, err)
        self.assertEqual(
            [{'id': bad, 'name': 'm1.bid', 'problem':
              "opie:bid=abc: 'abc' is not of the format "
              "'[0-9]+(\\.[0-9]+)?'."},
             {'id': bad, 'name': 'm1.bid', 'problem':
              "opie:max_lifetime=-5: '-5' is less than the min value of "
              "'0'."}], rows)
