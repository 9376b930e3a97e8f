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
"""Demand learnt from Nova's versioned notifications (oslo.messaging).

:class:`DemandTracker` is the notification endpoint; :func:`make_listener`
the listener that feeds it (``[opie_market] listen_notifications``).
"""

import threading

from oslo_log import log as logging

from opie_sched.services.market import cloud
from opie_sched.services.market import notifications
from opie_sched.services.market import opts

LOG = logging.getLogger(__name__)


class DemandTracker:
    """The servers Nova's versioned notifications told about.

    An oslo.messaging notification endpoint (``info``): it keeps a
    :class:`.cloud.ServerInfo` per server from ``instance.create.end``,
    ``instance.update`` and friends, and drops it on
    ``instance.delete.end``. :meth:`.pricer.Pricer.collect` replaces its
    content with what openstacksdk lists every period (reconciliation,
    the safety net) and uses it only when Nova's API cannot be reached.
    Thread-safe.
    """

    DROP = ('instance.delete.end', 'instance.soft_delete.end')

    def __init__(self):
        self._lock = threading.Lock()
        self._servers = {}
        self.reconciled_at = None
        self.events = 0

    @staticmethod
    def _data(obj):
        if isinstance(obj, dict) and 'nova_object.data' in obj:
            return obj['nova_object.data']
        return obj or {}

    def apply(self, event_type, payload):
        """Update from one notification; unknown events are ignored.

        :returns: True when demand changed (a server appeared, went or
            changed state).
        """
        if not event_type.startswith('instance.'):
            return False
        data = self._data(payload)
        uuid = data.get('uuid')
        if not uuid:
            return False
        with self._lock:
            self.events += 1
            if event_type in self.DROP or data.get('state') == 'deleted':
                return self._servers.pop(uuid, None) is not None
            flavor = self._data(data.get('flavor'))
            state = data.get('state') or ''
            fault = self._data(data.get('fault'))
            fault = (fault.get('exception_message') or fault.get(
                'exception') or '') if isinstance(fault, dict) else ''
            if event_type == 'instance.create.error' and \
                    'novalidhost' in fault.replace(' ', '').lower():
                fault = cloud.NO_VALID_HOST
            info = cloud.ServerInfo(
                uuid=uuid, project=data.get('tenant_id'),
                status='ACTIVE' if state == 'active' else state.upper(),
                host=data.get('host'), vcpus=int(flavor.get('vcpus') or 0),
                memory_mb=int(flavor.get('memory_mb') or 0),
                extra_specs=dict(flavor.get('extra_specs') or {}),
                metadata=dict(data.get('metadata') or {}),
                created_at=cloud.epoch(data.get('created_at')),
                name=data.get('display_name'), fault=fault or None,
                flavor_name=flavor.get('name'))
            old = self._servers.get(uuid)
            self._servers[uuid] = info
            return old is None or old.status != info.status

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        """oslo.messaging notification endpoint."""
        try:
            if self.apply(event_type, payload):
                LOG.debug('demand changed: %s', event_type)
        except Exception:
            LOG.exception('ignoring malformed notification %s', event_type)

    def reconcile(self, servers, now):
        """Replace the view with what Nova listed."""
        with self._lock:
            self._servers = {s.uuid: s for s in servers}
            self.reconciled_at = now

    def servers(self):
        with self._lock:
            return list(self._servers.values())


def make_listener(conf, tracker, endpoints=()):
    """A listener of Nova's versioned notifications feeding ``tracker``
    (and the other ``endpoints``, e.g. the :class:`.events.EventRecorder`
    that records the scheduler's ``opie.instance.preempt``), or None when
    ``listen_notifications`` is off.
    """
    g = opts.group(conf)
    if not g.listen_notifications:
        return None
    import oslo_messaging
    targets = [oslo_messaging.Target(topic=t) for t in g.notification_topics]
    return oslo_messaging.get_notification_listener(
        notifications.transport(conf), targets,
        [tracker] + list(endpoints),
        executor='threading', pool=notifications.PUBLISHER)
