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
"""Placement decisions on a real in-process Nova: which requests may
preempt (moves, rebuilds), one capacity model (Placement's), what counts as
a candidate victim (soft-deleted servers, a resize's source allocation),
reservations cleared when a request fails, and a hung compute that cannot
stall the scheduler.
"""

import threading
import time
from unittest import mock

import fixtures
from oslo_messaging import opts as messaging_opts
from oslo_utils.fixture import uuidsentinel as uuids

from nova.compute import manager as compute_manager
import nova.conf
from nova import context as nova_context
from nova import exception
from nova.scheduler import utils as scheduler_utils
from nova.tests.functional.api import client as api_client

from opie_sched.common import flavors
from opie_sched.common import provider_config
from opie_sched.demo import fake_driver
from opie_sched.notifications import base as notes
from opie_sched.preemption import victim_state as vs
from opie_sched.scheduler import reconciler
from tests.functional import test_preemption_holds

CONF = nova.conf.CONF
#: An image of nova's Glance fixture other than the default one.
OTHER_IMAGE = 'a2459075-d96c-40d5-893e-577ff92e721c'


class _Base(test_preemption_holds._Base):
    """With test_preemption_holds' helpers (``sysmeta``, ``full_used``)."""

    #: polls of 0.5 s before a wait for a server state fails (the machine
    #: running the tests may be loaded)
    RETRIES = 120

    def _wait_for_state_change(self, server, expected_status,
                               max_retries=None, **kwargs):
        return super()._wait_for_state_change(
            server, expected_status, max_retries or self.RETRIES, **kwargs)

    def _wait_for_migration_status(self, server, expected_statuses):
        statuses = [s.lower() for s in expected_statuses]
        for _ in range(self.RETRIES):
            for mig in self.api.api_get('/os-migrations').body[
                    'migrations']:
                if (mig['instance_uuid'] == server['id']
                        and mig['status'].lower() in statuses):
                    return mig
            time.sleep(0.5)
        self.fail('No migration of %s in status %s'
                  % (server['id'], statuses))

    def other_project_api(self):
        """The API as a member of another project."""
        api = api_client.TestOpenStackClient(
            'other-user', self.api.base_url, project_id=uuids.other_project,
            roles=['reader', 'member'])
        api.microversion = 'latest'
        return api

    def all_live_uuids(self):
        """Servers of every project (soft-deleted ones included)."""
        return {s['id'] for s in self.api.api_get(
            '/servers?all_tenants=1').body['servers']}

    def boot_as(self, api, flavor, name):
        server = api.post_server({'server': self._build_server(
            name=name, flavor_id=self.flavor_ids[flavor], networks='none')})
        return self._wait_for_state_change(server, 'ACTIVE')

    def overcommit_with_normal(self, flavor, **kwargs):
        """Boot a normal server with the preemption phase off: its host's
        full state ends over capacity, as after a forced host or an opie
        scheduler that died after the claim.
        """
        self.flags(enabled=False, group='opie_preemption')
        try:
            return self.boot(flavor, **kwargs)
        finally:
            self.flags(enabled=True, group='opie_preemption')


