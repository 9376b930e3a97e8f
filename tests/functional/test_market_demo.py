"""``opie-sched market demo``: the spot market engine on the embedded Nova.

The command runs in-process (``opie_sched.cmd.cli.main``), starts its own
all-in-one Nova and prints one JSON document; the assertions read the
market's story from it: prices rise with demand, the lowest bidder is
given notice and then preempted, an owner who raises the bid keeps the
server, and balances fall by exactly what was charged.
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

        # prices rise with demand; Merkat eq. 1: sum(bids) / capacity
        for resource in ('vcpus', 'memory_mb'):
            prices = [p['prices']['default'][resource] for p in periods]
            self.assertLess(prices[0], prices[1])
            self.assertLess(prices[1], prices[2])
            for p in periods:
                market = p['market']['default']
                self.assertAlmostEqual(
                    market['bids'][resource] / market['capacity'][resource],
                    p['prices']['default'][resource])
        totals = [p['total_bids']['default'] for p in periods]
        self.assertLess(totals[0], totals[1])
        self.assertLess(totals[1], totals[2])

        # nobody is out of bid while demand is low
        first, second, third = periods
        self.assertEqual([], first['notices'])
        self.assertEqual([], first['preempted'])

        # demand rises: the lowest bidder gets notice, then is deleted
        lowest = min(second['servers'], key=lambda s: s['bid'])
        self.assertEqual('gamma-1', lowest['server'])
        self.assertLess(lowest['bid'], lowest['cost_per_hour'])
        [notice] = second['notices']
        self.assertEqual((lowest['server_id'], 'gamma', 'out_of_bid'),
                         (notice['server_id'], notice['project'],
                          notice['kind']))
        self.assertIn('your bid of 0.03 per hour is below the spot price',
                      notice['reason'])
        self.assertEqual(second['period_start'] + NOTICE, notice['deadline'])
        [preempted] = second['preempted']
        self.assertEqual(lowest['server_id'], preempted['server_id'])
        self.assertEqual(notice['deadline'], preempted['at'])
        self.assertEqual('preempted', lowest['outcome'])
        self.assertNotIn(lowest['server_id'],
                         [s['server_id'] for s in third['servers']])

        # next wave: the two lowest bids are out; alpha-2's owner raises
        # its bid and keeps it, beta-1 is deleted
        self.assertEqual({'alpha-2', 'beta-1'},
                         {n['server'] for n in third['notices']})
        [action] = third['owner_actions']
        self.assertEqual(('alpha-2', 'alice', 0.08, 0.2),
                         (action['server'], action['user'],
                          action['old_bid'], action['new_bid']))
        self.assertIn('out of bid', action['saw_notice'])
        self.assertEqual(['alpha-2'],
                         [n['server'] for n in third['cancelled']])
        self.assertEqual(['beta-1'],
                         [n['server'] for n in third['preempted']])

        # balances: start - charged + refill, period after period
        credit = {a['project']: a['credit'] for a in result['projects']}
        previous = credit
        hours = PERIOD / 3600
        for p in periods:
            for project, account in p['accounts'].items():
                mine = [s for s in p['servers'] if s['project'] == project]
                for server in mine:  # ledger amounts are rounded to 1e-6
                    self.assertAlmostEqual(server['cost_per_hour'] * hours,
                                           server['charged'], delta=1e-6)
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
            [('gamma-1', 1), ('gamma-1', 2), ('gamma-2', 2),
             ('gamma-2', 3)],
            sorted((e['server'], 1 + (e['time'] - first['period_start'])
                    // PERIOD) for e in charges))
        self.assertAlmostEqual(previous['gamma'], entries[-1]['balance'])

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
        rc, out, err = run_cli('market', 'demo', '--format', 'yaml')
        self.assertEqual(2, rc)

    def test_run_demo_checks_its_arguments(self):
        from opie_sched.cmd import market
        for kwargs in ({'periods': 0}, {'periods': True},
                       {'period_seconds': 0}, {'notice_seconds': -1},
                       {'period_seconds': 60, 'notice_seconds': 60}):
            self.assertRaises(ValueError, market.run_demo, **kwargs)


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
