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
"""Event-driven early release (:mod:`opie_sched.scheduler.wakeup`): a
notification about a victim wakes the notice wait at once, the database
read decides, polling stays the fallback; the listener on oslo.messaging's
fake transport, one pool per process.

The notice wait runs on a simulated clock (as in test_actions): the
wake-up events are :class:`SimEvent` whose ``wait`` jumps the clock to the
next scheduled notification (or by the whole timeout), so no test sleeps.
"""

import datetime
import threading
from unittest import mock

import fixtures
from oslo_config import cfg
import oslo_messaging
from oslo_utils.fixture import uuidsentinel as uuids
from oslo_utils import timeutils
import testtools

from nova import objects

from opie_sched import conf as opie_conf
from opie_sched.scheduler import actions
from opie_sched.scheduler import wakeup

objects.register_all()
CONF = actions.CONF


class Sim:
    """A simulated clock, the victim's row and Nova's notifications.

    ``off_at``: simulated time the guest powers off (None: never);
    ``notes``: simulated times a notification about the victim is
    delivered (the payload says nothing: the read decides).
    """

    def __init__(self, off_at, notes=()):
        self.now = 1000.0
        self.start = self.now
        self.off_at = off_at
        self.notes = sorted(self.start + t for t in notes)
        self.reads = []
        self.wakeups = wakeup.Wakeups(event_factory=lambda: SimEvent(self))

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        assert seconds >= 0, seconds
        self.now += seconds

    def states(self, ctx, cell_uuid, uuids_):
        self.reads.append(round(self.now - self.start, 3))
        off = (self.off_at is not None
               and self.now >= self.start + self.off_at)
        return {u: objects.Instance(
            uuid=u, deleted=False, vm_state='active', task_state=None,
            power_state=4 if off else 1, system_metadata={})
            for u in uuids_}


class SimEvent:
    """``threading.Event`` on the simulated clock: ``wait`` returns at the
    next notification due within the timeout (delivered through
    :meth:`wakeup.Wakeups.wake`, so a waiter not registered is not woken).
    """

    def __init__(self, sim):
        self.sim = sim
        self.flag = False

    def set(self):
        self.flag = True

    def clear(self):
        self.flag = False

    def is_set(self):
        return self.flag

    def wait(self, timeout):
        end = self.sim.now + timeout
        while not self.flag:
            due = [t for t in self.sim.notes if t <= end]
            if not due:
                self.sim.now = end
                return False
            self.sim.notes.remove(due[0])
            self.sim.now = max(self.sim.now, due[0])
            self.sim.wakeups.wake(uuids.victim, 'instance.power_off.end')
        return True


class NoticeWaitTest(testtools.TestCase):
    """:func:`actions.wait_notice` of a 120 s notice whose guest powers
    off 5 s in.
    """

    def setUp(self):
        super().setUp()
        opie_conf.register_opts(CONF)
        self.addCleanup(CONF.clear_override, 'release_notifications',
                        'opie_preemption')
        self.addCleanup(CONF.clear_override, 'notification_poll_interval',
                        'opie_preemption')
        self.addCleanup(CONF.clear_override, 'poll_interval',
                        'opie_preemption')
        CONF.set_override('notification_poll_interval', 60,
                          'opie_preemption')
        CONF.set_override('poll_interval', 0.5, 'opie_preemption')

    def run_wait(self, sim, notifications=True, live=True):
        CONF.set_override('release_notifications', notifications,
                          'opie_preemption')
        for target, new in (
                ('time.monotonic', sim.monotonic),
                ('time.sleep', sim.sleep)):
            self.useFixture(fixtures.MonkeyPatch(
                'opie_sched.scheduler.actions.' + target, new))
        self.useFixture(fixtures.MonkeyPatch(
            'opie_sched.scheduler.actions._states', sim.states))
        self.useFixture(fixtures.MonkeyPatch(
            'opie_sched.scheduler.wakeup.WAKEUPS', sim.wakeups))
        self.useFixture(fixtures.MonkeyPatch(
            'opie_sched.scheduler.wakeup.live', lambda: live))
        return actions.wait_notice(mock.Mock(), {uuids.cell: [uuids.victim]},
                                   120)

    def test_notification_releases_at_once(self):
        # the power-off notification arrives 0.2 s after the power-off
        sim = Sim(off_at=5, notes=[5.2])
        self.assertTrue(self.run_wait(sim))
        # one read at the notice, one when woken: no polling in between
        self.assertEqual([0, 5.2], sim.reads)

    def test_payload_alone_does_not_release(self):
        # notifications about the victim that change nothing (metadata
        # updates): each makes a read, the wait goes on
        sim = Sim(off_at=5, notes=[1, 2, 5.2])
        self.assertTrue(self.run_wait(sim))
        self.assertEqual([0, 1, 2, 5.2], sim.reads)

    def test_lost_notification_falls_back_to_polling(self):
        sim = Sim(off_at=5, notes=[])
        self.assertTrue(self.run_wait(sim))
        # seen at the first fallback check, notification_poll_interval
        self.assertEqual([0, 60], sim.reads)

    def test_never_released_waits_the_notice_out(self):
        sim = Sim(off_at=None, notes=[3])
        self.assertFalse(self.run_wait(sim))
        self.assertEqual(120, sim.now - sim.start)
        self.assertEqual([0, 3, 63, 120], sim.reads)

    def test_listener_down_polls_as_without_it(self):
        sim = Sim(off_at=5, notes=[5.2])
        self.assertTrue(self.run_wait(sim, live=False))
        # poll_pause's schedule: seen within 12.5 % of the power-off
        # (or at the notification, whichever first)
        self.assertLessEqual(sim.reads[-1], 5.2)
        self.assertGreater(len(sim.reads), 10)

    def test_option_off_does_not_watch(self):
        sim = Sim(off_at=5, notes=[5.2])
        self.assertTrue(self.run_wait(sim, notifications=False))
        self.assertEqual({}, sim.wakeups.woken)
        self.assertGreater(len(sim.reads), 10)
        self.assertLessEqual(sim.reads[-1], 5 * 1.125 + 0.05)

    def test_waiter_unregistered_after_the_wait(self):
        sim = Sim(off_at=5, notes=[5.2])
        self.run_wait(sim)
        self.assertFalse(sim.wakeups.watched(uuids.victim))


