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
"""``ProportionalShareWeigher``: the proportional-share weigher of the spot
market.

Themis (S. Costache et al., *Themis: Economy-based automatic resource
scaling for cloud systems*, HPCC'12, §III.B): under proportional sharing a
VM's share of a host is ``bid / (Σ bids on the host + bid)``, so a new
preemptible request is best placed where the bids already there add up to
the least — worst fit by the sum of bids.

The weigher applies the market's own rule (:func:`opie_sched.market.outbid.
assess`, the function the ``opie-market`` engine and API use): on each
host, the request and the host's preemptible instances share the host's
capacity with work-conserving caps (their flavors); a host where the
request's share would not cover its flavor -- it would be out of bid the
moment it lands (:func:`opie_sched.scheduler.bids.request_out_of_bid`) --
weighs 0. With idle capacity every share covers its
flavor, so no host is penalised because others bid more.

A share is what the market entitles a server to; Nova gives every server
its whole flavor and enforces no CPU share unless the operator sets the
flavor extra spec ``quota:cpu_shares`` (libvirt CPU weight; see
:mod:`opie_sched.market.pricing`). The scheduler does not see the
market's reserve prices (``[opie_market]``): a bid below the reserve cost
of its flavor is caught by the market at its next period.

Enable it with the other opie weighers::

    [filter_scheduler]
    weight_classes = nova.scheduler.weights.all_weighers,
        opie_sched.scheduler.weights.all_weighers,
        opie_sched.scheduler.weights.proportional_share.ProportionalShareWeigher

It is not in :func:`~opie_sched.scheduler.weights.all_weighers` (it steers
preemptible requests by their bids, which only a cloud running the market
wants).

Bids of the instances already on the candidate hosts come from the same
bulk load per request as the preemption weighers (instance metadata and
flavor, one query per cell), never from a query per host.
"""

import nova.conf
from nova.scheduler import utils as scheduler_utils

from opie_sched.common import flavors
from opie_sched import conf as opie_conf
from opie_sched.market import pricing
from opie_sched.scheduler import bids
from opie_sched.scheduler import ownership
from opie_sched.scheduler import request_view
from opie_sched.scheduler.weights import base

CONF = nova.conf.CONF
opie_conf.register_opts(CONF)


def _capacity(host_state):
    """The host's capacity as the market counts it (total × allocation
    ratio), or None when unknown.
    """
    try:
        vcpus = host_state.vcpus_total * host_state.cpu_allocation_ratio
        ram = (host_state.total_usable_ram_mb
               * host_state.ram_allocation_ratio)
    except (AttributeError, TypeError):
        return None
    if not vcpus or not ram or vcpus <= 0 or ram <= 0:
        return None
    return {pricing.VCPUS: pricing.as_decimal(float(vcpus)),
            pricing.MEMORY_MB: pricing.as_decimal(float(ram))}


class ProportionalShareWeigher(base.BulkWeigher):
    """A preemptible request goes where its bid buys the largest share.

    Weight = ``bid / (Σ bids of the host's preemptible instances + bid)``
    (Themis §III.B, worst fit by the sum of bids), in [0, 1]; instances
    already leaving (being preempted or deleted) do not count. A host where
    the request would be out of bid (its work-conserving share below its
    flavor, :func:`opie_sched.scheduler.bids.request_out_of_bid`) weighs
    0. Normal requests: every host 0 (they are not in the market). A
    request without a usable bid is weighed as bidding ``[opie_preemption]
    default_bid``.
    """

    minval = 0.0
    maxval = 1.0
    #: named in ``weight_classes`` by a cloud that runs the market.
    OPT_IN = True

    def weight_multiplier(self, host_state):
        return scheduler_utils.get_weight_multiplier(
            host_state, 'proportional_share_weight_multiplier',
            CONF.opie_preemption.proportional_share_weight_multiplier)

    def _weigh_all(self, host_states, spec_obj):
        flavor = getattr(spec_obj, 'flavor', None)
        if not flavors.is_marked_preemptible(
                getattr(flavor, 'extra_specs', None)):
            return [0.0] * len(host_states)
        bid = bids.request_bid(spec_obj)
        view = request_view.view_for(spec_obj)
        loaded = view.loaded_instances(host_states)
        result = []
        for hs in host_states:
            others = [(bids.instance_bid(inst), inst.flavor.vcpus,
                       inst.flavor.memory_mb)
                      for inst in loaded.get((hs.host, hs.nodename), [])
                      if flavors.is_marked_preemptible(
                          getattr(inst.flavor, 'extra_specs', None))
                      and not ownership.instance_is_leaving(inst)]
            capacity = _capacity(hs)
            if capacity is not None and bids.request_out_of_bid(
                    bid, spec_obj.vcpus, spec_obj.memory_mb, capacity,
                    others):
                result.append(0.0)
                continue
            held = sum(float(b) for b, _, _ in others)
            total = held + float(bid)
            result.append(float(bid) / total if total > 0 else 1.0)
        return result
