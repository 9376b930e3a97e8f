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
"""``opie-sched devcloud``: start, inspect and remove a multi-process
all-in-one cloud on this machine (:mod:`opie_sched.devcloud`).

::

    opie-sched devcloud up [--computes N] [--scheduler-workers N]
        [--scheduler-hosts N] ...
    opie-sched devcloud status [--state-dir DIR]
    opie-sched devcloud down [--state-dir DIR]
    opie-sched devcloud scheduler-conf [--workers N] [--base-filters LIST]
        [--reliability] [--output FILE]

``up`` and ``status`` show the cloud's summary through cliff's formatters
(``-f table|json|yaml|value|shell``, ``-c FIELD``). ``scheduler-conf``
prints the opie_sched options of the scheduler's nova.conf (the file
``opie-scheduler`` reads as a second ``--config-file``), shared with the
DevStack plugin.
"""

import argparse
import os
import sys
import time

from cliff import columns as cliff_columns

from opie_sched.cmd import cli
from opie_sched.cmd import columns
from opie_sched.devcloud import config
from opie_sched.devcloud import layout as layout_mod
from opie_sched.devcloud import preflight
from opie_sched.devcloud import process


def _positive(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError('expected an integer >= 1, got %r'
                                         % text)
    return value


def _ratio(text):
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float('inf'):
        raise argparse.ArgumentTypeError('expected a number > 0, got %r'
                                         % text)
    return value


def _seconds(low, kind=int):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not low <= value < float('inf'):
            raise argparse.ArgumentTypeError(
                'expected %s >= %g (seconds), got %r' % (
                    'an integer' if kind is int else 'a number', low, text))
        return value
    return parse


def _say(message):
    sys.stderr.write('devcloud: %s\n' % message)
    sys.stderr.flush()


def _errors():
    from opie_sched.devcloud import cloud as cloud_mod
    return (preflight.MissingError, process.ServiceError,
            cloud_mod.AlreadyUpError, layout_mod.StateError)


class Services(cliff_columns.FormattableColumn):
    """``{service: {"pid", "alive", "processes", "rss_mib", "health"}}``
    shown as a table (memory in MiB).
    """

    def human_readable(self):
        rows = []
        for name, info in (self._value or {}).items():
            health = 'health' in info
            rows.append([
                name, info.get('pid'),
                ('alive' if info.get('alive') else 'DEAD') if health else '',
                info.get('processes', '') if health else '',
                '%.1f' % info['rss_mib'] if health else '',
                info.get('health', '')])
        return columns.table(['service', 'pid', 'state', 'processes',
                              'rss MiB', 'health'], rows)


def summary_fields(summary):
    """``(fields, values)`` of a devcloud summary, fields sorted."""
    shown = {
        'clouds': columns.Words(summary.get('clouds', ())),
        'endpoints': columns.Mapping(dict(sorted(
            (summary.get('endpoints') or {}).items()))),
        'services': Services(summary.get('services')),
    }
    for key, value in summary.items():
        if key not in shown and isinstance(value, dict):
            shown[key] = columns.Mapping(value)
    fields = sorted(summary)
    return fields, [shown.get(k, summary[k]) for k in fields]


class _OnStateDir:
    """A command on the cloud of ``--state-dir``, failing with one line on
    the devcloud's own errors.
    """

    @property
    def errors(self):
        return _errors()

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--state-dir', default=layout_mod.default_state_dir(),
            help='directory of the cloud: configuration, logs, '
                 'clouds.yaml, state file (default: '
                 '$OPIE_DEVCLOUD_STATE_DIR or %s)'
                 % layout_mod.DEFAULT_STATE_DIR)
        return parser


