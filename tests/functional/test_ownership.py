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

Each test reproduces one hole of issue 30 and failed before its fix.
"""

import datetime
import sqlalchemy as sa

from oslo_utils import timeutils

from nova import context as nova_context
from nova.db.main import api as main_db
from nova.db.main import models as main_models

from opie_sched.scheduler import reconciler
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
