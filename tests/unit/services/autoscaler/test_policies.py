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
"""The autoscaler's SLO policies (opie_sched.services.autoscaler.policies): the
stevedore plugins, their declarations, and a service round that sets bids
through the market's REST API (faked over HTTP with requests_mock) and
scales servers through the (fake) openstacksdk connection.
"""

import json
import os

import fixtures
from requests_mock.contrib import fixture as rm_fixture
import testtools

from opie_sched.services.autoscaler import app as app_mod
from opie_sched.services.autoscaler import policies
from opie_sched.services.autoscaler import service as svc
from tests.unit.services.autoscaler import helpers as ta

MARKET = ta.MARKET
DEADLINE = 1800000000.0       # epoch seconds
NOW = DEADLINE - 10000.0


def slo_doc(slo, **kw):
    doc = ta.app_doc(flavors={'sp.2': {'capacity': 1}}, budget=10.0,
                     market_url=MARKET, slo=slo)
    doc.update(kw)
    return doc


class DeclarationTest(testtools.TestCase):
    """`slo` is checked when the applications file is read."""

    def test_plugins_installed(self):
        self.assertEqual(['merkat-horizontal', 'merkat-vertical',
                          'themis-horizontal-deadline',
                          'themis-vertical-deadline'],
                         policies.policy_names())

    def test_valid(self):
        a = app_mod.parse_application(slo_doc(
            {'policy': 'themis-vertical-deadline',
             'deadline': '2027-01-15T08:00:00Z', 'full_rate': 2}))
        self.assertEqual('themis-vertical-deadline', a.slo['policy'])

    def test_errors(self):
        for bad in ({'policy': 'nope'}, {'deadline': 1},
                    {'policy': 'themis-vertical-deadline', 'full_rate': 1},
                    {'policy': 'themis-vertical-deadline', 'deadline': 'x',
                     'full_rate': 1},
                    {'policy': 'merkat-vertical', 'target': -1},
                    {'policy': 'merkat-vertical', 'target': 1, 'low': 2,
                     'high': 1},
                    {'policy': 'merkat-horizontal', 'low': 1},
                    {'policy': 'merkat-horizontal', 'low': 1, 'high': 2,
                     'extra': 3}):
            e = self.assertRaises(app_mod.AppError,
                                  app_mod.parse_application, slo_doc(bad))
            self.assertIn('slo', str(e))

    def test_parse_time(self):
        self.assertEqual(0.0, policies.parse_time('1970-01-01T00:00:00Z',
                                                  'd'))
        self.assertEqual(3600.0, policies.parse_time(
            '1970-01-01T02:00:00+01:00', 'd'))
        self.assertEqual(5.0, policies.parse_time(5, 'd'))


def ctx(**kw):
    base = dict(now=NOW, metric=100.0, nvms=2,
                flavor={'vcpus': 2.0, 'memory_mb': 4000.0},
                prices={'vcpus': 0.25, 'memory_mb': 0.0001},
                capacity={'vcpus': 96.0, 'memory_mb': 192000.0}, bid=1.0,
                bid_max=10.0, max_servers=20)
    base.update(kw)
    return policies.Context(**base)


class ThemisVerticalDeadlineTest(testtools.TestCase):
    """Initial payment first, then Vertical-Deadline on the measured
    progress.
    """

    def policy(self):
        return policies.load_policy({'policy': 'themis-vertical-deadline',
                                     'deadline': DEADLINE,
                                     'full_rate': 0.02})

    def test_initial_then_behind_raises_the_bid(self):
        p = self.policy()
        # p_ref = 100 / 10000 = 0.01/s = half of full_rate: half the
        # flavor's spot price (2 * 0.25 + 4000 * 0.0001 = 0.9/h).
        d = p.decide(ctx())
        self.assertAlmostEqual(0.45, d.bid)
        self.assertIsNone(d.nvms)
        # 600 s later only 3 units done: p_est 0.005 < p_ref -> raise.
        d = p.decide(ctx(now=NOW + 600, metric=97.0, bid=0.45))
        self.assertGreater(d.bid, 0.45)

    def test_never_above_bid_max_per_server(self):
        p = self.policy()
        p.decide(ctx())
        d = p.decide(ctx(now=NOW + 600, metric=100.0, bid=4.9))
        self.assertLessEqual(d.bid, 10.0 / 2)


