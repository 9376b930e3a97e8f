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
"""The market of a default deployment priced by real demand (issue 23).

With the default ``[opie_market] capacity_source = placement`` the pool
is what Placement admits, so running servers alone never contend it: the
scarcity users feel is the boots Nova turns away. The market counts a
refused preemptible boot (ERROR, NoValidHost) as demand with its bid
(Merkat eq. 1 sums every request's bid), so the price rises above the
reserve, and the running server whose bid buys the smallest part of its
flavor -- the lowest bid *per unit held*, not the lowest total bid -- gets
the notice. The notice is server metadata, which is what Nova's metadata
service serves the guest (``meta_data.json`` key ``meta``); its deadline
is in the future when it appears. Charges are in the project's ledger,
and the account the autoscaler reads is that ledger's balance.
"""

import decimal
import time

from oslo_utils import timeutils
from tempest import config
from tempest.lib import decorators

from opie_sched_tempest_plugin import base
from opie_sched_tempest_plugin.tests.scenario import market_base

CONF = config.CONF

BID_KEY = market_base.BID_KEY
NOTICE_KEY = market_base.NOTICE_KEY
DEADLINE_KEY = market_base.DEADLINE_KEY
#: Bids, currency per hour. The big server (2V vCPU) bids more in total
#: than the low one (V vCPU) but less per vCPU.
BIG_BID = decimal.Decimal('1.5')
LOW_BID = decimal.Decimal('1')
HIGH_BID = decimal.Decimal('10')
RAM_MB = 256


