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
"""Tests of the devcloud state directory layout
(opie_sched.devcloud.layout)."""

import socket

import fixtures
import testtools

from opie_sched.devcloud import layout as layout_mod


class TestLayout(testtools.TestCase):

    def test_names_differ_per_state_dir(self):
        a = layout_mod.Layout('/tmp/a')
        b = layout_mod.Layout('/tmp/b')
        self.assertNotEqual(a.db_prefix, b.db_prefix)
        self.assertNotEqual(a.vhost, b.vhost)
        self.assertEqual(a.db_prefix,
                         layout_mod.Layout('/tmp/../tmp/a').db_prefix)
        for name in a.databases():
            self.assertTrue(name.startswith(a.db_prefix))
            self.assertLessEqual(len(name), 64)
        self.assertRaises(ValueError, a.database, 'nope')

    def test_state_file(self):
        root = self.useFixture(fixtures.TempDir()).path
        layout = layout_mod.Layout(root)
        self.assertIsNone(layout.load())
        layout.save({'a': 1})
        self.assertEqual({'a': 1}, layout.load())
        with open(layout.state_file, 'w') as f:
            f.write('{not json')
        self.assertRaises(layout_mod.StateError, layout.load)

    def test_allocate_ports_skips_busy(self):
        busy = set()
        ports = layout_mod.allocate_ports(
            ['a', 'b', 'c'], 'seed',
            is_free=lambda port, host: port not in busy)
        self.assertEqual(3, len(set(ports.values())))
        low, high = layout_mod.PORT_RANGE
        for port in ports.values():
            self.assertTrue(low <= port < high)
        busy.add(ports['b'])
        again = layout_mod.allocate_ports(
            ['a', 'b', 'c'], 'seed',
            is_free=lambda port, host: port not in busy)
        self.assertNotIn(ports['b'], again.values())

    def test_allocate_ports_exhausted(self):
        self.assertRaises(layout_mod.StateError, layout_mod.allocate_ports,
                          ['a'], 'seed', is_free=lambda port, host: False)

    def test_port_free_detects_listener(self):
        with socket.socket() as sock:
            sock.bind(('127.0.0.1', 0))
            sock.listen()
            self.assertFalse(layout_mod.port_free(sock.getsockname()[1]))
