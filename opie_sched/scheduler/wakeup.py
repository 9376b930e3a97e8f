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
"""Event-driven early release: Nova's versioned notifications wake the
waits on victims (``[opie_preemption] release_notifications``).

A request waiting out its victims' notice
(:func:`opie_sched.scheduler.actions.wait_notice`), waiting for them to
release the host (:func:`~opie_sched.scheduler.actions.wait_for`), and
the reconciler's headroom waiter
(:class:`opie_sched.scheduler.headroom.Keeper`) register the
uuids they wait on with :data:`WAKEUPS`. The :class:`Listener` of each
scheduler process (started with the manager) hears Nova's versioned
notifications; one about a waited-on instance (``instance.power_off.*``,
``instance.shutdown.*``, ``instance.update``, ``instance.delete.*``,
``instance.soft_delete.*``, ``instance.shelve.*``,
``instance.shelve_offload.*``, ...) wakes its waiters at once. A woken
waiter re-reads the victims from the database, the source of truth: the
payload is never trusted (anybody on the bus could send it), it only says
when to look. Polling stays the fallback when notifications are lost,
off, or the listener failed (:func:`live` is then False and the waits
poll as without it).

Each scheduler process listens in a pool of its own
(:func:`pool_name`: host and process id): listeners of one pool share the
messages (each gets some), and every worker must hear about its own
victims. On RabbitMQ a pool is a queue that outlives its process; expire
the queues of stopped workers with a policy on the prefix, e.g.
``rabbitmqctl set_policy opie-wakeup '^opie-scheduler-wakeup\\.'
'{"expires":600000}' --apply-to queues``.
"""

import contextlib
import os
import threading

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

#: Prefix of the pool (RabbitMQ queue) name of each scheduler process.
POOL_PREFIX = 'opie-scheduler-wakeup'


class Wakeups:
    """The waits of one process by instance uuid. Thread-safe.

    A waiter registers with :meth:`watching` and waits on the
    ``threading.Event`` it gets (clearing it before each database read);
    :meth:`wake` sets the events of every waiter of a uuid.
    """

    def __init__(self, event_factory=threading.Event):
        self._lock = threading.Lock()
        self._event_factory = event_factory
        self._events = {}
        #: notifications that woke at least one waiter, per event type
        self.woken = {}

    @contextlib.contextmanager
    def watching(self, uuids):
        """Context manager: register one waiter for ``uuids`` (iterable of
        str) and yield its ``threading.Event``; unregistered on exit.
        """
        event = self._event_factory()
        uuids = list(uuids)
        with self._lock:
            for u in uuids:
                self._events.setdefault(u, set()).add(event)
        try:
            yield event
        finally:
            with self._lock:
                for u in uuids:
                    waiters = self._events.get(u)
                    if waiters is not None:
                        waiters.discard(event)
                        if not waiters:
                            del self._events[u]

    def watched(self, uuid):
        """True when some waiter of this process waits on ``uuid``."""
        with self._lock:
            return uuid in self._events

    def wake(self, uuid, event_type=''):
        """Wake every waiter of ``uuid``.

        :returns: how many waiters were woken (int).
        """
        with self._lock:
            waiters = list(self._events.get(uuid, ()))
            if waiters:
                self.woken[event_type] = self.woken.get(event_type, 0) + 1
        for event in waiters:
            event.set()
        return len(waiters)


#: The process's registry (every waiter and the listener share it).
WAKEUPS = Wakeups()


def instance_uuid(event_type, payload):
    """The instance uuid a versioned notification is about, or None.

    :param event_type: str, e.g. ``instance.power_off.end``; only
        ``instance.*`` events count.
    :param payload: the notification payload as sent by Nova (a dict with
        ``nova_object.data``), untrusted: anything else gives None.
    """
    if not isinstance(event_type, str) or \
            not event_type.startswith('instance.'):
        return None
    if not isinstance(payload, dict):
        return None
    data = payload.get('nova_object.data', payload)
    if not isinstance(data, dict):
        return None
    uuid = data.get('uuid')
    if not isinstance(uuid, str) or not 0 < len(uuid) <= 64:
        return None
    return uuid


class WakeupEndpoint:
    """oslo.messaging notification endpoint feeding :data:`WAKEUPS`.

    Never raises: a malformed message is logged and dropped.
    """

    def __init__(self, wakeups=None):
        self.wakeups = wakeups if wakeups is not None else WAKEUPS

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        try:
            uuid = instance_uuid(event_type, payload)
            if uuid is not None and self.wakeups.wake(uuid, event_type):
                LOG.debug('%s of %s woke its waiters', event_type, uuid)
        except Exception:
            LOG.exception('Ignoring the notification %s', event_type)


def pool_name(host, pid=None):
    """The listener pool of one scheduler process (str):
    ``opie-scheduler-wakeup.<host>.<pid>``, so that every process hears
    every notification.
    """
    return '%s.%s.%d' % (POOL_PREFIX, host, os.getpid() if pid is None
                         else pid)


class Listener:
    """The notification listener of one scheduler process.

    :param transport: oslo.messaging notification transport (default
        nova's, ``nova.rpc.NOTIFICATION_TRANSPORT``).
    :param wakeups: the :class:`Wakeups` to wake (default
        :data:`WAKEUPS`).
    :param pool: the listener pool (default :func:`pool_name`).

    :meth:`start` and :meth:`stop` never raise: a listener that cannot
    start (no notification transport, broker down) logs why and leaves
    the waits polling (:func:`live` stays False).
    """

    def __init__(self, conf, transport=None, wakeups=None, pool=None):
        self.conf = conf
        self.transport = transport
        self.pool = pool
        self.wakeups = wakeups if wakeups is not None else WAKEUPS
        self._listener = None

    @property
    def running(self):
        return self._listener is not None

    def start(self):
        """Start listening on ``[notifications]
        versioned_notifications_topics`` (nova's options) with the
        process's own pool.

        :returns: True when listening.
        """
        global _LIVE
        if self._listener is not None:
            return True
        try:
            from nova import rpc
            import oslo_messaging
            transport = self.transport or rpc.NOTIFICATION_TRANSPORT
            if transport is None:
                raise RuntimeError('nova has no notification transport')
            topics = list(
                self.conf.notifications.versioned_notifications_topics)
            targets = [oslo_messaging.Target(topic=t) for t in topics]
            pool = self.pool or pool_name(self.conf.host)
            listener = oslo_messaging.get_notification_listener(
                transport, targets, [WakeupEndpoint(self.wakeups)],
                executor='threading', pool=pool)
            listener.start()
        except Exception:
            LOG.exception('The wake-up listener of Nova\'s notifications '
                          'could not start; victims are polled '
                          '([opie_preemption] poll_interval)')
            return False
        self._listener = listener
        _LIVE = self
        LOG.info('Listening to Nova\'s versioned notifications %s in pool '
                 '%s: waits on victims wake at their events', topics, pool)
        return True

    def stop(self, timeout=10):
        """Stop and wait for the listener (idempotent)."""
        global _LIVE
        listener, self._listener = self._listener, None
        if _LIVE is self:
            _LIVE = None
        if listener is None:
            return
        try:
            listener.stop()
            listener.wait()
        except Exception:
            LOG.exception('The wake-up listener did not stop cleanly')


_LIVE = None


def live():
    """True when this process's listener runs: waits may then poll at the
    sparse fallback spacing (``[opie_preemption]
    notification_poll_interval``).
    """
    return _LIVE is not None and _LIVE.running