class MarketRealDemandTest(market_base.MarketScenarioTest):
    """Refused demand prices the pool; the lowest bid per unit goes."""

    def _flavor(self, vcpus):
        return self.preemptible_flavor(vcpus, RAM_MB, 'opie-real')

    def _host_rooms(self, hosts):
        """Preemptible vCPUs each host admits now, and for one server
        (never more than the inventory's ``max_unit``).
        """
        rooms = []
        rc = base.PREEMPTIBLE['VCPU']
        for host in hosts.values():
            pre = (host['preemptible_capacity'].get('VCPU', 0)
                   - host['used'].get(rc, 0))
            inv = self.placement(self.admin, '/resource_providers/%s/'
                                 'inventories' % host['uuid'])
            max_unit = inv['inventories'][rc]['max_unit']
            rooms.append(min(pre, self.full_free(host)['VCPU'], max_unit))
        return rooms

    def _boot_refused(self, flavor, bid):
        """Boot one server that Nova must refuse; its id (ERROR)."""
        [sid] = self.boot(self.primary, flavor, metadata={
            BID_KEY: str(bid)}, wait=False)
        deadline = time.monotonic() + CONF.opie.build_timeout
        while True:
            server = self.primary.compute.get_server(sid)
            if server.status == 'ERROR':
                return sid, server
            self.assertNotEqual(
                'ACTIVE', server.status, 'a boot beyond the pool was '
                'admitted: the pool was not full')
            if time.monotonic() > deadline:
                self.fail('server %s still %s' % (sid, server.status))
            time.sleep(1)

    @decorators.idempotent_id('2b9f6a51-7c3e-4f0a-9d8e-5a1b2c3d4e23')
    def test_refused_demand_prices_and_outbids_lowest_per_unit(self):
        _, body = self.market.prices()
        period = body.get('period_seconds') or self.settled_period(0)[
            'period_seconds']
        hosts = self.hosts()
        rooms = self._host_rooms(hosts)
        v = min(rooms) // 2
        self.assertGreater(v, 0, 'no preemptible room: %s' % rooms)
        small, big = self._flavor(v), self._flavor(2 * v)
        status, body = self.market_admin.credit(self.primary_project,
                                                '100000', 'tempest')
        self.assertEqual(201, status, body)

        # 1. Fill the pool: the big server first (it needs a whole 2V of
        # one host), the low bidder, then high bidders until Nova turns
        # one away. Nobody out of bid while the demand fits.
        [big_id] = self.boot(self.primary, big, metadata={
            BID_KEY: str(BIG_BID)})
        [low_id] = self.boot(self.primary, small, metadata={
            BID_KEY: str(LOW_BID)})
        room = self.preemptible_room(small.size)
        highs = (self.boot(self.primary, small, room, metadata={
            BID_KEY: str(HIGH_BID)}) if room else [])
        calm = self.settled_period(time.time() + 1)
        calm_price = self.vcpu_price(calm)
        reserve = {row['pool']: row for row in calm['prices']}
        for sid in [big_id, low_id] + highs:
            self.assertIsNone(self.market.get_bid(sid)[1]['bid']['notice'])

        # 2. One more high bidder: Nova refuses it (NoValidHost).
        refused_id, refused = self._boot_refused(small, HIGH_BID)
        self.assertIn('No valid host', (refused.fault or {}).get(
            'message', ''))
        refused_at = time.time()

        # 3. The next period: the price rises above the calm one (the
        # reserve) and the big server -- the lowest bid per vCPU, not the
        # lowest total bid -- alone gets a notice with a future deadline.
        meta = {}
        deadline_wait = time.monotonic() + 2 * period + 60
        while DEADLINE_KEY not in meta:
            _, body = self.call(self.primary, 'GET',
                                '/servers/%s/metadata' % big_id)
            meta = body['metadata']
            if DEADLINE_KEY in meta:
                break
            if time.monotonic() > deadline_wait:
                self.fail('no notice for the lowest bid per unit %.0f s '
                          'after the refused boot' % (
                              time.time() - refused_at))
            time.sleep(1)
        seen = time.time()
        deadline = timeutils.parse_isotime(meta[DEADLINE_KEY]).timestamp()
        self.assertGreater(deadline, seen, 'notice with a past deadline')
        self.assertIn('contended', meta.get(NOTICE_KEY, ''))
        contended = self.settled_period(refused_at)
        contended_price = self.vcpu_price(contended)
        self.assertGreater(contended_price, calm_price,
                           'refused demand did not raise the price '
                           '(reserve rows %s)' % reserve)
        for sid in [low_id] + highs:
            self.assertIsNone(
                self.market.get_bid(sid)[1]['bid']['notice'],
                'a server bidding more per vCPU got a notice')
        # the refused request is priced, never charged nor noticed
        _, body = self.market.get_bid(refused_id)
        self.assertIsNone(body['bid']['notice'])

        # 4. The ledger: each running server charged once per period, at
        # most its bid; the refused boot never; every entry's balance
        # follows from the one before, and the account (what the
        # autoscaler reads) is the last balance.
        for _ in range(10):
            before = self.market.account()[1]['account']['balance']
            entries = self.market.ledger()[1]['ledger']
            after = self.market.account()[1]['account']['balance']
            if before == after:
                break
        self.assertEqual(before, after, 'the balance kept changing')
        charges = {}
        for e in entries:
            if e['kind'] == 'charge':
                key = (e['server_id'], e['period_start'])
                self.assertNotIn(key, charges, 'charged twice: %s' % e)
                charges[key] = -decimal.Decimal(str(e['amount']))
        charged = {sid for sid, _ in charges}
        self.assertIn(big_id, charged)
        self.assertNotIn(refused_id, charged)
        hours = decimal.Decimal(period) / 3600
        bids = {big_id: BIG_BID, low_id: LOW_BID}
        bids.update(dict.fromkeys(highs, HIGH_BID))
        cent = decimal.Decimal('0.000001')  # the ledger's rounding
        for (sid, _), amount in charges.items():
            if sid in bids:
                self.assertLessEqual(amount, bids[sid] * hours + cent)
        for prev, cur in zip(entries, entries[1:]):
            self.assertEqual(
                decimal.Decimal(str(prev['balance'])) + decimal.Decimal(
                    str(cur['amount'])), decimal.Decimal(str(cur['balance'])),
                'ledger entry %s does not follow %s' % (cur, prev))
        self.assertEqual(decimal.Decimal(str(entries[-1]['balance'])),
                         decimal.Decimal(str(after)))

        # 5. Enforced after the deadline, never before.
        while True:
            servers = self.server_map(self.primary)
            gone = (big_id not in servers or
                    servers[big_id].status == 'SHUTOFF')
            now = time.time()
            if gone:
                self.assertGreaterEqual(now, deadline - 1,
                                        'preempted before its deadline')
                break
            if now > deadline + period + 60:
                self.fail('noticed server still running %.0f s after its '
                          'deadline' % (now - deadline))
            time.sleep(2)
        servers = self.server_map(self.primary)
        self.assertEqual(['ACTIVE'] * (1 + len(highs)),
                         [servers[i].status for i in [low_id] + highs])
        print('issue 23 figures: period %d s, V=%d vCPU, %d high bidders; '
              'vCPU price calm %s -> with refused demand %s; notice %.0f s '
              'after the refusal, deadline %.0f s after it appeared' % (
                  period, v, len(highs), calm_price, contended_price,
                  seen - refused_at, deadline - seen))
