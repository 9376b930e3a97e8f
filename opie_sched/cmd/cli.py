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
"""``opie-sched``: the operator's command line of opie_sched.

Each group of subcommands lives in its own module, listed in
:data:`COMMAND_MODULES`. A module exposes ``register(subparsers)``, which
adds its parser(s) with ``subparsers.add_parser(...)`` and sets on each
runnable (leaf) parser::

    parser.set_defaults(func=run, errors=(SomeError, ...))

``run(args)`` returns the exit code (0 on success). Exceptions listed in
``errors`` are expected failures: :func:`main` prints them as one line
``opie-sched: error: <message>`` and returns 1. Raising :class:`UsageError`
gives exit code 2 like an argparse usage error. Commands that talk to a
cloud call :func:`connect` with their ``args``; SDK and keystoneauth errors
are expected failures for every command. Anything else is reported as an
unexpected error on one line too (``--debug`` shows the traceback).

The global options (``--os-cloud``, ``--os-auth-url``, ... and ``OS_*``
environment variables, as the ``openstack`` client understands them) come
before the command: ``opie-sched --os-cloud devstack-admin flavor ...``.
"""

import argparse
import importlib
import logging
import sys

PROG = 'opie-sched'

#: The modules providing subcommands (dotted names, imported when the parser
#: is built), in help order; each has ``register(subparsers)``. A module
#: that fails to import is skipped with a warning.
COMMAND_MODULES = (
    'opie_sched.cmd.demo',
    'opie_sched.cmd.preempt',
    'opie_sched.cmd.flavor',
    'opie_sched.cmd.provider_config',
    'opie_sched.cmd.reliability',
    'opie_sched.cmd.repack',
    'opie_sched.cmd.market',
    'opie_sched.cmd.simulate',
    'opie_sched.devcloud.cli',
)


#: The extra (setup.cfg [extras]) that installs a top-level module some
#: commands need beyond the base install.
EXTRA_OF_MODULE = {
    'numpy': 'sim', 'scipy': 'sim', 'matplotlib': 'sim',
    'placement': 'demo', 'fixtures': 'demo', 'testtools': 'demo',
    'testscenarios': 'demo', 'testresources': 'demo', 'oslotest': 'demo',
    'wsgi_intercept': 'demo', 'openstackclient': 'demo',
}

#: Commands whose extra is not the one of the missing module (the demos
#: need all of opie_sched[demo], matplotlib included).
EXTRA_OF_COMMAND = {'demo': 'demo', 'market demo': 'demo'}

#: Command modules that import an extra's package when imported, and the
#: commands they register: without the extra, each of these commands is
#: still listed and says which extra to install.
OPTIONAL_COMMANDS = {'opie_sched.cmd.simulate': ('simulate',)}


def missing_extra(exc, command):
    """``'opie-sched CMD needs: pip install opie_sched[EXTRA]'`` or None.

    :param exc: the ImportError raised by a command.
    :param command: the command's words (``'market demo'``).
    :returns: the message when ``exc`` is a module of an extra, else None.
    """
    top = (getattr(exc, 'name', None) or '').split('.')[0]
    if top not in EXTRA_OF_MODULE:
        return None
    extra = EXTRA_OF_COMMAND.get(command, EXTRA_OF_MODULE[top])
    return '%s %s needs: pip install opie_sched[%s] (%s)' % (
        PROG, command, extra, _one_line(exc))


def _add_missing(subparsers, command, exc):
    """A placeholder command that explains which extra to install."""
    message = missing_extra(exc, command)
    # Any arguments are taken (prefix_chars no option can start with).
    parser = subparsers.add_parser(
        command, add_help=False, prefix_chars='\x00',
        help='(needs: pip install opie_sched[%s])'
             % message.rsplit('[', 1)[1].split(']')[0])
    parser.add_argument('arguments', nargs='*')

    def run(args):
        _error(message)
        return 1
    parser.set_defaults(func=run)


class UsageError(Exception):
    """Invalid combination of arguments (exit code 2)."""


class _Parser(argparse.ArgumentParser):
    """Usage errors on one line (subparsers inherit the class)."""

    def error(self, message):
        self.exit(2, '%s: error: %s (see --help)\n' % (self.prog, message))


def _without_os_cloud(argv):
    out = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in ('--os-cloud', '--os_cloud'):
            skip = True
            continue
        if arg.startswith(('--os-cloud=', '--os_cloud=')):
            continue
        out.append(arg)
    return out