class Up(_OnStateDir, cli.ShowOne):
    """Start a cloud.

    Starts an all-in-one cloud made of separate processes: Keystone,
    Placement, Glance, neutron-server (API only, or a stand-in),
    nova-api, nova-conductor, opie-scheduler, fake nova-computes,
    opie-market and its API; MariaDB and RabbitMQ on 127.0.0.1 (root
    without password, guest/guest). Shows its summary, with the path of
    its clouds.yaml (clouds devcloud-admin, devcloud-demo, devcloud-alt).
    """

    def get_parser(self, prog_name):
        up = super().get_parser(prog_name)
        up.add_argument('--computes', type=_positive, default=2,
                        help='number of nova-compute services (default 2)')
        up.add_argument('--scheduler-workers', type=_positive, default=2,
                        help='opie-scheduler worker processes (default 2)')
        up.add_argument('--scheduler-hosts', type=_positive, default=1,
                        help='opie-scheduler services as separate scheduler '
                             'hosts (own host name, state_path, process '
                             'tree; default 1). From 2 on they share their '
                             'locks on Redis (127.0.0.1:6379, tooz redis '
                             'driver) as several scheduler hosts must')
        up.add_argument('--compute-vcpus', type=_positive, default=8,
                        help='vCPUs per compute host (default 8)')
        up.add_argument('--compute-ram-mb', type=_positive, default=16000,
                        help='RAM per compute host, MB (default 16000)')
        up.add_argument('--compute-disk-gb', type=_positive, default=200,
                        help='disk per compute host, GB (default 200)')
        up.add_argument('--allocation-ratio', type=_ratio, default=1.0,
                        help='cpu/ram/disk allocation ratio of the hosts '
                             '(default 1.0)')
        up.add_argument('--preemptible-cpu-ratio', type=_ratio,
                        help='vCPU allocation ratio of the hosts, in '
                             'nova.conf and in the preemptible vCPU '
                             'inventory (a number > 0; default: '
                             '--allocation-ratio). Above 1 Placement admits '
                             'more preemptible vCPU than the hosts have; '
                             'with --market-capacity-source hypervisors the '
                             'market prices the physical CPUs, so CPU-heavy '
                             'preemptible servers contend')
        up.add_argument('--market-period', type=_seconds(1),
                        help="opie-market's period (seconds >= 1; default the "
                             "market's, 3600)")
        up.add_argument('--market-notice', type=_seconds(0),
                        help="opie-market's notice period (seconds >= 0; "
                             "default the market's, 300)")
        up.add_argument('--market-tick', type=_seconds(0.1, float),
                        help="how often opie-market wakes up (seconds >= 0.1; "
                             "default the market's, 60)")
        up.add_argument('--market-capacity-source',
                        choices=config.CAPACITY_SOURCES,
                        help="where opie-market reads the hosts' capacity: "
                             'placement (the preemptible inventories) or '
                             'hypervisors (physical sizes); default the '
                             "market's, placement")
        up.add_argument('--reliability', action='store_true',
                        help="enable Die-Hard's FailureDomainFilter and "
                             'ReliabilityWeigher in opie-scheduler (failure '
                             'domains from host aggregate metadata)')
        up.add_argument('--notifications', action='store_true',
                        help="nova sends its versioned notifications "
                             "(oslo.messaging messagingv2, instance.update on "
                             "every vm_state change) on the cloud's RabbitMQ "
                             'vhost, topic %s; off by default: nothing in the '
                             'cloud reads them' % config.NOTIFICATION_TOPIC)
        up.add_argument('--stock-scheduler', action='store_true',
                        help='run stock nova-scheduler (nova\'s default '
                             'filters and weighers) instead of '
                             'opie-scheduler: a cloud to compare with')
        up.add_argument('--legacy-quotas', action='store_true',
                        help="nova's legacy quotas (in its database, lifted "
                             "for the cloud's projects) instead of "
                             "Keystone's unified limits, the default: "
                             'registered limits above the cloud\'s capacity '
                             'for servers, the standard classes and the '
                             'preemptible ones (class:CUSTOM_PREEMPTIBLE_*), '
                             'which project limits lower')
        up.add_argument('--with-autoscaler', action='store_true',
                        help='also run opie-autoscaler (as the demo user, '
                             'every %g s) with one application: flavors %s, '
                             'demand read from a file of the state directory '
                             '(0 at first)' % (
                                 config.AUTOSCALER_INTERVAL, ', '.join(
                                     f[0] for f in config.AUTOSCALER_FLAVORS)))
        up.add_argument('--with-repacker', action='store_true',
                        help='also run opie-repacker (dry run; "opie-repacker '
                             '--config-file STATE_DIR/etc/opie_sched/'
                             'opie_sched.conf --once" runs one period of any '
                             'strategy)')
        up.add_argument('--neutron', choices=config.NEUTRON_MODES,
                        default='server',
                        help='server: the real neutron-server, API only (ML2 '
                             'without agents; servers use --nic none); '
                             'standin: a stand-in answering the few reads '
                             'nova makes, not in the catalog (default '
                             'server)')
        up.add_argument('--replace', action='store_true',
                        help='replace a cloud already up in the state '
                             'directory')
        up.add_argument('--service-debug', action='store_true',
                        help='debug logging in every service')
        return up

    def take_action(self, args):
        from opie_sched.devcloud import cloud as cloud_mod
        try:
            ports = layout_mod.allocate_ports(
                layout_mod.HTTP_SERVICES,
                layout_mod.Layout(args.state_dir).root)
            settings = config.Settings(
                ports, computes=args.computes,
                scheduler_workers=args.scheduler_workers,
                scheduler_hosts=args.scheduler_hosts,
                compute_vcpus=args.compute_vcpus,
                compute_ram_mb=args.compute_ram_mb,
                compute_disk_gb=args.compute_disk_gb,
                allocation_ratio=args.allocation_ratio,
                prefix=sys.prefix, debug=args.service_debug,
                with_autoscaler=args.with_autoscaler,
                with_repacker=args.with_repacker, neutron=args.neutron,
                preemptible_cpu_ratio=args.preemptible_cpu_ratio,
                market_period=args.market_period,
                market_notice=args.market_notice,
                market_tick=args.market_tick,
                market_capacity_source=args.market_capacity_source,
                reliability=args.reliability,
                notifications=args.notifications,
                stock_scheduler=args.stock_scheduler,
                unified_limits=not args.legacy_quotas)
        except ValueError as exc:
            raise cli.UsageError('devcloud up: %s' % exc)
        cloud = cloud_mod.Cloud(args.state_dir, say=_say)
        t0 = time.monotonic()
        try:
            summary = cloud.up(settings, replace=args.replace)
        except process.ServiceError as exc:
            if exc.log:
                sys.stderr.write('---- last lines of %s\n%s\n----\n'
                                 % (exc.log, getattr(exc, 'tail', None)
                                    or process.tail(exc.log)))
            raise
        summary['start_seconds'] = round(time.monotonic() - t0, 1)
        _say('export OS_CLIENT_CONFIG_FILE=%s; openstack --os-cloud '
             'devcloud-demo server list' % summary['clouds_yaml'])
        return summary_fields(summary)


