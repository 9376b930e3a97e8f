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
"""``opie_sched.wsgi.market:application`` behind a path endpoint.

Imported in a fresh interpreter, as uwsgi does, configured by the
environment only; the version document's links follow the path the
front end (Apache's ProxyPass in DevStack) mounts it at.
"""

import json
import os
import subprocess
import sys

import fixtures
import testtools

import tests

ROOT = tests.ROOT

SCRIPT = '''
import json, webob
from opie_sched.wsgi import market
r = webob.Request.blank('/', environ={'SCRIPT_NAME': '/spot-market'}
                        ).get_response(market.application)
print('RESULT ' + json.dumps({'status': r.status_int,
                              'body': r.json_body}))
'''


class MarketWSGITest(testtools.TestCase):

    def test_version_document_under_the_mount_path(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        clouds = os.path.join(tmp, 'clouds.yaml')
        with open(clouds, 'w') as f:
            f.write('clouds:\n  x:\n    auth:\n'
                    '      auth_url: http://127.0.0.1:9/v3\n'
                    '      username: u\n      password: p\n'
                    '      project_name: p\n')
        conf = os.path.join(tmp, 'opie_sched.conf')
        with open(conf, 'w') as f:
            f.write('[opie_market]\nconnection = sqlite:///%s/m.db\n'
                    'cloud = x\n' % tmp)
        env = dict(os.environ, PYTHONPATH=ROOT,
                   OS_CLIENT_CONFIG_FILE=clouds,
                   OPIE_MARKET_CONFIG=conf,
                   OPIE_MARKET_PASTE=os.path.join(
                       ROOT, 'etc', 'opie_sched', 'market-api-paste.ini'),
                   OPIE_MARKET_PIPELINE='noauth')
        proc = subprocess.run([sys.executable, '-c', SCRIPT], env=env,
                              cwd=tmp, capture_output=True, text=True,
                              timeout=120)
        lines = [ln for ln in proc.stdout.splitlines()
                 if ln.startswith('RESULT ')]
        self.assertEqual(1, len(lines), proc.stderr[-3000:])
        result = json.loads(lines[0][len('RESULT '):])
        self.assertEqual(200, result['status'])
        [version] = result['body']['versions']
        self.assertEqual('http://localhost/spot-market/v1/',
                         version['links'][0]['href'])
