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
"""Tests of the per-request host views (opie_sched.scheduler.request_view):
the views the filter and weighers share, their bulk load, and
RequestViewLocalTest: the per-request view (``request_view.current_view``)
is one per request whatever the concurrency mode and import order.

Each case runs in its own interpreter (eventlet's monkey-patching is
process-wide): two concurrent "requests" set their own view, yield to each
other, and read it back.
"""

import json
import os
import subprocess
import sys
import textwrap

import fixtures
import testtools

from nova import objects

from opie_sched.common import compat
from opie_sched.preemption import model
from opie_sched.scheduler.filters import preemptible_full_state
from opie_sched.scheduler import host_capacity
from opie_sched.scheduler import ownership
from opie_sched.scheduler import request_view
from opie_sched.scheduler import weights
from tests.unit.scheduler.plugin_helpers import _PluginTest
from tests.unit.scheduler.plugin_helpers import flavor
from tests.unit.scheduler.plugin_helpers import host_state
from tests.unit.scheduler.plugin_helpers import instance
from tests.unit.scheduler.plugin_helpers import LARGE
from tests.unit.scheduler.plugin_helpers import MEDIUM
from tests.unit.scheduler.plugin_helpers import request


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


class SharedHostViewsTest(_PluginTest):
    """The HostViews of one request are built once and shared by the
    filter and weighers, and built again for a host its request consumed.
    """

    def hosts(self):
        # h-room fits one MEDIUM in its full state, not two, and its
        # victim would be the dearest; h-cheap and h-dear are full of
        # preemptibles (billing costs 3500 s, 100 s, 3000 s)
        return self.use_hosts(
            host_state('h-room', [instance('r1', 'h-room', LARGE, True,
                                           3500),
                                  instance('r2', 'h-room', MEDIUM, False)]),
            host_state('h-cheap', [instance('c1', 'h-cheap', LARGE, True,
                                            3700),
                                   instance('c2', 'h-cheap', LARGE, True,
                                            3700)]),
            host_state('h-dear', [instance('d1', 'h-dear', LARGE, True,
                                           3000),
                                  instance('d2', 'h-dear', LARGE, True,
                                           3000)]))

    def count_views(self):
        return self.useFixture(fixtures.MockPatchObject(
            model, 'HostView', wraps=model.HostView)).mock

    def test_views_built_once_per_request(self):
        host_states = self.hosts()
        built = self.count_views()
        spec = request(MEDIUM, False)
        filt = preemptible_full_state.PreemptibleFullStateFilter()
        for hs in host_states:
            filt.host_passes(hs, spec)
        for _ in range(2):
            # both weighers, twice (an alternate's pass, say)
            self.weigh(weights.all_weighers(), host_states, spec)
        self.assertEqual(len(host_states), built.call_count)
        self.assertEqual(
            ['h-cheap', 'h-dear', 'h-room'],
            sorted(c.kwargs['name'] for c in built.call_args_list))

    def consume(self, hs, spec):
        """What nova's _consume_selected_host does with opie's manager
        (without a provider summary: the HostState's own figures).
        """
        spec.pci_requests = objects.InstancePCIRequests(requests=[])
        spec.numa_topology = None
        before = host_capacity.consumed_disk_gb(hs)
        vcpus = hs.vcpus_used
        hs.consume_from_request(spec)
        self.assertEqual(vcpus + spec.vcpus, hs.vcpus_used)  # it happened
        host_capacity.note_consumed(hs, spec, before)

    def fresh_weights(self, host_states, spec):
        """The weights a new view (nothing shared) gives."""
        shared = request_view.current_view()
        self.use_hosts(*host_states)
        try:
            return self.weigh(weights.all_weighers(), host_states, spec)
        finally:
            request_view.set_current_view(shared)

    def test_decisions_unchanged_after_consumption(self):
        host_states = self.hosts()
        room = host_states[0]
        spec = request(MEDIUM, False)
        first = self.weigh(weights.all_weighers(), host_states, spec)
        self.assertEqual('h-room', first[0][0])
        # a multi-create: the first instance lands on h-room, whose full
        # state has no room left for the second one
        self.consume(room, spec)
        built = self.count_views()
        second = self.weigh(weights.all_weighers(), host_states, spec)
        self.assertEqual(self.fresh_weights(host_states, spec), second)
        self.assertNotEqual(first, second)
        self.assertEqual('h-cheap', second[0][0])
        # only the consumed host's view was built again by the shared view
        # (the fresh view's three come after it)
        self.assertEqual('h-room', built.call_args_list[0].kwargs['name'])
        self.assertEqual(1 + len(host_states), built.call_count)

    def test_claim_on_summary_rebuilds_view(self):
        # opie's manager: full state from the provider summaries plus the
        # request's own claims (RequestView.note_claim)
        def summary(vcpus_used):
            return {'resources': {
                'VCPU': {'capacity': 8, 'used': 0},
                'MEMORY_MB': {'capacity': 16000, 'used': 0},
                'DISK_GB': {'capacity': 200, 'used': 0},
                'CUSTOM_PREEMPTIBLE_VCPU': {'capacity': 8,
                                            'used': vcpus_used},
                'CUSTOM_PREEMPTIBLE_MEMORY_MB': {'capacity': 16000,
                                                 'used': 0},
                'CUSTOM_PREEMPTIBLE_DISK_GB': {'capacity': 200, 'used': 0}}}
        host_states = self.hosts()
        for hs, used in zip(host_states, (6, 8, 8)):
            hs.uuid = hs.host + '-rp'
            request_view.current_view().summaries[hs.uuid] = summary(used)
        spec = request(MEDIUM, False)
        first = self.weigh(weights.all_weighers(), host_states, spec)
        self.assertEqual('h-room', first[0][0])
        request_view.current_view().note_claim(host_states[0].uuid,
                                        ownership.request_resources(spec))
        second = self.weigh(weights.all_weighers(), host_states, spec)
        summaries = request_view.current_view().summaries
        shared = request_view.current_view()
        self.use_hosts(*host_states)
        request_view.current_view().summaries.update(summaries)
        request_view.current_view().note_claim(host_states[0].uuid,
                                        ownership.request_resources(spec))
        fresh = self.weigh(weights.all_weighers(), host_states, spec)
        request_view.set_current_view(shared)
        self.assertEqual(fresh, second)
        self.assertEqual('h-cheap', second[0][0])

    def test_new_victims_rebuild_views(self):
        host_states = self.hosts()
        spec = request(MEDIUM, False)
        first = self.weigh(weights.all_weighers(), host_states, spec)
        # an earlier instance of the request planned c1 and c2 as victims:
        # h-cheap's are leaving, it no longer needs preemption
        request_view.current_view().planned_victims.update({'c1', 'c2'})
        second = dict(self.weigh(weights.all_weighers(), host_states, spec))
        self.assertNotEqual(dict(first), second)
        self.assertEqual(max(second.values()), second['h-cheap'])

    def test_flavor_facts_per_flavor_and_volume_boot(self):
        # one flavor object shared by three rows (as a bulk read shares
        # it), one of them booted from a volume (no root disk on the
        # host); another flavor, normal, of the same size
        shared = flavor(LARGE, True)
        rows = []
        for uuid, image, flv in (('a', 'img', shared), ('b', '', shared),
                                 ('c', 'img', shared),
                                 ('d', 'img', flavor(LARGE, False))):
            inst = instance(uuid, 'h', LARGE, True, 100)
            inst.flavor = flv
            inst.image_ref = image
            rows.append(inst)
        hs = host_state('h', rows)
        view = request_view.RequestView(ctx=None)
        view._instances[('h', 'h')] = rows
        view._loaded.add(('h', 'h'))
        got = view.host_views([hs], request=ownership.request_resources(
            request(LARGE, False)))[('h', 'h')].instances
        self.assertEqual([ownership.instance_info(i) for i in rows], got)
        # a preemptible server holds its flavor's CUSTOM_PREEMPTIBLE_*
        # amounts in Placement, but no root disk when booted from a volume
        # (the scheduler claims it so: nova's is_bfv rule for DISK_GB,
        # issue 30, hole 9)
        self.assertEqual([(4, 8000, 80), (4, 8000, 0), (4, 8000, 80),
                          (4, 8000, 80)], [tuple(i.resources) for i in got])
        self.assertEqual([True, True, True, False],
                         [i.preemptible for i in got])


