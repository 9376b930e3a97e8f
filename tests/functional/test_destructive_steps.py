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
"""Every destructive step acts only on victims re-checked at that moment,
on a real in-process Nova: a stopped victim resized during its grace
period, a delete the compute accepts and never finishes, maximum lifetime
after a rescue, a flavor's own limit, the reconciler's dry run, what a
victim's owner sees, concurrent system metadata writes, an unreachable
cell.
"""

import datetime
import threading
import time
from unittest import mock

import fixtures
from oslo_utils.fixture import uuidsentinel as uuids
from oslo_utils import timeutils
import sqlalchemy as sa
import testtools

from nova import context as nova_context
from nova.db.main import api as main_db
from nova.db.main import models as main_models
from nova import objects
from nova.tests.functional.api import client
from nova.virt import fake as fake_virt

from opie_sched.common import flavors
from opie_sched.devcloud import preflight
from opie_sched.preemption import victim_state as vs
from opie_sched.scheduler import actions
from opie_sched.scheduler import reconciler
from opie_sched.scheduler import reservations
from tests.functional import test_preemption_holds

_Base = test_preemption_holds._Base


class _Steps(_Base):

    def cell_ctx(self):
        return nova_context.target_cell(nova_context.get_admin_context(),
                                        self.cell_mappings['cell1'])

    def age(self, server_id, seconds):
        """Make a server ``seconds`` old (created and launched then)."""
        then = timeutils.utcnow() - datetime.timedelta(seconds=seconds)
        with self.cell_ctx() as cctxt:
            main_db.instance_update(cctxt, server_id, {
                'created_at': then, 'launched_at': then})

    def post(self, flavor, host=None, name=None, api=None):
        """POST a server without waiting for it."""
        req = self._build_server(name=name,
                                 flavor_id=self.flavor_ids[flavor],
                                 networks='none', host=host)
        return (api or self.api).post_server({'server': req})

    def raw_sysmeta(self, server_id):
        with self.cell_ctx() as cctxt:
            return main_db.instance_system_metadata_get(cctxt, server_id)

    def wait_status(self, server, status, timeout):
        deadline = time.monotonic() + timeout
        while True:
            found = self.api.get_server(server['id'])
            if found['status'] == status or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        self.assertEqual(status, found['status'])
        return found

    def action_names(self, server_id):
        return sorted(a['action']
                      for a in self.api.get_instance_actions(server_id))


class StoppedVictimResizedTest(_Steps):
    """``action = stop``: the owner resizes the stopped victim to a normal
    flavor during the grace period. The later delete re-checks it: the
    now-normal server is kept and its record cleared.
    """

    HOSTS = ('host1', 'host2')
    EXTRA_FLAGS = {'opie_reconciler': {'run_in_scheduler': False},
                   'opie_preemption': {'action': 'stop',
                                       'stop_grace_period': 20,
                                       'poll_interval': 0.2}}

    def test_resized_victim_is_not_deleted(self):
        p = self.fill_with_preemptibles('host1', 'large', [1000, 2000])
        normal = self.post('large', host='host1', name='normal')
        victim = self.wait_status(p[0], 'SHUTOFF', 120)
        # the owner sees that and why (the cause word), nothing else
        owner = self.api_fixture.api
        owner.microversion = 'latest'
        seen = owner.get_server(victim['id'])
        self.assertEqual(vs.CAUSE_SCHEDULER,
                         seen['metadata']['opie:preempted_by'])
        self.assertNotIn(normal['id'], str(seen))
        # the owner resizes it to a normal flavor (host2 has room)
        self.api.post_server_action(victim['id'], {'resize': {
            'flavorRef': self.flavor_ids['large']}})
        self.wait_status(victim, 'VERIFY_RESIZE', 120)
        # still terminating, or already spared: its owner's move pins it
        # (issue 30), so a grace period that ends during the resize spares
        # it at once (it used to delete it mid-resize)
        state = self.sysmeta(victim['id'])
        self.assertIn(state and state.state, (vs.TERMINATING, None))
        # the grace period ends; the normal request goes on
        self.wait_status(normal, 'ACTIVE', 120)
        inst = self.db_instance(victim['id'])
        self.assertFalse(inst.deleted)
        self.assertNotIn('delete', self.action_names(victim['id']))
        self.assertIsNone(self.sysmeta(victim['id']))
        self.api.post_server_action(victim['id'], {'confirmResize': None})
        self.wait_status(victim, 'SHUTOFF', 120)
        self.assertEqual('large', self.api.get_server(
            victim['id'])['flavor']['original_name'])
        self.assertIn(p[1]['id'], self.live_uuids())


