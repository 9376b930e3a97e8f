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
"""The RPM terms of a request's candidate hosts (thesis Paper IV).

The RPM weighers (:mod:`opie_sched.scheduler.weights.rpm` and the
per-term ``rpm_risk``, ``rpm_efficiency``, ``rpm_imbalance``,
``rpm_distance``) rank hosts by the terms :func:`evaluate` computes here,
once per request for all of them; the utilisation cap filter
(:mod:`opie_sched.scheduler.filters.utilisation_cap`) reads the same
usage.

Scores and weights: every term is normalised by its upper bound (Paper IV
§4.3.1) to s in [0, 1], lower is better; the weighers return ``-s`` and set
nova's ``minval = -1``, ``maxval = 0``, so nova maps the weight to
``1 - s`` with fixed bounds instead of min-max over the candidates (a
weigher's weights keep their meaning across requests).

Topology (Paper IV §3, a three-level tree): host aggregate metadata
``opie:topology_group`` (server group / edge switch) and
``opie:topology_cluster`` (aggregation level). Hosts without them, or with
conflicting values in several aggregates, have an unknown location:
:func:`opie_sched.rpm.model.distance` puts them at the largest distance (3)
from every other host, so they are never preferred as "near". The distance is
measured to *reference hosts*: the scheduler hint ``opie_near`` (one or
more host names) or, without it, the hosts of the request's server group;
a request with neither gets the same (zero) distance on every host.

Usage: ``[opie_rpm] utilisation_source``
(:mod:`opie_sched.common.utilisation`);
each request records at most one history sample per candidate host.
Nothing here queries a database per host: a reference host that is not a
candidate is located with two aggregate queries per request.

Each plugin catches its own errors: weighers log and return the same
neutral weight for every host; the filter fails closed (rejects the host),
as the full-state filter does.
"""

import threading
import weakref

from oslo_log import log as logging

import nova.conf
from nova import context as nova_context
from nova import objects

from opie_sched.common import utilisation
from opie_sched.conf import rpm as rpm_opts
from opie_sched.rpm import model as rpm

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF
rpm_opts.register_opts(CONF)

#: Aggregate metadata key: the host's server group (edge switch).
GROUP_KEY = 'opie:topology_group'
#: Aggregate metadata key: the host's cluster (aggregation switch).
CLUSTER_KEY = 'opie:topology_cluster'
#: Scheduler hint: host name(s) the placement should be near.
NEAR_HINT = 'opie_near'


# -- inputs -------------------------------------------------------------------

def _single_value(values, host, key):
    values = {v for v in values if v}
    if len(values) > 1:
        LOG.warning('Host %s has conflicting %s values %s in its '
                    'aggregates; treating its location as unknown',
                    host, key, sorted(values))
        return None
    return values.pop() if values else None


def location_from_aggregates(host, aggregates):
    """:class:`opie_sched.rpm.model.Location` of ``host`` from the metadata of
    its aggregates (objects with a ``metadata`` dict).
    """
    groups, clusters = [], []
    for agg in aggregates or ():
        meta = getattr(agg, 'metadata', None) or {}
        groups.append(meta.get(GROUP_KEY))
        clusters.append(meta.get(CLUSTER_KEY))
    return rpm.Location(host, _single_value(groups, host, GROUP_KEY),
                        _single_value(clusters, host, CLUSTER_KEY))


def location(host_state):
    """Location of a HostState (its ``aggregates`` are already loaded)."""
    return location_from_aggregates(host_state.host,
                                    getattr(host_state, 'aggregates', ()))


def reference_hosts(spec_obj):
    """Host names the distance is measured to: the ``opie_near`` hint, or
    the hosts of the request's server group; empty when neither.
    """
    hints = getattr(spec_obj, 'scheduler_hints', None) or {}
    near = hints.get(NEAR_HINT) if hasattr(hints, 'get') else None
    if near:
        if isinstance(near, str):
            near = [near]
        names = []
        for item in near:
            names.extend(n.strip() for n in str(item).split(',')
                         if n.strip())
        return names
    group = getattr(spec_obj, 'instance_group', None)
    if group is not None and group.obj_attr_is_set('hosts'):
        return list(group.hosts or ())
    return []


def _load_locations(spec_obj, names):
    """Locations of non-candidate reference hosts: two aggregate queries
    for the whole request.
    """
    ctx = getattr(spec_obj, '_context', None) or \
        nova_context.get_admin_context()
    by_host = {name: [] for name in names}
    for key in (GROUP_KEY, CLUSTER_KEY):
        for agg in objects.AggregateList.get_by_metadata_key(
                ctx, key, hosts=set(names)):
            for host in agg.hosts:
                if host in by_host and agg not in by_host[host]:
                    by_host[host].append(agg)
    return {name: location_from_aggregates(name, aggs)
            for name, aggs in by_host.items()}


