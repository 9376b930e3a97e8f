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
"""Automatic restore (issue 32 item 1) on a real in-process Nova: a
preemptible server of a ``shelve`` + ``opie:restore=auto`` flavor,
preempted by a normal boot, is unshelved by a reconciler round once room
returns (same UUID, same port), never without room nor below a headroom,
no longer after ``opie:max_interruptions``; a normal request arriving
while the restore is in flight still lands. The market's victims (its
real enforcement, through openstacksdk as another project) are restored
by the same step; a server its owner shelved is not.
"""

import os
import time

import fixtures
from keystoneauth1 import loading
from keystoneauth1 import session as ks_session
import openstack

from opie_sched.common import flavors
from opie_sched.demo import clients
from opie_sched.preemption import victim_state as vs
from opie_sched.scheduler import actions
from opie_sched.scheduler import reconciler
from opie_sched.services.market.db import api as db_api
from opie_sched.services.market import engine as market_engine
from tests.functional import test_destructive_steps
from tests.functional import test_preemption_holds

_Steps = test_destructive_steps._Steps


class _RestoreBase(_Steps):

    EXTRA_FLAGS = {'opie_reconciler': {'run_in_scheduler': False},
                   'opie_preemption': {'release_timeout': 10,
                                       'retry_interval': 1,
                                       'max_retry_interval': 1,
                                       'poll_interval': 0.2,
                                       # a reservation left by a request
                                       # racing the unshelve ends soon
                                       'reservation_timeout': 15}}
    #: extra specs of the restoring flavor beyond shelve + restore=auto
    SPECS = {}

    def setUp(self):
        super().setUp()
        specs = dict(flavors.preemptible_extra_specs(4, 8000, 80),
                     **{vs.BEHAVIOR_SPEC: vs.SHELVE,
                        vs.RESTORE_SPEC: vs.RESTORE_AUTO})
        specs.update(self.SPECS)
        self.flavor_ids['restoring.preemptible'] = self._create_flavor(
            name='restoring.preemptible', vcpu=4, memory_mb=8000, disk=80,
            extra_spec=specs)
        self.rec = reconciler.Reconciler()

    def boot_victim(self):
        """host1 full: the victim (with a port; the cheapest) and a
        filler preemptible that costs more.
        """
        server = self._build_server(
            name='victim', flavor_id=self.flavor_ids['restoring.preemptible'],
            networks=[{'port': self.neutron.port_1['id']}], host='host1')
        victim = self._wait_for_state_change(
            self.api.post_server({'server': server}), 'ACTIVE',
            max_retries=self.BOOT_POLLS)
        self.set_runtime(victim['id'], 100)
        filler = self.boot('large.preemptible', host='host1', name='filler')
        self.set_runtime(filler['id'], 2000)
        return victim, filler

    def preempt(self, victim):
        normal = self.boot('large', name='normal')
        self.wait_status(victim, 'SHELVED_OFFLOADED', 120)
        # the port stays with the server while it is shelved
        self.assertEqual(victim['id'], self.port_device())
        return normal

    def port_device(self):
        return self.neutron.show_port(
            self.neutron.port_1['id'])['port']['device_id']

    def delete(self, server):
        self.api.delete_server(server['id'])
        self._wait_until_deleted(server)

    def round_until(self, done, timeout=60):
        """Reconciler rounds until ``done()`` (the ComputeNode records
        follow a delete or an unshelve a moment later).
        """
        deadline = time.monotonic() + timeout
        while True:
            self.rec.run_once()
            if done() or time.monotonic() > deadline:
                return done()
            time.sleep(0.5)

    def wait_node_vcpus(self, host, used, timeout=60):
        """Wait until ``host``'s ComputeNode record counts ``used``
        vCPUs (what the reconciler reads), no round run meanwhile.
        """
        from nova import objects
        deadline = time.monotonic() + timeout
        while True:
            with self.cell_ctx() as cctxt:
                node = objects.ComputeNode.\
                    get_first_node_by_host_for_old_compat(cctxt, host)
            if node.vcpus_used == used or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        self.assertEqual(used, node.vcpus_used)

    def status(self, server):
        return self.api.get_server(server['id'])['status']

    def owner_metadata(self, server):
        return self.api.get_server(server['id'])['metadata']


