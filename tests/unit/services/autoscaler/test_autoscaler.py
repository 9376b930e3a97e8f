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
"""Unit tests of opie-autoscaler (opie_sched.services.autoscaler, issue 5).

Demand sources, application validation, the make-before-break executor on
a fake openstacksdk connection (rollback, floor protection, health check,
dry-run), the service's planning and its tooz locking: two services on one
file backend never act on one application at once.

Run with ``stestr run tests.unit.services.autoscaler.test_autoscaler``.
"""

import decimal
import json
import os
import threading

import fixtures
from openstack import exceptions as sdk_exc
from oslo_config import cfg
import requests
from requests_mock.contrib import fixture as rm_fixture
import testtools

from opie_sched.cmd import autoscaler as cmd
from opie_sched.common import flavors as flavors_mod
from opie_sched.conf import autoscaler as opts
from opie_sched.services.autoscaler import app as app_mod
from opie_sched.services.autoscaler import demand
from opie_sched.services.autoscaler import executor as ex
from opie_sched.services.autoscaler import service as svc
from opie_sched.services.autoscaler import spot

D = decimal.Decimal

# c_i (capacity unit), p_i (currency/hour)
FLAVORS = {'as.1': {'capacity': 10, 'price': 1.0},
           'as.2': {'capacity': 25, 'price': 1.6},
           'as.4': {'capacity': 60, 'price': 3.0}}


# vCPUs, RAM (MB), disk (GB) of the fake flavors (default 1, 1000, 10).
SIZES = {'as.2': (2, 2000, 20), 'as.4': (4, 4000, 40),
         'sp.2': (2, 4000, 20), 'sp.4': (4, 8000, 40)}
#: Preemptible flavors of the fake cloud (opie_sched.common.flavors' extra
#: specs).
SPOT_SPECS = {name: flavors_mod.preemptible_extra_specs(*SIZES[name])
              for name in ('sp.2', 'sp.4')}


def app_doc(**kw):
    doc = {'name': 'web', 'server_group': 'web', 'image': 'img',
           'networks': 'none', 'flavors': FLAVORS,
           'demand': {'source': 'static', 'value': 10}}
    doc.update(kw)
    return doc


# -- fake openstacksdk connection ------------------------------------------

class Obj:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class FakeCompute:
    """Just the compute calls of the executor and of app.resolve().

    New servers are BUILD for ``build_polls`` polls, then the status that
    ``outcome(name, flavor)`` returns (default ACTIVE). ``log`` records
    ('create', flavor) and ('delete', flavor) in order.
    """

    def __init__(self, build_polls=1, extra_specs=None):
        self.db = {}
        self.log = []
        self.build_polls = build_polls
        self.outcome = lambda name, flavor: 'ACTIVE'
        self.create_error = None
        self.extra_specs = extra_specs or {}
        self.group = Obj(id='g1', member_ids=[])
        self._n = 0
        self.waits = []
        # {server id: status it takes instead of going away on delete}
        self.stuck = {}

    def add(self, flavor, status='ACTIVE'):
        self._n += 1
        sid = 'old-%d' % self._n
        self.db[sid] = Obj(id=sid, name=sid, status=status,
                           flavor={'original_name': flavor},
                           created_at='2026-01-01T00:00:%02dZ' % self._n,
                           addresses={'n': [{'addr': '10.0.0.%d' % self._n,
                                             'version': 4}]},
                           fault=None, polls=0, final=status)
        self.group.member_ids.append(sid)
        return sid

    # server groups, flavors
    def get_server_group(self, gid):
        return self.group

    def find_server_group(self, name, ignore_missing=True):
        if name not in ('web', 'g1'):
            raise sdk_exc.ResourceNotFound('no group %s' % name)
        return self.group

    def find_flavor(self, name, ignore_missing=True, get_extra_specs=False):
        if name not in FLAVORS and name not in self.extra_specs:
            raise sdk_exc.ResourceNotFound('no flavor %s' % name)
        vcpus, ram, disk = SIZES.get(name, (1, 1000, 10))
        return Obj(id='id-' + name, name=name, vcpus=vcpus, ram=ram,
                   disk=disk, ephemeral=0,
                   extra_specs=self.extra_specs.get(name, {}))

    # servers
    def servers(self, details=True, tags=None):
        return [s for s in self.db.values()
                if tags is None or tags in getattr(s, 'tags', ())]

    def create_server(self, **attrs):
        if self.create_error and self.create_error(attrs):
            raise sdk_exc.HttpException('quota exceeded')
        flavor = attrs['flavor_id'][3:]
        self._n += 1
        sid = 'new-%d' % self._n
        self.db[sid] = Obj(id=sid, name=attrs['name'], status='BUILD',
                           flavor={'original_name': flavor},
                           created_at='2026-01-02T00:00:%02dZ' % self._n,
                           addresses={'n': [{'addr': '10.1.0.%d' % self._n,
                                             'version': 4}]},
                           fault=None, polls=0,
                           tags=attrs.get('tags', []),
                           final=self.outcome(attrs['name'], flavor),
                           attrs=attrs)
        if attrs.get('scheduler_hints', {}).get('group') == self.group.id:
            self.group.member_ids.append(sid)
        self.log.append(('create', flavor))
        return self.db[sid]

    def get_server(self, sid):
        if sid not in self.db:
            raise sdk_exc.ResourceNotFound('no server %s' % sid)
        s = self.db[sid]
        if s.status == 'BUILD':
            s.polls += 1
            if s.polls >= self.build_polls:
                s.status = s.final
                if s.final == 'ERROR':
                    s.fault = {'message': 'No valid host was found.'}
        return s

    # openstacksdk's waiters (openstack.resource.wait_for_status and
    # wait_for_delete): a poll every ``interval`` seconds of the fake
    # clock (``self.sleep``, set by make_executor), ResourceFailure on a
    # failure status, ResourceTimeout after ``wait`` seconds.
    sleep = None

    def _polls(self, interval, wait, what):
        waited = 0.0
        while waited < wait:
            yield
            if self.sleep is not None:
                self.sleep(interval)
            waited += interval
        raise sdk_exc.ResourceTimeout('Timeout waiting for %s' % what)

    def wait_for_server(self, server, status='ACTIVE', failures=None,
                        interval=2, wait=120):
        self.waits.append(('server', server.id, wait))
        for _ in self._polls(interval, wait, server.id):
            s = self.get_server(server.id)
            if s.status == status:
                return s
            if s.status in (failures or ['ERROR']):
                raise sdk_exc.ResourceFailure(
                    '%s transitioned to failure state %s'
                    % (server.id, s.status))

    def wait_for_delete(self, res, interval=2, wait=120):
        self.waits.append(('delete', res.id, wait))
        for _ in self._polls(interval, wait, res.id):
            try:
                s = self.get_server(res.id)
            except sdk_exc.ResourceNotFound:
                return res
            if s.status == 'DELETED':
                return s

    def delete_server(self, sid, ignore_missing=True):
        if sid in self.stuck:
            self.db[sid].status = self.stuck[sid]
            return
        s = self.db.pop(sid, None)
        if s is not None:
            self.log.append(('delete', s.flavor['original_name']))
            if sid in self.group.member_ids:
                self.group.member_ids.remove(sid)


