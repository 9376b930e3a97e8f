"""The spot market on a real in-process Nova, driven through openstacksdk.

The market engine talks to Nova only through openstacksdk (as the
companion service does); bids are server metadata set by the owners with
their own openstacksdk connections. Periods are driven explicitly with a
fake clock (``tick(now)``): no sleeping.
"""

import dataclasses
from decimal import Decimal
import os

import fixtures
from keystoneauth1 import loading
from keystoneauth1 import session as ks_session
import openstack
from openstack import exceptions as sdk_exc
import webob

from opie_sched.demo import clients
from opie_sched.market.api import app as api_app
from opie_sched.market.api import policy
from opie_sched.market import budget
from opie_sched.market.db import api as db_api
from opie_sched.market import engine
from opie_sched.market import opts
from tests.functional import base

D = Decimal
HOUR = 3600
#: A period start (aligned on the epoch) for the fake clock.
T0 = 495000 * HOUR
NOTICE = 300
PROJECT_A = 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'
PROJECT_B = 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'


class MarketTest(base.OpieNovaTestCase):
    HOSTS = ('host1',)

    def setUp(self):
        super().setUp()
        self.useFixture(clients.RealClients(self))
        self.state = self.useFixture(fixtures.TempDir()).path
        self.url = 'sqlite:///' + os.path.join(self.state, 'market.sqlite')
        self.store = self.new_store()
        self.admin = self.sdk('admin:admin')
        self.settings = engine.Settings(
            period_seconds=HOUR, notice_period=NOTICE, bid_cap=D(100),
            initial_credit=D(100))
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

    def boot(self, conn, bids, prefix='s', flavor='small.preemptible'):
        """Boot one server per bid as the owner of ``conn`` (bids as
        metadata); their ids in ``bids`` order."""
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

    def test_demand_rises_lowest_bidder_noticed_then_preempted(self):
        owner_a, owner_b = self.sdk('alice:' + PROJECT_A), self.sdk(
            'bob:' + PROJECT_B)
        a = self.boot(owner_a, (1, 2, 3), 'a')
        eng = self.engine()

        first = eng.tick(T0 + 1)
        self.assertEqual([], first.errors)
        self.assertEqual(set(a), {s.uuid for s in first.servers})
        # one 8 vCPU / 16000 MB host; Merkat eq. 1 with the bids split
        # over vCPU and RAM: sum(bids) = 6
        self.assertEqual({'vcpus': D(3) / 8, 'memory_mb': D(3) / 16000},
                         first.prices['default'])
        self.assertEqual([], first.notices)

        # demand rises: project B boots three more, bids 2, 3, 3
        b = self.boot(owner_b, (2, 3, 3), 'b')
        second = eng.tick(T0 + HOUR + 1)
        self.assertEqual({'vcpus': D(7) / 8, 'memory_mb': D(7) / 16000},
                         second.prices['default'])
        # each 1 vCPU / 2000 MB server (1/8 of the host) now costs
        # 14/8 = 1.75 per hour
        self.assertEqual([a[0]], second.notices)
        notice = owner_a.compute.get_server(a[0]).metadata
        self.assertIn('out of bid: your bid of 1 per hour is below the spot '
                      'price', notice[engine.NOTICE_KEY])
        self.assertEqual(engine.iso(T0 + HOUR + 1 + NOTICE),
                         notice[engine.DEADLINE_KEY])

        # the owner cannot see or change B's bids through the market API
        api = api_app.NoAuth(api_app.MarketAPI(
            self.store, engine.Cloud(self.admin, 'hypervisors'),
            self.settings, policy.enforcer(self._conf())))
        req = webob.Request.blank('/v1/servers/%s/bid' % b[0])
        req.headers['X-Auth-Token'] = 'alice:' + PROJECT_A
        self.assertEqual(404, req.get_response(api).status_int)

        self.assertEqual([], eng.tick(T0 + HOUR + NOTICE).preempted)
        third = eng.tick(T0 + HOUR + 1 + NOTICE)
        self.assertEqual([a[0]], third.preempted)
        self.wait_deleted(a[0])
        self.assertIsNone(self.alive(self.admin, a[0]))
        for uuid in a[1:] + b:
            self.assertEqual('ACTIVE', self.alive(self.admin, uuid))

        # next period: the market clears without the preempted server
        fourth = eng.tick(T0 + 2 * HOUR + 1)
        self.assertEqual({'vcpus': D('6.5') / 8,
                          'memory_mb': D('6.5') / 16000},
                         fourth.prices['default'])
        self.assertEqual([], fourth.notices)
        # A paid three periods for a[1], a[2] and two for a[0]
        self.assertEqual(8, len(self.charges(self.store, PROJECT_A)))
        self.assertEqual(3, len(self.store.price_history(T0, T0 + 3 * HOUR))
                         // 2)

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
        budget.CreditManager(self.store).open_account(PROJECT_B, D(1))
        eng = self.engine(preemption_action='stop')
        report = eng.tick(T0)
        # sum 8, each server holds 1/8 of the pool: B pays 2 x 1 = 2
        self.assertEqual(D(-1), self.store.get_account(PROJECT_B).balance)
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
        # stopped servers are not charged again
        eng.tick(T0 + HOUR)
        self.assertEqual(2, len(self.charges(self.store, PROJECT_B)))
        self.assertEqual(2, len(self.charges(self.store, PROJECT_A)))

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
        # the period is charged as priced: three servers, sum 6, 0.75 each
        charged = self.charges(store, PROJECT_A)
        self.assertEqual(sorted(servers), sorted(e.key.server
                                                 for e in charged))
        self.assertEqual({D('-0.75')}, {e.amount for e in charged})
        self.assertEqual(D('97.75'), store.get_account(PROJECT_A).balance)
        self.assertEqual(2, len(store.price_history()))
        # replaying again changes nothing
        restarted.tick(T0 + 30)
        self.assertEqual(3, len(self.charges(store, PROJECT_A)))
        # the next period sees the deletion and the new bid (sum 7)
        report = restarted.tick(T0 + HOUR)
        self.assertEqual(D('7') / 2 / 8, report.prices['default']['vcpus'])
        self.assertEqual(5, len(self.charges(store, PROJECT_A)))
