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
"""Tests of bid resolution and validation (opie_sched.market.bids)."""

from decimal import Decimal

import testtools

from opie_sched.market import bids
from opie_sched.market import pricing

from tests.unit.market.helpers import D


# -- bids --------------------------------------------------------------------

class BidsTest(testtools.TestCase):

    def test_valid(self):
        self.assertEqual(D('0.05'), bids.parse_bid('0.05'))
        self.assertEqual(D('0.05'), bids.parse_bid(' 0.05\n'))
        self.assertEqual(D('0.1'), bids.parse_bid(0.1))   # shortest repr
        self.assertEqual(D(3), bids.parse_bid(3))
        self.assertEqual(D(0), bids.parse_bid('0'))
        self.assertFalse(bids.parse_bid('-0').is_signed())
        self.assertEqual(D(2), bids.parse_bid('2', cap=2))   # cap allowed
        self.assertIsInstance(bids.parse_bid(1), Decimal)

    def assertRejected(self, value, fragment, cap=None):
        exc = self.assertRaises(bids.BidError, bids.parse_bid, value, cap,
                                'vm1 bid')
        self.assertIsInstance(exc, ValueError)
        self.assertIn('vm1 bid', str(exc))
        self.assertIn(fragment, str(exc))

    def test_negative(self):
        self.assertRejected(-1, 'negative')
        self.assertRejected('-0.01', 'negative')

    def test_nan(self):
        self.assertRejected(float('nan'), 'not a number')
        self.assertRejected('NaN', 'not a number')
        self.assertRejected(D('sNaN'), 'not a number')

    def test_infinite(self):
        self.assertRejected(float('inf'), 'finite')
        self.assertRejected('-Infinity', 'finite')

    def test_not_numbers(self):
        for value in ('abc', '', '1,5', None, True, [1], {'x': 1}):
            self.assertRejected(value, 'not a number')

    def test_above_cap(self):
        self.assertRejected('10.01', 'above the largest accepted bid 10',
                            cap=10)

    def test_precedence(self):
        md, fl = {'opie:bid': '0.3'}, {'opie:bid': '0.2'}
        self.assertEqual((D('0.3'), bids.SOURCE_METADATA),
                         bids.resolve_bid(md, fl, '0.1'))
        self.assertEqual((D('0.2'), bids.SOURCE_FLAVOR),
                         bids.resolve_bid({'other': 'x'}, fl, '0.1'))
        self.assertEqual((D('0.1'), bids.SOURCE_DEFAULT),
                         bids.resolve_bid(None, {}, '0.1'))

    def test_invalid_source_does_not_fall_back(self):
        exc = self.assertRaises(bids.BidError, bids.resolve_bid,
                                {'opie:bid': 'lots'}, {'opie:bid': '0.2'},
                                '0.1')
        self.assertIn('server metadata opie:bid', str(exc))
        exc = self.assertRaises(bids.BidError, bids.resolve_bid,
                                None, {'opie:bid': '5'}, '0.1', cap=1)
        self.assertIn('flavor extra spec opie:bid', str(exc))
        self.assertRaises(bids.BidError, bids.resolve_bid, {}, {}, None)

    def test_invalid_bids_never_change_a_price(self):
        raw = {'a': '1', 'b': '-5', 'c': 'nan', 'd': '2', 'e': 'inf',
               'f': '99', 'g': True}
        valid, rejected = bids.valid_bids(raw, cap=10)
        self.assertEqual({'a': D(1), 'd': D(2)}, valid)
        self.assertEqual(['b', 'c', 'e', 'f', 'g'], list(rejected))
        self.assertEqual(D(3) / 10, pricing.spot_price(valid.values(), 10))
