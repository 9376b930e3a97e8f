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
"""Bids of preemptible servers: parsing, validation and precedence.

A bid is what a server is willing to pay, in **currency per hour**
(Merkat §2.3: "VMs are billed based on their bids"; Themis Table I:
``bid_min`` is the provider's reserve price). Where a server's bid comes
from, first found wins:

1. the server's metadata ``opie:bid`` (set by the user at boot);
2. its flavor's extra spec ``opie:bid`` (the operator's default per
   flavor, see :mod:`opie_sched.scheduler.extra_specs`);
3. the configured default bid.

Every function returns a validated :class:`decimal.Decimal`: decimal text
such as ``"0.05"`` is kept exactly, which floats cannot do, and money is
added up in the ledger (:mod:`.budget`) without drift. Floats are accepted
and taken at their shortest repr (``0.1`` -> ``Decimal('0.1')``).

A bid is rejected with :class:`BidError` when it is not a number (bool,
None, empty or non-numeric text, any other type), not finite (NaN,
infinity), negative, or above the configured cap. Invalid bids never reach
a price: :func:`resolve_bid` raises instead of falling back to a lower
precedence source (a user's typo must not silently pay the flavor's bid),
and :func:`valid_bids` sets rejected servers aside so that callers price
with the valid bids only.
"""

import decimal
from decimal import Decimal

#: Server metadata / flavor extra spec key holding a bid.
BID_KEY = 'opie:bid'

#: The sources of a bid, in precedence order.
SOURCE_METADATA = 'metadata'
SOURCE_FLAVOR = 'flavor'
SOURCE_DEFAULT = 'default'


class BidError(ValueError):
    """A bid is not acceptable; the message says which and why."""


def _number(value, what):
    """``value`` as a Decimal, or BidError when it is not a number."""
    if isinstance(value, bool) or value is None:
        raise BidError('%s: not a number: %r' % (what, value))
    if isinstance(value, Decimal):
        return value
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, str):
        try:
            return Decimal(value.strip())
        except decimal.InvalidOperation:
            raise BidError('%s: not a number: %r' % (what, value))
    raise BidError('%s: not a number: %r (%s)'
                   % (what, value, type(value).__name__))


def parse_bid(value, cap=None, what='bid'):
    """A validated bid.

    :param value: int, float, Decimal or decimal text (e.g. ``"0.05"``,
        surrounding blanks allowed), currency per hour.
    :param cap: the largest acceptable bid (currency per hour), or None
        for no cap. A bid equal to the cap is accepted.
    :param what: how the message names the value (e.g. ``"server metadata
        opie:bid"``).
    :returns: Decimal >= 0 (``-0`` becomes ``0``).
    :raises BidError: not a number, NaN, infinite, negative, above ``cap``.
    """
    bid = _number(value, what)
    if bid.is_nan():
        raise BidError('%s: not a number: %r' % (what, value))
    if bid.is_infinite():
        raise BidError('%s: must be finite, got %r' % (what, value))
    if bid < 0:
        raise BidError('%s: must not be negative, got %r' % (what, value))
    if cap is not None and bid > _number(cap, 'bid cap'):
        raise BidError('%s: %s is above the largest accepted bid %s '
                       '(currency per hour)' % (what, bid, cap))
    return bid + 0


def resolve_bid(metadata=None, extra_specs=None, default=None, cap=None):
    """A server's bid and where it came from.

    :param metadata: the server's metadata (mapping) or None.
    :param extra_specs: its flavor's extra specs (mapping) or None.
    :param default: the configured default bid, or None for none.
    :param cap: the largest acceptable bid, or None.
    :returns: ``(Decimal bid, source)``, ``source`` one of
        :data:`SOURCE_METADATA`, :data:`SOURCE_FLAVOR`,
        :data:`SOURCE_DEFAULT`.
    :raises BidError: the first present source is invalid (no fall back),
        or no source has a bid.
    """
    sources = ((SOURCE_METADATA, metadata, 'server metadata ' + BID_KEY),
               (SOURCE_FLAVOR, extra_specs, 'flavor extra spec ' + BID_KEY))
    for source, mapping, what in sources:
        if mapping and BID_KEY in mapping:
            return parse_bid(mapping[BID_KEY], cap, what), source
    if default is None:
        raise BidError('no bid: neither server metadata nor flavor extra '
                       'specs have %s and there is no default bid' % BID_KEY)
    return parse_bid(default, cap, 'default bid'), SOURCE_DEFAULT


def valid_bids(raw, cap=None):
    """Split raw bids into the valid ones and the rejected ones.

    :param raw: mapping ``server -> raw bid``.
    :param cap: the largest acceptable bid, or None.
    :returns: ``(valid, rejected)``: ``valid`` maps server -> Decimal,
        ``rejected`` maps server -> :class:`BidError` message; both keep
        the input order.
    """
    valid, rejected = {}, {}
    for server, value in raw.items():
        try:
            valid[server] = parse_bid(value, cap, 'bid of %s' % (server,))
        except BidError as exc:
            rejected[server] = str(exc)
    return valid, rejected