class StuckDeleteTest(_Steps):
    """The compute accepts the victim's delete and never finishes it: the
    victim counts as leaving only until its ``next_attempt``; then it is
    deleted again, attempts counted, a fault and an ERROR after
    ``max_attempts``; once the compute recovers the host is back within
    capacity.
    """

    EXTRA_FLAGS = {'opie_reconciler': {'run_in_scheduler': False},
                   'opie_preemption': {'release_timeout': 1,
                                       'retry_interval': 1,
                                       'max_retry_interval': 1,
                                       'max_attempts': 2}}

    def test_stuck_delete_is_retried_and_faulted(self):
        p = self.fill_with_preemptibles('host1', 'large', [100, 2000])
        frozen = threading.Event()
        self.addCleanup(frozen.set)
        real_destroy = fake_virt.FakeDriver.destroy
        entered = []

        def destroy(driver, context, instance, *args, **kwargs):
            if instance.uuid == p[0]['id']:
                entered.append(instance.uuid)
                frozen.wait(120)
            return real_destroy(driver, context, instance, *args, **kwargs)

        self.useFixture(fixtures.MockPatchObject(
            fake_virt.FakeDriver, 'destroy', destroy))
        normal = self.boot('large', name='normal')
        # the compute took the delete and hangs in it
        self.assertEqual([p[0]['id']], entered)
        self.assertEqual('deleting', self.db_instance(p[0]['id']).task_state)
        self.assertEqual(1, self.sysmeta(p[0]['id']).attempts)
        self.assertEqual((12, 24000, 240), self.full_used('host1'))
        rec = reconciler.Reconciler()
        time.sleep(1.1)
        with self.assertLogs('opie_sched.scheduler.actions',
                             level='ERROR') as logs:
            rec.run_once()
        self.assertIn('Preemption stuck', '\n'.join(logs.output))
        self.assertEqual(2, self.sysmeta(p[0]['id']).attempts)
        fault = self.db_instance(p[0]['id']).fault
        self.assertIn('has not completed after 2 attempts', fault.message)
        # nothing else was chosen meanwhile
        self.assertIn(p[1]['id'], self.live_uuids())
        # the compute recovers: the delete finishes
        frozen.set()
        self._wait_until_deleted(p[0])
        self.assertEqual({p[1]['id'], normal['id']}, self.live_uuids())
        self.assertEqual((8, 16000, 160), self.full_used('host1'))


class LifetimeAfterRescueTest(_Steps):
    EXTRA_FLAGS = {'opie_reconciler': {'run_in_scheduler': False},
                   'opie_preemption': {'max_lifetime': 3600}}

    def test_rescue_does_not_reset_the_age(self):
        server = self.boot('medium.preemptible', name='old')
        self.age(server['id'], 10 ** 5)
        self.api.post_server_action(server['id'], {'rescue': {}})
        self.wait_status(server, 'RESCUE', 120)
        self.api.post_server_action(server['id'], {'unrescue': None})
        self.wait_status(server, 'ACTIVE', 120)
        # nova restarted its launched_at clock
        launched = self.db_instance(server['id']).launched_at
        self.assertLess(timeutils.utcnow(with_timezone=True) - launched,
                        datetime.timedelta(seconds=600))
        [plan] = reconciler.Reconciler().run_once()
        self.assertEqual([server['id']], [i.uuid for i, _ in plan.victims])
        self._wait_until_deleted(server)


