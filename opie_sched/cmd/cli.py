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
"""``opie-sched``: the operator's command line of opie_sched, a cliff App.

Every command is a class (:class:`Command`, or :class:`Lister` /
:class:`ShowOne` for output through cliff's formatters: ``-f
table|json|yaml|value`` plus ``csv`` for listings and ``shell`` for single
objects, ``-c COLUMN``), registered as an entry point of the
:data:`NAMESPACE` namespace in setup.cfg (``flavor_create-preemptible``
is the command ``flavor create-preemptible``) and imported only when it
runs or is listed; a command whose module needs an extra that is not
installed is listed with the extra to install.

A command class lists its expected failures in ``errors``: the App prints
them as one line ``opie-sched: error: <message>`` and exits 1. Raising
:class:`UsageError` exits 2, like an argparse usage error (also one line).
SDK and keystoneauth errors are expected failures of every command.
Anything else is reported as an unexpected error on one line too
(``--debug`` shows the traceback). Commands that talk to a cloud call
:func:`connect` with ``self.app.options``.

The global options (``--os-cloud``, ``--os-auth-url``, ... and ``OS_*``
environment variables, as the ``openstack`` client understands them, and
``--debug``) are accepted anywhere on the command line:
``opie-sched --os-cloud devstack-admin flavor ...``.
"""

import argparse
import difflib
import functools
from importlib import metadata
import logging
import sys

from cliff import app as cliff_app
from cliff import command as cliff_command
from cliff import commandmanager
from cliff import lister as cliff_lister
from cliff import show as cliff_show

PROG = 'opie-sched'
LOG = logging.getLogger(__name__)

#: The stevedore namespace of the commands (setup.cfg [entry_points]).
NAMESPACE = 'opie_sched.cli'

#: The extra (setup.cfg [extras]) that installs a top-level module some
#: commands need beyond the base install.
EXTRA_OF_MODULE = {
    'numpy': 'sim', 'scipy': 'sim', 'matplotlib': 'sim',
    'placement': 'demo', 'fixtures': 'demo', 'testtools': 'demo',
    'testscenarios': 'demo', 'testresources': 'demo', 'oslotest': 'demo',
    'wsgi_intercept': 'demo', 'openstackclient': 'demo',
    # a client-only install (opie_sched[client]) has no nova
    'nova': 'scheduler', 'oslo_upgradecheck': 'scheduler',
}

#: Commands whose extra is not the one of the missing module (the demos
#: need all of opie_sched[demo], matplotlib included).
EXTRA_OF_COMMAND = {'demo': 'demo', 'market demo': 'demo'}


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


class UsageError(Exception):
    """Invalid combination of arguments (exit code 2)."""


def _parser_error(parser, message):
    parser.exit(2, '%s: error: %s (see --help)\n' % (parser.prog, message))


def one_line_errors(parser):
    """Make ``parser`` report usage errors on one line, exit code 2.

    :returns: ``parser``.
    """
    parser.error = functools.partial(_parser_error, parser)
    return parser


class _Base:
    """What every ``opie-sched`` command shares."""

    #: Exceptions that are expected failures of the command (exit 1).
    errors = ()

    def get_parser(self, prog_name):
        return one_line_errors(super().get_parser(prog_name))


class Command(_Base, cliff_command.Command):
    """A command that writes its own output (``take_action`` returns the
    exit code, None for 0).
    """


class _Display(_Base):

    def _generate_columns_and_selector(self, parsed_args, column_names):
        try:
            return super()._generate_columns_and_selector(parsed_args,
                                                          column_names)
        except ValueError as exc:
            raise UsageError('-c: %s' % exc)


class Lister(_Display, cliff_lister.Lister):
    """A command printing rows: ``take_action`` returns ``(columns,
    rows)``.
    """


class ShowOne(_Display, cliff_show.ShowOne):
    """A command printing one object: ``take_action`` returns
    ``(fields, values)``.
    """


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


class _Missing(Command):
    """A command whose module needs an extra that is not installed: listed
    in the help with the extra to install; running it says so (exit 1).
    """

    message = None

    def get_parser(self, prog_name):
        # any arguments (no option can start with the prefix)
        parser = argparse.ArgumentParser(prog=prog_name, add_help=False,
                                         description=self.message,
                                         prefix_chars='\x00')
        parser.add_argument('arguments', nargs='*')
        return parser

    def take_action(self, parsed_args):
        _error(self.message)
        return 1


