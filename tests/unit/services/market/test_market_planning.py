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
"""What a spot user can plan with (market microversion 1.2): the
placement score's classification, the interruption history's survival
curve and rates against counts by hand, the durable record of
interruptions (the scheduler's notifications, the market's own), and the
owner's event history through the API.
"""

from decimal import Decimal as D
import os
import tempfile
from unittest import mock
import uuid as uuidlib

import testtools

from opie_sched.notifications import preemption as preempt_notes
from opie_sched.services.market.db import api as db_api
from opie_sched.services.market.db import models
from opie_sched.services.market import engine
from opie_sched.services.market import events
from opie_sched.services.market import osc
from opie_sched.services.market import score
from opie_sched.services.market import survival
from tests.unit.services.market import test_market_api as api_base
from tests.unit.services.market import test_market_service as base

SMALL = (2, 4000, 40)


def host(name, capacity=(8, 16000, 100), normal=(0, 0, 0),
         pre=(0, 0, 0), price=None, running=(), pre_cap=None):
    return score.HostState(name, capacity, normal, pre,
                           pre_cap or capacity, 'az1', price, running)


class ScoreTest(testtools.TestCase):
    """:func:`score.classify` on small hand-made zones."""

    def test_fit_count_is_the_scarcest_resource(self):
        self.assertEqual(3, score.fit_count((7, 16000, 200), SMALL, 10))
        self.assertEqual(2, score.fit_count((7, 16000, 100), SMALL, 10))
        self.assertEqual(2, score.fit_count((8, 9000, 100), SMALL, 10))
        self.assertEqual(0, score.fit_count((-2, 9000, 100), SMALL, 10))
        self.assertEqual(1, score.fit_count((8, 16000, 100), SMALL, 1))

    def test_normal_flavor(self):
        free = [host('a', normal=(4, 8000, 20))]  # room for 2
        self.assertEqual(
            {'status': 'fits_now', 'fit_now': 2, 'fit_preempting': 2,
             'at_bid': None, 'price_per_hour': None},
            score.classify(free, SMALL, 2, False))
        # preemptibles fill the rest: room only in the normal state
        full = [host('a', normal=(4, 8000, 20), pre=(4, 8000, 80),
                     running=(score.Running(D(1), 4, 8000),))]
        result = score.classify(full, SMALL, 2, False)
        self.assertEqual(('preempting', 0, 2),
                         (result['status'], result['fit_now'],
                          result['fit_preempting']))
        self.assertEqual('no_room',
                         score.classify(full, SMALL, 3, False)['status'])

    def test_preemptible_flavor_and_bids(self):
        # two hosts, each 2 vCPU free now; host b has a server bidding
        # 1/h (2 vCPU), host c one bidding 2/h (2 vCPU)
        b = host('b', capacity=(4, 8000, 100), pre=(2, 4000, 40),
                 price=D('1.5'), running=(score.Running(D(1), 2, 4000),))
        c = host('c', capacity=(4, 8000, 100), pre=(2, 4000, 40),
                 price=D('1.5'), running=(score.Running(D(2), 2, 4000),))
        zone = [b, c]
        self.assertEqual('fits_now',
                         score.classify(zone, SMALL, 2, True, D(3))['status'])
        out = score.classify(zone, SMALL, 2, True, D(1))
        self.assertEqual(('out_of_bid', D('1.5')),
                         (out['status'], out['price_per_hour']))
        # 3 fit only once the 1/h server of b is gone: at_bid 1
        three = score.classify(zone, SMALL, 3, True, D(3))
        self.assertEqual(('preempting', D(1), 3),
                         (three['status'], three['at_bid'],
                          three['fit_preempting']))
        # 4 need both gone: above 2/h
        self.assertEqual(D(2), score.classify(zone, SMALL, 4, True,
                                              D(3))['at_bid'])
        # a bid of 2 preempts only cheaper servers (bid < 2): 3 at most
        self.assertEqual('no_room',
                         score.classify(zone, SMALL, 4, True, D(2))['status'])

    def test_preemptible_inventory_bounds_a_preemptible_flavor(self):
        zone = [host('a', pre_cap=(2, 4000, 40))]
        self.assertEqual(1, score.classify(zone, SMALL, 2, True,
                                           D(1))['fit_now'])
        self.assertEqual(2, score.classify(zone, SMALL, 2, False)['fit_now'])

    def test_flavor_needs_and_query(self):
        need, pre = score.flavor_need(
            2, 4000, 40, base.flavors.preemptible_extra_specs(2, 4000, 0))
        self.assertEqual(((2, 4000, 0), True), (need, pre))
        self.assertEqual('CUSTOM_PREEMPTIBLE_VCPU:2,'
                         'CUSTOM_PREEMPTIBLE_MEMORY_MB:4000',
                         score.placement_query(need, pre))
        self.assertEqual('VCPU:2,MEMORY_MB:4000,DISK_GB:40',
                         score.placement_query(*score.flavor_need(
                             2, 4000, 40, {})))
        self.assertEqual(
            {'resources': 'VCPU:1', 'required': '!COMPUTE_X,HW_CPU_X86_AVX2'},
            score.placement_params((1, 0, 0), False, {
                'trait:HW_CPU_X86_AVX2': 'required',
                'trait:COMPUTE_X': 'forbidden', 'trait:Y': 'junk'}))
        states = score.provider_states({
            'rp': api_base.provider_summary((8, 16000, 100), (1, 2, 3),
                                            (4, 5, 6)),
            'bare': {'resources': {'VCPU': {'capacity': 1, 'used': 0}}}})
        self.assertEqual({'rp': ((8, 16000, 100), (1, 2, 3), (4, 5, 6),
                                 (8, 16000, 100))}, states)


