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
"""The pure algorithm packages stay pure.

The contributor guide promises that ``preemption``, ``market``, ``rpm``,
``diehard``, ``flavormix``, ``consolidation``, ``workload``, the
simulation core ``simcore`` (and ``notifications``, shared by the
scheduler and the market) import
nothing from Nova nor openstacksdk, so that the scheduler, the services,
the simulator and the CLI reuse them unchanged. Each package's modules are
imported in a fresh interpreter and the modules it loaded are checked.
"""

import json
import os
import pkgutil
import subprocess
import sys

import testtools

import opie_sched

PURE = ('preemption', 'market', 'rpm', 'diehard', 'flavormix',
        'consolidation', 'workload', 'simcore', 'notifications')
FORBIDDEN = ('nova', 'openstack', 'placement')

_PROBE = '''
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
'''


def _modules(package):
    path = os.path.join(os.path.dirname(opie_sched.__file__), package)
    names = ['opie_sched.%s' % package]
    for info in pkgutil.walk_packages([path], 'opie_sched.%s.' % package):
        names.append(info.name)
    return names


class PurePackagesTest(testtools.TestCase):

    def test_pure_packages_import_no_nova(self):
        for package in PURE:
            names = _modules(package)
            self.assertGreater(len(names), 1, package)
            out = subprocess.run(
                [sys.executable, '-c', _PROBE] + names,
                capture_output=True, text=True, check=False)
            self.assertEqual(0, out.returncode,
                             '%s: %s' % (package, out.stderr[-2000:]))
            loaded = set(json.loads(out.stdout.strip().splitlines()[-1]))
            self.assertEqual(set(), loaded & set(FORBIDDEN),
                             'opie_sched.%s imports %s'
                             % (package, sorted(loaded & set(FORBIDDEN))))


# Where the tests of a test package's modules live, when it is not
# opie_sched/<same path>: the scripts beside the package.
ROOTS = {
    'benchmarks': 'benchmarks',
    'tempest_plugin': 'opie_sched_tempest_plugin',
    'tools': os.path.join('doc', 'tools'),
}

# tests/unit/<pkg>/test_<name>.py files without a product module
# opie_sched/<pkg>/<name>.py, each with its reason. Keep it short: a test
# module of one product module is named after it instead.
EXCEPTIONS = {
    'benchmarks/test_bench_cells.py':
        "scheduling_latency.py's --cells mode, in its own subprocess",
    'common/test_nova_signatures.py':
        'every nova signature the package relies on, across modules',
    'conf/test_config_sample.py':
        'the generated sample of every option of every module',
    'flavormix/test_simulator_strategies.py':
        'simulator/repacking_strategies.py; tests/unit/simulator/ is '
        'reworked in another branch',
    'notifications/test_notifications.py':
        'the payload samples and object versions of the whole package',
    'simcore/test_scenarios_on_core.py':
        'simulator scenarios on the core; tests/unit/simulator/ is '
        'reworked in another branch',
    'simulator/test_consolidation_scenarios.py':
        'tests/unit/simulator/ is reworked in another branch',
    'simulator/test_parallel_seeds.py':
        'tests/unit/simulator/ is reworked in another branch',
    'simulator/test_simulator.py':
        'tests/unit/simulator/ is reworked in another branch',
}


def test_modules_without_product_module(tests_root, project_root):
    """The ``tests_root``-relative paths of the test modules
    ``<pkg>/.../test_<name>.py`` that have no product module
    ``opie_sched/<pkg>/.../<name>.py`` (or package ``<name>/``; for
    the test packages in ``ROOTS``, under that directory instead).
    Test modules at the top of ``tests_root`` (checks of the whole
    project) are not matched. Returns a sorted list.
    """
    missing = []
    for dirpath, _dirs, files in os.walk(tests_root):
        rel_dir = os.path.relpath(dirpath, tests_root)
        if rel_dir == os.curdir:
            continue
        parts = rel_dir.split(os.sep)
        if parts[0] in ROOTS:
            base = [ROOTS[parts[0]]] + parts[1:]
        else:
            base = ['opie_sched'] + parts
        for name in files:
            if not (name.startswith('test_') and name.endswith('.py')):
                continue
            product = os.path.join(project_root, *base, name[5:-3])
            if not (os.path.isfile(product + '.py')
                    or os.path.isfile(os.path.join(product,
                                                   '__init__.py'))):
                missing.append(os.path.join(rel_dir, name))
    return sorted(missing)


class OneTestModulePerProductModuleTest(testtools.TestCase):
    """``tests/unit/<pkg>/test_<name>.py`` tests ``opie_sched/<pkg>/
    <name>.py``, so that a unit's tests are found without grep (the
    contributor guide, "Outside the package").
    """

    def test_every_test_module_names_its_product_module(self):
        project = os.path.dirname(os.path.dirname(opie_sched.__file__))
        tests_root = os.path.join(project, 'tests', 'unit')
        missing = test_modules_without_product_module(tests_root, project)
        self.assertEqual(
            [], [m for m in missing if m not in EXCEPTIONS],
            'test modules named after no product module: split them by '
            'the module they test, or name them after it')
        # an exception no longer needed is removed from the list
        self.assertEqual(sorted(EXCEPTIONS), missing)
