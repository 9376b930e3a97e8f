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
"""The spot market on a real in-process Nova, driven through openstacksdk.

The market engine talks to Nova only through openstacksdk (as the
companion service does); bids are server metadata set by the owners with
their own openstacksdk connections. Periods are driven explicitly with a
fake clock (``tick(now)``): no sleeping.

Real contention: the preemptible vCPU inventory is overcommitted 2:1
(Placement and the full-state filter admit 16 preemptible vCPU on an
8-vCPU host), and the market prices the physical CPUs
(``capacity_source = hypervisors``: 8 vCPU). Servers of a CPU-heavy
preemptible flavor (2 vCPU, 1000 MB) fill 8 vCPU with four; a fifth makes
the pool contended. RAM is not overcommitted and stays at the reserve.
"""

import dataclasses
from decimal import Decimal
import os
import time
import types

import fixtures
from keystoneauth1 import loading
from keystoneauth1 import session as ks_session
import openstack
from openstack import exceptions as sdk_exc
import webob

from opie_sched.common import flavors
from opie_sched.demo import clients
from opie_sched.demo import cloud as demo_cloud
from opie_sched.market import budget
from opie_sched.services.market.api import app as api_app
from opie_sched.services.market.api import policy
from opie_sched.services.market import cloud as market_cloud
from opie_sched.services.market.db import api as db_api
from opie_sched.services.market import engine
from opie_sched.services.market import opts
from tests.functional import base

D = Decimal
HOUR = 3600
#: A period start (aligned on the epoch) for the fake clock.
T0 = 495000 * HOUR
NOTICE = 300
PROJECT_A = 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'
PROJECT_B = 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'


#: Preemptible CPU overcommitted 2:1 (see the module docstring).
CPU_RATIO = 2.0
#: The CPU-heavy preemptible flavor: 2 vCPU, 1000 MB, 10 GB.
CPU2 = (2, 1000, 10)
RESERVE = {'vcpus': D('0.1')}


#: The embedded cloud's writer (the tests patch the module attribute).
_write_provider_config = demo_cloud.write_provider_config


def _overcommitted_provider_config(directory, host=demo_cloud.HOST):
    return _write_provider_config(directory, host,
                                  cpu_allocation_ratio=CPU_RATIO)


class _MarketBase(base.OpieNovaTestCase):
    """The in-process Nova, a market store and openstacksdk clients."""

    HOSTS = ('host1',)
    EXTRA_FLAGS = {None: {'cpu_allocation_ratio': CPU_RATIO,
                          'initial_cpu_allocation_ratio': CPU_RATIO,
                          'allow_resize_to_same_host': True}}

    def setUp(self):
        self.useFixture(fixtures.MonkeyPatch(
            'opie_sched.demo.cloud.write_provider_config',
            _overcommitted_provider_config))
        super().setUp()
        self.flavor_ids['cpu2.preemptible'] = self._create_flavor(
            name='cpu2.preemptible', vcpu=CPU2[0], memory_mb=CPU2[1],
            disk=CPU2[2], ephemeral=0,
            extra_spec=flavors.preemptible_extra_specs(*CPU2))
        self.useFixture(clients.RealClients(self))
        self.state = self.useFixture(fixtures.TempDir()).path
        self.url = 'sqlite:///' + os.path.join(self.state, 'market.sqlite')
        self.store = self.new_store()
        self.admin = self.sdk('admin:admin')
        self.settings = engine.Settings(
            period_seconds=HOUR, notice_period=NOTICE, bid_cap=D(100),
            initial_credit=D(100), reserve_prices=RESERVE)
        self.image = self.glance.auto_disk_config_enabled_image['id']

    def new_store(self):
        store = db_api.MarketStore(self.url)
        store.sync()
        self.addCleanup(store.dispose)
        return store

    def sdk(self, token):
        """An openstacksdk connection with the token ``user:project``."""
        auth = loading.get_plugin_loader('admin_token').load_from_options(
            endpoint=self.api_fixture.base_url, token=token)
        return openstack.connection.Connection(
            session=ks_session.Session(auth=auth))

    def engine(self, store=None, leadership=None, **settings):
        return engine.MarketEngine(
            store or self.store, engine.Cloud(self.admin, 'hypervisors'),
            dataclasses.replace(self.settings, **settings),
            leadership=leadership)

    def boot(self, conn, bids, prefix='s', flavor='cpu2.preemptible'):
        """Boot one server per bid as the owner of ``conn`` (bids as
        metadata); their ids in ``bids`` order.
        """
        ids = []
        for i, bid in enumerate(bids):
            server = conn.compute.create_server(
                name='%s%d' % (prefix, i),
                flavor_id=self.flavor_ids[flavor], image_id=self.image,
                networks='none', metadata={'opie:bid': str(bid)})
            ids.append(conn.compute.wait_for_server(
                server, wait=60, interval=0.05).id)
        return ids

    def alive(self, conn, uuid):
        try:
            status = conn.compute.get_server(uuid).status
        except sdk_exc.NotFoundException:
            return None
        return None if status == 'DELETED' else status

    def wait_deleted(self, uuid):
        try:
            self.admin.compute.wait_for_delete(
                self.admin.compute.get_server(uuid), wait=60, interval=0.05)
        except sdk_exc.NotFoundException:
            pass

    def charges(self, store, project):
        return [e for e in store.entries(project) if e.key.kind == 'charge']


