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
"""Tests of the market API's secure-RBAC persona matrix over every
endpoint (opie_sched.services.market.api.policy)."""

import json
import os

import fixtures
from oslo_config import cfg

from opie_sched.services.market.api import policy
from opie_sched.services.market.db import models
from opie_sched.services.market import opts

from tests.unit.services.market.helpers import _Base
from tests.unit.services.market.helpers import ADMIN
from tests.unit.services.market.helpers import LATEST
from tests.unit.services.market.helpers import MEMBER
from tests.unit.services.market.helpers import OTHER
from tests.unit.services.market.helpers import READER
from tests.unit.services.market.helpers import SERVICE


PERSONAS = {'reader': READER, 'member': MEMBER, 'admin': ADMIN,
            'other project': OTHER, 'service': SERVICE}


#: (method, route, concrete path, body) -> {persona: status}. srv-a and
#: the account belong to pA.
ALL = dict.fromkeys(PERSONAS, 200)
MATRIX = [
    ('GET', '/', '/', None, ALL),
    ('GET', '/v1', '/v1', None, ALL),
    ('GET', '/v1/prices', '/v1/prices', None, ALL),
    ('GET', '/v1/prices/history', '/v1/prices/history', None, ALL),
    ('GET', '/v1/flavor-prices', '/v1/flavor-prices?vcpus=2&memory_mb=4000',
     None, ALL),
    ('GET', '/v1/servers/{server_id}/bid', '/v1/servers/srv-a/bid', None,
     dict(ALL, **{'other project': 404})),
    ('PUT', '/v1/servers/{server_id}/bid', '/v1/servers/srv-a/bid',
     {'bid': '1.5'}, dict(ALL, reader=403, **{'other project': 404})),
    ('GET', '/v1/account', '/v1/account?project_id=pA', None,
     dict(ALL, **{'other project': 403})),
    ('GET', '/v1/account/ledger', '/v1/account/ledger?project_id=pA', None,
     dict(ALL, **{'other project': 403})),
    ('GET', '/v1/notices', '/v1/notices?project_id=pA', None,
     dict(ALL, **{'other project': 403})),
    ('POST', '/v1/accounts/{project_id}/credit', '/v1/accounts/pA/credit',
     {'amount': '1'}, {'reader': 403, 'member': 403, 'admin': 201,
                       'other project': 403, 'service': 403}),
    ('PUT', '/v1/reserve-price', '/v1/reserve-price',
     {'reserve_price': {'vcpus': '0.01'}},
     {'reader': 403, 'member': 403, 'admin': 200, 'other project': 403,
      'service': 403}),
    ('GET', '/v1/shares', '/v1/shares', None,
     {'reader': 403, 'member': 403, 'admin': 200, 'other project': 403,
      'service': 200}),
    # 1.2: planning and the owner's event history
    ('GET', '/v1/placement-score', '/v1/placement-score?flavor=spot.small',
     None, ALL),
    ('GET', '/v1/interruption-history',
     '/v1/interruption-history?flavor=spot.small', None, ALL),
    ('GET', '/v1/events', '/v1/events?project_id=pA', None,
     dict(ALL, **{'other project': 403})),
    # 1.3: an owner's interruption drill (srv-a's pending notice is
    # withdrawn before each persona's call: see PersonaMatrixTest.fresh)
    ('POST', '/v1/servers/{server_id}/interruption-drill',
     '/v1/servers/srv-a/interruption-drill', {'notice_seconds': 60},
     {'reader': 403, 'member': 202, 'admin': 202, 'other project': 404,
      'service': 403}),
    # 1.4: the owner acknowledges srv-a's pending notice (put back before
    # each persona's call: see PersonaMatrixTest.fresh)
    ('POST', '/v1/servers/{server_id}/interruption-ack',
     '/v1/servers/srv-a/interruption-ack', {},
     {'reader': 403, 'member': 202, 'admin': 202, 'other project': 404,
      'service': 403}),
    # last: srv-a then bids the default 0 (BidUnsetTest checks /v1/shares
    # stays 200 then)
    ('DELETE', '/v1/servers/{server_id}/bid', '/v1/servers/srv-a/bid', None,
     dict(ALL, reader=403, **{'other project': 404})),
]


