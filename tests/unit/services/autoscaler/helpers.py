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
"""Fakes shared by the autoscaler's unit tests: a fake openstacksdk
connection and compute proxy, a fake clock, the configuration and the
market's price documents."""

import os

from openstack import exceptions as sdk_exc
from oslo_config import cfg

from opie_sched.common import flavors as flavors_mod
from opie_sched.conf import autoscaler as opts
from opie_sched.services.autoscaler import executor as ex


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
