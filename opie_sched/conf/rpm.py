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
"""oslo.config options of the RPM weighers and of Die-Hard in Nova.

Groups:

* ``[opie_rpm]`` — the Reconsolidating PlaceMent score (thesis Paper IV
  §4.3.1): the λ's of the score terms, the target utilisation, the
  post-placement utilisation cap α, the weigher multipliers, the usage
  history and the utilisation source.
* ``[opie_reliability]`` — Die-Hard (thesis Paper VI) in the scheduler:
  where the failure domains of hosts come from, and the defaults of a
  reliability request.

``list_opts`` is meant to be added to :func:`opie_sched.conf.list_opts` so
that ``oslo-config-generator --namespace opie_sched`` documents them.
"""

from oslo_config import cfg

from opie_sched.diehard import planner as dh_plan
from opie_sched.diehard import topology as dh_topo
from opie_sched import plugins
from opie_sched.rpm import model as rpm

#: Entry-point group of ``utilisation_source``
#: (:data:`opie_sched.common.utilisation.NAMESPACE`; not imported here, it
#: needs oslo.log and this module only oslo.config).
UTILISATION_NAMESPACE = 'opie_sched.utilisation'

rpm_group = cfg.OptGroup(
    'opie_rpm',
    title='RPM placement score',
    help='Risk-, efficiency-, imbalance- and topology-aware weighing of '
         'hosts (the Reconsolidating PlaceMent score of Sedaghat et al., '
         'thesis Paper IV). Lower score is better; the weighers turn the '
         'normalised score s in [0, 1] into the weight 1 - s.')

_LAMBDA_HELP = ('λ of the %s term in the combined RPMWeigher score '
                '(Paper IV eq. 3). The five λ\'s must be >= 0 and add up to '
                '1 (eq. 4); otherwise RPMWeigher logs an error and stays '
                'neutral.')

rpm_opts = [
    cfg.FloatOpt('risk_lambda', default=0.2, min=0.0, max=1.0,
                 help=_LAMBDA_HELP % 'risk (R_o × R_v)'),
    cfg.FloatOpt('distance_lambda', default=0.2, min=0.0, max=1.0,
                 help=_LAMBDA_HELP % 'topology distance (Dist)'),
    cfg.FloatOpt('efficiency_lambda', default=0.2, min=0.0, max=1.0,
                 help=_LAMBDA_HELP % 'efficiency (E)'),
    cfg.FloatOpt('data_transfer_lambda', default=0.2, min=0.0, max=1.0,
                 help=_LAMBDA_HELP % 'data transfer (DT); DT does not '
                 'depend on the destination of a placement, so this term '
                 'is 0 for every host in the scheduler'),
    cfg.FloatOpt('imbalance_lambda', default=0.2, min=0.0, max=1.0,
                 help=_LAMBDA_HELP % 'CPU/RAM imbalance (Imb)'),
    cfg.FloatOpt(
        'target_utilisation', default=rpm.TARGET_UTILISATION,
        min=0.0, max=1.0,
        help='Desired utilisation of a host, fraction (Max_CPU and Max_Mem '
             'of the efficiency term; Paper IV §5.3 aims at 0.75).'),
    cfg.StrOpt(
        'efficiency_formula', default='distance',
        choices=[('distance', 'E = max over CPU and RAM of abs(target - '
                              'utilisation after placement): hosts ending '
                              'closest to the target win.'),
                 ('literal', 'E = max(target - cpu, target - mem) as '
                             'printed in eq. 10-11: fuller hosts always '
                             'win, whatever the target.')],
        help='Reading of the efficiency term (see opie_sched.rpm.model.'
             'efficiency).'),
    cfg.FloatOpt(
        'alpha', default=rpm.OVERLOAD_THRESHOLD, min=0.0, max=1.0,
        help='UtilisationCapFilter: a host passes only if its CPU and its '
             'RAM utilisation after the placement stay <= alpha (Paper IV '
             'eq. 2). The default is the overload threshold, so a '
             'placement never pushes a host into the overload state.'),
    cfg.Opt(
        'utilisation_source', default='allocations',
        type=plugins.OptionType(UTILISATION_NAMESPACE, 'utilisation source'),
        help='Where the "actually used" CPU/RAM of hosts and their history '
             'come from. Possible values: a utilisation source installed '
             '(entry points ``%s``; those shipped are listed below). '
             'Operators can register their own (Prometheus, Gnocchi, ...).'
             % UTILISATION_NAMESPACE),
    cfg.IntOpt(
        'history_length', default=rpm.HISTORY_SAMPLES, min=2,
        help='Samples of host utilisation kept per host for R_v (the '
             'coefficient of variation) and the triggers (Paper IV: 10).'),
    cfg.FloatOpt(
        'sample_interval', default=60.0, min=0.0,
        help='Seconds between two samples of a host kept in the in-process '
             'history (Paper IV monitors every minute). Samples are taken '
             'from the HostStates of scheduling requests; 0 keeps one per '
             'request.'),
    cfg.FloatOpt(
        'rpm_weight_multiplier', default=1.0,
        help='Multiplier of RPMWeigher (the combined score). Per-aggregate '
             'override: metadata key ``rpm_weight_multiplier``.'),
    cfg.FloatOpt(
        'rpm_risk_weight_multiplier', default=1.0,
        help='Multiplier of RPMRiskWeigher (per-aggregate override: '
             '``rpm_risk_weight_multiplier``).'),
    cfg.FloatOpt(
        'rpm_efficiency_weight_multiplier', default=1.0,
        help='Multiplier of RPMEfficiencyWeigher (per-aggregate override: '
             '``rpm_efficiency_weight_multiplier``).'),
    cfg.FloatOpt(
        'rpm_imbalance_weight_multiplier', default=1.0,
        help='Multiplier of RPMImbalanceWeigher (per-aggregate override: '
             '``rpm_imbalance_weight_multiplier``).'),
    cfg.FloatOpt(
        'rpm_distance_weight_multiplier', default=1.0,
        help='Multiplier of RPMDistanceWeigher (per-aggregate override: '
             '``rpm_distance_weight_multiplier``).'),
    cfg.StrOpt(
        'discovery', default='local',
        choices=[('local', 'Paper IV Alg. 1: each triggered host looks '
                           'for destinations among discovery_neighbours '
                           'random neighbours per round (60 % its server '
                           'group, 30 % its cluster, 10 % anywhere); an '
                           'overload takes the first round\'s best, an '
                           'underload the best of discovery_max_ttl + 1 '
                           'rounds.'),
                 ('global', 'Every host is a candidate destination (a '
                            'centralised planner).')],
        help='Where opie-repacker looks for migration destinations (the '
             'discovery of Paper IV §4.3).'),
    cfg.IntOpt(
        'discovery_neighbours', default=rpm.NEIGHBOURS, min=1,
        help='k, neighbours per discovery round (Paper IV §5.2: 20). '
             'With k >= hosts - 1 local discovery sees every host.'),
    cfg.IntOpt(
        'discovery_max_ttl', default=rpm.MAX_TTL, min=0,
        help='MaxTTL of Paper IV Alg. 1: rounds an underload collects '
             'candidates before the best is chosen (the thesis gives no '
             'value).'),
    cfg.IntOpt(
        'discovery_seed',
        help='Seed of the neighbour draws (same hosts + same seed = same '
             'plan, for tests and replays). Unset: a fresh seed each '
             'period.'),
]

