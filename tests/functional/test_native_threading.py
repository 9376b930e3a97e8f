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
"""

import json
import os
import subprocess
import sys

import testtools

#: Seconds the subprocess may take (a guard against a hang only).
HANG_GUARD = 900

_RACE = r'''
import concurrent.futures
import json
import sys
import time

from opie_sched.demo import cloud as cloud_mod

native = cloud_mod.use_native_threading()
cloud = cloud_mod.EmbeddedCloud(hosts=2, extra_flags={
    'opie_reconciler': {'run_in_scheduler': False}}).start()
try:
    import eventlet.patcher  # noqa: imported by nothing else when native
    patched = eventlet.patcher.is_monkey_patched('thread')
except ImportError:
    patched = False
# a second scheduler service of the same kind, on its own native threads
cloud.start_service('scheduler', host='scheduler2',
                    manager=cloud_mod.OPIE_MANAGER)
conn = cloud.connection()

# Planners stay 1 s in the host's state read (under the host's lock): a
# second planner of the same host arriving meanwhile is counted.
import collections
import threading
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
    server = conn.compute.create_server(
        name=name, flavor_id=cloud.flavor_ids[flavor],
        image_id=cloud.image_id, networks='none')
    return conn.compute.wait_for_server(server, wait=300, interval=0.2)


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
deadline = time.monotonic() + 60
while True:
    alive = {s.id for s in conn.compute.servers()}
    gone = [p.id for p in pre if p.id not in alive]
    if len(gone) >= 4 or time.monotonic() > deadline:
        break
    time.sleep(0.5)
used = {}
for rp in conn.placement.resource_providers():
    usages = conn.placement.get(
        '/resource_providers/%s/usages' % rp.id,
        microversion='1.9').json()['usages']
    used[rp.name] = usages.get('VCPU', 0) + usages.get(
        'CUSTOM_PREEMPTIBLE_VCPU', 0)
print(json.dumps({
    'native': native, 'eventlet_patched': patched,
    'normal_status': sorted(s.status for s in normals), 'errors': errors,
    'victims': len(gone), 'full_vcpus_used': used,
    'most_planners_inside_one_host': most_inside[0],
    'threads_are_native': __import__('threading').current_thread().__class__
    .__module__ == 'threading'}), flush=True)
cloud.stop()
'''


def run_native(test, script, hang_guard=HANG_GUARD):
    """Run ``script`` in a new interpreter without eventlet's monkey
    patching (nova's native threading mode) and return the last JSON
    object it printed, after checking that it exited 0 and that it ran
    natively (its ``native`` and ``eventlet_patched`` keys).

    :param hang_guard: seconds before the run is killed.
    """
    env = dict(os.environ)
    env.pop('OS_NOVA_DISABLE_EVENTLET_PATCHING', None)
    proc = subprocess.run([sys.executable, '-c', script],
                          capture_output=True, text=True, env=env,
                          timeout=hang_guard)
    lines = [x for x in proc.stdout.splitlines() if x.startswith('{')]
    test.assertEqual(0, proc.returncode, proc.stderr[-3000:])
    test.assertTrue(lines, proc.stderr[-3000:])
    seen = json.loads(lines[-1])
    test.assertTrue(seen['native'], seen)
    test.assertFalse(seen['eventlet_patched'], seen)
    return seen


class NativeThreadingRaceTest(testtools.TestCase):
    """Two opie schedulers on native threads, concurrent normal boots onto
    two preemptible-full hosts: every normal server ACTIVE, no host over
    capacity, exactly the four victims needed.
    """

    def test_concurrent_normal_boots_native_threads(self):
        seen = run_native(self, _RACE)
        self.assertEqual([], seen['errors'])
        self.assertEqual(['ACTIVE'] * 4, seen['normal_status'])
        # the host's lock excluded concurrent planners of one host
        self.assertEqual(1, seen['most_planners_inside_one_host'], seen)
        self.assertEqual(4, seen['victims'], seen)
        self.assertEqual(2, len(seen['full_vcpus_used']), seen)
        for host, vcpus in seen['full_vcpus_used'].items():
            self.assertLessEqual(vcpus, 8, host)
