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
:func:`opie_sched.common.flavors.create_preemptible_twin`) and shows it.

``opie-sched flavor check`` lists every flavor whose ``opie:`` extra
specs the scheduler refuses (:func:`opie_sched.scheduler.extra_specs.
problems`; nova validates them only at API microversion 2.86 or later),
one row per problem, and exits 1 when there is any.
"""

from opie_sched.cmd import cli
from opie_sched.cmd import columns
from opie_sched.common import flavors

#: Fields shown for a flavor (sizes in vCPU, MB and GB).
FLAVOR_FIELDS = ('id', 'name', 'vcpus', 'ram', 'disk', 'ephemeral', 'swap',
                 'is_public', 'description', 'extra_specs')


def flavor_fields(flavor):
    """``(fields, values)`` of an openstacksdk flavor (RAM and swap in MB,
    disk and ephemeral in GB).
    """
    values = (flavor.id, flavor.name, flavor.vcpus, flavor.ram,
              flavor.disk or 0, flavor.ephemeral or 0, flavor.swap or 0,
              bool(flavor.is_public), flavor.description,
              columns.Mapping(dict(sorted(
                  (flavor.extra_specs or {}).items()))))
    return FLAVOR_FIELDS, values


class CreatePreemptible(cli.ShowOne):
    """Create the preemptible twin of a flavor.

    Creates a flavor with the size of BASE (vCPUs, RAM, disk, ephemeral,
    swap), its description, visibility and non-resource extra specs,
    whose instances are preemptible: opie:preemptible=true, the standard
    resource classes set to 0 and the same amounts of the
    CUSTOM_PREEMPTIBLE_* classes requested instead.
    """

    errors = (flavors.FlavorError,)

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('base', metavar='BASE',
                            help='name or ID of the base flavor')
        parser.add_argument('--name',
                            help='name of the new flavor (default: '
                                 'BASE.preemptible)')
        vis = parser.add_mutually_exclusive_group()
        vis.add_argument('--public', dest='is_public', action='store_const',
                         const=True, default=None,
                         help='make the new flavor public (default: as '
                              'BASE)')
        vis.add_argument('--private', dest='is_public', action='store_const',
                         const=False,
                         help='make the new flavor private (default: as '
                              'BASE)')
        return parser

    def take_action(self, parsed_args):
        conn = cli.connect(self.app.options)
        flavor = flavors.create_preemptible_twin(
            conn, parsed_args.base, name=parsed_args.name,
            is_public=parsed_args.is_public)
        return flavor_fields(flavor)


#: Columns of ``opie-sched flavor check``.
CHECK_COLUMNS = ('id', 'name', 'problem')


def flavor_check_rows(conn):
    """``[(id, name, problem)]`` of every flavor (private ones included
    for an admin) whose ``opie:`` extra specs cannot be honoured.

    :param conn: an ``openstack.connection.Connection``.
    """
    from opie_sched.scheduler import extra_specs

    compute = conn.compute
    rows = []
    for flavor in compute.flavors(details=True, is_public='none'):
        specs = flavor.extra_specs
        if specs is None:  # a cloud below microversion 2.61
            specs = compute.fetch_flavor_extra_specs(flavor).extra_specs
        found = extra_specs.problems(
            specs or {}, flavor.vcpus, flavor.ram,
            flavors.disk_gb(flavor.disk, flavor.ephemeral, flavor.swap))
        rows.extend((flavor.id, flavor.name, p) for p in found)
    return sorted(rows, key=lambda r: (r[1], r[0]))


class Check(cli.Lister):
    """List the flavors whose opie: extra specs the scheduler refuses.

    Every flavor is checked (nova accepts any opie: value below API
    microversion 2.86): each opie: extra spec known and parseable, and
    opie:preemptible agreeing with the resource classes requested. One
    row per problem; exit status 1 when there is any, 0 when none.
    Needs opie_sched[scheduler] (nova's validators).
    """

    def take_action(self, parsed_args):
        self._rows = flavor_check_rows(cli.connect(self.app.options))
        return CHECK_COLUMNS, self._rows

    def run(self, parsed_args):
        super().run(parsed_args)
        return 1 if self._rows else 0
