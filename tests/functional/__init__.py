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
"""Functional tests on the in-process Nova.

nova's functional fixtures run its services under eventlet and patch the
standard library when ``nova.tests`` is first imported. A test module
that imports oslo.db, oslo.context or urllib3 before that keeps their
thread-locals native: every green thread then shares one oslo.db
transaction context, and a compute build that saves its ComputeNode while
another green thread reads through the same context fails with "Can't
upgrade a READER transaction to a WRITER mid-transaction". So patch here,
before any functional test module is imported, as nova's own
``nova/tests/__init__.py`` does, the way of the installed nova series
(:func:`opie_sched.common.compat.patch_for_nova_tests`).
"""

from opie_sched.common import compat

compat.patch_for_nova_tests()
