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
"""Scheduler filters of opie_sched, one rule per module.

Make them all available to nova, then enable them by class name::

    [filter_scheduler]
    available_filters = nova.scheduler.filters.all_filters
    available_filters = opie_sched.scheduler.filters.all_filters
    enabled_filters = HeadroomFilter,...,PreemptibleFullStateFilter

======================  ===========================  =====================
module                  filter                       rule from
======================  ===========================  =====================
preemptible_full_state  PreemptibleFullStateFilter   preemption
headroom                HeadroomFilter               preemption headroom
failure_domain          FailureDomainFilter          Die-Hard (Paper VI)
utilisation_cap         UtilisationCapFilter         RPM (Paper IV)
======================  ===========================  =====================

A new filter is a new module here with one ``BaseHostFilter`` subclass:
:func:`all_filters` finds it.
"""

from nova.scheduler import filters as nova_filters

from opie_sched.scheduler.filters import preemptible_full_state
from opie_sched.scheduler import loadables
from opie_sched.scheduler import moved


def all_filters():
    """Every filter class of the package's modules (for nova's
    ``[filter_scheduler] available_filters``; listing a filter there only
    makes it available, ``enabled_filters`` chooses).

    :returns: list of ``nova.scheduler.filters.BaseHostFilter``
        subclasses.
    """
    return loadables.classes_in_package(__name__, __path__,
                                        nova_filters.BaseHostFilter)


#: ``opie_sched.scheduler.filters.PreemptibleFullStateFilter`` from before
#: the package (the module was one file); deprecated.
__getattr__ = moved.module_getattr(__name__, {
    'PreemptibleFullStateFilter':
        preemptible_full_state.PreemptibleFullStateFilter,
})
