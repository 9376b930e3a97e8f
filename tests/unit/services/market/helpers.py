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
"""Fakes and fixtures shared by the market service's unit tests: a fake
cloud for openstacksdk, a recording notifier, the store's URLs (sqlite
and the local PostgreSQL/MySQL servers), the API test bases, the
personas and the price fixtures."""

import dataclasses
from decimal import Decimal
import json
import os
import uuid

import fixtures
from oslo_config import cfg
import sqlalchemy as sa
import testtools
import webob

from opie_sched.common import flavors
from opie_sched.services.market.api import app as api_app
from opie_sched.services.market.api import policy
from opie_sched.services.market import cloud as market_cloud
from opie_sched.services.market.db import api as db_api
from opie_sched.services.market import engine
from opie_sched.services.market import opts


D = Decimal
HOUR = 3600
T0 = 1000 * HOUR  # a period start (aligned on the epoch)


class FakeCloud:
    """The :class:`opie_sched.services.market.engine.Cloud` interface, in
    memory.

    Two 8 vCPU / 16000 MB hosts in one pool by default.
    """

    def __init__(self, hosts=None):
        self._hosts = hosts or {'h1': {'vcpus': 8, 'memory_mb': 16000},
                                'h2': {'vcpus': 8, 'memory_mb': 16000}}
        self.by_uuid = {}
        self.terminated = []
        self.confirmed = []
        self.tags = {}
        self.aggs = {}
        self.fail_listing = False
        self.refuse = set()
        #: {uuid: [(instance action name, start epoch)]}: Nova's instance
        #: actions (the scheduler's preempt_notice and preempt among them)
        self.actions = {}

    def add(self, uuid, project, bid=None, host='h1', vcpus=2, ram=4000,
            created=0, preemptible=True, metadata=None):
        md = dict(metadata or {})
        if bid is not None:
            md['opie:bid'] = str(bid)
        specs = (flavors.preemptible_extra_specs(vcpus, ram, 40)
                 if preemptible else {})
        self.by_uuid[uuid] = engine.ServerInfo(
            uuid, project, 'ACTIVE', host, vcpus, ram, specs, md, created,
            uuid)
        return uuid

    def servers(self):
        if self.fail_listing:
            raise RuntimeError('nova API down')
        return list(self.by_uuid.values())

    def get_server(self, uuid):
        return self.by_uuid.get(uuid)

    def hosts(self):
        return dict(self._hosts)

    def aggregates(self):
        return self.aggs

    def _replace(self, uuid, **kw):
        self.by_uuid[uuid] = dataclasses.replace(self.by_uuid[uuid], **kw)

    def set_metadata(self, uuid, metadata):
        self._replace(uuid, metadata=dict(self.by_uuid[uuid].metadata,
                                          **metadata))

    def delete_metadata(self, uuid, keys):
        self._replace(uuid, metadata={
            k: v for k, v in self.by_uuid[uuid].metadata.items()
            if k not in keys})

    def add_tag(self, uuid, tag):
        self.tags.setdefault(uuid, set()).add(tag)

    def instance_actions(self, uuid):
        return list(self.actions.get(uuid, ())) if uuid in self.by_uuid \
            else []

    def confirm_resize(self, uuid):
        self.confirmed.append(uuid)

    def terminate(self, uuid, action):
        if action in self.refuse:
            raise market_cloud.Refused('Cannot %s in this state' % action)
        self.terminated.append((uuid, action))
        if action == 'delete':
            del self.by_uuid[uuid]
        elif action == 'shelve':
            self._replace(uuid, status='SHELVED_OFFLOADED', host=None)
        else:
            self._replace(uuid, status='SHUTOFF')


#: Two 4 vCPU / 8000 MB hosts: four 2 vCPU / 4000 MB servers fill the pool,
#: a fifth makes it contended.
SMALL = {'h1': {'vcpus': 4, 'memory_mb': 8000},
         'h2': {'vcpus': 4, 'memory_mb': 8000}}


class RecordingNotifier:
    """An oslo.messaging Notifier's interface, recording
    ``(event_type, payload primitive)``.
    """

    def __init__(self):
        self.sent = []
        self.publisher_ids = []

    def prepare(self, publisher_id=None):
        self.publisher_ids.append(publisher_id)
        return self

    def info(self, ctxt, event_type, payload):
        self.sent.append((event_type, payload))


def sqlite_url(test):
    path = test.useFixture(fixtures.TempDir()).path
    return 'sqlite:///' + os.path.join(path, 'market.sqlite')


def new_store(url):
    store = db_api.MarketStore(url)
    store.sync()
    return store


def server_database_url(test, env, default):
    """A throw-away database on the local server of URL ``$env`` (else
    ``default``), dropped at cleanup; skips ``test`` with the reason when
    the server is not reachable.
    """
    base = sa.engine.make_url(os.environ.get(env, default))
    try:
        admin = sa.create_engine(base, isolation_level='AUTOCOMMIT')
        with admin.connect() as conn:
            conn.execute(sa.text('SELECT 1'))
    except Exception as exc:
        test.skipTest('%s not reachable (%s=%s): %s' % (
            base.get_backend_name(), env,
            base.render_as_string(hide_password=True),
            str(exc).splitlines()[0]))
    name = 'opie_market_%s' % uuid.uuid4().hex[:12]
    with admin.connect() as conn:
        conn.execute(sa.text('CREATE DATABASE %s' % name))

    def drop():
        with admin.connect() as conn:
            conn.execute(sa.text('DROP DATABASE IF EXISTS %s' % name))
        admin.dispose()
    test.addCleanup(drop)
    return base.set(database=name).render_as_string(hide_password=False)


