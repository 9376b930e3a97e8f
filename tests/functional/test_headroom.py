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
"""Headroom (notice ahead of demand) and early release on a real
in-process Nova: the reconciler's headroom step takes exactly the
oracle-minimal victims, a normal request beyond the headroom still
succeeds (cutting a notice), a guest that powers itself off during
its notice releases the waiting boot at once, and the scheduler's
``HeadroomFilter`` keeps preemptible boots out of the headroom (refused,
or sent to another pool) while a normal boot uses it without preempting.
"""

import itertools
import threading
import time

import fixtures
import testtools.content

from oslo_utils import timeutils

from nova.compute import power_state
from nova import context as nova_context
from nova import objects
from nova.virt import event as virtevent

from opie_sched.preemption import model
from opie_sched.preemption import victim_state
from opie_sched.scheduler import cell_reads
from opie_sched.scheduler import headroom
from opie_sched.scheduler import ownership
from opie_sched.scheduler import preemption_plans
from opie_sched.scheduler import reconciler
from opie_sched.scheduler import wakeup
from tests.functional import base
from tests.functional.fuzz import oracle
from tests.functional import test_preemption
from tests.functional import test_rpm

#: nova's and opie's filters, the headroom filter first (it sums a pool's
#: free room over the hosts it is given)
HEADROOM_FILTERS = {
    'available_filters': ['nova.scheduler.filters.all_filters',
                          'opie_sched.scheduler.filters.all_filters'],
    'enabled_filters': ['HeadroomFilter', 'ComputeFilter',
                        'PreemptibleFullStateFilter'],
}


