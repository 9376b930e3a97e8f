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
"""A bid below the spot price under contention: notice, then termination
after the notice period.

Prices are work-conserving (Themis, Costache et al., HPCC 2012, §II.B and
§III.B; Merkat, Costache et al., §2.3 and §3.1): while the preemptible
demand fits in the capacity every server gets its flavor at the reserve
price and nobody is out of bid, whatever the bids. Only under contention
do shares fall below flavors; then the lowest bids lose, and the market
gives notice to no more servers than it must.

The cloud must let servers contend the market (``[opie]
market_contention``): preemptible vCPUs overcommitted (Placement admits
more preemptible vCPU than the hosts have) and the market pricing the
physical CPUs (``[opie_market] capacity_source = hypervisors``). The test
creates a CPU-heavy preemptible flavor (as many vCPUs as the smallest
host, 256 MB), fills the physical CPUs with high bidders, checks that
nobody is out of bid, then boots one low bidder beyond them.
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
#: Bids of the test, currency per hour.
HIGH_BID = '10'
LOW_BID = '0.01'
#: RAM of the CPU-heavy flavor, MB.
HEAVY_RAM_MB = 256


class MarketNoticeTest(market_base.MarketScenarioTest):
    """High bidders fill the physical vCPUs of the cloud: no contention,
    no notice, the vCPU price stays where it was. One more server, bidding
    below the price, makes the pool contended: it alone gets a notice at
    the next period and is terminated once its deadline has passed, never
    before; the high bidders keep running without a notice.
    """

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.opie.market_contention:
            raise cls.skipException(
                '[opie] market_contention = false: the cloud cannot be '
                'contended by boots (no preemptible vCPU overcommit, or '
                'the market prices the Placement inventories), and a '
                'work-conserving market gives no notice without contention')

    # -- helpers ---------------------------------------------------------

    def _heavy_flavor(self, vcpus):
        return self.preemptible_flavor(vcpus, HEAVY_RAM_MB, 'opie-cpu-heavy')

    def _physical_vcpus(self):
        """``{host: vCPUs}`` of the hypervisors that are up (what the
        market prices with ``capacity_source = hypervisors``).
        """
        _, body = self.call(self.admin, 'GET', '/os-hypervisors/detail',
                            '2.53')
        return {h['service']['host']: int(h['vcpus'])
                for h in body['hypervisors']
                if h['state'] == 'up' and h['status'] == 'enabled'}

    def _notices(self, ids):
        return {i: self.market.get_bid(i)[1]['bid']['notice'] for i in ids}

    # -- the scenario ------------------------------------------------------

    @decorators.idempotent_id('6d7e8f9a-0b1c-4d2e-8f3a-4b5c6d7e8f12')
    def test_out_of_bid_server_noticed_then_terminated(self):
        _, body = self.market.prices()
        period = body.get('period_seconds') or self.settled_period(0)[
            'period_seconds']
        wait = 2 * period + CONF.opie.market_notice_period + 30
        if wait > CONF.opie.market_max_wait:
            raise self.skipException(
                'market period %d s + notice period %d s need up to %d s; '
                '[opie] market_max_wait is %d s' % (
                    period, CONF.opie.market_notice_period, wait,
                    CONF.opie.market_max_wait))

        physical = self._physical_vcpus()
        heavy = self._heavy_flavor(min(physical.values()))
        hosts = self.hosts()
        # Preemptible vCPUs others already hold count in the demand.
        held = sum(h['used'].get(base.PREEMPTIBLE['VCPU'], 0)
                   for h in hosts.values())
        free = sum(physical.values()) - held
        highs = free // heavy.size['VCPU']
        self.assertGreater(
            highs, 0, 'the market is already (nearly) contended: %d '
            'preemptible vCPU held of %d physical' % (
                held, sum(physical.values())))
        room = self.preemptible_room(heavy.size, hosts)
        self.assertGreater(
            room, highs, '[opie] market_contention = true, but Placement '
            'admits only %d servers of %d vCPU while %d fill the %d free '
            'physical vCPUs: the preemptible vCPUs are not overcommitted'
            % (room, heavy.size['VCPU'], highs, free))

        status, body = self.market_admin.credit(self.primary_project,
                                                '100000', 'tempest')
        self.assertEqual(201, status, body)

        # 1. Demand within the capacity: nobody out of bid.
        high = self.boot(self.primary, heavy, highs,
                         metadata={BID_KEY: HIGH_BID})
        calm = self.settled_period(time.time() + 1)
        calm_price = self.vcpu_price(calm)
        self.assertEqual(dict.fromkeys(high), self._notices(high),
                         'notices while the demand fits the capacity')
        for server_id in high:
            position = self.market.get_bid(server_id)[1]['bid']['market']
            self.assertIsNotNone(position, 'no market position of %s'
                                 % server_id)
            self.assertFalse(position['out_of_bid'], position)

        # 2. One low bidder beyond the physical vCPUs: contention. The
        # owner watches the server's metadata, where the notice and its
        # deadline appear together.
        low = self.boot(self.primary, heavy, metadata={
            BID_KEY: LOW_BID})[0]
        booted = time.monotonic()
        self.assertEqual(decimal.Decimal(LOW_BID), decimal.Decimal(
            str(self.market.get_bid(low)[1]['bid']['bid'])))
        meta = {}
        while DEADLINE_KEY not in meta:
            status, body = self.call(self.primary, 'GET',
                                     '/servers/%s/metadata' % low,
                                     ok=(200, 404))
            if status == 404:
                self.fail('the low bidder was terminated %.0f s after it '
                          'booted without its owner seeing a notice '
                          '(notice period %d s)' % (
                              time.monotonic() - booted,
                              CONF.opie.market_notice_period))
            meta = body['metadata']
            self.assertEqual(dict.fromkeys(high), self._notices(high),
                             'a high bidder got a notice')
            if DEADLINE_KEY not in meta:
                if time.monotonic() - booted > wait:
                    self.fail('no notice for a bid of %s under contention '
                              'after %d s' % (LOW_BID, wait))
                time.sleep(1)
        seen = time.time()
        notice = meta.get(NOTICE_KEY) or ''
        deadline = timeutils.parse_isotime(meta[DEADLINE_KEY]).timestamp()
        self.assertIn('contended', notice)
        self.assertGreater(
            deadline, seen, 'the notice appeared with a deadline already '
            'past (%s, %.0f s ago; notice period %d s)' % (
                meta[DEADLINE_KEY], seen - deadline,
                CONF.opie.market_notice_period))
        status, body = self.market.get_bid(low)
        if status == 200:
            self.assertEqual(notice, body['bid']['notice'])
        contended = self.vcpu_price(self.market.prices()[1])
        self.assertGreater(contended, calm_price,
                           'the vCPU price did not rise under contention')

        # 3. Present until the deadline, gone (or stopped) soon after.
        while True:
            servers = self.server_map(self.primary)
            gone = (low not in servers or
                    servers[low].status == 'SHUTOFF')
            now = time.time()
            if gone:
                self.assertGreaterEqual(
                    now, deadline - 1, 'terminated %.0f s before its '
                    'deadline' % (deadline - now))
                break
            if now > deadline + period + 60:
                self.fail('out-of-bid server still running %.0f s after '
                          'its deadline' % (now - deadline))
            time.sleep(2)
        servers = self.server_map(self.primary)
        self.assertEqual(['ACTIVE'] * len(high),
                         [servers[i].status for i in high])
        self.assertEqual(dict.fromkeys(high), self._notices(high))
