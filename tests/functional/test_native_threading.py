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
"""Preemption races in native threading mode, as production opie-scheduler
runs (the functional tier itself runs under eventlet).

A subprocess (never patched by eventlet) brings up the demo's
:class:`~opie_sched.demo.cloud.EmbeddedCloud` in native threading mode
with two opie scheduler services, fills two hosts with preemptible
servers, boots normal servers from concurrent native threads through
openstacksdk, and prints what it sees as JSON; the test checks it. Each
planner stays 1 s in its read of the host's state, so a planner of the
same host that the host's lock failed to exclude would be seen there.

A run takes about 25 s on an idle 2-core machine, 5 minutes at a load of
20. The script bounds each of its own waits by its budget (the guard less
two minutes) and reports a slow step as a failure naming it; the guard
catches only what no wait bounds (a deadlock, a wait without a timeout), and
then the test's failure shows every thread's stack of the subprocess.
"""

import json
import os
import re
import subprocess
import sys

import testtools
from testtools import content

from opie_sched.common import compat

#: Seconds the subprocess may take: a guard against a hang only.
HANG_GUARD = 900
#: At the guard the subprocess writes every thread's stack to its stderr
#: and exits (faulthandler); one that could not is killed this many seconds
#: later.
KILL_AFTER_GUARD = 30
#: Seconds before the guard at which the script's own waits end (its
#: budget, in the environment variable OPIE_NATIVE_BUDGET).
BUDGET_BEFORE_GUARD = 120
#: Printed by faulthandler's dump_traceback_later when it fires.
_FAULTHANDLER_TIMEOUT = re.compile(r'^Timeout \(\d+:\d\d:\d\d\)!$', re.M)

_RACE = r'''
import collections
import concurrent.futures
import json
import os
import sys
import threading
import time

from opie_sched.demo import cloud as cloud_mod

T0 = time.monotonic()
END = T0 + float(os.environ.get('OPIE_NATIVE_BUDGET', '780'))


def left(most):
    # seconds a wait may take: ``most``, within the script's budget
    return max(1.0, min(most, END - time.monotonic()))


def progress(text):
    print('progress %6.1f s: %s' % (time.monotonic() - T0, text),
          file=sys.stderr, flush=True)


native = cloud_mod.use_native_threading()
cloud = cloud_mod.EmbeddedCloud(hosts=2, extra_flags={
    'opie_reconciler': {'run_in_scheduler': False}}).start()
try:
    try:
        import eventlet.patcher  # noqa: imported by nothing else when native
        patched = eventlet.patcher.is_monkey_patched('thread')
    except ImportError:
        patched = False
    # a second scheduler service of the same kind, on its own native threads
    cloud.start_service('scheduler', host='scheduler2',
                        manager=cloud_mod.OPIE_MANAGER)
    conn = cloud.connection()
    progress('cloud up')

    # Planners stay 1 s in the host's state read (under the host's lock): a
    # second planner of the same host arriving meanwhile is counted.
    from opie_sched.scheduler import reservations
    original = reservations.fresh_host_view
    inside = collections.Counter()
    most_inside = [0]
    mutex = threading.Lock()

    def slow_read(ctx, client, rp_uuid, *args, **kwargs):
        with mutex:
            inside[rp_uuid] += 1
            most_inside[0] = max(most_inside[0], inside[rp_uuid])
        try:
            time.sleep(1.0)
            return original(ctx, client, rp_uuid, *args, **kwargs)
        finally:
            with mutex:
                inside[rp_uuid] -= 1

    reservations.fresh_host_view = slow_read

    def boot(flavor, name):
        start = time.monotonic()
        server = conn.compute.create_server(
            name=name, flavor_id=cloud.flavor_ids[flavor],
            image_id=cloud.image_id, networks='none')
        server = conn.compute.wait_for_server(server, wait=left(300),
                                              interval=0.2)
        progress('%s ACTIVE after %.1f s' % (name, time.monotonic() - start))
        return server

    pre = [boot('medium.preemptible', 'p%d' % i) for i in range(8)]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(boot, 'medium', 'n%d' % i) for i in range(4)]
        normals = []
        errors = []
        for f in futures:
            try:
                normals.append(f.result())
            except Exception as exc:
                errors.append(str(exc))
    deadline = time.monotonic() + left(60)
    while True:
        alive = {s.id for s in conn.compute.servers()}
        gone = [p.id for p in pre if p.id not in alive]
        if len(gone) >= 4 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    progress('%d victims gone' % len(gone))
    used = {}
    for rp in conn.placement.resource_providers():
        usages = conn.placement.get(
            '/resource_providers/%s/usages' % rp.id,
            microversion='1.9').json()['usages']
        used[rp.name] = usages.get('VCPU', 0) + usages.get(
            'CUSTOM_PREEMPTIBLE_VCPU', 0)
    print(json.dumps({
        'native': native, 'eventlet_patched': patched,
        'normal_status': sorted(s.status for s in normals),
        'errors': errors,
        'victims': len(gone), 'full_vcpus_used': used,
        'most_planners_inside_one_host': most_inside[0],
        'threads_are_native': threading.current_thread().__class__
        .__module__ == 'threading'}), flush=True)
finally:
    progress('stopping the cloud')
    cloud.stop()
    progress('cloud stopped')
'''


