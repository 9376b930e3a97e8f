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
"""Pins every nova signature opie_sched overrides or relies on, so that a
nova release changing one fails here, by name, instead of breaking the
scheduler at run time, and the start-up of the console scripts that run
nova's service code on the installed nova series, and that every console
script opie_sched ships parses its arguments there
(:class:`ConsoleScriptStartupTest`): a signature can match while a script
dies on an attribute the series lacks (opie-status on nova 31 called
``nova.monkey_patch.patch``, which 31 does not have).
"""

import inspect
import json
import os
import subprocess
import sys

import testtools

from nova.conductor import manager as conductor_manager
from nova.scheduler.client import report
from nova.scheduler import host_manager
from nova.scheduler import manager as nova_manager

from opie_sched.demo import cloud as demo_cloud
from opie_sched.scheduler import manager as opie_manager
from tests import console_scripts


def _undecorated(func):
    """``func`` without oslo.messaging's ``expected_exceptions`` (its
    ``inner`` wraps without ``functools.wraps``): the function in its
    closure.
    """
    if getattr(func, '__name__', None) != 'inner':
        return func
    for cell in getattr(func, '__closure__', None) or ():
        if inspect.isfunction(cell.cell_contents):
            return _undecorated(cell.cell_contents)
    return func


def params(func):
    return list(inspect.signature(_undecorated(func)).parameters)


class NovaSignatureTest(testtools.TestCase):

    OVERRIDDEN = {
        '_schedule': ['self', 'context', 'spec_obj', 'instance_uuids',
                      'alloc_reqs_by_rp_uuid', 'provider_summaries',
                      'allocation_request_version', 'return_alternates'],
        '_consume_selected_host': ['selected_host', 'spec_obj',
                                   'instance_uuid'],
        '_ensure_sufficient_hosts': ['self', 'context', 'hosts',
                                     'required_count', 'claimed_uuids'],
        '_get_alternate_hosts': ['self', 'selected_hosts', 'spec_obj',
                                 'hosts', 'index', 'num_alts',
                                 'alloc_reqs_by_rp_uuid',
                                 'allocation_request_version',
                                 'selected_alloc_reqs'],
        '_get_sorted_hosts': ['self', 'spec_obj', 'host_states', 'index'],
        'update_instance_info': ['self', 'context', 'host_name',
                                 'instance_info'],
        # a volume-booted request's flavor copy (issue 30, hole 9)
        'select_destinations': ['self', 'context', 'request_spec',
                                'filter_properties', 'spec_obj',
                                'instance_uuids', 'return_objects',
                                'return_alternates'],
    }

    def test_overridden_scheduler_manager_methods(self):
        for name, expected in self.OVERRIDDEN.items():
            self.assertEqual(expected,
                             params(getattr(nova_manager.SchedulerManager,
                                            name)), name)
            # ours accept the same arguments by the same names (the
            # second positional may be named hosts_ to keep the module
            # name free)
            ours = params(getattr(opie_manager.OpieSchedulerManager, name))
            self.assertEqual(len(expected) + (1 if expected[0] != 'self'
                                              else 0), len(ours), name)

    def test_filter_all_overridden_by_the_full_state_filter(self):
        # PreemptibleFullStateFilter reads its candidate hosts in bulk
        # before nova's per-host filtering
        from nova.scheduler import filters as nova_filters

        from opie_sched.scheduler.filters import preemptible_full_state
        expected = ['self', 'filter_obj_list', 'spec_obj']
        self.assertEqual(expected,
                         params(nova_filters.BaseHostFilter.filter_all))
        self.assertEqual(expected, params(
            preemptible_full_state.PreemptibleFullStateFilter.filter_all))
        # HeadroomFilter sums each pool once over the candidate hosts
        from opie_sched.scheduler.filters import headroom
        self.assertEqual(expected, params(
            headroom.HeadroomFilter.filter_all))

    def test_consume_selected_host_is_a_staticmethod_in_nova(self):
        self.assertIsInstance(
            inspect.getattr_static(nova_manager.SchedulerManager,
                                   '_consume_selected_host'), staticmethod)

    def test_host_state_fields_read(self):
        hs = host_manager.HostState('h', 'n', None)
        for attr in ('vcpus_total', 'vcpus_used', 'total_usable_ram_mb',
                     'free_ram_mb', 'total_usable_disk_gb', 'disk_mb_used',
                     'free_disk_mb', 'cpu_allocation_ratio',
                     'ram_allocation_ratio', 'disk_allocation_ratio',
                     'updated', 'uuid', 'cell_uuid', 'instances',
                     'num_instances', 'num_io_ops', 'limits',
                     'allocation_candidates', 'aggregates'):
            self.assertTrue(hasattr(hs, attr), attr)
        self.assertEqual(['self', 'spec_obj'],
                         params(host_manager.HostState.consume_from_request))

    def test_placement_client(self):
        self.assertIsInstance(
            inspect.getattr_static(nova_manager.SchedulerManager,
                                   'placement_client'), property)
        self.assertEqual(['self', 'url', 'version', 'global_request_id'],
                         params(report.SchedulerReportClient.get))

    def test_reschedule_path(self):
        # the manager books each instance's alternates by these Selection
        # fields; the conductor's reschedule claims them (build_instances
        # with host_lists), and the compute reports a built server to the
        # scheduler (update_instance_info, issue 30 hole 6)
        from nova.compute import manager as compute_manager
        from nova import objects
        objects.register_all()
        for field in ('service_host', 'nodename', 'compute_node_uuid',
                      'cell_uuid', 'allocation_request'):
            self.assertIn(field, objects.Selection.fields)
        self.assertIn('host_lists', params(
            conductor_manager.ComputeTaskManager.build_instances))
        self.assertEqual(['self', 'context', 'instance'], params(
            compute_manager.ComputeManager._update_scheduler_instance_info))

    def test_conductor_build_wrapped_by_the_demo(self):
        # opie_sched.demo.cloud.LostBuilds binds these two by name
        names = params(conductor_manager.ComputeTaskManager.
                       schedule_and_build_instances)
        self.assertEqual(['self', 'context', 'build_requests'], names[:3])
        # and patch it by this dotted name
        method = conductor_manager.ComputeTaskManager.\
            schedule_and_build_instances
        self.assertEqual(demo_cloud.LostBuilds.METHOD, '%s.%s' % (
            method.__module__, method.__qualname__))

    def test_scatter_gather_cells(self):
        # cell_reads._read_cells reads several cells with it, reads nova's
        # timeout and sentinel by these names, and _read_cell finds its
        # job by the targeted context's cell_uuid
        from nova import context as nova_context
        from nova import objects
        from oslo_utils import uuidutils
        self.assertEqual(['context', 'cell_mappings', 'timeout', 'fn',
                          'args', 'kwargs'],
                         params(nova_context.scatter_gather_cells))
        self.assertIsInstance(nova_context.CELL_TIMEOUT, (int, float))
        self.assertTrue(hasattr(nova_context, 'did_not_respond_sentinel'))
        objects.register_all()
        cell = objects.CellMapping(uuid=uuidutils.generate_uuid(),
                                   database_connection='sqlite://',
                                   transport_url='none:///')
        self.addCleanup(nova_context.CELL_CACHE.pop, cell.uuid, None)
        with nova_context.target_cell(nova_context.get_admin_context(),
                                      cell) as cctxt:
            self.assertEqual(cell.uuid, cctxt.cell_uuid)


