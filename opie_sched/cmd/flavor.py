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
"""``opie-sched flavor``: preemptible flavors.

``opie-sched flavor create-preemptible BASE [--name NAME]`` creates the
preemptible twin of flavor BASE (see
:func:`opie_sched.common.flavors.create_preemptible_twin`).
"""

import sys

from opie_sched.cmd import cli
from opie_sched.common import flavors


def format_flavor(flavor):
    """Human-readable lines describing a created flavor."""
    lines = ['created flavor %s (%s): %d vCPU, %d MB RAM, %d GB disk, '
             '%d GB ephemeral, %d MB swap, %s'
             % (flavor.name, flavor.id, flavor.vcpus, flavor.ram,
                flavor.disk or 0, flavor.ephemeral or 0, flavor.swap or 0,
                'public' if flavor.is_public else 'private')]
    for key, value in sorted((flavor.extra_specs or {}).items()):
        lines.append('  %s=%s' % (key, value))
    return '\n'.join(lines)


def _create_preemptible(args):
    conn = cli.connect(args)
    flavor = flavors.create_preemptible_twin(
        conn, args.base, name=args.name, is_public=args.is_public)
    sys.stdout.write(format_flavor(flavor) + '\n')
    return 0


def register(subparsers):
    parser = subparsers.add_parser('flavor', help='preemptible flavors')
    sub = parser.add_subparsers(dest='flavor_command', metavar='COMMAND')
    sub.required = True
    create = sub.add_parser(
        'create-preemptible',
        help='create the preemptible twin of a flavor',
        description='Create a flavor with the size of BASE (vCPUs, RAM, '
                    'disk, ephemeral, swap), its description, visibility '
                    'and non-resource extra specs, whose instances are '
                    'preemptible: opie:preemptible=true, the standard '
                    'resource classes set to 0 and the same amounts of '
                    'the CUSTOM_PREEMPTIBLE_* classes requested instead.')
    create.add_argument('base', metavar='BASE',
                        help='name or ID of the base flavor')
    create.add_argument('--name',
                        help='name of the new flavor (default: '
                             'BASE.preemptible)')
    vis = create.add_mutually_exclusive_group()
    vis.add_argument('--public', dest='is_public', action='store_const',
                     const=True, default=None,
                     help='make the new flavor public (default: as BASE)')
    vis.add_argument('--private', dest='is_public', action='store_const',
                     const=False,
                     help='make the new flavor private (default: as BASE)')
    create.set_defaults(func=_create_preemptible,
                        errors=(flavors.FlavorError,))