reliability_group = cfg.OptGroup(
    'opie_reliability',
    title='Die-Hard reliable placement',
    help='Place the K tasks of a job (a multi-create) over failure domains '
         'so that K survive T hours with probability S_min (Sedaghat et '
         'al., thesis Paper VI). Requests carry the scheduler hints '
         '``opie_tasks`` (K), ``opie_target`` (S_min) and ``opie_hours`` '
         '(T), or a server group whose name holds the same ``key=value`` '
         'tokens.')

reliability_opts = [
    cfg.StrOpt(
        'topology_file',
        help='A Die-Hard topology YAML (see ``opie-sched reliability``) '
             'whose network domains list host *names*. When set it is the '
             'only source of failure domains; when unset the domains come '
             'from host aggregate metadata ``opie:network_domain`` and '
             '``opie:power_domain``.'),
    cfg.FloatOpt(
        'default_target', default=0.9999, min=0.0, max=1.0,
        help='S_min of a request that gives ``opie_tasks`` but no '
             '``opie_target``.'),
    cfg.FloatOpt(
        'default_hours', default=24.0, min=0.0,
        help='T (hours) of a request that gives ``opie_tasks`` but no '
             '``opie_hours``.'),
    cfg.StrOpt(
        'algorithm', default='diehard', choices=dh_plan.ALGORITHMS,
        help='Planner turning K, S_min and T into per-domain quotas.'),
    cfg.FloatOpt(
        'network_failure_rate', default=dh_topo.DEFAULT_NETWORK_FAILURE_RATE,
        min=0.0,
        help='Failure rate per hour of one network node (ToR switch) of a '
             'domain described by aggregate metadata without '
             '``opie:network_failure_rate``.'),
    cfg.FloatOpt(
        'power_failure_rate', default=dh_topo.DEFAULT_POWER_FAILURE_RATE,
        min=0.0,
        help='Failure rate per hour of one power node (PDU) of a domain '
             'described by aggregate metadata without '
             '``opie:power_failure_rate``.'),
    cfg.FloatOpt(
        'reliability_weight_multiplier', default=10.0,
        help='Multiplier of ReliabilityWeigher (per-aggregate override: '
             '``reliability_weight_multiplier``). Its weights are 0 for '
             'requests without a reliability constraint.'),
]


def register_opts(conf):
    """Register ``[opie_rpm]`` and ``[opie_reliability]`` on ``conf``.

    Each ConfigOpts gets its own copy of the groups: an ``OptGroup`` holds
    its options' overrides, so a shared one would leak ``set_override``
    between ConfigOpts objects.
    """
    for group, opts in list_opts():
        copy = cfg.OptGroup(group.name, title=group.title, help=group.help)
        conf.register_group(copy)
        conf.register_opts(opts, group=copy)


def discovery_policy(conf):
    """Keyword arguments of :class:`opie_sched.rpm.planner.Policy`
    for the discovery options of ``[opie_rpm]`` (``discovery``,
    ``neighbours``, ``max_ttl``, ``seed``); ``conf`` has
    :func:`register_opts` applied.
    """
    group = conf.opie_rpm
    return {'discovery': group.discovery,
            'neighbours': group.discovery_neighbours,
            'max_ttl': group.discovery_max_ttl,
            'seed': group.discovery_seed}


def list_opts():
    return [(rpm_group, rpm_opts),
            (reliability_group, reliability_opts)]