class MoveTest(_Base):
    """A move whose destination check fails kills nobody (issue 19 #2)."""

    HOSTS = ('host1', 'host2', 'host3')

    def _failing_live_migration(self):
        normal = self.boot('large', host='host1', name='normal')
        pre = []
        for host in ('host2', 'host3'):
            pre += self.fill_with_preemptibles(host, 'large', [100, 200])
        checks = []

        def refuse(self_, ctxt, instance, *args, **kwargs):
            checks.append(self_.host)
            raise exception.MigrationPreCheckError(reason='test refuses')

        with mock.patch.object(compute_manager.ComputeManager,
                               'check_can_live_migrate_destination', refuse):
            self.api.post_server_action(normal['id'], {'os-migrateLive': {
                'host': None, 'block_migration': 'auto'}})
            self._wait_for_migration_status(normal, ['error', 'failed'])
            normal = self._wait_for_state_change(normal, 'ACTIVE')
        return normal, pre, checks

    def test_failing_live_migration_preempts_nowhere_by_default(self):
        normal, pre, checks = self._failing_live_migration()
        self.assertEqual('host1', self.server_host(normal))
        # The move was placed like a preemptible request: host2 and host3
        # have no room in their full state, so no destination was tried
        # and nobody died.
        self.assertEqual([], checks)
        self.assertEqual({normal['id']} | {p['id'] for p in pre},
                         self.live_uuids())
        self.assertEqual([], self.preempt_notifications())
        for host in ('host2', 'host3'):
            self.assertEqual((8, 16000, 160), self.full_used(host))

    def test_opt_in_all_moves_preempt_has_the_documented_cost(self):
        # moves_preempt = all: victims die inside select_destinations,
        # before the conductor's check; it frees the claim and asks again.
        self.flags(moves_preempt='all', group='opie_preemption')
        normal, pre, checks = self._failing_live_migration()
        self.assertEqual('host1', self.server_host(normal))
        self.assertEqual(['host2', 'host3'], sorted(checks))
        dead = {p['id'] for p in pre} - self.live_uuids()
        self.assertEqual(2, len(dead))
        self.assertEqual({'host2', 'host3'},
                         {notes.from_primitive(n['payload']).host
                          for n in self.preempt_notifications()})

    def test_resize_preempts_by_default(self):
        # Its owner's resize must not fail because of preemptible servers:
        # nova asks once, a reschedule goes only to alternates (which never
        # need preemption), so victims die on one host at most.
        normal = self.boot('large', host='host1', name='normal')
        pre = []
        for host in ('host2', 'host3'):
            pre += self.fill_with_preemptibles(host, 'large', [100, 200])
        self.api.post_server_action(normal['id'], {'migrate': None})
        normal = self._wait_for_state_change(normal, 'VERIFY_RESIZE')
        dest = self.server_host(normal)
        self.assertIn(dest, ('host2', 'host3'))
        self.assertEqual(1, len({p['id'] for p in pre} - self.live_uuids()))
        self.assertEqual([dest], [
            notes.from_primitive(n['payload']).host
            for n in self.preempt_notifications()])

    def test_resize_preempts_nobody_with_none(self):
        self.flags(moves_preempt='none', group='opie_preemption')
        normal = self.boot('large', host='host1', name='normal')
        pre = []
        for host in ('host2', 'host3'):
            pre += self.fill_with_preemptibles(host, 'large', [100, 200])
        self.api.post_server_action(normal['id'], {'migrate': None})
        self._wait_for_migration_status(normal, ['error', 'failed'])
        self.assertEqual({normal['id']} | {p['id'] for p in pre},
                         self.live_uuids())
        self.assertEqual([], self.preempt_notifications())

    def test_cold_migration_onto_free_room_still_works(self):
        normal = self.boot('large', host='host1', name='normal')
        pre = self.fill_with_preemptibles('host2', 'large', [100, 200])
        self.api.post_server_action(normal['id'], {'migrate': None})
        normal = self._wait_for_state_change(normal, 'VERIFY_RESIZE')
        # host3 had room in its full state; host2 was never a choice
        self.assertEqual('host3', self.server_host(normal))
        self.assertEqual({normal['id']} | {p['id'] for p in pre},
                         self.live_uuids())


