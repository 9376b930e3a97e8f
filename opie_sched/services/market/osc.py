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
"""python-openstackclient plugin of the opie-market API.

Commands::

    openstack spot price list
    openstack spot price show FLAVOR [--hours 24]
    openstack spot price history [--start T] [--end T] [--pool P]
                                 [--resource R] [--limit N] [--marker M]
    openstack spot bid set SERVER PRICE
    openstack spot bid show SERVER
    openstack spot bid unset SERVER
    openstack spot account show [--project PROJECT]
    openstack spot account credit PROJECT AMOUNT [--note TEXT]   (admin)
    openstack spot ledger list [--project P] [--since T] [--limit N]
                               [--marker M]
    openstack spot notice list [--project P] [--state S] [--limit N]
                               [--marker M]
    openstack spot share list                                    (admin)
    openstack spot placement-score FLAVOR [--count N] [--zone Z] [--bid B]
    openstack spot interruption-history FLAVOR [--zone Z] [--since T]
                               [--period-seconds S] [--curve] [--plot F]
    openstack spot event list [--server S] [--project P] [--limit N]
                              [--marker M]
    openstack spot interruption simulate SERVER [--notice-seconds N]

Prices are currency per unit-hour (vCPU-hour, MB-hour), bids and flavor
prices currency per hour; times ISO 8601 or epoch seconds. The market's
endpoint is ``--os-spot-endpoint`` / ``OS_SPOT_ENDPOINT``, else the
catalog's ``spot-market`` service. ``--os-spot-api-version`` /
``OS_SPOT_API_VERSION`` is the microversion sent in ``OpenStack-API-Version:
spot-market X.Y``: ``1`` (the default) means the newest this client knows
(:data:`opie_sched.services.market.client.MAX_VERSION`); ``1.0`` refuses the
commands that need 1.1 (``price show``, ``bid unset``, ``notice list``,
``--marker``), ``1.1`` those of 1.2 (``placement-score``,
``interruption-history``, ``event list``) and ``1.2`` those of 1.3
(``interruption simulate``). Lists without ``--limit``
follow the API's pages to the end; with ``--limit`` they show one page
(pass the last row's ID as ``--marker`` for the next).

All calls go through :class:`opie_sched.services.market.client.
MarketClient`; this module imports neither nova nor the market service.
Entry points (setup.cfg)::

    openstack.cli.extension =
        spot = opie_sched.services.market.osc
    openstack.spot.v1 =
        spot_price_list = opie_sched.services.market.osc:PriceList
        ...
"""

import os
import re

from osc_lib.command import command
from osc_lib import exceptions

from opie_sched.services.market import client as market_client

API_NAME = 'spot'
API_VERSION_OPTION = 'os_spot_api_version'
DEFAULT_API_VERSION = '1'
API_VERSIONS = {'1': 'opie_sched.services.market.client.MarketClient'}
#: Service type of the market in the Keystone catalog.
SERVICE_TYPE = market_client.SERVICE_TYPE
#: Rows per page when a list follows every page.
PAGE = 500


def api_version(option):
    """The microversion to send for ``--os-spot-api-version`` ``option``
    (``'1'``: the newest the client knows).

    :raises CommandError: not ``1``, ``1.N`` or ``latest``.
    """
    text = str(option or DEFAULT_API_VERSION).strip()
    if text in ('1', ''):
        return market_client.MAX_VERSION
    if text == 'latest':
        return text
    major, _, minor = text.partition('.')
    if major != '1' or not minor.isdigit():
        raise exceptions.CommandError(
            '--os-spot-api-version: expected 1, 1.N or latest, got %r'
            % text)
    return text


def make_client(instance):
    """The :class:`~opie_sched.services.market.client.MarketClient` of an
    OSC ClientManager: its session, ``--os-spot-endpoint`` or the
    catalog's ``spot-market`` endpoint, ``--os-spot-api-version``.
    """
    config = getattr(getattr(instance, '_cli_options', None), 'config',
                     None) or {}
    endpoint = config.get('spot_endpoint') or os.environ.get(
        'OS_SPOT_ENDPOINT')
    if not endpoint:
        endpoint = instance.get_endpoint_for_service_type(
            SERVICE_TYPE, region_name=instance.region_name,
            interface=instance.interface)
    version = (getattr(instance, '_api_version', None) or {}).get(API_NAME)
    return market_client.MarketClient(
        instance.session, endpoint, api_version=api_version(version))


