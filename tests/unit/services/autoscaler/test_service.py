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
"""Tests of the autoscaler service's planning and its tooz locking: two
services on one file backend never act on one application at once; with
spot prices (opie_sched.services.autoscaler.service)."""

import os
import threading

import fixtures
import requests
from requests_mock.contrib import fixture as rm_fixture
import testtools

from opie_sched.conf import autoscaler as opts
from opie_sched.services.autoscaler import app as app_mod
from opie_sched.services.autoscaler import service as svc

from tests.unit.services.autoscaler.helpers import app_doc
from tests.unit.services.autoscaler.helpers import FakeConn
from tests.unit.services.autoscaler.helpers import FLAVORS
from tests.unit.services.autoscaler.helpers import make_conf
from tests.unit.services.autoscaler.helpers import make_executor
from tests.unit.services.autoscaler.helpers import MARKET
from tests.unit.services.autoscaler.helpers import market_body
from tests.unit.services.autoscaler.helpers import PRICES_URL
from tests.unit.services.autoscaler.helpers import SPOT_SPECS


class ServiceTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.conn = FakeConn()
        self.demand = os.path.join(self.dir, 'demand')

    def service(self, apps=None, conn=None, **overrides):
        apps = apps or [app_mod.parse_application(app_doc(
            demand={'source': 'file', 'path': self.demand}))]
        conn = conn or self.conn
        s = svc.AutoscalerService(
            make_conf(self.dir, **overrides), conn=conn, applications=apps,
            executor=make_executor(conn))
        s.start()
        self.addCleanup(s.stop)
        return s

    def set_demand(self, value):
        with open(self.demand, 'w') as f:
            f.write(str(value))

    def test_steps_up_and_down(self):
        s = self.service()
        steps = [(10, {'as.1': 1}, 'reconfigured'),
                 (50, {'as.4': 1}, 'reconfigured'),
                 (50, {'as.4': 1}, 'none'),
                 (20, {'as.2': 1}, 'reconfigured'),
                 (35, {'as.1': 1, 'as.2': 1}, 'reconfigured'),
                 (20, {'as.2': 1}, 'reconfigured')]
        for value, want, action in steps:
            self.set_demand(value)
            [out] = s.run_once()
            self.assertEqual(action, out.action, (value, out.reason))
            self.assertEqual(want, s.executor.inventory(
                s.applications[0], app_mod.resolve(
                    s.applications[0], self.conn)).counts)
        self.assertAlmostEqual(1.0, out.saving_per_hour)

    def test_bad_demand_keeps_the_set(self):
        s = self.service()
        self.set_demand(10)
        s.run_once()
        for bad in ('-3', 'many', ''):
            self.set_demand(bad)
            [out] = s.run_once()
            self.assertEqual('kept', out.action)
            self.assertIn('demand unavailable', out.reason)
        os.unlink(self.demand)
        [out] = s.run_once()
        self.assertIn('cannot read', out.reason)
        self.assertEqual(1, len(self.conn.compute.db))

    def test_runaway_demand_is_not_acted_upon(self):
        s = self.service(max_servers=5)
        self.set_demand(10)
        s.run_once()
        self.set_demand(1e12)
        [out] = s.run_once()
        self.assertEqual('kept', out.action)
        self.assertIn('needs more than max_servers=5', out.reason)
        self.set_demand(300)  # 5 x as.4
        [out] = s.run_once()
        self.assertEqual('reconfigured', out.action)
        e = self.assertRaises(app_mod.AppError, app_mod.parse_application,
                              app_doc(max_servers=0))
        self.assertIn('max_servers must be an integer >= 1', str(e))

    def test_bad_parameters_keep_the_set(self):
        s = self.service(stability_interval=0)
        self.set_demand(10)
        [out] = s.run_once()
        self.assertEqual('kept', out.action)
        self.assertIn('d must be positive', out.reason)
        s = self.service(health_url='http://{ip}/')
        [out] = s.run_once()
        self.assertEqual('kept', out.action)
        self.assertIn('bad template', out.reason)
        self.assertEqual([], self.conn.compute.log)

    def test_bad_applications_file_changes_nothing(self):
        path = os.path.join(self.dir, 'apps.yaml')
        with open(path, 'w') as f:
            f.write('applications: [{name: web}]\n')
        s = svc.AutoscalerService(
            make_conf(self.dir, applications_file=path), conn=self.conn)
        s.start()
        self.addCleanup(s.stop)
        [out] = s.run_once()
        self.assertEqual(('*', 'error'), (out.app, out.action))
        self.assertIn('exactly one of server_group and tag', out.reason)
        self.assertEqual([], self.conn.compute.log)

    def test_dry_run(self):
        s = self.service(dry_run=True)
        self.set_demand(50)
        [out] = s.run_once()
        self.assertEqual('dry-run', out.action)
        self.assertEqual({'as.4': 1}, out.target)
        self.assertEqual([], self.conn.compute.log)

    def test_plan_scale_in_is_a_subset(self):
        s = self.service()
        a = s.applications[0]
        types = app_mod.resolve(a, self.conn).types
        # Over-provisioned {as.2 x2, as.1}: scale in to {as.2} for 20,
        # no boot even though K is huge (no repacking).
        s.conf.set_override('gain_threshold', 10, group=opts.GROUP)
        result, target, floor = s.plan(a, types, 20, {'as.2': 2, 'as.1': 1})
        self.assertEqual({'as.2': 1}, target)
        self.assertFalse(result.repack)
        self.assertEqual(20, floor)

    def test_plan_budget_cap(self):
        a = app_mod.parse_application(app_doc(budget=3.2, budget_period=1))
        s = self.service(apps=[a])
        types = app_mod.resolve(a, self.conn).types
        result, target, floor = s.plan(a, types, 200, {})
        self.assertTrue(result.budget_limited)
        self.assertLessEqual(sum(FLAVORS[f]['price'] * n
                                 for f, n in target.items()), 3.2)
        self.assertEqual(60, floor)  # the capped target's capacity

    def test_repack_gain_test_and_log(self):
        s = self.service(repack_time=3600, stability_interval=1)
        self.set_demand(10)
        s.run_once()
        # 20: S_delta's {as.1 x2} (2.0/h) vs {as.2} (1.6/h), which starts
        # an as.2: R = 1.6/h * 1 h, gain 1 - (1.6 + 1.6)/2.0 < K: no
        # repacking, scale out with a second as.1.
        self.set_demand(20)
        with fixtures.FakeLogger(name='opie_sched.services.autoscaler') as log:
            [out] = s.run_once()
        self.assertEqual({'as.1': 2}, out.target)
        self.assertFalse(out.plan['repack'])
        self.assertIn('scale-out for demand 20', log.output)
        self.assertIn('predicted saving -1/h', log.output)
        self.assertIn('gain test: keep: gain -0.6', log.output)
        # With d = 100 h the same repacking pays off.
        s.conf.set_override('stability_interval', 100, group=opts.GROUP)
        with fixtures.FakeLogger(name='opie_sched.services.autoscaler') as log:
            [out] = s.run_once()
        self.assertEqual('reconfigured', out.action)
        self.assertEqual({'as.2': 1}, out.target)
        self.assertAlmostEqual(0.4, out.saving_per_hour)
        self.assertIn('repacking as.1 x2 -> as.2 x1 saves 0.4/h, 38.4 net '
                      'over d=100 h after R=1.6', log.output)

    def test_two_services_one_backend_only_one_acts(self):
        conn = FakeConn()
        a = self.service(conn=conn)
        b = self.service(conn=conn)
        self.assertNotEqual(a.member_id, b.member_id)
        self.set_demand(10)
        inside, release = threading.Event(), threading.Event()
        real_step = a._step

        def slow_step(application):
            inside.set()
            release.wait(10)
            return real_step(application)
        a._step = slow_step
        result = []
        t = threading.Thread(target=lambda: result.extend(a.run_once()))
        t.start()
        self.assertTrue(inside.wait(10))
        [out_b] = b.run_once()
        release.set()
        t.join(10)
        self.assertEqual('locked', out_b.action)
        self.assertEqual('reconfigured', result[0].action)
        self.assertEqual([('create', 'as.1')], conn.compute.log)
        # Lock released: B acts next round (nothing left to do).
        [out_b] = b.run_once()
        self.assertEqual('none', out_b.action)

    def test_lock_names_are_per_application(self):
        self.assertEqual(b'opie-autoscaler.web', svc.lock_name('web'))


