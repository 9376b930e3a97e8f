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
"""The ``opie.market.*`` notifications the market emits (oslo.messaging).

Everything the market sends goes through :func:`emit`; the three events
have one builder each (:func:`price_update`, :func:`preempt_notice`,
:func:`preempted`), so their payload format is defined here only.
:func:`make_notifier` builds the notifier from the configuration.
"""

import socket

from oslo_log import log as logging

from opie_sched.services.market import cloud
from opie_sched.services.market import opts

LOG = logging.getLogger(__name__)

#: Publisher (and listener pool) name of the service.
PUBLISHER = 'opie-market'

#: Notification event types.
EVENT_PRICE_UPDATE = 'opie.market.price.update'
EVENT_NOTICE = 'opie.market.preempt.notice'
EVENT_PREEMPTED = 'opie.market.preempt.end'


def transport(conf):
    """The oslo.messaging notification transport of ``conf``."""
    import oslo_messaging
    return oslo_messaging.get_notification_transport(conf)


def make_notifier(conf):
    """An oslo.messaging notifier, or None when notifications are off
    (``emit_notifications`` false, or no ``[oslo_messaging_notifications]
    driver``).
    """
    if not opts.group(conf).emit_notifications:
        return None
    try:
        import oslo_messaging
        notifier = oslo_messaging.Notifier(
            transport(conf),
            publisher_id='%s.%s' % (PUBLISHER, socket.gethostname()))
        drivers = [d for d in conf.oslo_messaging_notifications.driver
                   if d != 'noop']
        return notifier if drivers and notifier.is_enabled() else None
    except Exception:
        LOG.exception('notifications disabled: no usable transport')
        return None


def emit(notifier, event_type, payload):
    """Send ``event_type`` as its versioned notification
    (:func:`opie_sched.notifications.market.market_notification`,
    publisher ``opie-market:<host name>``); never raises (a failure is
    logged).

    :param notifier: an ``oslo_messaging.Notifier`` (or anything with
        ``info(ctxt, event_type, payload)``), or None (nothing is sent).
    :param payload: the event's fields (a dict), turned into the event's
        payload object.
    """
    if notifier is None:
        return
    try:
        from opie_sched.notifications import market as notes
        notes.market_notification(
            event_type, payload, socket.gethostname()).emit(notifier)
    except Exception:
        LOG.exception('could not emit %s', event_type)


def price_update(notifier, period_start, period_seconds, charge_rule,
                 prices):
    """``opie.market.price.update``: a period was priced.

    :param period_start: epoch seconds.
    :param prices: ``{pool: {resource: Decimal}}``, currency per
        unit-hour (sent as decimal text).
    """
    emit(notifier, EVENT_PRICE_UPDATE, {
        'period_start': cloud.iso(period_start),
        'period_seconds': period_seconds, 'charge_rule': charge_rule,
        'prices': {pool: {r: str(p) for r, p in by_r.items()}
                   for pool, by_r in prices.items()}})


def preempt_notice(notifier, server_uuid, project, kind, reason, deadline,
                   action):
    """``opie.market.preempt.notice``: a server was given notice.

    :param deadline: epoch seconds.
    :param action: its interruption behaviour (delete, stop, shelve).
    """
    emit(notifier, EVENT_NOTICE, {
        'server_uuid': server_uuid, 'project_id': project, 'kind': kind,
        'reason': reason, 'deadline': cloud.iso(deadline),
        'action': action})


def preempted(notifier, server_uuid, project, kind, reason, action, when):
    """``opie.market.preempt.end``: a server was preempted at ``when``
    (epoch seconds) by ``action``.
    """
    emit(notifier, EVENT_PREEMPTED, {
        'server_uuid': server_uuid, 'project_id': project, 'kind': kind,
        'reason': reason, 'action': action, 'preempted_at': cloud.iso(when)})
