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
"""The brute-force oracle of a preemption decision, independent of
:mod:`opie_sched.preemption.victims`: every subset of the host's candidate
victims is enumerated, each costed with the cost policy
(:mod:`opie_sched.preemption.costs`), and the cheapest subset freeing the
deficit is the minimum a decision must reach.
"""

#: Above this many candidates the oracle does not enumerate (2^n subsets).
MAX_CANDIDATES = 16
#: Relative tolerance of a cost comparison (floating point sums).
TOLERANCE = 1e-6


def _covers(amounts, deficit):
    return all(a >= d for a, d in zip(amounts, deficit))


def minimum(candidates, deficit):
    """The least total cost of a subset of ``candidates`` freeing
    ``deficit``.

    :param candidates: list of ``(resources, cost)``; ``resources`` a
        3-tuple (vCPU, MB, GB), ``cost`` a float >= 0.
    :param deficit: 3-tuple to free.
    :returns: the minimal cost, or None when no subset frees enough.
    :raises ValueError: above :data:`MAX_CANDIDATES` candidates.
    """
    n = len(candidates)
    if n > MAX_CANDIDATES:
        raise ValueError('%d candidates: too many to enumerate' % n)
    best = None
    for mask in range(1 << n):
        freed = [0, 0, 0]
        cost = 0.0
        for i in range(n):
            if mask >> i & 1:
                res, c = candidates[i]
                freed[0] += res[0]
                freed[1] += res[1]
                freed[2] += res[2]
                cost += c
        if _covers(freed, deficit) and (best is None or cost < best):
            best = cost
    return best


def minimum_count(candidates, deficit):
    """The most victims a cheapest subset of ``candidates`` freeing
    ``deficit`` has (0 when nothing needs freeing or no subset frees
    enough): how many victims an exact decision may take.

    :param candidates: as :func:`minimum`; ``deficit`` likewise.
    :raises ValueError: above :data:`MAX_CANDIDATES` candidates.
    """
    if not any(deficit):
        return 0
    best = minimum(candidates, deficit)
    if best is None:
        return 0
    n = len(candidates)
    most = 0
    for mask in range(1 << n):
        chosen = [candidates[i] for i in range(n) if mask >> i & 1]
        freed = [sum(r[d] for r, _ in chosen) for d in range(3)]
        cost = sum(c for _, c in chosen)
        if _covers(freed, deficit) and cost <= best + TOLERANCE * max(
                1.0, abs(best)):
            most = max(most, len(chosen))
    return most


def check_decision(hv, request, policy, now, plan):
    """Problems of one ``planner.plan_host`` decision (empty when it is
    exact): the deficit, feasibility and the victims' total cost against
    the brute-force minimum.

    :param hv: the :class:`~opie_sched.preemption.model.HostView` decided
        on; ``request``, ``policy``, ``now``: the call's other arguments.
    :param plan: the :class:`~opie_sched.preemption.planner.HostPlan`.
    :returns: list of strings.
    """
    problems = []
    deficit = tuple(max(r - f, 0) for r, f in
                    zip(request, hv.projected_free()))
    needs = any(deficit)
    if plan.needs_preemption != needs:
        problems.append('host %s: needs_preemption %s, deficit %s'
                        % (hv.name, plan.needs_preemption, deficit))
        return problems
    if not needs:
        return problems
    # a pinned instance (its owner is moving it) holds its room and is no
    # candidate
    cands = [i for i in hv.instances
             if i.preemptible and not i.leaving and not i.pinned]
    costed = [(tuple(i.resources), policy.instance_cost(i, hv, now))
              for i in cands]
    try:
        best = minimum(costed, deficit)
    except ValueError:
        return problems
    if (best is not None) != plan.feasible:
        problems.append('host %s: feasible %s but the oracle %s'
                        % (hv.name, plan.feasible,
                           'found %g' % best if best is not None
                           else 'found no subset'))
        return problems
    if best is None:
        return problems
    by_uuid = {i.uuid: (tuple(i.resources), c)
               for i, (_, c) in zip(cands, costed)}
    chosen = [inst.uuid for inst, _ in plan.victims]
    stray = [u for u in chosen if u not in by_uuid]
    if stray:
        problems.append('host %s: victims %s are not candidates'
                        % (hv.name, stray))
        return problems
    freed = [sum(by_uuid[u][0][d] for u in chosen) for d in range(3)]
    if not _covers(freed, deficit):
        problems.append('host %s: victims free %s of a deficit %s'
                        % (hv.name, freed, deficit))
    cost = sum(by_uuid[u][1] for u in chosen)
    if cost > best + TOLERANCE * max(1.0, abs(best)):
        problems.append('host %s: victims %s cost %g, the minimum is %g'
                        % (hv.name, chosen, cost, best))
    return problems