class RebuildTest(_Base):
    """A rebuild never preempts, even on an overcommitted host."""

    def test_rebuild_with_new_image_preempts_nobody(self):
        pre = self.fill_with_preemptibles('host1', 'large', [100, 200])
        normal = self.overcommit_with_normal('large', name='normal')
        self.assertEqual((12, 24000, 240), self.full_used('host1'))
        # a new image: nova asks the scheduler (_nova_check_type=rebuild)
        self.api.post_server_action(normal['id'], {'rebuild': {
            'imageRef': OTHER_IMAGE}})
        self._wait_for_instance_action_event(
            normal, 'rebuild', 'compute_rebuild_instance', 'success')
        self._wait_for_state_change(normal, 'ACTIVE')
        self.assertEqual({normal['id'], pre[0]['id'], pre[1]['id']},
                         self.live_uuids())
        self.assertEqual([], self.preempt_notifications())
        for p in pre:
            self.assertIsNone(self.sysmeta(p['id']))


class FailedRequestTest(_Base):
    """A request that fails after reserving victims leaves none reserved."""

    def test_failed_multi_create_clears_its_reservations(self):
        pre = self.fill_with_preemptibles('host1', 'large', [100, 200])
        req = self._build_server(flavor_id=self.flavor_ids['large'],
                                 networks='none')
        # two fit the normal state (each reserving a victim), the third
        # does not: the whole request fails
        req.update(min_count=3, max_count=3, return_reservation_id=True)
        self.api.post_server({'server': req})
        failed = [s for s in self.api.get_servers()
                  if s['flavor']['original_name'] == 'large']
        self.assertEqual(3, len(failed))
        for s in failed:
            self._wait_for_state_change(s, 'ERROR')
        for p in pre:
            self.assertIsNone(self.sysmeta(p['id']))
        self.assertEqual({p['id'] for p in pre} | {s['id'] for s in failed},
                         self.live_uuids())
        self.assertEqual([], self.preempt_notifications())
        self.assertEqual((8, 16000, 160), self.full_used('host1'))


class CapacityModelTest(_Base):
    """Placement's capacity, (total − reserved) × ratio, in the filter and
    the reconciler's screen (issue 19 #3): 32 pCPU, 4 reserved, ratio 4.
    """

    PCPUS, RESERVED, RATIO = 32, 4, 4.0

    def _setup_compute_service(self):
        self.flags(reserved_host_cpus=self.RESERVED,
                   cpu_allocation_ratio=self.RATIO,
                   initial_cpu_allocation_ratio=self.RATIO)
        self.useFixture(fake_driver.SizedFakeHosts(self.PCPUS, 64000, 400))
        doc = provider_config.build_provider_config([dict(
            uuid=provider_config.COMPUTE_NODE, vcpus=self.PCPUS,
            memory_mb=64000, disk_gb=400, reserved_vcpus=self.RESERVED,
            cpu_allocation_ratio=self.RATIO)])
        path = '%s/opie-preemptible.yaml' % (
            CONF.compute.provider_config_location)
        with open(path, 'w') as f:
            f.write(provider_config.dump_yaml(doc))
        return super()._setup_compute_service()

    def setUp(self):
        super().setUp()
        for name, vcpus in (('c32', 32), ('c12', 12)):
            self.flavor_ids[name] = self._create_flavor(
                name=name, vcpu=vcpus, memory_mb=1000, disk=10)
            self.flavor_ids[name + '.preemptible'] = self._create_flavor(
                name=name + '.preemptible', vcpu=vcpus, memory_mb=1000,
                disk=10, extra_spec=flavors.preemptible_extra_specs(
                    vcpus, 1000, 10))

    def test_preemptible_refused_at_108_of_112_and_screen_sees_overcommit(
            self):
        inv = self.placement.get('/resource_providers/%s/inventories' % (
            self._get_provider_uuid_by_host('host1'))).body['inventories']
        self.assertEqual((32, 4, 4.0), (inv['VCPU']['total'],
                                        inv['VCPU']['reserved'],
                                        inv['VCPU']['allocation_ratio']))
        for i in range(3):
            self.boot('c32', name='n%d' % i)
        first = self.boot('c12.preemptible', name='p0')
        self.assertEqual(108, self.full_used('host1')[0])
        # 108 + 12 > (32 - 4) x 4 = 112 (total x ratio would say 128)
        refused = self.boot('c12.preemptible', name='p1', expected='ERROR')
        self.assertIn('No valid host', refused['fault']['message'])
        self.assertEqual(108, self.full_used('host1')[0])
        # refused by the filter, before any claim (not by the usage check
        # after a claim, which would also catch it)
        self.assertNotIn('claim taken back', self.stdlog.logger.output)

        # A normal 12 vCPU admitted while the preemption phase is off:
        # 120 of 112 in Placement's model, 124 of 128 in the ComputeNode
        # record's total x ratio with reserved counted as used.
        late = self.overcommit_with_normal('c12', name='late')
        self.assertEqual(120, self.full_used('host1')[0])
        rec = reconciler.Reconciler()
        [(_, plan)] = rec.plan(nova_context.get_admin_context())
        self.assertEqual([first['id']],
                         [inst.uuid for inst, _ in plan.victims])
        self.assertEqual(1, len(rec.run_once()))
        self._wait_until_deleted(first)
        self.assertEqual(108, self.full_used('host1')[0])
        self.assertIn(late['id'], self.live_uuids())