# -- the REST API ------------------------------------------------------------

class _APIBase(testtools.TestCase):
    """The API over a fake cloud: srv-a (project pA, bid 1), srv-b (pB,
    bid 2), plain-a (pA, not preemptible); one period settled.
    """

    def setUp(self):
        super().setUp()
        self.store = new_store(sqlite_url(self))
        # 3 vCPU / 6000 MB for 4 / 8000 asked: contended
        self.cloud = FakeCloud({'h1': {'vcpus': 2, 'memory_mb': 4000},
                                'h2': {'vcpus': 1, 'memory_mb': 2000}})
        self.cloud.add('srv-a', 'pA', 1)
        self.cloud.add('srv-b', 'pB', 2)
        self.cloud.add('plain-a', 'pA', preemptible=False)
        conf = cfg.ConfigOpts()
        opts.register_opts(conf)
        conf([])
        self.settings = engine.Settings(period_seconds=HOUR,
                                        bid_cap=D(10), initial_credit=D(3))
        self.app = api_app.NoAuth(api_app.MarketAPI(
            self.store, self.cloud, self.settings, policy.enforcer(conf),
            clock=lambda: T0 + 0.5))
        engine.MarketEngine(self.store, self.cloud, self.settings).tick(T0)

    def call(self, method, path, token='admin:admin', body=None):
        req = webob.Request.blank(path, method=method)
        if token:
            req.headers['X-Auth-Token'] = token
        if body is not None:
            req.body = (body if isinstance(body, bytes)
                        else json.dumps(body).encode())
            req.content_type = 'application/json'
        resp = req.get_response(self.app)
        return resp.status_int, resp.json


# -- the openstackclient plugin ----------------------------------------------

class _WebobSession:
    """A keystoneauth-like session that calls a WSGI app in-process."""

    def __init__(self, app, token):
        self.app = app
        self.token = token

    def request(self, url, method, json=None, params=None, headers=None,
                raise_exc=True, timeout=None):
        from urllib import parse
        path = parse.urlsplit(url).path
        if params:
            path += '?' + parse.urlencode(params)
        req = webob.Request.blank(path, method=method)
        req.headers.update(headers or {})
        req.headers['X-Auth-Token'] = self.token
        if json is not None:
            req.json_body = json
        resp = req.get_response(self.app)
        body = resp.json
        return type('Response', (), {'status_code': resp.status_int,
                                     'text': resp.text,
                                     'headers': dict(resp.headers),
                                     'json': lambda self: body})()


V = 'OpenStack-API-Version'
LATEST = {V: 'spot-market latest'}


#: Personas: token ``user:project:roles`` (roles as Keystone's implied
#: roles give them: admin implies member implies reader).
READER = 'r:pA:reader'
MEMBER = 'm:pA:member,reader'
ADMIN = 'adm:pAdmin:admin,member,reader'
OTHER = 'o:pB:member,reader'
SERVICE = 'svc:service:service'


def provider_summary(capacity, normal_used, preemptible_used,
                     preemptible_capacity=None):
    """A provider summary of ``GET /allocation_candidates`` (1.36)."""
    pre_cap = preemptible_capacity or capacity
    res = {}
    for rcs, caps, used in (
            (('VCPU', 'MEMORY_MB', 'DISK_GB'), capacity, normal_used),
            (('CUSTOM_PREEMPTIBLE_VCPU', 'CUSTOM_PREEMPTIBLE_MEMORY_MB',
              'CUSTOM_PREEMPTIBLE_DISK_GB'), pre_cap, preemptible_used)):
        for rc, c, u in zip(rcs, caps, used):
            res[rc] = {'capacity': c, 'used': u}
    return {'resources': res, 'traits': []}


#: Flavors Nova knows in these tests (FlavorLookup's answers).
FLAVORS = {
    'spot.small': {'id': 'f-spot', 'name': 'spot.small', 'vcpus': 2,
                   'ram': 4000, 'disk_gb': 40,
                   'extra_specs': dict(flavors.preemptible_extra_specs(
                       2, 4000, 40), **{'opie:bid': '3'})},
    'm1.small': {'id': 'f-normal', 'name': 'm1.small', 'vcpus': 2,
                 'ram': 4000, 'disk_gb': 40, 'extra_specs': {}},
}


class _Base(_APIBase):

    def setUp(self):
        super().setUp()
        self.api = self.app.app
        self.api.zones = lambda: {'h1': 'az1', 'h2': 'az2'}
        self.api.flavors = FLAVORS.get
        self.api.providers = self.read_providers
        self.provider_reads = []

    def read_providers(self, params):
        """Placement's answer for the fake cloud: every host a candidate,
        8 vCPU / 16000 MB / 400 GB; on h1, srv-a and srv-b hold 2 vCPU,
        4000 MB and 40 GB each.
        """
        self.provider_reads.append(params)
        return {'h1': provider_summary((8, 16000, 400), (0, 0, 0),
                                       (4, 8000, 80)),
                'h2': provider_summary((8, 16000, 400), (0, 0, 0),
                                       (0, 0, 0))}

    def call(self, method, path, token=ADMIN, body=None, headers=None):
        req = webob.Request.blank(path, method=method)
        req.headers.update(headers or {})
        if token:
            req.headers['X-Auth-Token'] = token
        if body is not None:
            req.body = (body if isinstance(body, bytes)
                        else json.dumps(body).encode())
            req.content_type = 'application/json'
        resp = req.get_response(self.app)
        self.last = resp
        return resp.status_int, resp.json
