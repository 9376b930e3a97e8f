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
"""Tests of the full-state filter
(opie_sched.scheduler.filters.preemptible_full_state)."""

from unittest import mock

import fixtures

from opie_sched.scheduler.filters import preemptible_full_state
from opie_sched.scheduler import ownership
from opie_sched.scheduler import request_view

from tests.unit.scheduler.plugin_helpers import _PluginTest
from tests.unit.scheduler.plugin_helpers import flavor
from tests.unit.scheduler.plugin_helpers import host_state
from tests.unit.scheduler.plugin_helpers import instance
from tests.unit.scheduler.plugin_helpers import LARGE
from tests.unit.scheduler.plugin_helpers import MEDIUM
from tests.unit.scheduler.plugin_helpers import request


class FullStateFilterTest(_PluginTest):

    def setUp(self):
        super().setUp()
        self.filt = preemptible_full_state.PreemptibleFullStateFilter()

    def test_preemptible_request_needs_full_state_room(self):
        full = host_state('h', [instance('a', 'h', LARGE, True),
                                instance('b', 'h', MEDIUM, False)])
        self.assertTrue(self.filt.host_passes(full, request(MEDIUM, True)))
        self.assertFalse(self.filt.host_passes(full, request(LARGE, True)))

    def test_each_dimension_counts(self):
        empty = []
        for size in ((9, 100, 1), (1, 16001, 1), (1, 100, 201)):
            hs = host_state('h', empty)
            self.assertFalse(self.filt.host_passes(hs, request(size, True)),
                             size)
        self.assertTrue(self.filt.host_passes(
            host_state('h', empty), request((8, 16000, 200), True)))

    def test_allocation_ratio_applies(self):
        hs = host_state('h', [instance('a', 'h', LARGE, False)], ratio=2.0)
        self.assertTrue(self.filt.host_passes(hs, request((12, 10, 1),
                                                          True)))
        self.assertFalse(self.filt.host_passes(hs, request((13, 10, 1),
                                                           True)))

    def test_normal_requests_pass(self):
        full = host_state('h', [instance('a', 'h', LARGE, True),
                                instance('b', 'h', LARGE, True)])
        self.assertTrue(self.filt.host_passes(full, request(LARGE, False)))

    def test_error_rejects_host_without_raising(self):
        hs = host_state('h', [])
        hs.vcpus_total = None  # a broken host record
        self.assertFalse(self.filt.host_passes(hs, request(MEDIUM, True)))

    def test_request_read_once_per_spec_in_a_request(self):
        request_view.set_current_view(request_view.RequestView(ctx=None))
        sizes = self.useFixture(fixtures.MockPatchObject(
            ownership, 'request_resources',
            wraps=ownership.request_resources)).mock
        states = [host_state('h%d' % i, [instance('a%d' % i, 'h%d' % i,
                                                  LARGE, False)])
                  for i in range(5)]
        spec = request(MEDIUM, True)
        self.assertEqual([True] * 5, [self.filt.host_passes(hs, spec)
                                      for hs in states])
        self.assertEqual(1, sizes.call_count)
        # another spec, or the same spec with another flavor: read again
        big = request((5, 100, 1), True)
        self.assertEqual([False] * 5, [self.filt.host_passes(hs, big)
                                       for hs in states])
        spec.flavor = flavor((5, 100, 1), True)
        self.assertFalse(self.filt.host_passes(states[0], spec))
        spec.flavor = flavor(MEDIUM, False)
        self.assertTrue(self.filt.host_passes(states[0], spec))
        self.assertEqual(4, sizes.call_count)

    def test_what_the_request_is_for_is_read_once(self):
        # a normal request: the first host whose full state has no room
        # reads the request's decision, once; when the request may
        # preempt, a host passes when terminating its candidate victims
        # makes room (the ownership model: issue 30), and when it may not
        # (a move that may not preempt) it is judged on its full state
        states = [host_state('h%d' % i, [instance('a%d' % i, 'h%d' % i,
                                                  LARGE, True),
                                         instance('b%d' % i, 'h%d' % i,
                                                  LARGE, True)])
                  for i in range(3)]
        states.append(host_state('room', []))
        spec = request(MEDIUM, False)
        for fit, expected in ((False, [True] * 4),
                              (True, [False, False, False, True])):
            view = request_view.RequestView(ctx=None)
            for hs in states:
                view._instances[(hs.host, hs.nodename)] = list(
                    hs.instances.values())
                view._loaded.add((hs.host, hs.nodename))
            decide = mock.Mock(return_value=request_view.Decision(
                'migration', not fit, fit, fit))
            view.set_policy(decide)
            request_view.set_current_view(view)
            self.assertEqual(expected, [self.filt.host_passes(hs, spec)
                                        for hs in states])
            self.assertEqual(1, decide.call_count)

    def test_preempting_request_rejects_a_host_of_pinned_servers(self):
        # issue 30 hole 7: a preemptible server its owner is moving (here
        # VERIFY_RESIZE) holds its room and is no candidate victim: a
        # normal request that may preempt is kept off a host where only
        # such servers would make room
        pinned = [instance('a', 'h', LARGE, True),
                  instance('b', 'h', LARGE, True)]
        for inst in pinned:
            inst.vm_state = 'resized'
        spec = request(MEDIUM, False)
        for vm_state, passes in (('resized', False), ('active', True)):
            # with the second one running, it can be preempted
            pinned[1].vm_state = vm_state
            [hs] = self.use_hosts(host_state('h', pinned))
            request_view.current_view().set_policy(
                lambda: request_view.Decision('boot', True, False, False))
            self.assertEqual(passes, self.filt.host_passes(hs, spec))
