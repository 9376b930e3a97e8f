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
"""``opie.instance.preempt``: a preemption decision of the scheduler.

Sent by nova-scheduler's opie plugins (and the reconciler) once victims
were terminated, to operators' listeners and opie's own demo/tests.
"""

from oslo_versionedobjects import fields

from opie_sched.notifications import base
from opie_sched.preemption import behaviours

EVENT_TYPE = 'opie.instance.preempt'
#: Sent by the reconciler when a preempted server is running again
#: (automatic restore, :mod:`opie_sched.scheduler.restore`).
RESTORE_EVENT_TYPE = 'opie.instance.restore'
SOURCE = 'opie-scheduler'

#: The interruption behaviours (:mod:`opie_sched.preemption.behaviours`,
#: read when this module is imported). A behaviour added to the registry
#: changes this enum, hence the payload's fingerprint: bump the payload's
#: version (``tests/unit/notifications/test_notifications.py`` pins the
#: names per version).
ACTIONS = behaviours.names()


@base.OpieObjectRegistry.register
class PreemptionVictimPayload(base.NotificationPayloadBase):
    """One victim: ``uuid``, ``project_id``, ``name`` and ``cost`` (the
    preemption cost the scheduler minimised, in its cost function's unit:
    seconds of lost work by default).
    """

    # Version 1.0: initial version
    VERSION = '1.0'

    fields = {
        'uuid': fields.UUIDField(),
        'project_id': fields.StringField(),
        'name': fields.StringField(nullable=True),
        'cost': fields.FloatField(),
    }


@base.OpieObjectRegistry.register
class PreemptionPayload(base.NotificationPayloadBase):
    """A preemption decision.

    :ivar host: the compute host freed.
    :ivar preemptor_uuid: the server the room was made for, or the cause
        word (``reconciler``, ``max-lifetime``) when none was.
    :ivar request_id: the preemptor's request id (or the reconciler's).
    :ivar action: ``delete``, ``stop`` or ``shelve``.
    :ivar total_cost: sum of the victims' costs.
    :ivar victims: list of :class:`PreemptionVictimPayload`, only those
        actually terminated.
    """

    # Version 1.0: initial version
    VERSION = '1.0'

    fields = {
        'host': fields.StringField(nullable=True),
        'preemptor_uuid': fields.StringField(nullable=True),
        'request_id': fields.StringField(nullable=True),
        'action': fields.EnumField(valid_values=ACTIONS),
        'total_cost': fields.FloatField(),
        'victims': fields.ListOfObjectsField('PreemptionVictimPayload'),
    }


@base.OpieObjectRegistry.register
class PreemptionNotification(base.NotificationBase):
    """``opie.instance.preempt`` (priority info)."""

    # Version 1.0: initial version
    VERSION = '1.0'

    fields = {
        'payload': fields.ObjectField('PreemptionPayload'),
    }


def preempt_notification(host, preemptor, request_id, action, victims,
                         publisher_host):
    """The ``opie.instance.preempt`` notification of a decision.

    :param host: compute host of the victims (str).
    :param preemptor: preemptor's uuid or cause word (str).
    :param request_id: request id (str or None).
    :param action: one of :data:`ACTIONS`.
    :param victims: iterable of ``(uuid, project_id, name, cost)``.
    :param publisher_host: the sending service's host (``CONF.host``).
    :raises ValueError: a field of the wrong type or value (e.g. an
        unknown action, a victim uuid that is not a UUID).
    """
    items = [PreemptionVictimPayload(uuid=uuid, project_id=project,
                                     name=name, cost=cost)
             for uuid, project, name, cost in victims]
    payload = PreemptionPayload(
        host=host, preemptor_uuid=preemptor, request_id=request_id,
        action=action, total_cost=sum(v.cost for v in items),
        victims=items)
    return PreemptionNotification(
        priority=base.PriorityField.INFO,
        event_type=base.OpieEventType(object='instance', action='preempt'),
        publisher=base.OpiePublisher(source=SOURCE, host=publisher_host),
        payload=payload)


@base.OpieObjectRegistry.register
class RestorePayload(base.NotificationPayloadBase):
    """A preempted server running again after an automatic restore.

    :ivar uuid: the server (the same one that was shelved).
    :ivar project_id: its project.
    :ivar host: the compute host it runs on now.
    :ivar interruptions: its interruptions with restore requested so far
        (>= 1).
    :ivar waited_seconds: from the end of its interruption (shelved and
        offloaded) to the reconciler's round that saw it running again.
    """

    # Version 1.0: initial version
    VERSION = '1.0'

    fields = {
        'uuid': fields.UUIDField(),
        'project_id': fields.StringField(),
        'host': fields.StringField(nullable=True),
        'interruptions': fields.IntegerField(),
        'waited_seconds': fields.FloatField(),
    }


@base.OpieObjectRegistry.register
class RestoreNotification(base.NotificationBase):
    """``opie.instance.restore`` (priority info)."""

    # Version 1.0: initial version
    VERSION = '1.0'

    fields = {
        'payload': fields.ObjectField('RestorePayload'),
    }


def restore_notification(uuid, project_id, host, interruptions, waited,
                         publisher_host):
    """The ``opie.instance.restore`` notification of one server.

    :param waited: seconds (float) it waited, shelved.
    :raises ValueError: a field of the wrong type or value.
    """
    payload = RestorePayload(uuid=uuid, project_id=project_id, host=host,
                             interruptions=interruptions,
                             waited_seconds=float(waited))
    return RestoreNotification(
        priority=base.PriorityField.INFO,
        event_type=base.OpieEventType(object='instance', action='restore'),
        publisher=base.OpiePublisher(source=SOURCE, host=publisher_host),
        payload=payload)
