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
"""Helpers shared by the tests of this package."""

import itertools
import math

from hypothesis import strategies as st

from opie_sched.diehard import topology as dh_topo


HOURS = 1.0


# -- independent oracles ------------------------------------------------------

def oracle_reliability(topology, vector, tasks, hours):
    """Eq. (4) by brute force over the state of *every* domain (also the
    ones without tasks), written independently of the library.
    """
    nets = topology.network_domains
    pows = topology.power_domains
    q = {}
    for d in nets + pows:
        q[d.name] = math.prod(1 - math.exp(-r * hours)
                              for r in d.failure_rates)
    total = 0.0
    for up in itertools.product((0, 1), repeat=len(nets) + len(pows)):
        alive = {d.name: u for d, u in zip(nets + pows, up)}
        prob = math.prod(1 - q[n] if u else q[n] for n, u in alive.items())
        running = sum(x for cell, x in zip(topology.cells, vector)
                      if alive[cell.network] and alive[cell.power])
        if running >= tasks:
            total += prob
    return total


# -- strategies ---------------------------------------------------------------

RATES = st.sampled_from([0.0, 0.01, 0.05, 0.2, 0.7, 2.0])


@st.composite
def small_problems(draw, max_networks=4, max_powers=3):
    n_net = draw(st.integers(1, max_networks))
    n_pow = draw(st.integers(1, max_powers))
    nets = [dh_topo.Domain('n%d' % i, tuple(draw(st.lists(RATES, min_size=1,
                                                          max_size=2))))
            for i in range(n_net)]
    pows = [dh_topo.Domain('p%d' % j, tuple(draw(st.lists(RATES, min_size=1,
                                                          max_size=2))))
            for j in range(n_pow)]
    pairs = draw(st.lists(st.tuples(st.integers(0, n_net - 1),
                                    st.integers(0, n_pow - 1)),
                          min_size=1, max_size=5, unique=True))
    cells = [dh_topo.Cell('n%d' % i, 'p%d' % j, draw(st.integers(1, 4)))
             for i, j in pairs]
    topology = dh_topo.Topology(nets, pows, cells)
    vector = [draw(st.integers(0, c.hosts)) for c in cells]
    tasks = draw(st.integers(1, max(1, sum(vector) + 1)))
    return topology, vector, tasks


def homogeneous(networks, capacity, rate, powers=1, power_rate=0.0):
    nets = [dh_topo.Domain('n%d' % i, (rate,)) for i in range(networks)]
    pows = [dh_topo.Domain('p%d' % j, (power_rate,)) for j in range(powers)]
    cells = [dh_topo.Cell('n%d' % i, 'p%d' % (i % powers), capacity)
             for i in range(networks)]
    return dh_topo.Topology(nets, pows, cells)


SMALL_YAML = """
defaults:
  network_failure_rate: 0.02
power_domains:
  - name: pdu-a
  - name: pdu-b
    nodes: 2
network_domains:
  - name: tor-1
    power_domain: pdu-a
    hosts: 3
  - name: tor-2
    failure_rate: [0.01, 0.03]
    power_domain: pdu-b
    hosts: [h1, h2, h3]
  - name: tor-3
    hosts: {pdu-a: 2, pdu-b: 1}
"""
