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
"""A bid below the spot price: notice, then termination after the notice
period (Merkat §2.3; the EC2 spot rule)."""

import time

from oslo_utils import timeutils
from tempest import config
from tempest.lib import decorators

from opie_sched_tempest_plugin.tests.api import test_market

CONF = config.CONF

DEADLINE_KEY = 'opie:preempt_deadline'


class MarketNoticeTest(test_market.MarketBaseTest):
    """Two preemptible servers of one project with credit: the one bidding
    0 is out of bid as soon as the other bids more (price = sum of bids /
    capacity > 0); it gets a notice at the next period and is terminated
    once its deadline has passed, never before. The other keeps running
    without a notice."""

    @classmethod
    def resource_setup(cls):
        super().resource_setup()
        status, _ = cls.market_admin.prices()
        if status != 200:
            raise AssertionError('market prices: HTTP %s' % status)

    def _wait_period(self):
        """Seconds of a market period (waits for the first one)."""
        deadline = time.monotonic() + CONF.opie.market_max_wait
        while True:
            _, body = self.market.prices()
            if body.get('period_seconds'):
                return body['period_seconds']
            if time.monotonic() > deadline:
                self.fail('the market settled no period in %d s'
                          % CONF.opie.market_max_wait)
            time.sleep(2)

    @decorators.idempotent_id('6d7e8f9a-0b1c-4d2e-8f3a-4b5c6d7e8f12')
    def test_out_of_bid_server_noticed_then_terminated(self):
        period = self._wait_period()
        wait = 2 * period + CONF.opie.market_notice_period + 30
        if wait > CONF.opie.market_max_wait:
            raise self.skipException(
                'market period %d s + notice period %d s need up to %d s; '
                '[opie] market_max_wait is %d s' % (
                    period, CONF.opie.market_notice_period, wait,
                    CONF.opie.market_max_wait))
        status, body = self.market_admin.credit(self.primary_project,
                                                '100000', 'tempest')
        self.assertEqual(201, status, body)
        low, high = self.boot(self.primary, self.preemptible, 2)
        self.assertEqual(200, self.market.set_bid(low, '0')[0])
        self.assertEqual(200, self.market.set_bid(high, '1000')[0])

        start = time.monotonic()
        notice = None
        while notice is None:
            _, body = self.market.get_bid(low)
            notice = body['bid']['notice']
            self.assertIsNone(self.market.get_bid(high)[1]['bid']['notice'],
                              'the high bidder got a notice')
            if notice is None:
                if time.monotonic() - start > wait:
                    self.fail('no notice for a bid of 0 after %d s' % wait)
                time.sleep(2)
        _, meta = self.call(self.primary, 'GET', '/servers/%s/metadata'
                            % low)
        deadline = timeutils.parse_isotime(
            meta['metadata'][DEADLINE_KEY]).timestamp()

        # Present until the deadline, gone (or stopped) soon after.
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
        self.assertEqual('ACTIVE', servers[high].status)
        self.assertIsNone(self.market.get_bid(high)[1]['bid']['notice'])
