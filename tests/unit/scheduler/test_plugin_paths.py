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
"""Where nova finds opie's filters and weighers, and the old paths.

The packages :mod:`opie_sched.scheduler.filters` and
:mod:`opie_sched.scheduler.weights` hold one rule per module and find
them; every class path an operator may have written in nova.conf before
the packages still loads, through nova's own loader, to the same class,
with a DeprecationWarning.
"""

import os
import sys
import textwrap
import warnings

import fixtures
from oslo_config import cfg
from oslo_config import fixture as config_fixture
from oslo_log import versionutils
from oslo_utils import importutils
import testtools

from nova.scheduler import filters as nova_filters
from nova.scheduler import weights as nova_weights

from opie_sched.scheduler import bids
from opie_sched.scheduler import filters
from opie_sched.scheduler.filters import failure_domain
from opie_sched.scheduler.filters import headroom
from opie_sched.scheduler.filters import preemptible_full_state
from opie_sched.scheduler.filters import utilisation_cap
from opie_sched.scheduler import loadables
from opie_sched.scheduler import moved
from opie_sched.scheduler import preemption_plans
from opie_sched.scheduler import reliability_plan
from opie_sched.scheduler import rpm_terms
from opie_sched.scheduler import weights
from opie_sched.scheduler.weights import base
from opie_sched.scheduler.weights import preemptible_count
from opie_sched.scheduler.weights import preemption_cost
from opie_sched.scheduler.weights import proportional_share
from opie_sched.scheduler.weights import reliability
from opie_sched.scheduler.weights import rpm
from opie_sched.scheduler.weights import rpm_distance
from opie_sched.scheduler.weights import rpm_efficiency
from opie_sched.scheduler.weights import rpm_imbalance
from opie_sched.scheduler.weights import rpm_risk

FILTERS = {
    preemptible_full_state.PreemptibleFullStateFilter,
    headroom.HeadroomFilter,
    failure_domain.FailureDomainFilter,
    utilisation_cap.UtilisationCapFilter,
}
RPM_WEIGHERS = [rpm.RPMWeigher, rpm_risk.RPMRiskWeigher,
                rpm_efficiency.RPMEfficiencyWeigher,
                rpm_imbalance.RPMImbalanceWeigher,
                rpm_distance.RPMDistanceWeigher]
#: what ``opie_sched.scheduler.weights.all_weighers`` returned before the
#: package, and still returns
DEFAULT_WEIGHERS = {preemption_cost.PreemptionCostWeigher,
                    preemptible_count.PreemptibleCountWeigher}
OPT_IN_WEIGHERS = {proportional_share.ProportionalShareWeigher,
                   reliability.ReliabilityWeigher} | set(RPM_WEIGHERS)

#: Every plugin class path of the releases before the packages -> the
#: class it names now.
OLD_CLASS_PATHS = {
    'opie_sched.scheduler.filters.PreemptibleFullStateFilter':
        preemptible_full_state.PreemptibleFullStateFilter,
    'opie_sched.scheduler.headroom_filter.HeadroomFilter':
        headroom.HeadroomFilter,
    'opie_sched.scheduler.rpm_plugins.UtilisationCapFilter':
        utilisation_cap.UtilisationCapFilter,
    'opie_sched.scheduler.reliability.FailureDomainFilter':
        failure_domain.FailureDomainFilter,
    'opie_sched.scheduler.weights.PreemptionCostWeigher':
        preemption_cost.PreemptionCostWeigher,
    'opie_sched.scheduler.weights.PreemptibleCountWeigher':
        preemptible_count.PreemptibleCountWeigher,
    'opie_sched.scheduler.market_weights.ProportionalShareWeigher':
        proportional_share.ProportionalShareWeigher,
    'opie_sched.scheduler.reliability.ReliabilityWeigher':
        reliability.ReliabilityWeigher,
    'opie_sched.scheduler.rpm_plugins.RPMWeigher': rpm.RPMWeigher,
    'opie_sched.scheduler.rpm_plugins.RPMRiskWeigher':
        rpm_risk.RPMRiskWeigher,
    'opie_sched.scheduler.rpm_plugins.RPMEfficiencyWeigher':
        rpm_efficiency.RPMEfficiencyWeigher,
    'opie_sched.scheduler.rpm_plugins.RPMImbalanceWeigher':
        rpm_imbalance.RPMImbalanceWeigher,
    'opie_sched.scheduler.rpm_plugins.RPMDistanceWeigher':
        rpm_distance.RPMDistanceWeigher,
}

#: The old list functions -> the classes they returned (and return).
OLD_LIST_PATHS = {
    'opie_sched.scheduler.rpm_plugins.all_filters':
        [utilisation_cap.UtilisationCapFilter],
    'opie_sched.scheduler.rpm_plugins.all_weighers': RPM_WEIGHERS,
    'opie_sched.scheduler.reliability.all_filters':
        [failure_domain.FailureDomainFilter],
    'opie_sched.scheduler.reliability.all_weighers':
        [reliability.ReliabilityWeigher],
}

