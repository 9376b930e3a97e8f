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
"""Helpers shared by the scheduler plugin, the services and the CLI.

* :mod:`.flavors` -- what makes a flavor preemptible (``opie:preemptible``
  and the ``CUSTOM_PREEMPTIBLE_*`` resource classes), flavor sizes as Nova
  counts them (vCPU, MB, GB).
* :mod:`.provider_config` -- the preemptible inventory of each compute
  node as a nova-compute provider config file.
* :mod:`.utilisation` -- how busy a host really is (stevedore namespace
  ``opie_sched.utilisation``).
* :mod:`.coordination` -- the companion services' daemons (oslo.service)
  and, from :mod:`.leadership`, tooz leadership and locks for every
  service (the scheduler plugin imports :mod:`.leadership` alone);
* :mod:`.compat` -- every difference between the nova (31 to 34) and
  oslo.service series supported.
"""
