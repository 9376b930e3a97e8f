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
"""``opie.market.*``: what opie-market tells operators' listeners.

* ``opie.market.price.update`` (:class:`MarketPriceNotification`): the
  prices of a new period, per pool and resource;
* ``opie.market.preempt.notice`` (:class:`MarketNoticeNotification`): a
  server got a preemption notice (out of bid or out of credit);
* ``opie.market.preempt.end`` (:class:`MarketPreemptedNotification`): a
  noticed server was preempted at its deadline.

Prices are decimal text (currency per unit-hour: per vCPU-hour, per
MB-hour of memory ...), never floats, as the market stores them.
"""

from oslo_versionedobjects import fields

from opie_sched.market import charge_rules
from opie_sched.notifications import base
from opie_sched.preemption import behaviours

SOURCE = 'opie-market'
EVENT_PRICE_UPDATE = 'opie.market.price.update'
EVENT_NOTICE = 'opie.market.preempt.notice'
EVENT_PREEMPTED = 'opie.market.preempt.end'

#: The charge rules (``[opie_market] charge_rule``, the entry points of
#: :mod:`opie_sched.market.charge_rules`, read when this module is
#: imported). A rule added changes this enum, hence the payload's
#: fingerprint: bump the payload's version
#: (``tests/unit/services/market/test_market_plugins.py`` pins the names
#: per version).
CHARGE_RULES = charge_rules.names()
#: Why a server is noticed.
KINDS = ('out_of_bid', 'out_of_credit')
#: The interruption behaviours (:mod:`opie_sched.preemption.behaviours`,
#: read when this module is imported). A behaviour added to the registry
#: changes this enum, hence the payload's fingerprint: bump the payload's
#: version (``tests/unit/notifications/test_notifications.py`` pins the
#: names per version).
ACTIONS = behaviours.names()


@base.OpieObjectRegistry.register
class MarketPoolPricesPayload(base.NotificationPayloadBase):
    """The prices of one pool: ``prices`` maps a resource (``vcpus``,
    ``memory_mb``, ...) to its price, decimal text in currency per
    unit-hour.
    """

    # Version 1.0: initial version
    VERSION = '1.0'

    fields = {
        'pool': fields.StringField(),
        'prices': fields.DictOfStringsField(),
    }


@base.OpieObjectRegistry.register
class MarketPricePayload(base.NotificationPayloadBase):
    """The prices of a period.

    :ivar period_start: UTC start of the period.
    :ivar period_seconds: period length (seconds).
    :ivar charge_rule: one of :data:`CHARGE_RULES`.
    :ivar pools: list of :class:`MarketPoolPricesPayload`, by pool name.
    """

    # Version 1.0: initial version
    VERSION = '1.0'

    fields = {
        'period_start': fields.DateTimeField(),
        'period_seconds': fields.IntegerField(),
        'charge_rule': fields.EnumField(valid_values=CHARGE_RULES),
        'pools': fields.ListOfObjectsField('MarketPoolPricesPayload'),
    }


#: The fields a notice and its preemption share: which server of which
#: project, why, and what happens to it.
_NOTICED_SERVER_FIELDS = {
    'server_uuid': fields.UUIDField(),
    'project_id': fields.StringField(),
    'kind': fields.EnumField(valid_values=KINDS),
    'reason': fields.StringField(),
    'action': fields.EnumField(valid_values=ACTIONS),
}


@base.OpieObjectRegistry.register
class MarketNoticePayload(base.NotificationPayloadBase):
    """A preemption notice: ``server_uuid`` of ``project_id`` is
    ``kind`` (one of :data:`KINDS`) for ``reason`` (text) and will be
    ``action``-ed (one of :data:`ACTIONS`) at ``deadline`` (UTC).
    """

    # Version 1.0: initial version
    VERSION = '1.0'

    fields = dict(_NOTICED_SERVER_FIELDS, deadline=fields.DateTimeField())


@base.OpieObjectRegistry.register
class MarketPreemptedPayload(base.NotificationPayloadBase):
    """A noticed server preempted: as :class:`MarketNoticePayload`, with
    ``preempted_at`` (UTC) instead of the deadline.
    """

    # Version 1.0: initial version
    VERSION = '1.0'

    fields = dict(_NOTICED_SERVER_FIELDS,
                  preempted_at=fields.DateTimeField())


@base.OpieObjectRegistry.register
class MarketPriceNotification(base.NotificationBase):
    """``opie.market.price.update`` (priority info)."""

    # Version 1.0: initial version
    VERSION = '1.0'

    fields = {'payload': fields.ObjectField('MarketPricePayload')}


@base.OpieObjectRegistry.register
class MarketNoticeNotification(base.NotificationBase):
    """``opie.market.preempt.notice`` (priority info)."""

    # Version 1.0: initial version
    VERSION = '1.0'

    fields = {'payload': fields.ObjectField('MarketNoticePayload')}


@base.OpieObjectRegistry.register
class MarketPreemptedNotification(base.NotificationBase):
    """``opie.market.preempt.end`` (priority info)."""

    # Version 1.0: initial version
    VERSION = '1.0'

    fields = {'payload': fields.ObjectField('MarketPreemptedPayload')}


def _price_payload(period_start, period_seconds, charge_rule, prices):
    return MarketPricePayload(
        period_start=period_start, period_seconds=period_seconds,
        charge_rule=charge_rule,
        pools=[MarketPoolPricesPayload(
            pool=pool, prices={r: str(p) for r, p in by_r.items()})
            for pool, by_r in sorted(prices.items())])


#: event type -> (notification class, payload builder, event type parts)
_EVENTS = {
    EVENT_PRICE_UPDATE: (MarketPriceNotification, _price_payload,
                         ('market.price', 'update', None)),
    EVENT_NOTICE: (MarketNoticeNotification, MarketNoticePayload,
                   ('market', 'preempt', 'notice')),
    EVENT_PREEMPTED: (MarketPreemptedNotification, MarketPreemptedPayload,
                      ('market', 'preempt', 'end')),
}


def market_notification(event_type, fields, publisher_host):
    """The notification of ``event_type`` with the payload ``fields``.

    :param event_type: :data:`EVENT_PRICE_UPDATE`, :data:`EVENT_NOTICE`
        or :data:`EVENT_PREEMPTED`.
    :param fields: dict of the payload's fields (times as datetimes or
        ISO 8601 text; for a price update ``prices`` as ``{pool:
        {resource: price}}``, prices Decimal or decimal text).
    :param publisher_host: the market replica's host name.
    :raises KeyError: an unknown event type.
    :raises ValueError: a missing or ill-typed field, an unknown kind,
        action or charge rule.
    """
    cls, payload, (obj, action, phase) = _EVENTS[event_type]
    return cls(priority=base.PriorityField.INFO,
               event_type=base.OpieEventType(object=obj, action=action,
                                             phase=phase),
               publisher=base.OpiePublisher(source=SOURCE,
                                            host=publisher_host),
               payload=payload(**fields))
