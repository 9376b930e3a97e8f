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
"""opie-repacker's consolidation strategies on a real cloud.

Each scenario lays servers out on two empty compute hosts (admin, forced
hosts), runs one period of opie-repacker with a strategy in dry-run mode
(``[opie] repacker_command`` with ``--once --dry-run`` and a
configuration file naming the strategy and a budget), then one real
period, and checks through the compute API only:

* the dry run planned the move the strategy's paper calls for, and moved
  nothing (same hosts, no live migration of the scenario's servers);
* the real period live-migrated exactly the planned servers (within the
  budget) to the planned hosts: each is ACTIVE on its destination with a
  completed live migration from its source, and the scenario's other
  servers stayed where they were.

Strategies: ``p2p`` (thesis Paper II: a host at most 40 % loaded sends its
servers over the overlay to a more loaded host), ``gossip`` (thesis
Paper III: a pair of hosts whose servers fit in one host merges), and
``tabu`` (Themis / Merkat tabu-search rebalancing: two preemptible
servers sharing one host by their bids while another host is idle are
under-served; one moves). ``tabu`` reads the bids from the market API and
runs when the market does (``[opie] market``).
"""

import math
import os
import re
import shlex
import subprocess
import tempfile
import time

from tempest import config
from tempest.lib.common.utils import data_utils
from tempest.lib import decorators

from opie_sched_tempest_plugin import base
from opie_sched_tempest_plugin import market_client

CONF = config.CONF

#: One line of a plan table (``planner.format_plan``): number, server id,
#: name, kind, source, destination, reason, score, MB to transfer.
PLAN_LINE = re.compile(
    r'^\d+\s+(?P<server>[0-9a-f-]{36})\s+.*?\s*(?P<kind>pre|norm)\s+'
    r'(?P<source>\S+)\s+(?P<destination>\S+)\s+(?P<reason>\S+)\s+'
    r'[0-9.]+\s+[0-9]+\s*$')
#: Exit status of opie-repacker --once when another replica holds the lock.
LOCKED = 3
#: Migrations one real period may make in these scenarios.
BUDGET = 2
#: Bids of the tabu scenario, currency per hour (both above any reserve).
HIGH_BID = '2'
LOW_BID = '1'