class FlavorLifetimeTest(_Steps):
    """No cloud-wide limit: a flavor's own ``opie:max_lifetime`` ends its
    servers; others live on.
    """

    def test_flavor_limit_is_honoured(self):
        specs = dict(flavors.preemptible_extra_specs(2, 4000, 40),
                     **{reconciler.LIFETIME_KEY: '600'})
        self.flavor_ids['short.preemptible'] = self._create_flavor(
            name='short.preemptible', vcpu=2, memory_mb=4000, disk=40,
            extra_spec=specs)
        short = self.boot('short.preemptible', name='short')
        other = self.boot('medium.preemptible', name='other')
        self.age(other['id'], 10 ** 5)
        self.age(short['id'], 300)
        self.assertEqual([], reconciler.Reconciler().run_once())
        self.age(short['id'], 700)
        [plan] = reconciler.Reconciler().run_once()
        self.assertEqual([short['id']], [i.uuid for i, _ in plan.victims])
        self._wait_until_deleted(short)
        self.assertEqual({other['id']}, self.live_uuids())
        self.assertIn(actions.PREEMPT_ACTION, self.action_names(short['id']))


class DryRunTest(_Steps):
    """``[opie_reconciler] dry_run``: an overcommitted host and an
    expired server are reported, and nothing is written or terminated.
    """

    EXTRA_FLAGS = {'opie_reconciler': {'run_in_scheduler': False,
                                       'dry_run': True},
                   'opie_preemption': {'max_lifetime': 3600}}

    def test_dry_run_changes_nothing(self):
        p = self.fill_with_preemptibles('host1', 'large', [3000, 4000])
        for server in p:
            self.age(server['id'], 60)
        # an overcommit behind the preemption phase's back
        self.flags(enabled=False, group='opie_preemption')
        normal = self.boot('large', name='normal')
        self.flags(enabled=True, group='opie_preemption')
        self.age(p[0]['id'], 10 ** 5)
        before = {s['id']: self.raw_sysmeta(s['id']) for s in p}
        acted = reconciler.Reconciler().run_once()
        # both findings are reported (the overcommit, the old server)...
        self.assertEqual(2, len(acted))
        # ...and nothing happened
        self.assertEqual({p[0]['id'], p[1]['id'], normal['id']},
                         self.live_uuids())
        for server in p:
            self.assertEqual(before[server['id']],
                             self.raw_sysmeta(server['id']))
            self.assertEqual(['create'], self.action_names(server['id']))
        self.assertEqual([], self.preempt_notifications())
        # the same round for real
        self.flags(dry_run=False, group='opie_reconciler')
        reconciler.Reconciler().run_once()
        self._wait_until_deleted(p[0])


class OwnerSeesNoOtherProjectTest(_Steps):
    """A victim's owner learns that and when it was preempted and the cause
    word; the host, the preemptor (another project's server) and its
    request are for admins only.
    """

    EXTRA_FLAGS = {'opie_reconciler': {'run_in_scheduler': False},
                   'opie_preemption': {'release_timeout': 1}}

    def test_owner_and_admin_views(self):
        p = self.fill_with_preemptibles('host1', 'large', [100, 2000])
        other = client.TestOpenStackClient(
            'other-user', self.api_fixture.base_url,
            project_id=uuids.other_project, roles=['reader', 'member'])
        other.microversion = 'latest'
        # The victim's delete is held back (its compute service is slow),
        # so the victim stays visible with its marks; nova shows a fault
        # with a server in ERROR, as after a failed delete.
        real = actions.compute_api()
        slow = mock.Mock(wraps=real)
        slow.delete.return_value = None
        with mock.patch.object(actions, 'compute_api', return_value=slow):
            normal = self.wait_status(
                self.post('large', name='normal', api=other), 'ACTIVE', 120)
        slow.delete.assert_called_once()
        self.api.post_server_action(p[0]['id'],
                                    {'os-resetState': {'state': 'error'}})
        [create] = self.api.get_instance_actions(normal['id'])
        secrets = (normal['id'], create['request_id'], 'host1')

        owner = self.api_fixture.api
        owner.microversion = 'latest'
        seen = owner.get_server(p[0]['id'])
        actions_ = owner.get_instance_actions(p[0]['id'])
        self.assertEqual('ERROR', seen['status'])
        self.assertEqual('Preempted by the scheduler',
                         seen['fault']['message'])
        self.assertNotIn('details', seen['fault'])
        self.assertEqual(vs.CAUSE_SCHEDULER,
                         seen['metadata']['opie:preempted_by'])
        self.assertIn(actions.PREEMPT_ACTION,
                      [a['action'] for a in actions_])
        self.assertEqual({'code', 'created', 'message'}, set(seen['fault']))
        for secret in secrets:
            self.assertNotIn(secret, str(seen['fault']))
            self.assertNotIn(secret, str(seen['metadata']))
            self.assertNotIn(secret, str(actions_))
        # (the server's own name, host1-p0, holds "host1")
        self.assertNotIn(normal['id'], str(seen))
        self.assertNotIn(create['request_id'], str(seen))

        # the admin sees the details and can map the request ids
        full = self.api.get_server(p[0]['id'])
        self.assertIn(normal['id'], full['fault']['details'])
        self.assertIn('host1', full['fault']['details'])
        self.assertIn(create['request_id'], full['fault']['details'])
        with self.cell_ctx() as cctxt:
            meta = objects.Instance.get_by_uuid(
                cctxt, p[0]['id'],
                expected_attrs=['system_metadata']).system_metadata
        self.assertEqual(create['request_id'], meta[vs.KEY_REQUEST])
        self.assertEqual(
            meta[vs.KEY_ACTION_REQUEST],
            [a for a in actions_
             if a['action'] == actions.PREEMPT_ACTION][0]['request_id'])


