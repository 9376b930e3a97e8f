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
"""oslo.config options of ``opie-autoscaler``: the ``[opie_autoscaler]`` group.

``register_opts(conf)`` registers them on a ``cfg.ConfigOpts``;
``list_opts()`` returns ``[(group, opts)]`` for oslo-config-generator.

Units: times are **seconds** except ``stability_interval`` (hours, the
unit of Paper V's ``d``); prices are currency per **hour** (the spot
market's, per unit-hour, are turned into per-hour flavor prices, see
:mod:`opie_sched.services.autoscaler.spot`).
"""

import os
import tempfile

from oslo_config import cfg

from opie_sched.common import credentials

GROUP = 'opie_autoscaler'

#: The embedded coordination backend: tooz's file driver in a directory of
#: the machine's temporary directory. It needs no server and serialises the
#: replicas of one machine only.
DEFAULT_COORDINATION_URL = 'file://' + os.path.join(
    tempfile.gettempdir(), 'opie-autoscaler-locks')

autoscaler_group = cfg.OptGroup(
    GROUP,
    title='Repacking autoscaler',
    help='opie-autoscaler scales declared applications to their demand with '
         'the cheapest set of servers (thesis Paper V) and repacks a running '
         'set make-before-break when the gain test says it pays off.')

autoscaler_opts = [
    cfg.StrOpt(
        'applications_file',
        help='YAML or JSON file declaring the applications to scale (see '
             'opie_sched.services.autoscaler.app). Re-read every round: an '
             'invalid file is reported and every application is left as it '
             'is.'),
    cfg.FloatOpt(
        'interval', default=60.0, min=0.0,
        help='Seconds between two rounds of the service.'),
    cfg.FloatOpt(
        'stability_interval', default=1000.0 / 60.0, min=0.0,
        help='Paper V\'s d: the expected time in hours the demand stays '
             'stable, used by the gain test 1 - (P_hat*d + R)/(P*d) > K '
             '(default 1000 minutes as in the thesis). Must be > 0.'),
    cfg.FloatOpt(
        'gain_threshold', default=0.01, min=0.0,
        help='Paper V\'s K: the minimum relative gain of a repacking '
             '(0.01 = 1%).'),
    cfg.FloatOpt(
        'repack_time', default=240.0, min=0.0,
        help='Seconds a make-before-break transition runs the new servers '
             'beside the old ones; R = C_extra * repack_time (Paper V, '
             '3.3). Default 4 minutes as in the thesis.'),
    cfg.FloatOpt(
        'c_extra', min=0.0,
        help='Extra cost per hour during a repacking, currency per hour. '
             'Default: the price of the servers started.'),
    cfg.StrOpt(
        'method', default='bnb', choices=['bnb', 'milp'],
        help='Optimal-set solver of opie_sched.flavormix.'),
    cfg.BoolOpt(
        'dry_run', default=False,
        help='Only log the plan of each application; boot and delete '
             'nothing.'),
    cfg.StrOpt(
        'coordination_url', default=DEFAULT_COORDINATION_URL,
        sample_default='file://$TMPDIR/opie-autoscaler-locks',
        help='tooz backend URL for the per-application locks that keep two '
             'replicas from acting on one application at once. The default '
             '(tooz\'s file driver) needs no server but only serialises '
             'replicas on this machine (and sharing one temporary '
             'directory, beware of systemd PrivateTmp); use e.g. '
             'etcd3+http://, redis:// or zookeeper:// across machines.'),
    cfg.IntOpt(
        'max_servers', default=100, min=1,
        help='Most servers one application may run. A demand needing more '
             '(a runaway or wrong demand signal) is not acted upon: the '
             'current set is kept and the reason logged. An application '
             'may set its own.'),
    cfg.FloatOpt(
        'boot_timeout', default=600.0, min=0.0,
        help='Seconds a new server has to become ACTIVE (and healthy, when '
             'a health URL is set). A server that misses it is a failed '
             'boot: the transition is rolled back.'),
    cfg.FloatOpt(
        'delete_timeout', default=300.0, min=0.0,
        help='Seconds to wait for a deleted server to disappear.'),
    cfg.FloatOpt(
        'poll_interval', default=2.0, min=0.01,
        help='Seconds between two status checks of servers being booted or '
             'deleted.'),
    cfg.StrOpt(
        'health_url',
        help='Optional URL template checked on every new server before the '
             'surplus is deleted; any 2xx answer means healthy. Fields: '
             '{address} (the server\'s first IP address), {id}, {name}, '
             'e.g. http://{address}:8080/healthz. An application may set '
             'its own.'),
    cfg.FloatOpt(
        'health_request_timeout', default=5.0, min=0.01,
        help='Seconds one health, HTTP demand or spot market request may '
             'take.'),
    cfg.StrOpt(
        'price_extra_spec', default='opie:price',
        help='Flavor extra spec holding the flavor\'s price in currency '
             'per hour, used for flavors whose price the applications file '
             'does not give (nor the spot market, for a preemptible flavor '
             'when market_url is set).'),
    cfg.StrOpt(
        'market_url',
        help='The opie-market spot market API: its endpoint, e.g. '
             'http://market:8788/v1, or "catalog" for the spot-market '
             'entry of the cloud connection\'s Keystone catalog. When '
             'set, a preemptible flavor (extra spec '
             'opie:preemptible=true) whose price the '
             'applications file does not give is priced at the market: '
             'sum over the pool\'s resources of the current price per '
             'unit-hour (GET <market_url>/prices, Merkat eq. 1) times the '
             'flavor\'s amount (vCPUs, MB of RAM), in currency per hour, '
             'fetched once per round with the cloud connection\'s '
             'keystoneauth session (plain HTTP when it has no auth). This '
             'comes before the price extra spec. When the market cannot '
             'price a flavor (unreachable, unknown pool, bad answer) the '
             'application keeps its current set that round. An '
             'application may set its own (or null: no market).'),
    cfg.StrOpt(
        'market_pool', default='default',
        help='The spot market pool (a host aggregate of the market\'s '
             '[opie_market] pools, or "default") whose prices price the '
             'preemptible flavors. An application may set its own.'),
    cfg.StrOpt(
        'cloud',
        help='clouds.yaml cloud to connect to when [service_credentials] '
             'has no auth_type (default: OS_CLOUD and the other OS_* '
             'environment variables).'),
]


def register_opts(conf):
    """Register the ``[opie_autoscaler]`` options (and
    ``[service_credentials]``) on ``conf``.
    """
    # A group object of its own per ConfigOpts: oslo.config keeps option
    # overrides in the group's (shallow-copied) option table, so a shared
    # OptGroup would leak set_override() between ConfigOpts instances.
    conf.register_group(cfg.OptGroup(
        GROUP, title=autoscaler_group.title, help=autoscaler_group.help))
    conf.register_opts(autoscaler_opts, group=GROUP)
    credentials.register_opts(conf)


def list_opts():
    """``[(group, [opts])]`` for oslo-config-generator."""
    return [(autoscaler_group, autoscaler_opts)]
