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
"""Issue 10's race on the real cloud: concurrent normal boots onto
preemptible-full hosts, with several scheduler workers.

The cloud must run opie-scheduler with ``[scheduler] workers`` >= 2, and
should run it on several scheduler hosts sharing a tooz backend (the
runner starts the devcloud with ``--scheduler-workers 2
--scheduler-hosts 2``: two opie-scheduler process trees of two workers,
their locks on Redis); the test sees the cloud only through its APIs and
cannot check that itself.
"""

import concurrent.futures
import math
import time

from tempest import config
from tempest.lib.common.utils import data_utils
from tempest.lib import decorators

from opie_sched_tempest_plugin import base

CONF = config.CONF


def needed_victims(base_used, preemptibles, normals, capacity, pre_size,
                   normal_size):
    """The fewest preemptible servers of ``pre_size`` a host must lose so
    that ``base_used`` + the remaining preemptibles + ``normals`` normal
    servers of ``normal_size`` fit in ``capacity`` (dicts by standard
    class; usage counts normal and preemptible classes together).
    """
    need = 0
    for rc, cap in capacity.items():
        if pre_size.get(rc, 0) <= 0:
            continue
        over = (base_used.get(rc, 0) + preemptibles * pre_size[rc]
                + normals * normal_size.get(rc, 0) - cap)
        need = max(need, int(math.ceil(over / float(pre_size[rc]))))
    return min(max(need, 0), preemptibles)


def describe(servers, fill, normals, host):
    """Count of a host's servers by kind, status and task state."""
    seen = {}
    for server_id, server in servers.items():
        if server['OS-EXT-SRV-ATTR:hypervisor_hostname'] != host:
            continue
        kind = ('preemptible' if server_id in fill else
                'race' if server_id in normals else 'other')
        key = '%s %s/%s' % (kind, server['status'],
                            server.get('OS-EXT-STS:task_state'))
        seen[key] = seen.get(key, 0) + 1
    return ', '.join('%s: %d' % kv for kv in sorted(seen.items()))


class ConcurrentPreemptionRaceTest(base.OpieBaseTest):
    """``[opie] race_servers`` (30) normal servers booted at once by
    threads onto a cloud filled with preemptible servers: all ACTIVE, none
    in ERROR, every host's full state within capacity once they are
    ACTIVE, and no victim more than each host needed.
    """

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.opie.preemption:
            raise cls.skipException('[opie] preemption = false')

    @classmethod
    def resource_setup(cls):
        super().resource_setup()
        cls.normal, cls.preemptible = cls.flavor_pair()

    def _boot_one(self, creds, name):
        conn = self._connect(creds)
        self.call(conn, 'POST', '/servers', '2.37', json={'server': {
            'name': name, 'flavorRef': self.normal.id,
            'imageRef': self.image_id, 'networks': 'none'}})

    def _settle(self, conn, ids, timeout):
        """Wait until no server of ``ids`` is building; ``{id: status}``."""
        deadline = time.monotonic() + timeout
        while True:
            servers = self.server_map(conn)
            status = {i: servers[i].status if i in servers else 'GONE'
                      for i in ids}
            if all(s in ('ACTIVE', 'ERROR', 'GONE')
                   for s in status.values()) or \
                    time.monotonic() > deadline:
                return status
            time.sleep(2)

    @decorators.idempotent_id('9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c04')
    def test_concurrent_normal_boots_on_full_cloud(self):
        count = CONF.opie.race_servers
        before = self.hosts()
        normal_room = sum(
            base.fits(self.normal.size,
                      {rc: h['capacity'][rc] - h['used'].get(rc, 0)
                       for rc in h['capacity']})
            for h in before.values())
        if normal_room < count:
            raise self.skipException(
                'the cloud holds %d normal servers of %s, the race boots '
                '%d: give it more or larger computes, or lower [opie] '
                'race_servers' % (normal_room, self.normal.name, count))
        fill, placed = self.fill_with_preemptibles(self.primary,
                                                   self.preemptible)
        prefix = data_utils.rand_name('opie-race')
        names = ['%s-%02d' % (prefix, i) for i in range(count)]
        creds = self.os_alt.credentials
        with concurrent.futures.ThreadPoolExecutor(count) as pool:
            futures = [pool.submit(self._boot_one, creds, n) for n in names]
            errors = [str(f.exception()) for f in futures if f.exception()]
        ids = self.find_servers(self.alt, prefix + '-[0-9]+', len(futures)
                                - len(errors)) if len(errors) < count else []
        self.addCleanup(self.delete_and_wait, self.alt, ids)
        self.assertEqual([], errors, 'boot requests refused')
        status = self._settle(self.alt, ids, CONF.opie.build_timeout)
        counts = {s: list(status.values()).count(s)
                  for s in sorted(set(status.values()))}
        self.assertEqual({'ACTIVE': count}, counts,
                         'normal servers by status')

        # Full state by instances: every server still present on a host,
        # normal or preemptible, counted with its flavor's size.
        _, body = self.call(self.admin, 'GET',
                            '/servers/detail?all_tenants=1', '2.47')
        everything = {s['id']: s for s in body['servers']}
        hosts = self.hosts()
        where = {i: s['OS-EXT-SRV-ATTR:hypervisor_hostname']
                 for i, s in everything.items()}
        victims = [i for i in fill if i not in everything]
        load = {name: dict.fromkeys(base.STANDARD, 0) for name in hosts}
        others = {name: dict.fromkeys(base.STANDARD, 0) for name in hosts}
        for server_id, server in everything.items():
            if where.get(server_id) not in load:
                continue
            size = base.flavor_size(dict(server['flavor'], **{
                'OS-FLV-EXT-DATA:ephemeral':
                    server['flavor'].get('ephemeral', 0)}))
            for rc, amount in size.items():
                load[where[server_id]][rc] += amount
                if server_id not in fill and server_id not in ids:
                    others[where[server_id]][rc] += amount
        for name, host in hosts.items():
            for rc, cap in host['capacity'].items():
                self.assertLessEqual(
                    load[name][rc], cap, 'host %s over capacity in %s by '
                    'its instances: %s; Placement usage %s' % (
                        name, rc, describe(everything, fill, ids, name),
                        host['used']))

        # Every victim needed: per host, exactly the fewest victims that
        # make room for the normal servers that landed there.
        report = {}
        for name, host in hosts.items():
            pre_here = [i for i in fill if placed[i] == name]
            normals_here = [i for i in ids if where.get(i) == name]
            report[name] = {
                'victims': len([i for i in pre_here if i in victims]),
                'needed': needed_victims(
                    others[name], len(pre_here), len(normals_here),
                    host['capacity'], self.preemptible.size,
                    self.normal.size)}
        self.assertEqual({n: r['needed'] for n, r in report.items()},
                         {n: r['victims'] for n, r in report.items()},
                         'victims per host (expected: the fewest needed)')
        for victim in victims:
            actions = self.actions(self.primary, victim)
            self.assertEqual(1, actions.count(base.PREEMPT_ACTION),
                             'preempt actions of victim %s: %s'
                             % (victim, actions))

        # Full state by Placement, once the victims' allocations are
        # released (a deleted instance's allocation is removed right after
        # its record, asynchronously).
        deadline = time.monotonic() + 60
        while any(self.placement(self.admin, '/allocations/%s' % v)[
                'allocations'] for v in victims):
            if time.monotonic() > deadline:
                self.fail('allocations of deleted victims still held '
                          'after 60 s')
            time.sleep(1)
        self.assert_within_capacity()
