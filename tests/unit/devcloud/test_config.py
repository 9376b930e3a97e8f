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
"""Tests of the devcloud settings and the configuration files they render
(opie_sched.devcloud.config).

DevcloudApplicationTest: the application ``devcloud up --with-autoscaler``
declares. The Tempest scenario of the autoscaler drives its demand 2 -> 8
-> 3 vCPU and expects the flavor mix to move small -> large -> small; this
pins that the declaration the devcloud writes is accepted by
opie-autoscaler's own parser and that the planner's optimal sets are the
ones the scenario expects, so a change of prices or capacities fails here
first.
"""

import json
import os

import fixtures
import testtools

from opie_sched.cmd import cli
from opie_sched.devcloud import cloud as cloud_mod
from opie_sched.devcloud import config
from opie_sched.devcloud import layout as layout_mod
from opie_sched import flavormix
from opie_sched.services.autoscaler import app as app_mod

from tests.unit.devcloud.helpers import _parse


PORTS = {name: 21000 + i
         for i, name in enumerate(layout_mod.HTTP_SERVICES)}


def _settings(**kw):
    kw.setdefault('password', 'pw')
    return config.Settings(PORTS, **kw)


class TestRender(testtools.TestCase):

    def test_lists_repeat_and_none_left_out(self):
        text = config.render({'a': {'x': ['1', '2'], 'y': None,
                                    'z': True}})
        self.assertEqual('[a]\nx = 1\nx = 2\nz = True\n', text)

    def test_scheduler_conf_defaults(self):
        conf = config.scheduler_conf(workers=3)
        fs = conf['filter_scheduler']
        self.assertEqual(
            ','.join(config.NOVA_DEFAULT_FILTERS +
                     ('PreemptibleFullStateFilter',)),
            fs['enabled_filters'])
        self.assertEqual(['nova.scheduler.filters.all_filters',
                          'opie_sched.scheduler.filters.all_filters'],
                         fs['available_filters'])
        self.assertIn(
            'opie_sched.scheduler.weights.preemption_cost.'
            'PreemptionCostWeigher', fs['weight_classes'].split(','))
        self.assertEqual({'workers': 3}, conf['scheduler'])

    def test_scheduler_conf_keeps_base_filters_once(self):
        conf = config.scheduler_conf(
            base_filters='AvailabilityZoneFilter, PreemptibleFullStateFilter'
                         ',ComputeFilter')
        self.assertEqual(
            'AvailabilityZoneFilter,PreemptibleFullStateFilter,'
            'ComputeFilter', conf['filter_scheduler']['enabled_filters'])
        self.assertNotIn('scheduler', conf)

    def test_scheduler_conf_reliability_when_asked(self):
        fs = config.scheduler_conf(
            base_filters='FailureDomainFilter,ComputeFilter',
            reliability=True)['filter_scheduler']
        # FailureDomainFilter once, and last: it plans from the hosts
        # that reach it.
        self.assertEqual('ComputeFilter,PreemptibleFullStateFilter,'
                         'FailureDomainFilter', fs['enabled_filters'])
        # the package's all_filters makes FailureDomainFilter available
        self.assertEqual(['nova.scheduler.filters.all_filters',
                          'opie_sched.scheduler.filters.all_filters'],
                         fs['available_filters'])
        self.assertIn(
            'opie_sched.scheduler.weights.reliability.ReliabilityWeigher',
            fs['weight_classes'].split(','))
        plain = config.scheduler_conf()['filter_scheduler']
        self.assertNotIn('FailureDomainFilter', plain['enabled_filters'])
        self.assertNotIn('reliability', plain['weight_classes'])
        self.assertEqual(fs['available_filters'],
                         plain['available_filters'])

    def test_reliability_setting_reaches_scheduler_conf(self):
        from opie_sched.devcloud import cloud
        root = self.useFixture(fixtures.TempDir()).path
        prefix = os.path.join(root, 'prefix')
        for rel in ('glance/glance-api-paste.ini',
                    'neutron/api-paste.ini', 'nova/api-paste.ini',
                    'opie_sched/market-api-paste.ini'):
            os.makedirs(os.path.dirname(os.path.join(prefix, 'etc', rel)),
                        exist_ok=True)
            open(os.path.join(prefix, 'etc', rel), 'w').close()
        layout = layout_mod.Layout(os.path.join(root, 'cloud'))
        for reliability in (True, False):
            cloud.write_configs(_settings(prefix=prefix,
                                          reliability=reliability), layout)
            with open(os.path.join(layout.etc, 'nova',
                                   'scheduler.conf')) as f:
                parsed = _parse(f.read())
            self.assertEqual(reliability, 'FailureDomainFilter' in parsed[
                'filter_scheduler']['enabled_filters'])

    def test_preemptible_cpu_ratio(self):
        layout = layout_mod.Layout('/tmp/x')
        s = _settings(compute_vcpus=6, preemptible_cpu_ratio=2)
        parsed = _parse(config.render(config.nova_conf(s, layout)))
        # The full-state filter reads the host's vCPU ratio: it follows.
        self.assertEqual('2.0', parsed['DEFAULT']['cpu_allocation_ratio'])
        self.assertEqual('1.0', parsed['DEFAULT']['ram_allocation_ratio'])
        argv = config.provider_config_command(s, '/o.yaml')
        args = dict(zip(argv[1::2], argv[2::2]))
        self.assertEqual(('2', '1', '1'), (
            args['--cpu-allocation-ratio'], args['--ram-allocation-ratio'],
            args['--disk-allocation-ratio']))
        # Unset: --allocation-ratio for everything, as before.
        s = _settings(allocation_ratio=1.5)
        self.assertEqual(1.5, s.cpu_allocation_ratio)
        self.assertIsNone(s.preemptible_cpu_ratio)

    def test_market_options(self):
        layout = layout_mod.Layout('/tmp/x')
        market = config.market_conf(_settings(
            market_period=20, market_notice=0, market_tick=2,
            market_capacity_source='hypervisors'), layout)['opie_market']
        self.assertEqual((20, 0, 2.0, 'hypervisors'), (
            market['period_seconds'], market['notice_period'],
            market['tick_interval'], market['capacity_source']))
        # The rendered file is read by the market's own options.
        from opie_sched.services.market import opts
        from oslo_config import cfg
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'm.conf')
        with open(path, 'w') as f:
            f.write(config.render({'opie_market': market}))
        conf = cfg.ConfigOpts()
        opts.register_opts(conf)
        conf(['--config-file', path], project='opie-test')
        self.assertEqual((20, 0, 2.0, 'hypervisors'), (
            conf.opie_market.period_seconds, conf.opie_market.notice_period,
            conf.opie_market.tick_interval,
            conf.opie_market.capacity_source))
        # Unset: the market's defaults (the options are left out).
        text = config.render(config.market_conf(_settings(), layout))
        for name in ('period_seconds', 'notice_period', 'tick_interval',
                     'capacity_source'):
            self.assertNotIn(name, text)

    def test_tempest_runner_reads_contention_from_configs(self):
        # The tier's runner tells the market scenario whether boots can
        # contend the market from the files devcloud wrote.
        from opie_sched_tempest_plugin import runner
        root = self.useFixture(fixtures.TempDir()).path
        layout = layout_mod.Layout(root)
        for kw, expected in (
                ({}, False),
                ({'preemptible_cpu_ratio': 2}, False),
                ({'market_capacity_source': 'hypervisors'}, False),
                ({'preemptible_cpu_ratio': 2,
                  'market_capacity_source': 'hypervisors'}, True)):
            s = _settings(**kw)
            for name, conf in (
                    (('nova', 'nova.conf'), config.nova_conf(s, layout)),
                    (('opie_sched', 'opie_sched.conf'),
                     config.market_conf(s, layout))):
                path = os.path.join(layout.etc, *name)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, 'w') as f:
                    f.write(config.render(conf))
            self.assertEqual(expected, runner._market_contention(root), kw)
        # 512 MB per physical vCPU plus nova's reserve: the devcloud's
        # flavors (>= 512 MB per vCPU) never hold more vCPUs than a host.
        self.assertEqual(6656, runner.host_ram_mb(12))

    def test_nova_conf(self):
        layout = layout_mod.Layout('/tmp/x')
        conf = config.nova_conf(_settings(), layout)
        parsed = _parse(config.render(conf))
        self.assertEqual('rabbit://guest:guest@127.0.0.1:5672/%s'
                         % layout.vhost,
                         parsed['DEFAULT']['transport_url'])
        self.assertEqual('fake.FakeDriver',
                         parsed['DEFAULT']['compute_driver'])
        self.assertIn(layout.db_prefix + 'nova_api',
                      parsed['api_database']['connection'])
        # The real neutron-server is found in the catalog.
        self.assertNotIn('endpoint_override', parsed['neutron'])
        self.assertEqual('placement', parsed['placement']['username'])
        self.assertEqual('1.0', parsed['DEFAULT']['cpu_allocation_ratio'])

    def _oslo_parse(self, text):
        """Parse ``text`` with nova's and oslo.messaging's own option
        definitions (wrong names, groups or choices raise).
        """
        from nova.conf import notifications as nova_notifications
        from oslo_config import cfg
        from oslo_messaging import opts as messaging_opts
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'nova.conf')
        with open(path, 'w') as f:
            f.write(text)
        conf = cfg.ConfigOpts()
        nova_notifications.register_opts(conf)
        for group, opts in messaging_opts.list_opts():
            if group == 'oslo_messaging_notifications':
                conf.register_opts(opts, group=group)
        conf(['--config-file', path], project='nova')
        return conf

    def test_notifications_off_by_default(self):
        layout = layout_mod.Layout('/tmp/x')
        conf = self._oslo_parse(config.render(config.nova_conf(
            _settings(), layout)))
        # nothing sends: no driver, and nova sends no instance.update
        self.assertEqual([], conf.oslo_messaging_notifications.driver)
        self.assertIsNone(conf.notifications.notify_on_state_change)

    def test_notifications_on_the_cloud_transport(self):
        layout = layout_mod.Layout('/tmp/x')
        settings = _settings(notifications=True)
        text = config.render(config.nova_conf(settings, layout))
        conf = self._oslo_parse(text)
        self.assertEqual(['messagingv2'],
                         conf.oslo_messaging_notifications.driver)
        # no transport_url of their own: the cloud's vhost (DEFAULT)
        self.assertIsNone(conf.oslo_messaging_notifications.transport_url)
        self.assertEqual(settings.transport_url(layout.vhost),
                         _parse(text)['DEFAULT']['transport_url'])
        self.assertEqual('versioned',
                         conf.notifications.notification_format)
        self.assertEqual([config.NOTIFICATION_TOPIC],
                         conf.notifications.versioned_notifications_topics)
        # BUILDING -> ERROR (no valid host) sends instance.update
        self.assertEqual('vm_state',
                         conf.notifications.notify_on_state_change)
        self.assertTrue(config.Settings.from_dict(
            settings.to_dict()).notifications)

    def test_stock_scheduler_runs_nova_scheduler_without_opie(self):
        layout = layout_mod.Layout('/tmp/x')
        daemons = cloud_mod.daemons(_settings(stock_scheduler=True), layout)
        self.assertNotIn('opie-scheduler', daemons)
        argv = daemons['nova-scheduler'][0]
        self.assertEqual('nova-scheduler', os.path.basename(argv[0]))
        fs = config.stock_scheduler_conf(2)['filter_scheduler']
        text = config.render(config.stock_scheduler_conf(2))
        self.assertNotIn('opie_sched', text)
        self.assertEqual(','.join(config.NOVA_DEFAULT_FILTERS),
                         fs['enabled_filters'])
        opie = cloud_mod.daemons(_settings(), layout)
        self.assertEqual('opie-scheduler', os.path.basename(
            opie['opie-scheduler'][0][0]))
        self.assertNotIn('nova-scheduler', opie)

    def test_stock_scheduler_conf_written(self):
        root = self.useFixture(fixtures.TempDir()).path
        layout = layout_mod.Layout(root)
        self.useFixture(fixtures.MockPatch(
            'opie_sched.devcloud.cloud._paste_file',
            return_value=__file__))
        for stock in (True, False):
            cloud_mod.write_configs(_settings(stock_scheduler=stock),
                                    layout)
            with open(os.path.join(layout.etc, 'nova',
                                   'scheduler.conf')) as f:
                text = f.read()
            self.assertEqual(not stock, 'PreemptibleFullStateFilter' in text)

    def _nova_quota_conf(self, text, limits=True):
        """``(conf, auth plugin)``: ``text`` parsed with nova's [quota]
        options and (``limits``) oslo.limit's [oslo_limit] ones
        (keystoneauth's included), the auth plugin loaded from
        [oslo_limit] as oslo.limit loads it.
        """
        from keystoneauth1 import loading
        from nova.conf import quota as nova_quota
        from oslo_config import cfg
        from oslo_limit import opts as limit_opts
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'nova.conf')
        with open(path, 'w') as f:
            f.write(text)
        conf = cfg.ConfigOpts()
        nova_quota.register_opts(conf)
        if not limits:
            conf(['--config-file', path], project='nova')
            return conf, None
        loading.register_auth_conf_options(conf, 'oslo_limit')
        for group, opts in limit_opts.list_opts():
            for opt in opts:
                try:
                    conf.register_opt(opt, group)
                except cfg.DuplicateOptError:
                    pass  # the same option of another password plugin
        conf(['--config-file', path], project='nova')
        auth = loading.load_auth_from_conf_options(conf, 'oslo_limit')
        return conf, auth

    def test_unified_limits_by_default(self):
        layout = layout_mod.Layout('/tmp/x')
        settings = _settings()
        self.assertTrue(settings.unified_limits)
        conf, auth = self._nova_quota_conf(config.render(config.nova_conf(
            settings, layout, limits_endpoint='ep-id')))
        self.assertEqual('nova.quota.UnifiedLimitsDriver', conf.quota.driver)
        # nova reads the limits as a system reader (the bootstrap gives
        # user nova that role), finding its service by endpoint id
        self.assertEqual(('nova', 'pw', 'Default', 'all'), (
            auth._username, auth._password, auth._user_domain_name,
            auth._system_scope))
        self.assertEqual(settings.auth_url, auth.auth_url)
        self.assertEqual('ep-id', conf.oslo_limit.endpoint_id)
        # before the catalog exists: by service type and region
        conf, _auth = self._nova_quota_conf(config.render(config.nova_conf(
            settings, layout)))
        self.assertIsNone(conf.oslo_limit.endpoint_id)
        self.assertEqual(('compute', config.REGION, 'public'), (
            conf.oslo_limit.endpoint_service_type,
            conf.oslo_limit.endpoint_region_name,
            conf.oslo_limit.endpoint_interface))

    def test_legacy_quotas(self):
        layout = layout_mod.Layout('/tmp/x')
        settings = _settings(unified_limits=False)
        conf = config.nova_conf(settings, layout, limits_endpoint='ep-id')
        self.assertNotIn('quota', conf)
        self.assertNotIn('oslo_limit', conf)
        self.assertEqual('nova.quota.DbQuotaDriver', self._nova_quota_conf(
            config.render(conf), limits=False)[0].quota.driver)
        self.assertFalse(config.Settings.from_dict(
            settings.to_dict()).unified_limits)

    def test_registered_limits(self):
        from nova.conf import quota as nova_quota
        from oslo_config import cfg
        settings = _settings(computes=3, compute_vcpus=12,
                             compute_ram_mb=6656, compute_disk_gb=200,
                             preemptible_cpu_ratio=2)
        limits = config.registered_limits(settings)
        # capacity as Placement counts it: 3 x 12 x 2 vCPU, 3 x (6656 -
        # 512 reserved) MB, 3 x 200 GB; ten times that
        self.assertEqual(720, limits['class:VCPU'])
        self.assertEqual(184320, limits['class:MEMORY_MB'])
        self.assertEqual(6000, limits['class:DISK_GB'])
        self.assertEqual(720, limits['servers'])
        for std in ('VCPU', 'MEMORY_MB', 'DISK_GB'):
            self.assertEqual(limits['class:' + std],
                             limits['class:CUSTOM_PREEMPTIBLE_' + std])
        # every name is one nova knows
        names = nova_quota.UnifiedLimitsResource()
        for name in limits:
            self.assertEqual(name, names(name))
        # the other limits at nova's legacy defaults
        conf = cfg.ConfigOpts()
        nova_quota.register_opts(conf)
        conf([], project='nova')
        legacy = {'server_metadata_items': 'metadata_items',
                  'server_injected_files': 'injected_files',
                  'server_injected_file_content_bytes':
                      'injected_file_content_bytes',
                  'server_injected_file_path_bytes':
                      'injected_file_path_length',
                  'server_key_pairs': 'key_pairs',
                  'server_groups': 'server_groups',
                  'server_group_members': 'server_group_members'}
        self.assertEqual({name: getattr(conf.quota, opt)
                          for name, opt in legacy.items()},
                         {name: limits[name] for name in legacy})
        self.assertEqual(len(legacy) + 7, len(limits))

    def test_bootstrap_registers_the_limits(self):
        from unittest import mock

        from opie_sched.devcloud import bootstrap
        conn = mock.Mock()
        service = mock.Mock(id='nova-svc')
        conn.identity.services.return_value = iter([service])
        settings = _settings()
        limits = bootstrap.register_limits(conn, settings)
        self.assertEqual(config.registered_limits(settings), limits)
        conn.identity.services.assert_called_once_with(type='compute')
        made = {c.kwargs['resource_name']: c.kwargs for c in
                conn.identity.create_registered_limit.call_args_list}
        self.assertEqual(limits, {name: kw['default_limit']
                                  for name, kw in made.items()})
        self.assertEqual({('nova-svc', config.REGION)}, {
            (kw['service_id'], kw['region_id']) for kw in made.values()})

    def test_standin_kept_out_of_catalog(self):
        conf = config.nova_conf(_settings(neutron='standin'),
                                layout_mod.Layout('/tmp/x'))
        # The Neutron stand-in is reached directly, never via the catalog.
        self.assertEqual('http://127.0.0.1:%d' % PORTS['neutron'],
                         conf['neutron']['endpoint_override'])

    def test_neutron_conf_api_only(self):
        layout = layout_mod.Layout('/tmp/x')
        parsed = _parse(config.render(config.neutron_conf(_settings(),
                                                          layout)))
        self.assertEqual('ml2', parsed['DEFAULT']['core_plugin'])
        self.assertEqual('', parsed['ml2']['mechanism_drivers'])
        self.assertEqual('', parsed['ml2']['tenant_network_types'])
        self.assertEqual('False', parsed['DEFAULT'][
            'notify_nova_on_port_status_changes'])
        self.assertIn(layout.db_prefix + 'neutron',
                      parsed['database']['connection'])
        self.assertEqual('neutron', parsed['keystone_authtoken']['username'])

    def test_computes_are_distinct(self):
        layout = layout_mod.Layout('/tmp/x')
        s = _settings(computes=2)
        one = config.compute_conf(s, layout, 1)
        two = config.compute_conf(s, layout, 2)
        for section, key in (('DEFAULT', 'host'), ('DEFAULT', 'state_path'),
                             ('DEFAULT', 'instances_path'),
                             ('compute', 'provider_config_location')):
            self.assertNotEqual(one[section][key], two[section][key])
        self.assertEqual('devcloud-c2', two['DEFAULT']['host'])
        # A compute restarted (chaos tier) keeps its node uuid.
        self.assertEqual('fake.FakeDriverWithoutFakeNodes',
                         one['DEFAULT']['compute_driver'])

    def test_scheduler_hosts_are_distinct_and_share_redis(self):
        layout = layout_mod.Layout('/tmp/x')
        s = _settings(scheduler_hosts=2)
        one = config.scheduler_host_conf(s, layout, 1)
        two = config.scheduler_host_conf(s, layout, 2)
        for section, key in (('DEFAULT', 'host'), ('DEFAULT', 'state_path'),
                             ('oslo_concurrency', 'lock_path')):
            self.assertNotEqual(one[section][key], two[section][key])
        self.assertEqual('devcloud-s2', two['DEFAULT']['host'])
        url = one['opie_preemption']['coordination_url']
        self.assertEqual(url, two['opie_preemption']['coordination_url'])
        self.assertEqual('redis://127.0.0.1:6379?namespace=%s'
                         % layout.vhost, url)
        procs = cloud_mod.daemons(s, layout)
        argv1, argv2 = procs['opie-scheduler'][0], procs[
            'opie-scheduler-2'][0]
        self.assertTrue(argv1[-1].endswith('scheduler-host-1.conf'))
        self.assertTrue(argv2[-1].endswith('scheduler-host-2.conf'))

    def test_one_scheduler_host_keeps_the_file_driver(self):
        layout = layout_mod.Layout('/tmp/x')
        s = _settings()
        self.assertEqual(1, s.scheduler_hosts)
        conf = config.scheduler_host_conf(s, layout, 1)
        self.assertNotIn('opie_preemption', conf)
        self.assertEqual(['opie-scheduler'], [
            n for n in cloud_mod.daemons(s, layout)
            if n.startswith('opie-scheduler')])

    def test_notifications_enable_the_wakeup_listener(self):
        layout = layout_mod.Layout('/tmp/x')
        off = config.scheduler_host_conf(_settings(), layout, 1)
        self.assertNotIn('opie_preemption', off)
        on = config.scheduler_host_conf(
            _settings(notifications=True, scheduler_hosts=2), layout, 2)
        self.assertIs(True, on['opie_preemption']['release_notifications'])
        self.assertIn('coordination_url', on['opie_preemption'])

    def test_provider_config_command_matches_sizes(self):
        s = _settings(compute_vcpus=4, compute_ram_mb=8192,
                      compute_disk_gb=50, allocation_ratio=2.0)
        argv = config.provider_config_command(s, '/o.yaml')
        args = dict(zip(argv[1::2], argv[2::2]))
        self.assertEqual('provider-config', argv[0])
        self.assertEqual({'--vcpus': '4', '--memory-mb': '8192',
                          '--disk-gb': '50', '--cpu-allocation-ratio': '2',
                          '--ram-allocation-ratio': '2',
                          '--disk-allocation-ratio': '2',
                          '--output': '/o.yaml'},
                         {k: args[k] for k in (
                             '--vcpus', '--memory-mb', '--disk-gb',
                             '--cpu-allocation-ratio',
                             '--ram-allocation-ratio',
                             '--disk-allocation-ratio', '--output')})

    def test_provider_config_command_parses(self):
        # The arguments are accepted by the real 'opie-sched' parser.
        argv = config.provider_config_command(_settings(), '-')
        _options, args = cli.parse_command(argv)
        self.assertEqual(8, args.vcpus)
        self.assertEqual(16000, args.memory_mb)

    def test_market_conf(self):
        layout = layout_mod.Layout('/tmp/x')
        conf = config.market_conf(_settings(), layout)
        self.assertEqual('keystone',
                         conf['opie_market']['api_auth_strategy'])
        self.assertEqual(PORTS['market-api'],
                         conf['opie_market']['api_port'])
        self.assertEqual('opie-market',
                         conf['keystone_authtoken']['username'])
        self.assertIn(layout.db_prefix + 'market',
                      conf['database']['connection'])

    def test_clouds_yaml(self):
        clouds = config.clouds_yaml(_settings())['clouds']
        self.assertEqual({'devcloud-admin', 'devcloud-demo',
                          'devcloud-alt'}, set(clouds))
        self.assertNotEqual(clouds['devcloud-demo']['auth']['project_name'],
                            clouds['devcloud-alt']['auth']['project_name'])
        self.assertEqual('http://127.0.0.1:%d/v3' % PORTS['keystone'],
                         clouds['devcloud-admin']['auth']['auth_url'])

    def test_settings_round_trip(self):
        s = _settings(computes=3, with_repacker=True,
                      preemptible_cpu_ratio=2, market_period=20,
                      market_notice=20, market_tick=2,
                      market_capacity_source='hypervisors',
                      reliability=True)
        again = config.Settings.from_dict(json.loads(json.dumps(
            s.to_dict())))
        self.assertEqual(s.to_dict(), again.to_dict())

    def test_settings_errors(self):
        for kw in ({'computes': 0}, {'scheduler_workers': -1},
                   {'compute_vcpus': 1.5}, {'compute_ram_mb': 512},
                   {'allocation_ratio': 0}, {'neutron': 'fake'},
                   {'preemptible_cpu_ratio': 0},
                   {'preemptible_cpu_ratio': float('inf')},
                   {'preemptible_cpu_ratio': True},
                   {'market_period': 0}, {'market_period': 1.5},
                   {'market_notice': -1}, {'market_tick': 0.01},
                   {'market_tick': 'soon'},
                   {'market_capacity_source': 'nova'},
                   {'stock_scheduler': True, 'reliability': True},
                   {'stock_scheduler': True, 'scheduler_hosts': 2}):
            self.assertRaises(ValueError, _settings, **kw)

    def test_old_state_file_without_new_settings(self):
        data = _settings().to_dict()
        for name in ('preemptible_cpu_ratio', 'market_period',
                     'market_notice', 'market_tick',
                     'market_capacity_source', 'reliability'):
            del data[name]
        s = config.Settings.from_dict(data)
        self.assertFalse(s.reliability)
        self.assertIsNone(s.market_period)

    def test_random_password(self):
        a = config.Settings(PORTS)
        b = config.Settings(PORTS)
        self.assertNotEqual(a.password, b.password)
        self.assertGreaterEqual(len(a.password), 16)


class DevcloudApplicationTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        state = self.useFixture(fixtures.TempDir()).path
        self.layout = layout_mod.Layout(state)
        [self.app] = app_mod.parse_applications(
            config.autoscaler_applications(self.layout))
        self.types = flavormix.vm_types(
            [flavormix.VMType(f.name, f.price, f.capacity)
             for f in self.app.flavors])

    def test_declaration_is_valid_for_the_autoscaler(self):
        self.assertEqual(config.AUTOSCALER_APP, self.app.name)
        self.assertEqual(
            {name: (cap, price) for name, _v, _r, _d, cap, price
             in config.AUTOSCALER_FLAVORS},
            {f.name: (f.capacity, f.price) for f in self.app.flavors})
        self.assertEqual('file', self.app.demand['source'])
        self.assertEqual(config.autoscaler_demand_file(self.layout),
                         self.app.demand['path'])

    def test_optimal_mix_moves_with_the_demand(self):
        self.assertEqual({'app.small': 2},
                         flavormix.optimal_set(self.types, 2))
        self.assertEqual({'app.large': 2},
                         flavormix.optimal_set(self.types, 8))
        self.assertEqual({'app.small': 3},
                         flavormix.optimal_set(self.types, 3))

    def test_repack_from_small_to_large_passes_the_gain_test(self):
        decision = flavormix.plan(self.types, 8,
                                  current={'app.small': 2})
        self.assertEqual({'app.large': 2}, decision.target)
