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
"""``opie-status upgrade check``: what operators get wrong (oslo.upgradecheck).

Run on a scheduler host, with the scheduler's configuration files (nova's
defaults: ``/etc/nova/nova.conf``)::

    opie-status --config-file /etc/nova/nova.conf \\
        --config-file /etc/nova/opie-scheduler.conf \\
        [--placement-config-file /etc/placement/placement.conf] \\
        upgrade check [--json]

Each check is one small class, its rule in its docstring. Exit status
(oslo.upgradecheck): 0 all succeeded, 1 a warning, 2 a failure; 255 when
the configuration files cannot be read (one line on stderr, no check
runs). A check that cannot read what it needs (database, Placement, file)
says so as a warning and names the manual check; it never passes on what
it did not see. A check that breaks is a failure naming the error, never
a traceback.
"""

import configparser
import os
import sys

import functools

from oslo_config import cfg
from oslo_upgradecheck import upgradecheck

from opie_sched.common import compat
from opie_sched.common import flavors
from opie_sched.conf import validation

Code = upgradecheck.Code
Result = upgradecheck.Result

#: Command-line options of opie-status (not configuration-file options).
CLI_OPTS = [
    cfg.StrOpt('placement-config-file',
               help='Placement\'s configuration file, to check [placement] '
                    'allocation_conflict_retry_count. Possible values: a '
                    'path; unset - /etc/placement/placement.conf when it '
                    'exists, else the check is a warning naming the manual '
                    'check.'),
]

DEFAULT_PLACEMENT_CONF = '/etc/placement/placement.conf'
#: Placement's default of allocation_conflict_retry_count.
PLACEMENT_DEFAULT_RETRIES = 10


class CoordinationCheck(object):
    """Several scheduler hosts need a shared coordination backend.

    Victim locks, reservations and the reconciler's leadership go through
    tooz at ``[opie_preemption] coordination_url``. Unset or ``file://``
    (tooz's file driver) locks only the processes of ONE host: when
    nova-scheduler services are registered on more than one host, two
    hosts can choose and preempt the same victims. Failure when the
    service list shows nova-scheduler on more than one host with such a
    backend; a warning when the service list cannot be read.
    """

    name = 'Coordination backend of several scheduler hosts'

    def __init__(self, conf, scheduler_hosts):
        self.conf = conf
        self.scheduler_hosts = scheduler_hosts

    def __call__(self):
        url = self.conf.opie_preemption.coordination_url
        local = not url or url.startswith('file:')
        try:
            hosts = sorted(self.scheduler_hosts())
        except Exception as exc:
            return Result(Code.WARNING,
                          'Could not list the nova-scheduler services (%s: '
                          '%s). Check manually: when `openstack compute '
                          'service list --service nova-scheduler` shows '
                          'more than one host, [opie_preemption] '
                          'coordination_url must be a backend every '
                          'scheduler host reaches (etcd3, redis, ...).'
                          % (type(exc).__name__, _one_line(exc)))
        if local and len(hosts) > 1:
            return Result(Code.FAILURE,
                          'nova-scheduler runs on %d hosts (%s) but '
                          '[opie_preemption] coordination_url is %s: its '
                          'locks do not span hosts, so two hosts can '
                          'preempt the same victims. Set it to a backend '
                          'every scheduler host reaches (e.g. '
                          'etcd3+http://HOST:2379), or delete the services '
                          'of hosts that no longer run a scheduler.'
                          % (len(hosts), ', '.join(hosts),
                             url or 'unset (file locks)'))
        return Result(Code.SUCCESS,
                      'nova-scheduler on %d host(s); coordination_url %s.'
                      % (len(hosts), 'is a file lock (one host)' if local
                         else 'is shared'))