class SoftDeletedVictimTest(_Base):
    """A soft-deleted preemptible server is a candidate (issue 19 #5)."""

    def test_owner_soft_deleting_cheapest_is_its_own_victim(self):
        self.flags(reclaim_instance_interval=3600)
        other = self.other_project_api()
        mine = self.boot('large.preemptible', name='mine')
        self.set_runtime(mine['id'], 100)
        theirs = self.boot_as(other, 'large.preemptible', 'theirs')
        self.set_runtime(theirs['id'], 2000)
        self.assertNotEqual(mine['tenant_id'], theirs['tenant_id'])
        # the owner soft-deletes their cheapest server: it keeps its
        # allocation (and could be restored)
        self.api.delete_server(mine['id'])
        self._wait_for_state_change(mine, 'SOFT_DELETED')
        self.assertEqual((8, 16000, 160), self.full_used('host1'))

        normal = self.boot('large', name='normal')
        # the soft-deleted server was the cheapest candidate: it was
        # deleted for good; the other project's server runs on
        self._wait_until_deleted(mine)
        self.assertTrue(self.db_instance(mine['id']).deleted)
        self.assertEqual({theirs['id'], normal['id']},
                         self.all_live_uuids())
        [note] = self.preempt_notifications()
        self.assertEqual([mine['id']], [
            v.uuid for v in notes.from_primitive(note['payload']).victims])
        self.assertEqual((8, 16000, 160), self.full_used('host1'))


class ResizeSourceVictimTest(_Base):
    """An unconfirmed resize's source allocation (consumer: the migration)
    holds its room, and its instance is pinned by its owner's move: it is
    never a victim while its owner may revert (issue 30; issue 19 #5 made
    it its own victim, which issue 30 hole 1 showed destroys the mover).
    """

    HOSTS = ('host1', 'host2')

    def set_enabled(self, host, enabled):
        [service] = self.api.get_services(binary='nova-compute', host=host)
        self.api.put_service(service['id'], {
            'status': 'enabled' if enabled else 'disabled'})

    def test_unconfirmed_resize_source_holds_its_room(self):
        other = self.other_project_api()
        mine = self.boot('large.preemptible', host='host1', name='mine')
        self.set_runtime(mine['id'], 100)
        # the other project cannot pick a host: host2 is disabled meanwhile
        self.set_enabled('host2', False)
        theirs = self.boot_as(other, 'large.preemptible', 'theirs')
        self.set_enabled('host2', True)
        self.assertEqual('host1', self.server_host(theirs))
        self.set_runtime(theirs['id'], 2000)
        # resized away, not confirmed: host1 keeps the old allocation,
        # held by the migration record
        self.flavor_ids['narrow.preemptible'] = self._create_flavor(
            name='narrow.preemptible', vcpu=2, memory_mb=4000, disk=80,
            extra_spec=flavors.preemptible_extra_specs(2, 4000, 80))
        self.api.post_server_action(mine['id'], {'resize': {
            'flavorRef': self.flavor_ids['narrow.preemptible']}})
        mine = self._wait_for_state_change(mine, 'VERIFY_RESIZE')
        self.assertEqual('host2', self.server_host(mine))
        self.assertEqual((8, 16000, 160), self.full_used('host1'))

        normal = self.boot('large', host='host1', name='normal')
        # the other preemptible server made the room
        self._wait_until_deleted(theirs)
        self.assertEqual({mine['id'], normal['id']},
                         self.all_live_uuids())
        self.assertEqual((8, 16000, 160), self.full_used('host1'))
        self.assertEqual((2, 4000, 80), self.full_used('host2'))