class SystemMetadataWriteTest(_Steps):
    """The victim record is written key by key, by compare-and-set: a
    system metadata key nova writes meanwhile survives, and of two actors
    that read the same record only one wins.
    """

    def load(self, server_id):
        with self.cell_ctx() as cctxt:
            return objects.Instance.get_by_uuid(
                cctxt, server_id, expected_attrs=['system_metadata'])

    def test_concurrent_nova_write_is_kept(self):
        server = self.boot('medium.preemptible', name='p')
        now = timeutils.utcnow(with_timezone=True)
        stale = self.load(server['id'])
        # nova writes a key after we read the instance
        with self.cell_ctx() as cctxt:
            main_db.instance_system_metadata_update(
                cctxt, server['id'], {'nova_wrote': 'this'}, False)
        reservations.write_state(stale, vs.reserve('x', now, 'req-1'))
        meta = self.raw_sysmeta(server['id'])
        self.assertEqual('this', meta['nova_wrote'])
        self.assertEqual(vs.RESERVED, meta[vs.KEY_STATE])
        # nova writes again; ours stay
        with self.cell_ctx() as cctxt:
            main_db.instance_system_metadata_update(
                cctxt, server['id'], {'nova_again': 'that'}, False)
        self.assertEqual(vs.RESERVED,
                         self.raw_sysmeta(server['id'])[vs.KEY_STATE])
        # clearing from the stale object removes ours only
        self.assertTrue(reservations.clear_state(stale))
        meta = self.raw_sysmeta(server['id'])
        self.assertEqual({'nova_wrote': 'this', 'nova_again': 'that'},
                         {k: meta.get(k)
                          for k in ('nova_wrote', 'nova_again')})
        self.assertFalse(any(k in meta for k in vs.KEYS))

    def test_compare_and_set_lets_one_actor_win(self):
        server = self.boot('medium.preemptible', name='p')
        now = timeutils.utcnow(with_timezone=True)
        reservations.write_state(self.load(server['id']),
                                 vs.reserve('x', now, 'req-1'))
        first, second = self.load(server['id']), self.load(server['id'])
        read = self.sysmeta(server['id'])
        won = reservations.swap_state(
            None, first, read, read.terminating(now, 60, 60))
        lost = reservations.swap_state(
            None, second, read, read.terminating(now, 60, 60))
        self.assertEqual((True, False), (won, lost))
        self.assertEqual(1, self.sysmeta(server['id']).attempts)