HOUR = 3600.0


def life(start_h, end_h, end):
    return {'started_at': start_h * HOUR,
            'ended_at': None if end_h is None else end_h * HOUR,
            'end': end}


#: Seven lives, counted by hand below: interrupted after 1, 3, 3 and 6
#: hours; deleted by their owners after 2 and 5 hours; one still running
#: after 7 hours.
LIVES = [life(0, 1, 'interrupted'), life(0, 2, 'deleted'),
         life(1, 4, 'interrupted'), life(2, 5, 'interrupted'),
         life(0, 5, 'deleted'), life(1, 7, 'interrupted'),
         life(3, None, None)]
NOW = 10 * HOUR


class SurvivalTest(testtools.TestCase):

    def test_kaplan_meier_equals_the_count_by_hand(self):
        curve = survival.survival_curve(LIVES, NOW)
        self.assertEqual((7, 4, 3), (curve['servers'],
                                     curve['interruptions'],
                                     curve['censored']))
        # by hand: at 1 h, 1 of 7 at risk interrupted: 6/7; 2 h censored;
        # at 3 h, 2 of 5 at risk: 6/7 * 3/5; 5 h censored; at 6 h, 1 of
        # 2: 6/7 * 3/5 * 1/2; 7 h (still running) censored.
        s1, s3, s6 = 6 / 7, 6 / 7 * 3 / 5, 6 / 7 * 3 / 5 / 2
        got = {p['seconds'] / HOUR: p['survival'] for p in curve['points']}
        want = {1: s1, 2: s1, 3: s3, 5: s3, 6: s6, 7: s6}
        self.assertEqual(sorted(want), sorted(got))
        for t in want:
            self.assertAlmostEqual(want[t], got[t], places=12)
        self.assertEqual(6 * HOUR, curve['median_seconds'])
        for p in curve['points']:
            self.assertLessEqual(p['low'] or 0, p['survival'])

    def test_no_interruption_and_no_server(self):
        curve = survival.survival_curve([life(0, 2, 'deleted')], NOW)
        self.assertEqual([1.0], [p['survival'] for p in curve['points']])
        self.assertEqual([], survival.survival_curve([], NOW)['points'])

    def test_rates_per_period_by_hand(self):
        rows = survival.interruption_rates(LIVES, 0, 8 * HOUR, 4 * HOUR)
        # [0, 4 h): all 7 ran; interrupted at 1 h and 3 h (the 3 h ones:
        # life 3 ends at 4 h, in the next period) -> 1 h and ... by hand:
        # lives ending interrupted in [0, 4): only the one at 1 h.
        # [4, 8): lives that ran: 2..7 minus the one deleted at 2 h and
        # the one interrupted at 1 h -> 5; interrupted at 4, 5, 7 h -> 3.
        self.assertEqual([(7, 1), (5, 3)],
                         [(r['servers'], r['interruptions']) for r in rows])
        self.assertEqual([1 / 7, 3 / 5], [r['rate'] for r in rows])
        # server-hours in [0, 4): 1 + 2 + 3 + 2 + 4 + 3 + 1
        self.assertEqual(16.0, rows[0]['server_hours'])
        self.assertRaises(ValueError, survival.interruption_rates, LIVES,
                          0, 1, 0)

    def test_plot_writes_a_png(self):
        doc = {'flavor': 'spot.small', 'period_seconds': 14400,
               'survival': survival.survival_curve(LIVES, NOW),
               'rates': [dict(r, period_start='2026-11-28T00:00:00Z')
                         for r in survival.interruption_rates(
                             LIVES, 0, 8 * HOUR, 4 * HOUR)]}
        path = os.path.join(self.useFixture(
            base.fixtures.TempDir()).path, 'h.png')
        survival.plot(doc, path)
        with open(path, 'rb') as f:
            self.assertEqual(b'\x89PNG', f.read(4))


