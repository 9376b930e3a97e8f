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
"""Tests of benchmarks/end_to_end.py's aardvark-style reaper: what it
reads from nova's notifications, its victim choice, where it finds a
devcloud's notification transport.
"""

import importlib.util
import io
import math
import os
import threading
from unittest import mock

import fixtures
import testtools

from opie_sched.devcloud import config
from opie_sched.devcloud import layout as layout_mod
import tests

ROOT = tests.ROOT
SCRIPT = os.path.join(ROOT, 'benchmarks', 'end_to_end.py')


def _load():
    spec = importlib.util.spec_from_file_location('bench_e2e', SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _obj(name, **fields):
    """A versioned object as nova serialises it in a notification."""
    return {'nova_object.name': name, 'nova_object.namespace': 'nova',
            'nova_object.version': '1.0', 'nova_object.data': fields}


def update(uuid, old, new):
    """An instance.update payload (the fields the reaper reads)."""
    return _obj('InstanceUpdatePayload', uuid=uuid, host=None,
                state=new, state_update=_obj(
                    'InstanceStateUpdatePayload', old_state=old,
                    state=new, old_task_state='scheduling',
                    new_task_state=None))


def build_error(uuid, exception):
    """A compute_task.build_instances.error payload."""
    return _obj('ComputeTaskPayload', instance_uuid=uuid, state='error',
                request_spec=None, reason=_obj(
                    'ExceptionPayload', exception=exception,
                    exception_message='No valid host was found.'))


class BuildFailuresTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.e2e = _load()
        import oslo_messaging
        self.transport = self.useFixture(fixtures.MockPatchObject(
            oslo_messaging, 'get_notification_transport')).mock
        self.listener = self.useFixture(fixtures.MockPatchObject(
            oslo_messaging, 'get_notification_listener')).mock
        self.failures = self.e2e.BuildFailures('rabbit://u:p@h:5672/v')

    def test_listens_to_novas_versioned_topic_in_its_own_pool(self):
        self.assertEqual('rabbit://u:p@h:5672/v',
                         self.transport.call_args[1]['url'])
        _transport, targets, endpoints = self.listener.call_args[0]
        [target] = targets
        self.assertEqual(('versioned_notifications', 'nova'),
                         (target.topic, target.exchange))
        self.assertEqual([self.failures], endpoints)
        kw = self.listener.call_args[1]
        self.assertTrue(kw['pool'].startswith('e2e-reaper-'))
        self.listener.return_value.start.assert_called_once_with()

    def test_failed_once_both_notifications_came(self):
        f = self.failures
        f.info({}, 'nova-conductor', 'instance.update',
               update('s1', 'building', 'error'), {})
        self.assertIsNone(f.failed_at('s1'))
        # as nova 34's conductor sends it: the scheduler's remote error
        f.error({}, 'nova-conductor', 'compute_task.build_instances.error',
                build_error('s1', 'NoValidHost_Remote'), {})
        self.assertIsNotNone(f.failed_at('s1'))
        self.assertEqual(f.failed_at('s1'), f.wait_failed('s1', 1))
        f.handle(self.e2e.BUILD_ERROR, build_error('s2', 'NoValidHost'))
        f.handle('instance.update', update('s2', 'building', 'error'))
        self.assertIsNotNone(f.failed_at('s2'))

    def test_other_failures_and_states_are_not_the_reapers(self):
        f = self.failures
        # a build that failed for another reason
        f.handle('instance.update', update('s1', 'building', 'error'))
        f.handle(self.e2e.BUILD_ERROR, build_error(
            's1', 'BuildAbortException'))
        # a server that went to ERROR later in its life
        f.handle('instance.update', update('s2', 'active', 'error'))
        f.handle(self.e2e.BUILD_ERROR, build_error('s2', 'NoValidHost'))
        # a build that ended well
        f.handle('instance.update', update('s3', 'building', 'active'))
        f.handle('instance.create.end', update('s3', 'building', 'error'))
        f.handle(self.e2e.BUILD_ERROR, build_error('s3', 'NoValidHost'))
        for sid in ('s1', 's2', 's3'):
            self.assertIsNone(f.failed_at(sid), sid)
        self.assertRaises(RuntimeError, f.wait_failed, 's1', 0.01)

    def test_wait_wakes_up_on_the_notification(self):
        f = self.failures
        f.handle('instance.update', update('s1', 'building', 'error'))
        timer = threading.Timer(0.05, f.handle, (
            self.e2e.BUILD_ERROR, build_error('s1', 'NoValidHost_Remote')))
        timer.start()
        self.addCleanup(timer.cancel)
        self.assertIsNotNone(f.wait_failed('s1', 30))

    def test_stop(self):
        self.failures.stop()
        self.listener.return_value.stop.assert_called_once_with()
        self.listener.return_value.wait.assert_called_once_with()


class GreedyVictimsTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.e2e = _load()

    def test_fewest_victims_largest_first(self):
        hosts = {'a': ((8, 16000, 200), (8, 12000, 160)),
                 'b': ((8, 16000, 200), (8, 16000, 160))}
        pre = {'a': [((1, 1000, 10), 'a-small'), ((1, 1000, 10), 'a-s2')],
               'b': [((1, 1000, 10), 'b-small'), ((4, 8000, 40), 'b-big')]}
        # a needs two small victims for 2 vCPU; b one big one
        self.assertEqual(('b', ['b-big']), self.e2e.greedy_victims(
            hosts, pre, (2, 4000, 20)))

    def test_free_host_needs_no_victim_and_ties_break_on_waste(self):
        hosts = {'a': ((8, 16000, 200), (0, 0, 0)),
                 'b': ((8, 16000, 200), (6, 12000, 0))}
        self.assertEqual(('b', []), self.e2e.greedy_victims(
            hosts, {}, (2, 4000, 20)))

    def test_normal_servers_are_never_victims(self):
        hosts = {'a': ((8, 16000, 200), (8, 16000, 200))}
        self.assertRaises(RuntimeError, self.e2e.greedy_victims, hosts,
                          {}, (2, 4000, 20))
        self.assertRaises(RuntimeError, self.e2e.greedy_victims, hosts,
                          {'a': [((1, 1000, 10), 'x')]}, (2, 4000, 20))


class DevcloudEndpointsTest(testtools.TestCase):

    def _devcloud(self, **kw):
        root = self.useFixture(fixtures.TempDir()).path
        layout = layout_mod.Layout(root)
        ports = {name: 21000 + i
                 for i, name in enumerate(layout_mod.HTTP_SERVICES)}
        settings = config.Settings(ports, password='pw', **kw)
        os.makedirs(os.path.join(root, 'etc', 'nova'))
        with open(os.path.join(root, 'etc', 'nova', 'nova.conf'), 'w') as f:
            f.write(config.render(config.nova_conf(settings, layout)))
        with open(os.path.join(root, 'clouds.yaml'), 'w') as f:
            f.write('clouds: {}\n')
        return root, settings.transport_url(layout.vhost)

    def test_reads_the_rendered_devcloud_config(self):
        e2e = _load()
        root, url = self._devcloud(notifications=True)
        self.assertEqual((os.path.join(root, 'clouds.yaml'), url),
                         e2e.devcloud_endpoints(root))

    def test_refuses_a_devcloud_without_notifications(self):
        e2e = _load()
        root, _url = self._devcloud()
        exc = self.assertRaises(SystemExit, e2e.devcloud_endpoints, root)
        self.assertIn('--notifications', str(exc))
        self.assertRaises(SystemExit, e2e.devcloud_endpoints,
                          os.path.join(root, 'nothing'))


class RebuildRefusedTest(testtools.TestCase):

    def test_only_nova_409_on_rebuild(self):
        from openstack import exceptions
        e2e = _load()
        refused = exceptions.ConflictException(
            "Instance x is in an invalid state for 'rebuild'")
        self.assertTrue(e2e._rebuild_refused(refused))
        self.assertFalse(e2e._rebuild_refused(
            exceptions.ConflictException('quota exceeded')))
        self.assertFalse(e2e._rebuild_refused(mock.Mock()))


class RetryTargetReachTest(testtools.TestCase):
    """The line that says whether (b)/opie >= 2 could be reached."""

    def setUp(self):
        super().setUp()
        self.e2e = _load()

    def test_out_of_reach_when_the_retry_is_under_twice_free_room(self):
        # the devcloud of stop 27: free 2.28, opie 3.00, retry 4.12
        line = self.e2e.retry_target_reach(2.28, 3.00, 4.12)
        self.assertEqual(
            '(b)/opie >= 2 is out of reach on this cloud: it needs opie '
            '<= 2.06 s, below a create on free room (2.28 s); the retry '
            'costs free room + 1.84 s, so its ceiling (b)/(a) is 1.81',
            line)

    def test_reachable_names_the_gap(self):
        self.assertEqual(
            '(b)/opie >= 2 needs opie <= 3.00 s: 1.00 s less than now '
            '(ceiling (b)/(a) = 3.00)',
            self.e2e.retry_target_reach(2.0, 4.0, 6.0))

    def test_reached(self):
        self.assertEqual('(b)/opie >= 2 reached (ceiling (b)/(a) = 3.00)',
                         self.e2e.retry_target_reach(2.0, 3.0, 6.0))


class HeadroomNoticeTest(testtools.TestCase):
    """How the headroom design counts the notice its victims were given."""

    def setUp(self):
        super().setUp()
        self.e2e = _load()

    def meta(self, deadline):
        return {self.e2e.NOTICE_KEY: 'preemption at %s (delete): headroom'
                % deadline, self.e2e.DEADLINE_KEY: deadline}

    def test_notice_from_the_first_listing_that_showed_it(self):
        log = self.e2e.NoticeLog()
        # 2026-11-28T12:02:00Z = 1795867320
        at = 1795867320.0
        log.see([('a', {}), ('b', {})], at - 125)
        log.see([('a', self.meta('2026-11-28T12:02:00Z')), ('b', {})],
                at - 120.4)
        log.see([('a', self.meta('2026-11-28T12:02:00Z')),
                 ('b', self.meta('2026-11-28T12:02:30Z'))], at - 40)
        # a later listing never moves the first sighting
        log.see([('a', self.meta('2026-11-28T12:02:00Z'))], at - 10)
        notices = log.notices()
        self.assertAlmostEqual(120.4, notices['a'], places=3)
        self.assertAlmostEqual(70.0, notices['b'])
        self.assertEqual((1, 2), self.e2e.notice_share(notices.values(),
                                                       120))

    def test_forged_or_partial_keys_are_no_notice(self):
        log = self.e2e.NoticeLog()
        log.see([('a', {self.e2e.NOTICE_KEY: 'soon'}),
                 ('b', {self.e2e.DEADLINE_KEY: '2026-11-28T12:02:00Z'}),
                 ('c', {self.e2e.NOTICE_KEY: 'x',
                        self.e2e.DEADLINE_KEY: 'tomorrow'}),
                 ('d', None)], 0.0)
        self.assertEqual({}, log.notices())

    def test_share_counts_whole_second_deadlines(self):
        self.assertEqual((2, 3), self.e2e.notice_share([119.0, 120.2, 118.9],
                                                       120))
        self.assertEqual((0, 0), self.e2e.notice_share([], 120))

    def test_headroom_is_one_server_of_the_flavor(self):
        flavor = mock.Mock(vcpus=2, ram=4096, disk=20)
        self.assertEqual('1 x 2 vcpu, 4096 MB, 20 GB',
                         self.e2e.headroom_text(flavor))


class BurstTest(testtools.TestCase):
    """The burst row beyond the headroom (``--headroom --burst``)."""

    def setUp(self):
        super().setUp()
        self.e2e = _load()

    def test_times_from_each_create_to_first_seen_active(self):
        created = {'a': 10.0, 'b': 10.5, 'c': 11.0, 'd': 11.5}
        seen = {'a': ('ACTIVE', 14.0), 'b': ('ACTIVE', 13.0),
                'c': ('ERROR', 12.0)}
        out = self.e2e.burst_outcome(created, seen)
        self.assertEqual([2.5, 4.0], out['times'])
        self.assertEqual(1, out['failed'])
        self.assertEqual(1, out['pending'])

    def test_servers_not_of_the_burst_are_ignored(self):
        out = self.e2e.burst_outcome({'a': 0.0}, {'x': ('ERROR', 1.0),
                                                  'a': ('ACTIVE', 3.0)})
        self.assertEqual({'times': [3.0], 'failed': 0, 'pending': 0}, out)

    def test_percentile(self):
        self.assertEqual(7.0, self.e2e.percentile90([7.0]))
        self.assertAlmostEqual(9.1, self.e2e.percentile90(range(11)[1:]))
        self.assertTrue(math.isnan(self.e2e.percentile90([])))

    def test_bad_burst_sizes_are_refused(self):
        for argv, word in ((['--burst', '10,x', '--headroom'], 'whole'),
                           (['--burst', '0', '--headroom'], '>= 1'),
                           (['--burst', '10'], 'needs --headroom')):
            err = io.StringIO()
            with mock.patch('sys.stderr', err):
                self.assertRaises(SystemExit, self.e2e.main,
                                  ['--devcloud', '/nonexistent'] + argv)
            self.assertIn(word, err.getvalue())