class _Guarded:
    """An entry point whose loading turns a missing extra into a
    :class:`_Missing` command.
    """

    def __init__(self, ep, name):
        self.ep = ep
        self.name = name

    def load(self):
        try:
            return self.ep.load()
        except ImportError as exc:
            message = missing_extra(exc, self.name)
            if message is None:
                raise
            extra = message.rsplit('[', 1)[1].split(']')[0]
            return type('Missing', (_Missing,), {
                '__doc__': '(needs: pip install opie_sched[%s])' % extra,
                'message': message})

    @property
    def value(self):
        return self.ep.value

    def __repr__(self):
        return repr(self.ep)


class _CommandManager(commandmanager.CommandManager):
    """The commands registered in an entry point namespace (the stevedore
    namespace :data:`NAMESPACE`), each imported when it is run or listed:
    a command whose module needs a missing extra is still listed.
    """

    def load_commands(self, namespace):
        self.group_list.append(namespace)
        for entry_point in metadata.entry_points(group=namespace):
            name = entry_point.name.replace('_', ' ')
            if name in self.commands:
                LOG.warning('command %r registered twice: %s and %s', name,
                            self.commands[name].value, entry_point.value)
            self.commands[name] = _Guarded(entry_point, name)


class OpieSched(cliff_app.App):
    """The ``opie-sched`` App.

    :param argv: the command line (used to decide which authentication
        options to offer); fixed in place as ``openstack.config`` does.
    """

    NAME = PROG
    LOG = logging.getLogger(PROG)

    def __init__(self, argv):
        self._argv = argv
        self.no_command = False
        super().__init__(
            description='Preemptible instances for the OpenStack Nova '
                        'scheduler: flavors, provider configs and what-if '
                        'tools.',
            version=_version(),
            command_manager=_CommandManager(NAMESPACE),
            deferred_help=True)

    def build_option_parser(self, description, version,
                            argparse_kwargs=None):
        cloud = cloud_parser(self._argv)
        cloud_dests = frozenset(vars(cloud.parse_known_args([])[0]))
        parser = super().build_option_parser(
            description, version, {'parents': [cloud],
                                   'allow_abbrev': False})
        parser.set_defaults(cloud_dests=cloud_dests)
        return one_line_errors(parser)

    def configure_logging(self):
        """Warnings and errors on stderr (debug logging with ``--debug``
        or ``-vv``); leaves an already configured root logger alone.
        """
        debug = self.options.debug or self.options.verbose_level > 1
        logging.basicConfig(
            level=logging.DEBUG if debug else logging.WARNING,
            format='%s: %%(levelname)s: %%(message)s' % PROG)
        # stevedore warns "Could not load NAME" for a plugin name not
        # installed; every loader of opie_sched then raises an error naming
        # the name and the installed ones, which is the one line to show.
        logging.getLogger('stevedore').setLevel(
            logging.DEBUG if debug else logging.ERROR)

    def interact(self):
        # No interactive shell: a command is required.
        self.no_command = True
        _error('a command is required (see %s --help)' % PROG)

    def run_subcommand(self, argv):
        try:
            factory, name, sub_argv = self.command_manager.find_command(argv)
        except ImportError as exc:
            words = ' '.join(a for a in argv if not a.startswith('-'))
            _error(missing_extra(exc, words) or
                   'cannot load command %s: %s' % (words, _one_line(exc)))
            return 1
        except ValueError:
            _error('%s is not an %s command%s (see %s --help)' % (
                ' '.join(w for w in argv if not w.startswith('-')), PROG,
                _suggestions(argv, [n for n, _ in self.command_manager]),
                PROG))
            return 2
        cmd = factory(self, self.options, cmd_name=name)
        try:
            try:
                parsed_args = cmd.get_parser(
                    ' '.join([PROG, name])).parse_args(sub_argv)
            except SystemExit as exc:
                return exc.code if isinstance(exc.code, int) else 2
            return cmd.run(parsed_args) or 0
        except KeyboardInterrupt:
            _error('interrupted')
            return 130
        except UsageError as exc:
            _error(_one_line(exc))
            return 2
        except Exception as exc:
            if self.options.debug:
                self.LOG.exception('%s failed', name)
            message = isinstance(exc, ImportError) and missing_extra(exc,
                                                                     name)
            if message:
                _error(message)
            elif isinstance(exc, _expected_errors(cmd)):
                _error(_one_line(exc))
            else:
                _error('unexpected %s: %s (run with --debug for the '
                       'traceback)' % (type(exc).__name__, _one_line(exc)))
            return 1