def build_option_parser(parser):
    """Global options of the plugin."""
    parser.add_argument(
        '--os-spot-api-version', metavar='<spot-api-version>',
        default=os.environ.get('OS_SPOT_API_VERSION', DEFAULT_API_VERSION),
        help='Spot market API microversion sent as "OpenStack-API-Version: '
             'spot-market X.Y": 1 (default: the newest this client knows, '
             '%s), 1.0, 1.1, 1.2, 1.3 or latest (env OS_SPOT_API_VERSION)'
             % market_client.MAX_VERSION)
    parser.add_argument(
        '--os-spot-endpoint', metavar='<url>',
        default=os.environ.get('OS_SPOT_ENDPOINT'),
        help='Spot market API endpoint, e.g. http://controller:8788 (env '
             'OS_SPOT_ENDPOINT; default: the catalog\'s %s service)'
             % SERVICE_TYPE)
    return parser


def _client(cmd):
    return cmd.app.client_manager.spot


class _MarketCommand:
    """Turns market client errors into CommandError (a clean message and
    exit code 1 instead of a traceback).
    """

    def take_action(self, parsed_args):
        try:
            return self.market_action(_client(self), parsed_args)
        except market_client.MarketError as exc:
            raise exceptions.CommandError(str(exc))


class _PagedList(_MarketCommand, command.Lister):
    """A listing: one page with ``--limit``/``--marker``; else every page
    (at microversion 1.0, without pagination, the one answer).

    Subclasses set :attr:`method` (the client's), :attr:`filters` and
    :attr:`columns`, add their filter options in :meth:`add_filters` and
    turn one API row into a table row in :meth:`row`.
    """

    #: Client method of the listing.
    method = None
    #: ``((API parameter, parsed_args attribute), ...)``.
    filters = ()
    #: Column titles.
    columns = ()

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        self.add_filters(parser)
        parser.add_argument('--limit', metavar='<n>', type=int,
                            help='at most this many rows (one page)')
        parser.add_argument('--marker', metavar='<id>',
                            help='rows after the one of this ID')
        return parser

    def add_filters(self, parser):
        """Add the listing's own options to ``parser``."""

    def row(self, item):
        """The table row of one API row."""
        raise NotImplementedError

    def market_action(self, client, parsed_args):
        kwargs = {param: getattr(parsed_args, attr)
                  for param, attr in self.filters}
        if parsed_args.limit is not None or parsed_args.marker:
            rows = getattr(client, self.method)(
                limit=parsed_args.limit, marker=parsed_args.marker, **kwargs)
        elif client.api_version == '1.0':
            rows = getattr(client, self.method)(**kwargs)
        else:
            rows = client.all_pages(self.method, limit=PAGE, **kwargs)
        return self.columns, [self.row(r) for r in rows]


class PriceList(_MarketCommand, command.Lister):
    """Current spot prices (currency per unit-hour), by pool and resource.
    """

    def market_action(self, client, parsed_args):
        data = client.prices()
        return (('Pool', 'Resource', 'Price', 'Unit', 'Period start'),
                [(p['pool'], p['resource'], p['price'], p['unit'],
                  data['period_start']) for p in data['prices']])


def _flavor(cmd, name_or_id):
    try:
        compute = cmd.app.client_manager.sdk_connection.compute
        return compute.find_flavor(name_or_id, ignore_missing=False)
    except Exception as exc:
        raise exceptions.CommandError('flavor %s: %s' % (name_or_id, exc))