class PlacementRetryCheck(object):
    """Placement must not retry conflicting allocation writes itself.

    Placement retries a conflicting allocation write inside its open
    transaction ``[placement] allocation_conflict_retry_count`` times
    (default 10); on MySQL/MariaDB this lets concurrent claims exceed an
    inventory. With 1, every conflict goes back to nova, which retries
    it in a new request. Failure when Placement's configuration file
    leaves it at another value (unset is Placement's default 10); a
    warning when the file cannot be read.
    """

    name = 'Placement allocation_conflict_retry_count'

    def __init__(self, path):
        self.path = path

    def __call__(self):
        path = self.path
        if not path and os.path.exists(DEFAULT_PLACEMENT_CONF):
            path = DEFAULT_PLACEMENT_CONF
        manual = ('Check manually that Placement\'s configuration has '
                  '[placement] allocation_conflict_retry_count = 1, or '
                  'pass --placement-config-file.')
        if not path:
            return Result(Code.WARNING,
                          'Placement\'s configuration file was not given '
                          'and %s does not exist. %s'
                          % (DEFAULT_PLACEMENT_CONF, manual))
        parser = configparser.ConfigParser(interpolation=None,
                                           strict=False)
        try:
            with open(path) as f:
                parser.read_file(f)
            raw = parser.get('placement', 'allocation_conflict_retry_count',
                             fallback=None)
            value = (PLACEMENT_DEFAULT_RETRIES if raw is None
                     else int(raw))
        except (OSError, configparser.Error, ValueError) as exc:
            return Result(Code.WARNING, 'Could not read %s (%s). %s'
                          % (path, exc, manual))
        if value != 1:
            return Result(Code.FAILURE,
                          '%s: [placement] allocation_conflict_retry_count '
                          'is %d%s; set it to 1 (Placement retries a '
                          'conflict inside its transaction, which on '
                          'MySQL/MariaDB lets concurrent claims exceed an '
                          'inventory).' % (path, value, ' (Placement\'s '
                                           'default)' if raw is None
                                           else ''))
        return Result(Code.SUCCESS, '%s: allocation_conflict_retry_count '
                      '= 1.' % path)


class PreemptibleInventoryCheck(object):
    """Compute nodes need the preemptible inventory.

    Preemptible flavors ask Placement for ``CUSTOM_PREEMPTIBLE_VCPU``,
    ``CUSTOM_PREEMPTIBLE_MEMORY_MB`` and ``CUSTOM_PREEMPTIBLE_DISK_GB``,
    which only a compute's provider config (``opie-sched
    provider-config`` in ``[compute] provider_config_location``) gives.
    Failure when no compute node provider (one with VCPU inventory) has
    them (no preemptible server can be scheduled); a warning naming the
    compute nodes without them (they take no preemptible server), or when
    Placement cannot be read.
    """

    name = 'Preemptible inventory (provider config)'
    CLASSES = (flavors.VCPU_CLASS, flavors.MEMORY_MB_CLASS,
               flavors.DISK_GB_CLASS)

    def __init__(self, inventories):
        self.inventories = inventories

    def __call__(self):
        try:
            nodes = self.inventories()
        except Exception as exc:
            return Result(Code.WARNING,
                          'Could not read the resource providers from '
                          'Placement (%s: %s). Check manually that every '
                          'compute node that should take preemptible '
                          'servers has %s inventory.'
                          % (type(exc).__name__, exc, ', '.join(self.CLASSES)))
        computes = {name: inv for name, inv in nodes.items()
                    if 'VCPU' in inv}
        missing = sorted(name for name, inv in computes.items()
                         if not all(rc in inv for rc in self.CLASSES))
        if not computes:
            return Result(Code.WARNING, 'Placement has no compute node '
                          'provider (no VCPU inventory) yet.')
        if len(missing) == len(computes):
            return Result(Code.FAILURE,
                          'No compute node has the preemptible inventory '
                          '(%s): no preemptible server can be scheduled. '
                          'Write a provider config on each compute '
                          '(opie-sched provider-config) into [compute] '
                          'provider_config_location and restart '
                          'nova-compute.' % ', '.join(self.CLASSES))
        if missing:
            return Result(Code.WARNING,
                          '%d of %d compute nodes have no preemptible '
                          'inventory and take no preemptible server: %s '
                          '(opie-sched provider-config on each, if they '
                          'should).' % (len(missing), len(computes),
                                        ', '.join(missing)))
        return Result(Code.SUCCESS, 'All %d compute nodes have the '
                      'preemptible inventory.' % len(computes))


