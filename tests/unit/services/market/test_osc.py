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
"""Tests of the market's OpenStackClient commands
(opie_sched.services.market.osc)."""

import argparse
from decimal import Decimal as D
from unittest import mock

import fixtures

from opie_sched.services.market import client as market_client
from opie_sched.services.market import osc
from tests.unit.services.market import helpers as base
from tests.unit.services.market.helpers import _APIBase
from tests.unit.services.market.helpers import _Base
from tests.unit.services.market.helpers import _WebobSession
from tests.unit.services.market.helpers import ADMIN
from tests.unit.services.market.helpers import MEMBER
from tests.unit.services.market.helpers import T0


class OSCTest(_APIBase):

    def run_command(self, cls, argv, token='u:pA'):
        import argparse
        from unittest import mock

        from opie_sched.services.market import osc
        app = mock.Mock()
        app.client_manager.spot = market_client.MarketClient(
            _WebobSession(self.app, token), 'http://market/v1',
            api_version=osc.api_version(None))
        app.client_manager.sdk_connection.compute.find_server.side_effect = (
            lambda name, ignore_missing: mock.Mock(id=name))
        cmd = cls(app, argparse.Namespace())
        parsed = cmd.get_parser('openstack').parse_args(argv)
        return cmd.take_action(parsed)

    def test_commands(self):
        from osc_lib import exceptions as osc_exc

        from opie_sched.services.market import osc
        columns, rows = self.run_command(osc.PriceList, [])
        self.assertEqual(('Pool', 'Resource', 'Price', 'Unit',
                          'Period start'), columns)
        self.assertEqual(['vcpus', 'memory_mb'], [r[1] for r in rows])
        columns, rows = self.run_command(
            osc.PriceHistory, ['--start', str(T0), '--resource', 'vcpus'])
        self.assertEqual([('default', 'vcpus')], [r[2:4] for r in rows])
        columns, row = self.run_command(osc.BidSet, ['srv-a', '0.75'])
        self.assertEqual('0.75', dict(zip(columns, row))['bid'])
        error = self.assertRaises(osc_exc.CommandError, self.run_command,
                                  osc.BidSet, ['srv-a', '-2'])
        self.assertIn('HTTP 400: bid: must not be negative', str(error))
        error = self.assertRaises(osc_exc.CommandError, self.run_command,
                                  osc.BidShow, ['srv-b'])
        self.assertIn('HTTP 404: server srv-b not found', str(error))
        columns, row = self.run_command(osc.AccountShow, [])
        self.assertEqual('pA', dict(zip(columns, row))['project_id'])
        self.assertRaises(osc_exc.CommandError, self.run_command,
                          osc.AccountShow, ['--project', 'pB'])
        columns, rows = self.run_command(osc.ShareList, [],
                                         token='admin:admin')
        self.assertEqual({'srv-a', 'srv-b'}, {r[0] for r in rows})
        error = self.assertRaises(osc_exc.CommandError, self.run_command,
                                  osc.ShareList, [])
        self.assertIn('HTTP 403', str(error))


class OSCCommandsTest(_Base):

    def run_command(self, cls, argv, token=MEMBER, version=None):
        app = mock.Mock()
        app.client_manager.spot = market_client.MarketClient(
            base._WebobSession(self.app, token), 'http://market/v1',
            api_version=osc.api_version(version))
        compute = app.client_manager.sdk_connection.compute
        compute.find_server.side_effect = (
            lambda name, ignore_missing: mock.Mock(id=name))
        compute.find_flavor.side_effect = (
            lambda name, ignore_missing: mock.Mock(vcpus=2, ram=4000))
        cmd = cls(app, argparse.Namespace())
        return cmd.take_action(cmd.get_parser('openstack').parse_args(argv))

    def test_new_commands(self):
        from osc_lib import exceptions as osc_exc
        columns, rows = self.run_command(osc.PriceShow, ['small'])
        self.assertEqual(['az1', 'az2'], [r[0] for r in rows])
        self.assertEqual(D(2), D(rows[0][2]))
        columns, row = self.run_command(osc.BidUnset, ['srv-a'])
        self.assertEqual('default', dict(zip(columns, row))['source'])
        columns, row = self.run_command(osc.AccountCredit,
                                        ['pA', '4', '--note', 'hi'],
                                        token=ADMIN)
        self.assertEqual(('credit', 'hi'), (dict(zip(columns, row))['kind'],
                                            dict(zip(columns, row))['note']))
        columns, rows = self.run_command(osc.LedgerList, [])
        self.assertEqual(['refill', 'charge', 'credit'],
                         [r[1] for r in rows])
        columns, page = self.run_command(osc.LedgerList, ['--limit', '1'])
        self.assertEqual(1, len(page))
        columns, page2 = self.run_command(
            osc.LedgerList, ['--limit', '1', '--marker', page[0][0]])
        self.assertEqual(rows[1][0], page2[0][0])
        columns, rows = self.run_command(osc.NoticeList, [])
        self.assertEqual([('srv-a', 'noticed')], [r[:3:2] for r in rows])
        error = self.assertRaises(osc_exc.CommandError, self.run_command,
                                  osc.AccountCredit, ['pA', '1'])
        self.assertIn('HTTP 403', str(error))
        # --os-spot-api-version 1.0 is sent: 1.1 commands are refused
        error = self.assertRaises(osc_exc.CommandError, self.run_command,
                                  osc.NoticeList, [], version='1.0')
        self.assertIn('needs spot-market API microversion 1.1', str(error))
        self.assertRaises(osc_exc.CommandError, osc.api_version, '2.3')
        # at 1.0 the lists are one answer, without pagination
        columns, rows = self.run_command(osc.LedgerList, [], version='1.0')
        self.assertEqual([None, None, None], [r[0] for r in rows])

    def test_the_version_option_is_sent(self):
        client = market_client.MarketClient(
            base._WebobSession(self.app, MEMBER), 'http://market',
            api_version='1.0')
        self.assertEqual('1.0', client.request('GET', '/prices').version)
        client.api_version = 'latest'
        self.assertEqual('1.4', client.request('GET', '/prices').version)
        client.api_version = '1.7'
        error = self.assertRaises(market_client.MarketAPIError,
                                  client.prices)
        self.assertEqual((406, 'spot-market.version-not-acceptable'),
                         (error.status, error.code))

    def test_make_client_reads_the_option_and_the_catalog(self):
        instance = mock.Mock(_api_version={'spot': '1.0'},
                             region_name='R', interface='internal')
        instance._cli_options.config = {}
        instance.get_endpoint_for_service_type.return_value = 'http://m/v1'
        self.useFixture(fixtures.EnvironmentVariable('OS_SPOT_ENDPOINT'))
        client = osc.make_client(instance)
        self.assertEqual(('1.0', 'http://m'), (client.api_version,
                                               client.endpoint))
        instance.get_endpoint_for_service_type.assert_called_once_with(
            'spot-market', region_name='R', interface='internal')
