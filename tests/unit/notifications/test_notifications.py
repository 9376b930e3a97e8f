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
"""opie_sched's versioned notifications: samples, versions, the wire.

* every sample in ``doc/notification_samples/`` is what the emitting code
  sends today (the scheduler's :func:`opie_sched.scheduler.actions.notify`
  and the market engine's ``_notify``, through a recording notifier);
* each object's fingerprint (fields and remotable methods) is pinned with
  its version: a field changed without a version bump fails here;
* a received payload reads back into its object.
"""

import json
import os
import types
from unittest import mock

from oslo_versionedobjects import fixture as ovo_fixture
import testtools

from opie_sched.notifications import base
from opie_sched.notifications import market
from opie_sched.notifications import preemption
from opie_sched.scheduler import actions
from opie_sched.services.market import engine
from opie_sched.services.market import notifications as market_notifications
import tests

ROOT = tests.ROOT
SAMPLES = os.path.join(ROOT, 'doc', 'notification_samples')

SERVER = '6ab23a4e-5a2c-4c2b-8f5e-0d3c1b2a9e71'
VICTIM_1 = '0c2f3b9e-1d8a-4a47-9b52-3e6f7a8b9c01'
VICTIM_2 = '9d8e7f6a-5b4c-4d3e-8f2a-1b0c9d8e7f02'
PROJECT = 'a1b2c3d4e5f60718293a4b5c6d7e8f90'

#: Fingerprints of every object: change a field, bump the version and
#: the hash here (and regenerate the samples).
EXPECTED = {
    'MarketNoticeNotification': '1.0-09c02d0d0c783a8950118ed415f8ec8c',
    'MarketNoticePayload': '1.0-ce621066e88da31a0ad269d74a52f723',
    'MarketPoolPricesPayload': '1.0-ac2f155abcc99ac4fde1a1a1a79315ce',
    'MarketPreemptedNotification': '1.0-09c02d0d0c783a8950118ed415f8ec8c',
    'MarketPreemptedPayload': '1.0-dbb0c6a266ed56ec9a0be6a7e67c4f71',
    'MarketPriceNotification': '1.0-09c02d0d0c783a8950118ed415f8ec8c',
    'MarketPricePayload': '1.0-13e8ccadead6d6bfabaad3284e31f97e',
    'NotificationBase': '1.0-0db00bb8f939eb5b96bd22dd0c4ad3f3',
    'OpieEventType': '1.0-a601b01c1849946ca2d59286fbecaa04',
    'OpiePublisher': '1.0-578ee5fea2922ff32e8917621f140857',
    'PreemptionNotification': '1.0-09c02d0d0c783a8950118ed415f8ec8c',
    'PreemptionPayload': '1.0-a4c4bc4ed496853d52781c687ca415bb',
    'PreemptionVictimPayload': '1.0-39106395b8271d39e08935e745bababd',
    'RestoreNotification': '1.0-09c02d0d0c783a8950118ed415f8ec8c',
    'RestorePayload': '1.0-2c44bc6d4c8fa738ad17c7509340c37f',
}


class Recorder:
    """What oslo.messaging's Notifier would send, as nova's sample shape.
    """

    def __init__(self):
        self.sent = []
        self.publisher_id = None

    def prepare(self, publisher_id=None):
        sub = Recorder()
        sub.sent = self.sent
        sub.publisher_id = publisher_id
        return sub

    def info(self, ctxt, event_type, payload):
        self.sent.append({'priority': 'INFO', 'event_type': event_type,
                          'publisher_id': self.publisher_id,
                          'payload': payload})


def _inst(uuid, name):
    return types.SimpleNamespace(uuid=uuid, project_id=PROJECT, name=name)


def scheduler_sample():
    """What actions.notify sends for a two-victim decision."""
    plan = types.SimpleNamespace(
        host='compute-1',
        victims=[(_inst(VICTIM_1, 'batch-1'), 400),
                 (_inst(VICTIM_2, 'batch-2'), 1000.5)])
    rec = Recorder()
    conf = types.SimpleNamespace(
        host='scheduler-1',
        notifications=types.SimpleNamespace(notification_format='both'))
    with mock.patch.object(actions, 'CONF', conf), \
            mock.patch.object(actions.rpc, 'get_versioned_notifier',
                              side_effect=lambda pid: rec.prepare(pid)):
        actions.notify({}, plan, SERVER,
                       'req-5b0e2a6c-7f1d-4c3e-9a8b-6d5c4b3a2f10', 'delete')
    [sent] = rec.sent
    return sent


def restore_sample():
    """What actions.notify_restore sends for a server restored after its
    second interruption, having waited 754.5 s.
    """
    import datetime
    now = datetime.datetime(2026, 11, 28, 10, 0, 0,
                            tzinfo=datetime.timezone.utc)
    inst = types.SimpleNamespace(uuid=VICTIM_1, project_id=PROJECT,
                                 host='compute-2')
    state = types.SimpleNamespace(
        interruptions=2, since=now - datetime.timedelta(seconds=754.5))
    rec = Recorder()
    conf = types.SimpleNamespace(
        host='scheduler-1',
        notifications=types.SimpleNamespace(notification_format='both'))
    with mock.patch.object(actions, 'CONF', conf), \
            mock.patch.object(actions.rpc, 'get_versioned_notifier',
                              side_effect=lambda pid: rec.prepare(pid)):
        actions.notify_restore({}, inst, state, now)
    [sent] = rec.sent
    return sent


def market_sample(event_type, fields):
    """What the market's notifications.emit sends for ``fields``."""
    rec = Recorder()
    with mock.patch.object(market_notifications.socket, 'gethostname',
                           return_value='market-1'):
        market_notifications.emit(rec, event_type, fields)
    [sent] = rec.sent
    return sent