class BulkLoadTest(_PluginTest):
    """Instances are loaded only for hosts that would need preemption."""

    def test_hosts_with_room_are_not_loaded(self):
        roomy = [host_state('h%d' % i, [instance('i%d' % i, 'h%d' % i,
                                                 MEDIUM, True)])
                 for i in range(3)]
        full = host_state('full', [instance('f1', 'full', LARGE, True),
                                   instance('f2', 'full', LARGE, True)])
        load = self.useFixture(fixtures.MockPatch(
            'opie_sched.scheduler.cell_reads.load_instances',
            return_value={('full', 'full'): list(full.instances.values())}))
        request_view.set_current_view(request_view.RequestView(ctx=None))
        got = dict(self.weigh(weights.all_weighers(), roomy + [full],
                              request(LARGE, False)))
        # the full-state weighers do not read server metadata
        load.mock.assert_called_once_with(None, {None: {'full'}},
                                          nodes_by_cell={None: {'full'}},
                                          server_metadata=False)
        self.assertEqual('full', min(got, key=got.get))

    def test_nothing_loaded_when_every_host_fits(self):
        roomy = [host_state('h%d' % i, []) for i in range(3)]
        load = self.useFixture(fixtures.MockPatch(
            'opie_sched.scheduler.cell_reads.load_instances'))
        request_view.set_current_view(request_view.RequestView(ctx=None))
        self.weigh(weights.all_weighers(), roomy, request(LARGE, False))
        load.mock.assert_not_called()
