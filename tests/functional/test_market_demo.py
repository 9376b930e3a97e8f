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
"""``opie-sched market demo``: the spot market engine on the embedded Nova.

The command runs in-process (``opie_sched.cmd.cli.main``), starts its own
all-in-one Nova (preemptible vCPU overcommitted 2:1, the market pricing
the 16 physical CPUs of two hosts) and prints one JSON document; the
assertions read the market's story from it, by the rule of Themis and
Merkat: while the demand fits the CPUs the price is the reserve and
nobody is out of bid; once it exceeds them the price clears the market
(Merkat eq. 1 with each flavor as its cap) and rises with demand, the
lowest bidder whose share no longer covers its flavor is given notice and
then preempted, an owner who raises the bid keeps the server, each server
pays what its share costs (never more than its bid) and balances fall by
exactly what was charged.
"""

import contextlib
import io
import json
import logging

import fixtures
import testtools

from opie_sched.cmd import cli
from opie_sched.demo import clients

PERIOD = 600
NOTICE = 60


def run_cli(*argv):
    """``(exit code, stdout, stderr)`` of ``opie-sched ARGV``."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(list(argv))
    return rc, out.getvalue(), err.getvalue()


class MarketDemoTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        # cli.main configures the root logger; keep that out of the run.
        self.useFixture(fixtures.FakeLogger(level=logging.WARNING))

    def test_three_periods(self):
        rc, out, err = run_cli(
            'market', 'demo', '--periods', '3', '--period-seconds',
            str(PERIOD), '--notice-seconds', str(NOTICE), '--format', 'json')
        self.assertEqual(0, rc, err)
        self.assertIn('period 3: settling', err)   # progress on stderr
        self.assertIn('stopping Nova', err)
        result = json.loads(out)
        self.assertEqual(PERIOD, result['period_seconds'])
        periods = result['periods']
        self.assertEqual([1, 2, 3], [p['period'] for p in periods])
        for p in periods:
            self.assertEqual([], p['errors'])
            self.assertEqual([], p['boot_failures'])
            self.assertEqual(p['period_start'],
                             periods[0]['period_start']
                             + (p['period'] - 1) * PERIOD)

        self.assertEqual(2.0, result['preemptible_cpu_ratio'])
        reserve = result['reserve_prices']['vcpus']
        self.assertGreater(reserve, 0)
        first, second, third = periods
        # demand in vCPU of the 16 physical CPUs: fits, then exceeds them
        self.assertEqual([12, 18, 20], [
            sum(s['vcpus'] for s in p['servers']) for p in periods])
        for p in periods:
            self.assert_clearing_rule(p, reserve)

        # prices: the reserve while the demand fits, then rising with it
        cpu = [p['prices']['default']['vcpus'] for p in periods]
        self.assertEqual(reserve, cpu[0])
        self.assertLess(reserve, cpu[1])
        self.assertLess(cpu[1], cpu[2])
        self.assertEqual([False, True, True], [
            p['market']['default']['contended']['vcpus'] for p in periods])
        # RAM is not overcommitted: never contended, no reserve, price 0
        for p in periods:
            self.assertFalse(p['market']['default']['contended'][
                'memory_mb'])
            self.assertEqual(0, p['prices']['default']['memory_mb'])
        totals = [p['total_bids']['default'] for p in periods]
        self.assertLess(totals[0], totals[1])
        self.assertLess(totals[1], totals[2])

        # nobody is out of bid while the demand fits
        self.assertEqual([], first['notices'])
        self.assertEqual([], first['preempted'])
        for server in first['servers']:
            self.assertEqual(server['vcpus'], server['shares']['vcpus'])

        # contention: the lowest bidder's share no longer covers its
        # flavor; it gets notice, then is deleted; removing it is enough
        lowest = min(second['servers'], key=lambda s: s['bid'])
        self.assertEqual('gamma-1', lowest['server'])
        self.assertLess(lowest['shares']['vcpus'], lowest['vcpus'])
        [notice] = second['notices']
        self.assertEqual((lowest['server_id'], 'gamma', 'out_of_bid'),
                         (notice['server_id'], notice['project'],
                          notice['kind']))
        self.assertIn("out of bid: pool 'default' is contended (18 vCPU "
                      "demanded of 16)", notice['reason'])
        self.assertIn('your bid of 0.2 per hour buys', notice['reason'])
        self.assertEqual(second['period_start'] + NOTICE, notice['deadline'])
        [preempted] = second['preempted']
        self.assertEqual(lowest['server_id'], preempted['server_id'])
        self.assertEqual(notice['deadline'], preempted['at'])
        self.assertEqual('preempted', lowest['outcome'])
        self.assertNotIn(lowest['server_id'],
                         [s['server_id'] for s in third['servers']])

        # next wave: 20 vCPU of 16, the two lowest bids are out;
        # alpha-2's owner raises its bid and keeps it, beta-1 is deleted
        self.assertEqual({'alpha-2', 'beta-1'},
                         {n['server'] for n in third['notices']})
        by_name = {s['server']: s for s in third['servers']}
        for name in ('alpha-2', 'beta-1'):
            self.assertLess(by_name[name]['shares']['vcpus'], 2)
        [action] = third['owner_actions']
        self.assertEqual(('alpha-2', 'alice', 0.3, 0.9),
                         (action['server'], action['user'],
                          action['old_bid'], action['new_bid']))
        self.assertIn('out of bid', action['saw_notice'])
        self.assertEqual(['alpha-2'],
                         [n['server'] for n in third['cancelled']])
        self.assertEqual(['beta-1'],
                         [n['server'] for n in third['preempted']])
        self.assertEqual('notice withdrawn', by_name['alpha-2']['outcome'])
        self.assertEqual('preempted', by_name['beta-1']['outcome'])

        # balances: start - charged + refill, period after period
        credit = {a['project']: a['credit'] for a in result['projects']}
        previous = credit
        hours = PERIOD / 3600
        for p in periods:
            for project, account in p['accounts'].items():
                mine = [s for s in p['servers'] if s['project'] == project]
                for server in mine:  # ledger amounts are rounded to 1e-6
                    self.assertAlmostEqual(server['charge_per_hour'] * hours,
                                           server['charged'], delta=1e-6)
                    self.assertLessEqual(server['charged'],
                                         server['bid'] * hours + 1e-6)
                self.assertAlmostEqual(sum(s['charged'] for s in mine),
                                       account['charged'])
                self.assertAlmostEqual(previous[project], account['start'])
                self.assertGreater(account['charged'], 0)
                self.assertEqual(0, account['refilled'])
                self.assertAlmostEqual(
                    account['start'] - account['charged'], account['balance'])
                self.assertLess(account['balance'], account['start'])
            previous = {k: a['balance'] for k, a in p['accounts'].items()}

        # the ledger of gamma: its credit, then refills and charges
        ledger = result['ledger']
        self.assertEqual('gamma', ledger['project'])
        entries = ledger['entries']
        self.assertEqual(('credit', credit['gamma']),
                         (entries[0]['kind'], entries[0]['amount']))
        charges = [e for e in entries if e['kind'] == 'charge']
        # (charges of one period are posted in server uuid order)
        self.assertEqual(
            [('gamma-1', 1), ('gamma-1', 2), ('gamma-2', 1), ('gamma-2', 2),
             ('gamma-2', 3), ('gamma-3', 2), ('gamma-3', 3)],
            sorted((e['server'], 1 + (e['time'] - first['period_start'])
                    // PERIOD) for e in charges))
        self.assertAlmostEqual(previous['gamma'], entries[-1]['balance'])

    def assert_clearing_rule(self, period, reserve):
        """The period's vCPU market obeys the clearing rule (Merkat eq. 1
        with the flavors as caps, floored at the reserve).
        """
        market = period['market']['default']
        price = period['prices']['default']['vcpus']
        capacity = market['capacity']['vcpus']
        self.assertEqual(16, capacity)      # 2 hosts x 8 physical CPUs
        self.assertEqual(reserve, market['reserve']['vcpus'])
        servers = period['servers']
        demand = sum(s['vcpus'] for s in servers)
        self.assertEqual(demand, market['demand']['vcpus'])
        self.assertEqual(demand > capacity, market['contended']['vcpus'])
        self.assertAlmostEqual(sum(s['bids']['vcpus'] for s in servers),
                               market['bids']['vcpus'])
        shares = [s['shares']['vcpus'] for s in servers]
        self.assertLessEqual(sum(shares), capacity + 1e-9)
        for s in servers:
            self.assertLessEqual(s['shares']['vcpus'], s['vcpus'])
            self.assertAlmostEqual(sum(s['bids'].values()), s['bid'])
            # what the share costs at the clearing prices, <= the bid
            self.assertAlmostEqual(
                sum(period['prices']['default'][r] * a
                    for r, a in s['shares'].items()),
                s['charge_per_hour'], delta=1e-9)
            self.assertLessEqual(s['charge_per_hour'], s['bid'] + 1e-9)
            self.assertAlmostEqual(price * s['vcpus'], s['cost_per_hour'])
        if demand <= capacity:
            # the reserve; every flavor served; nobody out of bid
            self.assertEqual(reserve, price)
            self.assertEqual([s['vcpus'] for s in servers], shares)
            self.assertEqual([], period['notices'])
            return
        # contended: work-conserving (every CPU is shared out), price x
        # capacity within the bids, and p* is eq. 1 on what the capped
        # servers leave: sum(uncapped bids) / (C - sum(capped flavors))
        self.assertAlmostEqual(capacity, sum(shares), delta=1e-6)
        self.assertLess(reserve, price)
        self.assertLessEqual(price * capacity,
                             market['bids']['vcpus'] + 1e-9)
        capped = [s for s in servers if s['shares']['vcpus'] == s['vcpus']]
        short = [s for s in servers if s not in capped]
        self.assertTrue(short)
        self.assertAlmostEqual(
            sum(s['bids']['vcpus'] for s in short)
            / (capacity - sum(s['vcpus'] for s in capped)), price)
        for s in capped:
            self.assertGreaterEqual(s['bids']['vcpus'] / price, s['vcpus'])
        for s in short:
            self.assertAlmostEqual(s['bids']['vcpus'] / price,
                                   s['shares']['vcpus'])
        # notices go to some of the short servers, never to one whose
        # share covers its flavor
        noticed = {n['server_id'] for n in period['notices']}
        self.assertTrue(noticed)
        self.assertLessEqual(noticed, {s['server_id'] for s in short})

    def test_bad_input_is_a_usage_error(self):
        rc, out, err = run_cli('market', 'demo', '--period-seconds', '60',
                               '--notice-seconds', '60')
        self.assertEqual(2, rc)
        self.assertIn('--notice-seconds (60) must be below --period-seconds '
                      '(60)', err)
        self.assertNotIn('starting Nova', out + err)
        rc, out, err = run_cli('market', 'demo', '--periods', '0')
        self.assertEqual(2, rc)
        self.assertIn('--periods: must be between 1 and 100, got 0', err)
        rc, out, err = run_cli('market', 'demo', '--format', 'csv')
        self.assertEqual(2, rc)
        self.assertIn("argument -f/--format: invalid choice: 'csv'", err)

    def test_run_demo_checks_its_arguments(self):
        from opie_sched.demo import market
        for kwargs in ({'periods': 0}, {'periods': True},
                       {'period_seconds': 0}, {'notice_seconds': -1},
                       {'period_seconds': 60, 'notice_seconds': 60}):
            self.assertRaises(ValueError, market.run_demo, **kwargs)


class PreemptibleCpuRatioTest(testtools.TestCase):
    """The embedded cloud can overcommit preemptible CPUs (nothing
    starts: the checks and the provider config only).
    """

    def test_bad_ratio_is_refused(self):
        from opie_sched.demo import cloud
        for ratio in (0, -1, True, '2', float('inf'), float('nan'), None):
            self.assertRaisesRegex(ValueError, 'preemptible_cpu_ratio',
                                   cloud.EmbeddedCloud,
                                   preemptible_cpu_ratio=ratio)
        self.assertEqual(1.0, cloud.EmbeddedCloud().preemptible_cpu_ratio)

    def test_provider_config_carries_the_ratio(self):
        from opie_sched.demo import cloud
        import yaml
        directory = self.useFixture(fixtures.TempDir()).path

        def ratios(**kwargs):
            with open(cloud.write_provider_config(directory,
                                                  **kwargs)) as f:
                doc = yaml.safe_load(f)
            [provider] = doc['providers']
            return {rc: inv['allocation_ratio']
                    for item in provider['inventories']['additional']
                    for rc, inv in item.items()}
        self.assertEqual({1.0}, set(ratios().values()))
        overcommitted = ratios(cpu_allocation_ratio=2.0)
        self.assertEqual(2.0, overcommitted.pop('CUSTOM_PREEMPTIBLE_VCPU'))
        self.assertEqual({1.0}, set(overcommitted.values()))


class ConnectionHelperTest(testtools.TestCase):
    """:func:`opie_sched.demo.clients.connection` refuses bad input."""

    def test_token_must_be_user_colon_project(self):
        for token in ('alice', ':alpha', 'alice:', 'a:b:c', None):
            self.assertRaisesRegex(ValueError, 'user:project',
                                   clients.connection, object(), token)
        self.assertEqual(('alice', 'alpha'), clients.parse_token(
            'alice:alpha'))

    def test_needs_the_real_clients_fixture(self):
        self.assertFalse(clients.real_clients_enabled())
        self.assertRaisesRegex(RuntimeError, 'RealClients',
                               clients.connection, object(), 'alice:alpha')
