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
"""The bids the scheduler reads: a request's and a placed server's.

The proportional-share weigher
(:mod:`opie_sched.scheduler.weights.proportional_share`) ranks hosts by
them, and the restore order (:mod:`opie_sched.scheduler.restore`) sorts
by them. The parsing and validation of a bid are
:mod:`opie_sched.market.bids`'; whether a request would be out of bid is
the market's own rule (:func:`opie_sched.market.outbid.assess`).
"""

from oslo_log import log as logging

import nova.conf

from opie_sched import conf as opie_conf
from opie_sched.market import bids
from opie_sched.market import outbid
from opie_sched.market import pricing

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF
opie_conf.register_opts(CONF)

#: Scheduler hint that gives a preemptible request's bid (currency per
#: hour), e.g. ``openstack server create --hint opie_bid=0.08``; it is the
#: request's own bid, ahead of its flavor's ``opie:bid``.
BID_HINT = 'opie_bid'


def request_bid(spec_obj):
    """The bid of a preemptible request (Decimal, currency per hour).

    Scheduler hint ``opie_bid`` > flavor extra spec ``opie:bid`` >
    ``[opie_preemption] default_bid``.

    :raises opie_sched.market.bids.BidError: the first given source is not a
        valid bid.
    """
    hint = spec_obj.get_scheduler_hint(BID_HINT) if hasattr(
        spec_obj, 'get_scheduler_hint') else None
    if hint is not None:
        return bids.parse_bid(hint, what='scheduler hint ' + BID_HINT)
    flavor = getattr(spec_obj, 'flavor', None)
    specs = getattr(flavor, 'extra_specs', None) or {}
    bid, _ = bids.resolve_bid(None, specs, CONF.opie_preemption.default_bid)
    return bid


def instance_bid(instance):
    """The bid of an instance already placed (Decimal, currency per hour);
    an invalid bid counts as the default one (it is logged).
    """
    meta = instance.metadata if 'metadata' in instance else {}
    specs = getattr(instance.flavor, 'extra_specs', None) or {}
    default = CONF.opie_preemption.default_bid
    try:
        return bids.resolve_bid(meta, specs, default)[0]
    except bids.BidError as exc:
        LOG.warning('Instance %s: %s; counting the default bid %s',
                    instance.uuid, exc, default)
        return bids.parse_bid(default)


#: Key of the request in the host's market.
_REQUEST = object()


def request_out_of_bid(bid, vcpus, memory_mb, capacity, others):
    """Whether a request would be out of bid on a host.

    :param bid: the request's bid, currency per hour.
    :param vcpus: its flavor's vCPUs; ``memory_mb`` its RAM, MB.
    :param capacity: ``{"vcpus": units, "memory_mb": units}`` of the host
        (> 0 each).
    :param others: iterable of ``(bid, vcpus, memory_mb)`` of the host's
        preemptible instances.
    :returns: bool (:func:`opie_sched.market.outbid.assess`).
    """
    servers = [outbid.Server(_REQUEST, bid, {
        pricing.VCPUS: vcpus, pricing.MEMORY_MB: memory_mb})]
    for n, (b, v, m) in enumerate(others):
        servers.append(outbid.Server(n, b, {pricing.VCPUS: v,
                                            pricing.MEMORY_MB: m}))
    market = outbid.assess(servers, capacity)
    return market.positions[_REQUEST].out_of_bid
