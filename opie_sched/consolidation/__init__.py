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

Nothing here imports nova or openstacksdk; :mod:`opie_sched.services.repacker
.strategies` adapts these to the repacker's hosts and moves.
"""
