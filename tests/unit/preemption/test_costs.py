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
import datetime

from oslo_config import cfg
import testtools

from opie_sched.conf import validation
from opie_sched import plugins
from opie_sched.preemption import costs
from opie_sched.preemption import model
from tests import entry_points

NOW = datetime.datetime(2026, 11, 22, 12, 0, tzinfo=datetime.timezone.utc)
HOST = model.HostView('h', model.Resources(8, 16000, 200), model.ZERO)


def inst(runtime=None, res=(2, 4000, 40)):
    launched = (None if runtime is None
                else NOW - datetime.timedelta(seconds=runtime))
    return model.InstanceInfo('u', model.Resources(*res), True, launched)


class CostModuleTest(testtools.TestCase):

    def test_billing_period_is_runtime_mod_period(self):
        module = costs.BillingPeriodCost(period=3600)
        self.assertEqual(3000, module.cost(inst(3000), HOST, NOW))
        self.assertEqual(400, module.cost(inst(4000), HOST, NOW))
        self.assertEqual(0, module.cost(inst(7200), HOST, NOW))
        self.assertEqual(0, module.cost(inst(None), HOST, NOW))

    def test_billing_period_configurable_and_validated(self):
        self.assertEqual(100, costs.BillingPeriodCost(period=600).cost(
            inst(700), HOST, NOW))
        self.assertRaises(costs.CostModuleError, costs.BillingPeriodCost,
                          period=0)

    def test_runtime_is_seconds_run(self):
        self.assertEqual(4000, costs.RuntimeCost().cost(inst(4000), HOST,
                                                        NOW))
        self.assertEqual(0, costs.RuntimeCost().cost(inst(None), HOST, NOW))

    def test_count_is_one_per_victim(self):
        self.assertEqual(1, costs.CountCost().cost(inst(5), HOST, NOW))

    def test_waste_is_the_fraction_of_the_host_freed(self):
        # 2/8 + 4000/16000 + 40/200
        self.assertAlmostEqual(0.7, costs.WasteCost().cost(inst(5), HOST,
                                                           NOW))

    def test_launched_in_the_future_costs_nothing(self):
        self.assertEqual(0, costs.RuntimeCost().cost(inst(-50), HOST, NOW))


class PolicyTest(testtools.TestCase):

    def test_parse(self):
        self.assertEqual([('billing_period', 1.0), ('count', 60.0)],
                         costs.parse_cost_modules('billing_period, count:60'))
        self.assertEqual([('runtime', 2.0)],
                         costs.parse_cost_modules(['runtime:2']))

    def test_parse_errors(self):
        for bad in ('', ',', ':3', 'count:x', 'count:-1', 'count:nan',
                    'count:inf'):
            self.assertRaises(costs.CostModuleError,
                              costs.parse_cost_modules, bad)

    def test_load_through_stevedore_and_combine(self):
        policy = costs.load_policy('billing_period:1,count:100')
        self.assertEqual(400 + 100, policy.instance_cost(inst(4000), HOST,
                                                         NOW))

    def test_unknown_module(self):
        e = self.assertRaises(costs.CostModuleError, costs.load_policy,
                              'no_such_module')
        self.assertEqual(
            "unknown cost module 'no_such_module' (entry-point group "
            "opie_sched.preemption.costs; available: billing_period, count, "
            "runtime, waste)", str(e))
        self.assertIsInstance(e.__cause__, plugins.PluginNotFound)

    def test_a_module_failing_to_load(self):
        self.useFixture(entry_points.EntryPoints({costs.NAMESPACE: {
            'broken': 'opie_sched_no_such_module:Cost'}}))
        e = self.assertRaises(costs.CostModuleError, costs.load_policy,
                              'count,broken')
        self.assertIsInstance(e.__cause__, plugins.PluginLoadError)
        self.assertEqual("cost module 'broken' (entry-point group "
                         "opie_sched.preemption.costs) failed to load: "
                         "ModuleNotFoundError: No module named "
                         "'opie_sched_no_such_module'", str(e))
        # the module's own refusal of its options passes unchanged
        e = self.assertRaises(costs.CostModuleError, costs.load_cost_module,
                              'billing_period', period=0)
        self.assertIsNone(e.__cause__)

    def test_bad_module_value_is_refused(self):
        class Negative(costs.BaseCostModule):
            def cost(self, instance, host, now):
                return -1.0
        policy = costs.CostPolicy([(Negative(), 1.0)])
        e = self.assertRaises(costs.CostModuleError, policy.instance_cost,
                              inst(1), HOST, NOW)
        self.assertIn('Negative', str(e))

    def test_bad_multiplier(self):
        self.assertRaises(costs.CostModuleError, costs.CostPolicy,
                          [(costs.CountCost(), -2)])
        self.assertRaises(costs.CostModuleError, costs.CostPolicy, [])


class SquareRuntimeCost(costs.BaseCostModule):
    """A cost module of another package: runtime squared (hours²)."""

    unit = 'h2'

    def cost(self, instance, host, now):
        return (instance.runtime_seconds(now) / 3600) ** 2


class AddedModuleTest(testtools.TestCase):
    """A cost module installed by another package (an entry point of this
    test) is accepted by the option check and used in the policy.
    """

    def problems(self, value):
        from opie_sched import conf as opie_conf
        conf = cfg.ConfigOpts()
        opie_conf.register_opts(conf)
        conf([], default_config_files=[])
        conf.set_override('cost_modules', value, group='opie_preemption')
        return validation.problems(conf)

    def test_added_module(self):
        self.assertEqual(1, len(self.problems(['square_runtime:2'])))
        self.useFixture(entry_points.EntryPoints({costs.NAMESPACE: {
            'square_runtime': __name__ + ':SquareRuntimeCost'}}))
        self.assertEqual([], self.problems(['square_runtime:2']))
        self.assertIn('square_runtime', costs.names())
        policy = costs.load_policy('square_runtime:2,count:1')
        # 2 h run: 2 * 4 + 1
        self.assertEqual(9.0, policy.instance_cost(
            inst(7200), HOST, NOW))
