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
"""Running the installed console scripts in processes of their own, for
the tests of their start-up (``tests.unit.common.test_nova_signatures``: every
script parses its arguments on the installed nova series;
``tests.functional.test_console_scripts``: the service scripts refuse a
configuration they cannot honour).

Imports only the standard library: the unit tests import it without
nova's functional test package (which patches eventlet in).
"""

from importlib import metadata
import os
import subprocess
import sys

#: Run the entry point as its console-script wrapper does.
_RUN = ('import sys; from %s import %s as main; sys.argv[0] = %r; '
        'sys.exit(main())')

#: Seconds a start-up may take (nova's import on a loaded 2-core machine).
TIMEOUT = 300


def console_scripts():
    """``{name: 'module:function'}`` of the installed opie_sched (its
    ``console_scripts`` entry points).
    """
    dist = metadata.distribution('opie_sched')
    return {ep.name: ep.value for ep in dist.entry_points
            if ep.group == 'console_scripts'}


def run_script(name, *args):
    """Run console script ``name`` with ``args`` in a new process, as its
    wrapper would (``OS_NOVA_DISABLE_EVENTLET_PATCHING`` unset: the
    series' default patching, as an operator's shell has it).

    :param name: a key of :func:`console_scripts`.
    :returns: ``(exit code, stdout, stderr)``.
    :raises subprocess.TimeoutExpired: after :data:`TIMEOUT` seconds.
    """
    module, _, func = console_scripts()[name].partition(':')
    env = dict(os.environ)
    env.pop('OS_NOVA_DISABLE_EVENTLET_PATCHING', None)
    proc = subprocess.run(
        [sys.executable, '-c', _RUN % (module, func, name)] + list(args),
        capture_output=True, text=True, timeout=TIMEOUT, env=env,
        stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stdout, proc.stderr
