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
"""opie-repacker on a real in-process Nova, through openstacksdk.

The service reads Nova (servers, hypervisors, aggregates) and Placement
(inventories) and live-migrates through an openstacksdk ``Connection``
(keystoneauth ``admin_token`` auth against the fixtures' endpoints, see
:mod:`opie_sched.demo.clients`); the test checks the result through
nova's own test client (``OS-EXT-SRV-ATTR:host``).

Hosts are the paper's 8 vCPU / 16000 MB: host1 runs one small preemptible
server (12.5 %), host2 a small normal and a small preemptible one (25 %),
host3 a large normal one (50 %). After the 10-sample window host1 and
host2 are underloaded (thesis Paper IV §5.3, < 30 %); the RPM score sends
every server to host3 (E: host3 ends nearest the 75 % target), host2's
preemptible server before its normal one.
"""

import io
import os
from unittest import mock

import fixtures
import openstack
from oslo_config import cfg

from opie_sched.cmd import repacker as cmd
from opie_sched.conf import repacker as opts
from opie_sched.demo import clients
from opie_sched.services.repacker import executor as ex
from opie_sched.services.repacker import service as svc
from tests.functional import base


class RepackerTest(base.OpieNovaTestCase):
    HOSTS = ('host1', 'host2', 'host3')

    def setUp(self):
        super().setUp()
        self.useFixture(clients.RealClients(self))
        self.conn = openstack.connect(
            auth_type='admin_token',
            auth={'token': 'admin:admin',
                  'endpoint': self.api_fixture.base_url},
            compute_api_version='2.96',
            placement_endpoint_override=self.placement_fixture.endpoint)
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.servers = {
            'p1': self.boot('small.preemptible', host='host1', name='p1'),
            'n2': self.boot('small', host='host2', name='n2'),
            'p2': self.boot('small.preemptible', host='host2', name='p2'),
            'n3': self.boot('large', host='host3', name='n3'),
        }
        self.ids = {s['id']: name for name, s in self.servers.items()}

    def make_service(self, **overrides):
        conf = cfg.ConfigOpts()
        opts.register_opts(conf)
        conf([], project='opie_sched')
        for name, value in dict(
                state_dir=self.tmp, sample_interval=0.0, poll_interval=0.1,
                migration_timeout=60.0, **overrides).items():
            conf.set_override(name, value, group=opts.GROUP)
        service = svc.RepackerService(conf, conn=self.conn)
        service.start()
        self.addCleanup(service.stop)
        return service

    def hosts_now(self):
        return {name: self.server_host(s)
                for name, s in self.servers.items()}

    def warm_up(self, service):
        """Nine samples; the period's own sample is the tenth."""
        for _ in range(9):
            service.sample()

    def planned(self, period):
        return [(self.ids[m.server], m.source, m.destination, m.reason)
                for m in period.plan.moves]

    def test_dry_run_plan_names_the_moves_and_moves_nothing(self):
        service = self.make_service()
        self.warm_up(service)
        before = self.hosts_now()
        conf_file = os.path.join(self.tmp, 'repacker.conf')
        with open(conf_file, 'w') as f:
            f.write('[opie_repacker]\nstate_dir = %s\nsample_interval = 0\n'
                    % self.tmp)
        out = io.StringIO()
        # The console script (its oslo.log setup would take over the
        # test's logging), sharing the warmed-up history.
        with mock.patch.object(svc.RepackerService, 'collector',
                               service.collector), \
                mock.patch.object(cmd.logging, 'setup'), \
                mock.patch('sys.stdout', out):
            rc = cmd.main(['--once', '--dry-run', '--config-file',
                           conf_file], conn=self.conn)
        self.assertEqual(0, rc)
        text = out.getvalue()
        for name in ('p1', 'p2', 'n2'):
            self.assertIn(self.servers[name]['id'], text)
        self.assertIn('underload', text)
        self.assertEqual(before, self.hosts_now())
        # The same plan through the service API: order and destinations.
        period = service.run_once(dry_run=True)
        self.assertEqual({'host1': 'underload', 'host2': 'underload'},
                         period.plan.triggers)
        self.assertEqual([('p1', 'host1', 'host3', 'underload'),
                          ('p2', 'host2', 'host3', 'underload'),
                          ('n2', 'host2', 'host3', 'underload')],
                         self.planned(period))
        self.assertEqual({ex.PLANNED}, {o.result for o in period.outcomes})
        self.assertEqual(before, self.hosts_now())
        self.assertEqual([], self.api.get_migrations())

    def test_live_migration_round_executes_the_plan(self):
        service = self.make_service(max_migrations=2)
        self.warm_up(service)
        period = service.run_once()
        self.assertEqual('ok', period.status, period.error)
        # Budget 2: the two preemptible servers move first.
        self.assertEqual([('p1', 'host1', 'host3', 'underload'),
                          ('p2', 'host2', 'host3', 'underload')],
                         self.planned(period))
        self.assertEqual([ex.DONE, ex.DONE],
                         [o.result for o in period.outcomes],
                         [o.detail for o in period.outcomes])
        self.assertEqual({'p1': 'host3', 'p2': 'host3', 'n2': 'host2',
                          'n3': 'host3'}, self.hosts_now())
        for name in ('p1', 'p2'):
            self.assertEqual(
                'ACTIVE', self.api.get_server(self.servers[name]['id'])[
                    'status'])

    def test_p2p_strategy_plans_and_live_migrates(self):
        """thesis Paper II re-consolidation as the repacker's strategy:
        a dry-run plan, then a real live-migration round, under the same
        lock and budget.
        """
        service = self.make_service(strategy='p2p', max_migrations=1)
        before = self.hosts_now()
        period = service.run_once(dry_run=True)
        self.assertEqual('ok', period.status, period.error)
        self.assertEqual(before, self.hosts_now())
        self.assertEqual([], self.api.get_migrations())
        # host1 (12.5 %) and host2 (25 %) are at most 40 % loaded; each
        # server goes to a more loaded host found on the overlay.
        load = {}
        for h in period.hosts:
            load[h.name] = max(sum(i.cpu for i in h.instances) / h.vcpus,
                               sum(i.memory for i in h.instances)
                               / h.memory_mb)
        self.assertTrue(period.plan.moves)
        for m in period.plan.moves:
            self.assertLessEqual(load[m.source], 0.4)
            self.assertNotEqual(m.source, m.destination)
        first = period.plan.moves[0]
        self.assertGreater(load[first.destination], load[first.source])
        period = service.run_once()
        self.assertEqual('ok', period.status, period.error)
        self.assertEqual([ex.DONE] + [ex.SKIPPED] * (
            len(period.outcomes) - 1), [o.result for o in period.outcomes],
            [o.detail for o in period.outcomes])
        moved = period.plan.moves[0]
        name = self.ids[moved.server]
        self.assertEqual(moved.destination, self.hosts_now()[name])
        self.assertEqual('ACTIVE', self.api.get_server(moved.server)[
            'status'])

    def test_gossip_strategy_plans_and_live_migrates(self):
        """thesis Paper III gossip redistribution as the repacker's
        strategy: a dry-run plan, then one live migration (budget 1).
        """
        service = self.make_service(strategy='gossip', max_migrations=1)
        before = self.hosts_now()
        period = service.run_once(dry_run=True)
        self.assertEqual('ok', period.status, period.error)
        self.assertEqual(before, self.hosts_now())
        # host1 and host2 fit together in one host under α = 0.9: the
        # pair merges, so at least one server is planned to move.
        self.assertTrue(period.plan.moves)
        self.assertEqual({ex.PLANNED}, {o.result for o in period.outcomes})
        period = service.run_once()
        self.assertEqual('ok', period.status, period.error)
        self.assertEqual(ex.DONE, period.outcomes[0].result,
                         period.outcomes[0].detail)
        moved = period.plan.moves[0]
        self.assertEqual(moved.destination,
                         self.hosts_now()[self.ids[moved.server]])
        self.assertEqual(1, len([o for o in period.outcomes
                                 if o.result == ex.DONE]))