def cloud_parser(argv):
    """A parent parser holding the openstacksdk / keystoneauth options.

    ``openstack.config`` peeks into ``argv`` (and clouds.yaml, ``OS_*``) to
    decide which auth options to offer. When that fails because the named
    cloud does not exist, the options are registered without peeking and the
    error is reported when a command connects.

    :param argv: the command line; fixed in place (``--os_x`` -> ``--os-x``)
        as ``openstack.config`` does.
    """
    from openstack import config as os_config
    from openstack import exceptions as sdk_exc

    parser = argparse.ArgumentParser(add_help=False)
    try:
        os_config.OpenStackConfig().register_argparse_arguments(parser, argv)
        return parser
    except sdk_exc.ConfigException:
        pass
    parser = argparse.ArgumentParser(add_help=False)
    os_config.OpenStackConfig(
        load_yaml_config=False, load_envvars=False,
    ).register_argparse_arguments(parser, _without_os_cloud(argv))
    return parser


def build_parser(argv=None):
    """The ``opie-sched`` argument parser, every command module registered.

    :param argv: the command line (list of str), used to decide which
        authentication options to offer; default ``sys.argv[1:]``.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    cloud = cloud_parser(argv)
    cloud_dests = frozenset(vars(cloud.parse_known_args([])[0]))
    parser = _Parser(
        prog=PROG, parents=[cloud],
        usage='%(prog)s [--os-cloud NAME] [--os-* options] [--debug] '
              'COMMAND ...',
        description='Preemptible instances for the OpenStack Nova '
                    'scheduler: flavors, provider configs and what-if '
                    'tools.')
    parser.add_argument('--debug', action='store_true',
                        help='show debug logging and tracebacks')
    parser.set_defaults(cloud_dests=cloud_dests)
    subparsers = parser.add_subparsers(dest='command', metavar='COMMAND',
                                       prog=PROG)
    subparsers.required = True
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            if (name in OPTIONAL_COMMANDS
                    and missing_extra(exc, '') is not None):
                for command in OPTIONAL_COMMANDS[name]:
                    _add_missing(subparsers, command, exc)
                continue
            # One broken command module must not take the others down.
            sys.stderr.write('%s: warning: the commands of %s are '
                             'unavailable: %s\n'
                             % (PROG, name, _one_line(exc)))
            continue
        module.register(subparsers)
    return parser


def connect(args):
    """An ``openstack.connection.Connection`` for the parsed command line.

    Honours ``--os-cloud`` / ``OS_CLOUD``, clouds.yaml and the other
    ``--os-*`` options and ``OS_*`` variables as the ``openstack`` client
    does.

    :raises openstack.exceptions.ConfigException: unknown cloud.
    :raises keystoneauth1.exceptions.ClientException: missing or invalid
        authentication options.
    """
    import openstack
    from openstack import config as os_config

    options = argparse.Namespace(**{
        k: getattr(args, k) for k in getattr(args, 'cloud_dests', ())
        if hasattr(args, k)})
    region = os_config.OpenStackConfig().get_one(argparse=options)
    return openstack.connection.Connection(config=region)


def _expected_errors(args):
    errors = list(getattr(args, 'errors', ()) or ())
    try:
        from openstack import exceptions as sdk_exc
        errors.append(sdk_exc.SDKException)
    except ImportError:  # pragma: no cover
        pass
    try:
        from keystoneauth1 import exceptions as ksa_exc
        errors.append(ksa_exc.ClientException)
    except ImportError:  # pragma: no cover
        pass
    return tuple(errors)


def _one_line(exc):
    text = ' '.join(str(exc).split())
    return text or type(exc).__name__


def _error(msg):
    sys.stderr.write('%s: error: %s\n' % (PROG, msg))


def main(argv=None):
    """Run ``opie-sched``.

    :param argv: arguments without the program name; default
        ``sys.argv[1:]``.
    :returns: exit code: 0 success, 1 error, 2 usage error, 130 interrupted.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser(argv)
    except Exception as exc:
        _error(_one_line(exc))
        return 2
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2

    logging.basicConfig(
        level=logging.DEBUG if args.debug else logging.WARNING,
        format='%s: %%(levelname)s: %%(message)s' % PROG)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        _error('interrupted')
        return 130
    except UsageError as exc:
        _error(_one_line(exc))
        return 2
    except _expected_errors(args) as exc:
        if args.debug:
            logging.getLogger(__name__).exception('%s failed', args.command)
        _error(_one_line(exc))
        return 1
    except Exception as exc:
        if args.debug:
            logging.getLogger(__name__).exception('%s failed', args.command)
        message = isinstance(exc, ImportError) and missing_extra(
            exc, ' '.join(w for w in (args.command,
                                      getattr(args, 'market_command', None))
                          if w))
        if message:
            _error(message)
            return 1
        _error('unexpected %s: %s (run with --debug for the traceback)'
               % (type(exc).__name__, _one_line(exc)))
        return 1


if __name__ == '__main__':
    # Run through the package module so that the command modules and this
    # share one UsageError class.
    from opie_sched.cmd import cli as _cli
    sys.exit(_cli.main())
