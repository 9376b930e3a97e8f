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
"""Acknowledging a notice (market microversion 1.4, issue 31 item 2): the
owner of a server under a real notice -- the market's (its database) or
the scheduler's (the ``preempt_notice`` instance action) -- runs its
interruption now; notice keys the owner wrote never make a notice.
"""

import configparser
import importlib
import os
from unittest import mock

import fixtures
import testtools

from opie_sched.preemption import victim_state
from opie_sched.services.market import cloud as market_cloud
from opie_sched.services.market.db import models
from opie_sched.services.market import enforcement
from opie_sched.services.market import engine
from opie_sched.services.market import osc
import tests
from tests.unit.services.market import test_market_api as api_base
from tests.unit.services.market import test_market_service as base

T0 = base.T0
ACK = '/v1/servers/%s/interruption-ack'


def notice_keys(deadline, behavior='delete'):
    return victim_state.notice_metadata(market_cloud.iso(deadline),
                                        behavior, 'preempted by the scheduler')


class AckAPITest(api_base._Base):
    """The fixture's market (srv-a of pA under the market's out-of-bid
    notice given at T0, deadline T0 + 300, behaviour ``delete``; srv-b of
    pB; plain-a of pA normal) plus sched-a of pA on h2, behaviour
    ``shelve``, under the scheduler's notice given at T0 (its
    ``preempt_notice`` instance action and the keys on its metadata).
    Now is T0 + 0.5.
    """

    def setUp(self):
        super().setUp()
        self.cloud.add('sched-a', 'pA', 1, host='h2',
                       metadata=notice_keys(T0 + 120, 'shelve'))
        info = self.cloud.by_uuid['sched-a']
        self.cloud._replace('sched-a', flavor_name='spot.small',
                            extra_specs=dict(info.extra_specs, **{
                                enforcement.BEHAVIOR_SPEC: 'shelve'}))
        self.cloud.actions['sched-a'] = [
            ('create', T0 - 600), (victim_state.NOTICE_ACTION, T0)]

    def ack(self, uuid, token=api_base.MEMBER, body=None, version=None):
        return self.call('POST', ACK % uuid, token, body,
                         {api_base.V: version or 'spot-market 1.4'})

    def events(self, uuid):
        status, body = self.call('GET', '/v1/events?server_id=%s' % uuid,
                                 api_base.MEMBER, headers=api_base.LATEST)
        self.assertEqual(200, status)
        return [(e['kind'], e['cause'], e['action'])
                for e in body['events']]

    def notice_state(self, uuid):
        return [(n['state'], n['action']) for n in self.store.notices()
                if n['server_uuid'] == uuid]

    def ledger(self):
        return [(e.key.kind, e.key.server, e.amount)
                for e in self.store.entries('pA')]

    def assertRefused(self, status, body, code, error):
        self.assertEqual(status, body['errors'][0]['status'])
        self.assertEqual((code, error), (status, body['errors'][0]['code']))

    def test_a_market_notice_acknowledged_runs_its_behaviour_now(self):
        ledger = self.ledger()
        status, body = self.ack('srv-a')
        self.assertEqual(202, status)
        doc = body['interruption_ack']
        self.assertEqual(
            {'server_id': 'srv-a', 'project_id': 'pA', 'notice': 'market',
             'kind': 'out_of_bid', 'noticed_at': base.engine.iso(T0),
             'deadline': base.engine.iso(T0 + 300),
             'acknowledged_at': base.engine.iso(T0), 'action': 'delete'},
            doc)
        # the interruption ran now, marked as at its deadline
        self.assertEqual([('srv-a', 'delete')], self.cloud.terminated)
        self.assertEqual([(models.PREEMPTED, 'delete')],
                         self.notice_state('srv-a'))
        self.assertIn(('ack', 'owner', 'delete'), self.events('srv-a'))
        [life] = [lt for lt in self.store.lifetimes()
                  if lt['server_uuid'] == 'srv-a']
        self.assertEqual(models.END_INTERRUPTED, life['end'])
        # the owner's choice charges nothing
        self.assertEqual(ledger, self.ledger())
        # the enforcement at the deadline does not act a second time
        report = engine.MarketEngine(self.store, self.cloud,
                                     self.settings).tick(T0 + 400)
        self.assertNotIn('srv-a', report.preempted)
        self.assertEqual([('srv-a', 'delete')], [
            t for t in self.cloud.terminated if t[0] == 'srv-a'])

    def test_a_scheduler_notice_acknowledged_sends_the_verb(self):
        status, body = self.ack('sched-a')
        self.assertEqual(202, status)
        doc = body['interruption_ack']
        self.assertEqual(('scheduler', 'scheduler', base.engine.iso(T0),
                          None, 'shelve'),
                         (doc['notice'], doc['kind'], doc['noticed_at'],
                          doc['deadline'], doc['action']))
        self.assertEqual([('sched-a', 'shelve')], self.cloud.terminated)
        # the scheduler marks its own victim; the market writes nothing
        self.assertNotIn(victim_state.PREEMPTED_BY_KEY,
                         self.cloud.by_uuid['sched-a'].metadata)
        self.assertEqual([], self.notice_state('sched-a'))
        self.assertEqual([('ack', 'owner', 'shelve')],
                         self.events('sched-a'))

    def test_forged_or_stale_notice_keys_are_refused(self):
        # keys the owner wrote, no notice action: no notice
        self.cloud.add('forged-a', 'pA', 1, host='h2',
                       metadata=notice_keys(T0 + 60))
        # a notice that ended with its interruption (preempt after it)
        self.cloud.add('ended-a', 'pA', 1, host='h2',
                       metadata=notice_keys(T0 + 60))
        self.cloud.actions['ended-a'] = [
            (victim_state.NOTICE_ACTION, T0 - 90),
            (victim_state.PREEMPT_ACTION, T0 - 30)]
        # a notice older than scheduler_notice_window (3600 s): lapsed
        self.cloud.add('old-a', 'pA', 1, host='h2',
                       metadata=notice_keys(T0 + 60))
        self.cloud.actions['old-a'] = [
            (victim_state.NOTICE_ACTION, T0 - 3601)]
        # a real notice the scheduler withdrew (its keys removed)
        self.cloud.delete_metadata('sched-a', [victim_state.NOTICE_KEY,
                                               victim_state.DEADLINE_KEY])
        # srv-a's market notice, already taken by the enforcement (its
        # keys are still on the server)
        self.store.set_notice_state('srv-a', models.PREEMPTED, 'delete')
        for uuid in ('forged-a', 'ended-a', 'old-a', 'sched-a', 'srv-a',
                     'plain-a'):
            status, body = self.ack(uuid)
            self.assertRefused(status, body, 409, 'spot-market.no-notice')
            self.assertNotIn('ack', [e[0] for e in self.events(uuid)],
                             uuid)
        self.assertEqual([], self.cloud.terminated)

    def test_only_the_owner_or_an_admin(self):
        # another project: 404, as for a server that does not exist
        for uuid in ('srv-a', 'sched-a', 'no-such-server'):
            status, body = self.ack(uuid, api_base.OTHER)
            self.assertRefused(status, body, 404, 'spot-market.not-found')
        status, body = self.ack('srv-b', api_base.MEMBER)  # pB's server
        self.assertEqual(404, status)
        # a reader of the project may not act
        status, body = self.ack('srv-a', api_base.READER)
        self.assertEqual(403, status)
        self.assertIn('opie_market:interruption_ack:create',
                      body['errors'][0]['detail'])
        self.assertEqual([], self.cloud.terminated)
        # an admin may, on any project's server
        self.assertEqual(202, self.ack('sched-a', api_base.ADMIN)[0])

    def test_errors(self):
        status, body = self.ack('srv-a', body={'now': True})
        self.assertRefused(status, body, 400, 'spot-market.bad-request')
        self.assertIn('now', body['errors'][0]['detail'])
        # older microversions do not know the resource
        self.assertEqual(404, self.ack('srv-a', version='spot-market 1.3')[0])
        # its interruption is under way, or it is not running
        self.cloud._replace('sched-a', task_state='shelving')
        status, body = self.ack('sched-a')
        self.assertRefused(status, body, 409,
                           'spot-market.server-not-active')
        self.cloud._replace('sched-a', task_state=None, status='SHUTOFF')
        self.assertEqual(409, self.ack('sched-a')[0])
        self.assertEqual([], self.cloud.terminated)
        # an empty body is fine
        self.assertEqual(202, self.ack('srv-a', body={})[0])

    def test_a_drill_can_be_acknowledged(self):
        status, _ = self.call('POST', '/v1/servers/sched-a/'
                              'interruption-drill', api_base.MEMBER,
                              {'notice_seconds': 60}, api_base.LATEST)
        # the scheduler's notice is there too; the market's drill notice
        # comes first
        self.assertEqual(202, status)
        status, body = self.ack('sched-a')
        self.assertEqual(202, status)
        doc = body['interruption_ack']
        self.assertEqual(('market', 'drill', 'shelve'),
                         (doc['notice'], doc['kind'], doc['action']))
        self.assertEqual([('sched-a', 'shelve')], self.cloud.terminated)
        self.assertEqual('opie-market-drill', self.cloud.by_uuid[
            'sched-a'].metadata[victim_state.PREEMPTED_BY_KEY])

    def test_osc_command(self):
        run = api_base.OSCCommandsTest.run_command
        columns, row = run(self, osc.InterruptionAck, ['sched-a'])
        doc = dict(zip(columns, row))
        self.assertEqual(('sched-a', 'scheduler', 'shelve'),
                         (doc['server_id'], doc['notice'], doc['action']))
        error = self.assertRaises(osc.exceptions.CommandError, run, self,
                                  osc.InterruptionAck, ['sched-a'])
        self.assertIn('HTTP 409', str(error))
        error = self.assertRaises(osc.exceptions.CommandError, run, self,
                                  osc.InterruptionAck, ['srv-a'],
                                  version='1.3')
        self.assertIn('needs spot-market API microversion 1.4', str(error))

    def test_the_command_is_registered(self):
        cfg = configparser.ConfigParser()
        cfg.read(os.path.join(tests.ROOT,
                              'setup.cfg'))
        entries = dict(
            line.split(' = ') for line in
            cfg['entry_points']['openstack.spot.v1'].strip().splitlines())
        module, _, name = entries['spot_interruption_ack'].partition(':')
        self.assertIs(osc.InterruptionAck,
                      getattr(importlib.import_module(module), name))


