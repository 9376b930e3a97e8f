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
"""Automatic restore (persistent requests, issue 32 item 1) on a running
cloud, as the victim's owner sees it.

opie-scheduler is restarted for the class with the reconciler every
``[opie] chaos_reconciler_interval`` seconds (the period *P* below) and
restored afterwards (needs ``[opie] devcloud_state_dir``, as the chaos
and headroom scenarios).

The cloud's preemptible room is filled exactly (Placement's inventories
and usages) with servers of a twin of the preemptible flavor whose
behaviour is ``shelve`` and which asks for ``opie:restore=auto``; a normal
server of another project then preempts one of them, which is shelved and
offloaded. While the normal server holds the room (Placement shows no
free room on any host, full state and preemptible inventory alike) the
victim stays ``SHELVED_OFFLOADED`` for three periods, with no unshelve
tried. Once the normal server is deleted, the reconciler's next round
asks Nova to unshelve it: the request (its ``unshelve`` instance action)
comes within one period of the room's return, the victim is ACTIVE again
with the same UUID, on the host where the room returned, every host
within capacity, and its owner reads ``opie:restore_status`` in its
metadata.

The devcloud's Neutron binds no port (ML2 without a mechanism driver:
its servers boot with ``networks: none``), so the same-port half of the
guarantee is shown on the in-process Nova with its Neutron fixture
(tests/functional/test_restore.py). Figures are logged and appended to
``[opie] chaos_report`` when it is set.
"""

import datetime
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
#: Flavor extra specs of the restoring flavor (opie_sched's
#: ``victim_state``; repeated here: the tests import no service code).
BEHAVIOR_SPEC = 'opie:interruption_behavior'
RESTORE_SPEC = 'opie:restore'
#: Server metadata telling the owner what became of a restored server.
RESTORE_STATUS_KEY = 'opie:restore_status'
UNSHELVE = 'unshelve'


def _epoch(text):
    """Seconds since the epoch of an instance action's ``start_time``
    (nova's ISO 8601, UTC, with or without fractions).
    """
    text = text.rstrip('Z').split('+')[0]
    fmt = '%Y-%m-%dT%H:%M:%S.%f' if '.' in text else '%Y-%m-%dT%H:%M:%S'
    return datetime.datetime.strptime(text, fmt).replace(
        tzinfo=datetime.timezone.utc).timestamp()