class FakeConn:
    def __init__(self, **kw):
        self.compute = FakeCompute(**kw)
        images = {'img': 'img-id'}

        def find_image(name, ignore_missing=True):
            if name not in images:
                raise sdk_exc.ResourceNotFound('no image')
            return Obj(id=images[name])
        self.image = Obj(find_image=find_image)


def fake_clock():
    now = [0.0]

    def clock():
        return now[0]

    def sleep(seconds):
        now[0] += seconds
    return clock, sleep


def make_executor(conn, **kw):
    clock, sleep = fake_clock()
    kw.setdefault('boot_timeout', 10.0)
    kw.setdefault('delete_timeout', 10.0)
    conn.compute.sleep = sleep
    return ex.Executor(conn, poll_interval=1.0, clock=clock, sleep=sleep,
                       **kw)


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


# -- executor ----------------------------------------------------------------

class ExecutorTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.conn = FakeConn()
        self.compute = self.conn.compute
        self.app = app_mod.parse_application(app_doc())
        self.resolved = app_mod.resolve(self.app, self.conn)
        self.events = []

    def execute(self, target, floor, executor=None, **kw):
        executor = executor or make_executor(
            self.conn, observer=lambda e, s: self.events.append(e))
        inv = executor.inventory(self.app, self.resolved)
        return executor.execute(self.app, self.resolved, inv, target,
                                floor, 'summary', **kw)

    def live(self):
        inv = make_executor(self.conn).inventory(self.app, self.resolved)
        return inv.counts

    def test_make_before_break(self):
        self.compute.add('as.1')
        self.compute.add('as.1')
        out = self.execute({'as.4': 1}, 50)
        self.assertEqual('reconfigured', out.action, out.reason)
        self.assertEqual({'as.4': 1}, self.live())
        self.assertEqual([('create', 'as.4'), ('delete', 'as.1'),
                          ('delete', 'as.1')], self.compute.log)
        self.assertEqual(['up', 'deleted', 'deleted'], self.events)
        self.assertEqual(1, len(out.started))
        self.assertEqual(2, len(out.stopped))
        [new] = [s for s in self.compute.db.values()]
        self.assertEqual({'group': 'g1'}, new.attrs['scheduler_hints'])
        self.assertEqual({'opie:autoscaler': 'web'}, new.attrs['metadata'])
        self.assertEqual('none', new.attrs['networks'])

    def test_reuse_and_newest_first(self):
        old = [self.compute.add('as.2') for _ in range(3)]
        out = self.execute({'as.2': 1}, 25)
        self.assertEqual('reconfigured', out.action)
        self.assertEqual([old[2], old[1]], out.stopped)
        self.assertEqual([old[0]], list(self.compute.db))
        self.assertEqual([], out.started)

    def test_failed_boot_rolls_back(self):
        self.compute.add('as.1')
        self.compute.outcome = (lambda name, flavor:
                                'ERROR' if flavor == 'as.4' else 'ACTIVE')
        out = self.execute({'as.2': 1, 'as.4': 1}, 70)
        self.assertEqual('rolled-back', out.action)
        self.assertIn('went to ERROR: No valid host', out.reason)
        self.assertIn('2 new server(s) deleted', out.reason)
        self.assertEqual({'as.1': 1}, self.live())
        self.assertEqual(1, len(self.compute.db))
        self.assertEqual([('create', 'as.2'), ('create', 'as.4'),
                          ('delete', 'as.2'), ('delete', 'as.4')],
                         self.compute.log)
        self.assertEqual(['up', 'rolled-back'], self.events)

    def test_create_error_rolls_back_what_was_booted(self):
        self.compute.add('as.1')
        self.compute.create_error = lambda attrs: attrs['flavor_id'] == (
            'id-as.4')
        out = self.execute({'as.2': 1, 'as.4': 1}, 70)
        self.assertEqual('rolled-back', out.action)
        self.assertIn('quota exceeded', out.reason)
        self.assertEqual([('create', 'as.2'), ('delete', 'as.2')],
                         self.compute.log)
        self.assertEqual({'as.1': 1}, self.live())

    def test_boot_timeout_rolls_back(self):
        self.compute.add('as.1')
        self.compute.build_polls = 1000
        out = self.execute({'as.2': 1}, 20, executor=make_executor(
            self.conn, boot_timeout=5))
        self.assertEqual('rolled-back', out.action)
        self.assertIn('not ACTIVE after 5 s', out.reason)
        self.assertEqual({'as.1': 1}, self.live())

    def test_unhealthy_server_rolls_back(self):
        class HTTP:
            def __init__(self, code):
                self.code, self.urls = code, []

            def get(self, url, timeout):
                self.urls.append(url)
                return Obj(status_code=self.code)

        self.compute.add('as.1')
        bad = HTTP(503)
        out = self.execute({'as.2': 1}, 20, executor=make_executor(
            self.conn, boot_timeout=3, http=bad),
            health_url='http://{address}:8080/healthz')
        self.assertEqual('rolled-back', out.action)
        self.assertIn('not ACTIVE and healthy', out.reason)
        self.assertTrue(bad.urls[0].startswith('http://10.1.0.'))
        good = HTTP(200)
        out = self.execute({'as.2': 1}, 20, executor=make_executor(
            self.conn, http=good), health_url='http://{address}/h')
        self.assertEqual('reconfigured', out.action)
        self.assertEqual({'as.2': 1}, self.live())

    def test_surplus_kept_when_the_floor_is_at_risk(self):
        big = self.compute.add('as.4')
        self.compute.add('as.1')
        executor = make_executor(self.conn)
        inv = executor.inventory(self.app, self.resolved)
        # Keep the as.4, replace the as.1 by an as.2 (floor 80); someone
        # deletes the as.4 while the as.2 boots: deleting the as.1 would
        # leave 25 < 80, so the surplus stays.
        orig = self.compute.create_server

        def create(**attrs):
            self.compute.delete_server(big)
            return orig(**attrs)
        self.compute.create_server = create
        out = executor.execute(self.app, self.resolved, inv,
                               {'as.4': 1, 'as.2': 1}, 80)
        self.assertEqual('surplus-kept', out.action, out.reason)
        self.assertIn('would leave capacity 25 < 80', out.reason)
        self.assertEqual({'as.1': 1, 'as.2': 1}, self.live())

    def test_dry_run_and_no_change_touch_nothing(self):
        self.compute.add('as.1')
        out = self.execute({'as.4': 1}, 50, dry_run=True)
        self.assertEqual('dry-run', out.action)
        self.assertIn('start as.4 x1; stop as.1 x1', out.reason)
        out = self.execute({'as.1': 1}, 10)
        self.assertEqual('none', out.action)
        self.assertEqual([], self.compute.log)

    def test_only_active_declared_servers_count(self):
        self.compute.add('as.1')
        self.compute.add('as.2', status='ERROR')
        self.compute.add('m1.huge')
        inv = make_executor(self.conn).inventory(self.app, self.resolved)
        self.assertEqual({'as.1': 1}, inv.counts)
        self.assertEqual(['ERROR', 'ACTIVE'],
                         [i[2] for i in inv.ignored])

    def test_tag_application(self):
        a = app_mod.parse_application(app_doc(server_group=None, tag='t'))
        r = app_mod.resolve(a, self.conn)
        executor = make_executor(self.conn)
        out = executor.execute(a, r, executor.inventory(a, r), {'as.1': 1},
                               10)
        self.assertEqual('reconfigured', out.action)
        [s] = self.compute.db.values()
        self.assertEqual(['t'], s.attrs['tags'])
        self.assertNotIn('scheduler_hints', s.attrs)
        self.assertEqual({'as.1': 1}, executor.inventory(a, r).counts)

    def test_waits_share_one_boot_deadline(self):
        self.compute.build_polls = 3
        out = self.execute({'as.2': 2}, 50, executor=make_executor(
            self.conn, boot_timeout=10))
        self.assertEqual('reconfigured', out.action, out.reason)
        boots = [w for w in self.compute.waits if w[0] == 'server']
        # The first server took 2 s of the 10 (a poll at 0, 1, 2 s); the
        # second gets what is left, not another 10 s.
        self.assertEqual([10.0, 8.0], [w[2] for w in boots])

    def test_delete_timeout_is_reported_and_the_rest_deleted(self):
        stuck = self.compute.add('as.1')
        other = self.compute.add('as.1')
        self.compute.stuck[stuck] = 'ACTIVE'
        out = self.execute({'as.4': 1}, 50)
        self.assertEqual('reconfigured', out.action)
        self.assertIn('could not delete %s (server %s not deleted after '
                      '10 s (ACTIVE))' % (stuck, stuck), out.reason)
        self.assertEqual([other], out.stopped)

    def test_soft_deleted_counts_as_gone(self):
        soft = self.compute.add('as.1')
        self.compute.stuck[soft] = 'SOFT_DELETED'
        out = self.execute({'as.4': 1}, 50)
        self.assertEqual('reconfigured', out.action, out.reason)
        self.assertEqual([soft], out.stopped)
        self.assertNotIn('could not delete', out.reason)


