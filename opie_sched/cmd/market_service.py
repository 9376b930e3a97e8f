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
"""``opie-market``: the spot market service.

Subcommands (options come from ``--config-file``, group ``[opie_market]``,
see :mod:`opie_sched.services.market.opts`)::

    opie-market run          # the periodic worker (leader-elected; stops
                             # after the current tick on SIGTERM/SIGINT)
    opie-market api          # the REST API (development server)
    opie-market tick         # settle the current period once, print it
    opie-market db sync      # create/upgrade the tables (alembic)
    opie-market db version   # print the database revision

Exit codes: 0 success, 1 runtime failure, 2 bad configuration.
"""

import sys

from oslo_config import cfg
from oslo_log import log as logging

from opie_sched.common import coordination
from opie_sched.services.market import engine as market_engine
from opie_sched.services.market import opts

LOG = logging.getLogger(__name__)


def _add_commands(subparsers):
    subparsers.add_parser('run', help='run the periodic market worker')
    subparsers.add_parser('api', help='serve the REST API (development '
                                      'server; use the WSGI app in '
                                      'production)')
    subparsers.add_parser('tick', help='settle the current period once')
    db = subparsers.add_parser('db', help='database management')
    db.add_argument('action', choices=['sync', 'version'])


def _conf(argv):
    conf = cfg.ConfigOpts()
    opts.register_opts(conf)
    logging.register_options(conf)
    conf.register_cli_opt(cfg.SubCommandOpt(
        'command', title='commands', handler=_add_commands))
    conf(argv, project='opie_sched', prog='opie-market')
    from opie_sched.conf import validation
    validation.validate(conf)  # a cfg.Error: one line, exit 2
    logging.setup(conf, 'opie-market')
    return conf


def _db(conf):
    from opie_sched.services.market import service
    store = service.make_store(conf)
    if conf.command.action == 'sync':
        store.sync()
    print(store.version() or 'none')
    return 0


def _tick(conf):
    from opie_sched.services.market import service
    engine = service.build_engine(conf)
    try:
        report = engine.tick()
    finally:
        if engine.leadership is not None:
            engine.leadership.stop()
    if not report.leader:
        print('not the leader: another replica settles the market')
        return 0
    print('period %s (%s)' % (market_engine.iso(report.period_start),
                              report.state))
    for pool, prices in sorted(report.prices.items()):
        for resource, price in sorted(prices.items()):
            print('  price %s %s %s' % (pool, resource, price))
    for uuid in report.notices:
        print('  notice %s' % uuid)
    for uuid in report.preempted:
        print('  preempted %s' % uuid)
    for error in report.errors:
        print('  error %s' % error)
    return 1 if report.errors else 0


def _run(conf):
    # Before oslo.messaging (the notifier, the listener) imports
    # oslo_service, which would otherwise pick the eventlet backend.
    coordination.use_threading_backend()
    from opie_sched.services.market import service
    return coordination.serve(conf, service.create_service(conf))


def _api(conf):
    from wsgiref import simple_server

    from opie_sched.services.market.api import app as api_app
    g = opts.group(conf)
    application = api_app.build_app(conf)
    server = simple_server.make_server(g.api_host, g.api_port, application)
    LOG.info('opie-market API on http://%s:%s/', g.api_host, g.api_port)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


COMMANDS = {'run': _run, 'api': _api, 'tick': _tick, 'db': _db}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        conf = _conf(argv)
    except (cfg.Error, SystemExit) as exc:
        if isinstance(exc, SystemExit):
            return exc.code or 0
        sys.stderr.write('opie-market: %s\n' % exc)
        return 2
    try:
        return COMMANDS[conf.command.name](conf)
    except market_engine.ConfigError as exc:
        sys.stderr.write('opie-market: configuration: %s\n' % exc)
        return 2
    except Exception as exc:
        LOG.exception('opie-market %s failed', conf.command.name)
        sys.stderr.write('opie-market: %s\n' % exc)
        return 1


if __name__ == '__main__':
    sys.exit(main())