#: sample file -> a function emitting it through the real code
CASES = {
    'opie-instance-preempt.json': scheduler_sample,
    'opie-instance-restore.json': restore_sample,
    'opie-market-price-update.json': lambda: market_sample(
        engine.EVENT_PRICE_UPDATE, {
            'period_start': '2026-11-25T19:00:00Z', 'period_seconds': 300,
            'charge_rule': 'share_cost',
            'prices': {'default': {'vcpus': '0.208333',
                                   'memory_mb': '0.000104'}}}),
    'opie-market-preempt-notice.json': lambda: market_sample(
        engine.EVENT_NOTICE, {
            'server_uuid': VICTIM_1, 'project_id': PROJECT,
            'kind': 'out_of_bid',
            'reason': 'out of bid: bid 0.1 per hour below the price 0.41 '
                      'of its flavor (contended)',
            'deadline': '2026-11-25T19:10:00Z', 'action': 'delete'}),
    'opie-market-preempt-end.json': lambda: market_sample(
        engine.EVENT_PREEMPTED, {
            'server_uuid': VICTIM_1, 'project_id': PROJECT,
            'kind': 'out_of_bid',
            'reason': 'out of bid: bid 0.1 per hour below the price 0.41 '
                      'of its flavor (contended)',
            'action': 'delete', 'preempted_at': '2026-11-25T19:10:00Z'}),
}


def write_samples():
    """Regenerate the samples (``python -m
    tests.unit.notifications.test_notifications`` after a version bump).
    """
    for name, case in CASES.items():
        with open(os.path.join(SAMPLES, name), 'w', encoding='utf-8') as f:
            json.dump(case(), f, indent=4, sort_keys=True)
            f.write('\n')


class SamplesTest(testtools.TestCase):

    def test_every_sample_is_what_the_code_emits(self):
        self.assertEqual(sorted(CASES), sorted(
            n for n in os.listdir(SAMPLES) if n.endswith('.json')))
        for name, case in CASES.items():
            with open(os.path.join(SAMPLES, name), encoding='utf-8') as f:
                sample = json.load(f)
            self.assertEqual(sample, json.loads(json.dumps(case())),
                             '%s differs from what is emitted: run '
                             'python -m '
                             'tests.unit.notifications.test_notifications'
                             % name)

    def test_samples_are_listed_in_the_docs(self):
        with open(os.path.join(ROOT, 'doc', 'source', 'admin',
                               'notifications.rst'), encoding='utf-8') as f:
            page = f.read()
        for name in CASES:
            self.assertIn('notification_samples/%s' % name, page)

    def test_received_payload_reads_back(self):
        payload = base.from_primitive(scheduler_sample()['payload'])
        self.assertIsInstance(payload, preemption.PreemptionPayload)
        self.assertEqual([VICTIM_1, VICTIM_2],
                         [v.uuid for v in payload.victims])
        self.assertEqual(1400.5, payload.total_cost)
        self.assertEqual('compute-1', payload.host)

    def test_only_terminated_victims_are_listed(self):
        plan = types.SimpleNamespace(
            host='compute-1', victims=[(_inst(VICTIM_1, 'a'), 1),
                                       (_inst(VICTIM_2, 'b'), 2)])
        rec = Recorder()
        conf = types.SimpleNamespace(
            host='s', notifications=types.SimpleNamespace(
                notification_format='versioned'))
        with mock.patch.object(actions, 'CONF', conf), \
                mock.patch.object(actions.rpc, 'get_versioned_notifier',
                                  side_effect=lambda pid: rec.prepare(pid)):
            actions.notify({}, plan, SERVER, 'r', 'stop',
                           terminated={VICTIM_2})
            conf.notifications.notification_format = 'unversioned'
            actions.notify({}, plan, SERVER, 'r', 'stop')
        [sent] = rec.sent
        payload = base.from_primitive(sent['payload'])
        self.assertEqual([VICTIM_2], [v.uuid for v in payload.victims])
        self.assertEqual(2.0, payload.total_cost)
        self.assertEqual('opie-scheduler:s', sent['publisher_id'])

    def test_bad_market_fields_are_refused(self):
        self.assertRaises(ValueError, market.market_notification,
                          market.EVENT_NOTICE,
                          {'server_uuid': VICTIM_1, 'project_id': PROJECT,
                           'kind': 'cheap', 'reason': 'r', 'action': 'delete',
                           'deadline': '2026-11-25T19:10:00Z'}, 'h')
        self.assertRaises(KeyError, market.market_notification,
                          'opie.market.other', {}, 'h')


class ObjectVersionsTest(testtools.TestCase):

    def test_versions(self):
        classes = {
            name: [cls] for name, cls in (
                (c.obj_name(), c) for c in _all_classes())}
        checker = ovo_fixture.ObjectVersionChecker(obj_classes=classes)
        expected, actual = checker.test_hashes(EXPECTED)
        self.assertEqual(expected, actual,
                         'Fields or remotable methods of an object changed: '
                         'bump its version (and its hash here), regenerate '
                         'the samples')

    def test_every_object_is_in_our_namespace(self):
        for cls in _all_classes():
            self.assertEqual('opie_sched', cls.OBJ_PROJECT_NAMESPACE)
            self.assertEqual('opie_object', cls.OBJ_SERIAL_NAMESPACE)


def _all_classes():
    return [cls for module in (base, preemption, market)
            for cls in vars(module).values()
            if isinstance(cls, type) and issubclass(cls, base.OpieObject)
            and 'VERSION' in vars(cls)]


if __name__ == '__main__':
    write_samples()