class PriceShow(_MarketCommand, command.Lister):
    """What a flavor costs per hour on the spot market, now and over the
    last hours, per availability zone and pool.

    Price per hour = sum over resources of price (per unit-hour) times the
    flavor's amount (vCPUs, RAM in MB); min, mean and max over the
    recorded periods of the window.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('flavor', metavar='<flavor>',
                            help='flavor name or ID')
        parser.add_argument('--hours', metavar='<hours>', type=int,
                            default=24,
                            help='look-back window in hours (default 24)')
        return parser

    def market_action(self, client, parsed_args):
        flavor = _flavor(self, parsed_args.flavor)
        doc = client.flavor_prices(flavor.vcpus, flavor.ram,
                                   parsed_args.hours)
        return (('Availability zone', 'Pool', 'Now (/h)',
                 'Min %dh (/h)' % doc['hours'], 'Mean %dh (/h)'
                 % doc['hours'], 'Max %dh (/h)' % doc['hours'], 'Periods'),
                [(z['availability_zone'], z['pool'], z['price_per_hour'],
                  z['min_per_hour'], z['mean_per_hour'], z['max_per_hour'],
                  z['periods']) for z in doc['zones']])


class ShareList(_MarketCommand, command.Lister):
    """Per-host shares and allocation errors of the running preemptible
    servers, most under-served first (admin; Merkat §3.1).
    """

    def market_action(self, client, parsed_args):
        rows = client.shares()['shares']
        return (('Server', 'Host', 'Pool', 'vCPU share', 'vCPU pool-wide',
                 'Error'),
                [(r['server_id'], r['host'], r['pool'],
                  r['host_shares'].get('vcpus'), r['cluster'].get('vcpus'),
                  r['error']) for r in rows])


class PriceHistory(_PagedList):
    """Spot prices of past periods."""

    method = 'price_history'
    filters = (('start', 'start'), ('end', 'end'), ('pool', 'pool'),
               ('resource', 'resource'))
    columns = ('ID', 'Period start', 'Pool', 'Resource', 'Price',
               'Capacity', 'Bids')

    def add_filters(self, parser):
        parser.add_argument('--start', metavar='<time>',
                            help='from this time (ISO 8601 or epoch s)')
        parser.add_argument('--end', metavar='<time>',
                            help='until this time, excluded')
        parser.add_argument('--pool', metavar='<pool>')
        parser.add_argument('--resource', metavar='<resource>',
                            choices=['vcpus', 'memory_mb'])

    def row(self, r):
        return (r.get('id'), r['period_start'], r['pool'], r['resource'],
                r['price'], r['capacity'], r['bids'])


def _server_id(cmd, name_or_id):
    try:
        compute = cmd.app.client_manager.sdk_connection.compute
        return compute.find_server(name_or_id, ignore_missing=False).id
    except Exception as exc:
        raise exceptions.CommandError('server %s: %s' % (name_or_id, exc))


def _show(doc, columns):
    """``(columns, values)`` of a ShowOne: ``doc``'s values (dict) of
    ``columns`` (tuple of str), None where ``doc`` has none.
    """
    return columns, tuple(doc.get(c) for c in columns)


def _bid_row(bid):
    return _show(bid, ('server_id', 'project_id', 'bid', 'source', 'error',
                       'notice'))


class BidSet(_MarketCommand, command.ShowOne):
    """Set the bid of a preemptible server (currency per hour)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('server', metavar='<server>',
                            help='server name or ID (yours)')
        parser.add_argument('price', metavar='<price>',
                            help='bid, currency per hour (decimal)')
        return parser

    def market_action(self, client, parsed_args):
        server = _server_id(self, parsed_args.server)
        return _bid_row(client.set_bid(server, parsed_args.price))


class _ServerBid(_MarketCommand, command.ShowOne):
    """A command on one server's bid: ``<server>`` (name or ID) is given
    to the market client's method named :attr:`bid_method`, whose bid
    document is shown.
    """

    #: name of the market client method, called with the server ID
    bid_method = None

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('server', metavar='<server>')
        return parser

    def market_action(self, client, parsed_args):
        server = _server_id(self, parsed_args.server)
        return _bid_row(getattr(client, self.bid_method)(server))


class BidUnset(_ServerBid):
    """Remove a preemptible server's own bid: it bids its flavor's
    ``opie:bid``, else the market's default, from the next period.
    """

    bid_method = 'unset_bid'


class BidShow(_ServerBid):
    """Show the bid of a preemptible server and any preemption notice."""

    bid_method = 'get_bid'


class AccountShow(_MarketCommand, command.ShowOne):
    """Show your project's market account (balance, refill, notices)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--project', metavar='<project-id>',
                            help='another project (admin only)')
        return parser

    def market_action(self, client, parsed_args):
        account = client.account(parsed_args.project)
        notices = '; '.join(
            '%s %s until %s' % (n['server_id'], n['kind'], n['deadline'])
            for n in account.get('notices', []))
        columns = ('project_id', 'balance', 'refill_rate', 'cap',
                   'notices')
        return columns, (account['project_id'], account['balance'],
                         account['refill_rate'], account['cap'], notices)


class AccountCredit(_MarketCommand, command.ShowOne):
    """Grant credit (currency) to a project's market account (admin)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('project', metavar='<project-id>')
        parser.add_argument('amount', metavar='<amount>',
                            help='currency, decimal > 0')
        parser.add_argument('--note', metavar='<text>',
                            help='why (at most 255 characters)')
        return parser

    def market_action(self, client, parsed_args):
        entry = client.credit(parsed_args.project, parsed_args.amount,
                              parsed_args.note)
        columns = ('project_id', 'kind', 'amount', 'balance', 'granted_at',
                   'note')
        return _show(entry, columns)