def preempt_payload(preemptor, victims, action='delete'):
    """The primitive payload the scheduler sends (its own builder)."""
    note = preempt_notes.preempt_notification(
        'h1', preemptor, 'req-1', action,
        [(v, p, 'vm', 1.0) for v, p in victims], 'sched-host')
    return note.message()[3]


class RecorderTest(testtools.TestCase):
    """:class:`events.EventRecorder` on the scheduler's real payloads."""

    def setUp(self):
        super().setUp()
        self.store = base.new_store(base.sqlite_url(self))
        self.recorder = events.EventRecorder(self.store)
        self.v1, self.v2 = str(uuidlib.uuid4()), str(uuidlib.uuid4())
        for v in (self.v1, self.v2):
            self.store.start_lifetime(v, 'pA', 100.0, 'spot.small', 2, 4000,
                                      'h1')

    def test_scheduler_preemption_is_recorded_once(self):
        payload = preempt_payload(str(uuidlib.uuid4()),
                                  [(self.v1, 'pA'), (self.v2, 'pA')])
        self.assertEqual(2, self.recorder.apply(
            events.EVENT_SCHEDULER_PREEMPT, payload, 500.0))
        # a redelivered notification adds nothing
        self.assertEqual(0, self.recorder.apply(
            events.EVENT_SCHEDULER_PREEMPT, payload, 500.0))
        rows, more = self.store.events_page('pA')
        self.assertEqual([('interruption', 'scheduler', 'delete')] * 2,
                         [(r['kind'], r['cause'], r['action'])
                          for r in rows])
        self.assertEqual({('interrupted', 500.0)}, {
            (lt['end'], lt['ended_at']) for lt in self.store.lifetimes()})
        # the victim's deletion that follows does not censor it
        self.recorder.apply(events.EVENT_DELETE_END, {
            'nova_object.data': {
                'uuid': self.v1, 'tenant_id': 'pA', 'flavor': {
                    'nova_object.data': {
                        'name': 'spot.small', 'extra_specs':
                            base.flavors.preemptible_extra_specs(2, 4000,
                                                                 40)}}}},
            501.0)
        self.assertEqual('interrupted', self.store.lifetimes()[0]['end'])

    def test_restore_is_recorded_once(self):
        note = preempt_notes.restore_notification(
            self.v1, 'pA', 'h2', 2, 120.0, 'sched-host')
        payload = note.message()[3]
        self.assertEqual(1, self.recorder.apply(
            events.EVENT_SCHEDULER_RESTORE, payload, 700.0))
        self.assertEqual(0, self.recorder.apply(
            events.EVENT_SCHEDULER_RESTORE, payload, 700.0))
        rows, _ = self.store.events_page('pA')
        self.assertEqual([('restore', 'reconciler', 'h2', 'spot.small')],
                         [(r['kind'], r['cause'], r['host'], r['flavor'])
                          for r in rows])
        self.assertIn('2 interruption', rows[0]['detail'])
        # another project's listing has none of it
        self.assertEqual([], self.store.events_page('pB')[0])

    def test_cause_words_and_drills(self):
        self.recorder.apply(events.EVENT_SCHEDULER_PREEMPT, preempt_payload(
            'reconciler', [(self.v1, 'pA')], 'stop'), 300.0)
        self.recorder.apply(events.EVENT_SCHEDULER_PREEMPT, preempt_payload(
            'drill', [(self.v2, 'pA')], 'stop'), 300.0)
        rows, _ = self.store.events_page('pA')
        self.assertEqual([('interruption', 'reconciler'), ('drill', 'drill')],
                         [(r['kind'], r['cause']) for r in rows])
        ends = {lt['server_uuid']: lt['end'] for lt in self.store.lifetimes()}
        # a drill never ends a life (never counted in rates or the curve)
        self.assertEqual({self.v1: 'interrupted', self.v2: None}, ends)

    def test_a_late_interruption_replaces_a_censoring_end(self):
        # the engine saw the victim gone before the notification came
        events.observe(self.store, [], 600.0)
        self.recorder.apply(events.EVENT_SCHEDULER_PREEMPT, preempt_payload(
            str(uuidlib.uuid4()), [(self.v1, 'pA')]), 550.0)
        ends = {lt['server_uuid']: (lt['end'], lt['ended_at'])
                for lt in self.store.lifetimes()}
        self.assertEqual({self.v1: ('interrupted', 550.0),
                          self.v2: ('left', 600.0)}, ends)

    def test_scheduler_actions_recorded_without_the_listener(self):
        # Nova's instance actions of the victim (newest first), as
        # Cloud.instance_actions reads them: notice, preempt, then the verb
        cloud = mock.Mock()
        cloud.instance_actions.side_effect = lambda uuid: {
            self.v1: [('delete', 520.0), ('preempt', 520.0),
                      ('preempt_notice', 400.0), ('create', 100.0)],
        }.get(uuid, [('stop', 580.0), ('create', 100.0)])
        events.observe(self.store, [], 600.0, cloud)
        rows, _ = self.store.events_page('pA')
        self.assertEqual(
            [(self.v1, 'notice', 'scheduler', None, 400.0),
             (self.v1, 'interruption', 'scheduler', 'delete', 520.0)],
            [(r['server_uuid'], r['kind'], r['cause'], r['action'],
              r['at']) for r in rows])
        ends = {lt['server_uuid']: (lt['end'], lt['ended_at'])
                for lt in self.store.lifetimes()}
        # v2 was stopped by its owner: censored, no event
        self.assertEqual({self.v1: ('interrupted', 520.0),
                          self.v2: ('left', 600.0)}, ends)
        # the listener's notification of the same interruption, seconds
        # later, and a second period's read add nothing
        self.assertEqual(0, self.recorder.apply(
            events.EVENT_SCHEDULER_PREEMPT, preempt_payload(
                str(uuidlib.uuid4()), [(self.v1, 'pA')]), 522.0))
        events.observe(self.store, [], 4200.0, cloud)
        self.assertEqual(2, len(self.store.events_page('pA')[0]))
        # another project sees none of it
        self.assertEqual([], self.store.events_page('pB')[0])

    def test_listener_first_then_actions_one_interruption(self):
        self.recorder.apply(events.EVENT_SCHEDULER_PREEMPT, preempt_payload(
            'reconciler', [(self.v1, 'pA')], 'shelve'), 523.0)
        # its life closed by the listener; the last period's snapshot has
        # it, so the next period reads its actions
        self.store.create_period(0, 3600, 'me', [{
            'server_uuid': self.v1, 'project': 'pA', 'pool': 'default',
            'host': 'h1', 'bid': D('0.5'), 'bid_source': 'metadata',
            'vcpus': 2, 'memory_mb': 4000, 'created_at': 100.0}], {})
        cloud = mock.Mock()
        cloud.instance_actions.return_value = [
            ('shelve', 521.0), ('preempt', 520.0)]
        events.observe(self.store, [], 600.0, cloud)
        rows, _ = self.store.events_page('pA')
        # the listener's (its cause word) is kept, the second not added
        self.assertEqual([('interruption', 'reconciler', 523.0)],
                         [(r['kind'], r['cause'], r['at']) for r in rows
                          if r['server_uuid'] == self.v1])

    def test_scheduler_events_from_actions(self):
        self.assertEqual(
            [('notice', 10.0, None), ('interruption', 20.0, 'shelve'),
             ('interruption', 90.0, None)],
            events.scheduler_events([
                ('preempt', 90.0), ('unshelve', 60.0),
                ('shelveOffload', 21.0), ('shelve', 20.0),
                ('preempt', 20.0), ('preempt_notice', 10.0),
                ('create', 1.0), ('preempt_notice', None)]))
        self.assertEqual([('interruption', 90.0, None)],
                         events.scheduler_events(
                             [('preempt', 90.0), ('preempt', 20.0)],
                             since=50.0))

    def test_junk_never_raises(self):
        self.recorder.info({}, 'p', events.EVENT_SCHEDULER_PREEMPT,
                           {'opie_object.data': {'victims': [
                               {'opie_object.data': {'uuid': 'not-a-uuid',
                                                     'project_id': 'pA'}}]}},
                           {'timestamp': '2026-11-28 05:00:00.000000'})
        self.recorder.info({}, 'p', 'instance.delete.end', None, {})
        self.assertEqual([], self.store.events_page()[0])


