"""Decentralised VM consolidation (thesis Papers II and III), pure code.

* :mod:`.overlay` -- the peers' local views: the static scale-free
  overlay of Paper II (Barabási-Albert, preferential attachment) and the
  newscast-like peer sampling of Paper III (k random neighbours per
  cycle); both explicit, seeded state.
* :mod:`.p2p` -- Paper II: VM placement requests walking the overlay by
  local search (most-utilised, least-utilised, first-fit), hops-to-live,
  central or distributed entry, re-consolidation of lightly loaded nodes
  (40 %), the profit and power model (eq. 1-6).
* :mod:`.gossip` -- Paper III: pairwise gossip redistribution of 2-D
  (CPU, memory) VMs: Merge, Merge+Imb (Gain = ΔImb / migration cost),
  Incremental, Offload (Alg. 1-3), the imbalance and power metrics.

Nothing here imports nova or openstacksdk; :mod:`opie_sched.repacker
.strategies` adapts these to the repacker's hosts and moves.
"""
