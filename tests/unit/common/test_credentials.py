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
"""The companion services' OpenStack identity (``[service_credentials]``).

Both paths of :func:`opie_sched.common.credentials.connect`, through real
keystoneauth and openstacksdk code (HTTP answered by requests-mock):

* ``auth_type`` set: the service user of the section authenticates
  against its ``auth_url``, and Nova is reached at the catalog endpoint
  of the section's interface and region (the ``cloud`` option is
  ignored);
* ``auth_type`` unset: the ``cloud`` option's clouds.yaml entry, or the
  ``OS_*`` variables.

And each service (market, autoscaler, repacker) gets its connection from
that one function; the autoscaler's and the repacker's clients of the
market API look the ``spot-market`` endpoint up at the section's
interface and region too.
"""

import os
import textwrap

import fixtures
from keystoneauth1 import fixture as ks_fixture
from oslo_config import cfg
from requests_mock.contrib import fixture as rm_fixture
import testtools

from opie_sched.common import credentials
from opie_sched.conf import autoscaler as autoscaler_opts
from opie_sched.conf import repacker as repacker_opts
from opie_sched.services.autoscaler import service as autoscaler_service
from opie_sched.services.market import cloud as market_cloud
from opie_sched.services.market import opts as market_opts
from opie_sched.services.repacker import service as repacker_service
from opie_sched.services.repacker import strategies

AUTH_URL = 'http://keystone.test:5000/v3'
NOVA = {'public': 'http://nova-public.test:8774/v2.1',
        'internal': 'http://nova-internal.test:8774/v2.1'}
#: The market API's endpoints, per (interface, region).
MARKET = {(interface, region): 'http://market-%s-%s.test:8788/v1' % (
    interface, region.lower()) for interface in ('public', 'internal')
    for region in ('RegionOne', 'RegionTwo')}

SECTION = textwrap.dedent('''
    [service_credentials]
    auth_type = password
    auth_url = %s
    username = opie
    password = secret
    user_domain_name = Default
    project_name = service
    project_domain_name = Default
    valid_interfaces = internal
    region_name = RegionTwo
''' % AUTH_URL)

CLOUDS_YAML = textwrap.dedent('''
    clouds:
      decoy:
        auth:
          auth_url: http://keystone-decoy.test:5000/v3
          username: decoy
          password: p
          project_name: p
        region_name: RegionDecoy
      from-yaml:
        auth:
          auth_url: http://keystone-yaml.test:5000/v3
          username: yaml-user
          password: p
          project_name: p
          user_domain_name: Default
          project_domain_name: Default
        region_name: RegionYaml
''')


