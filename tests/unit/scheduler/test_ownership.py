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
"""The ownership model's rules (issue 30), without Nova, and its
application to Nova's records.
"""

import datetime

import fixtures
import testtools

from nova import objects

from opie_sched.common import flavors
from opie_sched.preemption import model
from opie_sched.preemption import ownership as rules
from opie_sched.preemption import victim_state as vs
from opie_sched.scheduler import ownership
from opie_sched.scheduler import reconciler

NOW = datetime.datetime(2026, 1, 1, 12, tzinfo=datetime.timezone.utc)
PRE = flavors.preemptible_extra_specs(2, 4000, 40)


def ago(seconds):
    return NOW - datetime.timedelta(seconds=seconds)


class PreemptibleByClassesTest(testtools.TestCase):

    def test_allocations(self):
        self.assertTrue(rules.holds_preemptible(
            {flavors.VCPU_CLASS: 1, 'VCPU': 0}))
        self.assertFalse(rules.holds_preemptible(
            {'VCPU': 4, flavors.DISK_GB_CLASS: 0}))
        self.assertFalse(rules.holds_preemptible({}))

    def test_flavor_classes_decide_not_the_marker(self):
        unmarked = {k: v for k, v in PRE.items() if k != flavors.MARKER_KEY}
        self.assertTrue(rules.requests_preemptible(PRE))
        self.assertTrue(rules.requests_preemptible(unmarked))
        self.assertFalse(rules.requests_preemptible(
            {flavors.MARKER_KEY: 'true'}))
        # a suffixed group is not what the model counts
        self.assertFalse(rules.requests_preemptible(
            {'resources1:%s' % flavors.VCPU_CLASS: '2'}))
        self.assertFalse(rules.requests_preemptible(
            {'resources:%s' % flavors.VCPU_CLASS: 'lots'}))

    def test_disagreement_names_the_flavor_and_the_winner(self):
        self.assertIsNone(rules.disagreement(PRE, 'x'))
        self.assertIsNone(rules.disagreement({}, 'x'))
        unmarked = {k: v for k, v in PRE.items() if k != flavors.MARKER_KEY}
        self.assertIn("flavor 'x' requests preemptible resource classes "
                      "without the marker", rules.disagreement(unmarked, 'x'))
        self.assertIn('its servers are normal', rules.disagreement(
            {flavors.MARKER_KEY: 'yes'}, 'y'))

    def test_flavor_disagreement_for_opie_status_and_error_log(self):
        ownership._reported.clear()
        self.addCleanup(ownership._reported.clear)
        flv = objects.Flavor(name='typo', vcpus=2, memory_mb=4000,
                             root_gb=40, ephemeral_gb=0, swap=0,
                             extra_specs={flavors.MARKER_KEY: 'true'})
        self.assertIn('typo', ownership.flavor_disagreement(flv))
        with self.assertLogs('opie_sched.scheduler.ownership',
                             level='ERROR') as logs:
            self.assertFalse(ownership.flavor_is_preemptible(flv))
        self.assertEqual(1, len(logs.output))


class StateTest(testtools.TestCase):

    def state(self, task_state=None, vm_state='active', changed_at=None,
              record=None, moving=False):
        return rules.state(task_state, vm_state, changed_at, record, NOW,
                           300, 60, moving)

    def test_deleting_leaves_until_its_deadline_whoever_asked(self):
        self.assertEqual(rules.LEAVING,
                         self.state('deleting', changed_at=ago(59)))
        self.assertEqual(rules.RUNNING,
                         self.state('deleting', changed_at=ago(61)))
        # naive UTC as nova's columns give it
        self.assertEqual(rules.LEAVING, self.state(
            'deleting', changed_at=ago(1).replace(tzinfo=None)))
        self.assertEqual(rules.LEAVING, self.state(vm_state='deleted'))

    def test_victim_records(self):
        reserved = vs.reserve('p', ago(10))
        self.assertEqual(rules.LEAVING, self.state(record=reserved))
        self.assertEqual(rules.RUNNING,
                         self.state(record=vs.reserve('p', ago(301))))
        terminating = reserved.terminating(ago(5), 60, 3600)
        self.assertEqual(rules.LEAVING, self.state(record=terminating))
        self.assertEqual(terminating.next_attempt, rules.leaving_until(
            'deleting', 'active', ago(500), terminating, NOW, 300, 60))

    def test_owner_moves_pin(self):
        for task_state in ('resize_prep', 'resize_migrating',
                           'resize_finish', 'resize_reverting',
                           'migrating'):
            self.assertEqual(rules.PINNED, self.state(task_state),
                             task_state)
        self.assertEqual(rules.PINNED, self.state(vm_state='resized'))
        self.assertEqual(rules.PINNED, self.state(moving=True))
        # soft-deleted, shelving, rescued: not moving
        for vm_state in ('soft-delete', 'rescued', 'stopped'):
            self.assertEqual(rules.RUNNING, self.state(vm_state=vm_state))
        self.assertFalse(rules.may_be_victim(True, rules.PINNED))
        self.assertFalse(rules.may_be_victim(True, rules.LEAVING))
        self.assertFalse(rules.may_be_victim(False, rules.RUNNING))
        self.assertTrue(rules.may_be_victim(True, rules.RUNNING))

    def test_pinned_is_never_a_candidate_and_holds_its_room(self):
        pinned = model.InstanceInfo('a', model.Resources(4, 8000, 80), True,
                                    pinned=True)
        running = model.InstanceInfo('b', model.Resources(2, 4000, 40),
                                     True)
        hv = model.HostView('h', model.Resources(8, 16000, 200),
                            model.Resources(10, 20000, 200),
                            [pinned, running])
        self.assertEqual([running], hv.preemptible_instances)
        self.assertEqual((0, 0, 40), tuple(hv.reclaimable_free()))