class EmbeddedNovaThreadingTest(testtools.TestCase):
    """The series bound of the embedded Nova's native threading mode
    (:data:`opie_sched.common.compat.NATIVE_THREADING_SERIES`) follows
    nova's functional fixtures: the versioned-notification fixture must
    leave out its eventlet-only sender check in threading mode (nova 34's
    ``FakeVersionedNotifier._notify``: ``if not
    utils.concurrency_mode_threading()``), which nova 31 to 33's do not.
    Read from the fixture's source file, not imported: its import brings
    eventlet in.
    """

    def test_native_threading_series_follows_the_fixtures(self):
        from importlib import util
        from opie_sched.common import compat
        spec = util.find_spec('nova.tests.fixtures.notifications')
        with open(spec.origin) as f:
            source = f.read()
        series = compat.nova_series()
        self.assertEqual(
            series >= compat.NATIVE_THREADING_SERIES,
            'concurrency_mode_threading()' in source,
            'nova %s: NATIVE_THREADING_SERIES %s disagrees with nova\'s '
            'notification fixture' % (series,
                                      compat.NATIVE_THREADING_SERIES))


#: Imports the console-script modules that start a nova service (each
#: patches the process for the installed series at import, so in a process
#: of its own), then prints what their start-up calls in nova as JSON.
_STARTUP = """
import importlib, inspect, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
from nova import config, objects, service
from nova.scheduler import rpcapi
from opie_sched.common import compat
eventlet = sys.modules.get('eventlet')
print(json.dumps({
    'series': compat.nova_series(),
    'eventlet': bool(eventlet and
                     eventlet.patcher.is_monkey_patched('thread')),
    'parse_args': list(inspect.signature(config.parse_args).parameters),
    'create': list(inspect.signature(service.Service.create).parameters),
    'serve': list(inspect.signature(service.serve).parameters),
    'wait': callable(service.wait),
    'register_all': callable(objects.register_all),
    'min_version_cache': callable(
        objects.Service.enable_min_version_cache),
    'topic': rpcapi.RPC_TOPIC,
    'reset': compat.reset_executors(),
}))
"""