class PlanningAPITest(api_base._Base):
    """The 1.2 routes on the market app over the fake cloud (srv-a of pA
    bids 1, srv-b of pB bids 2; h1 is in az1, h2 in az2).
    """

    def get(self, path, token=api_base.MEMBER):
        return self.call('GET', path, token, headers=api_base.LATEST)

    def test_routes_need_1_2(self):
        for path in ('/v1/placement-score?flavor=spot.small',
                     '/v1/interruption-history?flavor=spot.small',
                     '/v1/events'):
            self.assertEqual(404, self.call(
                'GET', path, api_base.MEMBER,
                headers={api_base.V: 'spot-market 1.1'})[0], path)
            self.assertEqual(200, self.get(path)[0], path)

    def test_placement_score_one_read(self):
        status, body = self.get('/v1/placement-score?flavor=spot.small'
                                '&count=5')
        self.assertEqual(200, status, body)
        doc = body['placement_score']
        self.assertEqual((True, '3', 'flavor'),
                         (doc['preemptible'], doc['bid'], doc['bid_source']))
        self.assertEqual([{'resources': 'CUSTOM_PREEMPTIBLE_VCPU:2,'
                                        'CUSTOM_PREEMPTIBLE_MEMORY_MB:4000,'
                                        'CUSTOM_PREEMPTIBLE_DISK_GB:40'}],
                         self.provider_reads)
        # h1 (az1): 8 vCPU, srv-a (bid 1) and srv-b (bid 2) hold 4: 2
        # fit now, 4 with both gone; h2 (az2): 4 fit now; 5 asked
        self.assertEqual([('az1', 'no_room', 2, 4), ('az2', 'no_room', 4, 4)],
                         [(z['availability_zone'], z['status'],
                           z['fit_now'], z['fit_preempting'])
                          for z in doc['zones']])
        status, body = self.get('/v1/placement-score?flavor=spot.small'
                                '&count=3&zone=az1')
        (zone,) = body['placement_score']['zones']
        self.assertEqual(('preempting', D(1), 3),
                         (zone['status'], D(zone['at_bid']),
                          zone['fit_preempting']))
        status, body = self.get('/v1/placement-score?flavor=spot.small'
                                '&count=4&zone=az2&bid=0.01')
        (zone,) = body['placement_score']['zones']
        # 0.5 per vCPU-hour * 2 + 0.00025 per MB-hour * 4000 = 2 per hour
        self.assertEqual(('out_of_bid', D(2)),
                         (zone['status'], D(zone['price_per_hour'])))
        status, body = self.get('/v1/placement-score?flavor=m1.small')
        self.assertEqual({'fits_now'}, {z['status'] for z in
                                        body['placement_score']['zones']})
        for query, code in (('flavor=nope', 404), ('', 400),
                            ('flavor=spot.small&count=0', 400),
                            ('flavor=spot.small&bid=lots', 400)):
            self.assertEqual(code, self.get('/v1/placement-score?'
                                            + query)[0], query)

    def _scheduler_preempts(self, project, when, flavor='spot.small'):
        victim = str(uuidlib.uuid4())
        self.store.start_lifetime(victim, project, when - 2 * HOUR, flavor,
                                  2, 4000, 'h1')
        events.EventRecorder(self.store).apply(
            events.EVENT_SCHEDULER_PREEMPT,
            preempt_payload(str(uuidlib.uuid4()), [(victim, project)]),
            when)
        return victim

    def test_interruption_history(self):
        now = base.T0
        self.api.clock = lambda: now
        self._scheduler_preempts('pA', now - HOUR)
        self._scheduler_preempts('pB', now - HOUR / 2)
        status, body = self.get('/v1/interruption-history?flavor=spot.small'
                                '&period_seconds=3600&since=%d'
                                % (now - 3 * HOUR))
        self.assertEqual(200, status, body)
        doc = body['interruption_history']
        self.assertEqual([2, 2, 2], [r['servers'] for r in doc['rates']])
        self.assertEqual([0, 0, 2], [r['interruptions']
                                     for r in doc['rates']])
        self.assertEqual((2, 2), (doc['survival']['servers'],
                                  doc['survival']['interruptions']))
        self.assertEqual([0.0], [p['survival'] for p in
                                 doc['survival']['points']][-1:])
        # other zone: nothing ran there
        status, body = self.get('/v1/interruption-history?flavor=spot.small'
                                '&zone=az2&period_seconds=3600&since=%d'
                                % (now - 3 * HOUR))
        self.assertEqual(0, body['interruption_history']['survival'][
            'servers'])
        self.assertEqual(400, self.get(
            '/v1/interruption-history?flavor=spot.small&period_seconds=1'
            '&since=%d' % (now - 30 * 86400))[0])
        # a market API installed without scipy says what it lacks
        with mock.patch.object(survival, 'survival_curve',
                               side_effect=ImportError('no scipy')):
            status, body = self.get('/v1/interruption-history?'
                                    'flavor=spot.small')
        self.assertEqual(503, status)
        self.assertIn('needs scipy', body['errors'][0]['detail'])

    def test_the_owner_sees_the_victims_whole_story(self):
        victim = self._scheduler_preempts('pA', base.T0 - 60)
        # the owner deletes the shelved victim later: the story stays
        events.EventRecorder(self.store).apply(events.EVENT_DELETE_END, {
            'nova_object.data': {
                'uuid': victim, 'tenant_id': 'pA', 'flavor': {
                    'nova_object.data': {
                        'name': 'spot.small', 'extra_specs':
                            base.flavors.preemptible_extra_specs(2, 4000,
                                                                 40)}}}},
            base.T0 - 30)
        status, body = self.get('/v1/events?server_id=%s' % victim)
        self.assertEqual(200, status, body)
        self.assertEqual([('interruption', 'scheduler', 'delete'),
                          ('deleted', 'owner', None)],
                         [(e['kind'], e['cause'], e['action'])
                          for e in body['events']])
        self.assertNotIn('host', body['events'][0])
        # another project: nothing of it, asked either way
        status, body = self.get('/v1/events?server_id=%s' % victim,
                                api_base.OTHER)
        self.assertEqual((200, []), (status, body['events']))
        self.assertEqual(403, self.get('/v1/events?project_id=pA',
                                       api_base.OTHER)[0])

    def test_market_notices_and_interruptions_are_events_in_order(self):
        # the fixture's tick gave srv-a (pA, bid 1) notice at T0; at its
        # deadline the engine preempts it
        eng = engine.MarketEngine(self.store, self.cloud, self.settings)
        report = eng.tick(base.T0 + self.settings.notice_period + 1)
        # srv-a out of bid, srv-b (pB) out of credit
        self.assertEqual(['srv-a', 'srv-b'], report.preempted)
        status, body = self.get('/v1/events')
        self.assertEqual([('srv-a', 'notice', 'market'),
                          ('srv-a', 'interruption', 'market')],
                         [(e['server_id'], e['kind'], e['cause'])
                          for e in body['events']])
        self.assertEqual('delete', body['events'][1]['action'])
        lives = {lt['server_uuid']: lt['end']
                 for lt in self.store.lifetimes()}
        self.assertEqual('interrupted', lives['srv-a'])
        self.assertEqual('interrupted', lives['srv-b'])
        self.assertNotIn('plain-a', lives)  # normal servers have no life

    def test_event_pages(self):
        for i in range(5):
            self.store.add_event('srv-a', 'pA', models.EVENT_AT_RISK,
                                 base.T0 + i)
        ids, path = [], '/v1/events?limit=2'
        while path:
            status, body = self.get(path)
            ids.extend(e['id'] for e in body['events'])
            links = body['events_links']
            path = links and links[0]['href'].replace('http://localhost',
                                                      '')
        self.assertEqual(len(ids), len(set(ids)))
        self.assertEqual([e['id'] for e in self.get('/v1/events')[1][
            'events']], ids)
        self.assertEqual(400, self.get('/v1/events?marker=999')[0])

    def test_osc_commands(self):
        run = api_base.OSCCommandsTest.run_command
        self._scheduler_preempts('pA', base.T0 - 60)
        columns, rows = run(self, osc.PlacementScore,
                            ['spot.small', '--count', '2'])
        self.assertEqual([('az1', 'fits_now'), ('az2', 'fits_now')],
                         [r[:2] for r in rows])
        with tempfile.TemporaryDirectory() as d:
            png = os.path.join(d, 'h.png')
            columns, rows = run(self, osc.InterruptionHistory,
                                ['spot.small', '--curve', '--plot', png])
            self.assertTrue(os.path.getsize(png) > 0)
        self.assertEqual([0.0], [r[1] for r in rows])
        columns, rows = run(self, osc.EventList, [])
        # the victim at T0 - 60, then the fixture's notice to srv-a at T0
        self.assertEqual(['interruption', 'notice'], [r[3] for r in rows])
        error = self.assertRaises(
            osc.exceptions.CommandError, run, self, osc.EventList, [],
            version='1.1')
        self.assertIn('needs spot-market API microversion 1.2', str(error))


