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
"""Flavor extra specs of the ``opie`` namespace are validated by
nova-api (entry point ``nova.api.extra_spec_validators``, microversion
2.86 and later).
"""

from tempest.lib.common.utils import data_utils
from tempest.lib import decorators

from opie_sched_tempest_plugin import base

VALIDATED = '2.86'


class OpieExtraSpecsTest(base.OpieBaseTest):
    """Malformed ``opie:`` extra specs get 400 and change nothing; valid
    ones are accepted.
    """

    credentials = ['admin']

    @classmethod
    def setup_clients(cls):
        super(base.OpieBaseTest, cls).setup_clients()
        cls.admin = cls._connect(cls.os_admin.credentials)

    @classmethod
    def resource_setup(cls):
        super(base.OpieBaseTest, cls).resource_setup()
        name = data_utils.rand_name('opie-specs')
        _, body = cls.call(cls.admin, 'POST', '/flavors', json={
            'flavor': {'name': name, 'ram': 64, 'vcpus': 1, 'disk': 1}})
        cls.flavor_id = body['flavor']['id']
        cls.addClassResourceCleanup(cls.call, cls.admin, 'DELETE',
                                    '/flavors/%s' % cls.flavor_id)

    def _specs(self):
        _, body = self.call(self.admin, 'GET', '/flavors/%s/os-extra_specs'
                            % self.flavor_id, VALIDATED)
        return body['extra_specs']

    def _set(self, specs):
        status, body = self.call(
            self.admin, 'POST', '/flavors/%s/os-extra_specs'
            % self.flavor_id, VALIDATED, json={'extra_specs': specs},
            ok=None)
        return status, body

    @decorators.idempotent_id('3f2e1d0c-9b8a-4c7d-9e6f-5a4b3c2d1e05')
    def test_malformed_opie_specs_rejected(self):
        for specs in ({'opie:preemptible': 'perhaps'},
                      {'opie:premptible': 'true'},
                      {'opie:bid': 'a lot'},
                      {'opie:bid': '-1'},
                      {'opie:price': '1e3'},
                      {'opie:bid': '0.5', 'opie:unknown': 'x'}):
            status, body = self._set(specs)
            self.assertEqual(400, status, '%s accepted: %s' % (specs, body))
            self.assertEqual({}, self._specs(),
                             'a rejected request changed the flavor')

    @decorators.idempotent_id('7a6b5c4d-3e2f-4a1b-8c9d-0e1f2a3b4c06')
    def test_valid_opie_specs_accepted(self):
        specs = {'opie:preemptible': 'false', 'opie:bid': '0.05',
                 'opie:price': '0.18'}
        status, body = self._set(specs)
        self.assertEqual(200, status, body)
        self.assertEqual(specs, self._specs())
