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
"""P2P resource allocation and re-consolidation on a scale-free overlay.

Source: Sedaghat, Hernández and Elmroth, "Autonomic Resource Allocation
for Cloud Data Centers: A Peer to Peer Approach" (ICCAC'14; thesis
Paper II).

* §3, eq. 1-4: data centre utilisation U_dc = Σ Res_j / (n × C_server);
  profit = Σ Res_j × price − Σ_i (P_i / P_max) × cost_i with the linear
  power model P_i = (P_max − P_idle) × U_node_i + P_idle; eq. 5 the
  utilisation of the active nodes, eq. 6 the demand-weighted rejection
  ratio.
* §3.1, Alg. 1: a VM placement request enters at one node (the *central*
  entry: always the same node; *distributed*: a random node) and walks the
  overlay. Each node agent picks, among itself and its overlay neighbours
  with enough free capacity, the best by its heuristic (Most-utilised,
  Least-utilised, First-fit); a neighbour wins a tie with the node itself;
  with no fitting candidate the request goes to a random neighbour. Each
  forward is one hop; a request arriving with HTL = 0 is rejected (§4:
  HTL = 20).
* §3.3, Alg. 2: re-consolidation: a node whose load is at most the
  re-consolidation threshold (§4: 40 % of its capacity) sends one request
  per VM, searching for the most-utilised node with room; each VM found a
  home is migrated; a node left empty goes to energy-saving mode.

Capacities and demands are in *compute units* (slots; §4: 10 per node,
VMs of 1..10). Interpretations where the paper is silent are marked
"(ours)" in the docstrings.
"""

import dataclasses

import numpy as np

from opie_sched.simcore import hosts as hosts_mod

#: Paper II §4: hops-to-live of a request.
HTL = 20
#: Paper II §4: re-consolidation threshold, fraction of a node's capacity.
RECONSOLIDATION_THRESHOLD = 0.4


class P2PError(ValueError):
    """Bad input to the P2P allocator (message names the value)."""


# -- the nodes ---------------------------------------------------------------

class _NodeVMs:
    """``cluster.vms[node]``: that node's ``{vm: demand}``, in placement
    order (built on access from the shared host model).
    """

    def __init__(self, cluster):
        self._cluster = cluster

    def __getitem__(self, node):
        c = self._cluster
        size = c.values['size']
        return {c._keys[i]: float(size[i, 0]) for i in c.vms_on(node)}

    def __len__(self):
        return self._cluster.n


class Cluster(hosts_mod.Hosts):
    """The servers' state: used capacity and the VMs of each node.

    The simulator's shared host model
    (:class:`opie_sched.simcore.hosts.Hosts`, one dimension:
    compute units) with the paper's names: ``used[i]`` is node i's
    allocated capacity; ``vms[i]`` maps vm id -> demand; ``where`` maps vm
    id -> node. Only :meth:`place`, :meth:`remove` and :meth:`migrate`
    change the state and each refuses to exceed a node's capacity. Vm ids
    are any hashable values.

    :param n: number of nodes. :param capacity: C_server, compute units
        per node (> 0).
    :raises P2PError: bad ``n`` or ``capacity``.
    """

    def __init__(self, n, capacity):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) \
                or n < 1:
            raise P2PError('number of nodes must be an integer >= 1, got %r'
                           % (n,))
        if not isinstance(capacity, (int, float)) or capacity <= 0:
            raise P2PError('capacity must be > 0, got %r' % (capacity,))
        super().__init__(np.full(int(n), float(capacity)),
                         zero_when_empty=True)
        self.n = int(n)
        self.capacity = float(capacity)
        self.used = self.sums['size'][:, 0]
        self.vms = _NodeVMs(self)
        self._ids = {}              # vm -> core id
        self._keys = {}             # core id -> vm

    @property
    def where(self):
        """``{vm: node}`` of the placed VMs."""
        return {vm: int(self.host[i]) for vm, i in self._ids.items()}

    def free(self, node):
        return self.capacity - self.used[node]

    def utilisation(self, node):
        """U_node of one node, fraction."""
        return self.used[node] / self.capacity

    def active(self):
        """Boolean array: nodes hosting at least one VM (others are in
        energy-saving mode).
        """
        return self.used > 1e-9

    def place(self, vm, demand, node):
        """Put ``vm`` of ``demand`` units on ``node``.

        :raises P2PError: not enough room, or ``vm`` already placed.
        """
        if vm in self._ids:
            raise P2PError('vm %r is already placed' % (vm,))
        if demand <= 0:
            raise P2PError('demand must be > 0, got %r' % (demand,))
        if self.used[node] + demand > self.capacity + 1e-9:
            raise P2PError('node %d has %g free, vm %r needs %g'
                           % (node, self.free(node), vm, demand))
        i = self.register(size=demand)
        self._ids[vm] = i
        self._keys[i] = vm
        super().place(i, node)

    def remove(self, vm):
        """Take ``vm`` off its node; returns the node."""
        i = self._ids.pop(vm)
        del self._keys[i]
        node = super().remove(i)
        self.release(i)
        return node

    def migrate(self, vm, destination):
        i = self._ids[vm]
        demand = self.values['size'][i, 0]
        if self.used[destination] + demand > self.capacity + 1e-9:
            raise P2PError('node %d cannot take vm %r' % (destination, vm))
        super().migrate(i, destination)