class HungComputeTest(_Base):
    """Preempting requests waiting on a hung compute hold at most
    ``max_release_waits`` scheduler threads: a normal request on free room
    is scheduled meanwhile (issue 19 #9, issue 21 concurrency).
    """

    HOSTS = ('host1', 'host2')
    POOL = 4
    RELEASE_TIMEOUT = 30.0
    EXTRA_FLAGS = {'opie_reconciler': {'run_in_scheduler': False},
                   'opie_preemption': {'max_release_waits': 2,
                                       'release_timeout': RELEASE_TIMEOUT,
                                       'poll_interval': 0.2}}

    def setUp(self):
        # every RPC server of the process (scheduler, conductor, computes)
        # gets POOL executor threads (oslo.messaging registers the option
        # when the first server starts: register it first)
        for group, opts in messaging_opts.list_opts():
            if group in (None, 'DEFAULT'):
                CONF.register_opts([o for o in opts
                                    if o.name == 'executor_thread_pool_size'])
        self.flags(executor_thread_pool_size=self.POOL)
        super().setUp()

    def test_free_room_request_is_not_blocked_by_waits(self):
        pre = self.fill_with_preemptibles('host1', 'medium',
                                          [100, 200, 300, 400])
        unblock = threading.Event()
        self.addCleanup(unblock.set)
        real = compute_manager.ComputeManager.terminate_instance

        def hung(self_, context, instance, bdms):
            # the compute accepted the delete and never finishes it
            unblock.wait(self.RELEASE_TIMEOUT * 3)
            return real(self_, context, instance, bdms)

        self.useFixture(fixtures.MockPatchObject(
            compute_manager.ComputeManager, 'terminate_instance', hung))
        # as many preempting requests as the scheduler has threads
        posted = [self.api.post_server({'server': self._build_server(
            name='needs-room-%d' % i, flavor_id=self.flavor_ids['medium'],
            networks='none', host='host1')}) for i in range(self.POOL)]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            states = {self.sysmeta(p['id']).state if self.sysmeta(p['id'])
                      else None for p in pre}
            if states == {vs.TERMINATING}:
                break
            time.sleep(0.2)
        self.assertEqual({vs.TERMINATING}, states)
        start = time.monotonic()
        free = self.boot('medium', host='host2', name='free-room')
        elapsed = time.monotonic() - start
        self.assertEqual('host2', self.server_host(free))
        # two requests wait for their victims, the other two went on: the
        # free-room request found a scheduler thread at once, well before
        # any wait could time out
        self.assertLess(elapsed, self.RELEASE_TIMEOUT / 2)
        unblock.set()
        for server in posted:
            self._wait_for_state_change(server, 'ACTIVE')
        for p in pre:
            self._wait_until_deleted(p)


