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
"""oslo.config options of ``opie-repacker``: the ``[opie_repacker]`` group.

``register_opts(conf)`` registers them on a ``cfg.ConfigOpts``;
``list_opts()`` returns ``[(group, opts)]`` for oslo-config-generator.
The λ's, the target utilisation and the efficiency formula of the RPM
score are shared with the scheduler weighers: ``[opie_rpm]``
(:mod:`opie_sched.conf.rpm`, registered by :func:`register_opts` too).

Units: times in **seconds**, utilisations as **fractions** of capacity
(0.9 = 90 %), bandwidth in MB/s, sizes in MB. Defaults follow thesis
Paper IV §5.3 (1-minute samples, 10-sample window, 90 % / 30 %).
"""

import os
import tempfile

from oslo_config import cfg

from opie_sched.common import credentials
from opie_sched.conf import rpm as rpm_opts
from opie_sched import plugins
from opie_sched.rpm import model as rpm

GROUP = 'opie_repacker'

#: Entry-point group of ``strategy``
#: (:data:`opie_sched.services.repacker.strategies.NAMESPACE`, a layer
#: above this module).
STRATEGY_NAMESPACE = 'opie_sched.repacker.strategies'

#: Default state directory (tooz file locks, persisted history).
DEFAULT_STATE_DIR = os.path.join(tempfile.gettempdir(), 'opie-repacker')

repacker_group = cfg.OptGroup(
    GROUP,
    title='RPM repacker',
    help='opie-repacker watches the utilisation of the compute hosts, '
         'raises overload and underload triggers (thesis Paper IV §5.3) and '
         'live-migrates servers to the destinations of lowest RPM score '
         '(Paper IV §4.3.1), draining underloaded hosts preemptible '
         'servers first.')

repacker_opts = [
    cfg.FloatOpt(
        'interval', default=600.0, min=0.0,
        help='Seconds between two planning periods (Paper IV §5: the PM '
             'state profiler runs every 10 minutes).'),
    cfg.FloatOpt(
        'sample_interval', default=60.0, min=0.0,
        help='Seconds between two utilisation samples of the hosts '
             '(Paper IV monitors every minute). 0: one sample per call.'),
    cfg.IntOpt(
        'max_migrations', default=5, min=0,
        help='Migration budget: at most this many live migrations per '
             'period (overloads take it first).'),
    cfg.BoolOpt(
        'dry_run', default=False,
        help='Only print and log the plan; migrate nothing.'),
    cfg.StrOpt(
        'block_migration', default='auto',
        choices=[('auto', 'Let nova decide (shared storage or not).'),
                 ('true', 'Copy the disks (no shared storage).'),
                 ('false', 'Shared storage: move the memory only.')],
        help='block_migration of the live migrations.'),
    cfg.FloatOpt(
        'overload_threshold', default=rpm.OVERLOAD_THRESHOLD,
        min=0.0, max=1.0,
        help='Overload: CPU or memory utilisation above this fraction in '
             'each of the last ``trigger_samples`` samples (Paper IV §5.3: '
             '0.9).'),
    cfg.FloatOpt(
        'underload_threshold', default=rpm.UNDERLOAD_THRESHOLD,
        min=0.0, max=1.0,
        help='Underload: CPU and memory utilisation below this fraction in '
             'each of the last ``trigger_samples`` samples (Paper IV §5.3: '
             '0.3).'),
    cfg.IntOpt(
        'trigger_samples', default=rpm.HISTORY_SAMPLES, min=1,
        help='Consecutive samples of a trigger, also the R_v window '
             '(Paper IV §5.3: 10).'),
    cfg.FloatOpt(
        'alpha', default=rpm.OVERLOAD_THRESHOLD, min=0.0, max=1.0,
        help='A destination\'s CPU and memory utilisation after a '
             'migration stay <= alpha (Paper IV eq. 2).'),
    cfg.FloatOpt(
        'migration_bandwidth', default=125.0, min=0.0,
        help='L of the DT term, MB/s of the migration link (Paper IV '
             'eq. 8-9).'),
    cfg.FloatOpt(
        'dirty_rate', default=0.0, min=0.0,
        help='R of the DT term, MB/s, assumed for every server (nova does '
             'not measure it); 0 makes DT the memory size.'),
    cfg.FloatOpt(
        'switchover_time', default=0.5, min=0.0,
        help='T of eq. 9, seconds.'),
    cfg.FloatOpt(
        'progress_threshold', default=50.0, min=0.0,
        help='X of eq. 9, MB.'),
    cfg.FloatOpt(
        'migration_timeout', default=600.0, min=0.0,
        help='Seconds a live migration may take before it counts as '
             'failed (the plan goes on).'),
    cfg.FloatOpt(
        'poll_interval', default=2.0, min=0.0,
        help='Seconds between two polls of a migrating server.'),
    cfg.StrOpt(
        'state_dir', default=DEFAULT_STATE_DIR,
        sample_default='$TMPDIR/opie-repacker',
        help='Directory of the tooz file locks and of the persisted '
             'utilisation history.'),
    cfg.StrOpt(
        'coordination_url',
        help='tooz backend URL of the lock keeping two replicas from '
             'acting at once. Default: tooz\'s file driver in '
             '``state_dir`` (serialises replicas of one machine); use '
             'e.g. etcd3+http:// or redis:// across machines.'),
    cfg.BoolOpt(
        'persist_history', default=True,
        help='Save the utilisation history to ``state_dir`` after each '
             'sample and load it at start, so ``--once`` runs (cron) '
             'accumulate the trigger window.'),
    cfg.StrOpt(
        'cloud',
        help='clouds.yaml entry of the service\'s credentials when '
             '[service_credentials] has no auth_type (default: OS_* '
             'environment variables).'),
    cfg.Opt(
        'strategy', default='rpm',
        type=plugins.OptionType(STRATEGY_NAMESPACE, 'repacker strategy'),
        help='Consolidation strategy. Possible values: a repacker strategy '
             'installed (entry points ``%s``; those shipped are listed '
             'below; tabu needs the market API). Every strategy runs '
             'under the same lock, budget and dry-run.'
             % STRATEGY_NAMESPACE),
    cfg.IntOpt(
        'consolidation_seed', default=0,
        help='Seed of the p2p overlay and of the gossip peer sampling: '
             'the same hosts give the same plan.'),
    cfg.IntOpt(
        'p2p_htl', default=20, min=0,
        help='p2p: hops to live of a server\'s search request (Paper II '
             '§4: 20).'),
    cfg.FloatOpt(
        'p2p_threshold', default=0.4, min=0.0, max=1.0,
        help='p2p: re-consolidation threshold, a host whose larger used '
             'fraction (CPU or RAM) is at most this re-places its servers '
             '(Paper II §4: 0.4).'),
    cfg.IntOpt(
        'p2p_attachment', default=1, min=1,
        help='p2p: links each new host adds in the Barabási-Albert overlay '
             '(Paper II used 1, NetLogo\'s preferential attachment).'),
    cfg.IntOpt(
        'gossip_view_size', default=20, min=1,
        help='gossip: k, partners per host per cycle (Paper III §4.2: '
             '20).'),
    cfg.StrOpt(
        'gossip_strategy', default='merge-imb',
        choices=[('merge-imb', 'Merge, else redistribute for the largest '
                               'Gain = imbalance drop / memory moved.'),
                 ('merge', 'One-shot merge of a pair into one host.'),
                 ('incremental', 'Hosts under 30 % move one server per '
                                 'interaction to a more loaded one.')],
        help='gossip: decision function of a pair (Paper III §3.3).'),
    cfg.IntOpt(
        'gossip_max_cycles', default=20, min=1,
        help='gossip: cycles before the plan is taken even if the '
             'protocol has not converged (Paper III: 7 sufficed).'),
]


