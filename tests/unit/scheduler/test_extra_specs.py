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
"""The opie extra spec validators, exercised through nova's validators."""

import testtools

from nova.api.validation.extra_specs import base
from nova.api.validation.extra_specs import validators
from nova import exception

from opie_sched.common import flavors
from opie_sched.scheduler import extra_specs


class ExtraSpecValidatorsTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        # nova loads the entry points at import; loading again must find
        # ours too (it is registered in setup.cfg).
        validators.load_validators()

    def assertValid(self, name, value):
        validators.validate(name, value)

    def assertInvalid(self, name, value):
        self.assertRaises(exception.ValidationError, validators.validate,
                          name, value)

    def test_registered_through_entry_point(self):
        self.assertIn('opie:preemptible', validators.VALIDATORS)
        self.assertIn('opie:bid', validators.VALIDATORS)
        self.assertIn('opie', validators.NAMESPACES)

    def test_max_lifetime(self):
        self.assertValid('opie:max_lifetime', '86400')
        self.assertValid('opie:max_lifetime', '0')
        self.assertInvalid('opie:max_lifetime', '-1')
        self.assertInvalid('opie:max_lifetime', '1 day')

    def test_interruption_behavior(self):
        for value in ('delete', 'stop', 'shelve'):
            self.assertValid('opie:interruption_behavior', value)
        for value in ('hibernate', '', 'Shelve'):
            self.assertInvalid('opie:interruption_behavior', value)

    def test_restore(self):
        for value in ('auto', 'off'):
            self.assertValid('opie:restore', value)
        for value in ('on', 'true', '', 'Auto'):
            self.assertInvalid('opie:restore', value)

    def test_max_interruptions(self):
        for value in ('1', '3'):
            self.assertValid('opie:max_interruptions', value)
        for value in ('0', '-1', 'many', ''):
            self.assertInvalid('opie:max_interruptions', value)

    def test_restore_specs_in_flavor_problems(self):
        found = extra_specs.spec_problems({'opie:restore': 'yes',
                                           'opie:max_interruptions': '0'})
        self.assertEqual(2, len(found))
        self.assertTrue(found[0].startswith('opie:max_interruptions=0'))
        self.assertTrue(found[1].startswith('opie:restore=yes'))

    def test_register(self):
        specs = extra_specs.register()
        self.assertEqual({'opie:preemptible', 'opie:bid', 'opie:price',
                          'opie:max_lifetime', 'opie:interruption_behavior',
                          'opie:restore', 'opie:max_interruptions'},
                         {v.name for v in specs})
        for v in specs:
            self.assertIsInstance(v, base.ExtraSpecValidator)
            self.assertTrue(v.description)
            self.assertTrue(v.value.get('description'))
        self.assertEqual(flavors.MARKER_KEY, specs[0].name)
        self.assertEqual(flavors.BID_KEY, specs[1].name)

    def test_preemptible(self):
        for value in ('true', 'false', 'True', '1', '0', 'yes', 'no', 'on',
                      'off'):
            self.assertValid('opie:preemptible', value)
        for value in ('maybe', '', '2', 'truee'):
            self.assertInvalid('opie:preemptible', value)

    def test_bid(self):
        for value in ('0', '0.05', '12', '12.50', '007'):
            self.assertValid('opie:bid', value)
        for value in ('-1', '1.', '.5', 'abc', '1e3', '', '1,5', ' 1',
                      '0.05 '):
            self.assertInvalid('opie:bid', value)

    def test_unknown_key_in_namespace_rejected(self):
        self.assertInvalid('opie:foo', 'bar')
        self.assertInvalid('opie:premptible', 'true')

    def test_other_namespaces_untouched(self):
        self.assertValid('someone:else', 'anything')
        self.assertValid('no_namespace', 'anything')

    def test_preemptible_specs_pass_nova_validation(self):
        specs = flavors.preemptible_extra_specs(4, 8192, 80)
        specs[flavors.BID_KEY] = '0.10'
        for name, value in specs.items():
            self.assertValid(name, value)


class ProblemsTest(testtools.TestCase):
    """:func:`extra_specs.problems`: the validators above and whether the
    marker and the resource classes agree, for any flavor.
    """

    def test_valid_flavors_have_none(self):
        specs = flavors.preemptible_extra_specs(2, 4000, 40)
        specs.update({'opie:bid': '0.05', 'opie:max_lifetime': '3600',
                      'opie:interruption_behavior': 'shelve'})
        self.assertEqual([], extra_specs.problems(specs, 2, 4000, 40))
        self.assertEqual([], extra_specs.problems({'hw:cpu_policy':
                                                   'dedicated'}, 2, 4000, 40))
        self.assertEqual([], extra_specs.problems(None))

    def test_each_bad_value_named(self):
        found = extra_specs.problems({
            'opie:preemptible': 'maybe', 'opie:premptible': 'true',
            'opie:bid': 'abc', 'opie:max_lifetime': '-5',
            'opie:interruption_behavior': 'explode', 'other:key': 'x'})
        self.assertEqual([
            "opie:bid=abc: 'abc' is not of the format '[0-9]+(\\.[0-9]+)?'.",
            'opie:interruption_behavior=explode: \'explode\' is not one of: '
            'delete, stop, shelve.',
            "opie:max_lifetime=-5: '-5' is less than the min value of '0'.",
            "opie:preemptible=maybe: 'maybe' is not a valid boolean-like "
            "value.",
            "opie:premptible=true: extra spec 'opie:premptible' does not "
            "appear to be a valid extra spec."], found)

    def test_marker_and_classes_must_agree(self):
        # marked, but normal capacity requested
        found = extra_specs.problems({'opie:preemptible': 'true'}, 2, 4000,
                                     40)
        self.assertIn('resources:VCPU is missing: it must be 0 so that the '
                      'flavor uses no normal capacity', found)
        # preemptible capacity without the marker (or with it false)
        for marker in ({}, {'opie:preemptible': 'false'}):
            specs = dict(marker, **{'resources:CUSTOM_PREEMPTIBLE_VCPU':
                                    '2'})
            found = extra_specs.problems(specs, 2, 4000, 40)
            self.assertEqual(1, len(found), found)
            self.assertIn('requests preemptible capacity but '
                          'opie:preemptible is', found[0])
        # amounts that are not the flavor's
        specs = flavors.preemptible_extra_specs(2, 4000, 40)
        found = extra_specs.problems(specs, 4, 4000, 40)
        self.assertEqual(["resources:CUSTOM_PREEMPTIBLE_VCPU=2 does not "
                          "match the flavor's 4 vCPU"], found)
