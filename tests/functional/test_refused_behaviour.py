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
"""A shelve-behaviour victim that Nova refuses to shelve (issue 30, hole
3), on a real in-process Nova: a rescued victim and a victim in ERROR get
their behaviour's fallback (:mod:`opie_sched.preemption.behaviours`:
``shelve`` falls back to ``delete``), so the host is back within its
capacity; they are not shelved again at every retry while counting as
leaving.
"""

import time

from opie_sched.common import flavors
from opie_sched.preemption import victim_state as vs
from opie_sched.scheduler import reconciler
from tests.functional import test_destructive_steps

_Steps = test_destructive_steps._Steps


class ShelveRefusedTest(_Steps):
    """The cheapest victim of a shelve flavor is in a state Nova cannot
    shelve from. It is deleted (the fallback), the normal server lands,
    and the host is within capacity at once and after a reconciler round.
    """

    EXTRA_FLAGS = {'opie_reconciler': {'run_in_scheduler': False},
                   'opie_preemption': {'release_timeout': 5,
                                       'retry_interval': 1,
                                       'max_retry_interval': 1,
                                       'poll_interval': 0.2}}

    def setUp(self):
        super().setUp()
        specs = dict(flavors.preemptible_extra_specs(4, 8000, 80),
                     **{vs.BEHAVIOR_SPEC: vs.SHELVE})
        self.flavor_ids['shelving.preemptible'] = self._create_flavor(
            name='shelving.preemptible', vcpu=4, memory_mb=8000, disk=80,
            extra_spec=specs)

    def wait_deleted(self, server_id, timeout):
        deadline = time.monotonic() + timeout
        while (not self.db_instance(server_id).deleted
               and time.monotonic() < deadline):
            time.sleep(0.2)
        self.assertTrue(self.db_instance(server_id).deleted)

    def _preempt_refused(self, refuse):
        p = self.fill_with_preemptibles('host1', 'shelving', [100, 2000])
        refuse(p[0])
        with self.assertLogs('opie_sched.scheduler.actions',
                             level='WARNING') as logs:
            normal = self.boot('large', name='normal')
            self.wait_deleted(p[0]['id'], 60)
        # the operator is told why it was deleted rather than shelved (the
        # owner by an instance fault, gone with the deleted server)
        self.assertIn('its interruption behaviour falls back to delete',
                      '\n'.join(logs.output))
        self.assertIn('delete', self.action_names(p[0]['id']))
        self.assertNotIn('shelve', self.action_names(p[0]['id']))
        self.assertEqual({p[1]['id'], normal['id']}, self.live_uuids())
        self.assertEqual((8, 16000, 160), self.full_used('host1'))
        # a reconciler round later (past any retry): still within capacity,
        # nothing left terminating, the other victim kept
        time.sleep(1.1)
        reconciler.Reconciler().run_once()
        self.assertEqual({p[1]['id'], normal['id']}, self.live_uuids())
        self.assertEqual((8, 16000, 160), self.full_used('host1'))
        self.assertEqual('ACTIVE',
                         self.api.get_server(p[1]['id'])['status'])

    def test_rescued_victim_is_deleted(self):
        def rescue(server):
            self.api.post_server_action(server['id'], {'rescue': {}})
            self.wait_status(server, 'RESCUE', 120)
        self._preempt_refused(rescue)

    def test_victim_in_error_is_deleted(self):
        def error(server):
            self.api.post_server_action(
                server['id'], {'os-resetState': {'state': 'error'}})
            self.wait_status(server, 'ERROR', 120)
        self._preempt_refused(error)