class LifetimeTest(testtools.TestCase):

    def test_starts_at_the_latest_move_to_preemptible(self):
        self.assertEqual(ago(100), rules.lifetime_start(ago(1000),
                                                        [ago(500), ago(100)]))
        self.assertEqual(ago(1000), rules.lifetime_start(
            ago(1000).replace(tzinfo=None)))

    def test_flavor_limit_overrides_the_cloud_wide_one(self):
        def flv(value):
            specs = dict(PRE)
            if value is not None:
                specs[reconciler.LIFETIME_KEY] = value
            return objects.Flavor(extra_specs=specs)
        # 0 on the flavor: no limit, whatever the cloud's
        self.assertEqual(0, reconciler.lifetime_limit(flv('0'), 3600))
        self.assertEqual(7200, reconciler.lifetime_limit(flv('7200'), 3600))
        self.assertEqual(3600, reconciler.lifetime_limit(flv(None), 3600))
        self.assertEqual(3600, reconciler.lifetime_limit(flv('-1'), 3600))
        self.assertEqual(3600, reconciler.lifetime_limit(flv('x'), 3600))


class HeldResourcesTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MockPatchObject(
            ownership.CONF.opie_preemption, 'retry_interval', 60))

    def test_what_placement_holds(self):
        pre = objects.Flavor(name='p', vcpus=2, memory_mb=4000, root_gb=40,
                             ephemeral_gb=0, swap=0, extra_specs=dict(PRE))
        self.assertEqual((2, 4000, 40), tuple(ownership.flavor_resources(pre)))
        ceph = objects.Flavor(name='c', vcpus=2, memory_mb=4000, root_gb=40,
                              ephemeral_gb=0, swap=0,
                              extra_specs={'resources:DISK_GB': '0'})
        self.assertEqual((2, 4000, 0), tuple(ownership.flavor_resources(ceph)))
        self.assertEqual((2, 4000, 0), tuple(ownership.flavor_resources(
            objects.Flavor(name='v', vcpus=2, memory_mb=4000, root_gb=40,
                           ephemeral_gb=0, swap=0, extra_specs={}),
            boot_from_volume=True)))

    def test_volume_booted_preemptible_holds_no_root_disk(self):
        # issue 30, hole 9: nova's is_bfv rule for DISK_GB, applied to the
        # preemptible disk class (never raised, idempotent)
        key = rules.PREEMPTIBLE_DISK_KEY
        specs = flavors.preemptible_extra_specs(2, 4000, 40 + 10 + 1)
        lowered = rules.volume_booted_specs(specs, 10, 512)
        self.assertEqual('11', lowered[key])
        self.assertEqual('51', specs[key])
        self.assertIs(lowered, rules.volume_booted_specs(lowered, 10, 512))
        ceph = flavors.preemptible_extra_specs(2, 4000, 0)
        self.assertIs(ceph, rules.volume_booted_specs(ceph, 10, 0))
        self.assertIs(PRE, rules.volume_booted_specs(PRE, 40, 0))
        bad = dict(PRE, **{key: 'lots'})
        self.assertIs(bad, rules.volume_booted_specs(bad, 0, 0))
        self.assertEqual({}, rules.volume_booted_specs({}, 0, 0))
        pre = objects.Flavor(name='p', vcpus=2, memory_mb=4000, root_gb=40,
                             ephemeral_gb=0, swap=0, extra_specs=dict(PRE))
        self.assertEqual((2, 4000, 0), tuple(ownership.flavor_resources(
            pre, boot_from_volume=True)))
        spec = objects.RequestSpec(flavor=pre, is_bfv=True)
        self.assertEqual((2, 4000, 0),
                         tuple(ownership.request_resources(spec)))
        clone = ownership.volume_booted_flavor(spec)
        self.assertEqual('0', clone.extra_specs[key])
        self.assertEqual('40', pre.extra_specs[key])
        self.assertIsNone(ownership.volume_booted_flavor(
            objects.RequestSpec(flavor=pre, is_bfv=False)))
        self.assertIsNone(ownership.volume_booted_flavor(
            objects.RequestSpec(flavor=pre)))

    def test_provider_instances_pin_a_migration_owner(self):
        rows = {}
        for uuid in ('mover', 'other'):
            row = objects.Instance(
                uuid=uuid, flavor=objects.Flavor(
                    name='p', vcpus=2, memory_mb=4000, root_gb=40,
                    ephemeral_gb=0, swap=0, extra_specs=dict(PRE)),
                launched_at=NOW, task_state=None, vm_state='active',
                display_name=uuid, project_id='p', system_metadata={})
            rows[uuid] = row

        def owners_of(cctxt, consumers):
            self.assertEqual({'mig', 'other'}, set(consumers))
            return {'mig': 'mover', 'other': 'other'}, rows
        pre = {flavors.VCPU_CLASS: 2, flavors.MEMORY_MB_CLASS: 4000}
        infos, _ = ownership.provider_instances(None, {
            'mig': pre, 'other': pre, 'mover': {'VCPU': 4},
            'in-flight': {'VCPU': 1}}, owners_of, now=NOW)
        by_uuid = {i.uuid: i for i in infos}
        self.assertTrue(by_uuid['mover'].pinned)
        self.assertFalse(by_uuid['other'].pinned)
        self.assertEqual((2, 4000, 0), tuple(by_uuid['mover'].resources))