class UnreachableCellTest(_Steps):
    """One cell whose database cannot be reached does not stop the
    reconciler's round: it is skipped with an ERROR, the others are
    repaired.
    """

    def test_other_cells_are_repaired(self):
        ctx = nova_context.get_admin_context()
        objects.CellMapping(
            ctx, uuid=uuids.cell_down, name='cell-down',
            database_connection='mysql+pymysql://nobody@192.0.2.1/nova',
            transport_url='none:///').create()
        p = self.fill_with_preemptibles('host1', 'large', [3000, 4000])
        self.flags(enabled=False, group='opie_preemption')
        normal = self.boot('large', name='normal')
        self.flags(enabled=True, group='opie_preemption')
        with self.assertLogs('opie_sched.scheduler.reconciler',
                             level='ERROR') as logs:
            acted = reconciler.Reconciler().run_once()
        self.assertIn(uuids.cell_down, '\n'.join(logs.output))
        self.assertEqual(1, len(acted))
        self._wait_until_deleted(p[1])
        self.assertEqual({p[0]['id'], normal['id']}, self.live_uuids())


class ShelveBehaviorTest(_Steps):
    """A flavor's ``opie:interruption_behavior = shelve`` wins over the
    cloud's ``action = delete``: its victims are shelved and offloaded,
    not deleted; the host is freed all the same.
    """

    def test_shelved_victim_frees_the_host_and_stays(self):
        specs = dict(flavors.preemptible_extra_specs(4, 8000, 80),
                     **{vs.BEHAVIOR_SPEC: vs.SHELVE})
        self.flavor_ids['shelving.preemptible'] = self._create_flavor(
            name='shelving.preemptible', vcpu=4, memory_mb=8000, disk=80,
            extra_spec=specs)
        p = self.fill_with_preemptibles('host1', 'shelving', [100, 2000])
        normal = self.boot('large', name='normal')
        victim = self.wait_status(p[0], 'SHELVED_OFFLOADED', 120)
        self.assertIsNone(victim['OS-EXT-SRV-ATTR:host'])
        self.assertFalse(self.db_instance(p[0]['id']).deleted)
        self.assertNotIn('delete', self.action_names(p[0]['id']))
        self.assertIn('shelve', self.action_names(p[0]['id']))
        # no longer a victim: an ordinary shelved server of its owner
        self.assertIsNone(self.sysmeta(p[0]['id']))
        self.assertEqual({}, self._get_allocations_by_server_uuid(p[0]['id']))
        self.assertEqual((8, 16000, 160), self.full_used('host1'))
        self.assertEqual('ACTIVE', self.api.get_server(normal['id'])['status'])
        self.assertIn(p[1]['id'], self.live_uuids())


class _Row:
    """A victim known by its uuid only (nothing loaded)."""

    def __init__(self, uuid):
        self.uuid = uuid

    def __contains__(self, name):
        return False


