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
"""JSON schemas of the opie-market API's request bodies and query strings.

Bodies are validated as parsed JSON; query strings as an object of text
values (a parameter given twice is refused before validation). A request
that does not match gets 400 with an API-SIG error body naming the field
(:func:`validate`). Domain rules a schema cannot say (a bid at most
``[opie_market] bid_cap``, decimal text that parses) are checked after.
"""

import jsonschema

from opie_sched.market import pricing

#: Money, bids and prices: decimal text or a JSON number.
_NUMBER = {'type': ['string', 'number'], 'maxLength': 64}
#: A time: ISO 8601 text or epoch seconds as text.
_TIME = {'type': 'string', 'minLength': 1, 'maxLength': 64}
_NAME = {'type': 'string', 'minLength': 1, 'maxLength': 255}
_INT_TEXT = {'type': 'string', 'pattern': '^[0-9]{1,9}$'}
_RESOURCE = {'enum': list(pricing.RESOURCES)}

BID_UPDATE = {
    'type': 'object',
    'properties': {'bid': _NUMBER},
    'required': ['bid'],
    'additionalProperties': False,
}

CREDIT = {
    'type': 'object',
    'properties': {'amount': _NUMBER,
                   'note': {'type': 'string', 'maxLength': 255}},
    'required': ['amount'],
    'additionalProperties': False,
}

RESERVE_UPDATE = {
    'type': 'object',
    'properties': {
        'reserve_price': {
            'type': 'object', 'minProperties': 1,
            'propertyNames': _RESOURCE,
            'additionalProperties': _NUMBER},
        'pool': _NAME,
    },
    'required': ['reserve_price'],
    'additionalProperties': False,
}

#: An interruption drill (microversion 1.3); its upper bound is
#: ``[opie_market] notice_period``, checked after.
DRILL_CREATE = {
    'type': 'object',
    'properties': {'notice_seconds': {'type': 'integer', 'minimum': 0}},
    'additionalProperties': False,
}

#: The acknowledgement of a notice (microversion 1.4): no fields yet.
ACK_CREATE = {
    'type': 'object',
    'properties': {},
    'additionalProperties': False,
}

#: Pagination parameters of list resources (microversion 1.1).
PAGINATION = {'limit': _INT_TEXT, 'marker': _NAME}


def query(properties, paginated=False, required=()):
    """Schema of a query string with ``properties`` (plus ``limit`` and
    ``marker`` when ``paginated``).
    """
    props = dict(properties)
    if paginated:
        props.update(PAGINATION)
    return {'type': 'object', 'properties': props,
            'required': list(required), 'additionalProperties': False}


HISTORY_QUERY = {'start': _TIME, 'end': _TIME, 'pool': _NAME,
                 'resource': _RESOURCE}
LEDGER_QUERY = {'project_id': _NAME, 'since': _TIME}
ACCOUNT_QUERY = {'project_id': _NAME}
NOTICES_QUERY = {'project_id': _NAME,
                 'state': {'enum': ['noticed', 'preempted', 'cancelled',
                                    'gone']}}
FLAVOR_PRICE_QUERY = {
    'vcpus': _INT_TEXT, 'memory_mb': _INT_TEXT,
    'hours': {'type': 'string', 'pattern': '^[0-9]{1,4}$'}}
EMPTY_QUERY = {}
PLACEMENT_SCORE_QUERY = {
    'flavor': _NAME, 'count': {'type': 'string', 'pattern': '^[0-9]{1,4}$'},
    'zone': _NAME, 'bid': {'type': 'string', 'minLength': 1,
                           'maxLength': 64}}
INTERRUPTION_HISTORY_QUERY = {
    'flavor': _NAME, 'zone': _NAME, 'since': _TIME,
    'period_seconds': {'type': 'string', 'pattern': '^[0-9]{1,9}$'}}
EVENTS_QUERY = {'project_id': _NAME, 'server_id': _NAME}


class ValidationError(ValueError):
    """A request does not match its schema: ``field`` (dotted path, or
    ``''`` for the whole document) and ``detail``.
    """

    def __init__(self, field, detail):
        super().__init__('%s: %s' % (field, detail) if field else detail)
        self.field = field
        self.detail = detail


def validate(schema, document):
    """Check ``document`` against ``schema``.

    :raises ValidationError: the most relevant violation
        (:func:`jsonschema.exceptions.best_match`), with its field.
    """
    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(
        validator.iter_errors(document))
    if error is None:
        return
    path = '.'.join(str(p) for p in error.absolute_path)
    if error.validator == 'additionalProperties' and not path:
        unknown = sorted(set(document) - set(schema.get('properties', {})))
        raise ValidationError('', 'unknown fields: %s' % ', '.join(unknown))
    raise ValidationError(path, error.message)