#: Non-plugin names the old modules held -> where they live now.
OLD_HELPER_PATHS = {
    'opie_sched.scheduler.weights.cost_policy': preemption_plans.cost_policy,
    'opie_sched.scheduler.weights.plans_for': preemption_plans.plans_for,
    'opie_sched.scheduler.market_weights.instance_bid': bids.instance_bid,
    'opie_sched.scheduler.market_weights.request_bid': bids.request_bid,
    'opie_sched.scheduler.market_weights.request_out_of_bid':
        bids.request_out_of_bid,
    'opie_sched.scheduler.rpm_plugins.evaluate': rpm_terms.evaluate,
    'opie_sched.scheduler.rpm_plugins.location': rpm_terms.location,
    'opie_sched.scheduler.rpm_plugins.configured_lambdas':
        rpm.configured_lambdas,
    'opie_sched.scheduler.reliability.ReliabilityError':
        reliability_plan.ReliabilityError,
    'opie_sched.scheduler.reliability.request_plan':
        reliability_plan.request_plan,
}


def _load(path):
    """``(object, [DeprecationWarning messages])`` of a dotted path, read as
    nova reads a class path.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        obj = importutils.import_class(path)
    return obj, [str(w.message) for w in caught
                 if issubclass(w.category, DeprecationWarning)
                 and 'opie_sched' in str(w.message)]


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


class OldPathsTest(testtools.TestCase):
    """Every path of nova.conf before the packages loads the same class,
    with a DeprecationWarning naming the new path.
    """

    def test_old_class_paths(self):
        for path, new in OLD_CLASS_PATHS.items():
            obj, warned = _load(path)
            self.assertIs(new, obj, path)
            self.assertEqual(1, len(warned), path)
            self.assertIn(path, warned[0])
            self.assertIn('%s.%s' % (new.__module__, new.__name__),
                          warned[0])

    def test_old_list_functions(self):
        for path, classes in OLD_LIST_PATHS.items():
            func, warned = _load(path)
            self.assertEqual(1, len(warned), path)
            self.assertIn(path, warned[0])
            self.assertEqual(classes, func(), path)

    def test_old_helper_paths(self):
        for path, new in OLD_HELPER_PATHS.items():
            obj, warned = _load(path)
            self.assertIs(new, obj, path)
            self.assertEqual(1, len(warned), path)
            self.assertIn(path, warned[0])

    def test_nova_loads_the_old_paths(self):
        filter_paths = [p for p, c in OLD_CLASS_PATHS.items()
                        if c in FILTERS]
        list_paths = [p for p in OLD_LIST_PATHS if p.endswith('filters')]
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', DeprecationWarning)
            got = nova_filters.HostFilterHandler().get_matching_classes(
                filter_paths + list_paths)
        self.assertEqual(
            [OLD_CLASS_PATHS[p] for p in filter_paths]
            + [c for p in list_paths for c in OLD_LIST_PATHS[p]], got)
        weigher_paths = [p for p in OLD_CLASS_PATHS if p not in filter_paths]
        list_paths = [p for p in OLD_LIST_PATHS if p.endswith('weighers')]
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', DeprecationWarning)
            got = nova_weights.HostWeightHandler().get_matching_classes(
                weigher_paths + list_paths)
        self.assertEqual(
            [OLD_CLASS_PATHS[p] for p in weigher_paths]
            + [c for p in list_paths for c in OLD_LIST_PATHS[p]], got)

    def test_unknown_names_still_raise(self):
        for module in ('filters', 'weights', 'headroom_filter',
                       'market_weights', 'rpm_plugins', 'reliability'):
            mod = importutils.import_module('opie_sched.scheduler.' + module)
            self.assertRaises(AttributeError, getattr, mod, 'NoSuchWeigher')
            self.assertRaises(AttributeError, getattr, mod, '_private')

    def test_fatal_deprecations_stops_an_old_path(self):
        # nova.conf [DEFAULT] fatal_deprecations = True: an operator can
        # check that no old path is left
        versionutils.register_options()
        conf = self.useFixture(config_fixture.Config(cfg.CONF))
        conf.config(fatal_deprecations=True)
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', DeprecationWarning)
            self.assertRaises(
                versionutils.DeprecatedConfig, importutils.import_class,
                'opie_sched.scheduler.rpm_plugins.RPMWeigher')

    def test_moved_names_the_new_place(self):
        getattr_ = moved.module_getattr('old.place', {
            'Thing': moved.Moved(object, 'new.place.Thing')})
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            self.assertIs(object, getattr_('Thing'))
        self.assertEqual(
            ['old.place.Thing has moved: use new.place.Thing (the old '
             'path will be removed in a future release)'],
            [str(w.message) for w in caught])
        self.assertIs(DeprecationWarning, caught[0].category)
