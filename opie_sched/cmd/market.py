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
"""``opie-sched market``: what-if tools for the proportional-share market.

``opie-sched market allocate SNAPSHOT.json`` reads a snapshot of hosts and
bidding VMs (:mod:`opie_sched.market.snapshot`; ``-`` reads standard
input) and shows, with the code of :mod:`opie_sched.market.pricing`: each
pool's and each host's price per resource (Merkat eq. 1, floored at the
reserve price), every VM's share computed on the whole pool and on its
host, and its allocation errors (Merkat §3.1). VMs without a host are
placed first, worst-fit decreasing by bid (Themis §III.B).

``opie-sched market demo [--periods N] [--period-seconds S]
[--notice-seconds S]`` runs the spot market service's engine against the
demo's all-in-one in-process Nova with a fake clock
(:func:`opie_sched.demo.market.run_demo`).

Both show one object through cliff's formatters: ``-f json`` prints the
JSON document of :func:`opie_sched.market.snapshot.to_json` and
:func:`opie_sched.demo.market.run_demo`.
"""

import argparse
import sys

from opie_sched.cmd import cli
from opie_sched.cmd import columns
from opie_sched.market import bids as market_bids
from opie_sched.market import pricing
from opie_sched.market import snapshot

#: Nested tables of ``market allocate`` (headings, keys); prices currency
#: per unit-hour, bids currency per hour, shares in units, errors as
#: fractions.
_POOLS = (('pool', 'pool'), ('capacity', 'capacity'), ('bids/h', 'bids'),
          ('price/unit-h', 'prices'))
_HOSTS = (('host', 'name'), ('pool', 'pool'), ('capacity', 'capacity'),
          ('bids/h', 'bids'), ('price/unit-h', 'prices'), ('vms', 'vms'))
_VMS = (('vm', 'uuid'),
        ('host', lambda v: v['host'] + (' (placed)' if v['placed'] else '')),
        ('bid source', 'bid_source'), ('bids/h', 'bids'),
        ('cluster share', 'cluster_share'), ('host share', 'host_share'),
        ('errors', 'errors'), ('vm error', 'error'))
_PROJECTS = (('project', 'project'), ('user', 'user'), ('credit', 'credit'))


class Allocate(cli.ShowOne):
    """Show prices, shares and allocation errors for a market snapshot.

    The snapshot lists hosts and bidding VMs.

    Fields: resources, reserve_price (currency per unit-hour), pools and
    hosts (capacity, sum of bids per hour, price per unit-hour), vms (bid
    source, bids per hour, share on the pool and on the host, allocation
    errors). SNAPSHOT.json is described in opie_sched.market.snapshot;
    invalid snapshots fail with the path of the offending field, e.g.
    vms[2].bid: must not be negative, got -1.
    """

    errors = (snapshot.SnapshotError, market_bids.BidError)

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('snapshot', metavar='SNAPSHOT.json',
                            help='the snapshot (JSON); - for standard '
                                 'input')
        return parser

    def take_action(self, args):
        hosts, vms, reserve, sources = snapshot.parse(
            snapshot.read(args.snapshot))
        try:
            allocation = pricing.allocate(hosts, vms, reserve)
        except ValueError as exc:
            raise snapshot.SnapshotError(str(exc))
        doc = snapshot.to_json(allocation, reserve, sources)
        return (('resources', 'reserve_price', 'pools', 'hosts', 'vms'),
                (columns.Words(doc['resources']),
                 columns.Mapping(doc['reserve_price']),
                 columns.Table(doc['pools'], _POOLS),
                 columns.Table(doc['hosts'], _HOSTS),
                 columns.Table(doc['vms'], _VMS)))


def _bounded_int(minimum, maximum=None):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError('not an integer: %r' % text)
        if value < minimum or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(
                'must be %s, got %d' % (
                    '>= %d' % minimum if maximum is None
                    else 'between %d and %d' % (minimum, maximum), value))
        return value
    return parse


class Demo(cli.ShowOne):
    """Run the spot market service on an all-in-one in-process Nova.

    Rising demand, prices, notices, preemptions and balances, period by
    period.

    Starts Nova in-process (2 fake hosts of 8 vCPU, 16000 MB, preemptible
    vCPU overcommitted 2:1), three projects with credit whose users boot
    preemptible servers with bids (server metadata opie:bid), and runs the
    opie-market engine on the physical CPUs period by period with a fake
    clock. While the demand fits, prices are the reserve; once it exceeds
    the CPUs, prices clear the market and the lowest bidders whose shares
    no longer cover their flavors get notice. Prices are currency per
    unit-hour, bids and charges per hour currency per hour, charges and
    balances currency. Progress goes to standard error; the periods and
    the ledger are fields of the output (-f json: one JSON document).
    """

    def get_parser(self, prog_name):
        from opie_sched.demo import market as demo
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--periods', type=_bounded_int(1, demo.DEMO_MAX_PERIODS),
            default=6, help='market periods to run (default %(default)s)')
        parser.add_argument(
            '--period-seconds', type=_bounded_int(1), default=3600,
            help='length of a market period, seconds (default '
                 '%(default)s; the clock is fake)')
        parser.add_argument(
            '--notice-seconds', type=_bounded_int(0), default=300,
            help='seconds between a preemption notice and the deletion, '
                 'below --period-seconds (default %(default)s)')
        return parser

    @property
    def errors(self):
        from opie_sched.demo import market as demo
        return (demo.DemoError,)

    def take_action(self, args):
        from opie_sched.demo import market as demo

        def say(text):
            sys.stderr.write('opie-sched market demo: %s\n' % text)
            sys.stderr.flush()

        if args.notice_seconds >= args.period_seconds:
            raise cli.UsageError(
                '--notice-seconds (%d) must be below --period-seconds (%d): '
                'the demo enforces every notice within its period'
                % (args.notice_seconds, args.period_seconds))
        try:
            result = demo.run_demo(args.periods, args.period_seconds,
                                   args.notice_seconds, say=say)
        except ValueError as exc:
            raise cli.UsageError(str(exc))
        errors = sum(len(p['errors']) + len(p['boot_failures'])
                     for p in result['periods'])
        if errors:
            # the story so far, then the failure
            sys.stderr.write('\n'.join(
                demo.format_demo_period(p, args.periods)
                for p in result['periods']) + '\n')
            raise demo.DemoError('%d market or boot errors (see the '
                                 'periods above)' % errors)
        shown = {
            'host_capacity': columns.Mapping(result['host_capacity']),
            'reserve_prices': columns.Mapping(result['reserve_prices']),
            'projects': columns.Table(result['projects'], _PROJECTS),
            'periods': columns.Text(result['periods'], '\n\n'.join(
                demo.format_demo_period(p, args.periods).lstrip('\n')
                for p in result['periods'])),
            'ledger': columns.Text(result['ledger'], demo.format_demo_ledger(
                result['ledger']).lstrip('\n')),
        }
        return list(result), [shown.get(k, v) for k, v in result.items()]
