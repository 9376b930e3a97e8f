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
"""Tests of the application declarations
(opie_sched.services.autoscaler.app)."""

import json
import os

import fixtures
import testtools

from opie_sched.services.autoscaler import app as app_mod

from tests.unit.services.autoscaler.helpers import app_doc
from tests.unit.services.autoscaler.helpers import FakeConn
from tests.unit.services.autoscaler.helpers import FLAVORS


# -- application declarations -----------------------------------------------

class AppTest(testtools.TestCase):

    def test_valid_declaration(self):
        a = app_mod.parse_application(app_doc(budget=5, budget_period=2,
                                              gain_threshold=0.02))
        self.assertEqual('web', a.name)
        self.assertEqual(['as.1', 'as.2', 'as.4'],
                         [f.name for f in a.flavors])
        self.assertEqual(5, a.budget)
        self.assertEqual({'gain_threshold': 0.02}, a.overrides)
        self.assertEqual('server group web', a.owner)
        self.assertEqual(10.0, a.demand_source().read())
        t = app_mod.parse_application(app_doc(server_group=None, tag='web',
                                              demand=42))
        self.assertEqual('tag web', t.owner)
        self.assertEqual({'source': 'static', 'value': 42}, t.demand)

    def test_invalid_declarations_name_the_key(self):
        flv = {'as.1': {'capacity': 10, 'price': 1}}
        cases = [
            ({'name': 'a b'}, 'name must match'),
            ({'tag': 'x'}, 'exactly one of server_group and tag'),
            ({'server_group': None}, 'exactly one of server_group and tag'),
            ({'server_group': None, 'tag': 'a,b'}, 'must not contain'),
            ({'image': ''}, 'image must be a non-empty string'),
            ({'networks': 'some'}, 'networks must be'),
            ({'networks': []}, 'must not be an empty list'),
            ({'flavors': {}}, 'flavors must be a non-empty object'),
            ({'flavors': {'as.1': 3}}, 'flavors.as.1 must be an object'),
            ({'flavors': {'as.1': {'price': 1}}}, 'missing capacity'),
            ({'flavors': {'as.1': {'capacity': 0}}}, 'capacity must be'),
            ({'flavors': {'as.1': {'capacity': 'x'}}}, 'capacity must be'),
            ({'flavors': {'as.1': {'capacity': 1, 'price': -1}}},
             'price must be a number > 0'),
            ({'flavors': {'as.1': {'capacity': 1, 'cost': 1}}},
             'unknown key(s) cost'),
            ({'demand': {'source': 'nope'}}, 'unknown demand source'),
            ({'demand': {'source': 'static'}}, 'needs a value'),
            ({'budget': -1}, 'budget must be a number >= 0'),
            ({'budget_period': 0}, 'budget_period must be a number > 0'),
            ({'stability_interval': 0}, 'stability_interval'),
            ({'health_url': 'http://{host}/'}, 'bad template'),
            ({'health_url': 'ftp://x'}, 'http(s) URL'),
            ({'colour': 'blue'}, 'unknown key(s) colour'),
        ]
        for change, why in cases:
            doc = app_doc(flavors=flv)
            doc.update(change)
            e = self.assertRaises(app_mod.AppError,
                                  app_mod.parse_application, doc, 'apps.yaml')
            self.assertIn(why, str(e), change)
            self.assertTrue(str(e).startswith('apps.yaml: '), str(e))
        doc = app_doc()
        del doc['demand']
        self.assertRaises(app_mod.AppError, app_mod.parse_application, doc)

    def test_file(self):
        d = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(d, 'apps.yaml')
        with open(path, 'w') as f:
            f.write('applications:\n'
                    '  - name: web\n'
                    '    tag: web\n'
                    '    image: img\n'
                    '    flavors:\n'
                    '      as.1: {capacity: 10, price: 1.0}\n'
                    '    demand: {source: static, value: 3}\n')
        [a] = app_mod.load_applications(path)
        self.assertEqual('web', a.tag)
        jpath = os.path.join(d, 'apps.json')
        with open(jpath, 'w') as f:
            json.dump([app_doc(), app_doc(name='api')], f)
        self.assertEqual(['web', 'api'],
                         [a.name for a in app_mod.load_applications(jpath)])
        with open(jpath, 'w') as f:
            json.dump([app_doc(), app_doc()], f)
        e = self.assertRaises(app_mod.AppError, app_mod.load_applications,
                              jpath)
        self.assertIn('duplicate application name(s): web', str(e))
        for text, why in (('', 'is empty'), ('a: [', 'not valid YAML'),
                          ('{"apps": []}', 'expected {"applications"'),
                          ('applications: 3', 'must be a list')):
            with open(path, 'w') as f:
                f.write(text)
            e = self.assertRaises(app_mod.AppError,
                                  app_mod.load_applications, path)
            self.assertIn(why, str(e))
        e = self.assertRaises(app_mod.AppError, app_mod.load_applications,
                              os.path.join(d, 'nope.yaml'))
        self.assertIn('cannot read', str(e))

    def test_resolve_prices_from_config_and_extra_specs(self):
        conn = FakeConn(extra_specs={'as.9': {'opie:price': '0.50'}})
        flv = dict(FLAVORS, **{'as.9': {'capacity': 100}})
        a = app_mod.parse_application(app_doc(flavors=flv))
        r = app_mod.resolve(a, conn)
        self.assertEqual({'as.1': 1.0, 'as.2': 1.6, 'as.4': 3.0,
                          'as.9': 0.5}, {t.name: t.price for t in r.types})
        self.assertEqual('id-as.9', r.flavor_ids['as.9'])
        self.assertEqual(('img-id', 'g1'), (r.image_id, r.group_id))

    def test_resolve_errors(self):
        cases = [
            ({'as.9': {}}, {'as.9': {'capacity': 1}},
             'flavor as.9 has no price'),
            ({'as.9': {'opie:price': 'cheap'}}, {'as.9': {'capacity': 1}},
             'must be a decimal number'),
            ({'as.9': {'opie:price': '0'}}, {'as.9': {'capacity': 1}},
             'must be a number > 0'),
            ({}, {'as.7': {'capacity': 1, 'price': 1}},
             'flavor as.7 does not exist'),
        ]
        for specs, flv, why in cases:
            a = app_mod.parse_application(app_doc(flavors=flv))
            e = self.assertRaises(app_mod.AppError, app_mod.resolve, a,
                                  FakeConn(extra_specs=specs))
            self.assertIn(why, str(e))
        a = app_mod.parse_application(app_doc(image='nope'))
        self.assertRaises(app_mod.AppError, app_mod.resolve, a, FakeConn())
        a = app_mod.parse_application(app_doc(server_group='other'))
        e = self.assertRaises(app_mod.AppError, app_mod.resolve, a,
                              FakeConn())
        self.assertIn('server group other does not exist', str(e))
