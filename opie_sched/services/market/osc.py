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
    openstack spot price history [--start T] [--end T] [--pool P]
                                 [--resource R]
    openstack spot bid set SERVER PRICE
    openstack spot bid show SERVER
    openstack spot account show [--project PROJECT]

Prices are currency per unit-hour (vCPU-hour, MB-hour), bids currency per
hour; times ISO 8601 or epoch seconds. The market's endpoint is
``--os-spot-endpoint`` / ``OS_SPOT_ENDPOINT``, else the catalog's
``spot-market`` service. Entry points (setup.cfg)::

    openstack.cli.extension =
        spot = opie_sched.services.market.osc
    openstack.spot.v1 =
        spot_price_list = opie_sched.services.market.osc:PriceList
        ...
"""

import os

from osc_lib.command import command
from osc_lib import exceptions

API_NAME = 'spot'
API_VERSION_OPTION = 'os_spot_api_version'
DEFAULT_API_VERSION = '1'
API_VERSIONS = {'1': 'opie_sched.services.market.osc.SpotClient'}
#: Service type of the market in the Keystone catalog.
SERVICE_TYPE = 'spot-market'


class SpotClient:
    """A thin JSON client of the market API over a keystoneauth session.

    :param session: keystoneauth1 session (adds the token).
    :param endpoint: the API root, e.g. ``http://market:8788``.
    """

    def __init__(self, session, endpoint):
        self.session = session
        self.endpoint = endpoint.rstrip('/')
        if self.endpoint.endswith('/v1'):
            self.endpoint = self.endpoint[:-3]

    def _call(self, method, path, body=None, params=None):
        kwargs = {'raise_exc': False,
                  'headers': {'Accept': 'application/json'}}
        if body is not None:
            kwargs['json'] = body
        if params:
            kwargs['params'] = {k: v for k, v in params.items()
                                if v is not None}
        resp = self.session.request(self.endpoint + '/v1' + path, method,
                                    **kwargs)
        try:
            data = resp.json()
        except ValueError:
            data = {}
        if resp.status_code >= 400:
            message = (data.get('error') or {}).get('message') or getattr(
                resp, 'text', '')
            raise exceptions.CommandError('%s %s: HTTP %s: %s' % (
                method, path, resp.status_code, message))
        return data

    def prices(self):
        return self._call('GET', '/prices')

    def shares(self):
        return self._call('GET', '/shares')

    def history(self, start=None, end=None, pool=None, resource=None):
        return self._call('GET', '/prices/history', params={
            'start': start, 'end': end, 'pool': pool,
            'resource': resource})['history']

    def get_bid(self, server_id):
        return self._call('GET', '/servers/%s/bid' % server_id)['bid']

    def set_bid(self, server_id, bid):
        return self._call('PUT', '/servers/%s/bid' % server_id,
                          {'bid': bid})['bid']

    def account(self, project=None):
        return self._call('GET', '/account',
                          params={'project_id': project})['account']


def make_client(instance):
    """The :class:`SpotClient` of an OSC ClientManager."""
    endpoint = None
    config = getattr(getattr(instance, '_cli_options', None), 'config',
                     None) or {}
    endpoint = config.get('spot_endpoint') or os.environ.get(
        'OS_SPOT_ENDPOINT')
    if not endpoint:
        endpoint = instance.get_endpoint_for_service_type(
            SERVICE_TYPE, region_name=instance.region_name,
            interface=instance.interface)
    return SpotClient(instance.session, endpoint)


def build_option_parser(parser):
    """Global options of the plugin."""
    parser.add_argument(
        '--os-spot-api-version', metavar='<spot-api-version>',
        default=os.environ.get('OS_SPOT_API_VERSION', DEFAULT_API_VERSION),
        help='Spot market API version (default 1, env OS_SPOT_API_VERSION)')
    parser.add_argument(
        '--os-spot-endpoint', metavar='<url>',
        default=os.environ.get('OS_SPOT_ENDPOINT'),
        help='Spot market API endpoint (env OS_SPOT_ENDPOINT; default: '
             'the catalog\'s %s service)' % SERVICE_TYPE)
    return parser


def _client(cmd):
    return cmd.app.client_manager.spot


class PriceList(command.Lister):
    """Current spot prices (currency per unit-hour), by pool and resource.
    """

    def take_action(self, parsed_args):
        data = _client(self).prices()
        return (('Pool', 'Resource', 'Price', 'Unit', 'Period start'),
                [(p['pool'], p['resource'], p['price'], p['unit'],
                  data['period_start']) for p in data['prices']])


class ShareList(command.Lister):
    """Per-host shares and allocation errors of the running preemptible
    servers, most under-served first (admin; Merkat §3.1).
    """

    def take_action(self, parsed_args):
        rows = _client(self).shares()['shares']
        return (('Server', 'Host', 'Pool', 'vCPU share', 'vCPU pool-wide',
                 'Error'),
                [(r['server_id'], r['host'], r['pool'],
                  r['host_shares'].get('vcpus'), r['cluster'].get('vcpus'),
                  r['error']) for r in rows])


class PriceHistory(command.Lister):
    """Spot prices of past periods."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--start', metavar='<time>',
                            help='from this time (ISO 8601 or epoch s)')
        parser.add_argument('--end', metavar='<time>',
                            help='until this time, excluded')
        parser.add_argument('--pool', metavar='<pool>')
        parser.add_argument('--resource', metavar='<resource>',
                            choices=['vcpus', 'memory_mb'])
        return parser

    def take_action(self, parsed_args):
        rows = _client(self).history(parsed_args.start, parsed_args.end,
                                     parsed_args.pool, parsed_args.resource)
        return (('Period start', 'Pool', 'Resource', 'Price', 'Capacity',
                 'Bids'),
                [(r['period_start'], r['pool'], r['resource'], r['price'],
                  r['capacity'], r['bids']) for r in rows])


def _server_id(cmd, name_or_id):
    try:
        compute = cmd.app.client_manager.sdk_connection.compute
        return compute.find_server(name_or_id, ignore_missing=False).id
    except Exception as exc:
        raise exceptions.CommandError('server %s: %s' % (name_or_id, exc))


def _bid_row(bid):
    columns = ('server_id', 'project_id', 'bid', 'source', 'error',
               'notice')
    return columns, tuple(bid.get(c) for c in columns)


class BidSet(command.ShowOne):
    """Set the bid of a preemptible server (currency per hour)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('server', metavar='<server>',
                            help='server name or ID (yours)')
        parser.add_argument('price', metavar='<price>',
                            help='bid, currency per hour (decimal)')
        return parser

    def take_action(self, parsed_args):
        server = _server_id(self, parsed_args.server)
        return _bid_row(_client(self).set_bid(server, parsed_args.price))


class BidShow(command.ShowOne):
    """Show the bid of a preemptible server and any preemption notice."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('server', metavar='<server>')
        return parser

    def take_action(self, parsed_args):
        server = _server_id(self, parsed_args.server)
        return _bid_row(_client(self).get_bid(server))


class AccountShow(command.ShowOne):
    """Show your project's market account (balance, refill, notices)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--project', metavar='<project-id>',
                            help='another project (admin only)')
        return parser

    def take_action(self, parsed_args):
        account = _client(self).account(parsed_args.project)
        notices = '; '.join(
            '%s %s until %s' % (n['server_id'], n['kind'], n['deadline'])
            for n in account.get('notices', []))
        columns = ('project_id', 'balance', 'refill_rate', 'cap',
                   'notices')
        return columns, (account['project_id'], account['balance'],
                         account['refill_rate'], account['cap'], notices)
