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
"""Tempest plugin of opie_sched: preemption, the spot market and
Die-Hard placement tested on a running cloud through its public APIs.

Entry point (setup.cfg)::

    tempest.test_plugins =
        opie_sched_tests = opie_sched_tempest_plugin.plugin:OpieTempestPlugin

Options: the ``[opie]`` group of tempest.conf (:mod:`.config`).
``python -m opie_sched_tempest_plugin.runner`` (``tox -e tempest``) brings
a devcloud up, runs these tests and a selection of Tempest's own compute
API tests, and takes the cloud down.

Nothing here imports nova or opie_sched's services: the tests see the
cloud only as a user or an operator would.
"""