class RestoreTest(_RestoreBase):

    def test_restored_with_same_uuid_and_port_once_room_returns(self):
        victim, filler = self.boot_victim()
        normal = self.preempt(victim)
        state = self.sysmeta(victim['id'])
        self.assertEqual(vs.RESTORE_PENDING, state.state)
        self.assertEqual(1, state.interruptions)
        # no room: a round leaves it shelved and waiting, unshelve never
        # tried (a futile unshelve would show as an instance action)
        self.rec.run_once()
        self.assertEqual([], self.rec.restored)
        self.assertEqual('SHELVED_OFFLOADED', self.status(victim))
        self.assertNotIn('unshelve', self.action_names(victim['id']))
        self.assertEqual(vs.RESTORE_PENDING,
                         self.sysmeta(victim['id']).state)
        # room returns
        self.delete(normal)
        self.assertTrue(self.round_until(lambda: self.rec.restored))
        self.assertEqual([victim['id']], self.rec.restored)
        back = self.wait_status(victim, 'ACTIVE', 120)
        self.assertEqual(victim['id'], back['id'])
        self.assertEqual('host1', back['OS-EXT-SRV-ATTR:host'])
        self.assertEqual(victim['id'], self.port_device())
        self.assertIn('unshelve', self.action_names(victim['id']))
        # the next round sees it running: record cleared, count kept,
        # its owner told
        self.rec.run_once()
        self.assertIsNone(self.sysmeta(victim['id']))
        self.assertEqual('1', self.raw_sysmeta(victim['id'])[
            vs.KEY_INTERRUPTIONS])
        self.assertTrue(self.owner_metadata(victim)[
            actions.RESTORE_STATUS_KEY].startswith('Restored at '))
        # operators (and the market's event history) are told once
        notes = [n['payload']['opie_object.data'] for n in
                 self.notifier.versioned_notifications
                 if n['event_type'] == 'opie.instance.restore']
        self.assertEqual([(victim['id'], 1, 'host1')],
                         [(n['uuid'], n['interruptions'], n['host'])
                          for n in notes])
        self.assertEqual((8, 16000, 160), self.full_used('host1'))
        self.assertEqual('ACTIVE', self.status(filler))

    def test_owner_opt_out_keeps_it_shelved(self):
        victim, filler = self.boot_victim()
        # set while it runs (Nova refuses metadata updates of a shelved
        # and offloaded server: 409)
        self.api_fixture.api.post_server_metadata(
            victim['id'], {vs.OWNER_RESTORE_KEY: 'off'})
        normal = self.preempt(victim)
        self.delete(normal)
        self.wait_node_vcpus('host1', 4)
        for _ in range(2):
            self.rec.run_once()
            self.assertEqual([], self.rec.restored)
        self.assertEqual('SHELVED_OFFLOADED', self.status(victim))
        # the record waits (the owner's unshelve clears it)
        self.assertEqual(vs.RESTORE_PENDING,
                         self.sysmeta(victim['id']).state)

    def test_normal_request_during_the_restore_still_lands(self):
        victim, filler = self.boot_victim()
        normal = self.preempt(victim)
        self.delete(normal)
        self.assertTrue(self.round_until(lambda: self.rec.restored))
        # the unshelve is in flight: a normal request arrives now
        second = self.boot('large', name='second')
        self.assertEqual('ACTIVE', second['status'])
        # the host ends within its capacity, the normal server kept; the
        # restored server yields (preempted, or its unshelve refused, or
        # shelved again by the reconciler's repair of the race) and waits
        # again
        ok = self.round_until(
            lambda: self.full_used('host1') == (8, 16000, 160)
            and self.status(victim) == 'SHELVED_OFFLOADED'
            and self.sysmeta(victim['id']).state == vs.RESTORE_PENDING)
        self.assertTrue(ok, (self.full_used('host1'), self.status(victim),
                             self.sysmeta(victim['id'])))
        self.assertEqual('ACTIVE', self.status(second))
        state = self.sysmeta(victim['id'])
        self.assertEqual(vs.RESTORE_PENDING, state.state)
        self.assertIn(state.interruptions, (1, 2))


