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
"""``opie-autoscaler``: the repacking autoscaler service (thesis Paper V).

Reads its options from ``--config-file`` files (group ``[opie_autoscaler]``,
see :mod:`opie_sched.conf.autoscaler`) and the cloud credentials from
``[service_credentials]`` (keystoneauth options), else clouds.yaml
(``[opie_autoscaler] cloud``) or ``OS_*`` variables
(:func:`opie_sched.common.credentials.connect`). Logging is oslo.log's
(``--debug``, ``--log-file``, ...).

``--once`` runs one round over every application and exits (0 when no
application failed, 1 otherwise); otherwise the service runs a round
every ``[opie_autoscaler] interval`` seconds (an oslo.service service, see
:func:`opie_sched.common.coordination.serve`) until SIGTERM or SIGINT,
which let the current round finish; exit code 0 then, 1 when the
coordination backend cannot be joined. ``--dry-run`` only logs the plans.
"""

import sys

from oslo_config import cfg
from oslo_log import log as logging

from opie_sched.cmd import service_config
from opie_sched.common import coordination
from opie_sched.conf import autoscaler as opts

LOG = logging.getLogger(__name__)


def parse_config(argv, conf=None):
    """A ``cfg.ConfigOpts`` with every option registered and ``argv`` parsed.

    :param argv: arguments without the program name.
    """
    return service_config.parse(
        argv, 'opie-autoscaler', opts.register_opts, opts.GROUP,
        once_help='Run one round over every application and exit.',
        dry_run_help='Only log the plans; boot and delete nothing '
                     '(overrides [opie_autoscaler] dry_run).',
        conf=conf)


def main(argv=None):
    """Run ``opie-autoscaler``; the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        conf = parse_config(argv)
    except cfg.Error as exc:
        sys.stderr.write('opie-autoscaler: error: %s\n' % exc)
        return 2
    logging.setup(conf, 'opie_sched')
    if not conf.once:  # a daemon: native threads, before tooz's import
        coordination.use_threading_backend()
    from opie_sched.services.autoscaler import service as service_mod
    service = service_mod.AutoscalerService(conf)

    def once():
        outcomes = service.run_once()
        for out in outcomes:
            LOG.info('Application %s: %s %s', out.app, out.action,
                     out.reason)
        return 1 if any(o.action == 'error' for o in outcomes) else 0
    return service_config.run(
        conf, service, 'opie-autoscaler',
        conf.opie_autoscaler.coordination_url, once,
        'opie-autoscaler running every %g s' % conf.opie_autoscaler.interval)


if __name__ == '__main__':
    sys.exit(main())
