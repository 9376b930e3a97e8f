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
"""Tests of the autoscaler's demand sources
(opie_sched.services.autoscaler.demand)."""

import json
import os

import fixtures
import requests
import testtools

from opie_sched.services.autoscaler import demand

from tests.unit.services.autoscaler.helpers import Obj


# -- demand sources ---------------------------------------------------------

class DemandTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path

    def write(self, text, name='demand'):
        path = os.path.join(self.dir, name)
        with open(path, 'w') as f:
            f.write(text)
        return path

    def test_static(self):
        self.assertEqual(12.5, demand.load({'source': 'static',
                                            'value': 12.5}).read())
        self.assertEqual(7.0, demand.load(7).read())
        self.assertEqual(3.0, demand.StaticDemand('3').read())

    def test_static_bad_values(self):
        for bad in (None, -1, float('nan'), float('inf'), True, 'x', [1]):
            self.assertRaises(demand.DemandError, demand.StaticDemand, bad)

    def test_load_plugins_through_stevedore(self):
        self.assertIsInstance(demand.load({'source': 'file', 'path': 'x'}),
                              demand.FileDemand)
        self.assertIsInstance(
            demand.load({'source': 'http', 'url': 'http://h/d'}),
            demand.HTTPDemand)

    def test_load_errors_say_why(self):
        e = self.assertRaises(demand.DemandError, demand.load,
                              {'source': 'carrier-pigeon'}, 'app web')
        self.assertIn("unknown demand source 'carrier-pigeon'", str(e))
        self.assertIn('file, http, static', str(e))
        e = self.assertRaises(demand.DemandError, demand.load,
                              {'source': 'file', 'pth': '/x'})
        self.assertIn('bad options for the file source', str(e))
        for bad in ('5', None, {'value': 3}, [1]):
            self.assertRaises(demand.DemandError, demand.load, bad)
        self.assertRaises(demand.DemandError, demand.load,
                          {'source': 'http', 'url': 'ftp://x'})

    def test_file_formats(self):
        cases = [('1200\n', None, 1200.0), ('{"demand": 7.5}', None, 7.5),
                 ('3', None, 3.0),
                 ('{"app": {"rps": [1, 42]}}', 'app.rps.1', 42.0),
                 ('{"v": "17"}', 'v', 17.0)]
        for text, key, want in cases:
            src = demand.FileDemand(self.write(text), key=key)
            self.assertEqual(want, src.read(), text)

    def test_file_bad_input_says_why(self):
        cases = [('', 'empty'), ('lots', 'must be a number'),
                 ('-5', 'finite number >= 0'), ('nan', 'finite'),
                 ('{"x": 1}', "no 'x'"), ('{"demand": null}', 'number'),
                 ('{"demand": true}', 'number'), ('[1, 2]', 'number')]
        for text, why in cases:
            src = demand.FileDemand(self.write(text))
            e = self.assertRaises(demand.DemandError, src.read)
            self.assertIn(why if why != "no 'x'" else 'number', str(e), text)
        e = self.assertRaises(demand.DemandError, demand.FileDemand(
            self.write('{"a": 1}'), key='b').read)
        self.assertIn("no 'b'", str(e))
        e = self.assertRaises(demand.DemandError, demand.FileDemand(
            self.write('twelve'), key='b').read)
        self.assertIn('not a JSON document', str(e))
        e = self.assertRaises(demand.DemandError, demand.FileDemand(
            os.path.join(self.dir, 'missing')).read)
        self.assertIn('cannot read', str(e))
        with open(os.path.join(self.dir, 'bin'), 'wb') as f:
            f.write(b'\xff\xfe\x00')
        self.assertRaises(demand.DemandError, demand.FileDemand(
            os.path.join(self.dir, 'bin')).read)

    def test_file_max_age(self):
        path = self.write('10')
        mtime = os.stat(path).st_mtime
        fresh = demand.FileDemand(path, max_age=60,
                                  clock=lambda: mtime + 30)
        self.assertEqual(10.0, fresh.read())
        stale = demand.FileDemand(path, max_age=60,
                                  clock=lambda: mtime + 90)
        e = self.assertRaises(demand.DemandError, stale.read)
        self.assertIn('stale', str(e))
        self.assertRaises(demand.DemandError, demand.FileDemand, path,
                          max_age=0)

    def test_http(self):
        class Session:
            def __init__(self, status, text=None, error=None):
                self.status, self.text, self.error = status, text, error
                self.calls = []

            def get(self, url, timeout, headers):
                self.calls.append((url, timeout, headers))
                if self.error:
                    raise self.error
                return Obj(status_code=self.status, text=self.text)

        prom = json.dumps({'status': 'success', 'data': {'result': [
            {'metric': {}, 'value': [1700000000.1, '250.5']}]}})
        s = Session(200, prom)
        src = demand.HTTPDemand('http://prom/api/v1/query?query=rps',
                                key='data.result.0.value.1', timeout=2,
                                headers={'X-A': 'b'}, session=s)
        self.assertEqual(250.5, src.read())
        self.assertEqual([('http://prom/api/v1/query?query=rps', 2.0,
                           {'X-A': 'b'})], s.calls)
        e = self.assertRaises(demand.DemandError, demand.HTTPDemand(
            'http://a/d', session=Session(503, '')).read)
        self.assertIn('answered 503', str(e))
        e = self.assertRaises(demand.DemandError, demand.HTTPDemand(
            'http://a/d', session=Session(
                0, error=requests.ConnectionError('refused'))).read)
        self.assertIn('GET http://a/d failed: refused', str(e))
        e = self.assertRaises(demand.DemandError, demand.HTTPDemand(
            'http://a/d', session=Session(200, '<html>')).read)
        self.assertIn('must be a number', str(e))
        # An empty Prometheus result.
        empty = json.dumps({'data': {'result': []}})
        self.assertRaises(demand.DemandError, demand.HTTPDemand(
            'http://a/d', key='data.result.0.value.1',
            session=Session(200, empty)).read)