class ThemisHorizontalDeadlineTest(testtools.TestCase):

    def test_late_adds_servers_within_budget(self):
        p = policies.load_policy({'policy': 'themis-horizontal-deadline',
                                  'deadline': DEADLINE, 'task_time': 600})
        d = p.decide(ctx(metric=200.0, nvms=2))
        # bid = the flavor's spot price (alloc_ref * P) = 0.9/h; budget
        # 10/h buys 11.
        self.assertAlmostEqual(0.9, d.bid)
        self.assertGreater(d.nvms, 2)
        self.assertLessEqual(d.nvms, 11)


class MerkatPoliciesTest(testtools.TestCase):

    def test_vertical_too_slow_raises_what_is_short(self):
        p = policies.load_policy({'policy': 'merkat-vertical',
                                  'target': 10})
        # The bid splits 0.5/0.5; memory's share is at its maximum (Alg.
        # 1 line 9: the share reaches alloc_max, the bid buys nothing
        # more: halved), the vCPU part doubles.
        d = p.decide(ctx(metric=12.0, bid=1.0,
                         shares={'vcpus': 1.0, 'memory_mb': 4000.0}))
        self.assertAlmostEqual(1.25, d.bid)

    def test_vertical_without_shares_uses_eq1(self):
        p = policies.load_policy({'policy': 'merkat-vertical',
                                  'target': 10})
        # 0.05/h at 0.25 per vCPU-hour is 0.2 vCPU < 2: both double.
        d = p.decide(ctx(metric=12.0, bid=0.1))
        self.assertAlmostEqual(0.2, d.bid)

    def test_vertical_fast_enough_halves_the_bid(self):
        p = policies.load_policy({'policy': 'merkat-vertical',
                                  'target': 10})
        d = p.decide(ctx(metric=5.0, bid=1.0))
        self.assertAlmostEqual(0.5, d.bid)

    def test_horizontal_adds_one_then_alg3_caps(self):
        p = policies.load_policy({'policy': 'merkat-horizontal', 'low': 5,
                                  'high': 50})
        d = p.decide(ctx(metric=80.0, nvms=2))
        self.assertEqual(3, d.nvms)
        d = p.decide(ctx(metric=80.0, nvms=3, bid_max=1.0))
        self.assertEqual(1, d.nvms)
        self.assertLessEqual(d.bid, 1.0 + 1e-9)

    def test_horizontal_needs_the_pool_capacity(self):
        p = policies.load_policy({'policy': 'merkat-horizontal', 'low': 5,
                                  'high': 50})
        self.assertRaises(policies.PolicyError, p.decide,
                          ctx(capacity=None))


