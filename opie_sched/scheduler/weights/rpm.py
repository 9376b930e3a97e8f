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
"""``RPMWeigher``: the lowest combined RPM score first (thesis Paper IV,
eq. 3).

Score = Σ λ_k × term_k with the λ's of ``[opie_rpm]``; the terms are
:mod:`opie_sched.scheduler.rpm_terms`' (Paper IV §4.3.1, each normalised
by its upper bound). Not in
:func:`opie_sched.scheduler.weights.all_weighers`: name it, or the
per-term weighers (``rpm_risk``, ``rpm_efficiency``, ``rpm_imbalance``,
``rpm_distance``) with their own multipliers, not both (the terms would
count twice)::

    [filter_scheduler]
    weight_classes = ...,opie_sched.scheduler.weights.rpm.RPMWeigher
"""

import nova.conf

from opie_sched.conf import rpm as rpm_opts
from opie_sched.rpm import model as rpm
from opie_sched.scheduler.weights import base

CONF = nova.conf.CONF
rpm_opts.register_opts(CONF)


def configured_lambdas():
    """λ1..λ5 from ``[opie_rpm]`` in the order of :class:`rpm.Terms`.

    :raises opie_sched.rpm.model.RPMError: they do not add up to 1.
    """
    conf = CONF.opie_rpm
    return rpm.check_lambdas((conf.risk_lambda, conf.distance_lambda,
                              conf.efficiency_lambda,
                              conf.data_transfer_lambda,
                              conf.imbalance_lambda))


class RPMWeigher(base.RPMTermWeigher):
    """Lowest RPM score first: Score = Σ λ_k × term_k (Paper IV eq. 3)
    with the λ's of ``[opie_rpm]`` (0.2 each by default).
    """

    multiplier_option = 'rpm_weight_multiplier'

    def _score(self, host_terms):
        return rpm.score(host_terms.terms, configured_lambdas())
