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
"""Entry points installed by a test, as another package would install them.

:class:`EntryPoints` writes a distribution (``*.dist-info`` with
``METADATA`` and ``entry_points.txt``) into a temporary directory and puts
that directory first on ``sys.path``: ``importlib.metadata`` and stevedore
then see its entry points beside the installed ones, exactly as they see
an operator's package. Nothing of the loader is replaced.
"""

import os
import sys

import fixtures
from stevedore import _cache as stevedore_cache
from stevedore import extension


class EntryPoints(fixtures.Fixture):
    """Install ``{group: {name: 'module:attribute'}}`` for the test.

    The module named must be importable (a test module is).
    """

    def __init__(self, entry_points, dist='opie-test-plugins'):
        super().__init__()
        self.entry_points = entry_points
        self.dist = dist

    def _setUp(self):
        root = self.useFixture(fixtures.TempDir()).path
        info = os.path.join(root, '%s-1.0.dist-info'
                            % self.dist.replace('-', '_'))
        os.mkdir(info)
        with open(os.path.join(info, 'METADATA'), 'w') as f:
            f.write('Metadata-Version: 2.1\nName: %s\nVersion: 1.0\n'
                    % self.dist)
        with open(os.path.join(info, 'entry_points.txt'), 'w') as f:
            for group, eps in self.entry_points.items():
                f.write('[%s]\n' % group)
                for name, value in eps.items():
                    f.write('%s = %s\n' % (name, value))
        # stevedore keeps the entry points of each group it loaded for
        # the life of the process: a fresh cache during the test, the
        # process's one after it
        self.useFixture(fixtures.MockPatchObject(
            extension.ExtensionManager, 'ENTRY_POINT_CACHE', {}))
        # and caches those of a sys.path on disk, keyed by the path: a
        # temporary path would leave one file per test
        if hasattr(stevedore_cache, '_c'):
            self.useFixture(fixtures.MockPatchObject(
                stevedore_cache._c, '_disable_caching', True))
        self.useFixture(fixtures.MonkeyPatch('sys.path',
                                             [root] + sys.path))
