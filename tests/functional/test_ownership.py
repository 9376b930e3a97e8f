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
"""The ownership model on a real in-process Nova (issue 30): an owner's
move never preempts the mover, a preemptible life counts from when the
server became preemptible, a move's source allocation holds its room, a
stuck delete leaves only until a deadline, the resource classes decide
what is preemptible, and a server holds only the disk it claims.

Each hole test reproduces one hole of issue 30 and failed before its
fix.
"""

import datetime
import threading
import time

import fixtures
import sqlalchemy as sa

from oslo_utils import timeutils

from nova.compute import manager as compute_manager
from nova import context as nova_context
from nova.db.main import api as main_db
from nova.db.main import models as main_models
from nova import objects
from nova.tests import fixtures as nova_fixtures

from opie_sched.common import flavors
from opie_sched.preemption import victim_state as vs
from opie_sched.scheduler import ownership
from opie_sched.scheduler import reconciler
from opie_sched.scheduler import reservations
from tests.functional import base
from tests.functional import test_placement_decisions

_Base = test_placement_decisions._Base


@main_db.pick_context_manager_writer
def _age_migrations(context, instance_uuid, seconds):
    """Pretend the migrations of an instance began ``seconds`` ago."""
    then = timeutils.utcnow() - datetime.timedelta(seconds=seconds)
    table = main_models.Migration.__table__
    context.session.execute(sa.update(table).where(
        table.c.instance_uuid == instance_uuid).values(created_at=then))


class _OwnershipBase(_Base):
    HOSTS = ('host1',)
    EXTRA_FLAGS = {'opie_reconciler': {'run_in_scheduler': False},
                   None: {'allow_resize_to_same_host': True}}

    def resize(self, server, flavor, status='VERIFY_RESIZE'):
        self.api.post_server_action(server['id'], {'resize': {
            'flavorRef': self.flavor_ids[flavor]}})
        return self._wait_for_state_change(server, status)

    def confirm(self, server):
        self.api.post_server_action(server['id'], {'confirmResize': None})
        return self._wait_for_state_change(server, 'ACTIVE')

    def cell_context(self):
        ctx = nova_context.get_admin_context()
        return nova_context.target_cell(ctx, self.cell_mappings['cell1'])


class OwnResizeTest(_OwnershipBase):
    """Hole 1 (data loss): a preemptible server resized to a normal flavor
    on its own full host is never the victim of its own resize.
    """

    def test_resize_to_normal_on_a_full_host_spares_the_mover(self):
        # the mover is the cheapest preemptible of the full host
        mine, theirs = self.fill_with_preemptibles('host1', 'large',
                                                   [100, 2000])
        mine = self.resize(mine, 'large')
        self.assertEqual('host1', self.server_host(mine))
        # the other preemptible made the room; the mover lives on
        self._wait_until_deleted(theirs)
        self.assertFalse(self.db_instance(mine['id']).deleted)
        self.assertEqual({mine['id']}, self.all_live_uuids())
        mine = self.confirm(mine)
        self.assertEqual((4, 8000, 80), self.full_used('host1'))


class LifetimeFromResizeTest(_OwnershipBase):
    """Hole 2 (data loss): a 30-day-old normal server resized to a
    preemptible flavor is not ended by ``max_lifetime`` at once, nor while
    its owner may still revert; its preemptible life counts from the
    resize.
    """

    EXTRA_FLAGS = dict(_OwnershipBase.EXTRA_FLAGS,
                       opie_preemption={'max_lifetime': 3600})

    def test_lifetime_counts_from_the_resize_to_preemptible(self):
        old = self.boot('medium', name='old')
        self.set_runtime(old['id'], 30 * 86400)
        old = self.resize(old, 'medium.preemptible')
        rec = reconciler.Reconciler()
        # VERIFY_RESIZE: its owner may still revert; never ended
        self.assertEqual([], rec.run_once())
        self.assertEqual('VERIFY_RESIZE',
                         self.api.get_server(old['id'])['status'])
        old = self.confirm(old)
        # preemptible since the resize, seconds ago: within its limit
        self.assertEqual([], rec.run_once())
        self.assertEqual('ACTIVE', self.api.get_server(old['id'])['status'])
        # two hours after the resize, the limit ends it
        with self.cell_context() as cctxt:
            _age_migrations(cctxt, old['id'], 7200)
        acted = rec.run_once()
        self.assertEqual(1, len(acted))
        self._wait_until_deleted(old)