class WakeupsTest(testtools.TestCase):

    def test_wake_sets_every_waiter_of_the_uuid(self):
        w = wakeup.Wakeups()
        with w.watching([uuids.a, uuids.b]) as e1, \
                w.watching([uuids.a]) as e2:
            self.assertEqual(2, w.wake(uuids.a, 'instance.update'))
            self.assertTrue(e1.is_set() and e2.is_set())
            e1.clear()
            e2.clear()
            self.assertEqual(1, w.wake(uuids.b))
            self.assertTrue(e1.is_set())
            self.assertFalse(e2.is_set())
        self.assertEqual(0, w.wake(uuids.a))
        self.assertFalse(w.watched(uuids.a))
        self.assertEqual({'instance.update': 1, '': 1}, w.woken)

    def test_instance_uuid_untrusted_payload(self):
        good = {'nova_object.data': {'uuid': uuids.x}}
        self.assertEqual(uuids.x, wakeup.instance_uuid(
            'instance.power_off.end', good))
        for event_type, payload in (
                ('compute.exception', good),
                (None, good),
                ('instance.update', None),
                ('instance.update', 'x'),
                ('instance.update', {'nova_object.data': 'x'}),
                ('instance.update', {'nova_object.data': {'uuid': 7}}),
                ('instance.update', {'nova_object.data': {'uuid': ''}}),
                ('instance.update',
                 {'nova_object.data': {'uuid': 'u' * 65}})):
            self.assertIsNone(wakeup.instance_uuid(event_type, payload))

    def test_endpoint_never_raises(self):
        w = mock.Mock()
        w.wake.side_effect = RuntimeError('boom')
        ep = wakeup.WakeupEndpoint(w)
        ep.info({}, 'nova-compute:host1', 'instance.update',
                {'nova_object.data': {'uuid': uuids.x}}, {})
        w.wake.assert_called_once_with(uuids.x, 'instance.update')
        ep.info({}, 'x', 'instance.update', object(), {})

    def test_pool_per_process(self):
        self.assertEqual('opie-scheduler-wakeup.sched1.42',
                         wakeup.pool_name('sched1', 42))
        self.assertNotEqual(wakeup.pool_name('sched1', 42),
                            wakeup.pool_name('sched1', 43))