def _add_project(parser):
    parser.add_argument('--project', metavar='<project-id>',
                        help='another project (admin only)')


class LedgerList(_PagedList):
    """Your project's ledger: refills, charges and credits, oldest
    first (currency).
    """

    method = 'ledger'
    filters = (('project_id', 'project'), ('since', 'since'))
    columns = ('ID', 'Kind', 'Server', 'Period start', 'Amount', 'Balance',
               'Posted at', 'Note')

    def add_filters(self, parser):
        _add_project(parser)
        parser.add_argument('--since', metavar='<time>',
                            help='entries posted at or after this time')

    def row(self, e):
        return (e.get('id'), e['kind'], e['server_id'],
                e.get('period_start') or e.get('granted_at'), e['amount'],
                e['balance'], e['posted_at'], e['note'])


class NoticeList(_PagedList):
    """Preemption notices of your project's servers (every state, or
    ``--state``), oldest first.
    """

    method = 'notices'
    filters = (('project_id', 'project'), ('state', 'state'))
    columns = ('Server', 'Kind', 'State', 'Deadline', 'Action', 'Reason')

    def add_filters(self, parser):
        _add_project(parser)
        parser.add_argument('--state', metavar='<state>',
                            choices=['noticed', 'preempted', 'cancelled',
                                     'gone'])

    def row(self, n):
        return (n['server_id'], n['kind'], n['state'], n['deadline'],
                n.get('action'), n['reason'])


_UUID = re.compile(r'^[0-9a-fA-F]{8}-?([0-9a-fA-F]{4}-?){3}[0-9a-fA-F]{12}$')


class PlacementScore(_MarketCommand, command.Lister):
    """Would COUNT servers of a flavor fit now, per availability zone?

    Status per zone: ``fits_now`` (on free room, and a preemptible
    flavor's bid covers its price now), ``out_of_bid`` (room, but the bid
    is below the flavor's price per hour now), ``preempting`` (only where
    preemptible servers run: a normal boot preempts them; a preemptible
    one needs a bid above AT BID and waits for the market's notice to the
    cheaper ones), ``no_room``. Read-only.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('flavor', metavar='<flavor>',
                            help='flavor name or ID')
        parser.add_argument('--count', metavar='<n>', type=int, default=1,
                            help='servers wanted (default 1)')
        parser.add_argument('--zone', metavar='<zone>',
                            help='only this availability zone')
        parser.add_argument('--bid', metavar='<price>',
                            help='bid per server, currency per hour '
                                 '(default: the flavor\'s or the market\'s '
                                 'default bid)')
        return parser

    def market_action(self, client, parsed_args):
        doc = client.placement_score(parsed_args.flavor, parsed_args.count,
                                     parsed_args.zone, parsed_args.bid)
        return (('Availability zone', 'Status', 'Fit now',
                 'Fit preempting', 'At bid', 'Price (/h)', 'Bid (/h)',
                 'Hosts'),
                [(z['availability_zone'], z['status'], z['fit_now'],
                  z['fit_preempting'], z['at_bid'], z['price_per_hour'],
                  doc['bid'], z['hosts']) for z in doc['zones']])


class InterruptionHistory(_MarketCommand, command.Lister):
    """Interruption rate per period of a flavor's servers, or (``--curve``)
    their Kaplan-Meier survival curve; ``--plot FILE`` also writes both as
    a PNG (needs matplotlib). Drills are never counted; servers deleted by
    their owners count until then (censored).
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('flavor', metavar='<flavor>',
                            help='flavor name or ID')
        parser.add_argument('--zone', metavar='<zone>')
        parser.add_argument('--since', metavar='<time>',
                            help='ISO 8601 or epoch seconds (default 30 '
                                 'days ago)')
        parser.add_argument('--period-seconds', metavar='<seconds>',
                            type=int, help='period of the rates (default '
                                           '86400)')
        parser.add_argument('--curve', action='store_true',
                            help='list the survival curve instead')
        parser.add_argument('--plot', metavar='<file.png>',
                            help='write the curve and the rates as a PNG')
        return parser

    def market_action(self, client, parsed_args):
        doc = client.interruption_history(
            parsed_args.flavor, parsed_args.zone, parsed_args.since,
            parsed_args.period_seconds)
        if parsed_args.plot:
            try:
                from opie_sched.services.market import survival
                survival.plot(doc, parsed_args.plot)
            except ImportError as exc:
                raise exceptions.CommandError(
                    '--plot needs matplotlib (pip install '
                    'opie_sched[sim]): %s' % exc)
        if parsed_args.curve:
            return (('Hours', 'Survival', 'Low 95%', 'High 95%'),
                    [(float(p['seconds']) / 3600.0, p['survival'],
                      p['low'], p['high'])
                     for p in doc['survival']['points']])
        return (('Period start', 'Servers', 'Interruptions', 'Rate',
                 'Server-hours', 'Per server-hour'),
                [(r['period_start'], r['servers'], r['interruptions'],
                  r['rate'], r['server_hours'], r['per_server_hour'])
                 for r in doc['rates']])