# -- service -----------------------------------------------------------------

def make_conf(tmpdir, **overrides):
    conf = cfg.ConfigOpts()
    opts.register_opts(conf)
    conf([], project='opie_sched')
    overrides.setdefault('coordination_url',
                         'file://' + os.path.join(tmpdir, 'locks'))
    overrides.setdefault('repack_time', 0)
    for k, v in overrides.items():
        conf.set_override(k, v, group=opts.GROUP)
    return conf


class ServiceTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.conn = FakeConn()
        self.demand = os.path.join(self.dir, 'demand')

    def service(self, apps=None, conn=None, **overrides):
        apps = apps or [app_mod.parse_application(app_doc(
            demand={'source': 'file', 'path': self.demand}))]
        conn = conn or self.conn
        s = svc.AutoscalerService(
            make_conf(self.dir, **overrides), conn=conn, applications=apps,
            executor=make_executor(conn))
        s.start()
        self.addCleanup(s.stop)
        return s

    def set_demand(self, value):
        with open(self.demand, 'w') as f:
            f.write(str(value))

    def test_steps_up_and_down(self):
        s = self.service()
        steps = [(10, {'as.1': 1}, 'reconfigured'),
                 (50, {'as.4': 1}, 'reconfigured'),
                 (50, {'as.4': 1}, 'none'),
                 (20, {'as.2': 1}, 'reconfigured'),
                 (35, {'as.1': 1, 'as.2': 1}, 'reconfigured'),
                 (20, {'as.2': 1}, 'reconfigured')]
        for value, want, action in steps:
            self.set_demand(value)
            [out] = s.run_once()
            self.assertEqual(action, out.action, (value, out.reason))
            self.assertEqual(want, s.executor.inventory(
                s.applications[0], app_mod.resolve(
                    s.applications[0], self.conn)).counts)
        self.assertAlmostEqual(1.0, out.saving_per_hour)

    def test_bad_demand_keeps_the_set(self):
        s = self.service()
        self.set_demand(10)
        s.run_once()
        for bad in ('-3', 'many', ''):
            self.set_demand(bad)
            [out] = s.run_once()
            self.assertEqual('kept', out.action)
            self.assertIn('demand unavailable', out.reason)
        os.unlink(self.demand)
        [out] = s.run_once()
        self.assertIn('cannot read', out.reason)
        self.assertEqual(1, len(self.conn.compute.db))

    def test_runaway_demand_is_not_acted_upon(self):
        s = self.service(max_servers=5)
        self.set_demand(10)
        s.run_once()
        self.set_demand(1e12)
        [out] = s.run_once()
        self.assertEqual('kept', out.action)
        self.assertIn('needs more than max_servers=5', out.reason)
        self.set_demand(300)  # 5 x as.4
        [out] = s.run_once()
        self.assertEqual('reconfigured', out.action)
        e = self.assertRaises(app_mod.AppError, app_mod.parse_application,
                              app_doc(max_servers=0))
        self.assertIn('max_servers must be an integer >= 1', str(e))

    def test_bad_parameters_keep_the_set(self):
        s = self.service(stability_interval=0)
        self.set_demand(10)
        [out] = s.run_once()
        self.assertEqual('kept', out.action)
        self.assertIn('d must be positive', out.reason)
        s = self.service(health_url='http://{ip}/')
        [out] = s.run_once()
        self.assertEqual('kept', out.action)
        self.assertIn('bad template', out.reason)
        self.assertEqual([], self.conn.compute.log)

    def test_bad_applications_file_changes_nothing(self):
        path = os.path.join(self.dir, 'apps.yaml')
        with open(path, 'w') as f:
            f.write('applications: [{name: web}]\n')
        s = svc.AutoscalerService(
            make_conf(self.dir, applications_file=path), conn=self.conn)
        s.start()
        self.addCleanup(s.stop)
        [out] = s.run_once()
        self.assertEqual(('*', 'error'), (out.app, out.action))
        self.assertIn('exactly one of server_group and tag', out.reason)
        self.assertEqual([], self.conn.compute.log)

    def test_dry_run(self):
        s = self.service(dry_run=True)
        self.set_demand(50)
        [out] = s.run_once()
        self.assertEqual('dry-run', out.action)
        self.assertEqual({'as.4': 1}, out.target)
        self.assertEqual([], self.conn.compute.log)

    def test_plan_scale_in_is_a_subset(self):
        s = self.service()
        a = s.applications[0]
        types = app_mod.resolve(a, self.conn).types
        # Over-provisioned {as.2 x2, as.1}: scale in to {as.2} for 20,
        # no boot even though K is huge (no repacking).
        s.conf.set_override('gain_threshold', 10, group=opts.GROUP)
        result, target, floor = s.plan(a, types, 20, {'as.2': 2, 'as.1': 1})
        self.assertEqual({'as.2': 1}, target)
        self.assertFalse(result.repack)
        self.assertEqual(20, floor)

    def test_plan_budget_cap(self):
        a = app_mod.parse_application(app_doc(budget=3.2, budget_period=1))
        s = self.service(apps=[a])
        types = app_mod.resolve(a, self.conn).types
        result, target, floor = s.plan(a, types, 200, {})
        self.assertTrue(result.budget_limited)
        self.assertLessEqual(sum(FLAVORS[f]['price'] * n
                                 for f, n in target.items()), 3.2)
        self.assertEqual(60, floor)  # the capped target's capacity

    def test_repack_gain_test_and_log(self):
        s = self.service(repack_time=3600, stability_interval=1)
        self.set_demand(10)
        s.run_once()
        # 20: S_delta's {as.1 x2} (2.0/h) vs {as.2} (1.6/h), which starts
        # an as.2: R = 1.6/h * 1 h, gain 1 - (1.6 + 1.6)/2.0 < K: no
        # repacking, scale out with a second as.1.
        self.set_demand(20)
        with fixtures.FakeLogger(name='opie_sched.services.autoscaler') as log:
            [out] = s.run_once()
        self.assertEqual({'as.1': 2}, out.target)
        self.assertFalse(out.plan['repack'])
        self.assertIn('scale-out for demand 20', log.output)
        self.assertIn('predicted saving -1/h', log.output)
        self.assertIn('gain test: keep: gain -0.6', log.output)
        # With d = 100 h the same repacking pays off.
        s.conf.set_override('stability_interval', 100, group=opts.GROUP)
        with fixtures.FakeLogger(name='opie_sched.services.autoscaler') as log:
            [out] = s.run_once()
        self.assertEqual('reconfigured', out.action)
        self.assertEqual({'as.2': 1}, out.target)
        self.assertAlmostEqual(0.4, out.saving_per_hour)
        self.assertIn('repacking as.1 x2 -> as.2 x1 saves 0.4/h, 38.4 net '
                      'over d=100 h after R=1.6', log.output)

    def test_two_services_one_backend_only_one_acts(self):
        conn = FakeConn()
        a = self.service(conn=conn)
        b = self.service(conn=conn)
        self.assertNotEqual(a.member_id, b.member_id)
        self.set_demand(10)
        inside, release = threading.Event(), threading.Event()
        real_step = a._step

        def slow_step(application):
            inside.set()
            release.wait(10)
            return real_step(application)
        a._step = slow_step
        result = []
        t = threading.Thread(target=lambda: result.extend(a.run_once()))
        t.start()
        self.assertTrue(inside.wait(10))
        [out_b] = b.run_once()
        release.set()
        t.join(10)
        self.assertEqual('locked', out_b.action)
        self.assertEqual('reconfigured', result[0].action)
        self.assertEqual([('create', 'as.1')], conn.compute.log)
        # Lock released: B acts next round (nothing left to do).
        [out_b] = b.run_once()
        self.assertEqual('none', out_b.action)

    def test_lock_names_are_per_application(self):
        self.assertEqual(b'opie-autoscaler.web', svc.lock_name('web'))


