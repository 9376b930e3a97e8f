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
"""Where nova finds opie's filters and weighers
(opie_sched.scheduler.loadables).

The packages :mod:`opie_sched.scheduler.filters` and
:mod:`opie_sched.scheduler.weights` hold one rule per module and find
them (the old class paths: test_moved.py).
"""

import os
import sys
import textwrap

import fixtures
import testtools

from nova.scheduler import filters as nova_filters
from nova.scheduler import weights as nova_weights

from opie_sched.scheduler import filters
from opie_sched.scheduler import loadables
from opie_sched.scheduler import weights
from opie_sched.scheduler.weights import base
from opie_sched.scheduler.weights import preemptible_count
from opie_sched.scheduler.weights import preemption_cost
from opie_sched.scheduler.weights import proportional_share
from opie_sched.scheduler.weights import reliability

from tests.unit.scheduler.path_helpers import _load
from tests.unit.scheduler.path_helpers import FILTERS
from tests.unit.scheduler.path_helpers import OLD_CLASS_PATHS
from tests.unit.scheduler.path_helpers import RPM_WEIGHERS


#: what ``opie_sched.scheduler.weights.all_weighers`` returned before the
#: package, and still returns
DEFAULT_WEIGHERS = {preemption_cost.PreemptionCostWeigher,
                    preemptible_count.PreemptibleCountWeigher}
OPT_IN_WEIGHERS = {proportional_share.ProportionalShareWeigher,
                   reliability.ReliabilityWeigher} | set(RPM_WEIGHERS)


class PackagesTest(testtools.TestCase):
    """all_filters()/all_weighers() find the rules of their package."""

    def test_all_filters_finds_every_filter(self):
        self.assertEqual(FILTERS, set(filters.all_filters()))
        self.assertEqual(len(FILTERS), len(filters.all_filters()))

    def test_every_weigher_finds_every_weigher(self):
        found = weights.every_weigher()
        self.assertEqual(DEFAULT_WEIGHERS | OPT_IN_WEIGHERS, set(found))
        self.assertEqual(len(found), len(set(found)))

    def test_all_weighers_keeps_its_meaning(self):
        # weight_classes = ...,opie_sched.scheduler.weights.all_weighers
        # enables what it enabled before the package: the opt-in weighers
        # change placement or count RPM's terms twice
        self.assertEqual(DEFAULT_WEIGHERS, set(weights.all_weighers()))
        for cls in OPT_IN_WEIGHERS:
            self.assertTrue(cls.OPT_IN, cls)

    def test_one_rule_per_module(self):
        for package, found in ((filters, filters.all_filters()),
                               (weights, weights.every_weigher())):
            per_module = {}
            for cls in found:
                per_module.setdefault(cls.__module__, []).append(cls)
            for module, classes in per_module.items():
                self.assertEqual(1, len(classes), module)

    def test_bases_are_abstract_and_not_found(self):
        found = set(weights.every_weigher())
        for cls in (base.BulkWeigher, base.RPMTermWeigher):
            self.assertNotIn(cls, found)
            self.assertRaises(TypeError, cls)

    def test_nova_loads_the_packages(self):
        self.assertEqual(
            filters.all_filters(),
            nova_filters.HostFilterHandler().get_matching_classes(
                ['opie_sched.scheduler.filters.all_filters']))
        self.assertEqual(
            weights.all_weighers(),
            nova_weights.HostWeightHandler().get_matching_classes(
                ['opie_sched.scheduler.weights.all_weighers']))

    def test_new_paths_do_not_warn(self):
        paths = ['opie_sched.scheduler.filters.all_filters',
                 'opie_sched.scheduler.weights.all_weighers']
        paths += ['%s.%s' % (cls.__module__, cls.__name__)
                  for cls in set(OLD_CLASS_PATHS.values())]
        for path in paths:
            obj, warned = _load(path)
            self.assertEqual([], warned, path)


class LoaderTest(testtools.TestCase):
    """classes_in_package counts the concrete public classes defined in
    the package's public modules, nothing else.
    """

    def test_what_counts(self):
        root = self.useFixture(fixtures.TempDir()).path
        pkg = os.path.join(root, 'opie_fake_plugins')
        os.mkdir(pkg)
        open(os.path.join(pkg, '__init__.py'), 'w').close()
        with open(os.path.join(pkg, 'rules.py'), 'w') as f:
            f.write(textwrap.dedent('''
                import abc
                from nova.scheduler import filters
                from opie_sched.scheduler.filters.headroom import (
                    HeadroomFilter)

                class GoodFilter(filters.BaseHostFilter):
                    def host_passes(self, host_state, spec_obj):
                        return True

                class _PrivateFilter(GoodFilter):
                    pass

                class AbstractFilter(filters.BaseHostFilter,
                                     metaclass=abc.ABCMeta):
                    @abc.abstractmethod
                    def rule(self):
                        pass

                class NotAFilter(object):
                    pass
            '''))
        with open(os.path.join(pkg, '_helpers.py'), 'w') as f:
            f.write(textwrap.dedent('''
                from nova.scheduler import filters

                class HiddenFilter(filters.BaseHostFilter):
                    pass
            '''))
        self.useFixture(fixtures.MonkeyPatch('sys.path',
                                             [root] + sys.path))
        self.addCleanup(lambda: [sys.modules.pop(m) for m in list(
            sys.modules) if m.startswith('opie_fake_plugins')])
        found = loadables.classes_in_package(
            'opie_fake_plugins', [pkg], nova_filters.BaseHostFilter)
        self.assertEqual(['GoodFilter'], [c.__name__ for c in found])

    def test_a_broken_module_stops_the_discovery(self):
        root = self.useFixture(fixtures.TempDir()).path
        pkg = os.path.join(root, 'opie_broken_plugins')
        os.mkdir(pkg)
        open(os.path.join(pkg, '__init__.py'), 'w').close()
        with open(os.path.join(pkg, 'bad.py'), 'w') as f:
            f.write('import opie_no_such_module\n')
        self.useFixture(fixtures.MonkeyPatch('sys.path',
                                             [root] + sys.path))
        self.addCleanup(lambda: [sys.modules.pop(m) for m in list(
            sys.modules) if m.startswith('opie_broken_plugins')])
        self.assertRaises(ImportError, loadables.classes_in_package,
                          'opie_broken_plugins', [pkg],
                          nova_filters.BaseHostFilter)
