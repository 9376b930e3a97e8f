"""The proportional-share weigher of the spot market.

Themis §III.B (``seeds/themis-proportional-share-slo-policies.txt``): under
proportional sharing a VM's share of a host is ``bid / (Σ bids on the host
+ bid)``, so a new preemptible request is best placed where the bids already
there add up to the least — worst fit by the sum of bids. Enable it with the
other opie weighers::

    [filter_scheduler]
    weight_classes = nova.scheduler.weights.all_weighers,
        opie_sched.scheduler.weights.all_weighers,
        opie_sched.scheduler.market_weights.ProportionalShareWeigher

Bids of the instances already on the candidate hosts come from the same
bulk load per request as the preemption weighers (instance metadata and
flavor, one query per cell), never from a query per host.
"""

from oslo_log import log as logging

import nova.conf
from nova.scheduler import utils as scheduler_utils

from opie_sched import conf as opie_conf
from opie_sched.market import bids
from opie_sched.scheduler import hosts
from opie_sched.scheduler import weights

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
    an invalid bid counts as the default one (it is logged)."""
    meta = instance.metadata if 'metadata' in instance else {}
    specs = getattr(instance.flavor, 'extra_specs', None) or {}
    default = CONF.opie_preemption.default_bid
    try:
        return bids.resolve_bid(meta, specs, default)[0]
    except bids.BidError as exc:
        LOG.warning('Instance %s: %s; counting the default bid %s',
                    instance.uuid, exc, default)
        return bids.parse_bid(default)


class ProportionalShareWeigher(weights._BulkWeigher):
    """A preemptible request goes where its bid buys the largest share.

    Weight = ``bid / (Σ bids of the host's preemptible instances + bid)``
    (Themis §III.B, worst fit by the sum of bids), in [0, 1]; instances
    already leaving (being preempted or deleted) do not count. Normal
    requests: every host 0 (they are not in the market). A request without a
    usable bid is weighed as bidding ``[opie_preemption] default_bid``.
    """

    minval = 0.0
    maxval = 1.0

    def weight_multiplier(self, host_state):
        return scheduler_utils.get_weight_multiplier(
            host_state, 'proportional_share_weight_multiplier',
            CONF.opie_preemption.proportional_share_weight_multiplier)

    def _weigh_all(self, host_states, spec_obj):
        if not hosts.request_is_preemptible(spec_obj):
            return [0.0] * len(host_states)
        bid = float(request_bid(spec_obj))
        view = hosts.view_for(spec_obj)
        loaded = view.loaded_instances(host_states)
        result = []
        for hs in host_states:
            held = sum(float(instance_bid(inst))
                       for inst in loaded.get((hs.host, hs.nodename), [])
                       if hosts.flavor_is_preemptible(inst.flavor)
                       and not hosts.instance_is_leaving(inst))
            total = held + bid
            result.append(bid / total if total > 0 else 1.0)
        return result
