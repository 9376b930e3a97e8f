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
"""Automatic restore on a running cloud (issue 32 item 1).

opie-scheduler is restarted for the class with its reconciler every
``[opie] chaos_reconciler_interval`` seconds, and restored afterwards
(needs ``[opie] devcloud_state_dir``, as the headroom and chaos
scenarios). An admin creates a preemptible flavor, the twin of the
cloud's preemptible flavor, with ``opie:interruption_behavior=shelve``
and ``opie:restore=auto`` at microversion 2.86 (nova-api validates the
opie extra specs; a malformed ``opie:restore`` is refused with 400).

The cloud is filled with servers of that flavor; a normal boot preempts
one, which is shelved and offloaded; no reconciler round restores it while
the normal server holds the room; once the normal server is deleted, the
victim is ACTIVE again, the same server (UUID), within one reconciler
period plus the unshelve, with ``unshelve`` in its instance actions and
``opie:restore_status`` in its metadata. The devcloud has no Neutron: the
ports are checked by the in-process functional test
(tests/functional/test_restore.py). Figures are logged and appended to
``[opie] chaos_report`` when it is set.
"""

import json
import time

from oslo_log import log as logging
from tempest import config
from tempest.lib.common.utils import data_utils
from tempest.lib import decorators

from opie_sched.devcloud import chaos
from opie_sched_tempest_plugin import base

CONF = config.CONF
LOG = logging.getLogger(__name__)

SCHEDULER = 'opie-scheduler'
STATUS_KEY = 'opie:restore_status'


class RestoreTest(base.OpieBaseTest):
    """A shelved victim comes back when room returns."""

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.opie.preemption:
            raise cls.skipException('[opie] preemption = false')
        if not CONF.opie.devcloud_state_dir:
            raise cls.skipException(
                '[opie] devcloud_state_dir is unset: the restore scenario '
                'restarts opie-scheduler with its reconciler interval')

    @classmethod
    def resource_setup(cls):
        super().resource_setup()
        cls.normal, twin = cls.flavor_pair()
        cls.interval = CONF.opie.chaos_reconciler_interval or 5
        _, body = cls.call(cls.admin, 'GET', '/flavors/%s' % twin.id,
                           '2.61')
        src = body['flavor']
        name = data_utils.rand_name('restore') + '.preemptible'
        _, body = cls.call(cls.admin, 'POST', '/flavors', '2.55', json={
            'flavor': {'name': name, 'vcpus': src['vcpus'],
                       'ram': src['ram'], 'disk': src['disk']}})
        flavor_id = body['flavor']['id']
        cls.addClassResourceCleanup(cls.call, cls.admin, 'DELETE',
                                    '/flavors/%s' % flavor_id, '2.1',
                                    None, None)
        specs = dict(src.get('extra_specs') or {})
        specs.update({'opie:interruption_behavior': 'shelve',
                      'opie:restore': 'auto'})
        cls.call(cls.admin, 'POST', '/flavors/%s/os-extra_specs' % flavor_id,
                 '2.86', json={'extra_specs': specs})
        cls.restoring = base.Flavor(flavor_id, name, twin.size)
        cls.faults = chaos.Faults(CONF.opie.devcloud_state_dir)
        cls.schedulers = cls.faults.services(SCHEDULER)
        overlay = cls.faults.overlay('restore-' + SCHEDULER, {
            'opie_reconciler': {'interval': cls.interval}})
        for name in cls.schedulers:
            argv = cls.faults._service(name)['argv']
            if overlay in argv:
                argv = argv[:argv.index(overlay) - 1]
            cls.addClassResourceCleanup(cls.restart_scheduler, name, argv,
                                        ())
            cls.restart_scheduler(name, argv, ('--config-file', overlay))

    @classmethod
    def restart_scheduler(cls, name, argv, extra):
        watch = cls.faults.watch(name)
        cls.faults.restart(name, extra, argv=argv)
        for _ in range(cls.faults.settings.scheduler_workers):
            watch.wait_for('Starting scheduler node', 120, interval=0.2)

    def status_of(self, ids):
        servers = self.server_map(self.primary)
        return {i: servers[i].status for i in ids if i in servers}

    def report(self, figures):
        LOG.info('restore figures: %s', json.dumps(figures))
        path = getattr(CONF.opie, 'chaos_report', None)
        if path:
            with open(path, 'a') as f:
                f.write('restore %s\n' % json.dumps(figures))

    @decorators.idempotent_id('5d8e1f2a-7c3b-4e96-a0d4-9b1c6e2f7a53')
    def test_bad_restore_value_is_refused(self):
        status, body = self.call(
            self.admin, 'POST', '/flavors/%s/os-extra_specs'
            % self.restoring.id, '2.86',
            json={'extra_specs': {'opie:restore': 'always'}}, ok=None)
        self.assertEqual(400, status, body)

    @decorators.idempotent_id('9a4c7e1b-2d5f-4b8a-8e63-1f0d3c5b7a29')
    def test_victim_restored_when_room_returns(self):
        fill, _ = self.fill_with_preemptibles(self.primary, self.restoring)
        normal = self.boot(self.admin, self.normal)
        # one victim, shelved and offloaded
        deadline = time.monotonic() + CONF.opie.build_timeout
        while True:
            shelved = [i for i, s in self.status_of(fill).items()
                       if s == 'SHELVED_OFFLOADED']
            if shelved or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        self.assertEqual(1, len(shelved), self.status_of(fill))
        (victim,) = shelved
        # no room: two reconciler periods later it still waits
        time.sleep(2 * self.interval + 1)
        self.assertEqual('SHELVED_OFFLOADED', self.status_of([victim])[victim])
        self.assertNotIn('unshelve', self.actions(self.primary, victim))
        # room returns
        self.delete_and_wait(self.admin, normal)
        freed = time.monotonic()
        deadline = freed + self.interval + CONF.opie.build_timeout
        while self.status_of([victim]).get(victim) != 'ACTIVE':
            self.assertLess(time.monotonic(), deadline,
                            'not restored: %s' % self.status_of([victim]))
            time.sleep(0.5)
        restored_s = time.monotonic() - freed
        self.assertIn('unshelve', self.actions(self.primary, victim))
        # the same server: its UUID, in its owner's project, every other
        # server of the fill untouched
        self.assertEqual({i: 'ACTIVE' for i in fill}, self.status_of(fill))
        # the next round tells the owner
        deadline = time.monotonic() + 3 * self.interval + 30
        while True:
            _, body = self.call(self.primary, 'GET',
                                '/servers/%s/metadata' % victim)
            if STATUS_KEY in body['metadata'] or \
                    time.monotonic() > deadline:
                break
            time.sleep(0.5)
        self.assertTrue(body['metadata'].get(STATUS_KEY, '').startswith(
            'Restored at '), body)
        self.assert_within_capacity()
        self.report({'restored_after_room_s': round(restored_s, 1),
                     'reconciler_interval_s': self.interval})
        self.assertLess(restored_s, self.interval + CONF.opie.build_timeout)
