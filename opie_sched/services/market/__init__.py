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
"""The ``opie-market`` service around the core :mod:`opie_sched.market`.

Nova only through openstacksdk:

* :mod:`.engine` -- one market period (a tick): prices, charges,
  notices, preemptions, in that order, as the leader only; along its
  seams: :mod:`.settings` (validated options), :mod:`.cloud` (Nova
  through openstacksdk, the service's connection), :mod:`.listener`
  (demand from Nova's notifications), :mod:`.leadership` (tooz),
  :mod:`.pricer` (Merkat eq. 1 prices and the recorded markets),
  :mod:`.charging` (refills and charges), :mod:`.enforcement` (notices
  and preemptions) and :mod:`.notifications` (``opie.market.*``);
  :mod:`.events` records what happens to preemptible servers (the
  scheduler's preemption notifications, the market's own notices and
  interruptions, the servers' lives).
* :mod:`.score` and :mod:`.survival` -- the placement score and the
  interruption history (pure functions behind the API's 1.2 resources).
* :mod:`.service` -- wiring and the periodic loop.
* :mod:`.db` -- the store (oslo.db, alembic migrations).
* :mod:`.api` -- the REST API (paste pipeline behind keystonemiddleware,
  oslo.policy rules).
* :mod:`.osc` -- ``openstack spot ...`` (python-openstackclient plugin).
* :mod:`.opts` -- the ``[opie_market]`` options.
"""