class OptionsCheck(object):
    """Every opie option is one the services can honour.

    The same rules opie-scheduler, opie-reconciler and the companion
    services apply when they start (:mod:`opie_sched.conf.validation`):
    every value within its type, range and choices, every cost module and
    plugin installed, cross-option rules, no misspelt option or section
    in an ``opie_*`` section of the files. Failure naming each problem:
    the services refuse to start with this configuration.
    """

    name = 'opie options'

    def __init__(self, conf):
        self.conf = conf

    def __call__(self):
        found = validation.problems(self.conf)
        if found:
            return Result(Code.FAILURE,
                          '%d problem(s); the opie services refuse to start '
                          'with them: %s' % (len(found), '; '.join(found)))
        return Result(Code.SUCCESS, 'Every opie option is valid.')


class FlavorSpecsCheck(object):
    """Every flavor's ``opie:`` extra specs can be honoured.

    Nova validates extra specs only for requests at API microversion 2.86
    or later, so a flavor can hold any ``opie:`` value. Checked for every
    flavor, public or not (:func:`opie_sched.scheduler.extra_specs.
    problems`): each ``opie:`` spec valid (known key, parseable value), and
    the marker ``opie:preemptible`` and the resource classes agree (a
    marked flavor requests the preemptible classes with its own amounts
    and 0 of the standard ones; an unmarked one no preemptible class).
    Failure naming each such flavor: opie-scheduler refuses every request
    for them (NoValidHost naming the spec). A warning when the flavors
    cannot be read.
    """

    name = 'Flavors\' opie: extra specs'

    def __init__(self, flavor_list):
        self.flavor_list = flavor_list

    def __call__(self):
        from opie_sched.scheduler import extra_specs
        try:
            flavor_list = list(self.flavor_list())
        except Exception as exc:
            return Result(Code.WARNING,
                          'Could not list the flavors (%s: %s). Check '
                          'manually: opie-sched flavor check.'
                          % (type(exc).__name__, _one_line(exc)))
        bad = []
        for flavor in flavor_list:
            found = extra_specs.flavor_problems(flavor)
            if found:
                bad.append('%s (%s): %s' % (flavor.name, flavor.flavorid,
                                           '; '.join(found)))
        if bad:
            return Result(Code.FAILURE,
                          '%d of %d flavors have opie: extra specs the '
                          'scheduler refuses (their servers go to ERROR): '
                          '%s' % (len(bad), len(flavor_list),
                                  ' | '.join(bad)))
        return Result(Code.SUCCESS, 'The opie: extra specs of all %d '
                      'flavors are valid.' % len(flavor_list))


def _one_line(exc):
    """``exc`` on one line, without the SQL statement of a database error.
    """
    return ' '.join(str(exc).split('[SQL:', 1)[0].split())


def nova_flavors(context=None):
    """Every flavor of nova's API database, private ones included, with
    its extra specs (nova ``Flavor`` objects).

    :raises Exception: the API database cannot be read.
    """
    from nova import context as nova_context
    from nova import objects

    ctxt = context or nova_context.get_admin_context()
    return objects.FlavorList.get_all(ctxt, inactive=False)


def nova_scheduler_hosts(context=None):
    """Hosts of the non-deleted nova-scheduler services of every cell
    (nova's database, as ``nova-manage``/``nova-status`` read it).

    :raises Exception: a cell's database cannot be read.
    """
    from nova import context as nova_context
    from nova import objects

    ctxt = context or nova_context.get_admin_context()
    results = nova_context.scatter_gather_all_cells(
        ctxt, objects.ServiceList.get_by_binary, 'nova-scheduler',
        include_disabled=True)
    hosts = set()
    for cell, services in results.items():
        if not nova_context.is_cell_failure_sentinel(services):
            hosts.update(s.host for s in services)
            continue
        raise RuntimeError('cell %s: %s' % (cell, services))
    return hosts


