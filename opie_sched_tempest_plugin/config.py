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
"""The ``[opie]`` group of tempest.conf.

Registered by :class:`opie_sched_tempest_plugin.plugin.OpieTempestPlugin`
the Tempest way (``register_opt_group``); listed by ``get_opt_lists`` so
``oslo-config-generator``-style tools and ``tempest`` itself see them.
"""

from oslo_config import cfg

opie_group = cfg.OptGroup(
    name='opie', title='opie_sched options',
    help='What the opie_sched tests may expect of the cloud under test.')

OpieGroup = [
    cfg.BoolOpt('preemption', default=False,
                help='The cloud runs opie-scheduler with preemption on and '
                     'has preemptible flavors. Possible values: true (run '
                     'the preemption tests), false (default: skip them; '
                     'the DevStack plugin sets true when it deployed '
                     'them).'),
    cfg.StrOpt('preemptible_flavor_suffix', default='.preemptible',
               help='Name suffix of the preemptible twin of a normal '
                    'flavor ("opie-sched flavor create-preemptible"). The '
                    'tests use the smallest normal flavor that has a twin '
                    'of the same size.'),
    cfg.StrOpt('normal_flavor',
               help='Name of the normal flavor the preemption tests boot '
                    '(its twin is <name><preemptible_flavor_suffix>). '
                    'Possible values: a flavor name; unset: the smallest '
                    'flavor with a twin.'),
    cfg.IntOpt('race_servers', default=30, min=2,
               help='Concurrent normal boots of the race test (issue 10: '
                    '30).'),
    cfg.IntOpt('build_timeout', default=300, min=10,
               help='Seconds a server may take to become ACTIVE or to '
                    'disappear after a delete.'),
    cfg.BoolOpt('market', default=False,
                help='The opie-market service and its REST API run. '
                     'Possible values: true, false (default: skip market '
                     'tests; the DevStack plugin sets true, with '
                     '[service_available] opie_market, when it deployed '
                     'them).'),
    cfg.StrOpt('market_endpoint',
               help='Root URL of the market API, e.g. '
                    'http://127.0.0.1:8788. Unset: the catalog\'s '
                    'market_service_type endpoint.'),
    cfg.StrOpt('market_service_type', default='spot-market',
               help='Keystone catalog service type of the market API.'),
    cfg.IntOpt('market_max_wait', default=240, min=10,
               help='Longest a market scenario waits for a notice or a '
                    'termination (seconds). When the market period plus '
                    'the notice period exceed it, the notice scenario is '
                    'skipped and says why.'),
    cfg.IntOpt('market_notice_period', default=300, min=0,
               help='[opie_market] notice_period of the cloud (seconds).'),
    cfg.BoolOpt('market_contention', default=False,
                help='Servers can contend the market: the hosts '
                     'overcommit preemptible vCPUs (cpu_allocation_ratio '
                     '> 1 in nova.conf and in the CUSTOM_PREEMPTIBLE_VCPU '
                     'inventory) while the market prices the physical '
                     'CPUs ([opie_market] capacity_source = hypervisors), '
                     'so CPU-heavy preemptible servers can ask for more '
                     'vCPUs than the hosts have. Prices are '
                     'work-conserving: without contention nobody is out '
                     'of bid. Possible values: true (run the notice '
                     'scenario; it fails when it cannot contend the '
                     'market), false (skip it).'),
    cfg.BoolOpt('reliability', default=False,
                help='opie-scheduler has FailureDomainFilter and '
                     'ReliabilityWeigher (Die-Hard) enabled. Possible '
                     'values: true, false (default: skip).'),
    cfg.BoolOpt('autoscaler', default=False,
                help='opie-autoscaler runs against this cloud with the '
                     'application described by the autoscaler_* options. '
                     'Possible values: true (run the autoscaler scenario; '
                     'it fails when an autoscaler_* option is missing), '
                     'false (skip it).'),
    cfg.StrOpt('autoscaler_application',
               help='Name of the autoscaled application (opie-autoscaler '
                    'names its servers <application>-<flavor>-<suffix> '
                    'and sets their metadata opie:autoscaler to it).'),
    cfg.StrOpt('autoscaler_tag',
               help='Server tag of the application in its applications '
                    'file (the scenario lists its servers by this tag).'),
    cfg.StrOpt('autoscaler_project',
               help='Name of the project owning the application\'s '
                    'servers (the autoscaler runs with its credentials).'),
    cfg.StrOpt('autoscaler_demand_file',
               help='File the application\'s demand source reads (source '
                    '"file": a bare number in the unit of the '
                    'capacities); the scenario writes the demands there '
                    'as a monitoring system would, so it must run on a '
                    'machine that sees that file.'),
    cfg.DictOpt('autoscaler_capacities', default={},
                help='The application\'s flavors and the capacity of one '
                     'server of each, as in its applications file (flavor '
                     'name:number > 0, e.g. app.small:1,app.large:4).'),
    cfg.DictOpt('autoscaler_prices', default={},
                help='The flavors\' prices of the applications file '
                     '(flavor name:currency per hour > 0). They should '
                     'make each change of the cheapest set pass the '
                     'autoscaler\'s gain test (thesis Paper V, eq. 3), '
                     'or the scenario waits for a move that is not '
                     'planned.'),
    cfg.ListOpt('autoscaler_demands', default=['2', '8', '3'],
                help='Demands the scenario writes one after the other '
                     '(numbers >= 0, the capacities\' unit). The cheapest '
                     'sets of at least two consecutive demands must use '
                     'different flavors; after the last one the scenario '
                     'writes 0.'),
    cfg.IntOpt('autoscaler_step_timeout', default=240, min=10,
               help='Seconds the autoscaler may take to reach the '
                    'cheapest set after a demand change.'),
    cfg.BoolOpt('repacker', default=False,
                help='opie-repacker can be run against this cloud by '
                     'repacker_command. Possible values: true (run the '
                     'repacker strategy scenarios), false (skip them).'),
    cfg.StrOpt('repacker_command',
               help='Command line running opie-repacker against this '
                    'cloud with its configuration and admin credentials, '
                    'split as a POSIX shell would, e.g. "env '
                    'OS_CLIENT_CONFIG_FILE=/etc/openstack/clouds.yaml '
                    'opie-repacker --config-file /etc/opie_sched/'
                    'opie_sched.conf". The scenarios add a --config-file '
                    'choosing the strategy and the budget, and --once '
                    '(with --dry-run for the plan).'),
    cfg.IntOpt('repacker_timeout', default=300, min=10,
               help='Seconds one opie-repacker run (a period, its live '
                    'migrations included) may take.'),
    cfg.StrOpt('devcloud_state_dir',
               help='State directory of the devcloud under test ("opie-sched '
                    'devcloud up --state-dir"), on the machine running '
                    'Tempest: the chaos scenarios find, kill, freeze and '
                    'restart its services, and drop its broker and '
                    'database connections through it. Possible values: a '
                    'directory; unset (default) - the chaos scenarios are '
                    'skipped (they need process control of the cloud).'),
    cfg.IntOpt('chaos_converge_timeout', default=120, min=10,
               help='Seconds the cloud may take, after each chaos fault, '
                    'to bring every request to ACTIVE or ERROR, every '
                    'host within capacity and every allocation to a '
                    'server (polled every second).'),
    cfg.IntOpt('chaos_reconciler_interval', default=5, min=0,
               help='[opie_reconciler] interval and [opie_preemption] '
                    'retry_interval (seconds) opie-scheduler is restarted '
                    'with for the chaos scenarios (restored afterwards), '
                    'so that its repairs fit in chaos_converge_timeout. '
                    'Possible values: N >= 1; 0 - keep the cloud\'s '
                    'values (no restart).'),
    cfg.IntOpt('headroom_notice_seconds', default=60, min=10,
               help='[opie_preemption] headroom_notice_seconds and '
                    'notice_seconds opie-scheduler is restarted with for '
                    'the headroom scenarios (restored afterwards). The '
                    'tier waits one whole notice out, so the default '
                    'keeps the README test command in its time budget; '
                    'the product default (120) is what a cloud gives. '
                    'Possible values: N >= 10 seconds.'),
    cfg.StrOpt('chaos_report',
               help='File the chaos scenarios append their figures to, one '
                    'line per scenario (the tier\'s runner prints it). '
                    'Unset: the figures are only in the test output.'),
]

#: ``[service_available] opie_market``, Tempest's way of saying a service
#: is deployed.
ServiceAvailable = [
    cfg.BoolOpt('opie_market', default=False,
                help='Whether the opie_sched spot market (opie-market and '
                     'its REST API, catalog service type spot-market) is '
                     'deployed. Possible values: true, false (default).'),
]


def list_opts():
    """``[(group, opts)]`` of this plugin."""
    return [(opie_group, OpieGroup),
            ('service_available', ServiceAvailable)]