#: Every console script opie_sched ships (setup.cfg ``console_scripts``).
SCRIPTS = ('opie-autoscaler', 'opie-market', 'opie-reconciler',
           'opie-repacker', 'opie-sched', 'opie-scheduler', 'opie-status')


class ConsoleScriptStartupTest(testtools.TestCase):
    """The start-up of the console scripts on the installed nova series.

    Every script, run as its wrapper runs it in a process of its own, must
    parse its arguments: ``--help`` exits 0 with its usage and no
    traceback. That runs its start-up module to its argument parser, the
    series' patching (:mod:`opie_sched.common.compat`) included. For the
    scripts that run nova's service code (opie-scheduler, opie-reconciler):
    their modules import and nova's start-up calls have the arguments they
    pass. (Their refusal of a configuration they cannot honour, which
    needs nova's objects and a database: ``tests.functional.
    test_console_scripts``.)
    """

    MODULES = ('opie_sched.cmd.scheduler', 'opie_sched.cmd.reconciler')

    #: Per series: patched with eventlet (OS_NOVA_DISABLE_EVENTLET_PATCHING
    #: unset), and the executors dropped before the workers fork.
    SERIES = {
        31: (True, []),
        32: (True, ['utils.destroy_scatter_gather_executor',
                    'utils.destroy_default_executor']),
        33: (False, ['utils.destroy_scatter_gather_executor',
                     'utils.destroy_default_executor']),
        34: (False, ['thread_pool_factory.reset_all_executors']),
    }

    def test_service_start_up(self):
        env = dict(os.environ)
        env.pop('OS_NOVA_DISABLE_EVENTLET_PATCHING', None)
        proc = subprocess.run(
            [sys.executable, '-c', _STARTUP] + list(self.MODULES),
            capture_output=True, text=True, timeout=300, env=env)
        self.assertEqual(0, proc.returncode, proc.stderr[-3000:])
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        self.assertIn(got['series'], self.SERIES,
                      'nova %s is not a supported series' % got['series'])
        eventlet, reset = self.SERIES[got['series']]
        self.assertEqual(eventlet, got['eventlet'])
        self.assertEqual(reset, got['reset'])
        self.assertEqual('argv', got['parse_args'][0])
        # Service.create(binary=, topic=, manager=) as opie-scheduler calls
        for arg in ('binary', 'topic', 'manager'):
            self.assertIn(arg, got['create'])
        self.assertEqual(['server', 'workers'], got['serve'][:2])
        self.assertTrue(got['wait'])
        self.assertTrue(got['register_all'])
        self.assertTrue(got['min_version_cache'])
        self.assertEqual('scheduler', got['topic'])

    def test_every_shipped_console_script_is_started(self):
        self.assertEqual(sorted(SCRIPTS),
                         sorted(console_scripts.console_scripts()))

    def _check_arguments_parsed(self, name):
        rc, out, err = console_scripts.run_script(name, '--help')
        self.assertEqual(0, rc, err[-3000:])
        self.assertIn('usage: %s' % name, out)
        self.assertNotIn('Traceback', err)


def _add_script_tests():
    for name in SCRIPTS:
        def check(self, name=name):
            self._check_arguments_parsed(name)
        setattr(ConsoleScriptStartupTest, 'test_%s_parses_its_arguments'
                % name.replace('-', '_'), check)


_add_script_tests()


class ContextGlobalsTest(testtools.TestCase):
    """compat.reset_context_globals on both shapes of nova.context."""

    def test_nova_with_reset_globals(self):
        import types

        from opie_sched.common import compat
        calls = []
        ctx = types.SimpleNamespace(reset_globals=lambda: calls.append(1),
                                    CELL_CACHE={'a': 1}, CELLS=['c'])
        compat.reset_context_globals(ctx)
        self.assertEqual([1], calls)

    def test_older_nova_caches_emptied_by_hand(self):
        import types

        from opie_sched.common import compat
        ctx = types.SimpleNamespace(CELL_CACHE={'a': 1}, CELLS=['c'])
        compat.reset_context_globals(ctx)
        self.assertEqual(({}, []), (ctx.CELL_CACHE, ctx.CELLS))

    def test_installed_nova_has_one_of_them(self):
        from nova import context
        self.assertTrue(hasattr(context, 'reset_globals')
                        or hasattr(context, 'CELL_CACHE'))
