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
"""The console scripts of the services, started so that they say what they
need.

Every service script (setup.cfg ``console_scripts``) is a function of this
module that imports its command module only when it runs, so that:

* a package of an extra that is not installed (``nova`` on a
  ``opie_sched[client]`` host, ``oslo_db`` without ``[market]``...) gives
  one line ``opie-scheduler needs: pip install 'opie_sched[scheduler]'
  (No module named 'nova')`` and exit status 1, not a traceback;
* a configuration the service cannot honour
  (:class:`opie_sched.conf.validation.ConfigError`, raised at start, e.g.
  by ``OpieSchedulerManager.__init__``) gives one line ``opie-scheduler
  refuses to start: invalid opie configuration: ...`` and exit status 1.

This module imports nothing but the standard library before the command
module: the command modules choose nova's concurrency mode first.
"""

import importlib
import sys

#: script -> (command module, extra that installs what it imports).
SCRIPTS = {
    'opie-scheduler': ('opie_sched.cmd.scheduler', 'scheduler'),
    'opie-reconciler': ('opie_sched.cmd.reconciler', 'scheduler'),
    'opie-status': ('opie_sched.cmd.status', 'scheduler'),
    'opie-market': ('opie_sched.cmd.market_service', 'market'),
    'opie-autoscaler': ('opie_sched.cmd.autoscaler', 'market'),
    'opie-repacker': ('opie_sched.cmd.repacker', 'repacker'),
}

#: Top-level packages of opie_sched itself: their ImportError is a bug,
#: never a missing extra.
OWN = ('opie_sched', 'opie_sched_tempest_plugin')


def missing_module(exc):
    """The top-level name of the missing third-party module of ``exc`` (an
    ImportError), or None when it is not a missing module.
    """
    name = getattr(exc, 'name', None)
    if not isinstance(exc, ModuleNotFoundError) or not name:
        return None
    top = name.split('.')[0]
    return None if top in OWN else top


def _say(line):
    sys.stderr.write(line + '\n')
    sys.stderr.flush()


def run(script, argv=None):
    """Run ``script``'s ``main``; its exit status.

    :param script: a key of :data:`SCRIPTS`.
    :param argv: arguments of ``main`` (None: ``main()`` reads
        ``sys.argv``).
    """
    module_name, extra = SCRIPTS[script]
    try:
        module = importlib.import_module(module_name)
        return module.main() if argv is None else module.main(argv)
    except ImportError as exc:
        if missing_module(exc) is None:
            raise
        _say("%s needs: pip install 'opie_sched[%s]' (%s)"
             % (script, extra, ' '.join(str(exc).split())))
        return 1
    except Exception as exc:
        from opie_sched.conf import validation
        if not isinstance(exc, validation.ConfigError):
            raise
        _say('%s refuses to start: %s' % (script, exc))
        return 1


def opie_scheduler():
    return run('opie-scheduler')


def opie_reconciler():
    return run('opie-reconciler')


def opie_status():
    return run('opie-status')


def opie_market():
    return run('opie-market')


def opie_autoscaler():
    return run('opie-autoscaler')


def opie_repacker():
    return run('opie-repacker')


if __name__ == '__main__':
    sys.exit(run(sys.argv.pop(1)))