def placement_inventories(client=None):
    """``{provider name: {resource class: inventory}}`` of every resource
    provider, through nova's Placement client (nova.conf's ``[placement]``
    credentials).

    :raises Exception: Placement cannot be reached or answers an error.
    """
    if client is None:
        from nova.scheduler.client import report
        client = report.SchedulerReportClient()
    resp = client.get('/resource_providers', version='1.14')
    if resp.status_code != 200:
        raise RuntimeError('GET /resource_providers: HTTP %d'
                           % resp.status_code)
    out = {}
    for rp in resp.json()['resource_providers']:
        inv = client.get('/resource_providers/%s/inventories' % rp['uuid'],
                         version='1.14')
        if inv.status_code != 200:
            raise RuntimeError('GET inventories of %s: HTTP %d'
                               % (rp['name'], inv.status_code))
        out[rp['name']] = inv.json()['inventories']
    return out


class Checks(upgradecheck.UpgradeCommands):
    """The checks of ``opie-status upgrade check``."""

    def __init__(self, conf, configure_db=True):
        super().__init__()
        self.conf = conf
        self.configure_db = configure_db

    def _db(self):
        if self.configure_db:
            from nova.db.api import api as api_db_api
            from nova.db.main import api as main_db_api
            main_db_api.configure(self.conf)
            api_db_api.configure(self.conf)
            self.configure_db = False

    def _check_coordination(self):
        def hosts():
            self._db()
            return nova_scheduler_hosts()
        return CoordinationCheck(self.conf, hosts)()

    def _check_placement_retries(self):
        try:
            path = self.conf.placement_config_file
        except cfg.NoSuchOptError:  # run in-process, without CLI_OPTS
            path = None
        return PlacementRetryCheck(path)()

    def _check_inventory(self):
        return PreemptibleInventoryCheck(placement_inventories)()

    def _check_options(self):
        return OptionsCheck(self.conf)()

    def _check_flavors(self):
        def flavor_list():
            self._db()
            return nova_flavors()
        return FlavorSpecsCheck(flavor_list)()

    # oslo.upgradecheck calls each as func(self).
    _upgrade_checks = (
        (OptionsCheck.name, _check_options),
        (CoordinationCheck.name, _check_coordination),
        (PlacementRetryCheck.name, _check_placement_retries),
        (PreemptibleInventoryCheck.name, _check_inventory),
        (FlavorSpecsCheck.name, _check_flavors),
    )


def _no_traceback(check):
    """A check that breaks is a failure naming the error (oslo.upgradecheck
    would print a traceback and exit 255).
    """
    @functools.wraps(check)
    def guarded(self):
        try:
            return check(self)
        except Exception as exc:
            return Result(Code.FAILURE, 'The check itself failed: %s: %s'
                          % (type(exc).__name__, _one_line(exc)))
    return guarded


Checks._upgrade_checks = tuple((name, _no_traceback(check))
                               for name, check in Checks._upgrade_checks)


def _native_threads():
    """Nova's threading mode before nova is imported, as nova's own
    commands do: otherwise futurist (imported by nova) imports eventlet,
    which prints its deprecation warning on every run. On a nova without
    native threading (31, 2025.1: ``nova.monkey_patch`` has no ``patch``)
    nothing is changed: opie-status runs with eventlet there, as nova's
    own commands do.
    """
    compat.use_native_threading()


def _profiler_opts(conf):
    """nova's ``[profiler]`` options (osprofiler's), as nova's
    ``config.parse_args`` registers them: nova's database code reads them.
    """
    from oslo_utils import importutils
    profiler = importutils.try_import('osprofiler.opts')
    if profiler:
        profiler.set_defaults(conf)


def main(argv=None):
    """``opie-status``: nova's configuration (project ``nova``) with
    opie_sched's options.
    """
    try:
        _native_threads()  # reads --config-file already
        import nova.conf
        from nova import objects

        from opie_sched import conf as opie_conf

        conf = nova.conf.CONF
        opie_conf.register_opts(conf)
        _profiler_opts(conf)
        conf.register_cli_opts(CLI_OPTS)
        objects.register_all()
        return upgradecheck.main(conf, project='nova',
                                 upgrade_command=Checks(conf),
                                 argv=sys.argv[1:] if argv is None else argv)
    except cfg.Error as exc:
        sys.stderr.write('opie-status: cannot read the configuration: %s\n'
                         % _one_line(exc))
        return 255


if __name__ == '__main__':
    sys.exit(main())
