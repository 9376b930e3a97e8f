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

import tests

ROOT = tests.ROOT
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
        # the introduction changes only in its tally, rewritten from the
        # sections: the new report has no tally line
        self.assertEqual(self.without_tally(old_intro),
                         self.without_tally(new_intro))
        self.assertIn(self.mod.TALLY_START, new_intro)
        self.assertNotIn(target, new_intro.split(self.mod.TALLY_START)[1])
        self.assertEqual(list(old), list(new))
        for name in names:
            if name == target:
                self.assertIn('NEW REPORT LINE', new[name])
                self.assertNotEqual(old[name], new[name])
            elif name != names[-1]:
                self.assertEqual(old[name], new[name], name)
            else:  # the page's end is normalised to one newline
                self.assertEqual(old[name].rstrip(), new[name].rstrip())

    def without_tally(self, intro):
        if self.mod.TALLY_START not in intro:
            return intro
        head, rest = intro.split(self.mod.TALLY_START, 1)
        return head + rest.split(self.mod.TALLY_END, 1)[1].lstrip('\n')

    def test_tally_from_the_sections(self):
        sections = {
            'a': 'a\n=\n\nFull run, measured on 2026-11-28 with x\n'
                 '   a: 3 hold, 1 fail, 2 undecided (of 6 claims, each '
                 'counted once)\n',
            'b': 'b\n=\n\nReduced run (why), measured on 2026-11-27\n'
                 '   b part: 0 hold, 0 fail, 1 undecided (of 1 claims, each '
                 'counted once)\n   not a tally: 1 hold\n',
            'c': 'c\n=\n\nno claims here\n'}
        rows = self.mod.claims_tally(sections)
        self.assertEqual([('a', 'full', '2026-11-28', 3, 1, 2, 6),
                          ('b part', 'reduced', '2026-11-27', 0, 0, 1, 1)],
                         [(r['name'], r['run'], r['measured'], r['holds'],
                           r['fails'], r['undecided'], r['claims'])
                          for r in rows])
        table = self.mod.tally_table(rows).splitlines()
        self.assertEqual(['all', '3', '1', '3', '7'], table[-1].split())
        # rewritten in place, once
        intro = self.mod.with_tally('x\n\nEvery scenario runs on the one '
                                    'shared engine.\n', sections)
        again = self.mod.with_tally(intro, {'c': sections['c']})
        self.assertEqual(1, again.count(self.mod.TALLY_START))
        self.assertIn('b part', intro)
        self.assertNotIn('b part', again)
        self.assertTrue(again.rstrip().endswith('shared engine.'))

    def test_unknown_scenario_is_refused_before_writing(self):
        self.assertRaises(SystemExit, self.mod.refresh_scenarios,
                          '/nonexistent', '2026-11-25', 1.0,
                          only=['no-such-scenario'])
        with open(self.page) as f:
            self.assertEqual(self.before, f.read())
