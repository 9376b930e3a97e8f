"""Command-line configuration shared by the companion services' scripts.

``opie-autoscaler`` and ``opie-repacker`` read oslo.config files
(``--config-file``), take ``--once`` (one round, then exit) and
``--dry-run`` (plan only; overrides the group's ``dry_run`` option).
"""

from oslo_config import cfg
from oslo_log import log as logging


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
    :raises oslo_config.cfg.Error: bad arguments or configuration files.
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
    return conf
