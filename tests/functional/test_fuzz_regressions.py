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
"""Explicit step sequences of the invariant fuzzer's machine
(:mod:`tests.functional.fuzz.machine`), replayed with its invariants
after every step and its convergence at the end
(:meth:`~tests.functional.test_invariant_fuzz.FuzzCloud.replay`).

Two kinds belong here: sequences the fuzzer found failing on main
(shrunk: the ``kill_worker`` rule's over-preemption, the first), and
directed sequences reaching a guarantee
that random examples of a few steps rarely reach; each of those fails
when its guarantee is reverted (the ``tools/fuzz_power.py`` mutation
named in its docstring).
"""

from tests.functional.fuzz import machine
from tests.functional import test_invariant_fuzz

#: older than ``short.preemptible``'s ``opie:max_lifetime``, seconds
OLD = machine.SHORT_LIFETIME + 3600


class FuzzRegressionTest(test_invariant_fuzz.FuzzCloud):

    def test_lifetime_counts_from_the_resize_to_preemptible(self):
        """A normal server a day old resized to a preemptible flavor with a
        one-day ``opie:max_lifetime``, then confirmed: the next reconciler
        round must not end it (issue 30 hole 2; mutation
        ``i30.2-lifetime-from-creation``).
        """
        self.replay([
            ('fill', {'servers': [('a', 'medium', OLD)]}),
            ('resize', {'i': 0, 'flavor': 'short.preemptible'}),
            ('confirm', {'i': 0}),
            ('reconcile', {}),
        ])
        [srv] = self.cloud.live()
        self.assertEqual(('short.preemptible', 'ACTIVE'),
                         (srv.flavor, srv.status))

    def test_lifetime_spares_a_server_its_owner_is_moving(self):
        """A preemptible server past its lifetime, cold-migrated and
        waiting for confirmation: no reconciler round ends it until the
        owner confirms; the round after the confirmation does (issue 30
        hole 2; mutation ``i30.2-lifetime-while-moving``).
        """
        seen = []

        def observe(index, name):
            # a confirmation is asynchronous: the step may end while Nova
            # still shows VERIFY_RESIZE
            if name != 'confirm':
                seen.append((name, [s.status for s in self.cloud.live()]))

        self.replay([
            ('fill', {'servers': [('a', 'short.preemptible', OLD)]}),
            ('migrate', {'i': 0}),
            ('reconcile', {}),
            ('confirm', {'i': 0}),
            ('reconcile', {}),
        ], observe=observe)
        self.assertEqual([('fill', ['ACTIVE']),
                          ('migrate', ['VERIFY_RESIZE']),
                          ('reconcile', ['VERIFY_RESIZE']),
                          ('reconcile', [])], seen)

    def test_no_victim_for_the_claim_a_killed_worker_left(self):
        """Found by the ``kill_worker`` rule (issue 30): a normal boot's
        scheduler worker dies after sending its victim's delete; nova's
        conductor buries the server in cell0 (ERROR) and the dead worker's
        Placement claim on host1 stays until that server is deleted. The
        owner boots again on host1 (host2 holds normal servers only): with
        that claim counted as used, the retry preempted the other
        preemptible of host1, where the servers running had room for it:
        2 victims where the minimum (0) plus the failed request's (1)
        allow 1. Fixed by ``reservations.buried_in_cell0``.
        """
        self.replay([
            ('fill', {'servers': [('a', 'large.preemptible', 100),
                                  ('a', 'large.preemptible', 200),
                                  ('b', 'large', 300),
                                  ('b', 'large', 400)]}),
            ('kill_worker', {'owner': 'a', 'flavor': 'large',
                             'stage': 'sent'}),
        ])

    def test_market_preempts_the_preemptible_out_of_bid_only(self):
        """The ``market_round`` rule, directed: a reserve price above
        every bid (an invalid one counts as 0; none written: the default
        bid 0) puts the preemptible server out of bid; at the deadline
        the market deletes it (a soft delete: the cloud reclaims deleted
        servers after an hour; the fuzzer's admin listing still shows it,
        SOFT_DELETED) and no normal server; the recorder sees the market's
        delete.
        """
        self.replay([
            ('fill', {'servers': [('a', 'medium', 0),
                                  ('b', 'small.preemptible', 0),
                                  ('a', 'small', 0)]}),
            ('market_round', {'bids': [None, 'abc'], 'reserve': '1',
                              'credit': '100', 'action': 'delete',
                              'enforce': True, 'move': None}),
        ])
        self.assertEqual(1, self.cloud.stats['market preempted'])
        self.assertGreaterEqual(self.cloud.stats['market calls'], 1)
        self.assertEqual({('medium', 'ACTIVE'), ('small', 'ACTIVE'),
                          ('small.preemptible', 'SOFT_DELETED')},
                         {(s.flavor, s.status) for s in self.cloud.live()})

    def test_market_spares_a_server_moved_to_a_normal_flavor(self):
        """The ``market_round`` rule, directed: a noticed preemptible
        server's owner starts a resize to a normal flavor just before its
        deadline; the enforcement meets it moving (it waits) or waiting in
        VERIFY_RESIZE (it confirms the resize); at the next round the
        server is normal: the notice is withdrawn, nothing is deleted
        (mutations ``market-ignores-moves``, ``market-no-preemptible-
        recheck``).
        """
        self.replay([
            ('fill', {'servers': [('a', 'small.preemptible', 0)]}),
            ('market_round', {'bids': [], 'reserve': '1', 'credit': '100',
                              'action': 'delete', 'enforce': True,
                              'move': (0, 'small')}),
            ('market_round', {'bids': [], 'reserve': '1', 'credit': '100',
                              'action': 'delete', 'enforce': False,
                              'move': None}),
        ])
        self.assertEqual(1, self.cloud.stats['market rounds meeting a '
                                             'move'])
        self.assertEqual(0, self.cloud.stats['market calls'])
        [srv] = self.cloud.live()
        self.assertEqual(('small', 'ACTIVE'), (srv.flavor, srv.status))

    def test_racing_preemptible_claims_on_a_mixed_host(self):
        """The ``fill`` start's ``mixed`` pair, directed: owner a's
        affinity group holds a normal large and a preemptible medium on one
        host (6 of its 8 vCPUs), owner b's two normal larges fill the
        other; then both owners boot a preemptible medium at once, both
        requests choosing on the same state (``boot_racing``). Placement
        admits both claims (the preemptible classes have room: the normal
        usage is in the standard ones), which leaves the host 2 vCPUs over
        capacity; the check after each claim takes one back, and that
        request fails (mutation ``no-post-claim-check``: the host stays
        over capacity, the invariant after the step fails).
        """
        self.replay([
            ('fill', {'servers': [('b', 'large', 0), ('b', 'large', 0)],
                      'mixed': [('a', 'large', 'medium.preemptible', 0)]}),
            ('boot_racing', {'flavors': ('medium.preemptible',
                                         'medium.preemptible'),
                             'fail_build': False}),
        ])
        # the two requests did race: both claimed on the same state
        self.assertEqual(2, self.cloud.stats['racing claims met'])
        # the mixed pair's preemptible server, and of the racing two one
        # kept the host's last room, the other failed
        self.assertEqual(['ACTIVE', 'ACTIVE', 'ERROR'], sorted(
            s.status for s in self.cloud.live()
            if s.flavor == 'medium.preemptible'))

    def test_found_two_preemptible_boots_race_for_a_hosts_last_room(self):
        """Found by a focused run (``tools/fuzz_power.py --no-swarm
        --examples 3 --steps 10 --rules boot_racing --only
        no-post-claim-check``, its 2nd example, 2026-11-28): the start's
        three servers (a normal medium, a preemptible and a short-lived
        preemptible medium) leave one host with room for one medium; both
        owners boot a preemptible medium at once, both requests choose on
        the same state and Placement admits both claims (the preemptible
        classes have room). Without the check after each claim the host
        stays 2 vCPUs over capacity ("host host2 over capacity by
        Placement: VCPU + CUSTOM_PREEMPTIBLE_VCPU = 10 > 8.0"; host1 in a
        replay: which host the start fills varies); with it, one claim is
        taken back and its request fails.
        """
        self.replay([
            ('fill', {'servers': [('b', 'short.preemptible', 778),
                                  ('a', 'medium.preemptible', 162692),
                                  ('b', 'medium', 628)]}),
            ('boot_racing', {'flavors': ('medium.preemptible',
                                         'shelving.preemptible'),
                             'fail_build': False}),
        ])
        self.assertEqual(2, self.cloud.stats['racing claims met'])

    def test_alternate_filled_by_the_racing_request(self):
        """``boot_racing`` with a failing build, directed: one host holds
        owner a's mixed pair (a normal large and a preemptible medium,
        room for 2 vCPUs), the other owner b's normal large (room for 4).
        Both owners boot at once, a preemptible large (only the second
        host fits it) and a preemptible medium (the weighers choose the
        fuller host), on the same state; the medium's build fails, and
        nova's conductor claims its alternate, the second host, which the
        large has filled since: 10 of 8 vCPUs. The check of the landed
        alternate claim (when the compute reports the build) lets that
        server go, so the host is back within capacity (mutation
        ``i30.6-no-alternate-check``: it stays over capacity, the check
        after the step fails).
        """
        self.replay([
            ('fill', {'servers': [('b', 'large', 0)],
                      'mixed': [('a', 'large', 'medium.preemptible', 0)]}),
            ('boot_racing', {'flavors': ('large.preemptible',
                                         'medium.preemptible'),
                             'fail_build': True, 'failing': 1}),
        ])
        self.assertEqual(2, self.cloud.stats['racing claims met'])
        self.assertEqual(1, self.cloud.stats['builds failed (rescheduled)'])

    def test_found_market_spares_a_server_moved_to_a_normal_flavor(self):
        """Found by a focused run (``tools/fuzz_power.py --no-swarm
        --examples 3 --steps 10 --rules market_round --only
        market-no-preemptible-recheck``, its 1st example, 2026-11-28):
        owner a's mixed pair (a small and a small.preemptible in one
        affinity group) and two normal smalls; a market round with a
        reserve price above the default bid gives the preemptible server
        an out-of-bid notice, its owner resizes it to small before the
        deadline, and the following ticks meet it moving, waiting in
        VERIFY_RESIZE (confirmed by the market), then normal. Without the
        re-reading of whether it is still preemptible, the market deletes
        it ("the market soft_delete <... a small ACTIVE> although it is
        normal now by the resource classes it holds").
        """
        self.replay([
            ('fill', {'servers': [('a', 'small', 0), ('a', 'small', 0)],
                      'mixed': [('a', 'small', 'small.preemptible', 0)]}),
            ('market_round', {'bids': [], 'reserve': '1', 'credit': '100',
                              'action': 'delete', 'enforce': False,
                              'move': (0, 'small')}),
        ])
        self.assertEqual(1, self.cloud.stats['market rounds meeting a '
                                             'move'])
        self.assertEqual(0, self.cloud.stats['market calls'])
        self.assertEqual(['small'] * 4,
                         [s.flavor for s in self.cloud.live()])