class UnconfirmedResizeSourceTest(_OwnershipBase):
    """Hole 7: the preemptible source allocation of a resize to a normal
    flavor, left unconfirmed, holds its room: normal servers are not
    placed where only it could make room (a revert would bring the old
    server back on an overcommitted host).
    """

    HOSTS = ('host1', 'host2')
    EXTRA_FLAGS = {'opie_reconciler': {'run_in_scheduler': False}}

    def test_source_allocation_is_not_free_room(self):
        mine = self.boot('large.preemptible', host='host1', name='mine')
        # host2 full of normal servers but for the resized one
        self.boot('large', host='host2', name='n2')
        mine = self.resize(mine, 'large')
        self.assertEqual('host2', self.server_host(mine))
        self.assertEqual((8, 16000, 160), self.full_used('host2'))
        # host1 keeps the migration's preemptible allocation
        self.assertEqual((4, 8000, 80), self.full_used('host1'))
        self.boot('large', host='host1', name='fits')
        self.assertEqual((8, 16000, 160), self.full_used('host1'))
        # no room anywhere: preempting nothing can make room on host1
        refused = self.boot('large', host='host1', name='refused',
                            expected='ERROR')
        self.assertIn('No valid host',
                      self.api.get_server(refused['id'])['fault']['message'])
        self.assertEqual((8, 16000, 160), self.full_used('host1'))
        # the owner can revert onto a host within capacity
        self.api.post_server_action(mine['id'], {'revertResize': None})
        mine = self._wait_for_state_change(mine, 'ACTIVE')
        self.assertEqual('host1', self.server_host(mine))
        self.assertEqual((8, 16000, 160), self.full_used('host1'))


class StuckDeleteTest(_OwnershipBase):
    """Hole 4: a preemptible server stuck in ``deleting`` that is no opie
    victim (its owner's delete was lost, its compute hangs) counts as
    leaving only until ``retry_interval`` after the delete began; then
    the host is repaired.
    """

    EXTRA_FLAGS = {'opie_reconciler': {'run_in_scheduler': False},
                   'opie_preemption': {'retry_interval': 2}}

    def test_stuck_delete_leaves_only_until_its_deadline(self):
        cheap, stuck = self.fill_with_preemptibles('host1', 'large',
                                                   [100, 2000])
        unblock = threading.Event()
        self.addCleanup(unblock.set)
        real = compute_manager.ComputeManager.terminate_instance

        def hang(self_, context, instance, bdms):
            if instance.uuid == stuck['id']:
                # the compute accepted the delete and never finishes it
                unblock.wait(300)
            return real(self_, context, instance, bdms)

        self.useFixture(fixtures.MockPatchObject(
            compute_manager.ComputeManager, 'terminate_instance', hang))
        self.api.delete_server(stuck['id'])
        for _ in range(self.RETRIES):
            if self.api.get_server(stuck['id'])[
                    'OS-EXT-STS:task_state'] == 'deleting':
                break
            time.sleep(0.5)
        # leaving while its delete is young (the normal server may get
        # the room it frees: no victim then), not for ever
        normal = self.boot('large', host='host1', name='normal')
        # the delete never finishes: past its deadline the server holds
        # its room again, and the reconciler repairs the host
        time.sleep(2.5)
        reconciler.Reconciler().run_once()
        self._wait_until_deleted(cheap)
        self.assertEqual({stuck['id'], normal['id']}, self.live_uuids())
        self.assertEqual((8, 16000, 160), self.full_used('host1'))


class ClassesDecideTest(_OwnershipBase):
    """Hole 8: a flavor holding the preemptible classes without the
    marker is preemptible (what Placement holds decides), logged as an
    ERROR: its servers are candidate victims and its requests never
    preempt.
    """

    def test_classes_decide_and_the_marker_disagreement_is_an_error(self):
        ownership._reported.clear()
        specs = flavors.preemptible_extra_specs(4, 8000, 80)
        del specs[flavors.MARKER_KEY]
        self.flavor_ids['unmarked'] = self._create_flavor(
            name='unmarked', vcpu=4, memory_mb=8000, disk=80,
            extra_spec=specs)
        with self.assertLogs('opie_sched.scheduler.ownership',
                             level='ERROR') as logs:
            unmarked = self.boot('unmarked', host='host1', name='unmarked')
        self.assertIn("flavor 'unmarked' requests preemptible resource "
                      "classes without the marker", '\n'.join(logs.output))
        self.set_runtime(unmarked['id'], 100)
        [marked] = self.fill_with_preemptibles('host1', 'large', [2000])
        normal = self.boot('large', host='host1', name='normal')
        # the cheapest preemptible server was the victim
        self._wait_until_deleted(unmarked)
        self.assertEqual({marked['id'], normal['id']}, self.live_uuids())
        # a request of that flavor is preemptible: it preempts nobody
        refused = self.boot('unmarked', host='host1', name='refused',
                            expected='ERROR')
        self.assertIn('No valid host',
                      self.api.get_server(refused['id'])['fault']['message'])
        self.assertEqual({marked['id'], normal['id'], refused['id']},
                         self.live_uuids())
        self.assertEqual((8, 16000, 160), self.full_used('host1'))