class _Headroom(test_preemption._Helpers):

    def reconciler(self):
        rec = reconciler.Reconciler()
        self.addCleanup(rec.headroom.stop, 30)
        return rec

    def records(self):
        """``{uuid: VictimState}`` of every live server with a record."""
        ctx = nova_context.get_admin_context()
        with nova_context.target_cell(
                ctx, self.cell_mappings['cell1']) as cctxt:
            insts = objects.InstanceList.get_by_filters(
                cctxt, {'deleted': False}, expected_attrs=['system_metadata'])
        return {i.uuid: ownership.victim_state(i) for i in insts
                if ownership.victim_state(i) is not None}

    def wait_for(self, predicate, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            if predicate():
                return True
            time.sleep(0.1)
        return False


class HeadroomOracleTest(base.OpieNovaTestCase, _Headroom):
    """Headroom 4 vCPU over two hosts of 8: the pool has 2 vCPU free, so
    the reconciler must free 2 vCPU more, at the least cost.
    """

    EXTRA_FLAGS = {'opie_preemption': {'headroom': '4 vcpu',
                                       'headroom_notice_seconds': 2,
                                       'headroom_poll_interval': 0.2}}

    def test_takes_exactly_the_oracle_minimal_victims(self):
        # host1: two large (8 vCPU, full); host2: two small and one medium
        # (4 vCPU) and a normal medium (2 vCPU): 2 vCPU free in the pool
        runtimes = {}
        for s, rt in zip(self.fill_with_preemptibles(
                'host1', 'large', [1500, 3300]), [1500, 3300]):
            runtimes[s['id']] = rt
        for s, rt in zip(self.fill_with_preemptibles(
                'host2', 'small', [900, 1000]), [900, 1000]):
            runtimes[s['id']] = rt
        for s, rt in zip(self.fill_with_preemptibles(
                'host2', 'medium', [2000]), [2000]):
            runtimes[s['id']] = rt
        normal = self.boot('medium', host='host2', name='normal')
        rec = self.reconciler()
        ctx = nova_context.get_admin_context()
        # the oracle's reading of the pool, costed at one instant
        now = timeutils.utcnow(with_timezone=True)
        policy = preemption_plans.cost_policy()
        views = [hv for _, hv in rec.host_views(ctx)]
        [plan] = rec.run_once(ctx)
        noticed = {u for u, vs in self.records().items()
                   if vs.state == victim_state.NOTICED}
        free = model.Resources.total(v.projected_free().clip_negative()
                                     for v in views)
        deficit = tuple(max(t - f, 0) for t, f in
                        zip(model.Resources(4, 0, 0), free))
        self.assertEqual((2, 0, 0), deficit)
        cands = {i.uuid: (tuple(i.resources),
                          policy.instance_cost(i, hv, now))
                 for hv in views for i in hv.preemptible_instances}
        self.assertEqual(set(runtimes), set(cands))
        best = oracle.minimum(list(cands.values()), deficit)
        chosen = sum(cands[u][1] for u in noticed)
        self.assertLessEqual(abs(chosen - best),
                             oracle.TOLERANCE * max(1.0, best))
        self.assertEqual(noticed, {i.uuid for _, i, _ in plan.victims})
        # never more than needed: every victim is necessary
        for u in noticed:
            freed = [sum(cands[v][0][d] for v in noticed - {u})
                     for d in range(3)]
            self.assertFalse(oracle._covers(freed, deficit),
                             'victim %s was not needed' % u)
        # at risk and noticed, in what the guest reads
        for u in noticed:
            meta = self.guest_metadata(u)['meta']
            self.assertIn(headroom.AT_RISK_KEY, meta)
            self.assertIn('(headroom)', meta[victim_state.NOTICE_KEY])
        # a second round takes nothing more: the noticed room counts
        self.assertEqual([], rec.run_once(ctx))
        # at the deadline they are deleted, and the headroom holds
        self.assertTrue(rec.headroom.join(30))
        for u in noticed:
            self.assertTrue(self.wait_for(lambda: u not in self.live_uuids()))
        self.assertEqual([], rec.run_once(ctx))
        self.assertIn(normal['id'], self.live_uuids())


class HeadroomBurstTest(base.OpieNovaTestCase, _Headroom):
    """A normal request beyond the headroom takes a noticed victim at once:
    it never fails because of the headroom, and the guest reads that its
    notice was cut.
    """

    HOSTS = ('host1',)
    EXTRA_FLAGS = {'opie_preemption': {'headroom': '2 vcpu',
                                       'headroom_notice_seconds': 600,
                                       'headroom_poll_interval': 0.2}}

    def test_normal_request_beyond_headroom_succeeds(self):
        p = self.fill_with_preemptibles('host1', 'medium',
                                        [1000, 2000, 3000, 3500])
        rec = self.reconciler()
        [plan] = rec.run_once()
        [(_, victim, _)] = plan.victims
        self.assertEqual(p[0]['id'], victim.uuid)
        # its waiter gives the notice at once (headroom_rebalance_seconds
        # 0)
        self.assertTrue(self.wait_for(
            lambda: victim_state.NOTICE_KEY in self.guest_metadata(
                p[0]['id'])['meta']))
        notices = []
        real = victim_state.notice_metadata

        def spy(deadline, behavior, reason):
            notices.append(reason)
            return real(deadline, behavior, reason)

        self.useFixture(fixtures.MonkeyPatch(
            'opie_sched.preemption.victim_state.notice_metadata', spy))
        # the burst: a large normal server needs 4 vCPU now, on a host
        # with none free: it is not refused, it takes the noticed victim
        # and the next cheapest at once
        normal = self.boot('large', name='normal')
        self.assertEqual('host1', self.server_host(normal))
        self.assertEqual({p[2]['id'], p[3]['id'], normal['id']},
                         self.live_uuids())
        # the noticed victim's guest read that its notice was cut, the
        # other's a plain notice
        self.assertEqual(1, len([n for n in notices if 'notice cut' in n]),
                         notices)
        self.assertEqual(2, len(notices))
        # the headroom's own deadline finds the victim taken: nothing more
        self.assertEqual({}, {u: vs for u, vs in self.records().items()
                              if vs.state == victim_state.NOTICED})


class HeadroomRoundReadTest(base.OpieNovaTestCase, _Headroom):
    """With a headroom, a reconciler round reads each cell's compute nodes
    and their instances once for all its steps (the headroom step gets the
    round's reading), and still notices the right victim; a keeper run on
    its own reads the cells itself.
    """

    HOSTS = ('host1',)
    EXTRA_FLAGS = {'opie_preemption': {'headroom': '2 vcpu',
                                       'headroom_notice_seconds': 600}}

    def count_reads(self):
        """The mocks counting the round's compute node and instance reads
        (they call through).
        """
        nodes = self.useFixture(fixtures.MockPatchObject(
            objects.ComputeNodeList, 'get_all',
            side_effect=objects.ComputeNodeList.get_all)).mock
        insts = self.useFixture(fixtures.MockPatchObject(
            cell_reads, 'load_instances',
            side_effect=cell_reads.load_instances)).mock
        return lambda: {'nodes': nodes.call_count,
                        'instances': insts.call_count}

    def test_one_read_per_cell_and_round(self):
        p = self.fill_with_preemptibles('host1', 'medium',
                                        [1000, 2000, 3000, 3500])
        rec = self.reconciler()
        calls = self.count_reads()
        [plan] = rec.run_once(dry_run=True)
        self.assertEqual([p[0]['id']], [i.uuid for _, i, _ in plan.victims])
        # one cell with compute nodes (cell1; cell0 is never read)
        self.assertEqual({'nodes': 1, 'instances': 1}, calls())
        # on its own, the keeper reads what it needs
        [alone] = rec.headroom.run(nova_context.get_admin_context(),
                                   dry_run=True)
        self.assertEqual([p[0]['id']],
                         [i.uuid for _, i, _ in alone.victims])
        self.assertEqual({'nodes': 2, 'instances': 2}, calls())


class EarlyReleaseTest(base.OpieNovaTestCase, _Headroom):
    """A victim's guest powers itself off 1 s into a 600 s notice: the
    waiting normal boot proceeds at once.

    Checked without a timed bound: the notice is far longer than the test
    may run, so the normal server can be ACTIVE before the deadline
    written on the victim only if the power-off released it; and the
    scheduler recorded that release (its "released early" line) for this
    victim.
    """

    HOSTS = ('host1',)
    NOTICE = 600
    EXTRA_FLAGS = {'opie_preemption': {'notice_seconds': NOTICE,
                                       'release_timeout': NOTICE + 60,
                                       'reservation_timeout': 3 * NOTICE + 60,
                                       'poll_interval': 0.2}}

    def power_off(self, uuid):
        """What a guest's own shutdown does on a hypervisor: the driver
        sees the domain stopped and emits the lifecycle event nova's
        compute handles (it records the power state and stops the server).
        """
        compute = self.computes['host1']
        drv = compute.manager.driver
        drv.instances[uuid].state = power_state.SHUTDOWN
        compute.manager.handle_lifecycle_event(virtevent.LifecycleEvent(
            uuid, virtevent.EVENT_LIFECYCLE_STOPPED))

    def test_guest_power_off_releases_the_waiting_boot(self):
        p = self.fill_with_preemptibles('host1', 'large', [1000, 2000])
        victim = p[0]['id']
        powered = {}

        def guest():
            # the guest's agent: polls its meta_data.json, powers off
            # 1 s after it reads the notice
            for _ in itertools.count():
                meta = self.guest_metadata(victim).get('meta', {})
                if victim_state.NOTICE_KEY in meta:
                    powered['deadline'] = meta[victim_state.DEADLINE_KEY]
                    powered['actions'] = {
                        a['action'] for a in
                        self.api.get_instance_actions(victim)}
                    time.sleep(1)
                    powered['at'] = time.time()
                    self.power_off(victim)
                    return
                time.sleep(0.1)

        t = threading.Thread(target=guest, daemon=True)
        t.start()
        start = time.time()
        normal = self.api.post_server({'server': self._build_server(
            name='normal', flavor_id=self.flavor_ids['large'],
            networks='none')})
        # polls for up to ~300 s, half the notice: a boot that waits the
        # notice out never gets here
        normal = self._wait_for_state_change(normal, 'ACTIVE',
                                             max_retries=600)
        active_at = time.time()
        t.join(5)
        self.assertIn('at', powered, 'the guest never read its notice')
        deadline = victim_state.parse_time(powered['deadline']).timestamp()
        self.addDetail('seconds', testtools.content.text_content(
            'boot %.2f s, ACTIVE %.2f s after the power-off, %.0f s before '
            'the deadline of a %d s notice' % (
                active_at - start, active_at - powered['at'],
                deadline - active_at, self.NOTICE)))
        # the whole notice was given (whole seconds) ...
        self.assertGreaterEqual(deadline, start + self.NOTICE - 1)
        # ... and the boot did not wait it out: the power-off released it
        self.assertLess(active_at, deadline)
        self.assertNotIn(victim, self.live_uuids())
        # the scheduler says why its wait ended: this victim, early
        self.assertRegex(self.stdlog.logger.output,
                         r"Victims \[[^]]*'%s'[^]]*\] released early"
                         % victim)
        # the notice's service-owned trace (what the market's
        # interruption-ack reads), recorded before the guest saw it
        self.assertIn(victim_state.NOTICE_ACTION, powered['actions'])


class NotificationEarlyReleaseTest(EarlyReleaseTest):
    """The issue's target, event-driven: a guest powers off 5 s into a
    120 s notice and the waiting normal boot is ACTIVE within seconds,
    woken by Nova's versioned notification about the victim
    (``[opie_preemption] release_notifications``), not by polling: the
    fallback checks are 60 s apart (``notification_poll_interval``), so a
    boot that is not woken is ACTIVE no sooner than 55 s after the
    power-off.

    In-process Nova hands its versioned notifications to nova's fake
    notifier (NotificationFixture); :meth:`forward_notifications` also
    sends each one on nova's notification transport (oslo.messaging's
    fake driver), where the scheduler's own listener, started by its
    manager, hears it in its own pool.
    """

    NOTICE = 120
    #: the guest powers off this long after it read its notice
    POWER_OFF_AFTER = 5
    #: a boot later than this after the power-off was not woken (the
    #: fallback check comes 60 s after the notice began)
    BOUND = 30
    EXTRA_FLAGS = {'opie_preemption': {
        'notice_seconds': NOTICE,
        'release_timeout': NOTICE + 60,
        'reservation_timeout': 3 * NOTICE + 60,
        'poll_interval': 60,
        'notification_poll_interval': 60,
        'release_notifications': True}}

    def setUp(self):
        super().setUp()
        self.forward_notifications()
        listener = self.scheduler.manager._opie_wakeup
        self.assertIsNotNone(listener)
        self.assertTrue(listener.running)
        self.addCleanup(listener.stop)

    def forward_notifications(self):
        from nova import rpc
        from nova.tests.fixtures import notifications as nova_notes
        import oslo_messaging

        bus = oslo_messaging.Notifier(
            rpc.NOTIFICATION_TRANSPORT, 'nova-test', driver='messagingv2',
            topics=['versioned_notifications'])
        original = nova_notes.FakeVersionedNotifier._notify

        def _notify(notifier, priority, ctxt, event_type, payload):
            original(notifier, priority, ctxt, event_type, payload)
            getattr(bus, priority.lower())({}, event_type, payload)

        self.useFixture(fixtures.MonkeyPatch(
            'nova.tests.fixtures.notifications.FakeVersionedNotifier.'
            '_notify', _notify))

    def test_guest_power_off_releases_the_waiting_boot(self):
        p = self.fill_with_preemptibles('host1', 'large', [1000, 2000])
        victim = p[0]['id']
        powered = {}

        def guest():
            for _ in itertools.count():
                meta = self.guest_metadata(victim).get('meta', {})
                if victim_state.NOTICE_KEY in meta:
                    time.sleep(self.POWER_OFF_AFTER)
                    powered['at'] = time.time()
                    self.power_off(victim)
                    return
                time.sleep(0.1)

        woken_before = sum(wakeup.WAKEUPS.woken.values())
        t = threading.Thread(target=guest, daemon=True)
        t.start()
        normal = self.api.post_server({'server': self._build_server(
            name='normal', flavor_id=self.flavor_ids['large'],
            networks='none')})
        normal = self._wait_for_state_change(normal, 'ACTIVE',
                                             max_retries=600)
        active_at = time.time()
        t.join(5)
        self.assertIn('at', powered, 'the guest never read its notice')
        after = active_at - powered['at']
        self.addDetail('seconds', testtools.content.text_content(
            'ACTIVE %.2f s after the power-off, %d s into a %d s notice; '
            'wake-ups by event type: %s' % (
                after, self.POWER_OFF_AFTER, self.NOTICE,
                dict(wakeup.WAKEUPS.woken))))
        # a notification about the victim woke a waiter of the scheduler
        self.assertGreater(sum(wakeup.WAKEUPS.woken.values()), woken_before)
        # ... and the boot did not wait for the fallback check
        self.assertLess(after, self.BOUND)
        self.assertNotIn(victim, self.live_uuids())
        self.assertRegex(self.stdlog.logger.output,
                         r"Victims \[[^]]*'%s'[^]]*\] released early"
                         % victim)


class _FilterHelpers(_Headroom):

    def assert_nothing_preempted(self, servers):
        self.assertEqual([], self.preempt_notifications())
        self.assertTrue({s['id'] for s in servers} <= self.live_uuids())
        self.assertEqual({}, self.records())


class HeadroomFilterTest(base.OpieNovaTestCase, _FilterHelpers):
    """Two 8-vCPU hosts in no aggregate, ``headroom = 1 x 8 vcpu``: one
    whole host must stay free. Preemptible servers fill one host; the
    next one would take the last free host's slot and is refused; a
    normal server lands in the headroom at once, preempting nothing.
    """

    EXTRA_FLAGS = {'filter_scheduler': HEADROOM_FILTERS,
                   'opie_preemption': {'headroom': '1 x 8 vcpu'}}

    def test_preemptible_boot_kept_out_of_the_headroom(self):
        p = [self.boot('large.preemptible', name='p%d' % i)
             for i in range(2)]
        # both on one host: the other is the headroom's slot
        self.assertEqual(1, len({self.server_host(s) for s in p}))
        full = self.server_host(p[0])
        free = {'host1': 'host2', 'host2': 'host1'}[full]
        # a small preemptible fits the free host's full state, but would
        # leave no 8-vCPU slot in the pool: no valid host
        refused = self.boot('small.preemptible', name='refused',
                            expected='ERROR')
        self.assertIn('No valid host', refused['fault']['message'])
        # so the reconciler finds the headroom whole: nobody to notice
        self.assertEqual([], self.reconciler().run_once(dry_run=True))
        # a normal server may use the headroom: it lands at once on the
        # free host, preempting nothing
        normal = self.boot('large', name='normal')
        self.assertEqual(free, self.server_host(normal))
        self.assert_nothing_preempted(p)


class HeadroomFilterAggregateTest(base.OpieNovaTestCase, _FilterHelpers,
                                  test_rpm._Helpers):
    """host1 in aggregate ``reserved`` (``opie_headroom = 1 x 8 vcpu``),
    host2 in aggregate ``spot`` (``opie_headroom = 0``), the option 0:
    preemptible servers go to the other pool while host1 must stay free,
    and are refused once that pool is full; a normal server still uses
    the headroom.
    """

    EXTRA_FLAGS = {'filter_scheduler': HEADROOM_FILTERS}

    def test_preemptible_boots_go_to_the_other_pool(self):
        self.make_aggregate('reserved', ['host1'], opie_headroom='1 x 8 vcpu')
        self.make_aggregate('spot', ['host2'], opie_headroom='0')
        self.wait_for_scheduler_aggregates(['host1', 'host2'],
                                           'opie_headroom')
        p = [self.boot('medium.preemptible', name='p%d' % i)
             for i in range(4)]
        self.assertEqual({'host2'}, {self.server_host(s) for s in p})
        refused = self.boot('small.preemptible', name='refused',
                            expected='ERROR')
        self.assertIn('No valid host', refused['fault']['message'])
        normal = self.boot('large', name='normal')
        self.assertEqual('host1', self.server_host(normal))
        self.assert_nothing_preempted(p)