# -- spot market prices ------------------------------------------------------

MARKET = 'http://market:8785/v1'
PRICES_URL = MARKET + '/prices'


def market_body(vcpus='0.25', memory_mb='0.0001', pool='default',
                period='2026-11-22T10:00:00Z'):
    """A ``GET /v1/prices`` body (opie_sched.services.market.api.app), one
    more pool ``gpu`` that is ten times dearer.
    """
    rows = []
    for name, factor in ((pool, 1), ('gpu', 10)):
        for resource, price, unit in (('vcpus', vcpus, 'vCPU'),
                                      ('memory_mb', memory_mb, 'MB')):
            rows.append({'pool': name, 'resource': resource,
                         'price': str(float(price) * factor),
                         'unit': 'per %s-hour' % unit})
    return {'period_start': period, 'period_seconds': 3600, 'prices': rows}


class SpotPricesTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.http = self.useFixture(rm_fixture.Fixture())
        self.http.get(PRICES_URL, json=market_body())
        self.flavor = Obj(name='sp.2', vcpus=2, ram=4000)

    def test_price_is_the_sum_over_resources(self):
        # Merkat eq. 1 prices per unit-hour x the flavor's amounts:
        # 2 vCPU x 0.25 + 4000 MB x 0.0001 = 0.9 per hour.
        market = spot.SpotPrices()
        price, quote = market.flavor_price(MARKET, 'default', self.flavor)
        self.assertAlmostEqual(0.9, price)
        self.assertEqual('2026-11-22T10:00:00Z', quote.period_start)
        self.assertEqual('market %s pool default period '
                         '2026-11-22T10:00:00Z' % MARKET,
                         quote.describe('default'))
        price, _ = market.flavor_price(MARKET + '/', 'gpu', self.flavor)
        self.assertAlmostEqual(9.0, price)
        # Exact decimal arithmetic on the market's decimal text.
        self.assertEqual(D('0.9000'), spot.flavor_price(
            {'vcpus': D('0.25'), 'memory_mb': D('0.0001')}, 2, 4000))

    def test_fetched_once_per_round(self):
        market = spot.SpotPrices()
        for pool in ('default', 'gpu', 'default'):
            market.flavor_price(MARKET, pool, self.flavor)
        self.assertEqual(1, self.http.call_count)
        self.http.get(PRICES_URL, json=market_body(vcpus='1'))
        price, _ = market.flavor_price(MARKET, 'default', self.flavor)
        self.assertAlmostEqual(0.9, price)  # still this round's prices
        market.new_round()
        price, _ = market.flavor_price(MARKET, 'default', self.flavor)
        self.assertAlmostEqual(2.4, price)
        self.assertEqual(2, self.http.call_count)
        # A failure is not retried within the round either.
        self.http.get(PRICES_URL, status_code=503)
        market.new_round()
        for _ in range(2):
            self.assertRaises(spot.MarketError, market.quote, MARKET)
        self.assertEqual(3, self.http.call_count)

    def test_keystoneauth_session_or_plain_requests(self):
        class Session:
            calls = []

            def request(self, url, method, **kw):
                self.calls.append((method, url, kw))
                return Obj(status_code=200,
                           text=json.dumps(market_body()))
        session = Session()
        lazily = []
        market = spot.SpotPrices(session=lambda: lazily.append(1) or session,
                                 timeout=3)
        self.assertEqual([], lazily)
        market.quote(MARKET)
        self.assertEqual([('GET', PRICES_URL, {
            'timeout': 3, 'raise_exc': False,
            'headers': {'Accept': 'application/json'}})], session.calls)
        self.assertEqual(0, self.http.call_count)
        # The service: the connection's session when it authenticates,
        # plain requests (no token) otherwise.
        s = svc.AutoscalerService(make_conf(self.useFixture(
            fixtures.TempDir()).path), conn=FakeConn())
        self.assertIsNone(s._market_session())
        s._conn.session = Obj(auth=None)
        self.assertIsNone(s._market_session())
        s._conn.session = Obj(auth='plugin')
        self.assertIs(s._conn.session, s._market_session())
        s._conn.session = None
        s.market.quote(MARKET)
        self.assertEqual(1, self.http.call_count)
        self.assertNotIn('X-Auth-Token', self.http.last_request.headers)

    def test_errors_say_why(self):
        market = spot.SpotPrices()
        cases = [
            (dict(exc=requests.ConnectionError('connection refused')),
             'GET %s failed: connection refused' % PRICES_URL),
            (dict(status_code=404, json={'error': {
                'code': 404, 'message': 'no resource /prices'}}),
             "answered 404: no resource /prices (market_url: the market's "
             'endpoint, e.g. http://market:8788/v1, or catalog)'),
            (dict(status_code=401, text='denied'), 'answered 401'),
            (dict(text='<html>'), 'the answer is not JSON'),
            (dict(json=[1, 2]), 'not a prices document'),
            (dict(json={'prices': [{'pool': 'default', 'resource': 'vcpus',
                                    'price': 'cheap'}]}),
             'prices[0].price: not a number'),
            (dict(json={'prices': [{'pool': 'default', 'resource': 'vcpus',
                                    'price': '-1'}]}),
             'must be a finite number >= 0'),
            (dict(json={'prices': [{'pool': '', 'resource': 'vcpus',
                                    'price': '1'}]}),
             'pool must be a non-empty string'),
            (dict(json={'prices': [{'pool': 'p', 'resource': 'vcpus'}]}),
             'no price'),
            (dict(json={'prices': 2 * [{'pool': 'default',
                                        'resource': 'vcpus',
                                        'price': '1'}]}),
             'pool default has two vcpus prices'),
            (dict(json={'period_start': None, 'period_seconds': None,
                        'prices': []}), 'has published no prices yet'),
            (dict(json={'prices': [{'pool': 'default', 'resource': 'vcpus',
                                    'price': '1'}]}),
             'pool default: no memory_mb price'),
            (dict(json={'prices': [
                {'pool': 'default', 'resource': r, 'price': '1'}
                for r in ('vcpus', 'memory_mb', 'disk_gb')]}),
             'resource(s) disk_gb have no flavor amount'),
            (dict(json=market_body(vcpus='0', memory_mb='0')),
             'the spot price of flavor sp.2 is 0/h (no bids and no reserve '
             'price)'),
        ]
        for response, why in cases:
            self.http.get(PRICES_URL, **response)
            market.new_round()
            e = self.assertRaises(spot.MarketError, market.flavor_price,
                                  MARKET, 'default', self.flavor)
            self.assertIn(why, str(e), response)
        self.http.get(PRICES_URL, json=market_body())
        market.new_round()
        e = self.assertRaises(spot.MarketError, market.flavor_price, MARKET,
                              'gpu2', self.flavor)
        self.assertIn("market %s has no pool 'gpu2' (pools: default, gpu)"
                      % MARKET, str(e))


