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
"""Versioned notifications of opie_sched (oslo.versionedobjects).

Every notification opie_sched sends is an object of this package, sent
through an ``oslo_messaging.Notifier`` by
:meth:`.base.NotificationBase.emit`:

* ``opie.instance.preempt``: :class:`.preemption.PreemptionNotification`
  (payload :class:`.preemption.PreemptionPayload`), sent by the scheduler
  and the reconciler for each preemption decision;
* ``opie.market.price.update``: :class:`.market.MarketPriceNotification`
  (:class:`.market.MarketPricePayload`), the market's prices of a period;
* ``opie.market.preempt.notice``: :class:`.market.MarketNoticeNotification`
  (:class:`.market.MarketNoticePayload`), a preemption notice given;
* ``opie.market.preempt.end``: :class:`.market.MarketPreemptedNotification`
  (:class:`.market.MarketPreemptedPayload`), a noticed server preempted.

The payload travels as the primitive of an oslo.versionedobjects object of
namespace ``opie_sched`` (keys ``opie_object.name``, ``.namespace``,
``.version``, ``.data``, ``.changes`` absent). A payload field added or
changed bumps the payload's version (minor: added, major: removed or
changed meaning); ``tests/unit/notifications/test_notifications.py`` pins
each object's fingerprint, and ``doc/notification_samples/`` holds one JSON
sample per event type, checked against what the objects emit.

This package imports nothing from Nova: the scheduler (inside
nova-scheduler) and the opie-market service share it.
"""