class _Base(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        # nothing of the machine's own clouds.yaml nor OS_* leaks in
        for name in [n for n in os.environ if n.startswith('OS_')]:
            self.useFixture(fixtures.EnvironmentVariable(name))
        path = os.path.join(self.tmp, 'clouds.yaml')
        with open(path, 'w', encoding='utf-8') as f:
            f.write(CLOUDS_YAML)
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_CLIENT_CONFIG_FILE', path))
        self.useFixture(fixtures.EnvironmentVariable(
            'XDG_CONFIG_HOME', self.tmp))

    def conf(self, text='', register=()):
        path = os.path.join(self.tmp, 'opie.conf')
        with open(path, 'w', encoding='utf-8') as f:
            f.write(text)
        conf = cfg.ConfigOpts()
        for register_opts in register:
            register_opts(conf)
        conf(['--config-file', path], project='opie_sched')
        return conf


class ServiceCredentialsTest(_Base):

    def setUp(self):
        super().setUp()
        self.http = self.useFixture(rm_fixture.Fixture())
        token = ks_fixture.V3Token(project_name='service',
                                   user_name='opie')
        svc = token.add_service('compute')
        for interface, url in NOVA.items():
            svc.add_endpoint(interface, url, region='RegionTwo')
        svc.add_endpoint('internal', 'http://nova-other-region.test/v2.1',
                         region='RegionOne')
        market = token.add_service('spot-market')
        for (interface, region), url in sorted(MARKET.items()):
            market.add_endpoint(interface, url, region=region)
            self.http.get(url + '/prices', json={
                'period_start': '2026-01-01T00:00:00Z', 'prices': [
                    {'pool': 'default', 'resource': 'vcpus',
                     'price': '0.5', 'unit': 'vcpu-hour'},
                    {'pool': 'default', 'resource': 'memory_mb',
                     'price': '0.001', 'unit': 'mb-hour'}]})
            self.http.get(url + '/account', json={'account': {
                'project_id': 'service', 'balance': '7'}})
            self.http.get(url + '/shares', json={'shares': [
                {'server_id': 'srv-a', 'bids': {'vcpus': '1.5',
                                                'memory_mb': '0.5'}}]})
        self.http.get(AUTH_URL, json=ks_fixture.V3Discovery(AUTH_URL))
        self.http.post(AUTH_URL + '/auth/tokens', json=token,
                       headers={'X-Subject-Token': 'tok'})
        for url in NOVA.values():
            self.http.get(url + '/servers/detail', json={'servers': []})
            self.http.get(url, json={'version': {
                'id': 'v2.1', 'status': 'CURRENT', 'version': '2.96',
                'min_version': '2.1',
                'links': [{'rel': 'self', 'href': url + '/'}]}})

    def assert_service_user_reaches_internal_nova(self, conn):
        self.assertEqual([], list(conn.compute.servers()))
        [auth] = [r for r in self.http.request_history
                  if r.url == AUTH_URL + '/auth/tokens']
        user = auth.json()['auth']['identity']['password']['user']
        self.assertEqual(('opie', 'secret'), (user['name'],
                                              user['password']))
        self.assertEqual('service',
                         auth.json()['auth']['scope']['project']['name'])
        listed = [r.url for r in self.http.request_history
                  if r.path.endswith('/servers/detail')]
        self.assertEqual([NOVA['internal'] + '/servers/detail'], listed)

    def test_section_builds_the_connection(self):
        conf = self.conf(SECTION + '\nconnect_retries = 4\n')
        self.assertTrue(credentials.configured(conf))
        # the cloud option is ignored once the section has an auth_type
        conn = credentials.connect(conf, cloud='from-yaml')
        self.assertEqual(4, conn.config.get_connect_retries('compute'))
        self.assert_service_user_reaches_internal_nova(conn)

    def test_missing_option_is_an_error(self):
        conf = self.conf('[service_credentials]\nauth_type = password\n')
        from keystoneauth1 import exceptions
        self.assertRaises(exceptions.MissingRequiredOptions,
                          credentials.connect, conf)

    def test_market_uses_it(self):
        conf = self.conf(SECTION, register=[market_opts.register_opts])
        self.assert_service_user_reaches_internal_nova(
            market_cloud.connect(conf))

    def test_autoscaler_uses_it(self):
        conf = self.conf(SECTION, register=[autoscaler_opts.register_opts])
        self.assert_service_user_reaches_internal_nova(
            autoscaler_service.AutoscalerService(conf).conn)

    def test_repacker_uses_it(self):
        conf = self.conf(SECTION, register=[repacker_opts.register_opts])
        self.assert_service_user_reaches_internal_nova(
            repacker_service.RepackerService(conf).conn)
        tabu = strategies.TabuStrategy(conf)
        self.assertEqual(AUTH_URL,
                         tabu._market_bids().client.session.auth.auth_url)

    def market_calls(self):
        return [r.url.split('/v1/')[0] + '/v1'
                for r in self.http.request_history if '/v1/' in r.url]

    def test_autoscaler_market_client_uses_its_interface_and_region(self):
        conf = self.conf(SECTION, register=[autoscaler_opts.register_opts])
        service = autoscaler_service.AutoscalerService(conf)
        quote = service.market.quote('catalog')
        self.assertEqual('0.5', str(quote.prices['default']['vcpus']))
        self.assertEqual('7', str(service.slo_client.balance('catalog')))
        self.assertEqual([MARKET['internal', 'RegionTwo']] * 2,
                         self.market_calls())

    def test_repacker_market_client_uses_its_interface_and_region(self):
        conf = self.conf(SECTION, register=[repacker_opts.register_opts])
        bids = strategies.TabuStrategy(conf)._market_bids()()
        self.assertEqual({'srv-a': 2}, bids)
        self.assertEqual([MARKET['internal', 'RegionTwo']],
                         self.market_calls())

    def test_tempest_market_client_uses_the_connection_catalog(self):
        # the Tempest plugin's connections (base.OpieBaseTest._connect)
        # carry [compute] endpoint_type and [identity] region
        import openstack

        from opie_sched_tempest_plugin import market_client
        conn = openstack.connect(
            auth_type='password', auth={
                'auth_url': AUTH_URL, 'username': 'opie',
                'password': 'secret', 'project_name': 'service',
                'user_domain_name': 'Default',
                'project_domain_name': 'Default'},
            identity_api_version='3', region_name='RegionTwo',
            interface='internal', load_yaml_config=False,
            load_envvars=False)
        status, body = market_client.MarketClient(conn).request(
            'GET', '/prices')
        self.assertEqual(200, status)
        self.assertEqual([MARKET['internal', 'RegionTwo']],
                         self.market_calls())

    def test_market_client_public_when_nothing_is_configured(self):
        section = '\n'.join(
            line for line in SECTION.splitlines()
            if not line.startswith(('valid_interfaces', 'region_name')))
        conf = self.conf(section, register=[repacker_opts.register_opts])
        strategies.TabuStrategy(conf)._market_bids()()
        [called] = self.market_calls()
        self.assertIn(called, (MARKET['public', 'RegionOne'],
                               MARKET['public', 'RegionTwo']))


class FallbackTest(_Base):

    def test_clouds_yaml_entry_without_auth_type(self):
        conf = self.conf(
            '[service_credentials]\nusername = ignored\n'
            '[opie_market]\ncloud = from-yaml\n',
            register=[market_opts.register_opts])
        self.assertFalse(credentials.configured(conf))
        conn = market_cloud.connect(conf)
        self.assertEqual('from-yaml', conn.config.name)
        self.assertEqual('http://keystone-yaml.test:5000/v3',
                         conn.config.auth['auth_url'])
        self.assertEqual('RegionYaml', conn.config.get_region_name())

    def test_os_variables_without_cloud(self):
        for name, value in (('OS_AUTH_URL', 'http://keystone-env.test/v3'),
                            ('OS_USERNAME', 'env-user'),
                            ('OS_PASSWORD', 'p'),
                            ('OS_PROJECT_NAME', 'p'),
                            ('OS_REGION_NAME', 'RegionEnv')):
            self.useFixture(fixtures.EnvironmentVariable(name, value))
        conf = self.conf(register=[autoscaler_opts.register_opts])
        conn = autoscaler_service.AutoscalerService(conf).conn
        self.assertEqual('http://keystone-env.test/v3',
                         conn.config.auth['auth_url'])
        self.assertEqual('env-user', conn.config.auth['username'])


class OptionsTest(testtools.TestCase):

    def test_group_lists_auth_session_and_catalog_options(self):
        [(group, opts)] = credentials.list_opts()
        names = {o.dest for o in opts}
        self.assertEqual('service_credentials', group.name)
        for name in ('auth_type', 'auth_url', 'username', 'password',
                     'cafile', 'timeout', 'valid_interfaces',
                     'region_name', 'status_code_retries'):
            self.assertIn(name, names)
        # per-target-service options would not say which service
        for name in ('service_type', 'endpoint_override', 'version'):
            self.assertNotIn(name, names)
        self.assertIn('internal', {o.dest: o for o in opts}[
            'valid_interfaces'].help)

    def test_overrides_do_not_leak_between_confs(self):
        a, b = cfg.ConfigOpts(), cfg.ConfigOpts()
        credentials.register_opts(a)
        credentials.register_opts(b)
        a.set_override('auth_type', 'password', credentials.GROUP)
        self.assertTrue(credentials.configured(a))
        self.assertFalse(credentials.configured(b))