def register_opts(conf):
    """Register ``[opie_repacker]`` (and ``[opie_rpm]``,
    ``[service_credentials]``) on ``conf``.

    The group is a fresh copy per ``conf``: an ``OptGroup`` keeps the
    overrides of its options, so a shared one would leak
    ``set_override`` between ConfigOpts objects.
    """
    group = cfg.OptGroup(GROUP, title=repacker_group.title,
                         help=repacker_group.help)
    conf.register_group(group)
    conf.register_opts(repacker_opts, group=group)
    rpm_opts.register_opts(conf)
    credentials.register_opts(conf)


def list_opts():
    """``[(group, opts)]`` for oslo-config-generator."""
    return [(repacker_group, repacker_opts)]


def policy(conf):
    """The :class:`opie_sched.rpm.planner.Policy` of ``conf``.

    :raises opie_sched.rpm.planner.PlanError: inconsistent values
        (underload >= overload, λ's not adding up to 1).
    """
    from opie_sched.conf import rpm as rpm_opts
    from opie_sched.rpm import planner
    opts, r = conf[GROUP], conf.opie_rpm
    return planner.Policy(
        **rpm_opts.discovery_policy(conf),
        overload=opts.overload_threshold,
        underload=opts.underload_threshold,
        window=opts.trigger_samples,
        target=r.target_utilisation,
        alpha=opts.alpha,
        lambdas=(r.risk_lambda, r.distance_lambda, r.efficiency_lambda,
                 r.data_transfer_lambda, r.imbalance_lambda),
        efficiency_formula=r.efficiency_formula,
        max_migrations=opts.max_migrations,
        bandwidth=opts.migration_bandwidth,
        switchover_time=opts.switchover_time,
        progress_threshold=opts.progress_threshold)