class SpotResolveTest(testtools.TestCase):
    """Price precedence: file > market (preemptible only) > extra spec."""

    def setUp(self):
        super().setUp()
        self.http = self.useFixture(rm_fixture.Fixture())
        self.http.get(PRICES_URL, json=market_body())
        specs = {name: dict(s, **{'opie:price': '5.0'})
                 for name, s in SPOT_SPECS.items()}
        specs['as.9'] = {'opie:price': '0.5'}
        self.conn = FakeConn(extra_specs=specs)
        self.app = app_mod.parse_application(app_doc(flavors={
            'as.1': {'capacity': 10, 'price': 1.0},   # file price
            'as.9': {'capacity': 100},                # extra spec
            'sp.2': {'capacity': 25},                 # market
            'sp.4': {'capacity': 60, 'price': 2.0},   # file beats market
        }))

    def prices(self, **kw):
        r = app_mod.resolve(self.app, self.conn, market=spot.SpotPrices(),
                            **kw)
        return {t.name: t.price for t in r.types}, r

    def test_precedence(self):
        prices, r = self.prices(market_url=MARKET)
        self.assertEqual({'as.1': 1.0, 'as.9': 0.5, 'sp.4': 2.0},
                         {k: v for k, v in prices.items() if k != 'sp.2'})
        self.assertAlmostEqual(0.9, prices['sp.2'])
        period = 'period 2026-11-22T10:00:00Z'
        self.assertEqual({'as.1': 'file', 'as.9': 'extra spec opie:price',
                          'sp.2': 'market %s pool default %s'
                          % (MARKET, period), 'sp.4': 'file'},
                         r.price_sources)
        self.assertEqual('sp.2 0.9/h (market %s pool default %s)'
                         % (MARKET, period), r.market_prices())
        # Another pool.
        prices, _ = self.prices(market_url=MARKET, market_pool='gpu')
        self.assertAlmostEqual(9.0, prices['sp.2'])
        # No market named: the extra spec prices the preemptible flavor,
        # and the market is not asked.
        calls = self.http.call_count
        prices, r = self.prices(market_url=None)
        self.assertEqual(5.0, prices['sp.2'])
        self.assertEqual('', r.market_prices())
        self.assertEqual(calls, self.http.call_count)
        # Only file prices: the market is not asked either.
        app = app_mod.parse_application(app_doc())
        app_mod.resolve(app, self.conn, market=spot.SpotPrices(),
                        market_url=MARKET)
        self.assertEqual(calls, self.http.call_count)

    def test_invalid_preemptible_flavor(self):
        specs = dict(SPOT_SPECS['sp.2'])
        specs['resources:VCPU'] = '2'
        conn = FakeConn(extra_specs={'sp.2': specs})
        app = app_mod.parse_application(app_doc(flavors={
            'sp.2': {'capacity': 25}}))
        e = self.assertRaises(app_mod.AppError, app_mod.resolve, app, conn,
                              market=spot.SpotPrices(), market_url=MARKET)
        self.assertIn('flavor sp.2: cannot price it at the market', str(e))
        self.assertIn('resources:VCPU=2 must be 0', str(e))

    def test_declaration(self):
        a = app_mod.parse_application(app_doc(market_url=MARKET,
                                              market_pool='gpu'))
        self.assertEqual({'market_url': MARKET, 'market_pool': 'gpu'},
                         a.overrides)
        a = app_mod.parse_application(app_doc(market_url=None))
        self.assertEqual({'market_url': None}, a.overrides)
        for change, why in (({'market_url': 'market:8785'}, 'http(s) URL'),
                            ({'market_url': 3}, 'non-empty string'),
                            ({'market_pool': ''}, 'non-empty string'),
                            ({'market_pool': None}, 'non-empty string')):
            e = self.assertRaises(app_mod.AppError,
                                  app_mod.parse_application,
                                  app_doc(**change))
            self.assertIn(why, str(e))
            self.assertIn(next(iter(change)), str(e))


