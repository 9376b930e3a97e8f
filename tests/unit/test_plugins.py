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
"""Tests of opie_sched.plugins, on the installed entry points and on
entry points a test installs (:class:`tests.entry_points.EntryPoints`).
"""

import logging

import fixtures
from oslo_config import cfg
import testtools

from opie_sched.common import utilisation
from opie_sched.market import budget
from opie_sched.market import charge_rules
from opie_sched import plugins
from opie_sched.preemption import behaviours
from opie_sched.preemption import costs
from opie_sched.services.autoscaler import demand
from opie_sched.services.autoscaler import policies
from opie_sched.services.repacker import strategies
from tests import entry_points

DEMAND = demand.NAMESPACE
#: a group of this test's own.
GROUP = 'opie_sched.test.widgets'


class Widget:
    """Turns a knob.

    More text.
    """


class Gadget:
    description = 'a gadget'


class LoadTest(testtools.TestCase):

    def test_names_are_the_installed_entry_points(self):
        self.assertEqual(['file', 'http', 'static'], plugins.names(DEMAND))
        self.assertEqual([], plugins.names('opie_sched.no.such.group'))

    def test_load_constructs_the_plugin(self):
        source = plugins.load(DEMAND, 'static', args=(3,))
        self.assertIsInstance(source, demand.StaticDemand)
        self.assertIs(demand.FileDemand,
                      plugins.load(DEMAND, 'file', invoke=False))

    def test_unknown_name_names_group_name_and_available(self):
        logs = self.useFixture(fixtures.FakeLogger(level=logging.DEBUG))
        for bad in ('carrier-pigeon', None, 3, ['file']):
            exc = self.assertRaises(plugins.PluginNotFound, plugins.load,
                                    DEMAND, bad, kind='demand source')
            self.assertEqual(
                'unknown demand source %r (entry-point group %s; '
                'available: file, http, static)' % (bad, DEMAND), str(exc))
            self.assertEqual((DEMAND, bad, ['file', 'http', 'static']),
                             (exc.group, exc.name, exc.available))
            self.assertIsInstance(exc, plugins.PluginError)
        # told before stevedore is asked: no warning of its own
        self.assertEqual('', logs.output)

    def test_import_failure_is_a_load_error(self):
        self.useFixture(fixtures.MockPatch(
            'opie_sched.plugins.driver.DriverManager',
            side_effect=ImportError('No module named numpyy')))
        exc = self.assertRaises(plugins.PluginLoadError, plugins.load,
                                DEMAND, 'file', kind='demand source')
        self.assertEqual(
            "demand source 'file' (entry-point group %s) failed to load: "
            "ImportError: No module named numpyy" % DEMAND, str(exc))
        self.assertIsInstance(exc.__cause__, ImportError)

    def test_a_broken_plugin_says_it_failed_to_load(self):
        # a real entry point whose module is not there
        self.useFixture(entry_points.EntryPoints({GROUP: {
            'widget': __name__ + ':Widget',
            'broken': 'opie_sched_no_such_module:Widget'}}))
        logs = self.useFixture(fixtures.FakeLogger(level=logging.DEBUG))
        self.assertEqual(['broken', 'widget'], plugins.names(GROUP))
        self.assertIs(Widget, plugins.load(GROUP, 'widget', invoke=False))
        exc = self.assertRaises(plugins.PluginLoadError, plugins.load,
                                GROUP, 'broken', kind='widget')
        self.assertEqual(
            "widget 'broken' (entry-point group %s) failed to load: "
            "ModuleNotFoundError: No module named "
            "'opie_sched_no_such_module'" % GROUP, str(exc))
        self.assertIsInstance(exc.cause, ImportError)
        self.assertEqual((GROUP, 'broken', ['broken', 'widget']),
                         (exc.group, exc.name, exc.available))
        self.assertNotIn('Could not load', logs.output)
        # every plugin of the group: the broken one is named
        exc = self.assertRaises(plugins.PluginLoadError, plugins.load_all,
                                GROUP, kind='widget', invoke=False)
        self.assertEqual('broken', exc.name)

    def test_load_all(self):
        self.useFixture(entry_points.EntryPoints({GROUP: {
            'widget': __name__ + ':Widget', 'gadget': __name__ + ':Gadget'}}))
        found = plugins.load_all(GROUP)
        self.assertEqual(['gadget', 'widget'], sorted(found))
        self.assertIsInstance(found['widget'], Widget)
        self.assertEqual({}, plugins.load_all('opie_sched.no.such.group'))

    def test_constructor_failure_is_a_load_error_unless_passed_through(self):
        exc = self.assertRaises(plugins.PluginLoadError, plugins.load,
                                DEMAND, 'file', kwargs={'pth': '/x'})
        self.assertIsInstance(exc.cause, TypeError)
        self.assertIn("plugin 'file' (entry-point group %s) failed to "
                      "load: TypeError:" % DEMAND, str(exc))
        # a family's own error for bad options passes unchanged
        self.assertRaises(demand.DemandError, plugins.load, DEMAND,
                          'static', args=('many',),
                          passthrough=(demand.DemandError,))


