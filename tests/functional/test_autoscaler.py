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
"""opie-autoscaler on a real in-process Nova, through openstacksdk.

The service under test talks to Nova only through an openstacksdk
``Connection`` (keystoneauth ``admin_token`` auth against the fixture's
endpoint, see :mod:`opie_sched.demo.clients`). The test observes the
application's servers independently through nova's own test client after
every operation of the executor (each server up, each server deleted, each
rollback) and after every round.

Flavors (capacity unit: requests/s; price currency/hour):
``as.1`` 1 vCPU, c=10, p=1.0; ``as.2`` 2 vCPU, c=25, p=1.6; ``as.4``
4 vCPU, c=60, p=3.0 -- the bigger the cheaper per unit of capacity, so
Paper V's optimal sets change shape as the demand moves. The spot-market
test adds the base's preemptible ``medium.preemptible`` (2 vCPU, 4000 MB),
c=25, priced by the real opie-market REST API.
"""

from decimal import Decimal
import os
import threading

import fixtures
import openstack
from oslo_config import cfg
from wsgi_intercept import interceptor

from nova import exception as nova_exc
from nova.virt import fake as nova_fake

from opie_sched.conf import autoscaler as opts
from opie_sched.demo import clients
from opie_sched.services.autoscaler import app as app_mod
from opie_sched.services.autoscaler import service as service_mod
from opie_sched.services.market.api import app as market_api
from opie_sched.services.market.api import policy as market_policy
from opie_sched.services.market.db import api as market_db
from opie_sched.services.market import engine as market_engine
from opie_sched.services.market import opts as market_opts
from tests.functional import base

FLAVORS = {'as.1': (1, 10, 1.0), 'as.2': (2, 25, 1.6),
           'as.4': (4, 60, 3.0)}
#: c_i of every flavor the tests' applications run on.
CAPACITY = dict({n: c for n, (_, c, _) in FLAVORS.items()},
                **{'medium.preemptible': 25})
MARKET_ENDPOINT = 'http://market.opie-sched.test:80'
HOUR = 3600
#: A period start of the market (aligned on the hour).
T0 = 495000 * HOUR