class MarketTest(_MarketBase):
    """The market on the physical CPUs (``capacity_source =
    hypervisors``), contended by overcommitted preemptible vCPUs.
    """

    def test_demand_rises_lowest_bidder_noticed_then_preempted(self):
        owner_a, owner_b = self.sdk('alice:' + PROJECT_A), self.sdk(
            'bob:' + PROJECT_B)
        a = self.boot(owner_a, (1, 2, 3), 'a')
        eng = self.engine()

        first = eng.tick(T0 + 1)
        self.assertEqual([], first.errors)
        self.assertEqual(set(a), {s.uuid for s in first.servers})
        # 6 vCPU asked of 8: no contention, the reserve price; each pays
        # the reserve cost of its flavor, 0.1 * 2 per hour
        self.assertEqual({'vcpus': D('0.1'), 'memory_mb': D(0)},
                         first.prices['default'])
        self.assertEqual([], first.notices)
        self.assertEqual({D('-0.2')},
                         {e.amount for e in self.charges(self.store,
                                                         PROJECT_A)})

        # demand rises: project B boots two more, bids 2 and 3: 10 vCPU
        # asked of 8 (Placement admitted them: 16 preemptible vCPU)
        b = self.boot(owner_b, (2, 3), 'b')
        second = eng.tick(T0 + HOUR + 1)
        prices = second.prices['default']
        self.assertGreater(prices['vcpus'], D('0.1'))
        self.assertEqual(D(0), prices['memory_mb'])   # 5000 of 16000 MB
        market = second.markets['default']
        self.assertEqual({'vcpus': True, 'memory_mb': False},
                         market.contended)
        for pos in market.positions.values():
            self.assertLessEqual(pos.charge_per_hour, pos.server.bid)
            self.assertLessEqual(pos.shares['vcpus'], 2)
        self.assertLessEqual(sum(p.shares['vcpus']
                                 for p in market.positions.values()), 8)
        # the lowest bidder is out of bid, and removing it is enough
        self.assertTrue(market.positions[a[0]].out_of_bid)
        self.assertEqual([a[0]], second.notices)
        notice = owner_a.compute.get_server(a[0]).metadata
        self.assertIn("out of bid: pool 'default' is contended (10 vCPU "
                      "demanded of 8)", notice[engine.NOTICE_KEY])
        self.assertEqual(engine.iso(T0 + HOUR + 1 + NOTICE),
                         notice[engine.DEADLINE_KEY])

        # the owner cannot see or change B's bids through the market API
        api = api_app.NoAuth(api_app.MarketAPI(
            self.store, engine.Cloud(self.admin, 'hypervisors'),
            self.settings, policy.enforcer(self._conf())))
        req = webob.Request.blank('/v1/servers/%s/bid' % b[0])
        req.headers['X-Auth-Token'] = 'alice:' + PROJECT_A
        self.assertEqual(404, req.get_response(api).status_int)
        # ...but sees its own server's position, by the engine's rule
        req = webob.Request.blank('/v1/servers/%s/bid' % a[0])
        req.headers['X-Auth-Token'] = 'alice:' + PROJECT_A
        body = req.get_response(api).json
        self.assertTrue(body['bid']['market']['out_of_bid'])

        self.assertEqual([], eng.tick(T0 + HOUR + NOTICE).preempted)
        third = eng.tick(T0 + HOUR + 1 + NOTICE)
        self.assertEqual([a[0]], third.preempted)
        self.wait_deleted(a[0])
        self.assertIsNone(self.alive(self.admin, a[0]))
        for uuid in a[1:] + b:
            self.assertEqual('ACTIVE', self.alive(self.admin, uuid))

        # next period: 8 vCPU of 8, back to the reserve, nobody noticed
        fourth = eng.tick(T0 + 2 * HOUR + 1)
        self.assertEqual({'vcpus': D('0.1'), 'memory_mb': D(0)},
                         fourth.prices['default'])
        self.assertEqual([], fourth.notices)
        # A paid three periods for a[1], a[2] and two for a[0]
        self.assertEqual(8, len(self.charges(self.store, PROJECT_A)))
        self.assertEqual(3, len(self.store.price_history(T0, T0 + 3 * HOUR))
                         // 2)

    def test_resize_to_a_normal_flavor_ends_the_preemptible_life(self):
        # issue 10 item 6: a server resized to a normal flavor during its
        # notice period is not deleted by the market, and leaves it.
        owner = self.sdk('alice:' + PROJECT_A)
        servers = self.boot(owner, (1, 2, 3, 3, 2))
        eng = self.engine()
        report = eng.tick(T0)
        self.assertEqual([servers[0]], report.notices)
        victim = servers[0]
        owner.compute.resize_server(victim, self.flavor_ids['medium'])
        owner.compute.wait_for_server(owner.compute.get_server(victim),
                                      status='VERIFY_RESIZE', wait=60,
                                      interval=0.05)
        # past its deadline, waiting for a confirmation: the market does
        # not withdraw the notice (the owner could revert to the
        # preemptible flavor) nor wait for ever: it confirms the resize
        report = eng.tick(T0 + NOTICE)
        self.assertEqual(([], []), (report.preempted, report.cancelled))
        server = owner.compute.wait_for_server(
            owner.compute.get_server(victim), wait=60, interval=0.05)
        self.assertEqual('medium', server.flavor['original_name'])
        report = eng.tick(T0 + NOTICE + 1)
        self.assertEqual(([], [victim]), (report.preempted, report.cancelled))
        self.assertEqual('ACTIVE', self.alive(self.admin, victim))
        self.assertNotIn(engine.NOTICE_KEY,
                         owner.compute.get_server(victim).metadata)
        # no more charges: the next period does not see it
        report = eng.tick(T0 + HOUR)
        self.assertNotIn(victim, {s.uuid for s in report.servers})
        self.assertEqual(1, len([e for e in self.charges(self.store,
                                                         PROJECT_A)
                                 if e.key.server == victim]))

    def test_preemptible_resize_left_unconfirmed_is_charged_and_preempted(
            self):
        # issue 23: a preemptible server resized to another preemptible
        # flavor and left in VERIFY_RESIZE was neither charged nor
        # preempted (only ACTIVE servers were priced; VERIFY_RESIZE was
        # "busy" for ever).
        owner = self.sdk('alice:' + PROJECT_A)
        servers = self.boot(owner, (1, 2, 3, 3, 2))
        eng = self.engine(notice_period=2 * HOUR)
        victim = servers[0]
        self.assertEqual([victim], eng.tick(T0).notices)
        owner.compute.resize_server(victim,
                                    self.flavor_ids['medium.preemptible'])
        owner.compute.wait_for_server(owner.compute.get_server(victim),
                                      status='VERIFY_RESIZE', wait=60,
                                      interval=0.05)
        report = eng.tick(T0 + HOUR)
        self.assertIn(victim, {s.uuid for s in report.servers})
        self.assertEqual([T0, T0 + HOUR], sorted(
            e.key.period_start for e in self.charges(self.store, PROJECT_A)
            if e.key.server == victim))
        # past the deadline: Nova refuses the preemption marks (metadata)
        # in vm_state resized, so the market confirms the resize first...
        report = eng.tick(T0 + 2 * HOUR)
        self.assertEqual([], report.preempted)
        owner.compute.wait_for_server(owner.compute.get_server(victim),
                                      wait=60, interval=0.05)
        # ...and preempts it at the next tick
        report = eng.tick(T0 + 2 * HOUR + 2)
        self.assertEqual([victim], report.preempted)
        self.wait_deleted(victim)
        self.assertIsNone(self.alive(self.admin, victim))

    def _conf(self):
        from oslo_config import cfg
        conf = cfg.ConfigOpts()
        opts.register_opts(conf)
        conf([])
        return conf

    def test_project_out_of_credit_is_preempted(self):
        owner_a, owner_b = self.sdk('alice:' + PROJECT_A), self.sdk(
            'bob:' + PROJECT_B)
        [rich] = self.boot(owner_a, [4], 'rich')
        poor = self.boot(owner_b, (2, 2), 'poor')
        budget.CreditManager(self.store).open_account(PROJECT_B, D('0.3'))
        eng = self.engine(preemption_action='stop')
        report = eng.tick(T0)
        # no contention: each server pays the reserve cost, 0.2 per hour
        self.assertEqual(D('-0.1'),
                         self.store.get_account(PROJECT_B).balance)
        self.assertEqual(set(poor), set(report.notices))
        meta = owner_b.compute.get_server(poor[0]).metadata
        self.assertIn('out of credit: project %s' % PROJECT_B,
                      meta[engine.NOTICE_KEY])
        report = eng.tick(T0 + NOTICE)
        self.assertEqual(set(poor), set(report.preempted))
        for uuid in poor:
            server = self.admin.compute.wait_for_server(
                self.admin.compute.get_server(uuid), status='SHUTOFF',
                wait=60, interval=0.05)
            self.assertEqual('opie-market',
                             server.metadata[engine.PREEMPTED_BY_KEY])
            self.assertIn(engine.PREEMPTED_TAG, server.tags)
        self.assertEqual('ACTIVE', self.alive(self.admin, rich))
        # stopped, then deleted after stop_grace_period (issue 31: one
        # meaning of stop, a stopped server keeps its host); not charged
        # again
        eng.tick(T0 + HOUR)
        for uuid in poor:
            self.wait_deleted(uuid)
            self.assertIsNone(self.alive(self.admin, uuid))
        self.assertEqual(2, len(self.charges(self.store, PROJECT_B)))
        self.assertEqual(2, len(self.charges(self.store, PROJECT_A)))

    def test_nova_refusing_a_verb_is_refused(self):
        # Nova's 409 (a rescued server cannot be shelved) reaches the
        # enforcement as cloud.Refused, which applies the fallback
        [uuid] = self.boot(self.sdk('alice:' + PROJECT_A), [1])
        self.admin.compute.rescue_server(uuid)
        self.admin.compute.wait_for_server(
            self.admin.compute.get_server(uuid), status='RESCUE', wait=60,
            interval=0.05)
        cloud = engine.Cloud(self.admin, 'hypervisors')
        self.assertRaises(market_cloud.Refused, cloud.terminate, uuid,
                          'shelve')
        cloud.terminate(uuid, 'delete')
        self.wait_deleted(uuid)
        self.assertIsNone(self.alive(self.admin, uuid))

    def test_restart_mid_period_double_counts_nothing(self):
        owner = self.sdk('alice:' + PROJECT_A)
        servers = self.boot(owner, (1, 2, 3))
        coordination = 'file://' + os.path.join(self.state, 'coordination')
        first = engine.Leadership(coordination, 'before-crash')
        self.addCleanup(first.stop)
        real = budget.CreditManager.charge
        calls = []

        def power_cut(manager, *args, **kwargs):
            calls.append(args)
            if len(calls) == 2:
                raise RuntimeError('power cut')
            return real(manager, *args, **kwargs)

        with fixtures.MonkeyPatch(
                'opie_sched.market.budget.CreditManager.charge', power_cut):
            report = self.engine(leadership=first).tick(T0 + 10)
        self.assertEqual(['settle: power cut'], report.errors)
        self.assertEqual(1, len(self.charges(self.store, PROJECT_A)))
        first.stop()  # the process is gone

        # meanwhile the owner deletes a server and raises a bid
        owner.compute.delete_server(servers[2])
        self.wait_deleted(servers[2])
        owner.compute.set_server_metadata(servers[0], **{'opie:bid': '5'})

        second = engine.Leadership(coordination, 'after-restart')
        self.addCleanup(second.stop)
        store = self.new_store()
        restarted = self.engine(store=store, leadership=second)
        report = restarted.tick(T0 + 20)
        self.assertEqual([], report.errors)
        self.assertTrue(report.replayed)
        # the period is charged as priced: three servers at the reserve
        # cost of their flavor, 0.2 each
        charged = self.charges(store, PROJECT_A)
        self.assertEqual(sorted(servers), sorted(e.key.server
                                                 for e in charged))
        self.assertEqual({D('-0.2')}, {e.amount for e in charged})
        self.assertEqual(D('99.4'), store.get_account(PROJECT_A).balance)
        self.assertEqual(2, len(store.price_history()))
        # replaying again changes nothing
        restarted.tick(T0 + 30)
        self.assertEqual(3, len(self.charges(store, PROJECT_A)))
        # the next period sees the deletion (and the new bid, which does
        # not matter while the pool is not contended)
        report = restarted.tick(T0 + HOUR)
        self.assertEqual(D('0.1'), report.prices['default']['vcpus'])
        self.assertEqual({servers[0], servers[1]},
                         {s.uuid for s in report.servers})
        self.assertEqual(5, len(self.charges(store, PROJECT_A)))


class PlacementMarketTest(_MarketBase):
    """The default ``capacity_source = placement`` on the real Nova and
    Placement (issue 23). The compute service is ``compute``: nova's fake
    driver names its node ``fake-mini`` there, so the resource provider's
    name is not the service host the servers report -- the case of FQDN
    node names. Placement admits 16 preemptible vCPU: eight 2 vCPU servers
    fill it, and a ninth boot is refused (NoValidHost); that refused
    demand must price the pool.
    """
    HOSTS = ('compute',)

    def placement_cloud(self):
        auth = loading.get_plugin_loader('admin_token').load_from_options(
            endpoint=self.placement.fixture.endpoint, token='admin')
        placement = openstack.connection.Connection(
            session=ks_session.Session(auth=auth))
        return engine.Cloud(types.SimpleNamespace(
            compute=self.admin.compute, placement=placement.placement),
            'placement')

    def refused_boot(self, conn, bid):
        server = conn.compute.create_server(
            name='refused', flavor_id=self.flavor_ids['cpu2.preemptible'],
            image_id=self.image, networks='none',
            metadata={'opie:bid': str(bid)})
        server = conn.compute.wait_for_server(server, status='ERROR',
                                              failures=['ACTIVE'], wait=60,
                                              interval=0.05)
        return server

    def test_refused_demand_prices_the_placement_pool(self):
        cloud = self.placement_cloud()
        hosts = cloud.hosts()
        # keyed by the compute service host, not the provider name
        self.assertEqual(['compute'], list(hosts))
        self.assertEqual(16, hosts['compute']['vcpus'])

        owner = self.sdk('alice:' + PROJECT_A)
        other = self.sdk('bob:' + PROJECT_B)
        low = self.boot(owner, ('0.5',), 'low')[0]
        high = self.boot(owner, ('3',) * 7, 'high')
        eng = engine.MarketEngine(self.store, cloud, self.settings)
        now = time.time()
        calm = eng.tick(now)
        self.assertEqual([], calm.errors)
        self.assertEqual(D('0.1'), calm.prices['default']['vcpus'])
        self.assertEqual([], calm.notices)
        self.assertEqual({'compute'}, {s.host for s in calm.shares.values()})
        self.assertFalse(any(s.placed for s in calm.shares.values()))

        refused = self.refused_boot(other, '3')
        self.assertIn('No valid host', refused.fault['message'])
        report = eng.tick(now + HOUR)
        self.assertEqual([], report.errors)
        self.assertGreater(report.prices['default']['vcpus'], D('0.1'))
        self.assertEqual([low], report.notices)
        self.assertEqual({}, {e.key.server: e for e in
                              self.charges(self.store, PROJECT_B)})
        self.assertNotIn(refused.id, {s.uuid for s in report.servers})

        # the guest of the noticed server reads the notice and its
        # deadline in meta_data.json ("meta"), before the deadline
        meta = self.guest_metadata(low)['meta']
        self.assertIn('out of bid', meta[engine.NOTICE_KEY])
        self.assertEqual(engine.iso(now + HOUR + NOTICE),
                         meta[engine.DEADLINE_KEY])
        self.assertNotIn(engine.NOTICE_KEY,
                         self.guest_metadata(high[0])['meta'])