class PendingNoticeTest(testtools.TestCase):
    """:func:`victim_state.pending_notice`: the rule on instance actions."""

    N, P = victim_state.NOTICE_ACTION, victim_state.PREEMPT_ACTION
    W = victim_state.WITHDRAW_ACTION

    def test_rule(self):
        pending = victim_state.pending_notice
        for actions, now, expected in (
                ([], 100, None),
                ([('create', 0), ('stop', 50)], 100, None),
                ([('create', 0), (self.N, 50)], 100, 50),
                # the newest notice counts; a preempt after it ends it
                ([(self.N, 10), (self.P, 20), (self.N, 60)], 100, 60),
                ([(self.N, 10), (self.P, 20)], 100, None),
                ([(self.N, 20), (self.P, 20)], 100, None),
                # older than the window: lapsed
                ([(self.N, 10)], 71, None),
                ([(self.N, 10)], 70, 10),
                ([(self.N, None)], 70, None),
                # a withdrawal (the victim was spared) ends it too, and
                # a later notice stands again
                ([(self.N, 10), (self.W, 30)], 50, None),
                ([(self.N, 10), (self.W, 30), (self.N, 40)], 50, 40)):
            self.assertEqual(expected, pending(actions, now, 60),
                             (actions, now))


class WithdrawNoticeTest(testtools.TestCase):
    """The scheduler withdraws the notice of a spared victim: its keys go
    and a service-owned action ends the notice, so keys its owner writes
    back afterwards are no pending notice (:meth:`Enforcement.pending`).
    """

    def setUp(self):
        super().setUp()
        from opie_sched.scheduler import actions
        self.actions = actions
        self.db = self.useFixture(fixtures.MockPatchObject(
            actions, 'main_db')).mock
        self.ia = self.useFixture(fixtures.MockPatchObject(
            actions.objects, 'InstanceAction')).mock
        self.ctx = mock.Mock(request_id='req-preemptor')

    def test_keys_removed_and_withdrawal_recorded(self):
        self.db.instance_metadata_get.return_value = {
            victim_state.NOTICE_KEY: 'x', victim_state.DEADLINE_KEY: 'y',
            'owner': 'kept'}
        self.actions.withdraw_notice(self.ctx, 'u1')
        self.assertEqual(
            {victim_state.NOTICE_KEY, victim_state.DEADLINE_KEY},
            {c.args[2] for c in
             self.db.instance_metadata_delete.call_args_list})
        (actx, uuid, name), _ = self.ia.action_start.call_args
        self.assertEqual(('u1', victim_state.WITHDRAW_ACTION), (uuid, name))
        # under a request id of its own, never the preemptor's
        self.assertNotEqual('req-preemptor', actx.request_id)

    def test_no_notice_no_action(self):
        self.db.instance_metadata_get.return_value = {'owner': 'kept'}
        self.actions.withdraw_notice(self.ctx, 'u1')
        self.db.instance_metadata_delete.assert_not_called()
        self.ia.action_start.assert_not_called()

    def test_victims_released_unstarted_are_withdrawn(self):
        from opie_sched.scheduler import manager
        with mock.patch.object(manager.reservations, 'unreserve',
                               return_value=['b']), \
                mock.patch.object(manager.reservations, 'cell_context',
                                  return_value='cctxt'), \
                mock.patch.object(manager.actions,
                                  'withdraw_notice') as withdraw:
            left = manager.OpieSchedulerManager._release_unstarted(
                self.ctx, 'cell', ['a', 'b', 'c'], ['a'])
        self.assertEqual(['a', 'c'], left)
        withdraw.assert_called_once_with('cctxt', 'b')