class PersonaMatrixTest(_Base):

    def test_matrix_covers_every_route(self):
        routes = {(m, p) for m, p, _since in self.api.routes}
        self.assertEqual(routes, {(m, r) for m, r, _p, _b, _e in MATRIX})

    def fresh(self, route):
        """Each persona meets srv-a as the first one did: without a
        pending notice (the fixture's market notice, or the drill of the
        persona before), so a drill's answer is its policy's.
        """
        if route.endswith('/interruption-ack'):
            # the ack of the persona before interrupted srv-a (delete):
            # it runs again under its notice
            if 'srv-a' not in self.cloud.by_uuid:
                self.cloud.add('srv-a', 'pA', 1)
            for state in (models.PREEMPTED, models.CANCELLED):
                self.store.set_notice_state('srv-a', models.NOTICED,
                                            expected=state)
        if route.endswith('/interruption-drill'):
            self.store.set_notice_state('srv-a', models.CANCELLED)
            # and a second later (one drill per server and instant)
            now = self.api.clock() + 1
            self.api.clock = lambda: now

    def test_every_persona_on_every_endpoint(self):
        seen = {}
        for method, route, path, body, expected in MATRIX:
            for persona, token in PERSONAS.items():
                self.fresh(route)
                status, answer = self.call(method, path, token, body,
                                           LATEST)
                seen[(method, route, persona)] = status
                if status >= 400:
                    self.assertEqual(status, answer['errors'][0]['status'])
        want = {(m, r, p): code for m, r, _path, _b, e in MATRIX
                for p, code in e.items()}
        self.assertEqual({k: v for k, v in want.items() if seen[k] != v},
                         {k: v for k, v in seen.items() if want[k] != v})

    def test_reader_cannot_change_a_bid(self):
        for method in ('PUT', 'DELETE'):
            status, body = self.call(method, '/v1/servers/srv-a/bid',
                                     READER, {'bid': '9'}
                                     if method == 'PUT' else None, LATEST)
            self.assertEqual(403, status)
            self.assertIn('opie_market:bid:', body['errors'][0]['detail'])
        self.assertEqual('1', self.cloud.by_uuid['srv-a'].metadata[
            'opie:bid'])

    def _enforcer(self, policy_file=None, **oslo_policy):
        conf = cfg.ConfigOpts()
        opts.register_opts(conf)
        args = []
        if policy_file:
            args = ['--config-file', self._conf_file(policy_file)]
        # parsed first, as the market's services do: oslo.policy 4.5-4.6
        # (2025.1, 2025.2) looks for the policy file at the Enforcer's
        # creation
        conf(args)
        enf = policy.enforcer(conf)
        for name, value in oslo_policy.items():
            conf.set_override(name, value, 'oslo_policy')
        self.api.enforcer = enf
        return enf

    def _conf_file(self, rules):
        d = self.useFixture(fixtures.TempDir()).path
        with open(os.path.join(d, 'policy.yaml'), 'w') as f:
            json.dump(rules, f)
        path = os.path.join(d, 'market.conf')
        with open(path, 'w') as f:
            f.write('[oslo_policy]\npolicy_file = %s\n'
                    % os.path.join(d, 'policy.yaml'))
        return path

    def test_old_defaults_only_when_new_defaults_are_off(self):
        # One deprecation cycle: enforce_new_defaults=False OR-s the old
        # admin_or_owner with the new rule (a reader may set a bid again).
        self._enforcer(enforce_new_defaults=False)
        self.assertEqual(200, self.call('PUT', '/v1/servers/srv-a/bid',
                                        READER, {'bid': '2'})[0])
        self._enforcer()
        self.assertEqual(403, self.call('PUT', '/v1/servers/srv-a/bid',
                                        READER, {'bid': '3'})[0])

    def test_an_override_of_an_old_name_still_applies(self):
        self._enforcer({'opie_market:bid:set': '!'})
        # member of the project: forbidden by the operator's old rule
        status, _ = self.call('PUT', '/v1/servers/srv-a/bid', MEMBER,
                              {'bid': '2'})
        self.assertEqual(403, status)
        self.assertEqual(200, self.call('GET', '/v1/servers/srv-a/bid',
                                        MEMBER)[0])
