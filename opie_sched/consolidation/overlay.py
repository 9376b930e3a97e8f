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
"""The local views of the peers: a scale-free overlay and peer sampling.

Sources:

* Sedaghat, Hernández and Elmroth, "Autonomic Resource Allocation for
  Cloud Data Centers: A Peer to Peer Approach" (ICCAC'14; thesis
  Paper II), §2.1: the servers form a static scale-free overlay built by
  the Barabási-Albert algorithm with preferential attachment; a node
  agent knows only its overlay neighbours.
* Sedaghat, Hernández, Elmroth and Girdzijauskas, "Divide the Task,
  Multiply the Outcome: Cooperative VM Consolidation" (CloudCom 2014;
  thesis Paper III), §3.1: a peer sampling service (newscast) gives each
  peer, at each cycle, a view of k random neighbours (§4.2: k = 20).

Both are explicit state seeded by an integer, so a run is reproducible
and a test can check that every interaction stays inside a view.
"""

import numpy as np


class OverlayError(ValueError):
    """Bad overlay parameters (message names the value)."""


def _count(value, what, minimum):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise OverlayError('%s must be an integer, got %r' % (what, value))
    if value < minimum:
        raise OverlayError('%s must be >= %d, got %r'
                           % (what, minimum, value))
    return int(value)


class ScaleFreeOverlay:
    """A Barabási-Albert graph over ``n`` peers (Paper II §2.1).

    The first ``m + 1`` peers form a clique; every later peer attaches to
    ``m`` distinct earlier peers chosen with probability proportional to
    their degree (preferential attachment). The graph is connected, sparse
    (about ``m × n`` edges) and has hubs (peer 0 is the oldest and, with
    high probability, among the best connected).

    :param n: number of peers (int >= 2).
    :param m: edges added by each new peer (int >= 1, < n).
    :param seed: int seed of the construction.
    :raises OverlayError: bad ``n``, ``m``.

    ``neighbours(p)`` is a sorted ``numpy`` int array (the node agent's
    neighbour list, in a fixed order).
    """

    def __init__(self, n, m=2, seed=0):
        self.n = _count(n, 'overlay size n', 2)
        self.m = _count(m, 'overlay attachment m', 1)
        if self.m >= self.n:
            raise OverlayError('attachment m=%d must be below n=%d'
                               % (self.m, self.n))
        self.seed = seed
        rng = np.random.default_rng(seed)
        adjacency = [set() for _ in range(self.n)]
        # Repeated-endpoints list: a peer appears once per edge end, so a
        # uniform pick from it is a degree-proportional pick.
        ends = []
        core = self.m + 1
        for a in range(core):
            for b in range(a + 1, core):
                adjacency[a].add(b)
                adjacency[b].add(a)
                ends.extend((a, b))
        for new in range(core, self.n):
            targets = set()
            while len(targets) < self.m:
                targets.add(ends[int(rng.integers(len(ends)))])
            for t in sorted(targets):
                adjacency[new].add(t)
                adjacency[t].add(new)
                ends.extend((new, t))
        self._neighbours = [np.array(sorted(a), dtype=np.int64)
                            for a in adjacency]

    def neighbours(self, peer):
        """Sorted int array of the overlay neighbours of ``peer``."""
        return self._neighbours[peer]

    def are_neighbours(self, a, b):
        """Whether ``a`` and ``b`` share an overlay edge."""
        nb = self._neighbours[a]
        i = int(np.searchsorted(nb, b))
        return i < len(nb) and int(nb[i]) == b

    def degrees(self):
        """int array of every peer's degree."""
        return np.array([len(a) for a in self._neighbours])

    def hub(self):
        """The peer of highest degree (lowest id on ties): the central
        entry point of Paper II §3.1.
        """
        return int(np.argmax(self.degrees()))


class PeerSampling:
    """Newscast-like peer sampling (Paper III §3.1): at each cycle every
    peer receives a view of ``k`` distinct random other peers.

    :param n: number of peers (int >= 2). :param k: view size (int >= 1;
        capped at ``n - 1``). :param seed: int seed.
    :raises OverlayError: bad ``n`` or ``k``.

    The views of the current cycle are ``views[p]`` (int arrays);
    :meth:`next_cycle` draws new ones. ``cycle`` counts the draws.
    """

    def __init__(self, n, k=20, seed=0):
        self.n = _count(n, 'number of peers n', 2)
        self.k = min(_count(k, 'view size k', 1), self.n - 1)
        self._rng = np.random.default_rng(seed)
        self.cycle = -1
        self.views = None
        self.next_cycle()

    def next_cycle(self):
        """Draw the views of the next cycle; returns them."""
        views = []
        for p in range(self.n):
            pick = self._rng.choice(self.n - 1, size=self.k, replace=False)
            pick[pick >= p] += 1      # skip the peer itself
            views.append(np.sort(pick))
        self.views = views
        self.cycle += 1
        return views

    def view(self, peer):
        """The current view of ``peer`` (int array)."""
        return self.views[peer]

    def in_view(self, a, b):
        """Whether ``b`` is in ``a``'s current view."""
        return bool(np.any(self.views[a] == b))