class Status(_OnStateDir, cli.ShowOne):
    """Show a cloud's services, with pid, memory and health.

    Exit code 1 when a service died, 3 when there is no cloud in the
    state directory.
    """

    def run(self, parsed_args):
        self.exit_code = 0
        return super().run(parsed_args) or self.exit_code

    def take_action(self, args):
        from opie_sched.devcloud import cloud as cloud_mod
        cloud = cloud_mod.Cloud(args.state_dir)
        summary = cloud.status()
        if summary is None:
            _say('no devcloud in %s' % cloud.layout.root)
            self.exit_code = 3
            return ('state_dir', 'status'), (cloud.layout.root, 'absent')
        if any(not i['alive'] for i in summary['services'].values()):
            self.exit_code = 1
        return summary_fields(summary)


class Down(_OnStateDir, cli.Command):
    """Stop and remove a cloud.

    Stops every process of the cloud, drops its databases and RabbitMQ
    vhost, removes its state directory.
    """

    def take_action(self, args):
        from opie_sched.devcloud import cloud as cloud_mod
        cloud = cloud_mod.Cloud(args.state_dir, say=_say)
        t0 = time.monotonic()
        stopped = cloud.down()
        sys.stdout.write('devcloud in %s removed (%d services stopped, '
                         '%.1f s)\n' % (cloud.layout.root, len(stopped),
                                        time.monotonic() - t0))
        return 0


class SchedulerConf(cli.Command):
    """Print opie_sched's options of the scheduler's nova.conf.

    Writes the [filter_scheduler] (and [scheduler] workers) options that
    opie-scheduler reads as its second --config-file; used by devcloud
    and DevStack.
    """

    errors = (OSError,)

    def get_parser(self, prog_name):
        sched = super().get_parser(prog_name)
        sched.add_argument('--workers', type=_positive,
                           help='[scheduler] workers (default: unset)')
        sched.add_argument('--base-filters',
                           help='comma-separated filters to keep before '
                                "opie_sched's (default nova's defaults)")
        sched.add_argument('--reliability', action='store_true',
                           help="also enable Die-Hard's FailureDomainFilter "
                                '(last) and ReliabilityWeigher')
        sched.add_argument('--output', help='file to write (default stdout)')
        return sched

    def take_action(self, args):
        text = config.render(config.scheduler_conf(
            args.workers, args.base_filters, reliability=args.reliability))
        if args.output in (None, '-'):
            sys.stdout.write(text)
        else:
            directory = os.path.dirname(os.path.abspath(args.output))
            os.makedirs(directory, exist_ok=True)
            with open(args.output, 'w') as f:
                f.write(text)
        return 0
