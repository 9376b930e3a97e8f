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
"""Command-line configuration and the run shared by the companion
services' scripts.

``opie-autoscaler`` and ``opie-repacker`` read oslo.config files
(``--config-file``), take ``--once`` (one round, then exit) and
``--dry-run`` (plan only; overrides the group's ``dry_run`` option).
"""

from oslo_config import cfg
from oslo_log import log as logging

from opie_sched.common import coordination

LOG = logging.getLogger(__name__)


def parse(argv, prog, register_opts, group, once_help, dry_run_help,
          conf=None):
    """A ``cfg.ConfigOpts`` with the service's options and ``argv`` parsed.

    :param argv: arguments without the program name.
    :param prog: the program name, for messages.
    :param register_opts: ``(conf) -> None`` registering the service group.
    :param group: name of the group whose ``dry_run`` ``--dry-run``
        overrides.
    :param once_help: help text of ``--once``.
    :param dry_run_help: help text of ``--dry-run``.
    :raises oslo_config.cfg.Error: bad arguments or configuration files,
        or options the service cannot honour
        (:class:`opie_sched.conf.validation.ConfigError`).
    """
    conf = conf or cfg.ConfigOpts()
    logging.register_options(conf)
    register_opts(conf)
    conf.register_cli_opts([
        cfg.BoolOpt('once', default=False, help=once_help),
        cfg.BoolOpt('dry-run', default=False, help=dry_run_help),
    ])
    conf(argv, project='opie_sched', prog=prog)
    if conf.dry_run:
        conf.set_override('dry_run', True, group=group)
    from opie_sched.conf import validation
    validation.validate(conf)
    return conf


def run(conf, service, prog, coordination_url, once, running):
    """Run a companion service: join the coordination backend, then one
    round (``--once``) or the oslo.service loop until SIGTERM / SIGINT;
    the service is stopped in the end.

    :param service: an object with ``start()`` (joins the backend),
        ``service(name)`` (the oslo.service service) and ``stop()``.
    :param prog: the program name (the oslo.service service's name).
    :param coordination_url: named when the backend cannot be joined.
    :param once: ``() -> exit code`` of one round, run with ``--once``.
    :param running: the log line saying the loop runs.
    :returns: the exit code: 1 when the backend cannot be joined, else
        ``once()``'s or the loop's.
    """
    try:
        service.start()
    except Exception as exc:
        LOG.error('Cannot join the coordination backend %s: %s',
                  coordination_url, exc)
        return 1
    try:
        if conf.once:
            return once()
        LOG.info(running)
        return coordination.serve(conf, service.service(prog))
    finally:
        service.stop()
