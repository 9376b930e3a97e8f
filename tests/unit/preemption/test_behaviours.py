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
"""The registry of interruption behaviours (issue 31 item 3): the three
shipped behaviours' rules, the contract checks at load, the notification
enums pinned per payload version, and a fourth behaviour added through an
entry point in this test, accepted by the extra spec, both options and
both services.
"""

import dataclasses
import datetime
import decimal
import types

import fixtures
from oslo_config import cfg
from oslo_utils.fixture import uuidsentinel as uuids
import testtools

from opie_sched.notifications import market as market_notes
from opie_sched.notifications import preemption as preempt_notes
from opie_sched import plugins
from opie_sched.preemption import behaviours as bh
from opie_sched.preemption import victim_state as vs
from tests import entry_points

NOW = datetime.datetime(2026, 11, 28, 12, 0, 0,
                        tzinfo=datetime.timezone.utc)

#: The action enum of each payload, pinned with the payload's version: a
#: behaviour added to (or removed from) the registry fails
#: test_enums_follow_the_registry until the payload's version is bumped
#: and its names written here.
PINNED_ACTIONS = {
    (preempt_notes.PreemptionPayload, '1.0'): ('delete', 'stop', 'shelve'),
    (market_notes.MarketNoticePayload, '1.0'): ('delete', 'stop', 'shelve'),
    (market_notes.MarketPreemptedPayload, '1.0'): ('delete', 'stop',
                                                   'shelve'),
}


class ParkBehaviour(bh.InterruptionBehaviour):
    """A fourth behaviour, from this test's entry point: stop the victim,
    then shelve it once stopped and offload it; released once offloaded.
    Nova refuses to stop a rescued server: fallback delete.
    """

    description = 'stop, then shelve and offload'

    def verb(self, vm_state, task_state, first):
        if vm_state in (bh.DELETED, bh.SHELVED_OFFLOADED):
            return None
        if vm_state == bh.ACTIVE:
            return bh.STOP_VERB
        if vm_state == bh.STOPPED:
            return bh.SHELVE_VERB
        if vm_state == bh.SHELVED:
            return bh.OFFLOAD_VERB
        return bh.REFUSED

    def released(self, vm_state, task_state, deleted):
        return bool(deleted) or vm_state == bh.SHELVED_OFFLOADED

    def step_done(self, vm_state, task_state, deleted):
        return task_state is None and vm_state != bh.ACTIVE


class Keeper(bh.InterruptionBehaviour):
    """Does not free the host (refused at load)."""

    frees_host = False

    def verb(self, vm_state, task_state, first):
        return bh.STOP_VERB

    def released(self, vm_state, task_state, deleted):
        return deleted


class AddedBehaviour(fixtures.Fixture):
    """The installed behaviours plus more, from entry points this test
    installs (:class:`tests.entry_points.EntryPoints`); the registry is
    loaded again from them, and from the installed ones at cleanup.
    """

    def __init__(self, name, value, *more):
        super().__init__()
        self.eps = dict([(name, value)] + list(more))

    def _setUp(self):
        self.addCleanup(bh.reset)
        self.useFixture(entry_points.EntryPoints({bh.NAMESPACE: self.eps}))
        bh.reset()