class EventList(_PagedList):
    """Your project's event history, oldest first: at-risk marks,
    notices, interruptions (with the behaviour), restores, drills and
    deletions of its preemptible servers, deleted ones included (give
    ``--server`` their UUID).
    """

    method = 'events'
    filters = (('project_id', 'project'), ('server_id', 'server'))
    columns = ('ID', 'At', 'Server', 'Kind', 'Cause', 'Action', 'Flavor',
               'Detail')

    def add_filters(self, parser):
        _add_project(parser)
        parser.add_argument('--server', metavar='<server>',
                            help='one server (name, or the UUID of a '
                                 'deleted one)')

    def market_action(self, client, parsed_args):
        if parsed_args.server and not _UUID.match(parsed_args.server):
            parsed_args.server = _server_id(self, parsed_args.server)
        return super().market_action(client, parsed_args)

    def row(self, e):
        return (e['id'], e['at'], e['server_id'], e['kind'], e['cause'],
                e['action'], e['flavor'], e['detail'])


class InterruptionSimulate(_MarketCommand, command.ShowOne):
    """Send your own preemptible server through a real interruption (a
    drill): it is marked at risk and given notice now, exactly as the
    market's notices (server metadata ``opie:rebalance_recommendation``,
    ``opie:preempt_notice``, ``opie:preempt_deadline``, in the guest's
    ``meta_data.json``), then at the deadline its flavor's interruption
    behaviour is applied (delete, stop, shelve). Recorded as a drill in
    ``openstack spot event list``; never charged, never counted in
    prices or interruption histories. At most ``[opie_market]
    drill_limit`` drills per project per ``drill_window`` seconds.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('server', metavar='<server>',
                            help='server name or ID (yours, preemptible, '
                                 'ACTIVE)')
        parser.add_argument('--notice-seconds', metavar='<seconds>',
                            type=int,
                            help='seconds from the notice to the '
                                 'interruption (default and at most the '
                                 'market\'s notice period)')
        return parser

    def market_action(self, client, parsed_args):
        server = _server_id(self, parsed_args.server)
        doc = client.interruption_drill(server, parsed_args.notice_seconds)
        columns = ('server_id', 'project_id', 'state', 'noticed_at',
                   'deadline', 'notice_seconds', 'action', 'reason')
        return _show(doc, columns)


class InterruptionAck(_MarketCommand, command.ShowOne):
    """Acknowledge the preemption notice of your own server: its flavor's
    interruption behaviour (delete, stop, shelve) runs now instead of at
    the deadline, and a boot waiting for its room proceeds. Only a
    notice the market or the scheduler really gave can be acknowledged
    (409 otherwise); recorded as an ``ack`` in ``openstack spot event
    list``; it charges nothing.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('server', metavar='<server>',
                            help='server name or ID (yours, ACTIVE, under '
                                 'notice)')
        return parser

    def market_action(self, client, parsed_args):
        server = _server_id(self, parsed_args.server)
        doc = client.interruption_ack(server)
        columns = ('server_id', 'project_id', 'notice', 'kind',
                   'noticed_at', 'deadline', 'acknowledged_at', 'action')
        return _show(doc, columns)
