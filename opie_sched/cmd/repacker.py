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
"""``opie-repacker``: the RPM consolidation service (thesis Paper IV): live
migrations of running servers onto fewer hosts.

Reads its options from ``--config-file`` files (group ``[opie_repacker]``,
see :mod:`opie_sched.conf.repacker`; the score's λ's in
``[opie_rpm]``) and
the cloud credentials from ``[service_credentials]`` (keystoneauth
options), else clouds.yaml (``[opie_repacker] cloud``) or ``OS_*``
variables (:func:`opie_sched.common.credentials.connect`). Logging is
oslo.log's (``--debug``, ``--log-file``).

``--once`` runs one period and exits: 0 when it ran (even with failed
migrations, which are logged), 1 when it could not (cloud unreadable,
bad options), 3 when another replica held the lock. Otherwise the service
samples every ``sample_interval`` s and plans every ``interval`` s (an
oslo.service service, see :func:`opie_sched.common.coordination.serve`)
until SIGTERM or SIGINT, which let the current round finish; exit code 0
then, 1 when the coordination backend cannot be joined. ``--dry-run``
prints the plan as a table and migrates nothing.
"""

import sys

from oslo_config import cfg
from oslo_log import log as logging

from opie_sched.cmd import service_config
from opie_sched.common import coordination
from opie_sched.conf import repacker as opts

LOG = logging.getLogger(__name__)


def parse_config(argv, conf=None):
    """A ``cfg.ConfigOpts`` with every option registered and ``argv``
    parsed (arguments without the program name).
    """
    return service_config.parse(
        argv, 'opie-repacker', opts.register_opts, opts.GROUP,
        once_help='Run one period and exit.',
        dry_run_help='Print the plan as a table; migrate nothing '
                     '(overrides [opie_repacker] dry_run).',
        conf=conf)


def _print(text):
    sys.stdout.write(text + '\n')
    sys.stdout.flush()


def main(argv=None, conn=None):
    """Run ``opie-repacker``; the exit code.

    :param conn: optional openstacksdk connection (tests).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        conf = parse_config(argv)
    except cfg.Error as exc:
        sys.stderr.write('opie-repacker: error: %s\n' % exc)
        return 2
    except SystemExit as exc:  # argparse: --help, unknown arguments
        return exc.code
    logging.setup(conf, 'opie_sched')
    if not conf.once:  # a daemon: native threads, before tooz's import
        coordination.use_threading_backend()
    try:
        from opie_sched.services.repacker import service as service_mod
    except ImportError as exc:
        if (exc.name or '').split('.')[0] != 'numpy':
            raise
        sys.stderr.write('opie-repacker needs: pip install '
                         'opie_sched[repacker] (%s)\n' % exc)
        return 1
    service = service_mod.RepackerService(conf, conn=conn, out=_print)

    def once():
        period = service.run_once()
        if period.status == 'error':
            sys.stderr.write('opie-repacker: error: %s\n' % period.error)
            return 1
        return 3 if period.status == 'locked' else 0
    return service_config.run(
        conf, service, 'opie-repacker',
        service_mod.coordination_url(conf), once,
        'opie-repacker: sampling every %g s, planning every %g s'
        % (conf.opie_repacker.sample_interval, conf.opie_repacker.interval))


if __name__ == '__main__':
    sys.exit(main())