class RestoreTest(base.OpieBaseTest):
    """A shelved victim waits while there is no room and is unshelved,
    the same server, within one reconciler period of the room's return.
    """

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.opie.preemption:
            raise cls.skipException('[opie] preemption = false')
        if not CONF.opie.devcloud_state_dir:
            raise cls.skipException(
                '[opie] devcloud_state_dir is unset: the restore scenario '
                'restarts opie-scheduler with its reconciler period')

    @classmethod
    def resource_setup(cls):
        super().resource_setup()
        cls.normal, cls.preemptible = cls.flavor_pair()
        cls.restoring = cls.restoring_flavor()
        cls.period = CONF.opie.chaos_reconciler_interval or 5
        cls.faults = chaos.Faults(CONF.opie.devcloud_state_dir)
        cls.schedulers = cls.faults.services(SCHEDULER)
        overlay = cls.faults.overlay('restore-' + SCHEDULER, {
            'opie_reconciler': {'interval': cls.period}})
        for name in cls.schedulers:
            argv = cls.faults._service(name)['argv']
            if overlay in argv:
                argv = argv[:argv.index(overlay) - 1]
            cls.addClassResourceCleanup(cls.restart_scheduler, name, argv,
                                        ())
            cls.restart_scheduler(name, argv, ('--config-file', overlay))

    @classmethod
    def restoring_flavor(cls):
        """A public twin of the preemptible flavor (its size and extra
        specs) whose behaviour is ``shelve`` and which asks for automatic
        restore; deleted by the class's cleanup.
        """
        _, body = cls.call(cls.admin, 'GET', '/flavors/%s' %
                           cls.preemptible.id)
        twin = body['flavor']
        _, body = cls.call(cls.admin, 'GET', '/flavors/%s/os-extra_specs'
                           % cls.preemptible.id)
        specs = dict(body['extra_specs'],
                     **{BEHAVIOR_SPEC: 'shelve', RESTORE_SPEC: 'auto'})
        _, body = cls.call(cls.admin, 'POST', '/flavors', json={'flavor': {
            'name': data_utils.rand_name('restore'),
            'vcpus': twin['vcpus'], 'ram': twin['ram'],
            'disk': twin['disk'],
            'OS-FLV-EXT-DATA:ephemeral':
                twin.get('OS-FLV-EXT-DATA:ephemeral') or 0,
            'os-flavor-access:is_public': True}})
        flavor = body['flavor']
        cls.addClassResourceCleanup(cls.call, cls.admin, 'DELETE',
                                    '/flavors/%s' % flavor['id'],
                                    ok=(202, 404))
        cls.call(cls.admin, 'POST', '/flavors/%s/os-extra_specs'
                 % flavor['id'], json={'extra_specs': specs})
        made = base.Flavor(flavor['id'], flavor['name'],
                           base.flavor_size(flavor))
        if made.size != cls.preemptible.size:
            raise AssertionError('the restoring flavor %s is not the size '
                                 'of %s' % (made, cls.preemptible))
        return made

    @classmethod
    def restart_scheduler(cls, name, argv, extra):
        watch = cls.faults.watch(name)
        cls.faults.restart(name, extra, argv=argv)
        for _ in range(cls.faults.settings.scheduler_workers):
            watch.wait_for('Starting scheduler node', 120, interval=0.2)

    # -- reads ---------------------------------------------------------------

    def metadata(self, conn, server_id):
        _, body = self.call(conn, 'GET', '/servers/%s/metadata' % server_id)
        return body['metadata']

    def action_starts(self, conn, server_id, action):
        """Start times (seconds since the epoch) of the server's instance
        actions named ``action``.
        """
        _, body = self.call(conn, 'GET', '/servers/%s/os-instance-actions'
                            % server_id, '2.21')
        return sorted(_epoch(a['start_time'])
                      for a in body['instanceActions']
                      if a['action'] == action)

    def terminated_at(self, server_id):
        """When the compute finished deleting the server (seconds since
        the epoch; the finish time of its ``compute_terminate_instance``
        event, whole seconds), read as the admin (events need it before
        microversion 2.51).
        """
        _, body = self.call(self.admin, 'GET', '/servers/%s/'
                            'os-instance-actions' % server_id, '2.21')
        [delete] = [a for a in body['instanceActions']
                    if a['action'] == 'delete']
        _, body = self.call(self.admin, 'GET', '/servers/%s/'
                            'os-instance-actions/%s' % (
                                server_id, delete['request_id']), '2.21')
        [finish] = [e['finish_time'] for e in body['instanceAction'][
            'events'] if e['event'] == 'compute_terminate_instance']
        self.assertIsNotNone(finish, 'the delete of %s did not finish'
                             % server_id)
        return _epoch(finish)

    def room(self):
        """``(hosts, {host: servers of the flavor's size that fit})``,
        the room as Placement judges it: per host the smaller of the full
        state's room (normal and preemptible usage against the standard
        capacity) and the preemptible inventory's room; only hosts with
        room are listed.
        """
        hosts = self.hosts()
        size = self.restoring.size
        room = {}
        for name, host in hosts.items():
            pre_free = {rc: host['preemptible_capacity'].get(rc, 0)
                        - host['used'].get(base.PREEMPTIBLE[rc], 0)
                        for rc in base.STANDARD}
            n = min(base.fits(size, self.full_free(host)),
                    base.fits(size, pre_free))
            if n:
                room[name] = n
        return hosts, room

    def restore_lines(self, watch):
        return [line for line in watch.lines() if 'Restore' in line]

    def report(self, figures):
        LOG.info('restore figures: %s', json.dumps(figures))
        path = getattr(CONF.opie, 'chaos_report', None)
        if path:
            with open(path, 'a') as f:
                f.write('restore %s\n' % json.dumps(figures))

    # -- the scenario --------------------------------------------------------

    @decorators.idempotent_id('a7c3e1f0-52b4-4d6e-9f18-3b2d4c6e8a01')
    def test_victim_restored_when_room_returns(self):
        start = time.monotonic()
        watch = self.faults.watch(*self.schedulers)
        fill, placed = self.fill_with_preemptibles(self.primary,
                                                   self.restoring)
        hosts, room = self.room()
        self.assertEqual({}, room, 'room left after the fill')
        # a normal server (another project's) preempts one of them
        (normal,) = self.boot(self.alt, self.normal)
        normal_host = self.placement_of([normal])[normal]
        victim = None
        deadline = time.monotonic() + CONF.opie.build_timeout
        while victim is None:
            servers = self.server_map(self.primary)
            gone = [i for i in fill if i not in servers]
            self.assertEqual([], gone, 'fill servers deleted (the '
                             'behaviour is shelve)')
            shelved = [i for i in fill
                       if servers[i].status == 'SHELVED_OFFLOADED']
            self.assertLessEqual(len(shelved), 1, 'victims of one normal '
                                 'boot: %s' % shelved)
            if shelved:
                victim = shelved[0]
                break
            self.assertLess(time.monotonic(), deadline,
                            'no fill server shelved and offloaded within '
                            '%d s' % CONF.opie.build_timeout)
            time.sleep(0.5)
        shelved_at = time.monotonic()
        self.assertIn(base.PREEMPT_ACTION, self.actions(self.primary,
                                                        victim))
        # no room: the victim waits through three rounds, no unshelve
        # tried; the cloud's own Placement says there is no room
        while time.monotonic() < shelved_at + 3 * self.period + 1:
            hosts, room = self.room()
            server = self.server_map(self.primary)[victim]
            if room or server.status != 'SHELVED_OFFLOADED':
                self.fail('while the normal server holds the room: victim '
                          '%s %s on %s, room by Placement %s; scheduler: '
                          '%s; usage: %s' % (
                              victim, server.status,
                              self.placement_of([victim]).get(victim), room,
                              self.restore_lines(watch),
                              {n: h['used'] for n, h in hosts.items()}))
            time.sleep(1)
        self.assertEqual([], self.action_starts(self.primary, victim,
                                                UNSHELVE),
                         'an unshelve was tried without room')
        waited = time.monotonic() - shelved_at
        # room returns on the normal server's host: when its compute has
        # finished the delete (allocations removed, the host's record
        # updated), the finish time of its terminate event
        self.call(self.alt, 'DELETE', '/servers/%s' % normal)
        while normal in self.server_map(self.alt):
            time.sleep(0.2)
        room_at = self.terminated_at(normal)
        room_mono = time.monotonic() - (time.time() - room_at)
        deadline = room_mono + self.period + CONF.opie.build_timeout
        while True:
            server = self.server_map(self.primary)[victim]
            if server.status == 'ACTIVE':
                break
            self.assertNotEqual('ERROR', server.status, server.fault)
            self.assertLess(time.monotonic(), deadline,
                            'victim %s still %s %d s after the room '
                            'returned; scheduler: %s' % (
                                victim, server.status,
                                deadline - room_mono,
                                self.restore_lines(watch)))
            time.sleep(0.2)
        active_s = time.monotonic() - room_mono
        # the same server, where the room returned, no host over capacity
        self.assertEqual(victim, server.id)
        self.assertEqual(normal_host, self.placement_of([victim])[victim])
        self.assert_within_capacity()
        # asked for within one period: the round after the room's return
        # (rounds start on a 1 s tick; action times are whole seconds)
        unshelves = self.action_starts(self.primary, victim, UNSHELVE)
        self.assertEqual(1, len(unshelves), 'unshelves of the victim (one '
                         'futile, refused for want of room, would be a '
                         'second)')
        asked_s = unshelves[0] - room_at
        self.assertLessEqual(asked_s, self.period + 2,
                             'unshelve asked %.1f s after the room returned '
                             '(period %d s)' % (asked_s, self.period))
        # the owner is told, at the next round
        deadline = time.monotonic() + 3 * self.period + 30
        while True:
            status = self.metadata(self.primary, victim).get(
                RESTORE_STATUS_KEY, '')
            if status.startswith('Restored at '):
                break
            self.assertLess(time.monotonic(), deadline,
                            'no %s in the metadata of %s: %r' % (
                                RESTORE_STATUS_KEY, victim, status))
            time.sleep(1)
        self.assertIn('after 1 interruption', status)
        # the other fill servers never moved
        now = self.placement_of(fill)
        self.assertEqual({i: placed[i] for i in fill if i != victim},
                         {i: now[i] for i in fill if i != victim})
        self.report({'period_s': self.period,
                     'servers': len(fill),
                     'waited_without_room_s': round(waited, 1),
                     'unshelve_asked_after_room_s': round(asked_s, 1),
                     'active_after_room_s': round(active_s, 1),
                     'scenario_s': round(time.monotonic() - start, 1)})
