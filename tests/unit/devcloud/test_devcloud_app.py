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
"""The application ``devcloud up --with-autoscaler`` declares.

The Tempest scenario of the autoscaler drives its demand 2 -> 8 -> 3 vCPU
and expects the flavor mix to move small -> large -> small; this pins that
the declaration the devcloud writes is accepted by opie-autoscaler's own
parser and that the planner's optimal sets are the ones the scenario
expects, so a change of prices or capacities fails here first.
"""

import fixtures
import testtools

from opie_sched.devcloud import config
from opie_sched.devcloud import layout as layout_mod
from opie_sched import flavormix
from opie_sched.services.autoscaler import app as app_mod


class DevcloudApplicationTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        state = self.useFixture(fixtures.TempDir()).path
        self.layout = layout_mod.Layout(state)
        [self.app] = app_mod.parse_applications(
            config.autoscaler_applications(self.layout))
        self.types = flavormix.vm_types(
            [flavormix.VMType(f.name, f.price, f.capacity)
             for f in self.app.flavors])

    def test_declaration_is_valid_for_the_autoscaler(self):
        self.assertEqual(config.AUTOSCALER_APP, self.app.name)
        self.assertEqual(
            {name: (cap, price) for name, _v, _r, _d, cap, price
             in config.AUTOSCALER_FLAVORS},
            {f.name: (f.capacity, f.price) for f in self.app.flavors})
        self.assertEqual('file', self.app.demand['source'])
        self.assertEqual(config.autoscaler_demand_file(self.layout),
                         self.app.demand['path'])

    def test_optimal_mix_moves_with_the_demand(self):
        self.assertEqual({'app.small': 2},
                         flavormix.optimal_set(self.types, 2))
        self.assertEqual({'app.large': 2},
                         flavormix.optimal_set(self.types, 8))
        self.assertEqual({'app.small': 3},
                         flavormix.optimal_set(self.types, 3))

    def test_repack_from_small_to_large_passes_the_gain_test(self):
        decision = flavormix.plan(self.types, 8,
                                  current={'app.small': 2})
        self.assertEqual({'app.large': 2}, decision.target)
