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
"""``opie-sched provider-config``: nova provider config with preemptible
capacity.

Either from sizes given on the command line (one provider, e.g. for the
host being deployed)::

    opie-sched provider-config --vcpus 16 --memory-mb 64000 --disk-gb 500 \\
        [--host NAME|UUID] [--cpu-allocation-ratio 4.0 ...] [--output FILE]

or from every compute node's inventory in Placement::

    opie-sched provider-config --from-placement [--node NAME ...] \\
        [--output FILE]

See :mod:`opie_sched.common.provider_config`.
"""

import os
import sys
import tempfile

from opie_sched.cmd import cli
from opie_sched.common import provider_config

#: nova's defaults for the options of the manual mode that mirror nova.conf
#: ([DEFAULT] reserved_host_cpus, reserved_host_memory_mb,
#: reserved_host_disk_mb, initial_*_allocation_ratio).
NOVA_DEFAULTS = {
    'reserved_vcpus': 0,
    'reserved_memory_mb': 512,
    'reserved_disk_gb': 0,
    'cpu_allocation_ratio': 4.0,
    'ram_allocation_ratio': 1.0,
    'disk_allocation_ratio': 1.0,
}
_SIZES = ('vcpus', 'memory_mb', 'disk_gb')


def _option(dest):
    return '--' + dest.replace('_', '-')


def manual_provider(args):
    """The provider dict of the manual mode (sizes from ``args``)."""
    missing = [_option(d) for d in _SIZES if getattr(args, d) is None]
    if missing:
        raise cli.UsageError('provider-config: %s required (or use '
                             '--from-placement)' % ', '.join(missing))
    if args.nodes:
        raise cli.UsageError('provider-config: --node needs '
                             '--from-placement')
    host = args.host or provider_config.COMPUTE_NODE
    try:
        ident = provider_config.identification({'uuid': host})
    except provider_config.ProviderConfigError:
        ident = {'name': host}
    provider = dict(ident)
    for dest in _SIZES:
        provider[dest] = getattr(args, dest)
    for dest, default in NOVA_DEFAULTS.items():
        value = getattr(args, dest)
        provider[dest] = default if value is None else value
    return provider


def write_output(text, path):
    """Write ``text`` to ``path`` atomically, or to stdout for ``-``.

    The text goes to a temporary file beside ``path``, renamed over it.

    :raises OSError: ``path`` cannot be written; the error names ``path``
        (not the temporary file) and keeps the original as ``__cause__``.
    """
    if path in (None, '-'):
        sys.stdout.write(text)
        return
    directory = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix='.opie-sched-',
                                   suffix='.yaml.tmp')
        with os.fdopen(fd, 'w') as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        if isinstance(exc, OSError):
            raise OSError(exc.errno, exc.strerror or str(exc),
                          path) from exc
        raise


class ProviderConfig(cli.Command):
    """Write a nova provider config giving nodes preemptible capacity.

    Writes a nova provider config file (for [compute]
    provider_config_location) that gives compute nodes
    CUSTOM_PREEMPTIBLE_VCPU, CUSTOM_PREEMPTIBLE_MEMORY_MB and
    CUSTOM_PREEMPTIBLE_DISK_GB inventory equal to their VCPU, MEMORY_MB
    and DISK_GB capacity (same total, reserved and allocation ratio). Give
    the sizes of one host, or --from-placement.
    """

    errors = (provider_config.ProviderConfigError, OSError)

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--from-placement', action='store_true',
                            help='read every compute node\'s inventory '
                                 'from Placement (needs cloud credentials)')
        parser.add_argument('--node', dest='nodes', action='append',
                            metavar='NAME',
                            help='with --from-placement: only this compute '
                                 'node (resource provider name or UUID); '
                                 'repeatable')
        parser.add_argument('--host', metavar='NAME',
                            help='the compute node: its resource provider '
                                 'name (hypervisor hostname) or UUID '
                                 '(default: $COMPUTE_NODE, i.e. every '
                                 'compute node of the nova-compute service '
                                 'reading the file)')
        parser.add_argument('--vcpus', type=int, metavar='N',
                            help='VCPU total of the host (vCPU)')
        parser.add_argument('--memory-mb', type=int, metavar='N',
                            help='MEMORY_MB total of the host (MB)')
        parser.add_argument('--disk-gb', type=int, metavar='N',
                            help='DISK_GB total of the host (GB)')
        parser.add_argument('--reserved-vcpus', type=int, metavar='N',
                            help='reserved vCPUs (default: %d, as nova\'s '
                                 'reserved_host_cpus)'
                                 % NOVA_DEFAULTS['reserved_vcpus'])
        parser.add_argument('--reserved-memory-mb', type=int, metavar='N',
                            help='reserved RAM in MB (default: %d, as '
                                 'nova\'s reserved_host_memory_mb)'
                                 % NOVA_DEFAULTS['reserved_memory_mb'])
        parser.add_argument('--reserved-disk-gb', type=int, metavar='N',
                            help='reserved disk in GB (default: %d; nova\'s '
                                 'reserved_host_disk_mb / 1024, rounded up)'
                                 % NOVA_DEFAULTS['reserved_disk_gb'])
        for dest, what in (('cpu_allocation_ratio', 'VCPU'),
                           ('ram_allocation_ratio', 'MEMORY_MB'),
                           ('disk_allocation_ratio', 'DISK_GB')):
            parser.add_argument(_option(dest), dest=dest, type=float,
                                metavar='R',
                                help='allocation ratio of the host\'s %s '
                                     '(default: %g, nova\'s initial_%s)'
                                     % (what, NOVA_DEFAULTS[dest], dest))
        parser.add_argument('--output', '-o', metavar='FILE', default='-',
                            help='write the YAML to FILE (default: stdout)')
        return parser

    def take_action(self, args):
        if args.from_placement:
            given = [_option(d) for d in
                     ('host',) + _SIZES + tuple(NOVA_DEFAULTS)
                     if getattr(args, d) is not None]
            if given:
                raise cli.UsageError(
                    'provider-config: --from-placement reads the sizes '
                    'from Placement; do not give %s' % ', '.join(given))
            providers = provider_config.inventories_from_placement(
                cli.connect(self.app.options), args.nodes or None)
            if not providers:
                raise provider_config.ProviderConfigError(
                    'no compute node resource providers (with VCPU, '
                    'MEMORY_MB and DISK_GB inventory) found in Placement')
        else:
            providers = [manual_provider(args)]
        doc = provider_config.build_provider_config(providers)
        write_output(provider_config.dump_yaml(doc), args.output)
        if args.output not in (None, '-'):
            sys.stdout.write('wrote %s: preemptible capacity for %d '
                             'provider(s)\n' % (args.output, len(providers)))
        return 0