class RestoreLimitTest(_RestoreBase):

    SPECS = {vs.MAX_INTERRUPTIONS_SPEC: '2'}

    def test_stays_shelved_after_max_interruptions(self):
        victim, filler = self.boot_victim()
        normal = self.preempt(victim)
        self.delete(normal)
        self.assertTrue(self.round_until(lambda: self.rec.restored))
        self.wait_status(victim, 'ACTIVE', 120)
        self.rec.run_once()
        self.assertIsNone(self.sysmeta(victim['id']))
        # restored: the cheapest again (launched just now)
        normal = self.preempt(victim)
        state = self.sysmeta(victim['id'])
        self.assertEqual((vs.RESTORE_GIVEN_UP, 2),
                         (state.state, state.interruptions))
        # its owner is told why (its server's metadata)
        text = vs.given_up_message(2, 2)
        seen = self.api_fixture.api.get_server(victim['id'])
        self.assertEqual(text, seen['metadata'][actions.RESTORE_STATUS_KEY])
        # room returns: it is not restored
        self.delete(normal)
        self.round_until(lambda: self.full_used('host1') == (4, 8000, 80),
                         timeout=30)
        self.rec.run_once()
        self.assertEqual([], self.rec.restored)
        self.assertEqual('SHELVED_OFFLOADED', self.status(victim))
        # its owner may still unshelve it: the record is then cleared
        self.api.post_server_action(victim['id'], {'unshelve': None})
        self.wait_status(victim, 'ACTIVE', 120)
        self.rec.run_once()
        self.assertIsNone(self.sysmeta(victim['id']))


class RestoreHeadroomTest(_RestoreBase):
    """A restore never takes a pool below its headroom."""

    EXTRA_FLAGS = dict(_RestoreBase.EXTRA_FLAGS, opie_preemption=dict(
        _RestoreBase.EXTRA_FLAGS['opie_preemption'],
        headroom='4 vcpu'))

    def test_restore_keeps_the_headroom(self):
        victim, filler = self.boot_victim()
        normal = self.preempt(victim)
        self.delete(normal)
        # 4 vCPUs free = the headroom: restoring would eat it (and the
        # headroom step has nothing to do)
        self.wait_node_vcpus('host1', 4)
        for _ in range(2):
            self.rec.run_once()
            self.assertEqual([], self.rec.restored)
        self.assertEqual('SHELVED_OFFLOADED', self.status(victim))
        self.assertEqual(vs.RESTORE_PENDING,
                         self.sysmeta(victim['id']).state)
        self.assertEqual('ACTIVE', self.status(filler))


class RestoreTwoHostsTest(_RestoreBase):
    """Both hosts full: the victim waits however many rounds run, and
    comes back where the room returns (the devcloud scenario's shape,
    opie_sched_tempest_plugin/tests/scenario/test_restore.py).
    """

    HOSTS = ('host1', 'host2')

    def test_no_room_on_any_host_no_unshelve(self):
        victim, filler = self.boot_victim()
        others = []
        for i, runtime in enumerate((2000, 3000)):
            other = self.boot('restoring.preemptible', host='host2',
                              name='other%d' % i)
            self.set_runtime(other['id'], runtime)
            others.append(other)
        normal = self.preempt(victim)
        self.assertEqual('host1', self.server_host(normal))
        self.wait_node_vcpus('host1', 8)
        for _ in range(3):
            self.rec.run_once()
            self.assertEqual([], self.rec.restored)
            time.sleep(0.5)
        self.assertEqual('SHELVED_OFFLOADED', self.status(victim))
        self.assertNotIn('unshelve', self.action_names(victim['id']))
        self.delete(normal)
        self.assertTrue(self.round_until(lambda: self.rec.restored))
        back = self.wait_status(victim, 'ACTIVE', 120)
        self.assertEqual('host1', back['OS-EXT-SRV-ATTR:host'])
        for server in others + [filler]:
            self.assertEqual('ACTIVE', self.status(server))
        self.assertEqual((8, 16000, 160), self.full_used('host1'))
        self.assertEqual((8, 16000, 160), self.full_used('host2'))


