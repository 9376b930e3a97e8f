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
"""The manager's book of alternates returned per instance (issue 30,
hole 6): which report of a built server names an alternate the conductor
claimed without the scheduler.
"""

from unittest import mock

import testtools

from opie_sched.scheduler import manager


class AlternatesBookTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.now = 0.0
        self.book = manager._AlternatesBook(clock=lambda: self.now)
        self.alt = object()
        self.book.add('i1', 'host1', {'host2': self.alt}, False)

    def test_report_from_the_chosen_host_drops_the_entry(self):
        self.assertIsNone(self.book.landed('i1', 'host1'))
        # a later report (a move) is not taken for a reschedule
        self.assertIsNone(self.book.landed('i1', 'host2'))

    def test_report_from_an_alternate_is_a_reschedule(self):
        self.assertEqual((self.alt, False), self.book.landed('i1', 'host2'))
        self.assertIsNone(self.book.landed('i1', 'host2'))

    def test_report_from_another_host_keeps_waiting(self):
        self.assertIsNone(self.book.landed('i1', 'source'))
        self.assertEqual((self.alt, False), self.book.landed('i1', 'host2'))

    def test_unknown_instance(self):
        self.assertIsNone(self.book.landed('other', 'host2'))

    def test_entries_expire(self):
        self.now = manager._AlternatesBook.TTL + 1
        self.assertIsNone(self.book.landed('i1', 'host2'))

    def test_oldest_entries_go_beyond_the_size(self):
        with mock.patch.object(manager._AlternatesBook, 'SIZE', 2):
            self.book.add('i2', 'host1', {'host2': self.alt}, True)
            self.book.add('i3', 'host1', {'host2': self.alt}, False)
        self.assertIsNone(self.book.landed('i1', 'host2'))
        self.assertEqual((self.alt, True), self.book.landed('i2', 'host2'))
