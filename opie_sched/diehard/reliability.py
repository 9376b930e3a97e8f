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
"""S(x): the probability that a placement keeps K tasks running.

Thesis Paper VI, eqs. (4)-(6): :func:`reliability` sums the probability of
every failure state of the task-hosting domains in which at least K tasks
survive, exactly (every state) or truncated (the states with few failed
domains, with a bound on the dropped mass). Also Lemmas 1-2 of §3.1
(:func:`lemma_extra_tasks`) and the affinity score of eq. (9).

Units: durations in hours, probabilities in [0, 1].
"""

import collections
import itertools
import math
import numbers

from opie_sched.diehard import topology as dh_topo

#: Default bound on the truncation error of :func:`reliability`.
DEFAULT_TOLERANCE = 1e-10
#: ``method='auto'`` enumerates failure states up to this many states.
EXACT_STATE_LIMIT = 4096


# -- reliability S(x) ---------------------------------------------------------

class Reliability(collections.namedtuple(
        'Reliability', 'value error_bound method network_terms power_terms')):
    """S(x) for one placement.

    ``value`` is a lower bound of the job's reliability and
    ``value + error_bound`` an upper bound (``error_bound`` is 0 when
    exact). ``method`` is ``'exact'`` or ``'truncated'``;
    ``network_terms``/``power_terms`` are the largest numbers of failed
    (task-hosting) network/power domains summed over.
    """


class _FailureModel(object):
    """The domains that host tasks of a placement, with their failure
    probabilities over the job's duration.
    """

    def __init__(self, topology, vector, hours):
        used = [c for c, x in enumerate(vector) if x]
        self.networks = sorted({topology.network_of(c) for c in used})
        self.powers = sorted({topology.power_of(c) for c in used})
        net_pos = {i: k for k, i in enumerate(self.networks)}
        pow_pos = {j: k for k, j in enumerate(self.powers)}
        self.q_net = [topology.network_domains[i].failure_probability(hours)
                      for i in self.networks]
        self.q_pow = [topology.power_domains[j].failure_probability(hours)
                      for j in self.powers]
        # loads[r][w]: tasks in network domain r and power domain w.
        self.loads = [[0] * len(self.powers) for _ in self.networks]
        for c in used:
            r = net_pos[topology.network_of(c)]
            self.loads[r][pow_pos[topology.power_of(c)]] += vector[c]
        self.total = sum(vector)

    @property
    def state_count(self):
        return 2 ** (len(self.q_net) + len(self.q_pow))


def reliability(topology, placement, tasks, hours, method='auto',
                tolerance=DEFAULT_TOLERANCE):
    """S(x): probability that at least ``tasks`` tasks survive ``hours``.

    Paper VI eq. (4): the sum of P^R(r)·P^W(w) over the failure states in
    which N(f, x) >= K. ``method='exact'`` enumerates every state of the
    task-hosting domains; ``'truncated'`` uses the decomposition
    S = Σ_i Σ_j S_{i,j} over the numbers of failed domains (eqs. 5-6) and
    drops the terms with more failures than needed to keep the dropped
    probability mass below ``tolerance``; ``'auto'`` is exact up to
    :data:`EXACT_STATE_LIMIT` states.

    :param placement: task counts per cell, see
        :meth:`.topology.Topology.placement_vector`.
    :param tasks: K, the number of tasks that must survive (int >= 1).
    :param hours: T, the job's duration in hours (>= 0).
    :param tolerance: bound on the truncation error (0: sum every term).
    :returns: :class:`Reliability`.
    :raises opie_sched.diehard.topology.PlanError: invalid placement,
        ``tasks``, ``hours``, ``method`` or ``tolerance``.
    """
    vector = topology.placement_vector(placement)
    check_tasks(tasks)
    check_hours(hours)
    if method not in ('auto', 'exact', 'truncated'):
        raise dh_topo.PlanError(
            'method must be auto, exact or truncated, got %r' % (method,))
    if not (isinstance(tolerance, numbers.Real) and 0 <= tolerance < 1):
        raise dh_topo.PlanError('tolerance must be in [0, 1), got %r'
                                % (tolerance,))
    model = _FailureModel(topology, vector, hours)
    if method == 'exact' or (method == 'auto' and
                             model.state_count <= EXACT_STATE_LIMIT):
        return _exact(model, tasks)
    return _truncated(model, tasks, tolerance)


def _exact(model, tasks):
    """Eq. (4) by enumerating the up/down state of every domain."""
    total = 0.0
    for net_up in itertools.product((True, False), repeat=len(model.q_net)):
        p_net = _state_probability(net_up, model.q_net)
        for pow_up in itertools.product((True, False),
                                        repeat=len(model.q_pow)):
            running = sum(load for r, row in enumerate(model.loads)
                          if net_up[r]
                          for w, load in enumerate(row) if pow_up[w])
            if running >= tasks:
                total += p_net * _state_probability(pow_up, model.q_pow)
    return Reliability(min(total, 1.0), 0.0, 'exact', len(model.q_net),
                       len(model.q_pow))


