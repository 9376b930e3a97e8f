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
"""Tests of the market engine's periods and its leader election
(opie_sched.services.market.engine; no Nova: a fake cloud stands in for
openstacksdk)."""

import dataclasses

import fixtures
from oslo_config import cfg
import testtools

from opie_sched.common import flavors
from opie_sched.market import budget
from opie_sched.services.market.db import models
from opie_sched.services.market import engine
from opie_sched.services.market import opts

from tests.unit.services.market.helpers import D
from tests.unit.services.market.helpers import FakeCloud
from tests.unit.services.market.helpers import HOUR
from tests.unit.services.market.helpers import new_store
from tests.unit.services.market.helpers import RecordingNotifier
from tests.unit.services.market.helpers import SMALL
from tests.unit.services.market.helpers import sqlite_url
from tests.unit.services.market.helpers import T0


# -- the engine --------------------------------------------------------------

class EngineTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.url = sqlite_url(self)
        self.store = new_store(self.url)
        self.cloud = FakeCloud()
        self.notifier = RecordingNotifier()
        self.settings = engine.Settings(period_seconds=HOUR,
                                        notice_period=600,
                                        initial_credit=D(100),
                                        bid_cap=D(50))

    def engine(self, store=None, **kw):
        settings = dataclasses.replace(self.settings, **kw)
        return engine.MarketEngine(store or self.store, self.cloud, settings,
                                   notifier=self.notifier)

    def charges(self, project, store=None):
        return {e.key.server: -e.amount
                for e in (store or self.store).entries(project)
                if e.key.kind == 'charge'}

    def test_idle_pool_is_priced_at_the_reserve(self):
        # 3 servers x 2 vCPU of 16: no contention -> the reserve price,
        # nobody out of bid, each pays the reserve cost of its flavor.
        for i, bid in enumerate((1, 2, 3)):
            self.cloud.add('s%d' % i, 'pA', bid)
        report = self.engine(reserve_prices={'vcpus': D('0.01')}).tick(T0)
        self.assertEqual([], report.errors)
        self.assertEqual({'default': {'vcpus': D('0.01'),
                                      'memory_mb': D(0)}}, report.prices)
        self.assertEqual([], report.notices)
        self.assertEqual({'s0': D('0.02'), 's1': D('0.02'),
                          's2': D('0.02')}, self.charges('pA'))

    def test_prices_clear_the_market_and_charges_once_per_period(self):
        self.cloud = FakeCloud(SMALL)
        for i, bid in enumerate((1, 2, 3, 4, 5)):
            self.cloud.add('s%d' % i, 'pA', bid, created=i)
        self.cloud.add('normal', 'pA', 9, preemptible=False)
        eng = self.engine()
        report = eng.tick(T0 + 10)
        self.assertEqual([], report.errors)
        # 10 vCPU asked of 8. Bids split half/half; vCPU bids .5 .. 2.5:
        # eq. 1 gives 7.5 / 8; s3 and s4 reach their 2 vCPU and then s2 at
        # 3 / 4: the last 2 vCPU go to s0 and s1 at p* = 1.5 / 2 = 0.75
        # per vCPU-hour (memory: 0.75 / 2000 per MB-hour).
        self.assertEqual({'default': {'vcpus': D('0.75'),
                                      'memory_mb': D('0.000375')}},
                         report.prices)
        shares = {u: p.shares['vcpus'] for u, p in
                  report.markets['default'].positions.items()}
        self.assertEqual([D(2)] * 3, [shares['s2'], shares['s3'],
                                      shares['s4']])
        close = self.assertAlmostEqual
        close(2 / 3, float(shares['s0']))
        close(4 / 3, float(shares['s1']))
        again = eng.tick(T0 + 20)
        self.assertTrue(again.replayed)
        # what the share costs: s0, s1 their bids; the capped ones
        # 0.75 * 2 + 0.000375 * 4000 = 3
        self.assertEqual({'s0': D(1), 's1': D(2), 's2': D(3), 's3': D(3),
                          's4': D(3)}, self.charges('pA'))
        self.assertEqual(D(88), self.store.get_account('pA').balance)
        # only s0 must go: without it 8 vCPU are asked of 8
        self.assertEqual(['s0'], report.notices)
        self.assertEqual([engine.EVENT_PRICE_UPDATE, engine.EVENT_NOTICE],
                         [e for e, _ in self.notifier.sent])
        self.assertEqual(report.shares['s0'].host, 'h1')

    def test_invalid_bids_never_change_a_price(self):
        self.cloud = FakeCloud(SMALL)
        self.cloud.add('good', 'pA', 2)
        for i, bad in enumerate(('-1', 'NaN', 'abc', '51')):
            self.cloud.add('bad%d' % i, 'pB', bad)
        with fixtures.FakeLogger() as log:
            report = self.engine().tick(T0)
        # 10 vCPU asked of 8, but only 'good' bids: it gets its flavor
        # and nobody else bids, so the price is the reserve (0).
        self.assertEqual({'default': {'vcpus': D(0), 'memory_mb': D(0)}},
                         report.prices)
        self.assertEqual({'bad0', 'bad1', 'bad2', 'bad3'},
                         set(report.rejected))
        self.assertIn('must not be negative', report.rejected['bad0'])
        self.assertIn('above the largest accepted bid 50',
                      report.rejected['bad3'])
        self.assertIn('bid rejected, not priced', log.output)
        # they still hold resources: they count as bidding 0 and share
        # the 6 vCPU left as equal bidders -- 1.5 of 2 each -- so the one
        # first in preemption order goes (never more than needed).
        self.assertEqual(['bad0'], report.notices)
        notice = self.cloud.by_uuid['bad0'].metadata[engine.NOTICE_KEY]
        self.assertIn('invalid bid', notice)

    def test_lowest_bidder_noticed_then_preempted(self):
        self.cloud = FakeCloud(SMALL)
        for i, bid in enumerate((1, 2, 3, 3)):
            self.cloud.add('s%d' % i, 'pA', bid, created=i)
        eng = self.engine()
        # the pool is full, not contended: nobody is out of bid
        report = eng.tick(T0)
        self.assertEqual([], report.notices)
        self.assertEqual({'vcpus': D(0), 'memory_mb': D(0)},
                         report.prices['default'])
        self.cloud.add('t0', 'pB', 2, host='h2', created=9)
        report = eng.tick(T0 + HOUR)
        # 10 vCPU asked of 8: s0, s1 and t0 get less than 2 vCPU, but
        # without s0 (the lowest bid) everybody fits: only s0 is noticed.
        self.assertTrue(all(report.markets['default'].positions[u]
                            .out_of_bid for u in ('s0', 's1', 't0')))
        self.assertEqual(['s0'], report.notices)
        meta = self.cloud.by_uuid['s0'].metadata
        self.assertIn('out of bid', meta[engine.NOTICE_KEY])
        self.assertIn('contended', meta[engine.NOTICE_KEY])
        self.assertEqual(engine.iso(T0 + HOUR + 600),
                         meta[engine.DEADLINE_KEY])
        self.assertEqual([], eng.tick(T0 + HOUR + 599).preempted)
        report = eng.tick(T0 + HOUR + 600)
        self.assertEqual(['s0'], report.preempted)
        self.assertEqual([('s0', 'delete')], self.cloud.terminated)
        self.assertEqual([], eng.tick(T0 + HOUR + 700).preempted)
        events = [e for e, _ in self.notifier.sent]
        self.assertIn(engine.EVENT_NOTICE, events)
        self.assertIn(engine.EVENT_PREEMPTED, events)

    def contended(self):
        self.cloud = FakeCloud(SMALL)
        for i, bid in enumerate((1, 2, 3, 2, 3)):
            self.cloud.add('s%d' % i, 'pA', bid, created=i)

    def test_raising_the_bid_cancels_the_notice(self):
        self.contended()
        eng = self.engine(preemption_action='stop')
        self.assertEqual(['s0'], eng.tick(T0).notices)
        self.cloud.set_metadata('s0', {'opie:bid': '5'})
        report = eng.tick(T0 + 600)
        # with 5 s0 is no longer the lowest: s1 (bid 2, oldest) would be,
        # but the notice was s0's; s0 is spared
        self.assertEqual(([], ['s0']), (report.preempted, report.cancelled))
        self.assertNotIn(engine.NOTICE_KEY,
                         self.cloud.by_uuid['s0'].metadata)

    def test_a_stopped_victim_is_deleted_after_the_grace_period(self):
        # issue 31: one meaning of stop, the scheduler's: stopped at the
        # deadline, deleted after stop_grace_period (a stopped server
        # keeps its host)
        self.contended()
        eng = self.engine(preemption_action='stop', stop_grace_period=60)
        self.assertEqual(['s0'], eng.tick(T0).notices)
        self.assertEqual(['s0'], eng.tick(T0 + 600).preempted)
        self.assertEqual('SHUTOFF', self.cloud.by_uuid['s0'].status)
        self.assertEqual(engine.PREEMPTED_BY, self.cloud.by_uuid[
            's0'].metadata[engine.PREEMPTED_BY_KEY])
        self.assertEqual({engine.PREEMPTED_TAG}, self.cloud.tags['s0'])
        eng.tick(T0 + 659)  # within the grace period: kept
        self.assertEqual([('s0', 'stop')], self.cloud.terminated)
        eng.tick(T0 + 660)
        self.assertEqual([('s0', 'stop'), ('s0', 'delete')],
                         self.cloud.terminated)
        self.assertNotIn('s0', self.cloud.by_uuid)
        # gone: the notice is closed, nothing more is sent
        eng.tick(T0 + 720)
        eng.tick(T0 + 780)
        self.assertEqual(2, len(self.cloud.terminated))
        self.assertEqual([(models.GONE, 'stop')], [
            (n['state'], n['action']) for n in self.store.notices()
            if n['server_uuid'] == 's0'])

    def test_a_stopped_victim_resized_to_normal_is_spared(self):
        self.contended()
        eng = self.engine(preemption_action='stop', stop_grace_period=60)
        eng.tick(T0)
        self.assertEqual(['s0'], eng.tick(T0 + 600).preempted)
        self.cloud._replace('s0', extra_specs={})  # a normal flavor now
        report = eng.tick(T0 + 700)
        self.assertIn('s0', report.cancelled)
        self.assertEqual([('s0', 'stop')], self.cloud.terminated)
        eng.tick(T0 + 800)
        self.assertEqual([('s0', 'stop')], self.cloud.terminated)

    def test_a_stopped_victim_restarted_is_back_in_the_market(self):
        self.contended()
        eng = self.engine(preemption_action='stop', stop_grace_period=60)
        eng.tick(T0)
        self.assertEqual(['s0'], eng.tick(T0 + 600).preempted)
        self.cloud._replace('s0', status='ACTIVE')  # the owner starts it
        report = eng.tick(T0 + 700)
        self.assertIn('s0', report.cancelled)
        self.assertEqual([('s0', 'stop')], self.cloud.terminated)
        # charged and priced again, noticed again as it is still out of bid
        report = eng.tick(T0 + HOUR)
        self.assertIn('s0', {srv.uuid for srv in report.servers})
        self.assertEqual(['s0'], report.notices)

    def test_shelve_refused_falls_back_to_delete(self):
        # issue 30 hole 3 in the market: a rescued server cannot be
        # shelved; the fallback (delete) frees its host at once
        self.contended()
        specs = dict(self.cloud.by_uuid['s0'].extra_specs,
                     **{engine.BEHAVIOR_SPEC: 'shelve'})
        self.cloud._replace('s0', extra_specs=specs, status='RESCUE')
        eng = self.engine()
        self.assertEqual(['s0'], eng.tick(T0).notices)
        self.assertIn('(delete)', self.cloud.by_uuid['s0'].metadata[
            engine.NOTICE_KEY])
        self.assertEqual(['s0'], eng.tick(T0 + 600).preempted)
        self.assertEqual([('s0', 'delete')], self.cloud.terminated)

    def test_shelve_refused_by_nova_falls_back_to_delete(self):
        # the state changed after it was read: Nova's 409
        self.contended()
        specs = dict(self.cloud.by_uuid['s0'].extra_specs,
                     **{engine.BEHAVIOR_SPEC: 'shelve'})
        self.cloud._replace('s0', extra_specs=specs)
        self.cloud.refuse = {'shelve'}
        eng = self.engine()
        eng.tick(T0)
        self.assertEqual(['s0'], eng.tick(T0 + 600).preempted)
        self.assertEqual([('s0', 'delete')], self.cloud.terminated)
        self.assertEqual('delete', [n for n in self.store.notices()
                                    if n['server_uuid'] == 's0'][0]['action'])

    def test_out_of_credit_project_is_preempted(self):
        self.cloud = FakeCloud(SMALL)
        self.cloud.add('rich', 'pA', 6, vcpus=4, ram=8000)
        self.cloud.add('poor1', 'pB', 2, created=1)
        self.cloud.add('poor2', 'pB', 2, created=2)
        self.cloud.add('poor3', 'pB', 1, created=3)
        budget.CreditManager(self.store).open_account('pB', D('0.9'))
        eng = self.engine()
        report = eng.tick(T0)
        # 10 vCPU asked of 8: rich gets its 4 at 6/8 ... the vCPU market
        # clears at p* = 2.5 / 4 with poor1 and poor2 at 1.6 vCPU, poor3
        # at 0.8; each pays its bid: 0.9 - 5 = -4.1
        self.assertEqual(D('-4.1'), self.store.get_account('pB').balance)
        self.assertIn('poor3', report.notices)  # out of bid
        self.assertEqual({'poor1', 'poor2', 'poor3'}, set(report.notices))
        self.assertIn('out of credit',
                      self.cloud.by_uuid['poor1'].metadata[
                          engine.NOTICE_KEY])
        # a credit before the deadline saves a server of the notice...
        budget.CreditManager(self.store).credit('pB', D('6.1'), T0 + 1)
        report = eng.tick(T0 + 600)
        # ...balance 2 pays the next period of one server: poor3 goes (out
        # of bid, lowest), then poor1 (out of credit, lowest bid, oldest
        # first), poor2 stays.
        self.assertEqual(['poor3', 'poor1'], report.preempted)
        self.assertEqual(['poor2'], report.cancelled)
        self.assertIn('rich', self.cloud.by_uuid)

    def test_crash_mid_period_loses_and_repeats_nothing(self):
        self.cloud = FakeCloud(SMALL)
        for i, bid in enumerate((1, 2, 3, 4, 5)):
            self.cloud.add('s%d' % i, 'pA', bid)
        calls = []
        real = budget.CreditManager.charge

        def crash_on_second(manager, *args, **kwargs):
            calls.append(args)
            if len(calls) == 2:
                raise RuntimeError('power cut')
            return real(manager, *args, **kwargs)

        with fixtures.MonkeyPatch(
                'opie_sched.market.budget.CreditManager.charge',
                crash_on_second):
            report = self.engine().tick(T0 + 5)
        self.assertEqual(['settle: power cut'], report.errors)
        self.assertEqual(models.PRICED, self.store.get_period(T0)['state'])
        # the server charged last goes away during the crash; bids change
        del self.cloud.by_uuid['s4']
        self.cloud.set_metadata('s0', {'opie:bid': '9'})
        # a fresh process: new store object, new engine
        restarted = new_store(self.url)
        report = self.engine(store=restarted).tick(T0 + 30)
        self.assertEqual([], report.errors)
        self.assertTrue(report.replayed)
        self.assertEqual(models.DONE, restarted.get_period(T0)['state'])
        # charged from the recorded snapshot and prices, once each
        self.assertEqual({'s0': D(1), 's1': D(2), 's2': D(3), 's3': D(3),
                          's4': D(3)}, self.charges('pA', restarted))
        self.assertEqual(D(88), restarted.get_account('pA').balance)
        self.assertEqual(2, len(restarted.price_history()))

    def refused(self, uuid, project, bid, created, vcpus=2, ram=4000):
        self.cloud.add(uuid, project, bid, host=None, vcpus=vcpus, ram=ram,
                       created=created)
        self.cloud._replace(uuid, status='ERROR', fault=(
            'No valid host was found. There are not enough hosts '
            'available.'))

    def test_refused_boots_raise_the_price_and_outbid_the_lowest(self):
        # issue 23: four 2 vCPU servers fill the 8 vCPU pool (Placement
        # admits no more): at the reserve. Two boots Nova refused,
        # bidding 4, are demand the price must ration: the price rises
        # and the lowest bids per unit get notice; the refused boots are
        # neither charged nor noticed.
        self.cloud = FakeCloud(SMALL)
        for i, bid in enumerate((1, 2, 3, 3)):
            self.cloud.add('s%d' % i, 'pA', bid, created=i)
        reserve = {'vcpus': D('0.01')}
        eng = self.engine(reserve_prices=reserve)
        calm = eng.tick(T0)
        self.assertEqual(D('0.01'), calm.prices['default']['vcpus'])
        self.assertEqual([], calm.notices)
        self.refused('r1', 'pB', 4, created=T0 + HOUR - 60)
        self.refused('r2', 'pB', 4, created=T0 + HOUR - 50)
        # refused before the window (2 periods + the notice period):
        # forgotten demand
        self.refused('old', 'pB', 40, created=T0 - 2 * HOUR)
        report = eng.tick(T0 + HOUR)
        self.assertEqual([], report.errors)
        self.assertGreater(report.prices['default']['vcpus'], D('0.01'))
        self.assertEqual(['s0', 's1'], sorted(report.notices))
        charged = self.charges('pA')
        self.assertNotIn('r1', charged)
        self.assertEqual({}, self.charges('pB'))
        self.assertEqual({'s0', 's1', 's2', 's3'},
                         {srv.uuid for srv in report.servers})
        rows = {r['server_uuid']: r['bid_source']
                for r in self.store.period_servers(T0 + HOUR)}
        self.assertEqual('refused', rows['r1'])
        self.assertNotIn('old', rows)
        # the refused boots are deleted: the demand is gone, the notices
        # are withdrawn at the deadline
        del self.cloud.by_uuid['r1'], self.cloud.by_uuid['r2']
        report = eng.tick(T0 + 2 * HOUR)
        self.assertEqual(D('0.01'), report.prices['default']['vcpus'])
        self.assertEqual([], self.cloud.terminated)

    def test_unbacked_refused_bids_are_not_demand(self):
        # a refused boot costs nothing: its bid counts only when its
        # project's balance could pay it for a period
        self.cloud = FakeCloud(SMALL)
        for i, bid in enumerate((1, 2, 3, 3)):
            self.cloud.add('s%d' % i, 'pA', bid, created=i)
        self.refused('r1', 'pB', 40, created=T0 - 10)
        eng = self.engine(initial_credit=D(0))
        eng.credit.open_account('pA', D(1000))
        self.assertEqual([], eng.tick(T0).notices)
        eng.credit.open_account('pB', D(39))
        self.assertEqual([], eng.tick(T0 + HOUR).notices)
        eng.credit.credit('pB', D(1), T0 + HOUR, 'enough now')
        self.assertEqual(['s0'], eng.tick(T0 + 2 * HOUR).notices)

    def test_refused_demand_window_zero_ignores_refused_boots(self):
        self.cloud = FakeCloud(SMALL)
        for i, bid in enumerate((1, 2, 3, 3)):
            self.cloud.add('s%d' % i, 'pA', bid, created=i)
        self.refused('r1', 'pB', 4, created=T0 - 1)
        report = self.engine(refused_demand_window=0).tick(T0)
        self.assertEqual([], report.notices)

    def test_verify_resize_is_charged_and_enforced(self):
        # issue 23: a preemptible resize left in VERIFY_RESIZE was never
        # charged and its notice never enforced.
        self.contended()
        self.cloud._replace('s0', status='VERIFY_RESIZE')
        eng = self.engine()
        report = eng.tick(T0)
        self.assertIn('s0', {srv.uuid for srv in report.servers})
        self.assertIn('s0', self.charges('pA'))
        self.assertEqual(['s0'], report.notices)
        # past the deadline: the resize is confirmed (Nova refuses the
        # preemption marks in vm_state resized), then it is preempted
        report = eng.tick(T0 + 600)
        self.assertEqual(([], ['s0']), (report.preempted,
                                        self.cloud.confirmed))
        self.cloud._replace('s0', status='ACTIVE')
        report = eng.tick(T0 + 610)
        self.assertEqual(['s0'], report.preempted)
        self.assertEqual([('s0', 'delete')], self.cloud.terminated)

    def test_verify_resize_confirmed_then_stopped(self):
        self.contended()
        self.cloud._replace('s0', status='VERIFY_RESIZE')
        eng = self.engine(preemption_action='stop')
        self.assertEqual(['s0'], eng.tick(T0).notices)
        report = eng.tick(T0 + 600)
        self.assertEqual(([], ['s0']), (report.preempted,
                                        self.cloud.confirmed))
        self.cloud._replace('s0', status='ACTIVE')
        report = eng.tick(T0 + 610)
        self.assertEqual([('s0', 'stop')], self.cloud.terminated)

    def test_flavor_chooses_the_interruption_behaviour(self):
        # issue 23: per server (its flavor), what happens at the deadline;
        # the notice the guest reads says which
        self.contended()
        specs = dict(self.cloud.by_uuid['s0'].extra_specs,
                     **{engine.BEHAVIOR_SPEC: 'shelve'})
        self.cloud._replace('s0', extra_specs=specs)
        eng = self.engine()
        self.assertEqual(['s0'], eng.tick(T0).notices)
        self.assertIn('(shelve)', self.cloud.by_uuid['s0'].metadata[
            engine.NOTICE_KEY])
        self.assertEqual('shelve', self.notifier.sent[-1][1][
            'opie_object.data']['action'])
        report = eng.tick(T0 + 600)
        self.assertEqual(['s0'], report.preempted)
        self.assertEqual([('s0', 'shelve')], self.cloud.terminated)
        # a malformed value falls back to preemption_action
        self.assertEqual('stop', self.engine(
            preemption_action='stop').enforcer.behavior(dataclasses.replace(
                self.cloud.by_uuid['s1'], extra_specs={
                    engine.BEHAVIOR_SPEC: 'explode'})))

    def test_charge_rule_bid_charges_the_bid(self):
        self.cloud = FakeCloud(SMALL)
        for i, bid in enumerate((1, 2, 3, 4, 5)):
            self.cloud.add('s%d' % i, 'pA', bid, created=i)
        self.engine(charge_rule='bid').tick(T0 + 10)
        # share cost would be 1, 2, 3, 3, 3 (see above); the papers' rule
        # bills every bid
        self.assertEqual({'s0': D(1), 's1': D(2), 's2': D(3), 's3': D(4),
                          's4': D(5)}, self.charges('pA'))

    def test_resized_to_a_normal_flavor_leaves_the_market(self):
        # issue 10 item 6: a noticed server resized to a normal flavor
        # during its notice period is never deleted by the market.
        self.contended()
        eng = self.engine()
        self.assertEqual(['s0'], eng.tick(T0).notices)
        normal = {'hw:cpu_policy': 'shared'}
        # the resize is in progress: the market waits
        self.cloud._replace('s0', status='RESIZE', task_state='resize_prep')
        report = eng.tick(T0 + 600)
        self.assertEqual(([], []), (report.preempted, report.cancelled))
        # resized, waiting for confirmation, on a normal flavor
        self.cloud._replace('s0', status='VERIFY_RESIZE', task_state=None,
                            extra_specs=normal)
        report = eng.tick(T0 + 610)
        self.assertEqual(([], []), (report.preempted, report.cancelled))
        # past its deadline: the market confirms the resize (it could
        # otherwise wait for ever, holding both flavors, charged for none)
        self.assertEqual(['s0'], self.cloud.confirmed)
        self.cloud._replace('s0', status='ACTIVE')
        report = eng.tick(T0 + 620)
        self.assertEqual(([], ['s0']), (report.preempted, report.cancelled))
        self.assertEqual([], self.cloud.terminated)
        self.assertNotIn(engine.NOTICE_KEY,
                         self.cloud.by_uuid['s0'].metadata)
        # no more charges: the next period does not see it
        report = eng.tick(T0 + HOUR)
        self.assertNotIn('s0', {srv.uuid for srv in report.servers})
        self.assertEqual([T0], [e.key.period_start for e in
                                self.store.entries('pA')
                                if e.key.server == 's0'])

    def test_notice_withdrawn_at_the_next_period_after_a_resize(self):
        self.contended()
        eng = self.engine(notice_period=3 * HOUR)
        self.assertEqual(['s0'], eng.tick(T0).notices)
        self.cloud._replace('s0', extra_specs={})
        report = eng.tick(T0 + HOUR)
        self.assertEqual(['s0'], report.cancelled)
        self.assertNotIn(engine.NOTICE_KEY,
                         self.cloud.by_uuid['s0'].metadata)

    def test_enforcement_rechecks_just_before_acting(self):
        # the server is resized to a normal flavor between the first check
        # and the action: it is spared and its notice withdrawn.
        self.contended()
        eng = self.engine()
        self.assertEqual(['s0'], eng.tick(T0).notices)
        real = self.cloud.get_server
        reads = []

        def get_server(uuid):
            reads.append(uuid)
            if len(reads) == 2:
                self.cloud._replace(uuid, extra_specs={})
            return real(uuid)

        self.cloud.get_server = get_server
        report = eng.tick(T0 + 600)
        self.assertEqual(['s0', 's0'], reads)
        self.assertEqual(([], ['s0']), (report.preempted, report.cancelled))
        self.assertEqual([], self.cloud.terminated)
        self.assertEqual(models.CANCELLED,
                         self.store.notices()[0]['state'])

    def test_a_failing_cloud_is_logged_and_retried(self):
        self.cloud.add('s0', 'pA', 1)
        self.cloud.fail_listing = True
        eng = self.engine()
        report = eng.tick(T0)
        self.assertEqual(['settle: nova API down'], report.errors)
        self.assertIsNone(self.store.get_period(T0))
        self.cloud.fail_listing = False
        self.assertEqual(models.DONE, eng.tick(T0 + 60).state)

    def test_tracker_learns_demand_and_stands_in_for_nova(self):
        tracker = engine.DemandTracker()
        flavor = {'nova_object.data': {
            'vcpus': 2, 'memory_mb': 4000,
            'extra_specs': flavors.preemptible_extra_specs(2, 4000, 40)}}
        payload = {'nova_object.data': {
            'uuid': 'n1', 'tenant_id': 'pA', 'state': 'active',
            'host': 'h1', 'flavor': flavor, 'metadata': {'opie:bid': '1'},
            'created_at': '2026-11-22T00:00:00Z'}}
        self.assertTrue(tracker.apply('instance.create.end', payload))
        self.assertEqual(['n1'], [s.uuid for s in tracker.servers()])
        self.assertTrue(tracker.apply('instance.delete.end', payload))
        self.assertFalse(tracker.apply('compute.exception', payload))
        eng = engine.MarketEngine(self.store, self.cloud, self.settings,
                                  tracker=tracker)
        self.cloud.add('s0', 'pA', 1)
        eng.tick(T0)  # reconciles the tracker with Nova's list
        self.assertEqual(['s0'], [s.uuid for s in tracker.servers()])
        tracker.apply('instance.create.end', payload)
        self.cloud.fail_listing = True
        report = eng.tick(T0 + HOUR)
        self.assertEqual([], report.errors)
        self.assertEqual({'s0', 'n1'}, {s.uuid for s in report.servers})

    def test_tracker_keeps_refused_boots(self):
        # instance.create.error with NoValidHost: refused demand, priced
        # even when Nova's API cannot be listed
        tracker = engine.DemandTracker()
        flavor = {'nova_object.data': {
            'vcpus': 2, 'memory_mb': 4000,
            'extra_specs': flavors.preemptible_extra_specs(2, 4000, 40)}}
        payload = {'nova_object.data': {
            'uuid': 'r1', 'tenant_id': 'pB', 'state': 'error',
            'host': None, 'flavor': flavor, 'metadata': {'opie:bid': '9'},
            'created_at': engine.iso(T0 - 10),
            'fault': {'nova_object.data': {
                'exception': 'NoValidHost',
                'exception_message': 'No valid host was found. '}}}}
        self.assertTrue(tracker.apply('instance.create.error', payload))
        [info] = tracker.servers()
        self.assertTrue(info.refused)
        self.cloud = FakeCloud(SMALL)
        for i, bid in enumerate((1, 2, 3, 3)):
            self.cloud.add('s%d' % i, 'pA', bid, created=i)
        eng = engine.MarketEngine(self.store, self.cloud, self.settings,
                                  tracker=tracker)
        tracker.reconcile(list(self.cloud.by_uuid.values()) + [info],
                          T0 - 60)
        self.cloud.fail_listing = True
        report = eng.tick(T0)
        self.assertEqual([], report.errors)
        self.assertEqual(['s0'], report.notices)

    def test_settings_from_conf_and_bad_values(self):
        conf = cfg.ConfigOpts()
        opts.register_opts(conf)
        conf([])
        conf.set_override('reserve_prices', {'vcpus': '0.01'},
                          'opie_market')
        settings = engine.Settings.from_conf(conf.opie_market)
        self.assertEqual({'vcpus': D('0.01')}, settings.reserve_prices)
        conf.set_override('default_bid', '-1', 'opie_market')
        self.assertRaisesRegex(engine.ConfigError, 'default_bid',
                               engine.Settings.from_conf, conf.opie_market)
        conf.set_override('default_bid', '0', 'opie_market')
        conf.set_override('reserve_prices', {'gpus': '1'}, 'opie_market')
        self.assertRaisesRegex(engine.ConfigError, 'unknown resources gpus',
                               engine.Settings.from_conf, conf.opie_market)
        self.assertEqual([('opie_market', opts.OPTS),
                          ('database', opts.DATABASE_OPTS)],
                         opts.list_opts()[:2])
        self.assertEqual('service_credentials',
                         opts.list_opts()[2][0].name)


