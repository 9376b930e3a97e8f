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
"""Configuration of the opie-market service: groups ``[opie_market]`` and
``[database]``.

``register_opts(conf)`` registers the options on an oslo.config
``ConfigOpts``; ``list_opts()`` feeds ``oslo-config-generator`` (namespace
entry point ``opie_sched.market = opie_sched.services.market.opts:list_opts``).
The market database is oslo.db's ``[database]`` group (``connection``,
``slave_connection``, pool and retry options); ``[opie_market]
connection``, its former place, is a deprecated alias of ``[database]
connection``.
Units: money is currency, bids and refill rates currency per hour, reserve
prices currency per unit-hour (vCPU-hour, MB-hour), times seconds.
"""

import copy
import os

from oslo_config import cfg
from oslo_db import options as db_options

from opie_sched.common import credentials
from opie_sched.market import budget
from opie_sched.market import charge_rules
from opie_sched import plugins
from opie_sched.preemption import behaviours

GROUP = 'opie_market'
DATABASE_GROUP = 'database'

DEFAULT_STATE_DIR = '/var/lib/opie-market'

OPTS = [
    cfg.StrOpt('state_dir', default=DEFAULT_STATE_DIR,
               help='Directory of the embedded defaults: the sqlite '
                    'database (market.sqlite) and the tooz file '
                    'coordination backend (coordination/).'),
    cfg.IntOpt('period_seconds', default=300, min=1,
               help='Length of a market period (seconds): prices are '
                    'recomputed and every running preemptible server is '
                    'charged once per period (Merkat eq. 1, §2.2). The '
                    'default, 300 s, is Themis\'s scheduling period (5 '
                    'minutes); Merkat\'s 40 s is shorter than a Nova '
                    'boot plus a notice, so a price would move before '
                    'the servers it priced were running. Possible '
                    'values: an integer >= 1; raise it (e.g. 3600) for '
                    'hourly billing.'),
    cfg.FloatOpt('tick_interval', default=60.0, min=0.1,
                 help='How often the leader wakes up (seconds): it settles '
                      'a new period once and terminates servers whose '
                      'notice expired.'),
    cfg.DictOpt('reserve_prices', default={},
                help='Reserve price per resource, currency per unit-hour '
                     '(vcpus per vCPU-hour, memory_mb per MB-hour), e.g. '
                     'vcpus:0.01,memory_mb:0.000005. Prices never fall '
                     'below it (Themis bid_min). Overridden by '
                     'PUT /v1/reserve-price.'),
    cfg.StrOpt('default_bid', default='0',
               help='Bid of a preemptible server that has neither server '
                    'metadata nor a flavor extra spec opie:bid, currency '
                    'per hour (decimal text). Empty: such servers are '
                    'rejected (logged, not priced).'),
    cfg.StrOpt('bid_cap',
               help='Largest accepted bid, currency per hour (decimal '
                    'text); larger bids are rejected. Empty: no cap.'),
    cfg.IntOpt('notice_period', default=300, min=0,
               help='Seconds between the preemption notice (server '
                    'metadata opie:preempt_notice) and the stop or delete.'),
    cfg.Opt('preemption_action', type=behaviours.OptionType(),
            default='delete',
            help='What happens to a server when its notice expires, '
                 'unless its flavor\'s extra spec '
                 'opie:interruption_behavior chooses. Possible values: a '
                 'registered interruption behaviour (entry points '
                 'opie_sched.preemption.behaviours), the same meanings as '
                 'the scheduler\'s [opie_preemption] action: delete; stop '
                 '(stopped, then deleted after stop_grace_period seconds: '
                 'only the delete frees the host); shelve (shelved and '
                 'offloaded by Nova; deleted instead when Nova refuses to '
                 'shelve it).'),
    cfg.IntOpt('stop_grace_period', default=30, min=0,
               help='Seconds a server stopped at its deadline (behaviour '
                    'stop) is kept before it is deleted; the delete comes '
                    'at the first tick at least this long after the '
                    'deadline. Possible values: an integer >= 0.'),
    cfg.IntOpt('drill_limit', default=3, min=0,
               help='Interruption drills (POST /v1/servers/{id}/'
                    'interruption-drill, ``openstack spot interruption '
                    'simulate``) one project may start per drill_window '
                    'seconds; more get 429 with the time to retry. Counted '
                    'in the market database, so every API worker agrees. '
                    'Possible values: 0 - drills are off (403); N >= 1 - '
                    'at most N per window (default 3).'),
    cfg.IntOpt('drill_window', default=86400, min=1,
               help='Seconds of the sliding window drill_limit counts in '
                    '(default 86400, a day). Possible values: an integer '
                    '>= 1.'),
    cfg.IntOpt('scheduler_notice_window', default=3600, min=1,
               help='Seconds after a notice of the scheduler or its '
                    'reconciler (the victim\'s preempt_notice instance '
                    'action) during which its owner may still acknowledge '
                    'it (POST /v1/servers/{id}/interruption-ack, '
                    '``openstack spot interruption ack``) while the '
                    'victim has not been interrupted; an older notice '
                    'counts as lapsed. Set it at least to the longest '
                    'notice the scheduler gives ([opie_preemption] '
                    'notice_seconds, headroom_notice_seconds). Possible '
                    'values: an integer >= 1 (default 3600).'),
    cfg.Opt('out_of_credit_policy', default='lowest_bid',
            type=plugins.OptionType(budget.POLICY_NAMESPACE,
                                    budget.POLICY_KIND),
            help='Which servers of a project out of credit are given notice '
                 'first. Possible values: an out-of-credit policy installed '
                 '(entry points ``opie_sched.market.out_of_credit``; those '
                 'shipped are listed below).'),
    cfg.ListOpt('pools', default=[],
                help='Host aggregates that are pools (separate markets). '
                     'Hosts in none of them form the pool "default".'),
    cfg.StrOpt('capacity_source', default='placement',
               choices=[('placement', 'CUSTOM_PREEMPTIBLE_VCPU/MEMORY_MB '
                                      'inventories (else VCPU/MEMORY_MB)'),
                        ('hypervisors', 'os-hypervisors (microversion '
                                        '2.87)')],
               help='Where the capacity of each host comes from.'),
    cfg.IntOpt('refused_demand_window', min=0,
               help='Seconds a preemptible boot that Nova refused '
                    '(ERROR with a NoValidHost fault) still counts as '
                    'demand in the prices, from its creation. Possible '
                    'values: an integer >= 0 (0: refused boots never '
                    'count); empty: 2 * period_seconds + notice_period, '
                    'long enough for the notice the refused demand causes '
                    'to be enforced. Deleting the refused server ends its '
                    'demand at once.'),
    cfg.Opt('charge_rule', default='share_cost',
            type=plugins.OptionType(charge_rules.NAMESPACE,
                                    charge_rules.KIND),
            help='What a running preemptible server is charged each '
                 'period. Possible values: a charge rule installed (entry '
                 'points ``opie_sched.market.charge_rules``; those shipped '
                 'are listed below).'),
    cfg.StrOpt('initial_credit', default='0',
               help='Balance of an account opened automatically for a '
                    'project seen with preemptible servers (currency).'),
    cfg.StrOpt('refill_rate', default='0',
               help='Refill rate of an automatically opened account, '
                    'currency per hour.'),
    cfg.StrOpt('credit_cap',
               help='Cap of an automatically opened account (currency); '
                    'empty: no cap.'),
    cfg.StrOpt('coordination_url',
               help='tooz backend URL for leader election (e.g. '
                    'etcd3+http://host:2379, redis://host:6379, '
                    'zookeeper://host:2181, mysql://...). Default: '
                    'file://<state_dir>/coordination (one machine, no '
                    'server).'),
    cfg.StrOpt('member_id',
               help='tooz member id of this replica (default host name '
                    'and process id).'),
    cfg.StrOpt('cloud',
               help='openstacksdk cloud (clouds.yaml entry) with admin '
                    'rights on Nova, used when [service_credentials] has '
                    'no auth_type; default: OS_* environment variables.'),
    cfg.BoolOpt('listen_notifications', default=False,
                help='Learn demand from Nova versioned notifications '
                     '(oslo.messaging, [oslo_messaging_notifications] '
                     'transport_url); the periodic openstacksdk '
                     'reconciliation runs anyway.'),
    cfg.ListOpt('notification_topics', default=['versioned_notifications'],
                help='Topics of the Nova versioned notifications.'),
    cfg.BoolOpt('emit_notifications', default=True,
                help='Emit opie.market.* notifications (price update, '
                     'preemption notice, preempted) when an '
                     'oslo.messaging notification transport is '
                     'configured.'),
    cfg.StrOpt('api_auth_strategy', default='keystone',
               choices=['keystone', 'noauth'],
               help='keystone: keystonemiddleware auth_token (see '
                    '[keystone_authtoken]); noauth: tokens "user:project" '
                    '(tests only).'),
    cfg.HostAddressOpt('api_host', default='0.0.0.0',
                       help='Address the REST API listens on.'),
    cfg.PortOpt('api_port', default=8788,
                help='Port the REST API listens on.'),
]