class RepackerStrategiesTest(base.OpieBaseTest):
    """p2p, gossip and tabu: a dry-run plan, then one real period of live
    migrations as planned.
    """

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.opie.repacker:
            raise cls.skipException(
                '[opie] repacker = false: opie-repacker cannot be run '
                'against this cloud')
        if not CONF.compute_feature_enabled.live_migration:
            raise cls.skipException('live migration is not available')

    @classmethod
    def resource_setup(cls):
        super().resource_setup()
        if not CONF.opie.repacker_command:
            raise AssertionError('[opie] repacker = true but '
                                 'repacker_command is not set')
        cls.unlimited_quota(cls.os_admin.credentials.project_id)

    # -- the cloud ---------------------------------------------------------

    def _compute_hosts(self):
        """``{service host: {'node', 'vcpus', 'memory_mb',
        'used_vcpus'}}`` of the enabled, up compute hosts: the node as
        :meth:`base.OpieBaseTest.hosts` gives it, Placement capacity
        (total - reserved) and vCPUs in use (normal and preemptible).
        """
        _, body = self.call(self.admin, 'GET', '/os-hypervisors/detail',
                            '2.53')
        nodes = {h['hypervisor_hostname']: h['service']['host']
                 for h in body['hypervisors']
                 if h['state'] == 'up' and h['status'] == 'enabled'}
        out = {}
        for name, host in self.hosts().items():
            if name not in nodes:
                continue
            raw = self.placement(self.admin, '/resource_providers/%s/'
                                 'inventories' % host['uuid'])['inventories']
            used = host['used']
            out[nodes[name]] = {
                'node': name,
                'vcpus': raw['VCPU']['total'] - raw['VCPU']['reserved'],
                'memory_mb': raw['MEMORY_MB']['total']
                - raw['MEMORY_MB']['reserved'],
                'used_vcpus': used.get('VCPU', 0)
                + used.get(base.PREEMPTIBLE['VCPU'], 0)}
        return out

    def _two_empty_hosts(self):
        """The first two compute hosts (by name) running no server, with
        their sizes; skips when the cloud has fewer.
        """
        hosts = self._compute_hosts()
        empty = sorted(h for h, info in hosts.items()
                       if info['used_vcpus'] == 0)
        if len(empty) < 2:
            raise self.skipException(
                'the scenario needs two enabled compute hosts without '
                'servers; this cloud has %d (of %d)'
                % (len(empty), len(hosts)))
        return empty[0], empty[1], hosts

    def _flavor(self, vcpus, ram, preemptible_twin=None):
        """A public flavor of ``vcpus`` vCPU, ``ram`` MB and 1 GB (admin,
        deleted at cleanup); with ``preemptible_twin`` (a preemptible
        :class:`base.Flavor`), a preemptible one made like it: its extra
        specs with the preemptible amounts of this size.
        """
        _, body = self.call(self.admin, 'POST', '/flavors', json={
            'flavor': {'name': data_utils.rand_name('opie-repack'),
                       'vcpus': vcpus, 'ram': ram, 'disk': 1,
                       'os-flavor-access:is_public': True}})
        flavor = body['flavor']
        self.addCleanup(self.call, self.admin, 'DELETE',
                        '/flavors/%s' % flavor['id'])
        size = {'VCPU': vcpus, 'MEMORY_MB': ram, 'DISK_GB': 1}
        if preemptible_twin is not None:
            _, body = self.call(self.admin, 'GET', '/flavors/%s/'
                                'os-extra_specs' % preemptible_twin.id)
            specs = dict(body['extra_specs'])
            for rc, amount in size.items():
                specs['resources:%s' % base.PREEMPTIBLE[rc]] = str(amount)
            self.call(self.admin, 'POST', '/flavors/%s/os-extra_specs'
                      % flavor['id'], json={'extra_specs': specs})
        return base.Flavor(flavor['id'], flavor['name'], size)

    def _boot_on(self, *requests):
        """Servers forced on hosts (admin), one request per ``(host,
        flavor, count, metadata)``, all booted at once; their ids per
        request once all are ACTIVE where they were forced.
        """
        groups = [self.boot(self.admin, flavor, count, metadata=metadata,
                            availability_zone='nova:%s' % host, wait=False)
                  for host, flavor, count, metadata in requests]
        self.wait_for_status(self.admin, sum(groups, []), 'ACTIVE')
        where = self._where(sum(groups, []))
        for ids, (host, _f, _c, _m) in zip(groups, requests):
            self.assertEqual(dict.fromkeys(ids, host),
                             {i: where.get(i) for i in ids},
                             'servers not on the host they were forced to')
        return groups

    def _where(self, ids):
        """``{id: compute host}`` (admin view)."""
        servers = self.server_map(self.admin, all_projects=True)
        return {i: servers[i].compute_host for i in ids if i in servers}

    def _live_migrations(self, ids):
        """``{id: [(status, source, destination)]}`` of the servers' live
        migrations.
        """
        _, body = self.call(self.admin, 'GET',
                            '/os-migrations?migration_type=live-migration',
                            '2.59')
        out = {i: [] for i in ids}
        for m in body['migrations']:
            if m['instance_uuid'] in out:
                out[m['instance_uuid']].append(
                    (m['status'], m['source_compute'], m['dest_compute']))
        return out

    # -- opie-repacker -----------------------------------------------------

    def _repacker(self, strategy, dry_run):
        """Run one period of opie-repacker with ``strategy`` and a budget
        of :data:`BUDGET`; its standard output. Retries while another
        replica holds the lock.
        """
        fd, overlay = tempfile.mkstemp(prefix='opie-repacker-',
                                       suffix='.conf')
        self.addCleanup(os.unlink, overlay)
        with os.fdopen(fd, 'w') as f:
            f.write('[opie_repacker]\nstrategy = %s\nmax_migrations = %d\n'
                    'dry_run = %s\npoll_interval = 1\n'
                    % (strategy, BUDGET, dry_run))
        argv = shlex.split(CONF.opie.repacker_command) + [
            '--config-file', overlay, '--once'] + (
            ['--dry-run'] if dry_run else [])
        deadline = time.monotonic() + CONF.opie.repacker_timeout
        while True:
            proc = subprocess.run(
                argv, stdin=subprocess.DEVNULL, capture_output=True,
                text=True, timeout=CONF.opie.repacker_timeout)
            if proc.returncode != LOCKED or time.monotonic() > deadline:
                break
            time.sleep(2)
        self.assertEqual(0, proc.returncode, '%s exited %d:\n%s\n%s' % (
            ' '.join(argv), proc.returncode, proc.stdout[-3000:],
            proc.stderr[-3000:]))
        return proc.stdout

    def _plan(self, text):
        """``[(server, source, destination, reason)]`` of a printed plan."""
        moves = []
        for line in text.splitlines():
            match = PLAN_LINE.match(line)
            if match:
                moves.append((match['server'], match['source'],
                              match['destination'], match['reason']))
        self.assertIn('budget left:', text, 'no plan printed:\n%s' % text)
        return moves

    def _dry_run_then_period(self, strategy, ids):
        """The dry-run plan, checked to have moved nothing, then one real
        period, checked to have moved exactly the planned servers of
        ``ids`` where the plan said. Returns ``(plan, its text)``.
        """
        before = self._where(ids)
        text = self._repacker(strategy, dry_run=True)
        base.LOG.info('opie-repacker %s, dry run:\n%s', strategy, text)
        plan = self._plan(text)
        self.assertEqual(before, self._where(ids),
                         'the dry run moved servers')
        self.assertEqual(dict.fromkeys(ids, []),
                         self._live_migrations(ids),
                         'the dry run live-migrated servers')
        self.assertLessEqual(len(plan), BUDGET, text)
        ours = [m for m in plan if m[0] in before]
        self._repacker(strategy, dry_run=False)
        after = self._where(ids)
        expected = dict(before)
        for server, _source, destination, _reason in ours:
            expected[server] = destination
        self.assertEqual(expected, after, 'servers not where the dry-run '
                         'plan put them:\n%s' % text)
        migrations = self._live_migrations(ids)
        for server, source, destination, _reason in ours:
            self.assertEqual([('completed', source, destination)],
                             migrations[server], server)
        servers = self.server_map(self.admin, all_projects=True)
        self.assertEqual(['ACTIVE'] * len(ids),
                         [servers[i].status for i in ids])
        return plan, text

    def _consolidation_layout(self):
        """Host ``a``: one 1-vCPU server (well under 40 % loaded); host
        ``b``: half its vCPUs taken by 1-vCPU servers. Returns ``(a, b,
        lone server, b's servers)``.
        """
        a, b, hosts = self._two_empty_hosts()
        flavor = self._flavor(1, 256)
        half = int(math.ceil(hosts[b]['vcpus'] / 2.0))
        if hosts[a]['vcpus'] < 4 or half + 1 > 0.9 * hosts[b]['vcpus']:
            raise self.skipException('hosts of at least 4 vCPUs needed')
        lone, busy = self._boot_on((a, flavor, 1, None),
                                   (b, flavor, half, None))
        return a, b, lone[0], busy

    # -- the scenarios -----------------------------------------------------

    @decorators.idempotent_id('3e7a9c51-2b8d-4f06-a1c4-5d9e0f7b6a21')
    def test_p2p_moves_underloaded_host_to_more_loaded(self):
        """Paper II §3.3: host ``a`` (1 server, at most 40 % loaded) finds
        the more loaded host ``b`` over the overlay; ``b`` (50 %) stays.
        """
        a, b, lone, busy = self._consolidation_layout()
        plan, text = self._dry_run_then_period('p2p', [lone] + busy)
        self.assertIn((lone, a, b, 'underload'), plan, text)
        self.assertEqual([], [m for m in plan if m[0] in busy], text)

    @decorators.idempotent_id('8c2f4d60-7e1b-4a93-b5d2-0f6a9e3c1b42')
    def test_gossip_merges_a_pair_that_fits_one_host(self):
        """Paper III §3.3 (Merge+Imb): hosts ``a`` and ``b`` fit in one
        host under α, so the pair merges; the fewest moves carry ``a``'s
        server to ``b``.
        """
        a, b, lone, busy = self._consolidation_layout()
        plan, text = self._dry_run_then_period('gossip', [lone] + busy)
        self.assertEqual([(lone, a, b, 'merge')],
                         [m for m in plan if m[0] in [lone] + busy], text)

    @decorators.idempotent_id('c51e8a27-9d3f-4b60-8e1a-2f7c4d9b0e63')
    def test_tabu_spreads_servers_sharing_a_host(self):
        """Themis §III.B / Merkat §3.1: two preemptible servers, each
        asking for all of host ``a``'s vCPUs, share them by their bids
        (2:1) while the other hosts are idle. Against the pool seen as
        one host (where each would get its whole flavor) both are
        under-served, the low bidder most: it is the one that moves, to
        another host, and the allocation error falls to 0.
        """
        if not CONF.opie.market:
            raise self.skipException('[opie] market = false: the tabu '
                                     'strategy reads bids from the market')
        endpoint = CONF.opie.market_endpoint or \
            self.admin.session.get_endpoint(
                service_type=CONF.opie.market_service_type,
                interface=CONF.compute.endpoint_type.replace('URL', ''))
        market = market_client.MarketClient(self.admin, endpoint)
        _normal, twin = self.flavor_pair()
        a, _b, hosts = self._two_empty_hosts()
        heavy = self._flavor(hosts[a]['vcpus'], 256, preemptible_twin=twin)
        node = hosts[a]['node']
        room = self.preemptible_room(heavy.size,
                                     {node: self.hosts()[node]})
        if room < 2:
            raise self.skipException(
                'Placement admits %d preemptible servers of %d vCPU on %s: '
                'the scenario needs 2 on one host (preemptible vCPUs '
                'overcommitted 2:1)' % (room, heavy.size['VCPU'], a))
        status, body = market.credit(self.os_admin.credentials.project_id,
                                     '100000', 'tempest repacker')
        self.assertEqual(201, status, body)
        high, low = self._boot_on((a, heavy, 1, {'opie:bid': HIGH_BID}),
                                  (a, heavy, 1, {'opie:bid': LOW_BID}))
        ids = high + low
        # The market prices a server from its first period on.
        deadline = time.monotonic() + CONF.opie.market_max_wait
        while True:
            status, body = market.shares()
            self.assertEqual(200, status, body)
            priced = {row['server_id'] for row in body.get('shares', [])}
            if set(ids) <= priced:
                break
            if time.monotonic() > deadline:
                self.fail('the market priced %s, not both servers %s, '
                          'after %d s' % (sorted(priced & set(ids)), ids,
                                          CONF.opie.market_max_wait))
            time.sleep(2)
        plan, text = self._dry_run_then_period('tabu', ids)
        ours = [m for m in plan if m[0] in ids]
        self.assertEqual(1, len(ours), text)
        server, source, destination, reason = ours[0]
        self.assertEqual((low[0], a, 'allocation_error'),
                         (server, source, reason), text)
        self.assertNotEqual(a, destination, text)
        where = self._where(ids)
        self.assertNotEqual(where[ids[0]], where[ids[1]],
                            'the two servers still share a host')