class _EventStoreContract:
    """Events and lifetimes on each database the market supports."""

    def make_url(self):
        raise NotImplementedError

    def setUp(self):
        super().setUp()
        self.store = base.new_store(self.make_url())
        self.addCleanup(self.store.dispose)

    def test_events_and_lives(self):
        at = 1_800_000_000.25  # keeps its fraction (double precision)
        self.assertTrue(self.store.add_event('s1', 'pA', 'notice', at,
                                             cause='market'))
        self.assertFalse(self.store.add_event('s1', 'pA', 'notice', at))
        self.store.add_event('s1', 'pA', 'interruption', at + 1,
                             cause='scheduler', action='shelve')
        self.store.add_event('s2', 'pB', 'deleted', at)
        self.assertRaises(ValueError, self.store.add_event, 's1', 'pA',
                          'teleported', at)
        rows, more = self.store.events_page('pA', limit=1)
        self.assertEqual((['notice'], True), ([r['kind'] for r in rows],
                                              more))
        self.assertEqual(at, rows[0]['at'])
        rows, more = self.store.events_page('pA', marker=rows[0]['id'])
        self.assertEqual((['interruption'], False),
                         ([r['kind'] for r in rows], more))
        self.assertRaises(db_api.MarkerNotFound, self.store.events_page,
                          'pB', marker=rows[0]['id'])
        self.assertTrue(self.store.start_lifetime('s1', 'pA', at - 10))
        self.assertFalse(self.store.start_lifetime('s1', 'pA', at - 5,
                                                   'spot.small'))
        self.assertTrue(self.store.end_lifetime('s1', at + 5, 'left'))
        self.assertFalse(self.store.end_lifetime('s1', at + 6, 'deleted'))
        self.assertTrue(self.store.end_lifetime('s1', at + 1,
                                                'interrupted'))
        (life,) = self.store.lifetimes(flavor='spot.small')
        self.assertEqual((at - 10, at + 1, 'interrupted'),
                         (life['started_at'], life['ended_at'],
                          life['end']))
        self.assertEqual([], self.store.lifetimes(open_only=True))


class SqliteEventStoreTest(_EventStoreContract, testtools.TestCase):

    def make_url(self):
        return base.sqlite_url(self)


class PostgreSQLEventStoreTest(_EventStoreContract, testtools.TestCase):

    def make_url(self):
        return base.server_database_url(
            self, base.PostgreSQLStoreTest.ENV,
            base.PostgreSQLStoreTest.DEFAULT)


class MySQLEventStoreTest(_EventStoreContract, testtools.TestCase):

    def make_url(self):
        return base.server_database_url(self, base.MySQLStoreTest.ENV,
                                        base.MySQLStoreTest.DEFAULT)
