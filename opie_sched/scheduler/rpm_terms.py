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
"""RPM weighers and the utilisation cap filter (thesis Paper IV).

Enable in nova.conf::

    [filter_scheduler]
    available_filters = nova.scheduler.filters.all_filters
    available_filters = opie_sched.scheduler.rpm_plugins.all_filters
    enabled_filters = ...,UtilisationCapFilter
    weight_classes = opie_sched.scheduler.rpm_plugins.RPMWeigher

or the per-term weighers (``RPMRiskWeigher``, ``RPMEfficiencyWeigher``,
``RPMImbalanceWeigher``, ``RPMDistanceWeigher``) with their own
multipliers instead of the combined one (``all_weighers()`` lists all five;
enabling the combined weigher together with the per-term ones counts the
terms twice).

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
as :class:`opie_sched.scheduler.filters.PreemptibleFullStateFilter` does.
"""

import abc
import threading
import weakref

from oslo_log import log as logging

import nova.conf
from nova import context as nova_context
from nova import objects
from nova.scheduler import filters
from nova.scheduler import utils as scheduler_utils
from nova.scheduler import weights

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


# -- weighers -----------------------------------------------------------------

class _RPMWeigher(weights.BaseHostWeigher):
    """Weight = −(normalised score); nova maps it to ``1 − score`` with
    the fixed bounds below.
    """

    minval = -1.0
    maxval = 0.0
    #: option (and aggregate metadata key) of the multiplier
    multiplier_option = None

    @abc.abstractmethod
    def _score(self, host_terms):
        """Normalised score in [0, 1] of one host's :class:`HostTerms`."""

    def weight_multiplier(self, host_state):
        return scheduler_utils.get_weight_multiplier(
            host_state, self.multiplier_option,
            getattr(CONF.opie_rpm, self.multiplier_option))

    def weigh_objects(self, weighed_obj_list, weight_properties):
        host_states = [w.obj for w in weighed_obj_list]
        try:
            terms = evaluate(host_states, weight_properties)
            result = []
            for hs in host_states:
                value = -self._score(terms[(hs.host, hs.nodename)])
                result.append(min(self.maxval, max(self.minval, value)))
        except Exception:
            # Never break scheduling: the same weight everywhere.
            LOG.exception('%s failed; ignoring it for this request',
                          type(self).__name__)
            result = [self.maxval] * len(host_states)
        return result

    def _weigh_object(self, host_state, weight_properties):
        class _W(object):
            obj = host_state
        return self.weigh_objects([_W()], weight_properties)[0]


class RPMRiskWeigher(_RPMWeigher):
    """Lower risk first: Risk = R_o × R_v (Paper IV eq. 5-7), normalised by
    its bound sqrt(history_length − 1) (the largest coefficient of
    variation of that many samples).
    """

    multiplier_option = 'rpm_risk_weight_multiplier'

    def _score(self, host_terms):
        return host_terms.terms.risk


class RPMEfficiencyWeigher(_RPMWeigher):
    """Hosts ending closest to the target utilisation first: E of Paper IV
    eq. 10-11 (``[opie_rpm] efficiency_formula``), normalised by its
    bounds.
    """

    multiplier_option = 'rpm_efficiency_weight_multiplier'

    def _score(self, host_terms):
        return host_terms.terms.efficiency


class RPMImbalanceWeigher(_RPMWeigher):
    """Hosts whose CPU and RAM utilisation stay balanced first: Imb of
    Paper IV eq. 12-13 for a new request (no source term), bound 1.
    """

    multiplier_option = 'rpm_imbalance_weight_multiplier'

    def _score(self, host_terms):
        return host_terms.terms.imbalance


class RPMDistanceWeigher(_RPMWeigher):
    """Hosts near the reference hosts first: Dist of Paper IV §4.3.1
    (1 same group, 2 same cluster, 3 elsewhere or unknown), divided by 3;
    neutral (0) without reference hosts.
    """

    multiplier_option = 'rpm_distance_weight_multiplier'

    def _score(self, host_terms):
        return host_terms.terms.distance


def configured_lambdas():
    """λ1..λ5 from ``[opie_rpm]`` in the order of :class:`rpm.Terms`.

    :raises opie_sched.rpm.model.RPMError: they do not add up to 1.
    """
    conf = CONF.opie_rpm
    return rpm.check_lambdas((conf.risk_lambda, conf.distance_lambda,
                              conf.efficiency_lambda,
                              conf.data_transfer_lambda,
                              conf.imbalance_lambda))


class RPMWeigher(_RPMWeigher):
    """Lowest RPM score first: Score = Σ λ_k × term_k (Paper IV eq. 3)
    with the λ's of ``[opie_rpm]`` (0.2 each by default).
    """

    multiplier_option = 'rpm_weight_multiplier'

    def _score(self, host_terms):
        return rpm.score(host_terms.terms, configured_lambdas())


# -- filter -------------------------------------------------------------------

class UtilisationCapFilter(filters.BaseHostFilter):
    """CPU and RAM utilisation after the placement stay <= alpha.

    Paper IV eq. 2: Σ Res_j <= n_active × (α × Capacity), applied per host:
    ``(actually used + requested) / capacity <= [opie_rpm] alpha`` for CPU
    and for RAM, with "actually used" from the utilisation source. Errors
    reject the host (fail closed).
    """

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        alpha = CONF.opie_rpm.alpha
        try:
            usage = utilisation_source().usage(host_state)
            req_cpu, req_ram = request_size(spec_obj)
            cpu = ((usage.cpu_used + req_cpu) / usage.cpu_capacity
                   if usage.cpu_capacity else float('inf'))
            ram = ((usage.ram_used + req_ram) / usage.ram_capacity
                   if usage.ram_capacity else float('inf'))
        except Exception:
            LOG.exception('UtilisationCapFilter failed on host %s; '
                          'rejecting the host',
                          getattr(host_state, 'host', '?'))
            return False
        if cpu <= alpha + 1e-9 and ram <= alpha + 1e-9:
            return True
        LOG.debug('%(host)s rejected: utilisation after placement CPU '
                  '%(cpu).3f, RAM %(ram).3f > alpha %(alpha).3f',
                  {'host': host_state, 'cpu': cpu, 'ram': ram,
                   'alpha': alpha})
        return False


def all_filters():
    """The RPM filter classes (for ``available_filters``)."""
    return [UtilisationCapFilter]


def all_weighers():
    """Every RPM weigher class (for ``weight_classes``); enable either the
    combined :class:`RPMWeigher` or the per-term ones, not both.
    """
    return [RPMWeigher, RPMRiskWeigher, RPMEfficiencyWeigher,
            RPMImbalanceWeigher, RPMDistanceWeigher]
