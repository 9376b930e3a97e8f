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
"""Tests of the market demo's text (opie_sched.demo.market)."""

import testtools


class MarketDemoTextTest(testtools.TestCase):
    """The market demo's story of a period, as the table shows it."""

    def test_period_and_ledger(self):
        from opie_sched.demo import market as demo
        record = {
            'period': 2, 'period_start_iso': '2026-01-01T10:00:00Z',
            'period_seconds': 600, 'booted': ['alpha-3'],
            'boot_failures': [],
            'prices': {'default': {'vcpus': 0.2, 'memory_mb': 0.0}},
            'market': {'default': {
                'capacity': {'vcpus': 16, 'memory_mb': 32000},
                'bids': {'vcpus': 3.78, 'memory_mb': 0.72},
                'demand': {'vcpus': 18, 'memory_mb': 9000},
                'contended': {'vcpus': True, 'memory_mb': False}}},
            'total_bids': {'default': 4.5},
            'servers': [{'server': 'gamma-1', 'project': 'gamma',
                         'flavor': 'cpu2', 'host': 'host1', 'bid': 0.2,
                         'bid_source': 'metadata', 'vcpus': 2,
                         'shares': {'vcpus': 0.931034},
                         'charge_per_hour': 0.18, 'charged': 0.03,
                         'outcome': 'preempted'}],
            'notices': [], 'owner_actions': [], 'cancelled': [],
            'preempted': [{'server': 'gamma-1', 'project': 'gamma',
                           'at': 36060, 'kind': 'out_of_bid'}],
            'errors': [],
            'accounts': {'gamma': {'start': 5.0, 'charged': 0.03,
                                   'refilled': 0.0, 'balance': 4.97}}}
        lines = demo.format_demo_period(record, 3).splitlines()
        self.assertEqual('== period 2/3: 2026-01-01T10:00:00Z, 600 s ==',
                         lines[1])
        self.assertEqual('demand: +alpha-3', lines[2])
        self.assertIn('0.2 per vCPU-hour (contended: 18 vCPU demanded of '
                      '16, bids 3.78/h)', lines[3])
        self.assertEqual(['SERVER', 'PROJECT', 'FLAVOR', 'HOST', 'BID/H',
                          'SOURCE', 'VCPU', 'SHARE', 'PAYS/H', 'CHARGED',
                          'OUTCOME'], lines[4].split())
        self.assertEqual(['gamma-1', 'gamma', 'cpu2', 'host1', '0.2',
                          'metadata', '0.931/2', '0.18', '0.03',
                          'preempted'], lines[5].split())
        self.assertEqual('preempted gamma-1 (gamma) at 10:01:00Z, deleted '
                         '(out of bid)', lines[6])
        self.assertEqual(['gamma', '5', '0.03', '0', '4.97'],
                         lines[8].split())
        ledger = demo.format_demo_ledger({'project': 'gamma', 'entries': [
            {'time_iso': '2026-01-01T10:00:00Z', 'kind': 'charge',
             'server': 'gamma-1', 'amount': -0.03, 'balance': 4.97,
             'note': 'share cost'}]}).splitlines()
        self.assertEqual('ledger of project gamma:', ledger[1])
        self.assertEqual(['2026-01-01T10:00:00Z', 'charge', 'gamma-1',
                          '-0.03', '4.97', 'share', 'cost'],
                         ledger[3].split())