#: Threads of the dump that only wait for work (idle pool workers, the
#: in-memory message bus's listeners, periodic tasks and tooz's heartbeat
#: between two runs), by their innermost frames.
_IDLE_MARKS = ('in _wait_for_work', '_drivers/impl_fake.py", line 8',
               'loopingcall.py", line 84 in _sleep',
               'in _beat_forever_until_stopped')


def busy_stacks(dump):
    """The thread stacks of a faulthandler dump, less the idle ones
    (:data:`_IDLE_MARKS` in one of a thread's four innermost frames).
    """
    blocks = re.split(r'\n(?=(?:Thread|Current thread) 0x)', dump)
    kept = [b for b in blocks
            if not any(m in '\n'.join(b.splitlines()[1:5])
                       for m in _IDLE_MARKS)]
    return '%s\n(%d idle threads left out)' % (
        '\n'.join(kept), len(blocks) - len(kept))


def run_native(test, script, hang_guard=HANG_GUARD):
    """Run ``script`` in a new interpreter without eventlet's monkey
    patching (nova's native threading mode) and return the last JSON
    object it printed, after checking that it exited 0 and that it ran
    natively (its ``native`` and ``eventlet_patched`` keys).

    The script's stderr is attached to the test as the detail
    ``subprocess-stderr``. When the script has not ended after
    ``hang_guard`` seconds, it writes every thread's stack to its stderr
    and exits (faulthandler; killed :data:`KILL_AFTER_GUARD` seconds
    later if it could not), and the test fails with the stacks of the
    threads that were not idle. The
    script may bound its own waits by ``OPIE_NATIVE_BUDGET`` (seconds,
    :data:`BUDGET_BEFORE_GUARD` before the guard, in its environment).

    :param hang_guard: seconds the run may take.
    """
    env = dict(os.environ)
    env.pop('OS_NOVA_DISABLE_EVENTLET_PATCHING', None)
    env['OPIE_NATIVE_BUDGET'] = str(hang_guard - BUDGET_BEFORE_GUARD)
    # the script keeps its own line numbers ("<string>") in the stacks
    armed = ('import faulthandler; '
             'faulthandler.dump_traceback_later(%d, exit=True); '
             'exec(compile(%r, "<string>", "exec"), {"__name__": "__main__"})'
             % (hang_guard, script))
    proc = subprocess.Popen([sys.executable, '-c', armed],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        out, err = proc.communicate(timeout=hang_guard + KILL_AFTER_GUARD)
        killed = False
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        killed = True
    test.addDetail('subprocess-stderr', content.text_content(err))
    dump = _FAULTHANDLER_TIMEOUT.search(err)
    if dump:
        test.fail('the native-threading subprocess hung: not ended after '
                  '%d s; its busy threads (most recent call first):\n%s'
                  % (hang_guard,
                     busy_stacks(err[dump.start():])))
    if killed:
        test.fail('the native-threading subprocess hung and was killed after '
                  '%d s without dumping its stacks; its stderr ends:\n%s'
                  % (hang_guard + KILL_AFTER_GUARD, err[-3000:]))
    lines = [x for x in out.splitlines() if x.startswith('{')]
    test.assertEqual(0, proc.returncode, err[-3000:])
    test.assertTrue(lines, err[-3000:])
    seen = json.loads(lines[-1])
    test.assertTrue(seen['native'], seen)
    test.assertFalse(seen['eventlet_patched'], seen)
    return seen


def require_native_embedded_nova(test):
    """Skip ``test`` where the embedded Nova cannot run natively: nova
    before :data:`opie_sched.common.compat.NATIVE_THREADING_SERIES`.

    Measured on nova 33.0.2 (2026.1): its functional fixtures, which the
    embedded Nova is built from, are eventlet-only. In native threading
    mode its ``FakeVersionedNotifier`` walks eventlet's green-thread
    parents for the sender's test id (``AttributeError: 'NoneType' object
    has no attribute 'parent'``, every build fails), and with that
    bypassed the shared in-memory database fails with ``cannot start a
    transaction within a transaction``. nova 34's fixtures support both
    modes. (``tests.unit.common.test_nova_signatures`` pins the first of the
    two, so that the series bound moves when nova's fixtures do.)
    """
    series = compat.nova_series()
    if series is not None and series < compat.NATIVE_THREADING_SERIES:
        test.skipTest('nova %d: the embedded Nova runs natively from nova '
                      '%d only (nova %d\'s functional fixtures are '
                      'eventlet-only)' % (series,
                                          compat.NATIVE_THREADING_SERIES,
                                          series))


class NativeThreadingRaceTest(testtools.TestCase):
    """Two opie schedulers on native threads, concurrent normal boots onto
    two preemptible-full hosts: every normal server ACTIVE, no host over
    capacity, exactly the four victims needed.
    """

    def test_concurrent_normal_boots_native_threads(self):
        require_native_embedded_nova(self)
        seen = run_native(self, _RACE)
        self.assertEqual([], seen['errors'])
        self.assertEqual(['ACTIVE'] * 4, seen['normal_status'])
        # the host's lock excluded concurrent planners of one host
        self.assertEqual(1, seen['most_planners_inside_one_host'], seen)
        self.assertEqual(4, seen['victims'], seen)
        self.assertEqual(2, len(seen['full_vcpus_used']), seen)
        for host, vcpus in seen['full_vcpus_used'].items():
            self.assertLessEqual(vcpus, 8, host)


class RunNativeHangTest(testtools.TestCase):
    """A subprocess that hangs fails its test with its threads' stacks
    before the guard kills it.
    """

    def test_a_hang_shows_the_stacks(self):
        script = ('import threading\n'
                  'def stuck():\n'
                  '    threading.Event().wait()\n'
                  'stuck()\n')
        # the guard only has to outlast the interpreter's start (the
        # script hangs for certain): every second of it is waited for
        error = self.assertRaises(
            self.failureException, run_native, self, script,
            6)
        self.assertIn('the native-threading subprocess hung', str(error))
        # the main thread's stack, innermost call first
        self.assertIn('line 3 in stuck', str(error))
        self.assertIn('subprocess-stderr', self.getDetails())


class EmbeddedCloudExitTest(testtools.TestCase):
    """A program that raises with the embedded Nova still up ends: the
    cloud is stopped at interpreter exit (else futurist's exit handler
    waits for ever for the services' periodic-task threads).
    """

    #: Seconds the program may take: a guard against a hang only (a
    #: one-host cloud starts in about a minute at a load of 20).
    EXIT_GUARD = 300

    def test_raise_with_the_cloud_up(self):
        script = ('from opie_sched.demo import cloud as cloud_mod\n'
                  'cloud_mod.use_native_threading()\n'
                  'cloud = cloud_mod.EmbeddedCloud(hosts=1).start()\n'
                  'raise RuntimeError("left up")\n')
        env = dict(os.environ)
        env.pop('OS_NOVA_DISABLE_EVENTLET_PATCHING', None)
        try:
            proc = subprocess.run([sys.executable, '-c', script],
                                  capture_output=True, text=True, env=env,
                                  timeout=self.EXIT_GUARD)
        except subprocess.TimeoutExpired as exc:
            self.fail('the program did not end within %d s; its stderr '
                      'ends: %s' % (self.EXIT_GUARD, (exc.stderr or b'')[
                          -3000:]))
        self.assertIn('RuntimeError: left up', proc.stderr)
        self.assertIn('The embedded Nova is still up at exit; stopping it',
                      proc.stderr)
        self.assertEqual(1, proc.returncode, proc.stderr[-3000:])
