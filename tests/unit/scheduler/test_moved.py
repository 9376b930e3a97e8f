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
"""Tests of the old class paths (opie_sched.scheduler.moved): every path
an operator may have written in nova.conf before the packages still
loads, through nova's own loader, to the same class, with a
DeprecationWarning."""

import warnings

from oslo_config import cfg
from oslo_config import fixture as config_fixture
from oslo_log import versionutils
from oslo_utils import importutils
import testtools

from nova.scheduler import filters as nova_filters
from nova.scheduler import weights as nova_weights

from opie_sched.scheduler import bids
from opie_sched.scheduler.filters import failure_domain
from opie_sched.scheduler.filters import utilisation_cap
from opie_sched.scheduler import moved
from opie_sched.scheduler import preemption_plans
from opie_sched.scheduler import reliability_plan
from opie_sched.scheduler import rpm_terms
from opie_sched.scheduler.weights import reliability
from opie_sched.scheduler.weights import rpm

from tests.unit.scheduler.path_helpers import _load
from tests.unit.scheduler.path_helpers import FILTERS
from tests.unit.scheduler.path_helpers import OLD_CLASS_PATHS
from tests.unit.scheduler.path_helpers import RPM_WEIGHERS


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
