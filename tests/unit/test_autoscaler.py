"""Unit tests of opie-autoscaler (opie_sched.autoscaler, issue 5).

Demand sources, application validation, the make-before-break executor on
a fake openstacksdk connection (rollback, floor protection, health check,
dry-run), the service's planning and its tooz locking: two services on one
file backend never act on one application at once.

Run with ``stestr run tests.unit.test_autoscaler``.
"""

import json
import os
import threading

import fixtures
from openstack import exceptions as sdk_exc
from oslo_config import cfg
import requests
import testtools

from opie_sched.autoscaler import app as app_mod
from opie_sched.autoscaler import demand
from opie_sched.autoscaler import executor as ex
from opie_sched.autoscaler import opts
from opie_sched.autoscaler import service as svc
from opie_sched.cmd import autoscaler as cmd

# c_i (capacity unit), p_i (currency/hour)
FLAVORS = {'as.1': {'capacity': 10, 'price': 1.0},
           'as.2': {'capacity': 25, 'price': 1.6},
           'as.4': {'capacity': 60, 'price': 3.0}}


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
        return Obj(id='id-' + name, name=name,
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

    def delete_server(self, sid, ignore_missing=True):
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
        with fixtures.FakeLogger(name='opie_sched.autoscaler') as log:
            [out] = s.run_once()
        self.assertEqual({'as.1': 2}, out.target)
        self.assertFalse(out.plan['repack'])
        self.assertIn('scale-out for demand 20', log.output)
        self.assertIn('predicted saving -1/h', log.output)
        self.assertIn('gain test: keep: gain -0.6', log.output)
        # With d = 100 h the same repacking pays off.
        s.conf.set_override('stability_interval', 100, group=opts.GROUP)
        with fixtures.FakeLogger(name='opie_sched.autoscaler') as log:
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
                         'health_url'} <= names)
        self.assertTrue(opts.DEFAULT_COORDINATION_URL.startswith('file://'))
