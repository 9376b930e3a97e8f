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
"""What the market scenarios share: a reachable market, preemptible
flavors of a given size, waiting for a settled period, the vCPU price.
"""

import decimal
import time

from oslo_utils import timeutils
from tempest import config
from tempest.lib.common.utils import data_utils

from opie_sched_tempest_plugin import base
from opie_sched_tempest_plugin.tests.api import test_market

CONF = config.CONF

#: Server metadata keys of the market (bid, notice and its deadline).
BID_KEY = 'opie:bid'
NOTICE_KEY = 'opie:preempt_notice'
DEADLINE_KEY = 'opie:preempt_deadline'


class MarketScenarioTest(test_market.MarketBaseTest):
    """Base of the market scenarios."""

    @classmethod
    def resource_setup(cls):
        super().resource_setup()
        status, _ = cls.market_admin.prices()
        if status != 200:
            raise AssertionError('market prices: HTTP %s' % status)

    def preemptible_flavor(self, vcpus, ram_mb, prefix):
        """A public preemptible flavor of ``vcpus`` vCPU and ``ram_mb`` MB
        (admin, deleted at cleanup), made like the cloud's twin flavors:
        the twin's extra specs with the preemptible amounts of this size.
        """
        _, body = self.call(self.admin, 'GET', '/flavors/%s/os-extra_specs'
                            % self.preemptible.id)
        specs = dict(body['extra_specs'])
        size = {'VCPU': vcpus, 'MEMORY_MB': ram_mb, 'DISK_GB': 1}
        for rc, amount in size.items():
            key = 'resources:%s' % base.PREEMPTIBLE[rc]
            self.assertIn(key, specs, 'extra specs of the preemptible '
                          'flavor %s' % self.preemptible.name)
            specs[key] = str(amount)
        _, body = self.call(self.admin, 'POST', '/flavors', json={
            'flavor': {'name': data_utils.rand_name(prefix),
                       'vcpus': vcpus, 'ram': ram_mb, 'disk': 1,
                       'os-flavor-access:is_public': True}})
        flavor = body['flavor']
        self.addCleanup(self.call, self.admin, 'DELETE',
                        '/flavors/%s' % flavor['id'])
        self.call(self.admin, 'POST', '/flavors/%s/os-extra_specs'
                  % flavor['id'], json={'extra_specs': specs})
        return base.Flavor(flavor['id'], flavor['name'], size)

    def settled_period(self, after):
        """The prices body of the first settled period that starts at or
        after ``after`` (seconds since the epoch); fails after
        ``[opie] market_max_wait`` seconds.
        """
        deadline = time.monotonic() + CONF.opie.market_max_wait
        while True:
            _, body = self.market.prices()
            start = body.get('period_start')
            if start and timeutils.parse_isotime(
                    start).timestamp() >= after:
                return body
            if time.monotonic() > deadline:
                self.fail('the market settled no period starting after '
                          '%s in %d s' % (time.ctime(after),
                                          CONF.opie.market_max_wait))
            time.sleep(1)

    @staticmethod
    def vcpu_price(body):
        """The vCPU price of a prices body (pool ``default``, else the
        highest), currency per vCPU-hour; None without prices.
        """
        prices = {row['pool']: decimal.Decimal(str(row['price']))
                  for row in body['prices'] if row['resource'] == 'vcpus'}
        return prices.get('default', max(prices.values(), default=None))