class RestoreClaimInFlightTest(_RestoreBase,
                               test_preemption_holds._ClaimHelpers):
    """The room a restore takes is the room Placement gives: a normal
    claim already in Placement that the host's ComputeNode record does not
    show yet (a server scheduled there and not yet built, the window
    between a victim's offload and its preemptor's build) holds its room.
    No unshelve is tried into it (it would only be refused: a futile
    ``unshelve`` action on the owner's server, and a round's restore slot
    spent).
    """

    def test_claim_in_flight_holds_the_room(self):
        victim, filler = self.boot_victim()
        normal = self.preempt(victim)
        self.delete(normal)
        # the ComputeNode record shows the room back ...
        self.wait_node_vcpus('host1', 4)
        # ... and a normal claim of the same size is in Placement already
        rp = self._get_provider_uuid_by_host('host1')
        in_flight = '6c0f4a1e-8b2d-4c3a-9e7f-1d2b3c4d5e6f'
        self.claim(rp, in_flight, 4, 8000, 80)
        for _ in range(2):
            self.rec.run_once()
            self.assertEqual([], self.rec.restored)
        self.assertEqual('SHELVED_OFFLOADED', self.status(victim))
        self.assertNotIn('unshelve', self.action_names(victim['id']))
        self.assertEqual(vs.RESTORE_PENDING,
                         self.sysmeta(victim['id']).state)
        # the claim goes (its server failed): the room is the restore's
        self.placement.delete('/allocations/%s' % in_flight)
        self.assertTrue(self.round_until(lambda: self.rec.restored))
        back = self.wait_status(victim, 'ACTIVE', 120)
        self.assertEqual('host1', back['OS-EXT-SRV-ATTR:host'])
        self.assertEqual(['unshelve'], [a for a in self.action_names(
            victim['id']) if a == 'unshelve'])
        self.assertEqual('ACTIVE', self.status(filler))


class _MarketRestoreBase(_RestoreBase):
    """The market's real enforcement (an interruption drill, which
    interrupts by the flavor's behaviour like any market notice), through
    openstacksdk with the token ``admin:admin`` (the market's service user,
    in its own project); the servers' owner is nova's test project.
    """

    def setUp(self):
        super().setUp()
        self.useFixture(clients.RealClients(self))
        state = self.useFixture(fixtures.TempDir()).path
        store = db_api.MarketStore(
            'sqlite:///' + os.path.join(state, 'market.sqlite'))
        store.sync()
        self.addCleanup(store.dispose)
        auth = loading.get_plugin_loader('admin_token').load_from_options(
            endpoint=self.api_fixture.base_url, token='admin:admin')
        sdk = openstack.connection.Connection(
            session=ks_session.Session(auth=auth))
        self.market = market_engine.MarketEngine(
            store, market_engine.Cloud(sdk, 'hypervisors'),
            market_engine.Settings(period_seconds=3600, notice_period=60))

    def boot_restoring(self, name, port=None):
        server = self._build_server(
            name=name, flavor_id=self.flavor_ids['restoring.preemptible'],
            networks=[{'port': port}] if port else 'none', host='host1')
        return self._wait_for_state_change(
            self.api.post_server({'server': server}), 'ACTIVE',
            max_retries=self.BOOT_POLLS)

    def market_preempts(self, server):
        """The market interrupts ``server`` (a drill's notice, then the
        enforcement at its deadline): shelved and offloaded.
        """
        now = time.time()
        info = self.market.cloud.get_server(server['id'])
        self.market.enforcer.give_drill_notice(info, 0, now, 'test')
        report = self.market.tick(now + 1)
        self.assertEqual([server['id']], report.preempted, report.errors)
        self.wait_status(server, 'SHELVED_OFFLOADED', 120)