# -- heuristics (§3.1) --------------------------------------------------------

class Heuristic:
    """A node agent's choice among itself and its neighbours.

    ``value(utilisations)`` is the objective (higher is better) of each
    candidate; :class:`FirstFit` overrides :meth:`choose`.
    """

    name = None

    def value(self, utilisation):
        raise NotImplementedError

    def choose(self, here, candidates, util, rng):
        """The chosen node among ``candidates`` (int array, ``here`` first
        when it fits, then the fitting neighbours in overlay order), or -1
        when there is none. A neighbour wins a tie with ``here`` (§3.1);
        ties among neighbours are broken at random.
        """
        if len(candidates) == 0:
            return -1
        values = self.value(util[candidates])
        best = values.max()
        tied = candidates[np.abs(values - best) <= 1e-12]
        others = tied[tied != here]
        if len(others):
            return int(others[int(rng.integers(len(others)))])
        return int(here)


class MostUtilised(Heuristic):
    """Most-utilised: the fitting node of highest utilisation (§3.1 (1));
    consolidates, keeps idle nodes idle.
    """

    name = 'max'

    def value(self, utilisation):
        return utilisation


class LeastUtilised(Heuristic):
    """Least-utilised: the fitting node of lowest utilisation (§3.1 (2));
    spreads the load.
    """

    name = 'min'

    def value(self, utilisation):
        return -utilisation


class FirstFit(Heuristic):
    """First-fit: the first fitting node among itself and its neighbours
    (§3.1 (3)); the node itself comes first (ours: "itself included",
    so a fitting node takes the request without searching further, the
    paper's "does not search further").
    """

    name = 'ff'

    def choose(self, here, candidates, util, rng):
        return int(candidates[0]) if len(candidates) else -1


HEURISTICS = {h.name: h for h in (MostUtilised(), LeastUtilised(),
                                  FirstFit())}

#: Paper II Table 1: policy -> (entry, heuristic name).
POLICIES = {
    'Central-FF': ('central', 'ff'),
    'Central-Min': ('central', 'min'),
    'Central-Max': ('central', 'max'),
    'Dist-FF': ('distributed', 'ff'),
    'Dist-Min': ('distributed', 'min'),
    'Dist-Max': ('distributed', 'max'),
}


@dataclasses.dataclass
class Walk:
    """The outcome of one request.

    :param node: the chosen node, or None (rejected).
    :param hops: forwards taken. :param path: the visited nodes, in order
        (consecutive ones are overlay neighbours).
    """

    node: int
    hops: int
    path: list


def allocate(cluster, overlay, heuristic, demand, entry, rng, htl=HTL,
             eligible=None, tie_hops=1):
    """Alg. 1: walk a request of ``demand`` units from ``entry``.

    :param cluster: :class:`Cluster` (read only here).
    :param overlay: :class:`~opie_sched.consolidation.overlay
        .ScaleFreeOverlay`; a node sees only its neighbours.
    :param heuristic: a :class:`Heuristic` or its name.
    :param entry: the node the request enters at. :param rng: a numpy
        ``Generator`` (random neighbour, ties).
    :param htl: hops to live (int >= 0).
    :param eligible: optional ``f(nodes) -> bool array`` (``nodes`` an int
        array) excluding destinations (re-consolidation: not the source,
        more loaded than the source).
    :param tie_hops: how many times a request follows the "neighbour wins
        a tie" rule (ours: the paper does not bound it, and unbounded it
        makes a request wander forever over equally loaded nodes, e.g. an
        idle data centre; a tie hop also never returns to a visited node).
    :returns: :class:`Walk`. :raises P2PError: bad ``htl`` or heuristic.
    """
    if isinstance(heuristic, str):
        if heuristic not in HEURISTICS:
            raise P2PError('unknown heuristic %r (known: %s)'
                           % (heuristic, ', '.join(sorted(HEURISTICS))))
        heuristic = HEURISTICS[heuristic]
    if isinstance(htl, bool) or not isinstance(htl, int) or htl < 0:
        raise P2PError('HTL must be an integer >= 0, got %r' % (htl,))
    util = cluster.used / cluster.capacity
    here, hops, path, visited, ties = int(entry), 0, [int(entry)], \
        {int(entry)}, 0
    while True:
        if htl <= 0:
            return Walk(None, hops, path)
        nbrs = overlay.neighbours(here)
        cands = np.concatenate(([here], nbrs))
        fits = cluster.used[cands] + demand <= cluster.capacity + 1e-9
        if eligible is not None:
            fits &= np.asarray(eligible(cands), dtype=bool)
        cands = cands[fits]
        choice = heuristic.choose(here, cands, util, rng)
        if choice == here:
            return Walk(here, hops, path)
        if choice != -1 and not isinstance(heuristic, FirstFit):
            strictly = (heuristic.value(util[[choice]])[0]
                        > heuristic.value(util[[here]])[0] + 1e-12
                        or here not in cands)
            if not strictly:
                # a tie with ``here``: follow it at most ``tie_hops``
                # times, never back to a visited node.
                if ties >= tie_hops or choice in visited:
                    return Walk(here, hops, path)
                ties += 1
        if choice == -1:
            choice = int(nbrs[int(rng.integers(len(nbrs)))])
        htl -= 1
        hops += 1
        here = choice
        path.append(here)
        visited.add(here)