class FamiliesTest(testtools.TestCase):
    """Every family moved onto the loader says the same sentence."""

    def test_same_message_in_every_family(self):
        conf = self.useFixture(fixtures.MockPatch(
            'opie_sched.services.repacker.strategies.opts_mod')).mock
        cases = [
            (strategies.StrategyError,
             lambda: strategies.load(conf, name='rmp'),
             'repacker strategy', 'rmp', strategies.NAMESPACE),
            (policies.PolicyError,
             lambda: policies.load_policy({'policy': 'rmp'}),
             'SLO policy', 'rmp', policies.NAMESPACE),
            (demand.DemandError,
             lambda: demand.load({'source': 'rmp'}),
             'demand source', 'rmp', demand.NAMESPACE),
            (utilisation.UtilisationError,
             lambda: utilisation.load_source('rmp'),
             'utilisation source', 'rmp', utilisation.NAMESPACE),
            (costs.CostModuleError,
             lambda: costs.load_policy('rmp'),
             'cost module', 'rmp', costs.NAMESPACE),
            (behaviours.BehaviourError,
             lambda: behaviours.get('rmp'),
             'interruption behaviour', 'rmp', behaviours.NAMESPACE),
            (charge_rules.ChargeRuleError,
             lambda: charge_rules.load('rmp'),
             'charge rule', 'rmp', charge_rules.NAMESPACE),
            (budget.BudgetError,
             lambda: budget.load_policy('rmp'),
             'out-of-credit policy', 'rmp', budget.POLICY_NAMESPACE),
        ]
        for error, call, kind, name, group in cases:
            exc = self.assertRaises(error, call)
            if error is not behaviours.BehaviourError:
                # the registry is loaded whole; a name is looked up in it
                self.assertIsInstance(exc.__cause__, plugins.PluginNotFound)
            self.assertIn("unknown %s %r (entry-point group %s; available: "
                          "%s)" % (kind, name, group,
                                   ', '.join(plugins.names(group))),
                          str(exc))

    def test_repacker_has_no_built_in_fallback(self):
        self.assertFalse(hasattr(strategies, 'BUILTIN'))
        self.assertEqual(['gossip', 'p2p', 'rpm', 'tabu'],
                         strategies.names())


class OptionTypeTest(testtools.TestCase):
    """An option naming a plugin accepts the installed entry points, one
    added by another package included, and refuses any other name with the
    loader's sentence.
    """

    def conf(self, value):
        conf = cfg.ConfigOpts()
        conf.register_opt(cfg.Opt('widget', type=plugins.OptionType(
            GROUP, 'widget'), default='widget'), group='opie_test')
        conf([], default_config_files=[])
        conf.set_override('widget', value, group='opie_test')
        return conf

    def test_an_added_entry_point_is_accepted(self):
        self.assertRaises(ValueError, self.conf, 'gadget')
        self.useFixture(entry_points.EntryPoints({GROUP: {
            'widget': __name__ + ':Widget', 'gadget': __name__ + ':Gadget'}}))
        self.assertEqual('gadget', self.conf('gadget').opie_test.widget)
        opt_type = plugins.OptionType(GROUP, 'widget')
        self.assertEqual({'gadget': 'a gadget', 'widget': 'Turns a knob.'},
                         opt_type.choices)

    def test_a_default_not_installed_names_the_group_and_the_fix(self):
        # stale package metadata (setup.cfg declares an entry point the
        # installed metadata lacks): the error raised at import says where
        # the names come from and how to fix it, not just choices=[]
        exc = self.assertRaises(
            cfg.DefaultValueError, cfg.Opt, 'widget', default='widget',
            type=plugins.OptionType(GROUP + '.none', 'widget'))
        self.assertIn('widget (entry-point group %s.none; installed: none'
                      % GROUP, str(exc))
        self.assertIn('reinstall the package', str(exc))

    def test_repacker_and_utilisation_options_are_plugin_options(self):
        from opie_sched.conf import repacker as repacker_opts
        from opie_sched.conf import rpm as rpm_opts
        by_name = {o.name: o for o in repacker_opts.repacker_opts
                   + rpm_opts.rpm_opts}
        self.assertEqual(
            plugins.OptionType(strategies.NAMESPACE, 'repacker strategy'),
            by_name['strategy'].type)
        self.assertEqual(
            plugins.OptionType(utilisation.NAMESPACE, 'utilisation source'),
            by_name['utilisation_source'].type)
        self.assertEqual({'allocations', 'metrics'},
                         set(by_name['utilisation_source'].type.choices))

    def test_an_unknown_name_is_the_loader_sentence(self):
        self.useFixture(entry_points.EntryPoints({GROUP: {
            'widget': __name__ + ':Widget'}}))
        exc = self.assertRaises(ValueError, self.conf, 'gizmo')
        self.assertIn("unknown widget 'gizmo' (entry-point group %s; "
                      "available: widget)" % GROUP, str(exc))