class AutoscalerTest(base.OpieNovaTestCase):
    HOSTS = ('host1', 'host2')
    # Nova refuses a soft-anti-affinity group unless its weigher is on.
    EXTRA_FLAGS = {'filter_scheduler': {'weight_classes': [
        'opie_sched.scheduler.weights.all_weighers',
        'nova.scheduler.weights.affinity.'
        'ServerGroupSoftAntiAffinityWeigher']}}

    def setUp(self):
        super().setUp()
        self.useFixture(clients.RealClients(self))
        self.conn = openstack.connect(
            auth_type='admin_token',
            auth={'token': 'admin:admin',
                  'endpoint': self.api_fixture.base_url},
            compute_api_version='2.96')
        for name, (vcpu, _, _) in FLAVORS.items():
            self._create_flavor(name=name, vcpu=vcpu, memory_mb=1000 * vcpu,
                                disk=10 * vcpu, ephemeral=0)
        # The group belongs to the service's project (the token's).
        self.group = self.conn.compute.create_server_group(
            name='web', policy='soft-anti-affinity')
        tmp = self.useFixture(fixtures.TempDir()).path
        self.demand_file = os.path.join(tmp, 'demand')
        image = next(iter(self.conn.image.images()))
        self.app = app_mod.parse_application({
            'name': 'web', 'server_group': 'web', 'image': image.id,
            'networks': 'none',
            'flavors': {n: {'capacity': c, 'price': p}
                        for n, (_, c, p) in FLAVORS.items()},
            'demand': {'source': 'file', 'path': self.demand_file}})
        conf = cfg.ConfigOpts()
        opts.register_opts(conf)
        conf([], project='opie_sched')
        for name, value in (('poll_interval', 0.2), ('boot_timeout', 30),
                            ('delete_timeout', 30),
                            ('coordination_url',
                             'file://' + os.path.join(tmp, 'locks'))):
            conf.set_override(name, value, group=opts.GROUP)
        self.events = []
        self.service = service_mod.AutoscalerService(
            conf, conn=self.conn, applications=[self.app],
            observer=self.observe)
        self.service.start()
        self.addCleanup(self.service.stop)

    # -- observation through nova's own API client ------------------------

    def server_set(self):
        """``{flavor: n}`` of the group's ACTIVE servers, and all statuses."""
        members = set(self.api.get_server_group(
            self.group.id)['members'])
        active, statuses = {}, []
        for s in self.all_servers():
            if s['id'] not in members:
                continue
            statuses.append(s['status'])
            if s['status'] == 'ACTIVE':
                fl = s['flavor']['original_name']
                active[fl] = active.get(fl, 0) + 1
        return active, statuses

    def all_servers(self):
        return self.api.get_servers(search_opts={'all_tenants': 1})

    @staticmethod
    def capacity(counts):
        return sum(CAPACITY[f] * n for f, n in counts.items())

    def observe(self, event, server_id):
        active, _ = self.server_set()
        self.events.append((event, active, self.capacity(active)))

    def round(self, demand):
        """Set the demand, run one round; (outcome, events of the round)."""
        with open(self.demand_file, 'w') as f:
            f.write('%s\n' % demand)
        before = self.capacity(self.server_set()[0])
        self.events = []
        [out] = self.service.run_once()
        after, statuses = self.server_set()
        self.events.append(('round', after, self.capacity(after)))
        # Capacity never dips below the demand (nor below what was there
        # when the demand went up before the new servers are up).
        floor = min(demand if isinstance(demand, int) else 0, before)
        for event, counts, cap in self.events:
            self.assertGreaterEqual(cap, floor,
                                    (demand, event, counts, self.events))
        # Make-before-break: every "up" precedes every "deleted".
        kinds = [e[0] for e in self.events]
        if 'deleted' in kinds and 'up' in kinds:
            self.assertLess(max(i for i, k in enumerate(kinds) if k == 'up'),
                            kinds.index('deleted'), kinds)
        return out, after, statuses

    # -- tests -------------------------------------------------------------

    def test_demand_steps_up_and_down_make_before_break(self):
        out, after, _ = self.round(10)
        self.assertEqual(('reconfigured', {'as.1': 1}), (out.action, after))
        # Step up: S_delta adds as.4 for the shortfall of 40, then the gain
        # test repacks {as.1, as.4} (4.0/h) to {as.4} (3.0/h).
        out, after, _ = self.round(50)
        self.assertEqual(('reconfigured', {'as.4': 1}), (out.action, after))
        self.assertTrue(out.plan['repack'])
        self.assertAlmostEqual(-2.0, out.saving_per_hour)  # 1.0 -> 3.0 /h
        # Step down: {as.4} (3.0/h) repacked to {as.2} (1.6/h).
        out, after, _ = self.round(20)
        self.assertEqual(('reconfigured', {'as.2': 1}), (out.action, after))
        self.assertAlmostEqual(1.4, out.saving_per_hour)
        # Up a little: the as.2 is reused, an as.1 added (no repacking,
        # {as.4} would cost 3.0/h > 2.6/h).
        out, after, _ = self.round(35)
        self.assertEqual(('reconfigured', {'as.1': 1, 'as.2': 1}),
                         (out.action, after))
        self.assertEqual(['up', 'round'], [e[0] for e in self.events])
        # Invalid demand: the current set is kept, and the outcome says why.
        out, after, _ = self.round('lots')
        self.assertEqual(('kept', {'as.1': 1, 'as.2': 1}),
                         (out.action, after))
        self.assertIn('demand unavailable', out.reason)
        # Down: scale in to the cheapest covering subset, {as.2}.
        out, after, statuses = self.round(20)
        self.assertEqual(('reconfigured', {'as.2': 1}), (out.action, after))
        self.assertEqual(['deleted', 'round'], [e[0] for e in self.events])
        self.assertEqual(['ACTIVE'], statuses)

    def test_boot_failure_mid_transition_rolls_back(self):
        out, after, _ = self.round(10)
        self.assertEqual({'as.1': 1}, after)
        # Demand 110: repack {as.1} + 2 x as.4 (7.0/h) to 2 x as.4 (6.0/h).
        # The second as.4 fails to spawn while the first comes up.
        real_spawn = nova_fake.FakeDriver.spawn
        lock, seen = threading.Lock(), []

        def spawn(driver, context, instance, *args, **kwargs):
            with lock:
                seen.append(instance.uuid)
                fail = len(seen) == 2
            if fail:
                raise nova_exc.BuildAbortException(
                    instance_uuid=instance.uuid, reason='injected failure')
            return real_spawn(driver, context, instance, *args, **kwargs)

        with fixtures.MonkeyPatch('nova.virt.fake.FakeDriver.spawn', spawn):
            out, after, statuses = self.round(110)
        self.assertEqual('rolled-back', out.action, out.reason)
        self.assertIn('injected failure', out.reason)
        self.assertEqual(2, len(seen))
        # The old set is intact, both new servers (ACTIVE and ERROR) gone.
        self.assertEqual({'as.1': 1}, after)
        self.assertEqual(['ACTIVE'], statuses)
        self.assertIn('up', [e[0] for e in self.events])
        self.assertEqual('rolled-back', self.events[-2][0])
        self.assertEqual(1, len(self.all_servers()))
        # Without the failure the next round completes the repacking.
        out, after, statuses = self.round(110)
        self.assertEqual(('reconfigured', {'as.4': 2}), (out.action, after))
        self.assertEqual(['ACTIVE', 'ACTIVE'], statuses)

    # -- spot market prices ----------------------------------------------

    def market(self):
        """The real opie-market API (noauth) on a sqlite store, reachable
        at :data:`MARKET_ENDPOINT` through wsgi-intercept; the store.
        """
        state = self.useFixture(fixtures.TempDir()).path
        store = market_db.MarketStore(
            'sqlite:///' + os.path.join(state, 'market.sqlite'))
        store.sync()
        self.addCleanup(store.dispose)
        conf = cfg.ConfigOpts()
        market_opts.register_opts(conf)
        conf([], project='opie_sched')
        conf.set_override('api_auth_strategy', 'noauth',
                          group=market_opts.GROUP)
        api = market_api.build_app(
            conf, store=store,
            cloud=market_engine.Cloud(self.conn, 'hypervisors'),
            enforcer=market_policy.enforcer(conf))
        intercept = interceptor.RequestsInterceptor(lambda: api,
                                                    url=MARKET_ENDPOINT)
        intercept.install_intercept()
        self.addCleanup(intercept.uninstall_intercept)
        return store

    @staticmethod
    def publish(store, period_start, vcpus, memory_mb):
        """Record a period's prices (currency per unit-hour) as the
        market engine does.
        """
        store.create_period(period_start, HOUR, 'test', [], {'default': {
            'prices': {'vcpus': Decimal(vcpus),
                       'memory_mb': Decimal(memory_mb)},
            'capacity': {'vcpus': Decimal(16),
                         'memory_mb': Decimal(32000)},
            'bids': {'vcpus': Decimal(0), 'memory_mb': Decimal(0)}}})

    def test_spot_price_rise_moves_the_mix_off_preemptible(self):
        store = self.market()
        image = next(iter(self.conn.image.images()))
        # medium.preemptible has no price of its own: the market's.
        self.service.applications = [app_mod.parse_application({
            'name': 'web', 'server_group': 'web', 'image': image.id,
            'networks': 'none',
            'flavors': {'as.2': {'capacity': 25, 'price': 1.6},
                        'medium.preemptible': {'capacity': 25}},
            'demand': {'source': 'file', 'path': self.demand_file},
            'market_url': MARKET_ENDPOINT + '/v1'})]
        # No prices published yet: nothing is booted.
        out, after, _ = self.round(20)
        self.assertEqual(('kept', {}), (out.action, after))
        self.assertIn('has published no prices yet', out.reason)
        # 2 vCPU x 0.25 + 4000 MB x 0.0001 = 0.9/h < as.2's 1.6/h.
        self.publish(store, T0, '0.25', '0.0001')
        with fixtures.FakeLogger(name='opie_sched.services.autoscaler') as log:
            out, after, _ = self.round(20)
        self.assertEqual(('reconfigured', {'medium.preemptible': 1}),
                         (out.action, after))
        self.assertIn('spot prices: medium.preemptible 0.9/h (market %s/v1 '
                      'pool default period %s)' % (
                          MARKET_ENDPOINT, market_engine.iso(T0)),
                      log.output)
        # The spot price rises to 2 x 1.0 + 0.4 = 2.4/h: repacked onto
        # as.2, make-before-break.
        self.publish(store, T0 + HOUR, '1.0', '0.0001')
        with fixtures.FakeLogger(name='opie_sched.services.autoscaler') as log:
            out, after, _ = self.round(20)
        self.assertEqual(('reconfigured', {'as.2': 1}), (out.action, after))
        self.assertTrue(out.plan['repack'])
        self.assertAlmostEqual(0.8, out.saving_per_hour)
        self.assertIn('price 2.4/h -> 1.6/h', log.output)
        self.assertEqual(['up', 'deleted', 'round'],
                         [e[0] for e in self.events])