class SpotServiceTest(testtools.TestCase):
    """The service on market prices: the mix follows the spot price, and
    every market problem keeps the current set.
    """

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.http = self.useFixture(rm_fixture.Fixture())
        self.http.get(PRICES_URL, json=market_body())
        self.conn = FakeConn(extra_specs=dict(SPOT_SPECS))
        self.demand = os.path.join(self.dir, 'demand')
        with open(self.demand, 'w') as f:
            f.write('20')

    def service(self, names=('web',), **overrides):
        # as.2 (file price 1.6/h) or the preemptible sp.2 (market price),
        # both capacity 25.
        apps = [app_mod.parse_application(app_doc(
            name=name, demand={'source': 'file', 'path': self.demand},
            flavors={'as.2': {'capacity': 25, 'price': 1.6},
                     'sp.2': {'capacity': 25}})) for name in names]
        overrides.setdefault('market_url', MARKET)
        s = svc.AutoscalerService(
            make_conf(self.dir, **overrides), conn=self.conn,
            applications=apps, executor=make_executor(self.conn))
        s.start()
        self.addCleanup(s.stop)
        return s

    def counts(self):
        counts = {}
        for server in self.conn.compute.db.values():
            name = server.flavor['original_name']
            counts[name] = counts.get(name, 0) + 1
        return counts

    def test_mix_follows_the_spot_price(self):
        s = self.service()
        with fixtures.FakeLogger(name='opie_sched.services.autoscaler') as log:
            [out] = s.run_once()
        self.assertEqual(('reconfigured', {'sp.2': 1}),
                         (out.action, self.counts()))
        self.assertIn('spot prices: sp.2 0.9/h (market %s pool default '
                      'period 2026-11-22T10:00:00Z)' % MARKET, log.output)
        # The spot price rises to 2.4/h > 1.6/h: repacked to as.2.
        self.http.get(PRICES_URL, json=market_body(
            vcpus='1', period='2026-11-22T11:00:00Z'))
        with fixtures.FakeLogger(name='opie_sched.services.autoscaler') as log:
            [out] = s.run_once()
        self.assertEqual(('reconfigured', {'as.2': 1}),
                         (out.action, self.counts()))
        self.assertTrue(out.plan['repack'])
        self.assertAlmostEqual(0.8, out.saving_per_hour)
        self.assertIn('price 2.4/h -> 1.6/h', log.output)
        self.assertIn('spot prices: sp.2 2.4/h', log.output)
        self.assertEqual([('create', 'sp.2'), ('create', 'as.2'),
                          ('delete', 'sp.2')], self.conn.compute.log)
        # An application's own pool overrides the option.
        self.assertEqual('gpu', s._param(app_mod.parse_application(
            app_doc(market_pool='gpu')), 'market_pool'))

    def test_fetched_once_per_round_for_all_applications(self):
        s = self.service(names=('web', 'api', 'db'))
        s.run_once()
        self.assertEqual(1, self.http.call_count)
        s.run_once()
        self.assertEqual(2, self.http.call_count)

    def test_market_errors_keep_the_set(self):
        s = self.service()
        s.run_once()
        self.assertEqual({'sp.2': 1}, self.counts())
        log_before = list(self.conn.compute.log)
        with open(self.demand, 'w') as f:
            f.write('50')  # would need a second server
        cases = [
            (dict(exc=requests.ConnectionError('connection refused')),
             'GET %s failed: connection refused' % PRICES_URL),
            (dict(status_code=500, json={'error': {
                'code': 500, 'message': 'the market API failed'}}),
             'answered 500: the market API failed'),
            (dict(text='{"prices": '), 'the answer is not JSON'),
            (dict(json={'prices': 'cheap'}), 'not a prices document'),
            (dict(json=market_body(pool='other')),
             "has no pool 'default' (pools: gpu, other)"),
        ]
        for response, why in cases:
            self.http.get(PRICES_URL, **response)
            with fixtures.FakeLogger(
                    name='opie_sched.services.autoscaler') as log:
                [out] = s.run_once()
            self.assertEqual('kept', out.action, out.reason)
            self.assertTrue(out.reason.startswith(
                'market prices unavailable: flavor sp.2: '), out.reason)
            self.assertIn(why, out.reason)
            self.assertIn('Application web: market prices unavailable: '
                          'flavor sp.2: ', log.output)
            self.assertIn(why, log.output)
            self.assertIn('keeping the current set', log.output)
            self.assertEqual(log_before, self.conn.compute.log)
        # An unknown pool of the application's own.
        self.http.get(PRICES_URL, json=market_body())
        s.applications = [app_mod.parse_application(app_doc(
            demand={'source': 'file', 'path': self.demand},
            flavors={'sp.2': {'capacity': 25}}, market_pool='gpu2'))]
        [out] = s.run_once()
        self.assertEqual('kept', out.action)
        self.assertIn("has no pool 'gpu2'", out.reason)
        # A pool named without any market.
        s.conf.set_override('market_url', None, group=opts.GROUP)
        [out] = s.run_once()
        self.assertEqual('kept', out.action)
        self.assertIn('market_pool gpu2 is given but no market_url',
                      out.reason)
        self.assertEqual(log_before, self.conn.compute.log)
        # A configured market_url that is not an http(s) URL.
        s.conf.set_override('market_url', 'market:8785', group=opts.GROUP)
        [out] = s.run_once()
        self.assertEqual('kept', out.action)
        self.assertIn('market_url must be an http(s) URL', out.reason)
        # The market back: the round acts again.
        s.conf.set_override('market_url', MARKET, group=opts.GROUP)
        s.applications = [app_mod.parse_application(app_doc(
            demand={'source': 'file', 'path': self.demand},
            flavors={'sp.2': {'capacity': 25}}))]
        [out] = s.run_once()
        self.assertEqual(('reconfigured', {'sp.2': 2}),
                         (out.action, self.counts()))

    def test_no_market_url_uses_the_extra_spec(self):
        specs = {n: dict(v, **{'opie:price': '1.0'})
                 for n, v in SPOT_SPECS.items()}
        self.conn = FakeConn(extra_specs=specs)
        s = self.service(market_url=None)
        [out] = s.run_once()
        self.assertEqual({'sp.2': 1}, out.target)
        self.assertEqual(0, self.http.call_count)
        # An application may turn the configured market off.
        s = self.service()
        s.applications = [app_mod.parse_application(app_doc(
            demand={'source': 'file', 'path': self.demand},
            flavors={'sp.2': {'capacity': 25}}, market_url=None))]
        [out] = s.run_once()
        self.assertEqual('none', out.action)
        self.assertEqual(0, self.http.call_count)


class CommandTest(testtools.TestCase):

    def test_parse_config(self):
        d = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(d, 'a.conf')
        with open(path, 'w') as f:
            f.write('[opie_autoscaler]\ninterval = 5\n'
                    'applications_file = /x.yaml\n')
        conf = cmd.parse_config(['--config-file', path, '--once',
                                 '--dry-run'])
        self.assertTrue(conf.once)
        self.assertTrue(conf.opie_autoscaler.dry_run)
        self.assertEqual(5.0, conf.opie_autoscaler.interval)
        self.assertEqual('/x.yaml', conf.opie_autoscaler.applications_file)

    def test_list_opts(self):
        [(group, options)] = opts.list_opts()
        self.assertEqual('opie_autoscaler', group.name)
        names = {o.name for o in options}
        self.assertTrue({'applications_file', 'interval',
                         'stability_interval', 'gain_threshold',
                         'repack_time', 'c_extra', 'dry_run',
                         'coordination_url', 'boot_timeout',
                         'health_url', 'market_url', 'market_pool'} <= names)
        self.assertTrue(opts.DEFAULT_COORDINATION_URL.startswith('file://'))