class ListenerTest(testtools.TestCase):
    """The listener on oslo.messaging's fake transport, as two scheduler
    processes (two pools): each hears every notification.
    """

    def setUp(self):
        super().setUp()
        self.conf = cfg.ConfigOpts()
        self.conf.register_opts([
            cfg.ListOpt('versioned_notifications_topics',
                        default=['versioned_notifications'])],
            group='notifications')
        self.conf.register_opts([cfg.StrOpt('host', default='sched1')])
        self.conf([], project='test')
        self.transport = oslo_messaging.get_notification_transport(
            self.conf, url='fake:/')
        self.addCleanup(self.transport.cleanup)

    def listener(self, wakeups, pool):
        lis = wakeup.Listener(self.conf, transport=self.transport,
                              wakeups=wakeups, pool=pool)
        self.addCleanup(lis.stop)
        return lis

    def test_every_process_hears_every_notification(self):
        procs = [wakeup.Wakeups(), wakeup.Wakeups()]
        listeners = [self.listener(w, wakeup.pool_name('sched1', pid))
                     for pid, w in enumerate(procs)]
        for lis in listeners:
            self.assertTrue(lis.start())
        self.assertTrue(wakeup.live())
        notifier = oslo_messaging.Notifier(
            self.transport, 'nova-compute:host1', driver='messagingv2',
            topics=['versioned_notifications'])
        with procs[0].watching([uuids.v]) as e0, \
                procs[1].watching([uuids.v]) as e1:
            notifier.info({}, 'instance.power_off.end',
                          {'nova_object.data': {'uuid': uuids.v}})
            # generous bound: a failure is an event never delivered
            self.assertTrue(e0.wait(30))
            self.assertTrue(e1.wait(30))
        for lis in listeners:
            lis.stop()
        self.assertFalse(wakeup.live())

    def test_start_failure_is_logged_not_raised(self):
        lis = wakeup.Listener(self.conf, transport=None,
                              wakeups=wakeup.Wakeups())
        with mock.patch('nova.rpc.NOTIFICATION_TRANSPORT', None):
            self.assertFalse(lis.start())
        self.assertFalse(lis.running)
        self.assertFalse(wakeup.live())
        lis.stop()


class ManagerHookTest(testtools.TestCase):

    def test_listener_failure_does_not_stop_the_scheduler(self):
        from opie_sched.scheduler import manager
        opie_conf.register_opts(CONF)
        CONF.set_override('release_notifications', True, 'opie_preemption')
        self.addCleanup(CONF.clear_override, 'release_notifications',
                        'opie_preemption')
        mgr = manager.OpieSchedulerManager.__new__(
            manager.OpieSchedulerManager)
        mgr._opie_wakeup = None
        with mock.patch.object(wakeup.Listener, 'start',
                               side_effect=RuntimeError('broker')), \
                mock.patch('nova.manager.Manager.post_start_hook'):
            mgr.post_start_hook()
        with mock.patch('nova.manager.Manager.cleanup_host'):
            mgr.cleanup_host()
        self.assertIsNone(mgr._opie_wakeup)


class HeadroomWaiterTest(testtools.TestCase):
    """The reconciler's headroom waiter (:class:`headroom.Keeper`) woken
    by a notification, and stopped while it waits.
    """

    def setUp(self):
        super().setUp()
        from opie_sched.scheduler import headroom
        self.keeper = headroom.Keeper(reconciler=None)
        self.off = False
        self.reads = 0
        self.acted = []

        def states(ctx, cell_uuid, uuids_):
            self.reads += 1
            return {u: objects.Instance(
                uuid=u, deleted=False, vm_state='active', task_state=None,
                power_state=4 if self.off else 1) for u in uuids_}

        self.useFixture(fixtures.MonkeyPatch(
            'opie_sched.scheduler.actions._states', states))
        self.keeper.act = lambda ctx, cell, us, rid: self.acted.extend(us)
        self.wakeups = wakeup.Wakeups()

    def start(self):
        deadline = timeutils.utcnow(with_timezone=True) + \
            datetime.timedelta(hours=1)
        registered = threading.Event()

        def run():
            with self.wakeups.watching([uuids.v]) as woken:
                with self.keeper._lock:
                    self.keeper._woken.add(woken)
                registered.set()
                self.keeper._poll(mock.Mock(), uuids.cell, {uuids.v}, 'r',
                                  deadline, woken, 3600)

        t = threading.Thread(target=run, daemon=True)
        t.start()
        self.assertTrue(registered.wait(30))
        return t

    def test_notification_wakes_the_waiter(self):
        t = self.start()
        self.off = True
        self.wakeups.wake(uuids.v, 'instance.power_off.end')
        # a waiter not woken would sleep its 3600 s fallback
        t.join(30)
        self.assertFalse(t.is_alive())
        self.assertEqual([uuids.v], self.acted)

    def test_stop_ends_the_wait_without_acting(self):
        t = self.start()
        self.keeper.stop(30)
        # a waiter stop does not wake would sleep its 3600 s fallback
        t.join(30)
        self.assertFalse(t.is_alive())
        self.assertEqual([], self.acted)