def reconsolidate(cluster, overlay, rng, threshold=RECONSOLIDATION_THRESHOLD,
                  htl=HTL, heuristic='max', on_migrate=None):
    """Alg. 2 once over every node: lightly loaded nodes (load ≤
    ``threshold`` × capacity, and not empty) re-place their VMs.

    Each VM's request starts at its node and walks the overlay like a new
    request (Most-utilised by default, §3.3) among nodes other than the
    source that are more utilised than the source is now (ours: the
    paper's "migrate their loads to more heavily loaded nodes"; it also
    keeps two light nodes from swapping VMs forever). Alg. 2 prints
    ``MyLoad >= threshold``; the text (§3.3, §4) makes it the lightly
    loaded nodes, which we follow.

    :param on_migrate: optional ``f(vm, source, destination, walk)``.
    :returns: ``(migrations, hibernated)``: VMs moved, nodes emptied.
    """
    migrations = hibernated = 0
    order = rng.permutation(cluster.n)
    for node in order:
        node = int(node)
        load = cluster.utilisation(node)
        if not cluster.vms[node] or load > threshold + 1e-12:
            continue
        for vm, demand in sorted(cluster.vms[node].items(),
                                 key=lambda kv: (-kv[1], str(kv[0]))):
            source_util = cluster.utilisation(node)

            def eligible(c, node=node, source_util=source_util):
                return (c != node) & (cluster.used[c] / cluster.capacity
                                      > source_util + 1e-12)

            walk = allocate(cluster, overlay, heuristic, demand, node, rng,
                            htl=htl, eligible=eligible)
            if walk.node is None or walk.node == node:
                continue
            cluster.migrate(vm, walk.node)
            migrations += 1
            if on_migrate is not None:
                on_migrate(vm, node, walk.node, walk)
        if not cluster.vms[node]:
            hibernated += 1
    return migrations, hibernated


# -- the model of §3 ---------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class PowerModel:
    """Eq. 3-4: power and profit per time unit.

    :param p_idle: P_idle, W (ours: Paper III's 175 W; Paper II gives no
        value). :param p_max: P_max, W (ours: 250 W).
    :param cost: cost_i, currency per time unit of a fully utilised
        server (ours: 0.05, half the income of a full node).
    :param price: price of one compute unit per time unit (§4: 0.01 $).
    """

    p_idle: float = 175.0
    p_max: float = 250.0
    cost: float = 0.05
    price: float = 0.01

    def power(self, utilisation):
        """Eq. 4: W of a node at ``utilisation`` (array ok)."""
        return (self.p_max - self.p_idle) * utilisation + self.p_idle

    def income(self, cluster):
        """Eq. 3's first term: Σ Res_j × price, currency per time unit."""
        return float(cluster.used.sum() * self.price)

    def power_units(self, cluster):
        """Eq. 3's Σ_i P_i / P_max over the active nodes (empty nodes
        sleep): the number of fully utilised servers' worth of power,
        which eq. 3 multiplies by cost_i.
        """
        active = cluster.active()
        util = cluster.used[active] / cluster.capacity
        return float(np.sum(self.power(util) / self.p_max))

    def profit(self, cluster):
        """Eq. 3 over the active nodes (empty nodes sleep), currency per
        time unit.
        """
        return self.income(cluster) - self.power_units(cluster) * self.cost


def data_centre_utilisation(cluster):
    """Eq. 1: U_dc, fraction of the whole data centre."""
    return float(cluster.used.sum() / (cluster.n * cluster.capacity))


def node_utilisation(cluster):
    """Eq. 5: U_node over the active nodes (0 when none)."""
    active = int(cluster.active().sum())
    if not active:
        return 0.0
    return float(cluster.used.sum() / (active * cluster.capacity))