def _database_opts():
    """oslo.db's ``[database]`` options, ``connection`` with the deprecated
    alias ``[opie_market] connection`` and the market's default.
    """
    out = []
    for opt in db_options.database_opts:
        if opt.dest == 'connection':
            opt = copy.deepcopy(opt)
            opt.deprecated_opts = list(opt.deprecated_opts or ()) + [
                cfg.DeprecatedOpt('connection', group=GROUP)]
            opt.help = ('SQLAlchemy URL of the market database, e.g. '
                        'mysql+pymysql://user:pw@host/opie_market or '
                        'postgresql://user:pw@host/opie_market. Default: '
                        'sqlite:///<[opie_market] state_dir>/market.sqlite '
                        '(one machine). Formerly [opie_market] connection '
                        '(still read, deprecated).')
        out.append(opt)
    return out


#: The ``[database]`` options (oslo.db's).
DATABASE_OPTS = _database_opts()

#: ``[database]`` options handed to oslo.db's enginefacade (the others,
#: ``db_max_retries`` & co., belong to oslo.db's ``api.DBAPI``, unused).
_ENGINE_OPTS = ('slave_connection', 'sqlite_synchronous', 'mysql_sql_mode',
                'mysql_wsrep_sync_wait', 'connection_recycle_time',
                'connection_debug', 'max_pool_size', 'max_overflow',
                'pool_timeout', 'connection_trace', 'max_retries',
                'retry_interval', 'connection_parameters',
                'synchronous_reader')