class SpotServiceTest(testtools.TestCase):
    """The service on market prices: the mix follows the spot price, and
    every market problem keeps the current set.
    """

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.http = self.useFixture(rm_fixture.Fixture())
        self.http.get(PRICES_URL, json=market_body())
        self.conn = FakeConn(extra_specs=dict(SPOT_SPECS))
        self.demand = os.path.join(self.dir, 'demand')
        with open(self.demand, 'w') as f:
            f.write('20')

    def service(self, names=('web',), **overrides):
        # as.2 (file price 1.6/h) or the preemptible sp.2 (market price),
        # both capacity 25.
        apps = [app_mod.parse_application(app_doc(
            name=name, demand={'source': 'file', 'path': self.demand},
            flavors={'as.2': {'capacity': 25, 'price': 1.6},
                     'sp.2': {'capacity': 25}})) for name in names]
        overrides.setdefault('market_url', MARKET)
        s = svc.AutoscalerService(
            make_conf(self.dir, **overrides), conn=self.conn,
            applications=apps, executor=make_executor(self.conn))
        s.start()
        self.addCleanup(s.stop)
        return s

    def counts(self):
        counts = {}
        for server in self.conn.compute.db.values():
            name = server.flavor['original_name']
            counts[name] = counts.get(name, 0) + 1
        return counts

    def test_mix_follows_the_spot_price(self):
        s = self.service()
        with fixtures.FakeLogger(name='opie_sched.services.autoscaler') as log:
            [out] = s.run_once()
        self.assertEqual(('reconfigured', {'sp.2': 1}),
                         (out.action, self.counts()))
        self.assertIn('spot prices: sp.2 0.9/h (market %s pool default '
                      'period 2026-11-22T10:00:00Z)' % MARKET, log.output)
        # The spot price rises to 2.4/h > 1.6/h: repacked to as.2.
        self.http.get(PRICES_URL, json=market_body(
            vcpus='1', period='2026-11-22T11:00:00Z'))
        with fixtures.FakeLogger(name='opie_sched.services.autoscaler') as log:
            [out] = s.run_once()
        self.assertEqual(('reconfigured', {'as.2': 1}),
                         (out.action, self.counts()))
        self.assertTrue(out.plan['repack'])
        self.assertAlmostEqual(0.8, out.saving_per_hour)
        self.assertIn('price 2.4/h -> 1.6/h', log.output)
        self.assertIn('spot prices: sp.2 2.4/h', log.output)
        self.assertEqual([('create', 'sp.2'), ('create', 'as.2'),
                          ('delete', 'sp.2')], self.conn.compute.log)
        # An application's own pool overrides the option.
        self.assertEqual('gpu', s._param(app_mod.parse_application(
            app_doc(market_pool='gpu')), 'market_pool'))

    def test_fetched_once_per_round_for_all_applications(self):
        s = self.service(names=('web', 'api', 'db'))
        s.run_once()
        self.assertEqual(1, self.http.call_count)
        s.run_once()
        self.assertEqual(2, self.http.call_count)

    def test_market_errors_keep_the_set(self):
        s = self.service()
        s.run_once()
        self.assertEqual({'sp.2': 1}, self.counts())
        log_before = list(self.conn.compute.log)
        with open(self.demand, 'w') as f:
            f.write('50')  # would need a second server
        cases = [
            (dict(exc=requests.ConnectionError('connection refused')),
             'GET %s failed: connection refused' % PRICES_URL),
            (dict(status_code=500, json={'error': {
                'code': 500, 'message': 'the market API failed'}}),
             'answered 500: the market API failed'),
            (dict(text='{"prices": '), 'the answer is not JSON'),
            (dict(json={'prices': 'cheap'}), 'not a prices document'),
            (dict(json=market_body(pool='other')),
             "has no pool 'default' (pools: gpu, other)"),
        ]
        for response, why in cases:
            self.http.get(PRICES_URL, **response)
            with fixtures.FakeLogger(
                    name='opie_sched.services.autoscaler') as log:
                [out] = s.run_once()
            self.assertEqual('kept', out.action, out.reason)
            self.assertTrue(out.reason.startswith(
                'market prices unavailable: flavor sp.2: '), out.reason)
            self.assertIn(why, out.reason)
            self.assertIn('Application web: market prices unavailable: '
                          'flavor sp.2: ', log.output)
            self.assertIn(why, log.output)
            self.assertIn('keeping the current set', log.output)
            self.assertEqual(log_before, self.conn.compute.log)
        # An unknown pool of the application's own.
        self.http.get(PRICES_URL, json=market_body())
        s.applications = [app_mod.parse_application(app_doc(
            demand={'source': 'file', 'path': self.demand},
            flavors={'sp.2': {'capacity': 25}}, market_pool='gpu2'))]
        [out] = s.run_once()
        self.assertEqual('kept', out.action)
        self.assertIn("has no pool 'gpu2'", out.reason)
        # A pool named without any market.
        s.conf.set_override('market_url', None, group=opts.GROUP)
        [out] = s.run_once()
        self.assertEqual('kept', out.action)
        self.assertIn('market_pool gpu2 is given but no market_url',
                      out.reason)
        self.assertEqual(log_before, self.conn.compute.log)
        # A configured market_url that is not an http(s) URL.
        s.conf.set_override('market_url', 'market:8785', group=opts.GROUP)
        [out] = s.run_once()
        self.assertEqual('kept', out.action)
        self.assertIn('market_url must be an http(s) URL', out.reason)
        # The market back: the round acts again.
        s.conf.set_override('market_url', MARKET, group=opts.GROUP)
        s.applications = [app_mod.parse_application(app_doc(
            demand={'source': 'file', 'path': self.demand},
            flavors={'sp.2': {'capacity': 25}}))]
        [out] = s.run_once()
        self.assertEqual(('reconfigured', {'sp.2': 2}),
                         (out.action, self.counts()))

    def test_no_market_url_uses_the_extra_spec(self):
        specs = {n: dict(v, **{'opie:price': '1.0'})
                 for n, v in SPOT_SPECS.items()}
        self.conn = FakeConn(extra_specs=specs)
        s = self.service(market_url=None)
        [out] = s.run_once()
        self.assertEqual({'sp.2': 1}, out.target)
        self.assertEqual(0, self.http.call_count)
        # An application may turn the configured market off.
        s = self.service()
        s.applications = [app_mod.parse_application(app_doc(
            demand={'source': 'file', 'path': self.demand},
            flavors={'sp.2': {'capacity': 25}}, market_url=None))]
        [out] = s.run_once()
        self.assertEqual('none', out.action)
        self.assertEqual(0, self.http.call_count)
