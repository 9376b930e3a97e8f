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

"""doc/tools/refresh_reference.py: refreshing one scenario's section of
the simulator page keeps every other section byte for byte."""

import importlib.util
import json
import os
import shutil

import fixtures
import testtools

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, 'doc', 'tools', 'refresh_reference.py')
PAGE = os.path.join(ROOT, 'doc', 'source', 'simulator', 'index.rst')


def _load():
    spec = importlib.util.spec_from_file_location('refresh_ref', SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class SpliceTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.mod = _load()
        self.source = self.useFixture(fixtures.TempDir()).path
        os.mkdir(os.path.join(self.source, 'simulator'))
        self.page = os.path.join(self.source, 'simulator', 'index.rst')
        shutil.copy(PAGE, self.page)
        self.mod.SOURCE = self.source
        with open(PAGE) as f:
            self.before = f.read()

    def test_split_covers_the_page(self):
        intro, sections = self.mod.split_sections(self.before)
        names = [n for n, _, _ in self.mod.SCENARIOS]
        self.assertEqual(names, list(sections))
        self.assertEqual(self.before, intro + ''.join(sections.values()))

    def test_only_the_named_section_changes(self):
        names = [n for n, _, _ in self.mod.SCENARIOS]
        target = names[1]
        results = self.useFixture(fixtures.TempDir()).path
        with open(os.path.join(results, target + '.json'), 'w') as f:
            json.dump({'report': 'NEW REPORT LINE', 'runtime_s': 1.5,
                       'reduced': False}, f)
        self.mod.refresh_scenarios('/nonexistent', '2026-11-25', 1.0,
                                   results=results, only=[target])
        with open(self.page) as f:
            after = f.read()
        old_intro, old = self.mod.split_sections(self.before)
        new_intro, new = self.mod.split_sections(after)
        self.assertEqual(old_intro, new_intro)
        self.assertEqual(list(old), list(new))
        for name in names:
            if name == target:
                self.assertIn('NEW REPORT LINE', new[name])
                self.assertNotEqual(old[name], new[name])
            elif name != names[-1]:
                self.assertEqual(old[name], new[name], name)
            else:  # the page's end is normalised to one newline
                self.assertEqual(old[name].rstrip(), new[name].rstrip())

    def test_unknown_scenario_is_refused_before_writing(self):
        self.assertRaises(SystemExit, self.mod.refresh_scenarios,
                          '/nonexistent', '2026-11-25', 1.0,
                          only=['no-such-scenario'])
        with open(self.page) as f:
            self.assertEqual(self.before, f.read())