def _suggestions(argv, names):
    """``'; did you mean: ...'`` for an unknown command, or ``''``."""
    words = [w for w in argv if not w.startswith('-')]
    if not words:
        return ''
    firsts = difflib.get_close_matches(
        words[0], sorted({n.split()[0] for n in names}), n=3, cutoff=0.6)
    close = [n for n in names if n.startswith(words[0] + ' ')] or [
        n for n in names if n.split()[0] in firsts]
    return '; did you mean: %s' % ', '.join(sorted(close)) if close else ''


def _version():
    try:
        return metadata.version('opie_sched')
    except Exception:
        return 'unknown'


def parse_command(argv):
    """Parse a command line without running it.

    :param argv: arguments without the program name.
    :returns: ``(options, args)``: the global options (what a command
        sees as ``self.app.options``, e.g. for :func:`connect`) and the
        command's parsed arguments.
    :raises ValueError: unknown command.
    :raises SystemExit: usage error (message on stderr).
    """
    argv = list(argv)
    app = OpieSched(argv)
    options, rest = app.parser.parse_known_args(argv)
    app.options = options
    factory, name, sub_argv = app.command_manager.find_command(rest)
    cmd = factory(app, options, cmd_name=name)
    return options, cmd.get_parser(' '.join([PROG, name])).parse_args(
        sub_argv)


def connect(options):
    """An ``openstack.connection.Connection`` for the global options.

    Honours ``--os-cloud`` / ``OS_CLOUD``, clouds.yaml and the other
    ``--os-*`` options and ``OS_*`` variables as the ``openstack`` client
    does.

    :param options: the App's parsed global options (a command's
        ``self.app.options``).
    :raises openstack.exceptions.ConfigException: unknown cloud.
    :raises NoCredentials: no cloud named and no credentials given
        (keystoneauth's ``MissingRequiredOptions``, as its ``__cause__``).
    :raises keystoneauth1.exceptions.ClientException: invalid
        authentication options.
    """
    from keystoneauth1 import exceptions as ksa_exc
    import openstack
    from openstack import config as os_config

    picked = argparse.Namespace(**{
        k: getattr(options, k) for k in getattr(options, 'cloud_dests', ())
        if hasattr(options, k)})
    try:
        region = os_config.OpenStackConfig().get_one(argparse=picked)
    except ksa_exc.MissingRequiredOptions as exc:
        raise NoCredentials([opt.dest for opt in exc.options]) from exc
    return openstack.connection.Connection(config=region)


class NoCredentials(Exception):
    """No cloud to talk to: ``--os-cloud`` / ``OS_CLOUD`` names none and
    the ``--os-*`` options / ``OS_*`` variables lack ``missing`` (the
    keystoneauth option names, e.g. ``['auth_url']``).
    """

    def __init__(self, missing):
        self.missing = list(missing)
        flags = ', '.join('--os-%s (OS_%s)' % (m.replace('_', '-'),
                                              m.upper())
                          for m in self.missing)
        super().__init__(
            'no cloud credentials (missing %s): name a cloud of clouds.yaml '
            'with --os-cloud NAME or OS_CLOUD, or give %s and the other '
            '--os-* options or OS_* variables of your credentials'
            % (', '.join(self.missing), flags))


def _expected_errors(cmd):
    try:
        errors = list(getattr(cmd, 'errors', ()) or ())
    except ImportError:
        errors = []
    errors.append(NoCredentials)
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
        app = OpieSched(argv)
    except Exception as exc:
        _error(_one_line(exc))
        return 2
    try:
        rc = app.run(argv)
    except SystemExit as exc:
        # --help, --version, usage errors of the global options
        if exc.code is None:
            return 0
        return exc.code if isinstance(exc.code, int) else 2
    return 2 if app.no_command else rc


if __name__ == '__main__':
    # Run through the package module so that the command modules and this
    # share one UsageError class.
    from opie_sched.cmd import cli as _cli
    sys.exit(_cli.main())
