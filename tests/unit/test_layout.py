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
