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
"""``opie-sched devcloud``: a multi-process all-in-one cloud on this machine.

Keystone, Placement, Glance (file store), nova-api (under gunicorn),
nova-conductor, **opie-scheduler**, N nova-compute services with nova's fake
driver, neutron-server serving its API only (ML2 without agents; servers
use ``--nic none``) or, with ``--neutron standin``, a stand-in (see
:mod:`opie_sched.devcloud.neutron_standin`),
opie-market and its REST API behind keystonemiddleware, and on request
opie-autoscaler and opie-repacker; each a separate process logging into the
state directory, with databases on the local MariaDB and messaging on the
local RabbitMQ (one database-name prefix and one vhost per state directory).

Modules: :mod:`.layout` (state directory, names, ports), :mod:`.config`
(configuration rendering), :mod:`.preflight` (what must be present),
:mod:`.process` (detached processes, readiness), :mod:`.bootstrap` (the
steps), :mod:`.cloud` (up/down/status), :mod:`.cli` (the subcommands),
:mod:`.wsgi`, :mod:`.compute` and :mod:`.neutron_standin` (entry points of
the processes it starts).
"""
