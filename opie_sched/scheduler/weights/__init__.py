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
"""Scheduler weighers of opie_sched, one rule per module.

Enable the preemption weighers with nova's own::

    [filter_scheduler]
    weight_classes = nova.scheduler.weights.all_weighers,
        opie_sched.scheduler.weights.all_weighers

and name the opt-in ones by their path, e.g.
``opie_sched.scheduler.weights.rpm.RPMWeigher``:

===================  =========================  =======  ==================
module               weigher                    in all_  rule from
                                                weighers
===================  =========================  =======  ==================
preemption_cost      PreemptionCostWeigher      yes      preemption Alg. 4
preemptible_count    PreemptibleCountWeigher    yes      preemption Alg. 3
proportional_share   ProportionalShareWeigher   no       market (Themis)
reliability          ReliabilityWeigher         no       Die-Hard (Paper VI)
rpm                  RPMWeigher                 no       RPM (Paper IV)
rpm_risk             RPMRiskWeigher             no       RPM, one term
rpm_efficiency       RPMEfficiencyWeigher       no       RPM, one term
rpm_imbalance        RPMImbalanceWeigher        no       RPM, one term
rpm_distance         RPMDistanceWeigher         no       RPM, one term
===================  =========================  =======  ==================

A weigher is opt-in when its class sets ``OPT_IN = True``: enabling it
changes where every request of its kind goes (or, for the RPM family,
the combined weigher and the per-term ones would count the terms twice),
so ``all_weighers()`` leaves it to the operator. Shared base classes are
in :mod:`opie_sched.scheduler.weights.base`. A new weigher is a new module
here with one ``BaseHostWeigher`` subclass: :func:`every_weigher` finds
it.
"""

from nova.scheduler import weights as nova_weights

from opie_sched.scheduler import loadables
from opie_sched.scheduler import moved
from opie_sched.scheduler import preemption_plans
from opie_sched.scheduler.weights import preemptible_count
from opie_sched.scheduler.weights import preemption_cost


def every_weigher():
    """Every weigher class of the package's modules, opt-in ones
    included.

    :returns: list of ``nova.scheduler.weights.BaseHostWeigher``
        subclasses.
    """
    return loadables.classes_in_package(__name__, __path__,
                                        nova_weights.BaseHostWeigher)


def all_weighers():
    """The weigher classes for ``[filter_scheduler] weight_classes``: every
    weigher of the package but the opt-in ones (``OPT_IN = True``).

    :returns: list of ``nova.scheduler.weights.BaseHostWeigher``
        subclasses.
    """
    return [cls for cls in every_weigher()
            if not getattr(cls, 'OPT_IN', False)]


#: Names of ``opie_sched.scheduler.weights`` from before the package (the
#: module was one file); deprecated.
__getattr__ = moved.module_getattr(__name__, {
    'PreemptionCostWeigher': preemption_cost.PreemptionCostWeigher,
    'PreemptibleCountWeigher': preemptible_count.PreemptibleCountWeigher,
    'cost_policy': preemption_plans.cost_policy,
    'plans_for': preemption_plans.plans_for,
})
