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
"""Flavor mixes: the repacking planner of thesis Paper V, Merkat budgets.

Which mix of flavors (VM types) should an application run on, and when is
it worth switching to a cheaper mix? This is the planner of the repacking
autoscaler (``opie-autoscaler``, ``opie-sched repack``): it starts and
stops servers, it never migrates one. Live-migration consolidation of
running servers (thesis Paper IV) is another thing, ``opie-repacker``
(:mod:`opie_sched.services.repacker`, planner :mod:`opie_sched.rpm`).
This package was ``opie_sched.repacking`` before; it was renamed so that
the two are not confused.

Source: M. Sedaghat, F. Hernandez-Rodriguez, E. Elmroth, *A Virtual
Machine Re-packing Approach to the Horizontal vs. Vertical Elasticity
Trade-off for Cloud Autoscaling*, CAC'13 -- Paper V of Sedaghat's thesis
(cited below as "Paper V"), and Merkat's horizontal scaling policy
(Algorithms 2-3 of the Merkat paper, budget-capped number of VMs).

An application can run on VM types ``i`` (flavors), each with a price
``p_i`` (currency per **hour**) and an application capacity ``c_i`` (any
unit, e.g. requests per minute; the same unit as the demand). Paper V, 3.1:
the *optimal set* for a required capacity ``C_req`` is::

    minimise  sum_i n_i * p_i   subject to  sum_i n_i * c_i >= C_req,
                                            n_i in {0, 1, 2, ...}

and (Paper V, 3 and 3.4, Algorithm 1) a running set of price ``P`` is
replaced by an optimal set of price ``P_hat`` only when::

    P_hat < P   and   1 - (P_hat * d + R) / (P * d) > K

with ``d`` the expected stability interval (hours), ``R = C_extra *
repacking time`` the reconfiguration cost (Paper V, 3.3) and ``K`` the gain
threshold (Paper V uses ``K = 1%``). Transitions are make-before-break
(Paper V, 3.2): the servers to start are started while the old set keeps
serving, then the surplus is stopped; running servers are reused wherever
the target set has servers of their flavor.

Conventions used throughout:

* A *VM set* is a mapping ``{flavor name: count}`` (int >= 0). Results are
  plain dicts holding only non-zero counts, keys sorted by flavor name.
* All decisions are taken in exact rational arithmetic
  (:class:`fractions.Fraction` of the values given; a float is taken at
  its exact binary value), so a boundary such as ``gain == K`` is decided
  exactly; reported numbers are floats.
* Bad input raises :class:`RepackingError` (a :class:`ValueError`) with a
  message naming the offending value.

Modules:

* :mod:`.vmtypes` -- VM types, VM sets, Paper V Table 2's types;
* :mod:`.solver` -- the exact optimal set (branch and bound, or MILP) and
  the largest set a budget buys;
* :mod:`.budget` -- Merkat Alg. 2-3: budget caps and the VM upper bound;
* :mod:`.gain` -- transitions, reconfiguration cost, the gain test;
* :mod:`.planner` -- one repacking decision (:func:`plan`);
* :mod:`.workloads` -- the Increasing, Seasonal, Stable and On-and-Off
  demand series of Paper V, section 5.

The strategies of Paper V, section 4 (S_base, S_delta, S_Full and the
repacked variants) run on the simulator's shared core:
:mod:`opie_sched.simulator.repacking_strategies`. Nothing here imports
Nova or the simulator.
"""

from opie_sched.flavormix.budget import affordable_servers
from opie_sched.flavormix.budget import budget_capped_set
from opie_sched.flavormix.budget import cap_to_budget
from opie_sched.flavormix.budget import merkat_vm_upper_bound
from opie_sched.flavormix.gain import decide
from opie_sched.flavormix.gain import gain
from opie_sched.flavormix.gain import reconfiguration_cost
from opie_sched.flavormix.gain import transition
from opie_sched.flavormix.planner import plan
from opie_sched.flavormix.planner import RepackPlan
from opie_sched.flavormix.solver import DEFAULT_METHOD
from opie_sched.flavormix.solver import max_capacity_set
from opie_sched.flavormix.solver import METHODS
from opie_sched.flavormix.solver import optimal_set
from opie_sched.flavormix.vmtypes import RepackingError
from opie_sched.flavormix.vmtypes import set_capacity
from opie_sched.flavormix.vmtypes import set_price
from opie_sched.flavormix.vmtypes import thesis_types
from opie_sched.flavormix.vmtypes import vm_types
from opie_sched.flavormix.vmtypes import VMType
from opie_sched.flavormix.workloads import increase
from opie_sched.flavormix.workloads import on_off
from opie_sched.flavormix.workloads import seasonal
from opie_sched.flavormix.workloads import stable
from opie_sched.flavormix.workloads import THESIS_SERIES
from opie_sched.flavormix.workloads import thesis_series
from opie_sched.flavormix.workloads import workload
from opie_sched.flavormix.workloads import WORKLOADS

__all__ = [
    'RepackingError', 'VMType', 'vm_types', 'thesis_types',
    'set_price', 'set_capacity', 'optimal_set', 'max_capacity_set',
    'cap_to_budget', 'budget_capped_set', 'affordable_servers',
    'merkat_vm_upper_bound', 'transition', 'reconfiguration_cost', 'gain',
    'decide', 'RepackPlan', 'plan', 'METHODS', 'DEFAULT_METHOD',
    'WORKLOADS', 'workload', 'increase', 'seasonal', 'stable', 'on_off',
    'THESIS_SERIES', 'thesis_series',
]
