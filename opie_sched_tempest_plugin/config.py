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
    cfg.BoolOpt('preemption', default=True,
                help='The cloud runs opie-scheduler with preemption on and '
                     'has preemptible flavors. Possible values: true (run '
                     'the preemption tests), false (skip them).'),
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
    cfg.BoolOpt('market', default=True,
                help='The opie-market service and its REST API run. '
                     'Possible values: true, false (skip market tests).'),
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
    cfg.BoolOpt('reliability', default=True,
                help='opie-scheduler has FailureDomainFilter and '
                     'ReliabilityWeigher (Die-Hard) enabled. Possible '
                     'values: true, false (skip).'),
    cfg.BoolOpt('autoscaler', default=False,
                help='opie-autoscaler runs against this cloud. Possible '
                     'values: true, false (skip the autoscaler scenario).'),
]


def list_opts():
    """``[(group, opts)]`` of this plugin."""
    return [(opie_group, OpieGroup)]