class ShippedBehavioursTest(testtools.TestCase):

    def test_installed_entry_points(self):
        self.assertEqual(('delete', 'stop', 'shelve'), bh.names())
        for name in bh.names():
            self.assertTrue(bh.get(name).frees_host)
        self.assertEqual(tuple(vs.BEHAVIORS), bh.names())

    def test_delete(self):
        for state in (bh.ACTIVE, bh.RESCUED, bh.ERROR, bh.SOFT_DELETED):
            self.assertEqual(('delete', 'delete'), bh.resolve('delete',
                                                              state))
        self.assertIsNone(bh.fallback('delete'))

    def test_stop_is_stop_then_delete(self):
        self.assertEqual(('stop', 'stop'), bh.resolve('stop', bh.ACTIVE))
        # the next step, whatever the owner did meanwhile
        for state in (bh.STOPPED, bh.ACTIVE):
            self.assertEqual(('stop', 'delete'),
                             bh.resolve('stop', state, first=False))
        self.assertEqual(('stop', 'delete'), bh.resolve('stop', bh.RESCUED))
        stop = bh.get('stop')
        self.assertFalse(stop.released(bh.STOPPED, None, False))
        self.assertTrue(stop.step_done(bh.STOPPED, None, False))
        self.assertTrue(stop.released(bh.STOPPED, None, True))
        self.assertEqual(12, stop.grace(types.SimpleNamespace(
            stop_grace_period=12)))

    def test_shelve_and_its_fallback(self):
        for state in (bh.ACTIVE, bh.STOPPED, bh.PAUSED, bh.SUSPENDED):
            self.assertEqual(('shelve', 'shelve'),
                             bh.resolve('shelve', state))
        self.assertEqual(('shelve', 'shelve_offload'),
                         bh.resolve('shelve', bh.SHELVED))
        self.assertEqual(('shelve', None),
                         bh.resolve('shelve', bh.SHELVED_OFFLOADED))
        # the states Nova refuses to shelve from (issue 30 hole 3)
        for state in (bh.RESCUED, bh.ERROR, bh.RESIZED, bh.SOFT_DELETED):
            self.assertEqual(('delete', 'delete'),
                             bh.resolve('shelve', state), state)
        self.assertEqual('delete', bh.fallback('shelve'))
        self.assertEqual(bh.RESCUED, bh.STATUS_VM_STATES['RESCUE'])

    def test_unknown_name(self):
        e = self.assertRaises(bh.BehaviourError, bh.get, 'explode')
        self.assertEqual(
            "unknown interruption behaviour 'explode' (entry-point group "
            "opie_sched.preemption.behaviours; available: delete, shelve, "
            "stop)", str(e))
        self.assertNotIn('explode', vs.BEHAVIORS)
        self.assertEqual('delete', vs.interruption_behavior(
            {vs.BEHAVIOR_SPEC: 'explode'}, 'delete'))


class ContractTest(testtools.TestCase):

    def load(self, name, value):
        self.useFixture(AddedBehaviour(name, value))
        bh.registry()

    def test_a_behaviour_failing_to_import_is_refused(self):
        e = self.assertRaises(bh.BehaviourError, self.load,
                              'broken', 'opie_sched_no_such_module:B')
        self.assertEqual(
            "interruption behaviour 'broken' (entry-point group "
            "opie_sched.preemption.behaviours) failed to load: "
            "ModuleNotFoundError: No module named "
            "'opie_sched_no_such_module'", str(e))
        self.assertIsInstance(e.__cause__, plugins.PluginLoadError)

    def test_a_behaviour_that_keeps_the_host_is_refused(self):
        e = self.assertRaises(bh.BehaviourError, self.load,
                              'keep', __name__ + ':Keeper')
        self.assertIn('does not free the host', str(e))

    def test_a_fallback_to_nothing_is_refused(self):
        class Lost(ParkBehaviour):
            fallback = 'nowhere'
        self.useFixture(fixtures.MockPatch(__name__ + '.ParkBehaviour',
                                           Lost))
        e = self.assertRaises(bh.BehaviourError, self.load,
                              'park', __name__ + ':ParkBehaviour')
        self.assertIn('falls back to nowhere', str(e))


class NotificationEnumsTest(testtools.TestCase):
    """The payloads' action enums are the registry's names, and a change
    of those names comes with a new payload version.
    """

    def test_enums_follow_the_registry(self):
        for (cls, version), pinned in PINNED_ACTIONS.items():
            values = tuple(cls.fields['action']._type._valid_values)
            self.assertEqual(bh.names(), values, cls.__name__)
            self.assertEqual(
                (version, pinned), (cls.VERSION, bh.names()),
                '%s: the registry names %s but version %s pins %s: bump '
                'its VERSION (and its fingerprint in test_notifications) '
                'and pin the new names here'
                % (cls.__name__, bh.names(), version, pinned))

    def test_a_new_behaviour_needs_a_version_bump(self):
        # the guard fails as soon as the registry has a fourth behaviour
        self.useFixture(AddedBehaviour('park',
                                       __name__ + ':ParkBehaviour'))
        self.assertRaises(AssertionError, self.test_enums_follow_the_registry)