class RacingPreemptibleClaimTest(_Base):
    """After a preemptible claim, the same usage check as a normal one:
    a claim that a concurrent claim left without room is taken back
    (issue 19 #3).
    """

    def test_claim_over_capacity_is_taken_back(self):
        self.boot('large', name='normal')
        self.fill_with_preemptibles('host1', 'medium', [100])
        rp = self._get_provider_uuid_by_host('host1')
        real = scheduler_utils.claim_resources
        raced = []

        def racing(ctx, client, spec_obj, instance_uuid, alloc_req,
                   **kwargs):
            # another worker's preemptible claim lands between this
            # request's allocation candidates and its claim
            if not raced:
                raced.append(self.placement.put(
                    '/allocations/%s' % uuids.racer,
                    {'allocations': {rp: {'resources': {
                        flavors.VCPU_CLASS: 2,
                        flavors.MEMORY_MB_CLASS: 4000,
                        flavors.DISK_GB_CLASS: 40}}},
                     'project_id': uuids.other_project, 'user_id': 'u',
                     'consumer_generation': None}, version='1.28'))
            return real(ctx, client, spec_obj, instance_uuid, alloc_req,
                        **kwargs)

        with mock.patch.object(scheduler_utils, 'claim_resources', racing):
            late = self.boot('medium.preemptible', name='late',
                             expected='ERROR')
        self.assertEqual(204, raced[0].status)
        self.assertIn('No valid host', late['fault']['message'])
        # the racer kept the room; the host is within capacity
        self.assertEqual((8, 16000, 160), self.full_used('host1'))
        self.assertEqual({}, self.placement.get(
            '/allocations/%s' % late['id']).body['allocations'])


class UnshelveTest(_Base):
    """An unshelve is its owner starting the server again: it may preempt
    like a new server (the conductor asks once, no retry elsewhere).
    """

    def test_unshelve_preempts_like_a_boot(self):
        normal = self.boot('large', name='normal')
        self._shelve_server(normal)     # offloaded at once (default)
        pre = self.fill_with_preemptibles('host1', 'large', [100, 2000])
        self.api.post_server_action(normal['id'], {'unshelve': None})
        self._wait_for_state_change(normal, 'ACTIVE')
        self.assertEqual('host1', self.server_host(normal))
        self._wait_until_deleted(pre[0])
        self.assertEqual({normal['id'], pre[1]['id']}, self.live_uuids())
        self.assertEqual((8, 16000, 160), self.full_used('host1'))


class EvacuateTest(_Base):
    """Evacuations: no preemption by default; ``moves_preempt = evacuate``
    lets them preempt (the conductor asks once per evacuation).
    """

    HOSTS = ('host1', 'host2')

    def _evacuate_from_dead_host1(self):
        normal = self.boot('large', host='host1', name='normal')
        pre = self.fill_with_preemptibles('host2', 'large', [100, 2000])
        self.computes['host1'].stop()
        [service] = self.api.get_services(binary='nova-compute',
                                          host='host1')
        self.api.put_service_force_down(service['id'], True)
        self.api.post_server_action(normal['id'], {'evacuate': {}})
        return normal, pre

    def test_evacuation_preempts_nobody_by_default(self):
        normal, pre = self._evacuate_from_dead_host1()
        self._wait_for_migration_status(normal, ['error'])
        self.assertEqual('host1', self.server_host(normal))
        self.assertEqual({normal['id'], pre[0]['id'], pre[1]['id']},
                         self.live_uuids())
        self.assertEqual([], self.preempt_notifications())

    def test_opt_in_evacuation_preempts(self):
        self.flags(moves_preempt='evacuate', group='opie_preemption')
        normal, pre = self._evacuate_from_dead_host1()
        self._wait_for_migration_status(normal, ['done'])
        self._wait_for_server_parameter(
            normal, {'OS-EXT-SRV-ATTR:host': 'host2',
                     'OS-EXT-STS:task_state': None}, max_retries=120)
        self._wait_until_deleted(pre[0])
        self.assertEqual({normal['id'], pre[1]['id']}, self.live_uuids())
        self.assertEqual((8, 16000, 160), self.full_used('host2'))
