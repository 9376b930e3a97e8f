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
"""Tests of the devcloud Neutron stand-in
(opie_sched.devcloud.neutron_standin)."""

import json

import testtools

from opie_sched.devcloud import neutron_standin


class TestNeutronStandin(testtools.TestCase):

    def _call(self, method, path):
        seen = {}

        def start_response(status, headers):
            seen['status'] = status
        body = b''.join(neutron_standin.application(
            {'REQUEST_METHOD': method, 'PATH_INFO': path,
             'HTTP_HOST': 'h:1', 'wsgi.url_scheme': 'http'},
            start_response))
        return seen['status'], json.loads(body)

    def test_lists_are_empty(self):
        for path in ('/v2.0/ports', '/v2.0/networks.json',
                     '/v2.0/security-groups'):
            status, body = self._call('GET', path)
            self.assertEqual('200 OK', status)
            self.assertEqual([], list(body.values())[0])

    def test_quota_unlimited(self):
        status, body = self._call('GET', '/v2.0/quotas/p1')
        self.assertEqual('200 OK', status)
        self.assertEqual(-1, body['quota']['port'])

    def test_versions(self):
        status, body = self._call('GET', '/')
        self.assertEqual('http://h:1/v2.0/',
                         body['versions'][0]['links'][0]['href'])

    def test_writes_and_items_refused(self):
        for method, path in (('POST', '/v2.0/ports'),
                             ('DELETE', '/v2.0/ports/x'),
                             ('GET', '/v2.0/ports/x'), ('GET', '/v3/x')):
            status, body = self._call(method, path)
            self.assertEqual('404 Not Found', status)
            self.assertIn('stand-in', body['NeutronError']['message'])