class MarketRestoreTest(_MarketRestoreBase):

    def test_market_victim_restored_owner_shelved_kept(self):
        victim = self.boot_restoring(
            'victim', port=self.neutron.port_1['id'])
        mine = self.boot_restoring('mine')
        # the owner writes the market's mark and shelves their own server
        self.api.post_server_metadata(
            mine['id'], {vs.PREEMPTED_BY_KEY: 'opie-market'})
        self.api.post_server_action(mine['id'], {'shelve': None})
        self.wait_status(mine, 'SHELVED_OFFLOADED', 120)
        self.market_preempts(victim)
        self.assertEqual('opie-market-drill', self.owner_metadata(victim)[
            vs.PREEMPTED_BY_KEY])
        self.assertEqual(victim['id'], self.port_device())
        # no record written by the market (it cannot): the round adopts it
        self.assertIsNone(self.sysmeta(victim['id']))
        self.assertTrue(self.round_until(lambda: self.rec.restored))
        self.assertEqual([victim['id']], self.rec.restored)
        back = self.wait_status(victim, 'ACTIVE', 120)
        self.assertEqual('host1', back['OS-EXT-SRV-ATTR:host'])
        self.assertEqual(victim['id'], self.port_device())
        self.rec.run_once()
        self.assertIsNone(self.sysmeta(victim['id']))
        self.assertEqual('1', self.raw_sysmeta(victim['id'])[
            vs.KEY_INTERRUPTIONS])
        self.assertTrue(self.owner_metadata(victim)[
            actions.RESTORE_STATUS_KEY].startswith('Restored at '))
        # the server its owner shelved: room on host1 all along, never
        # adopted nor unshelved
        for _ in range(2):
            self.rec.run_once()
            self.assertEqual([], self.rec.restored)
        self.assertEqual('SHELVED_OFFLOADED', self.status(mine))
        self.assertNotIn(vs.KEY_STATE, self.raw_sysmeta(mine['id']))
        self.assertNotIn('unshelve', self.action_names(mine['id']))


class MarketRestoreLimitTest(_MarketRestoreBase):

    SPECS = {vs.MAX_INTERRUPTIONS_SPEC: '1'}

    def test_market_victim_at_its_limit_stays_shelved(self):
        victim = self.boot_restoring('victim')
        self.market_preempts(victim)
        for _ in range(2):
            self.rec.run_once()
            self.assertEqual([], self.rec.restored)
        state = self.sysmeta(victim['id'])
        self.assertEqual((vs.RESTORE_GIVEN_UP, 1),
                         (state.state, state.interruptions))
        self.assertEqual(vs.given_up_message(1, 1), self.owner_metadata(
            victim)[actions.RESTORE_STATUS_KEY])
        self.assertEqual('SHELVED_OFFLOADED', self.status(victim))
        self.assertNotIn('unshelve', self.action_names(victim['id']))


class SchedulerEventsTest(_MarketRestoreBase):
    """The scheduler's interruption in the owner's event history with the
    default configuration (no notification listener): the market's next
    period reads the victim's instance actions, also once it is deleted.
    """

    def test_scheduler_victim_in_event_history_after_its_deletion(self):
        victim, filler = self.boot_victim()
        project = self.api.get_server(victim['id'])['tenant_id']
        now = time.time()
        self.market.tick(now)
        store = self.market.store
        self.assertIsNone(store.get_lifetime(victim['id'])['ended_at'])
        self.preempt(victim)
        # its owner deletes the shelved victim before the next period
        self.delete(victim)
        self.market.tick(now + 3600)
        rows, _ = store.events_page(project, server_uuid=victim['id'])
        self.assertEqual([('interruption', 'scheduler', 'shelve')],
                         [(r['kind'], r['cause'], r['action'])
                          for r in rows])
        self.assertEqual('interrupted',
                         store.get_lifetime(victim['id'])['end'])
        # another project sees none of it
        self.assertEqual([], store.events_page('other-project')[0])
        # a third period adds nothing
        self.market.tick(now + 7200)
        self.assertEqual(1, len(store.events_page(
            project, server_uuid=victim['id'])[0]))
