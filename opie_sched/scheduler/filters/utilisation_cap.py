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
"""``UtilisationCapFilter``: utilisation after the placement stays at or
below alpha (thesis Paper IV, eq. 2).

Usage comes from ``[opie_rpm] utilisation_source``
(:mod:`opie_sched.common.utilisation`). Enable in nova.conf::

    [filter_scheduler]
    available_filters = nova.scheduler.filters.all_filters
    available_filters = opie_sched.scheduler.filters.all_filters
    enabled_filters = ...,UtilisationCapFilter
"""

from oslo_log import log as logging

import nova.conf
from nova.scheduler import filters

from opie_sched.conf import rpm as rpm_opts
from opie_sched.scheduler import rpm_terms

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF
rpm_opts.register_opts(CONF)


class UtilisationCapFilter(filters.BaseHostFilter):
    """CPU and RAM utilisation after the placement stay <= alpha.

    Paper IV eq. 2: Σ Res_j <= n_active × (α × Capacity), applied per host:
    ``(actually used + requested) / capacity <= [opie_rpm] alpha`` for CPU
    and for RAM, with "actually used" from the utilisation source. Errors
    reject the host (fail closed).
    """

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        alpha = CONF.opie_rpm.alpha
        try:
            usage = rpm_terms.utilisation_source().usage(host_state)
            req_cpu, req_ram = rpm_terms.request_size(spec_obj)
            cpu = ((usage.cpu_used + req_cpu) / usage.cpu_capacity
                   if usage.cpu_capacity else float('inf'))
            ram = ((usage.ram_used + req_ram) / usage.ram_capacity
                   if usage.ram_capacity else float('inf'))
        except Exception:
            LOG.exception('UtilisationCapFilter failed on host %s; '
                          'rejecting the host',
                          getattr(host_state, 'host', '?'))
            return False
        if cpu <= alpha + 1e-9 and ram <= alpha + 1e-9:
            return True
        LOG.debug('%(host)s rejected: utilisation after placement CPU '
                  '%(cpu).3f, RAM %(ram).3f > alpha %(alpha).3f',
                  {'host': host_state, 'cpu': cpu, 'ram': ram,
                   'alpha': alpha})
        return False
