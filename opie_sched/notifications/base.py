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
"""The base objects of opie_sched's versioned notifications.

Our own registry and serial namespace (``opie_object``, project namespace
``opie_sched``): the objects never pose as Nova's, and their names carry
no risk of replacing one of Nova's in oslo.versionedobjects' process-wide
class list (nova-scheduler loads both).
"""

from oslo_versionedobjects import base as ovo_base
from oslo_versionedobjects import fields


class OpieObjectRegistry(ovo_base.VersionedObjectRegistry):
    """Registry of opie_sched's versioned objects."""


class OpieObject(ovo_base.VersionedObject):
    """Base of every opie_sched versioned object."""

    OBJ_SERIAL_NAMESPACE = 'opie_object'
    OBJ_PROJECT_NAMESPACE = 'opie_sched'


class PriorityField(fields.BaseEnumField):
    """A notification priority (oslo.messaging's method names)."""

    AUDIT = 'audit'
    DEBUG = 'debug'
    INFO = 'info'
    WARN = 'warn'
    ERROR = 'error'
    CRITICAL = 'critical'
    ALL = (AUDIT, DEBUG, INFO, WARN, ERROR, CRITICAL)

    AUTO_TYPE = fields.Enum(valid_values=ALL)


@OpieObjectRegistry.register
class OpieEventType(OpieObject):
    """The event type ``opie.<object>.<action>[.<phase>]``.

    :param object: what the event is about (``instance``, ``market``,
        ``market.price``).
    :param action: what happened (``preempt``, ``update``).
    :param phase: optional step of the action (``notice``, ``end``).
    """

    # Version 1.0: initial version
    VERSION = '1.0'

    fields = {
        'object': fields.StringField(nullable=False),
        'action': fields.StringField(nullable=False),
        'phase': fields.StringField(nullable=True),
    }

    def __init__(self, object, action, phase=None):
        super().__init__()
        self.object = object
        self.action = action
        self.phase = phase

    def to_event_type(self):
        """The event type text, e.g. ``opie.market.preempt.notice``."""
        parts = ['opie', self.object, self.action]
        if self.phase:
            parts.append(self.phase)
        return '.'.join(parts)


@OpieObjectRegistry.register
class OpiePublisher(OpieObject):
    """Who sends: ``source`` (``opie-scheduler``, ``opie-market``) on
    ``host``; the publisher id is ``<source>:<host>`` (Nova's form).
    """

    # Version 1.0: initial version
    VERSION = '1.0'

    fields = {
        'host': fields.StringField(nullable=False),
        'source': fields.StringField(nullable=False),
    }

    def __init__(self, source, host):
        super().__init__()
        self.source = source
        self.host = host

    @property
    def publisher_id(self):
        return '%s:%s' % (self.source, self.host)


class NotificationPayloadBase(OpieObject):
    """Base of the payloads; subclasses declare ``fields`` and a VERSION."""


class NotificationBase(OpieObject):
    """A notification: priority, event type, publisher and payload.

    Subclasses declare the ``payload`` field as an ``ObjectField`` of
    their payload class, and their own VERSION.
    """

    # Version 1.0: initial version
    VERSION = '1.0'

    fields = {
        'priority': PriorityField(),
        'event_type': fields.ObjectField('OpieEventType'),
        'publisher': fields.ObjectField('OpiePublisher'),
    }

    def message(self):
        """``(priority, publisher_id, event_type, payload primitive)``:
        what :meth:`emit` hands to oslo.messaging.
        """
        # a freshly built payload has every field "changed": that says
        # nothing, so the primitive leaves the change list out
        self.payload.obj_reset_changes(recursive=True)
        return (self.priority, self.publisher.publisher_id,
                self.event_type.to_event_type(),
                self.payload.obj_to_primitive())

    def emit(self, notifier, context=None):
        """Send through ``notifier``, an ``oslo_messaging.Notifier`` (or
        anything with its ``prepare(publisher_id=...)`` and priority
        methods ``info(ctxt, event_type, payload)`` ...).

        :param context: the request context (a dict or an oslo.context
            RequestContext); default: an empty dict.
        :raises: whatever the notifier raises (callers log it).
        """
        priority, publisher_id, event_type, payload = self.message()
        sender = notifier.prepare(publisher_id=publisher_id)
        getattr(sender, priority)(context if context is not None else {},
                                  event_type, payload)


def from_primitive(primitive):
    """The payload object of a received notification's ``payload``.

    :param primitive: the ``payload`` dict of an opie notification
        (``opie_object.*`` keys).
    :returns: the payload object (e.g. a ``PreemptionPayload``), fields
        as attributes, nested payloads as objects.
    :raises oslo_versionedobjects.exception.UnsupportedObjectError: not
        an opie_sched object, or a version this code does not know.
    """
    return OpieObject.obj_from_primitive(primitive)