def request_size(spec_obj):
    """``(vCPU, MB)`` a RequestSpec asks for."""
    return float(spec_obj.vcpus), float(spec_obj.memory_mb)


# -- per-request evaluation ---------------------------------------------------

class HostTerms(object):
    """The normalised RPM terms of one candidate host, with the raw
    values they come from (for logs and tests).
    """

    def __init__(self, terms, raw):
        self.terms = terms
        self.raw = raw


def host_terms(usage, samples, req, loc, refs, conf):
    """:class:`HostTerms` of placing ``req`` on one host.

    :param usage: :class:`opie_sched.common.utilisation.Usage`.
    :param samples: ``(cpu_samples, ram_samples)`` history.
    :param req: ``(vCPU, MB)`` requested.
    :param loc: the host's :class:`opie_sched.rpm.model.Location`.
    :param refs: reference locations (may be empty).
    :param conf: the ``[opie_rpm]`` group.
    """
    req_cpu, req_ram = req
    r_o = rpm.host_overbooking_risk(
        req_cpu, usage.cpu_unrequested, usage.cpu_free,
        req_ram, usage.ram_unrequested, usage.ram_free)
    r_v = rpm.host_load_variation(samples[0][-conf.history_length:],
                                  samples[1][-conf.history_length:])
    risk = rpm.risk(r_o, r_v)
    dist = rpm.nearest_distance(loc, refs)
    cpu_frac = req_cpu / usage.cpu_capacity if usage.cpu_capacity else 1.0
    ram_frac = req_ram / usage.ram_capacity if usage.ram_capacity else 1.0
    eff = rpm.efficiency(usage.cpu_util, usage.ram_util, cpu_frac, ram_frac,
                         conf.target_utilisation, conf.efficiency_formula)
    low, high = rpm.efficiency_bounds(conf.target_utilisation,
                                      conf.efficiency_formula)
    imb = rpm.imbalance(usage.cpu_util, usage.ram_util, cpu_frac, ram_frac)
    terms = rpm.Terms(
        risk=rpm.normalise(risk, rpm.max_coefficient_of_variation(
            conf.history_length)),
        distance=0.0 if dist is None else rpm.normalise(
            dist, rpm.MAX_DISTANCE),
        efficiency=rpm.normalise(eff, high, low),
        # DT does not depend on the destination of a placement.
        data_transfer=0.0,
        imbalance=rpm.normalise(imb, rpm.MAX_PLACEMENT_IMBALANCE))
    raw = {'r_o': r_o, 'r_v': r_v, 'risk': risk, 'distance': dist,
           'efficiency': eff, 'imbalance': imb}
    return HostTerms(terms, raw)


def utilisation_source():
    conf = CONF.opie_rpm
    return utilisation.load_source(conf.utilisation_source,
                                   conf.history_length, conf.sample_interval)


class _RequestState(object):
    """What the RPM plugins know about one request: whether its history
    samples were recorded, and the terms of its current instance.
    """

    def __init__(self):
        self.recorded = False
        self.key = None
        self.terms = None


_state_lock = threading.Lock()
_states = weakref.WeakKeyDictionary()


def evaluate(host_states, spec_obj):
    """``{(host, node): HostTerms}`` for the candidates of the request's
    current instance, computed once per instance of a request and shared
    by all RPM weighers. History samples are recorded for the first
    instance only (later ones see hosts consumed by this request's own
    placements, which were not measured).
    """
    host_states = list(host_states)
    with _state_lock:
        state = _states.get(spec_obj)
        if state is None:
            state = _states[spec_obj] = _RequestState()
    key = (getattr(spec_obj, 'instance_uuid', None)
           if spec_obj.obj_attr_is_set('instance_uuid') else None,
           tuple((hs.host, hs.nodename, hs.vcpus_used, hs.free_ram_mb)
                 for hs in host_states))
    if state.key == key and state.terms is not None:
        return state.terms
    conf = CONF.opie_rpm
    source = utilisation_source()
    if state.recorded:
        usages = {(hs.host, hs.nodename): source.usage(hs)
                  for hs in host_states}
    else:
        usages = source.usages(host_states)
        state.recorded = True
    locations = {hs.host: location(hs) for hs in host_states}
    names = reference_hosts(spec_obj)
    missing = [n for n in names if n not in locations]
    refs = [locations[n] for n in names if n in locations]
    if missing:
        refs.extend(_load_locations(spec_obj, missing).values())
    req = request_size(spec_obj)
    terms = {}
    for hs in host_states:
        k = (hs.host, hs.nodename)
        terms[k] = host_terms(usages[k], source.history(hs), req,
                              locations[hs.host], refs, conf)
    state.key, state.terms = key, terms
    return terms