class CompareAndSetOnMariaDBTest(testtools.TestCase):
    """The record's compare-and-set on MariaDB (the production database),
    actors racing in threads: in every round exactly one of the actors
    that read the same record wins (the instance and record rows are
    locked; without the locks several won on MariaDB 10.11), and a key
    nova wrote is kept. Needs MariaDB on 127.0.0.1 with a passwordless
    root, as the devcloud does.
    """

    ACTORS = 8
    ROUNDS = 10

    def setUp(self):
        super().setUp()
        problem = preflight.mariadb_problem()
        if problem:
            self.skipTest(problem)
        import pymysql
        self.db = 'opie_cas_%s' % uuids.db[:8]
        conn = pymysql.connect(host='127.0.0.1', user='root')
        self.addCleanup(conn.close)
        cur = conn.cursor()
        cur.execute('DROP DATABASE IF EXISTS %s' % self.db)
        cur.execute('CREATE DATABASE %s' % self.db)
        self.addCleanup(cur.execute, 'DROP DATABASE %s' % self.db)
        url = 'mysql+pymysql://root@127.0.0.1/%s?charset=utf8' % self.db
        engine = sa.create_engine(url)
        self.addCleanup(engine.dispose)
        main_models.BASE.metadata.create_all(engine, tables=[
            main_models.Instance.__table__,
            main_models.InstanceSystemMetadata.__table__])
        self.uuid = uuids.victim
        with engine.begin() as conn:
            conn.execute(sa.insert(main_models.Instance.__table__).values(
                uuid=self.uuid, deleted=0))
            conn.execute(sa.insert(
                main_models.InstanceSystemMetadata.__table__).values(
                instance_uuid=self.uuid, key='nova_key', value='v',
                deleted=0))
        self.manager = main_db.create_context_manager(url)

    def ctx(self):
        ctx = nova_context.get_admin_context()
        ctx.db_connection = self.manager
        return ctx

    def record(self):
        return main_db.instance_system_metadata_get(self.ctx(), self.uuid)

    def test_one_actor_wins_each_round(self):
        now = timeutils.utcnow(with_timezone=True).replace(microsecond=0)
        row = _Row(self.uuid)
        self.assertTrue(reservations.swap_state(
            self.ctx(), row, None, vs.reserve('p', now, 'req-1')))
        winners = []
        for _ in range(self.ROUNDS):
            read = vs.VictimState.from_metadata(self.record())
            barrier = threading.Barrier(self.ACTORS)
            results = []

            def actor():
                barrier.wait()
                results.append(reservations.swap_state(
                    self.ctx(), _Row(self.uuid), read,
                    read.terminating(now, 60, 600)))

            threads = [threading.Thread(target=actor)
                       for _ in range(self.ACTORS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            winners.append(results.count(True))
        self.assertEqual([1] * self.ROUNDS, winners)
        record = self.record()
        self.assertEqual(str(self.ROUNDS), record[vs.KEY_ATTEMPTS])
        self.assertEqual('v', record['nova_key'])


class DroppedDatabaseTest(_Steps):
    """Database connections dropped in the middle of a termination (the
    chaos tier's findings on the devcloud, reproduced in-process).
    """

    EXTRA_FLAGS = {'opie_reconciler': {'run_in_scheduler': False},
                   'opie_preemption': {'retry_interval': 1,
                                       'max_retry_interval': 1,
                                       'release_timeout': 2}}

    def test_victim_marked_on_retry_when_first_marks_were_lost(self):
        # The record became ``terminating``, then the marks failed (the
        # connection went away): the reconciler's retry marks the victim
        # before deleting it, so its owner still sees the preempt action.
        p = self.fill_with_preemptibles('host1', 'large', [100, 2000])
        real = actions.mark_victim
        calls = []

        def mark_once_fails(*args, **kwargs):
            calls.append(args[1].uuid)
            if len(calls) == 1:
                raise RuntimeError('connection lost')
            return real(*args, **kwargs)

        self.useFixture(fixtures.MockPatchObject(
            actions, 'mark_victim', mark_once_fails))
        self.boot('large', name='normal')
        self.assertEqual(vs.TERMINATING, self.sysmeta(p[0]['id']).state)
        self.assertNotIn('preempt', self.action_names(p[0]['id']))
        time.sleep(1.1)
        reconciler.Reconciler().run_once()
        self._wait_until_deleted(p[0])
        self.assertEqual([p[0]['id'], p[0]['id']], calls)
        self.assertIn('preempt', self.action_names(p[0]['id']))

    def test_reservation_released_when_termination_cannot_start(self):
        # Writing the ``terminating`` record fails: the victim is not left
        # ``reserved`` (it would pin the host over capacity until
        # reservation_timeout while nothing deletes it); the request does
        # not wait for it, and the reconciler repairs the host.
        self.flags(release_timeout=60, group='opie_preemption')
        p = self.fill_with_preemptibles('host1', 'large', [100, 2000])
        real = reservations.swap_state

        def terminating_fails(cctxt, inst, expected, new):
            if new is not None and new.state == vs.TERMINATING:
                raise RuntimeError('connection lost')
            return real(cctxt, inst, expected, new)

        with mock.patch.object(reservations, 'swap_state',
                               terminating_fails):
            start = time.monotonic()
            normal = self.boot('large', name='normal')
            self.assertLess(time.monotonic() - start, 60)
        self.assertIsNone(self.sysmeta(p[0]['id']))
        self.assertEqual({p[0]['id'], p[1]['id'], normal['id']},
                         self.live_uuids())
        [plan] = reconciler.Reconciler().run_once()
        self.assertEqual([p[0]['id']], [i.uuid for i, _ in plan.victims])
        self._wait_until_deleted(p[0])
        self.assertEqual((8, 16000, 160), self.full_used('host1'))
