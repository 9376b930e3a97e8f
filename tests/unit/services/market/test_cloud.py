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
"""The market decides "preemptible" by the ownership model's rule (issue
30): the preemptible resource classes a server's flavor copy requests,
the marker ``opie:preemptible`` only checked against them (a
disagreement is an ERROR), as the scheduler decides.
"""

import types

import testtools

from opie_sched.common import flavors
from opie_sched.services.market import cloud as market_cloud
from opie_sched.services.market.db import models
from tests.unit.services.market import helpers as base
from tests.unit.services.market import test_engine as engine_tests

TWIN = flavors.preemptible_extra_specs(2, 4000, 40)
#: the classes of a preemptible flavor, the marker removed (an admin's edit)
UNMARKED = {k: v for k, v in TWIN.items() if k != flavors.MARKER_KEY}
#: the marker on a flavor whose resources are the standard classes
MARKED_NORMAL = {flavors.MARKER_KEY: 'true'}


def info(specs, name='f'):
    return market_cloud.ServerInfo('u', 'p', 'ACTIVE', 'h1', 2, 4000,
                                   dict(specs), {}, flavor_name=name)


class ServerInfoTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        market_cloud._reported.clear()
        self.addCleanup(market_cloud._reported.clear)

    def test_classes_decide_the_marker_is_checked(self):
        self.assertTrue(info(TWIN).preemptible)
        self.assertFalse(info({}).preemptible)
        with self.assertLogs(market_cloud.LOG.logger.name,
                             level='ERROR') as logs:
            self.assertTrue(info(UNMARKED, 'unmarked').preemptible)
            self.assertFalse(info(MARKED_NORMAL, 'half').preemptible)
            # once per flavor and process, not once per server and tick
            self.assertTrue(info(UNMARKED, 'unmarked').preemptible)
        self.assertEqual(2, len(logs.output))
        self.assertIn("flavor 'unmarked' requests preemptible resource "
                      "classes without the marker", logs.output[0])
        self.assertIn("flavor 'half' has the marker", logs.output[1])

    def test_embedded_flavor_name_read(self):
        server = types.SimpleNamespace(
            id='u', project_id='p', status='ACTIVE', compute_host='h1',
            flavor={'vcpus': 2, 'ram': 4000, 'original_name': 'm1.spot',
                    'extra_specs': dict(TWIN)},
            metadata={}, created_at=None, name='n')
        got = market_cloud._server_info(server)
        self.assertEqual('m1.spot', got.flavor_name)
        self.assertTrue(got.preemptible)


class EnforcementByClassesTest(testtools.TestCase):
    """A noticed server is enforced by the classes its flavor copy holds,
    whatever the marker says.
    """

    def setUp(self):
        super().setUp()
        self.store = base.new_store(base.sqlite_url(self))
        self.cloud = base.FakeCloud()
        self.notifier = base.RecordingNotifier()
        self.settings = base.engine.Settings(
            period_seconds=base.HOUR, notice_period=600,
            initial_credit=base.D(100), bid_cap=base.D(50))
        market_cloud._reported.clear()
        self.addCleanup(market_cloud._reported.clear)

    engine = engine_tests.EngineTest.engine
    contended = engine_tests.EngineTest.contended

    def test_classes_without_the_marker_are_still_enforced(self):
        self.contended()
        eng = self.engine()
        self.assertEqual(['s0'], eng.tick(base.T0).notices)
        # the marker removed: Placement still holds it as preemptible
        self.cloud._replace('s0', extra_specs=dict(UNMARKED))
        report = eng.tick(base.T0 + 600)
        self.assertEqual((['s0'], []), (report.preempted, report.cancelled))
        self.assertEqual([('s0', 'delete')], self.cloud.terminated)

    def test_marker_without_the_classes_is_never_enforced(self):
        # resized to a flavor that keeps the marker but holds the standard
        # classes: a normal server now, never terminated by the market
        self.contended()
        eng = self.engine()
        self.assertEqual(['s0'], eng.tick(base.T0).notices)
        self.cloud._replace('s0', extra_specs=dict(MARKED_NORMAL))
        report = eng.tick(base.T0 + 600)
        self.assertEqual(([], ['s0']), (report.preempted, report.cancelled))
        self.assertEqual([], self.cloud.terminated)
        self.assertEqual(models.CANCELLED,
                         self.store.notices()[0]['state'])

    def test_cancel_keeps_a_notice_the_scheduler_gave_since(self):
        # a suspected item of issue 30: the market withdraws its notice
        # (the bid was raised) after the scheduler chose the same server
        # as a victim and wrote its own notice in the same keys: the
        # guest keeps the scheduler's notice
        self.contended()
        eng = self.engine()
        self.assertEqual(['s0'], eng.tick(base.T0).notices)
        self.cloud.set_metadata('s0', {'opie:bid': '5'})
        scheduler_notice = {
            base.engine.NOTICE_KEY: 'preemption at 2026-01-01T00:00:30Z '
                                    '(delete): preempted by the scheduler',
            base.engine.DEADLINE_KEY: '2026-01-01T00:00:30Z'}
        self.cloud.set_metadata('s0', scheduler_notice)
        report = eng.tick(base.T0 + 600)
        self.assertEqual(([], ['s0']), (report.preempted, report.cancelled))
        meta = self.cloud.by_uuid['s0'].metadata
        self.assertEqual(scheduler_notice, {
            k: meta.get(k) for k in scheduler_notice})