class FourthBehaviourTest(testtools.TestCase):
    """``park`` from an entry point of this test is accepted by the extra
    spec, both options and both services.
    """

    def setUp(self):
        super().setUp()
        self.useFixture(AddedBehaviour('park', __name__ + ':ParkBehaviour'))

    def test_extra_spec(self):
        from nova import exception
        from opie_sched.scheduler import extra_specs
        [validator] = [v for v in extra_specs.register()
                       if v.name == vs.BEHAVIOR_SPEC]
        validator.validate(vs.BEHAVIOR_SPEC, 'park')
        self.assertRaises(exception.ValidationError, validator.validate,
                          vs.BEHAVIOR_SPEC, 'explode')
        self.assertEqual('park', vs.interruption_behavior(
            {vs.BEHAVIOR_SPEC: 'park'}, 'delete'))

    def test_options(self):
        from opie_sched import conf as opie_conf
        from opie_sched.services.market import opts as market_opts
        from opie_sched.services.market import settings
        conf = cfg.ConfigOpts()
        conf.register_opts(opie_conf.preemption_opts, 'opie_preemption')
        conf.register_opts(market_opts.OPTS, 'opie_market')
        conf([])
        conf.set_override('action', 'park', 'opie_preemption')
        conf.set_override('preemption_action', 'park', 'opie_market')
        self.assertEqual('park', conf.opie_preemption.action)
        self.assertEqual('park', conf.opie_market.preemption_action)
        self.assertEqual('park', settings.Settings.from_conf(
            conf.opie_market).preemption_action)
        # an unregistered name is still refused
        self.assertRaises(ValueError, conf.set_override, 'action',
                          'explode', 'opie_preemption')
        # and listed with its description (the sample configuration)
        for group, name in (('opie_preemption', 'action'),
                            ('opie_market', 'preemption_action')):
            choices = conf._get_opt_info(name, group)['opt'].type.choices
            self.assertEqual('stop, then shelve and offload',
                             choices['park'])

    def test_scheduler_actions(self):
        from opie_sched.scheduler import actions
        inst = types.SimpleNamespace(uuid=uuids.a, vm_state=bh.ACTIVE,
                                     task_state=None)
        self.assertEqual(('park', 'stop'), actions._verb(inst, 'park', True))
        inst.vm_state = bh.STOPPED
        self.assertEqual(('park', 'shelve'),
                         actions._verb(inst, 'park', False))
        inst.vm_state = bh.RESCUED
        self.assertEqual(('delete', 'delete'),
                         actions._verb(inst, 'park', True))

        # the release follows the record's behaviour
        def row(state):
            from tests.unit.scheduler import victim_helpers as tvr
            return tvr.instance(
                uuids.a, tvr.flavor(2, 4000, 40), vm_state=state,
                sysmeta=dataclasses.replace(
                    vs.reserve(uuids.p, NOW, 'req-1', 'why'),
                    behavior='park').as_metadata())
        obj = actions._behaviour_obj(row(bh.STOPPED))
        self.assertEqual('park', obj.name)
        self.assertTrue(obj.multi_step)
        self.assertFalse(obj.released(bh.STOPPED, None, False))
        self.assertTrue(obj.released(bh.SHELVED_OFFLOADED, None, False))

    def test_market_enforcement(self):
        from tests.unit.services.market import helpers as tms
        cloud = tms.FakeCloud(tms.SMALL)
        for i, bid in enumerate((1, 2, 3, 2, 3)):
            cloud.add('s%d' % i, 'pA', bid, created=i)
        specs = dict(cloud.by_uuid['s0'].extra_specs,
                     **{vs.BEHAVIOR_SPEC: 'park'})
        cloud._replace('s0', extra_specs=specs)
        store = tms.new_store(tms.sqlite_url(self))
        self.addCleanup(store.dispose)
        from opie_sched.services.market import engine
        from opie_sched.services.market import settings
        eng = engine.MarketEngine(store, cloud, settings.Settings(
            period_seconds=tms.HOUR, notice_period=600,
            initial_credit=decimal.Decimal(100),
            bid_cap=decimal.Decimal(50)))
        self.assertEqual(['s0'], eng.tick(tms.T0).notices)
        self.assertIn('(park)', cloud.by_uuid['s0'].metadata[
            engine.NOTICE_KEY])
        self.assertEqual(['s0'], eng.tick(tms.T0 + 600).preempted)
        self.assertEqual([('s0', 'stop')], cloud.terminated)