def _state_probability(up, fail_probs):
    prob = 1.0
    for is_up, q in zip(up, fail_probs):
        prob *= (1.0 - q) if is_up else q
    return prob


def _truncated(model, tasks, tolerance):
    """Eqs. (5)-(6): Σ S_{i,j} for i <= i_max, j <= j_max."""
    i_max, net_tail = _truncation_level(model.q_net, tolerance / 2)
    j_max, pow_tail = _truncation_level(model.q_pow, tolerance / 2)
    total = 0.0
    for j in range(j_max + 1):
        for failed in itertools.combinations(range(len(model.q_pow)), j):
            total += (_failed_set_probability(failed, model.q_pow) *
                      _given_power_failures(model, failed, tasks, i_max))
    dropped = pow_tail + (1.0 - pow_tail) * net_tail
    return Reliability(min(total, 1.0), min(dropped, 1.0), 'truncated',
                       i_max, j_max)


def _truncation_level(fail_probs, budget):
    """Smallest m with P(more than m of the domains fail) <= budget, and
    that probability (Poisson-binomial tail, summed from the top).
    """
    dist = _failure_count_distribution(fail_probs)
    tail = 0.0
    for m in range(len(fail_probs), -1, -1):
        if tail + dist[m] > budget:
            return m, tail
        tail += dist[m]
    return 0, tail


def _failure_count_distribution(fail_probs):
    dist = [1.0]
    for q in fail_probs:
        dist = [(dist[c] if c < len(dist) else 0.0) * (1.0 - q) +
                (dist[c - 1] * q if c else 0.0)
                for c in range(len(dist) + 1)]
    return dist


def _failed_set_probability(failed, fail_probs):
    failed = set(failed)
    return _state_probability([k not in failed for k in range(
        len(fail_probs))], fail_probs)


def _given_power_failures(model, failed, tasks, max_failures):
    """Σ_{i <= max_failures} S_{i,j} / P^W(w) for one power state w:
    a dynamic programme over the network domains on (failed domains, tasks
    lost), dropping states that lose more than N - K tasks.
    """
    loads = [sum(load for w, load in enumerate(row) if w not in failed)
             for row in model.loads]
    budget = sum(loads) - tasks
    if budget < 0:
        return 0.0
    states = {(0, 0): 1.0}
    for load, q in zip(loads, model.q_net):
        if load:
            states = _add_network_domain(states, load, q, budget,
                                         max_failures)
    return sum(states.values())


def _add_network_domain(states, load, q, budget, max_failures):
    after = collections.defaultdict(float)
    for (count, lost), prob in states.items():
        after[count, lost] += prob * (1.0 - q)
        if count < max_failures and lost + load <= budget:
            after[count + 1, lost + load] += prob * q
    return after


# -- redundancy ---------------------------------------------------------------

def lemma_extra_tasks(tasks, domains, failures):
    """Extra tasks to survive ``failures`` of ``domains`` equal domains.

    Paper VI §3.1, Lemmas 1-2: n = ceil(K·i / (R − i)). It is necessary
    for any placement (pigeonhole) and, for i = 1, sufficient with an even
    placement; for i > 1 integer rounding can leave it short (K=1, R=4,
    i=2 gives 1, yet two of the domains hold both tasks), which is why the
    planner checks S(x) rather than trusting the lemma.

    :raises opie_sched.diehard.topology.PlanError: unless ``tasks >= 0``
        and ``0 <= failures < domains``.
    """
    if tasks < 0 or not 0 <= failures < domains:
        raise dh_topo.PlanError(
            'the lemma needs K >= 0 and 0 <= i < R, got K=%r, i=%r, R=%r'
            % (tasks, failures, domains))
    return -(-tasks * failures // (domains - failures))


def affinity_score(vector):
    """Σ x(x − 1)/2 over the cells (Paper VI eq. 9): the task pairs that
    share a combined failure domain.
    """
    return sum(x * (x - 1) // 2 for x in vector)


def check_tasks(tasks):
    """Check K, the number of tasks that must survive.

    :raises opie_sched.diehard.topology.PlanError: unless an integer >= 1.
    """
    if isinstance(tasks, bool) or not isinstance(
            tasks, numbers.Integral) or tasks < 1:
        raise dh_topo.PlanError('tasks (K) must be an integer >= 1, got %r'
                                % (tasks,))


def check_hours(hours):
    """Check T, the job's duration in hours.

    :raises opie_sched.diehard.topology.PlanError: unless a finite number
        >= 0.
    """
    if (isinstance(hours, bool) or not isinstance(hours, numbers.Real)
            or not math.isfinite(hours) or hours < 0):
        raise dh_topo.PlanError(
            'hours (T) must be a finite number >= 0, got %r' % (hours,))
