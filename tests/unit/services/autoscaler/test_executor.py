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
"""Tests of the make-before-break executor on a fake openstacksdk
connection: rollback, floor protection, health check, dry-run
(opie_sched.services.autoscaler.executor)."""

import testtools

from opie_sched.services.autoscaler import app as app_mod

from tests.unit.services.autoscaler.helpers import app_doc
from tests.unit.services.autoscaler.helpers import FakeConn
from tests.unit.services.autoscaler.helpers import make_executor
from tests.unit.services.autoscaler.helpers import Obj


# -- executor ----------------------------------------------------------------

class ExecutorTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.conn = FakeConn()
        self.compute = self.conn.compute
        self.app = app_mod.parse_application(app_doc())
        self.resolved = app_mod.resolve(self.app, self.conn)
        self.events = []

    def execute(self, target, floor, executor=None, **kw):
        executor = executor or make_executor(
            self.conn, observer=lambda e, s: self.events.append(e))
        inv = executor.inventory(self.app, self.resolved)
        return executor.execute(self.app, self.resolved, inv, target,
                                floor, 'summary', **kw)

    def live(self):
        inv = make_executor(self.conn).inventory(self.app, self.resolved)
        return inv.counts

    def test_make_before_break(self):
        self.compute.add('as.1')
        self.compute.add('as.1')
        out = self.execute({'as.4': 1}, 50)
        self.assertEqual('reconfigured', out.action, out.reason)
        self.assertEqual({'as.4': 1}, self.live())
        self.assertEqual([('create', 'as.4'), ('delete', 'as.1'),
                          ('delete', 'as.1')], self.compute.log)
        self.assertEqual(['up', 'deleted', 'deleted'], self.events)
        self.assertEqual(1, len(out.started))
        self.assertEqual(2, len(out.stopped))
        [new] = [s for s in self.compute.db.values()]
        self.assertEqual({'group': 'g1'}, new.attrs['scheduler_hints'])
        self.assertEqual({'opie:autoscaler': 'web'}, new.attrs['metadata'])
        self.assertEqual('none', new.attrs['networks'])

    def test_reuse_and_newest_first(self):
        old = [self.compute.add('as.2') for _ in range(3)]
        out = self.execute({'as.2': 1}, 25)
        self.assertEqual('reconfigured', out.action)
        self.assertEqual([old[2], old[1]], out.stopped)
        self.assertEqual([old[0]], list(self.compute.db))
        self.assertEqual([], out.started)

    def test_failed_boot_rolls_back(self):
        self.compute.add('as.1')
        self.compute.outcome = (lambda name, flavor:
                                'ERROR' if flavor == 'as.4' else 'ACTIVE')
        out = self.execute({'as.2': 1, 'as.4': 1}, 70)
        self.assertEqual('rolled-back', out.action)
        self.assertIn('went to ERROR: No valid host', out.reason)
        self.assertIn('2 new server(s) deleted', out.reason)
        self.assertEqual({'as.1': 1}, self.live())
        self.assertEqual(1, len(self.compute.db))
        self.assertEqual([('create', 'as.2'), ('create', 'as.4'),
                          ('delete', 'as.2'), ('delete', 'as.4')],
                         self.compute.log)
        self.assertEqual(['up', 'rolled-back'], self.events)

    def test_create_error_rolls_back_what_was_booted(self):
        self.compute.add('as.1')
        self.compute.create_error = lambda attrs: attrs['flavor_id'] == (
            'id-as.4')
        out = self.execute({'as.2': 1, 'as.4': 1}, 70)
        self.assertEqual('rolled-back', out.action)
        self.assertIn('quota exceeded', out.reason)
        self.assertEqual([('create', 'as.2'), ('delete', 'as.2')],
                         self.compute.log)
        self.assertEqual({'as.1': 1}, self.live())

    def test_boot_timeout_rolls_back(self):
        self.compute.add('as.1')
        self.compute.build_polls = 1000
        out = self.execute({'as.2': 1}, 20, executor=make_executor(
            self.conn, boot_timeout=5))
        self.assertEqual('rolled-back', out.action)
        self.assertIn('not ACTIVE after 5 s', out.reason)
        self.assertEqual({'as.1': 1}, self.live())

    def test_unhealthy_server_rolls_back(self):
        class HTTP:
            def __init__(self, code):
                self.code, self.urls = code, []

            def get(self, url, timeout):
                self.urls.append(url)
                return Obj(status_code=self.code)

        self.compute.add('as.1')
        bad = HTTP(503)
        out = self.execute({'as.2': 1}, 20, executor=make_executor(
            self.conn, boot_timeout=3, http=bad),
            health_url='http://{address}:8080/healthz')
        self.assertEqual('rolled-back', out.action)
        self.assertIn('not ACTIVE and healthy', out.reason)
        self.assertTrue(bad.urls[0].startswith('http://10.1.0.'))
        good = HTTP(200)
        out = self.execute({'as.2': 1}, 20, executor=make_executor(
            self.conn, http=good), health_url='http://{address}/h')
        self.assertEqual('reconfigured', out.action)
        self.assertEqual({'as.2': 1}, self.live())

    def test_surplus_kept_when_the_floor_is_at_risk(self):
        big = self.compute.add('as.4')
        self.compute.add('as.1')
        executor = make_executor(self.conn)
        inv = executor.inventory(self.app, self.resolved)
        # Keep the as.4, replace the as.1 by an as.2 (floor 80); someone
        # deletes the as.4 while the as.2 boots: deleting the as.1 would
        # leave 25 < 80, so the surplus stays.
        orig = self.compute.create_server

        def create(**attrs):
            self.compute.delete_server(big)
            return orig(**attrs)
        self.compute.create_server = create
        out = executor.execute(self.app, self.resolved, inv,
                               {'as.4': 1, 'as.2': 1}, 80)
        self.assertEqual('surplus-kept', out.action, out.reason)
        self.assertIn('would leave capacity 25 < 80', out.reason)
        self.assertEqual({'as.1': 1, 'as.2': 1}, self.live())

    def test_dry_run_and_no_change_touch_nothing(self):
        self.compute.add('as.1')
        out = self.execute({'as.4': 1}, 50, dry_run=True)
        self.assertEqual('dry-run', out.action)
        self.assertIn('start as.4 x1; stop as.1 x1', out.reason)
        out = self.execute({'as.1': 1}, 10)
        self.assertEqual('none', out.action)
        self.assertEqual([], self.compute.log)

    def test_only_active_declared_servers_count(self):
        self.compute.add('as.1')
        self.compute.add('as.2', status='ERROR')
        self.compute.add('m1.huge')
        inv = make_executor(self.conn).inventory(self.app, self.resolved)
        self.assertEqual({'as.1': 1}, inv.counts)
        self.assertEqual(['ERROR', 'ACTIVE'],
                         [i[2] for i in inv.ignored])

    def test_tag_application(self):
        a = app_mod.parse_application(app_doc(server_group=None, tag='t'))
        r = app_mod.resolve(a, self.conn)
        executor = make_executor(self.conn)
        out = executor.execute(a, r, executor.inventory(a, r), {'as.1': 1},
                               10)
        self.assertEqual('reconfigured', out.action)
        [s] = self.compute.db.values()
        self.assertEqual(['t'], s.attrs['tags'])
        self.assertNotIn('scheduler_hints', s.attrs)
        self.assertEqual({'as.1': 1}, executor.inventory(a, r).counts)

    def test_waits_share_one_boot_deadline(self):
        self.compute.build_polls = 3
        out = self.execute({'as.2': 2}, 50, executor=make_executor(
            self.conn, boot_timeout=10))
        self.assertEqual('reconfigured', out.action, out.reason)
        boots = [w for w in self.compute.waits if w[0] == 'server']
        # The first server took 2 s of the 10 (a poll at 0, 1, 2 s); the
        # second gets what is left, not another 10 s.
        self.assertEqual([10.0, 8.0], [w[2] for w in boots])

    def test_delete_timeout_is_reported_and_the_rest_deleted(self):
        stuck = self.compute.add('as.1')
        other = self.compute.add('as.1')
        self.compute.stuck[stuck] = 'ACTIVE'
        out = self.execute({'as.4': 1}, 50)
        self.assertEqual('reconfigured', out.action)
        self.assertIn('could not delete %s (server %s not deleted after '
                      '10 s (ACTIVE))' % (stuck, stuck), out.reason)
        self.assertEqual([other], out.stopped)

    def test_soft_deleted_counts_as_gone(self):
        soft = self.compute.add('as.1')
        self.compute.stuck[soft] = 'SOFT_DELETED'
        out = self.execute({'as.4': 1}, 50)
        self.assertEqual('reconfigured', out.action, out.reason)
        self.assertEqual([soft], out.stopped)
        self.assertNotIn('could not delete', out.reason)
