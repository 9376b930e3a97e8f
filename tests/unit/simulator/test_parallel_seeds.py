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
"""tools/parallel_seeds.py: a call computed by a worker is the call the
scenario makes (same key), and it is reused, not recomputed.
"""

import importlib.util
import os

import fixtures
import testtools

from opie_sched.simulator import themis
import tests

ROOT = tests.ROOT


def _load():
    spec = importlib.util.spec_from_file_location(
        'parallel_seeds', os.path.join(ROOT, 'tools', 'parallel_seeds.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class MemoTest(testtools.TestCase):

    def test_keys_and_reuse(self):
        mod = _load()
        calls = []

        def compare(path, factor, seed=0, count=5, budget_rule=None):
            calls.append((path, factor, seed, count, budget_rule))
            return {'rows': [factor, seed]}

        self.useFixture(fixtures.MonkeyPatch(
            'opie_sched.simulator.themis.compare', themis.compare))
        mod.ORIGINALS = [(themis, 'compare', compare)]
        # positional or keyword, the path left out: one key
        self.assertEqual(
            mod.call_key(compare, 'compare', ('/a', 0.1, 3), {}),
            mod.call_key(compare, 'compare', ('/b', 0.1),
                         {'seed': 3, 'count': 5}))
        self.assertNotEqual(
            mod.call_key(compare, 'compare', ('/a', 0.1, 3), {}),
            mod.call_key(compare, 'compare', ('/a', 0.1, 3),
                         {'budget_rule': 'x'}))
        # a params dict: the seed count is not part of a run's key
        self.assertEqual(
            mod.call_key(lambda s, **p: 0, 'run', ('m',),
                         {'pms': 2, 'runs': 10}),
            mod.call_key(lambda s, **p: 0, 'run', ('m',),
                         {'pms': 2, 'runs': 1}))
        store, stats = {}, {'computed': 0, 'reused': 0}
        mod.install(store, stats)
        first = themis.compare('/a', 0.1, 3)
        first['rows'].append('changed by the caller')
        again = themis.compare('/x', 0.1, seed=3)
        self.assertEqual({'rows': [0.1, 3]}, again)
        self.assertEqual(1, len(calls))
        self.assertEqual({'computed': 1, 'reused': 1}, stats)

    def test_gossip_tasks_are_the_scenarios_calls(self):
        mod = _load()
        for m, name, orig in mod.ORIGINALS:
            self.useFixture(fixtures.MonkeyPatch(
                '%s.%s' % (m.__name__, name), orig))
        store = {}
        for task in mod.gossip_calls(True, [7]):
            store.update(mod.work(task)[1])
        stats = {'computed': 0, 'reused': 0}
        mod.install(store, stats)
        mod.gossip_mod.gossip_redistribution(reduced=True, seed=7, count=1)
        # every call the scenario makes was a worker's task
        self.assertEqual(0, stats['computed'])
        self.assertGreater(stats['reused'], 0)

    def test_rpm_vs_ffd_tasks_are_the_scenarios_calls(self):
        mod = _load()
        for m, name, orig in mod.ORIGINALS:
            self.useFixture(fixtures.MonkeyPatch(
                '%s.%s' % (m.__name__, name), orig))
        store = {}
        tasks = mod.tasks('rpm-vs-ffd', True, [7])
        # duplicates dropped: RPM's run is shared by the judged setting
        # and the one changing FFD-sum's victims
        self.assertEqual(len(tasks), len(set(repr(t) for t in tasks)))
        for task in tasks:
            store.update(mod.work(task)[1])
        self.assertEqual(len(tasks), len(store))
        stats = {'computed': 0, 'reused': 0}
        mod.install(store, stats)
        mod.rpm_vs_ffd.rpm_vs_ffd(reduced=True, seed=7, count=1)
        # every call the scenario makes was a worker's task
        self.assertEqual(0, stats['computed'])
        self.assertEqual(len(tasks), stats['reused'])

    def test_rpm_weights_tasks_are_the_scenarios_calls(self):
        mod = _load()
        for m, name, orig in mod.ORIGINALS:
            self.useFixture(fixtures.MonkeyPatch(
                '%s.%s' % (m.__name__, name), orig))
        seen = []

        def fake(**kw):
            seen.append(kw)
            return {'metric': float(len(seen))}
        self.useFixture(fixtures.MonkeyPatch(
            'opie_sched.simulator.rpm_weights.seed_run', fake))
        mod = _load()
        tasks = mod.tasks('rpm-weights', True, [7, 8])
        # one task per factor, weight and seed, no duplicate
        self.assertEqual(5 * 2 * 2, len(tasks))
        self.assertEqual(len(tasks), len(set(repr(t) for t in tasks)))
        store = {}
        for task in tasks:
            store.update(mod.work(task)[1])
        self.assertEqual(len(tasks), len(store))
        stats = {'computed': 0, 'reused': 0}
        mod.install(store, stats)
        planned = mod.rpm_weights.planned_runs(True, [7, 8])
        for _, _, _, kw in planned:
            mod.rpm_weights.seed_run(**kw)
        # every call the scenario plans was a worker's task
        self.assertEqual(0, stats['computed'])
        self.assertEqual(len(tasks), stats['reused'])