def register_opts(conf):
    """Register the ``[opie_market]``, ``[database]`` and
    ``[service_credentials]`` options on ``conf``.
    """
    conf.register_opts(OPTS, group=GROUP)
    conf.register_opts(DATABASE_OPTS, group=DATABASE_GROUP)
    credentials.register_opts(conf)


def list_opts():
    """Options for oslo-config-generator: ``[(group, opts)]`` (with oslo.db's
    ``[database]`` and the companion services' ``[service_credentials]``).
    """
    return ([(GROUP, OPTS), (DATABASE_GROUP, DATABASE_OPTS)]
            + credentials.list_opts())


def group(conf):
    """The ``[opie_market]`` options of ``conf`` (registered if needed)."""
    try:
        return conf[GROUP]
    except cfg.NoSuchOptError:
        register_opts(conf)
        return conf[GROUP]


def connection_url(conf):
    """The database URL: ``[database] connection`` (or its deprecated
    alias ``[opie_market] connection``), else the sqlite file in
    ``state_dir``.
    """
    opts = group(conf)
    if conf[DATABASE_GROUP].connection:
        return conf[DATABASE_GROUP].connection
    return 'sqlite:///' + os.path.join(opts.state_dir, 'market.sqlite')


def engine_options(conf):
    """``{option: value}`` of the ``[database]`` options oslo.db's
    enginefacade takes (pool sizes, retries, ``slave_connection``...):
    keyword arguments of :class:`opie_sched.services.market.db.api.
    MarketStore`, as oslo.db reads them from ``[database]`` for the
    services that use its global facade.
    """
    group(conf)
    db = conf[DATABASE_GROUP]
    known = {opt.dest for opt in DATABASE_OPTS}
    # synchronous_reader is oslo.db 17.5's (2026.1): the older series'
    # oslo.db has no such option, and its enginefacade no such argument
    return {name: db[name] for name in _ENGINE_OPTS if name in known}


def coordination_url(conf):
    """The tooz URL: ``coordination_url`` or a file backend in state_dir.
    """
    opts = group(conf)
    if opts.coordination_url:
        return opts.coordination_url
    return 'file://' + os.path.join(opts.state_dir, 'coordination')