class SoftDeletedVictimTest(_OwnershipBase):
    """The reconciler's victim scan includes soft-deleted victims (issue
    30, tests that could not catch): a soft-deleted victim whose delete
    failed, or whose worker died, does not stay leaving for ever.
    """

    EXTRA_FLAGS = {'opie_reconciler': {'run_in_scheduler': False},
                   None: {'reclaim_instance_interval': 3600}}

    def test_soft_deleted_victim_is_terminated_again(self):
        victim, other = self.fill_with_preemptibles('host1', 'large',
                                                    [100, 2000])
        self.api.delete_server(victim['id'])
        self._wait_for_state_change(victim, 'SOFT_DELETED')
        # its termination began and did not complete (the delete failed,
        # or the worker died between its steps): retry due now
        now = timeutils.utcnow(with_timezone=True)
        ctx = nova_context.get_admin_context()
        with nova_context.target_cell(
                ctx, self.cell_mappings['cell1']) as cctxt:
            inst = objects.Instance.get_by_uuid(
                cctxt, victim['id'], expected_attrs=['system_metadata'])
            reservations.write_state(inst, vs.reserve(
                reconciler.PREEMPTED_BY, now - datetime.timedelta(
                    seconds=600)).terminating(
                now - datetime.timedelta(seconds=600), 1, 1))
        reconciler.Reconciler().run_once()
        self._wait_until_deleted(victim)
        self.assertTrue(self.db_instance(victim['id']).deleted)
        self.assertEqual({other['id']}, self.all_live_uuids())


class VolumeBootedDiskTest(_OwnershipBase):
    """Hole 9, boot from volume: a preemptible server booted from a volume
    holds no root disk on its host (nova's rule for ``DISK_GB``, applied to
    ``CUSTOM_PREEMPTIBLE_DISK_GB``), so a normal server needing that disk
    preempts nobody, and a move of it claims no root disk either.
    """

    HOSTS = ('host1', 'host2')

    def boot_from_volume(self, flavor, host, name):
        server = self._build_server(name=name, image_uuid='',
                                    flavor_id=self.flavor_ids[flavor],
                                    networks='none', host=host)
        server['block_device_mapping_v2'] = [{
            'boot_index': 0, 'source_type': 'volume',
            'destination_type': 'volume',
            'uuid': nova_fixtures.CinderFixture.IMAGE_BACKED_VOL}]
        server = self.api.post_server({'server': server})
        return self._wait_for_state_change(server, 'ACTIVE')

    def test_volume_booted_preemptible_holds_no_root_disk(self):
        # a normal server with a disk as large as the host's but for the
        # volume-booted server's (unused) root disk
        disk = base.HOST['disk_gb'] - 40
        self.flavor_ids['diskful'] = self._create_flavor(
            name='diskful', vcpu=4, memory_mb=8000, disk=disk, ephemeral=0)
        bfv = self.boot_from_volume('large.preemptible', 'host1', 'bfv')
        usage = self.usages('host1')
        self.assertEqual((4, 8000, 0), tuple(
            usage.get(rc, 0) for rc in flavors.PREEMPTIBLE_CLASSES))
        normal = self.boot('diskful', host='host1', name='normal')
        # nobody was preempted for disk the preemptible never used
        self.assertEqual({bfv['id'], normal['id']}, self.live_uuids())
        self.assertEqual((8, 16000, disk), self.full_used('host1'))
        # the server's own flavor is untouched by the claim's copy
        self.assertEqual('80', self.api.get_server(bfv['id'])['flavor'][
            'extra_specs']['resources:CUSTOM_PREEMPTIBLE_DISK_GB'])
        # a cold migration claims no root disk on its destination either
        self.api.post_server_action(bfv['id'], {'migrate': None})
        bfv = self._wait_for_state_change(bfv, 'VERIFY_RESIZE')
        self.assertEqual('host2', self.server_host(bfv))
        self.assertEqual((4, 8000, 0), self.full_used('host2'))


class FlavorWithoutLimitTest(_OwnershipBase):
    """A flavor's ``opie:max_lifetime=0`` overrides the cloud-wide limit
    through the reconciler's whole lifetime round (issue 30, tests that
    could not catch): its servers are never ended, whatever their age,
    while another flavor's as old are.
    """

    EXTRA_FLAGS = dict(_OwnershipBase.EXTRA_FLAGS,
                       opie_preemption={'max_lifetime': 3600})

    def test_flavor_zero_means_no_limit(self):
        specs = dict(flavors.preemptible_extra_specs(2, 4000, 40),
                     **{reconciler.LIFETIME_KEY: '0'})
        self.flavor_ids['forever.preemptible'] = self._create_flavor(
            name='forever.preemptible', vcpu=2, memory_mb=4000, disk=40,
            ephemeral=0, extra_spec=specs)
        forever = self.boot('forever.preemptible', name='forever')
        limited = self.boot('medium.preemptible', name='limited')
        for server in (forever, limited):
            self.set_runtime(server['id'], 10 ** 5)
        [plan] = reconciler.Reconciler().run_once()
        self.assertEqual([limited['id']], [i.uuid for i, _ in plan.victims])
        self._wait_until_deleted(limited)
        self.assertEqual({forever['id']}, self.live_uuids())
        self.assertEqual([], reconciler.Reconciler().run_once())