class LeaderElectionTest(testtools.TestCase):

    def test_only_the_leader_charges(self):
        url = sqlite_url(self)
        store = new_store(url)
        coord = 'file://' + self.useFixture(fixtures.TempDir()).path
        cloud = FakeCloud()
        cloud.add('s0', 'pA', 1)
        settings = engine.Settings(period_seconds=HOUR, initial_credit=D(5))
        engines = []
        for member in ('replica-a', 'replica-b'):
            leadership = engine.Leadership(coord, member)
            self.addCleanup(leadership.stop)
            engines.append(engine.MarketEngine(
                new_store(url), cloud, settings, leadership=leadership))
        a, b = engines
        reports = [a.tick(T0), b.tick(T0), b.tick(T0 + HOUR),
                   a.tick(T0 + HOUR)]
        self.assertEqual([True, False, False, True],
                         [r.leader for r in reports])
        self.assertEqual(2, len([e for e in store.entries('pA')
                                 if e.key.kind == 'charge']))
        self.assertEqual('replica-a', store.get_period(T0)['owner'])
        # the leader goes away: the other replica takes over
        a.leadership.stop()
        report = b.tick(T0 + 2 * HOUR)
        self.assertTrue(report.leader)
        self.assertEqual('replica-b', store.get_period(T0 + 2 * HOUR)[
            'owner'])
        self.assertEqual(3, len([e for e in store.entries('pA')
                                 if e.key.kind == 'charge']))