class ServiceRoundTest(testtools.TestCase):
    """One autoscaler round of an SLO application against a fake market
    (HTTP) and a fake cloud.
    """

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.http = self.useFixture(rm_fixture.Fixture())
        self.http.get(ta.PRICES_URL, json=ta.market_body())
        self.http.get(MARKET + '/prices/history', json={'history': [
            {'period_start': '2026-11-22T10:00:00Z', 'pool': 'default',
             'resource': r, 'price': '0', 'capacity': c, 'bids': '0',
             'period_seconds': 300}
            for r, c in (('vcpus', '96'), ('memory_mb', '192000'))]})
        # Not admin: the shares are not published to us.
        self.http.get(MARKET + '/shares', status_code=403, json={
            'error': {'code': 403, 'title': 'Forbidden',
                      'message': 'admin only'}})
        self.bids = {}

        def put(request, context):
            sid = request.path.split('/')[-2]
            self.bids[sid] = json.loads(request.body)['bid']
            return {'bid': {'server_id': sid, 'bid': self.bids[sid]}}

        def get(request, context):
            sid = request.path.split('/')[-2]
            return {'bid': {'server_id': sid,
                            'bid': self.bids.get(sid, '0.1')}}
        self.http.put(fixtures_matcher(), json=put)
        self.http.get(fixtures_matcher(), json=get)
        self.set_balance('4')
        self.conn = ta.FakeConn(extra_specs=dict(ta.SPOT_SPECS))
        self.demand = os.path.join(self.dir, 'demand')

    def service(self, slo, **overrides):
        a = app_mod.parse_application(slo_doc(
            slo, demand={'source': 'file', 'path': self.demand}))
        s = svc.AutoscalerService(
            ta.make_conf(self.dir, **overrides), conn=self.conn,
            applications=[a], executor=ta.make_executor(self.conn))
        s.start()
        self.addCleanup(s.stop)
        return s

    def set_balance(self, balance):
        """The project's account in the market's ledger."""
        self.http.get(MARKET + '/account', json={'account': {
            'project_id': 'p', 'balance': balance, 'refill_rate': '0',
            'cap': None, 'notices': []}})

    def test_bid_max_is_the_market_ledger_balance(self):
        # issue 23: one ledger. The controller's budget is what the
        # market's account holds (capped at the application's budget),
        # read every round: not a balance it charged itself the bids.
        self.conn.compute.add('sp.2')
        self.set_metric(20)
        self.set_balance('0.5')
        s = self.service({'policy': 'merkat-vertical', 'target': 10})
        [out] = s.run_once()
        self.assertEqual(0.5, out.plan['bid_max'])
        self.assertEqual({'old-1': '0.2'}, self.bids)
        # a restarted replica reads the same balance
        s2 = self.service({'policy': 'merkat-vertical', 'target': 10})
        [out] = s2.run_once()
        self.assertEqual(0.5, out.plan['bid_max'])
        # the market charged the account: the controller sees it
        self.set_balance('0.05')
        [out] = s2.run_once()
        self.assertEqual(0.05, out.plan['bid_max'])
        self.assertLessEqual(float(self.bids['old-1']), 0.05)
        # no account yet: nothing to spend
        self.http.get(MARKET + '/account', status_code=404, json={
            'error': {'code': 404, 'title': 'Not Found',
                      'message': 'no account'}})
        [out] = s2.run_once()
        self.assertEqual(0.0, out.plan['bid_max'])

    def set_metric(self, value):
        with open(self.demand, 'w') as f:
            f.write(str(value))

    def test_vertical_sets_the_bid_of_every_server(self):
        self.conn.compute.add('sp.2')
        self.conn.compute.add('sp.2')
        self.set_metric(20)
        s = self.service({'policy': 'merkat-vertical', 'target': 10})
        [out] = s.run_once()
        self.assertEqual('bid-set', out.action, out.reason)
        # Too slow (20 > 10): bid 0.1 doubled, written on both servers.
        self.assertEqual({'old-1': '0.2', 'old-2': '0.2'}, self.bids)
        self.assertEqual('merkat-vertical', out.plan['policy'])

    def test_published_shares_are_used(self):
        self.conn.compute.add('sp.2')
        self.set_metric(20)
        # The server holds its whole flavor: Alg. 1 line 9 lowers a bid
        # that cannot buy more (0.1 halved).
        self.http.get(MARKET + '/shares', json={'shares': [
            {'server_id': 'old-1', 'host_shares': {
                'vcpus': '2', 'memory_mb': '4000'}}]})
        s = self.service({'policy': 'merkat-vertical', 'target': 10})
        [out] = s.run_once()
        self.assertEqual({'old-1': '0.05'}, self.bids)

    def test_horizontal_boots_and_bids_the_new_server(self):
        self.conn.compute.add('sp.2')
        self.set_metric(80)
        s = self.service({'policy': 'merkat-horizontal', 'low': 5,
                          'high': 50})
        [out] = s.run_once()
        self.assertEqual('reconfigured', out.action, out.reason)
        self.assertEqual({'sp.2': 2}, out.target)
        self.assertEqual(1, len(out.started))
        self.assertEqual({'old-1'} | set(out.started), set(self.bids))

    def test_dry_run_sets_nothing(self):
        self.conn.compute.add('sp.2')
        self.set_metric(20)
        s = self.service({'policy': 'merkat-vertical', 'target': 10},
                         dry_run=True)
        [out] = s.run_once()
        self.assertEqual({}, self.bids)
        self.assertAlmostEqual(0.2, out.plan['bid'])

    def test_market_down_keeps_everything(self):
        self.conn.compute.add('sp.2')
        self.set_metric(20)
        self.http.get(ta.PRICES_URL, status_code=503)
        s = self.service({'policy': 'merkat-vertical', 'target': 10})
        [out] = s.run_once()
        self.assertEqual('kept', out.action)
        self.assertEqual({}, self.bids)

    def test_needs_a_budget(self):
        a = app_mod.parse_application(slo_doc(
            {'policy': 'merkat-vertical', 'target': 10}, budget=None,
            demand={'source': 'static', 'value': 1}))
        s = svc.AutoscalerService(
            ta.make_conf(self.dir), conn=self.conn, applications=[a],
            executor=ta.make_executor(self.conn))
        s.start()
        self.addCleanup(s.stop)
        [out] = s.run_once()
        self.assertEqual('kept', out.action)
        self.assertIn('budget', out.reason)


def fixtures_matcher():
    import re
    return re.compile(r'^' + re.escape(MARKET) + r'/servers/[^/]+/bid$')
