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
"""The demo against a cloud through openstacksdk (``demo --os-cloud``).

The cloud is the embedded runtime (:class:`EmbeddedCloud`, used here as a
plain fixture, not a nova test case); the replay reaches its Nova only
through openstacksdk and a clouds.yaml, as it would a DevStack.
"""

import contextlib
import csv
import io
import logging
import os

import fixtures
import testtools
import yaml

from opie_sched.cmd import cli
from opie_sched.common import flavors
from opie_sched.demo import clients
from opie_sched.demo import cloud as cloud_mod
from opie_sched.demo import replay
from opie_sched.demo import report
from opie_sched.demo import targets
from opie_sched.workload import mapping


def req(job, submit, vcpus, preemptible, runtime=1000.0, count=1):
    return mapping.ServerRequest(
        job_id=job, submit=submit, runtime=runtime, vcpus=vcpus,
        memory_mb=2000 * vcpus, disk_gb=20 * vcpus, count=count,
        preemptible=preemptible)


class DemoOnCloudTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        # Nova's logging (and its thread pools' shutdown at the cloud's
        # cleanup) is kept as the test's detail, never printed on stdout.
        self.useFixture(fixtures.FakeLogger(level=logging.INFO))
        # one host of 8 vCPU; the runtime is a fixture like any other
        self.cloud = self.useFixture(cloud_mod.EmbeddedCloud(hosts=1))
        self.conn = self.cloud.connection()

    def _target(self, **kw):
        return targets.OpenStackTarget(
            self.conn, 'in-process', interval=0.05, **kw)

    def test_preemptions_seen_through_server_events(self):
        # 4 preemptible servers of 2 vCPU fill the host; a normal request
        # for 4 vCPU preempts two of them (one decision).
        reqs = [req(i, i, 2, True) for i in range(1, 5)]
        reqs.append(req(5, 10, 4, False))
        target = self._target()
        self.assertEqual(8, target.capacity_vcpus)     # from Placement
        result = replay.Replayer(target, reqs, 'sdk').run()

        self.assertEqual(0, result.normal_failed)
        self.assertEqual(0, result.preemptible_rejected)
        self.assertEqual(5, result.servers_booted)
        self.assertEqual(2, result.preemptions)
        self.assertEqual(1, result.preemption_decisions)
        self.assertIsNone(result.preemption_cost)      # not published
        self.assertEqual([replay.NormalOutcome(5, 10, (4, 8000, 80), 1,
                                               ('host1',))],
                         result.normal_outcomes)
        # right after the normal request: it and the two survivors run
        at_10 = [s for s in result.samples if s.t == 10][0]
        self.assertEqual((4, 4), (at_10.normal_vcpus,
                                  at_10.preemptible_vcpus))
        # everything the replay booted is gone
        self.assertEqual([], list(self.conn.compute.servers(
            name='^opie-demo-')))
        # the flavors it created: a normal one and its preemptible twin
        twin = self.conn.compute.find_flavor('demo.c2m4000d40.preemptible')
        specs = self.conn.compute.fetch_flavor_extra_specs(twin).extra_specs
        self.assertTrue(flavors.is_preemptible(specs, 2, 4000, 40))
        normal = self.conn.compute.find_flavor('demo.c4m8000d80')
        self.assertFalse(flavors.is_preemptible(
            self.conn.compute.fetch_flavor_extra_specs(
                normal).extra_specs or {}, 4, 8000, 80))

    def test_failed_normal_request_is_named_with_its_reason(self):
        # a normal server fills the host's normal state: the next normal
        # request gets no allocation candidates
        reqs = [req(1, 0, 8, False), req(2, 10, 4, False)]
        result = replay.Replayer(self._target(), reqs, 'sdk').run()
        self.assertEqual(1, result.normal_failed)
        [failed] = result.failures
        self.assertEqual((2, 10, (4, 8000, 80), 1, 1), (
            failed.job_id, failed.t, failed.size, failed.count,
            failed.failed))
        self.assertTrue(failed.fault.startswith('No valid host was found.'),
                        failed.fault)
        self.assertEqual({'host1': (0, 0, 40)}, failed.room)
        [line] = report.failure_lines(result)
        self.assertIn('job 2 at t=0:00:10, 1 x 4 vCPU / 8000 MB / 80 GB: '
                      'no allocation candidates: no host had 4 vCPU / 8000 '
                      'MB / 80 GB free in the normal state (short of vCPU, '
                      'RAM and disk on every host; most room: host1 0 vCPU '
                      '/ 0 MB / 40 GB)', line)
        self.assertEqual([('host1',), (None,)],
                         [o.hosts for o in result.normal_outcomes])

    def test_flavor_of_the_wrong_size_is_refused_by_name(self):
        self.conn.compute.create_flavor(name='demo.c2m4000d40', vcpus=1,
                                        ram=512, disk=1)
        exc = self.assertRaises(
            targets.ReplayError, replay.Replayer(
                self._target(), [req(7, 0, 2, False)], 'sdk').run)
        self.assertIn('job 7', str(exc))
        self.assertIn('demo.c2m4000d40', str(exc))
        self.assertIn('in-process', str(exc))

    def test_api_error_names_request_server_and_cloud(self):
        target = self._target(image='no-such-image')
        exc = self.assertRaises(
            targets.ReplayError, replay.Replayer(
                target, [req(3, 0, 1, True)], 'sdk').run)
        self.assertIn('job 3', str(exc))
        self.assertIn("image 'no-such-image' not found on cloud in-process",
                      str(exc))

    def test_demo_command_with_os_cloud(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(tmp, 'clouds.yaml')
        with open(path, 'w') as f:
            # no Keystone catalog: the endpoints are given
            yaml.safe_dump({'clouds': {'inproc': {
                'auth_type': 'admin_token',
                'auth': {'endpoint': self.cloud.api_fixture.base_url,
                         'token': 'admin:admin'},
                'placement_endpoint_override':
                    self.cloud.placement_fixture.endpoint,
                'placement_api_version': '1',
                'image_endpoint_override':
                    clients.IMAGE_ENDPOINT + '/v2'}}}, f)
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_CLIENT_CONFIG_FILE', path))
        self.useFixture(fixtures.EnvironmentVariable('OS_CLOUD'))
        self.useFixture(fixtures.FakeLogger())
        out_dir = os.path.join(tmp, 'out')
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = cli.main(['demo', '--os-cloud', 'inproc', '--limit', '6',
                           '--poll-interval', '0.05', '--output-dir',
                           out_dir])
        self.assertEqual(0, rc, err.getvalue() + out.getvalue())
        text, progress = out.getvalue(), err.getvalue()
        self.assertRegex(text, r'\| cloud +\| cloud inproc \(8 vCPU\)')
        self.assertIn('replay "with backfilling" on cloud inproc', progress)
        self.assertIn('replay "normal only" on cloud inproc', progress)
        self.assertIn('total preemption cost (s)', text)
        self.assertRegex(text, r'\| conclusion +\| preemptible backfilling '
                               r'adds')
        self.assertRegex(text, r'\| normal placement +\| as configured on '
                               r'the cloud')
        self.assertRegex(text, r'\| normal outcomes +\| ')
        self.assertRegex(text, r'\| failed normal requests +\| ')
        with open(os.path.join(out_dir, 'utilisation.csv')) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual({'with backfilling', 'normal only'},
                         {r['replay'] for r in rows})
        self.assertTrue(os.path.getsize(
            os.path.join(out_dir, 'utilisation.png')) > 0)
        self.assertEqual([], list(self.conn.compute.servers(
            name='^opie-demo-')))


class DemoOptionsTest(testtools.TestCase):
    """The demo options that only the embedded cloud takes, refused with
    ``--os-cloud`` before any cloud is reached (no cloud started here).
    """

    def test_hosts_option_is_for_the_embedded_cloud(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = cli.main(['demo', '--os-cloud', 'x', '--hosts', '2'])
        self.assertEqual(1, rc)
        self.assertIn('--hosts is for the embedded cloud', err.getvalue())

    def test_normal_placement_option_is_for_the_embedded_cloud(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = cli.main(['demo', '--os-cloud', 'x', '--normal-placement',
                           'full-state'])
        self.assertEqual(1, rc)
        self.assertIn('--normal-placement is for the embedded cloud',
                      err.getvalue())


class _OneHostTarget(testtools.TestCase):
    """An embedded cloud of one host and a demo target on it, whose
    warnings are kept in ``self.warnings``.
    """

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.FakeLogger(level=logging.INFO))
        self.cloud = self.useFixture(cloud_mod.EmbeddedCloud(hosts=1))
        self.conn = self.cloud.connection()
        self.warnings = []
        # Bounded, so that a fault the target fails to see fails the test
        # (ResourceTimeout) instead of hanging it.
        self.target = targets.EmbeddedTarget(self.cloud, wait=120,
                                             warn=self.warnings.append)


class LostBuildTest(_OneHostTarget):
    """A build nova's conductor drops (an RPC cast that raised) is seen,
    and the in-process demo submits the request again instead of waiting
    for ever.
    """

    MAP = 'nova.conductor.manager.ComputeTaskManager._map_instance_to_cell'

    def setUp(self):
        super().setUp()
        self.mapped = []

    def _fail_mapping(self, times):
        """The conductor's UPDATE of the instance mapping fails ``times``
        times, as the API database did once under load.
        """
        from nova.conductor import manager as conductor_manager
        from oslo_db import exception as db_exc

        original = conductor_manager.ComputeTaskManager._map_instance_to_cell

        def flaky(context, instance, cell):
            self.mapped.append(instance.uuid)
            if len(self.mapped) <= times:
                raise db_exc.DBError('(sqlite3.OperationalError) database '
                                     'is locked')
            return original(context, instance, cell)

        self.useFixture(fixtures.MonkeyPatch(self.MAP, staticmethod(flaky)))

    def _allocations(self, consumer):
        return self.cloud.placement.get(
            '/allocations/%s' % consumer).body['allocations']

    def test_lost_build_is_deleted_and_submitted_again(self):
        self._fail_mapping(times=1)
        flavor = self.target.flavor_id(req(1, 0, 2, False))

        ok, failed = self.target.boot('opie-demo-lost', flavor)

        self.assertEqual([], failed)
        self.assertEqual(2, len(self.mapped))
        lost, again = self.mapped
        self.assertEqual([again], ok)
        self.assertEqual('host1', self.target.hosts[again])
        [line] = self.warnings
        self.assertIn('nova lost the build of server %s' % lost, line)
        self.assertIn('database is locked', line)
        # the lost server is gone, with its Placement allocation: the host
        # holds the new server only
        self.assertEqual([again], [s.id for s in self.conn.compute.servers(
            name='^opie-demo-')])
        self.assertEqual({}, self._allocations(lost))
        self.assertEqual({'host1': (6, 12000, 160)},
                         self.target.normal_room())
        self.assertNotIn(lost, self.target.created)

    def test_build_lost_twice_is_one_clear_error(self):
        self._fail_mapping(times=2)
        flavor = self.target.flavor_id(req(1, 0, 2, False))

        exc = self.assertRaises(targets.ReplayError, self.target.boot,
                                'opie-demo-lost', flavor)

        lost, again = self.mapped
        self.assertIn('nova lost the build of server %s, and of the server '
                      'submitted again in its place (DBError: '
                      '(sqlite3.OperationalError) database is locked)'
                      % lost, str(exc))
        self.assertEqual({}, self._allocations(lost))


class CloudStopTest(testtools.TestCase):
    """A stopped in-process cloud leaves none of opie's process-wide state
    behind for the next one (the benchmarks start one per scale).
    """

    def test_stop_forgets_coordinators_and_compute_api(self):
        from nova import conf as nova_conf

        from opie_sched.scheduler import actions
        from opie_sched.scheduler import locks

        self.useFixture(fixtures.FakeLogger(level=logging.INFO))
        cloud = cloud_mod.EmbeddedCloud(hosts=1).start()
        try:
            coord = locks.coordinator(nova_conf.CONF)
            api = actions.compute_api()
            self.assertIs(api, actions.compute_api())
            self.assertIn(coord, locks._coordinators.values())
        finally:
            cloud.stop()
        self.assertEqual({}, locks._coordinators)
        self.assertIsNone(actions._compute_api)


class FailedDeleteTest(_OneHostTarget):
    """A delete the compute service fails (nova reverts it: the server is
    back, not deleting) is asked for again instead of waited for ever.
    """

    EVENT_START = 'nova.db.main.api.action_event_start'

    def setUp(self):
        super().setUp()
        self.failed = []
        flavor = self.target.flavor_id(req(1, 0, 2, False))
        [self.uuid], _ = self.target.boot('opie-demo-del', flavor)

    def _fail_terminate(self, times):
        """The compute's terminate fails ``times`` times on the cell
        database's "database is locked", as it did once under load.
        """
        from nova.db.main import api as main_db
        from oslo_db import exception as db_exc

        original = main_db.action_event_start

        def flaky(context, values):
            if (values.get('event') == 'compute_terminate_instance'
                    and len(self.failed) < times):
                self.failed.append(values.get('instance_uuid'))
                raise db_exc.DBError('(sqlite3.OperationalError) database '
                                     'is locked')
            return original(context, values)

        self.useFixture(fixtures.MonkeyPatch(self.EVENT_START, flaky))

    def test_failed_delete_is_asked_for_again(self):
        self._fail_terminate(times=1)

        self.target.delete_server(self.uuid)

        self.assertEqual([self.uuid], self.failed)
        [line] = self.warnings
        self.assertIn('the delete of server %s failed (status ACTIVE'
                      % self.uuid, line)
        self.assertEqual([], list(self.conn.compute.servers(
            name='^opie-demo-')))
        self.assertEqual({'host1': (8, 16000, 200)},
                         self.target.normal_room())

    def test_delete_failing_every_time_is_one_clear_error(self):
        self._fail_terminate(times=targets.OpenStackTarget.DELETE_ATTEMPTS)

        exc = self.assertRaises(targets.ReplayError,
                                self.target.delete_server, self.uuid)

        self.assertIn('delete server %s on cloud embedded failed 3 times '
                      '(last: status ACTIVE' % self.uuid, str(exc))
        self.assertEqual(2, len(self.warnings))
