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
"""The per-request view (``request_view.current_view``) is one per request
whatever the concurrency mode and import order.

Each case runs in its own interpreter (eventlet's monkey-patching is
process-wide): two concurrent "requests" set their own view, yield to each
other, and read it back.
"""

import json
import os
import subprocess
import sys
import textwrap

import testtools

from opie_sched.common import compat

# argv[1]: how the process starts (see the tests); prints a JSON report
_SCRIPT = textwrap.dedent('''
    import json
    import sys
    mode = sys.argv[1]
    if mode == 'opie-scheduler':
        # the console script's own import path: it patches (or not) first
        import opie_sched.cmd.scheduler  # noqa: F401
    from opie_sched.scheduler import request_view
    if mode == 'eventlet-after-opie':
        import eventlet
        eventlet.monkey_patch()
    try:
        from eventlet import patcher
    except ImportError:  # nova forbids it in native threading mode
        green = False
    else:
        green = patcher.is_monkey_patched('thread')
    import threading
    import time

    seen = {}
    both_set = threading.Event() if not green else None

    def request(name):
        view = object()
        request_view.set_current_view(view)
        if green:
            import eventlet
            eventlet.sleep(0.05)  # the other request runs meanwhile
        else:
            if name == 'a':
                both_set.wait(5)
            else:
                both_set.set()
            time.sleep(0.05)
        seen[name] = request_view.current_view() is view
        request_view.set_current_view(None)

    if green:
        import eventlet
        threads = [eventlet.spawn(request, n) for n in 'ab']
        for t in threads:
            t.wait()
    else:
        threads = [threading.Thread(target=request, args=(n,))
                   for n in 'ab']
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    print(json.dumps({'green': green, 'own_view': seen,
                      'main_view': request_view.current_view() is None}))
''')


class RequestViewLocalTest(testtools.TestCase):

    def run_case(self, mode, eventlet=None):
        env = dict(os.environ)
        env.pop('OS_NOVA_DISABLE_EVENTLET_PATCHING', None)
        if eventlet is not None:
            # nova.monkey_patch: 'false' patches, 'true' does not
            env['OS_NOVA_DISABLE_EVENTLET_PATCHING'] = (
                'false' if eventlet else 'true')
        proc = subprocess.run(
            [sys.executable, '-c', _SCRIPT, mode], env=env,
            capture_output=True, text=True, timeout=300)
        self.assertEqual(0, proc.returncode, proc.stderr[-3000:])
        return json.loads(proc.stdout.strip().splitlines()[-1])

    def assert_own_views(self, report, green):
        self.assertEqual(green, report['green'])
        self.assertEqual({'a': True, 'b': True}, report['own_view'])
        self.assertTrue(report['main_view'])

    def test_opie_scheduler_default_mode(self):
        # the installed nova's default for its scheduler: native threads
        # from nova 33, eventlet on 31 and 32 (compat.patch_nova_service)
        report = self.run_case('opie-scheduler')
        self.assert_own_views(report, green=compat.nova_series() <
                              compat.THREADING_DEFAULT_SERIES)

    def test_opie_scheduler_native_threads(self):
        # an operator leaving eventlet out (the default from nova 33)
        report = self.run_case('opie-scheduler', eventlet=False)
        self.assert_own_views(report, green=False)

    def test_opie_scheduler_eventlet(self):
        # an operator forcing eventlet: opie-scheduler patches before
        # importing anything of opie
        report = self.run_case('opie-scheduler', eventlet=True)
        self.assert_own_views(report, green=True)

    def test_eventlet_patched_after_opie_imported(self):
        # the order of nova's test fixtures and the embedded demo cloud:
        # a threading.local made at import would be one for all green
        # threads here
        report = self.run_case('eventlet-after-opie')
        self.assert_own_views(report, green=True)
