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
"""A stand-in for Neutron (NOT Neutron): the few read calls nova makes for
servers booted with ``--nic none``.

nova still talks to Neutron for servers without networks: a delete lists
the server's ports (an error leaves the server in ERROR), a boot without
``networks`` (microversion 2.1, as Tempest does) lists the project's
networks and reads its quota, the server views list its ports for security
groups. This WSGI application answers exactly those reads:

* ``GET /`` and ``GET /v2.0``: the version document;
* ``GET /v2.0/quotas/<project>``: every quota unlimited (-1);
* ``GET /v2.0/<collection>``: an empty list (no networks, ports, subnets,
  security groups, floating IPs, extensions);
* anything else: 404 with a message naming the stand-in.

It is not registered in the Keystone catalog (nova reaches it through
``[neutron] endpoint_override``), so clients do not take it for Neutron.
It checks no token: it holds no data and accepts no write.
"""

import json

NAME = 'devcloud Neutron stand-in'

#: Quota answered for every project (unlimited).
QUOTA = {name: -1 for name in (
    'network', 'subnet', 'port', 'router', 'floatingip', 'security_group',
    'security_group_rule', 'subnetpool', 'rbac_policy', 'trunk')}


def _reply(start_response, status, body):
    data = json.dumps(body).encode('utf-8')
    start_response(status, [('Content-Type', 'application/json'),
                            ('Content-Length', str(len(data)))])
    return [data]


def _not_found(start_response, method, path):
    return _reply(start_response, '404 Not Found', {'NeutronError': {
        'type': 'HTTPNotFound', 'detail': '',
        'message': '%s %s: not provided by the %s (servers on the devcloud '
                   'have no networks: use --nic none)' % (method, path,
                                                          NAME)}})


def _versions(environ):
    host = environ.get('HTTP_HOST') or '%s:%s' % (
        environ.get('SERVER_NAME', 'localhost'),
        environ.get('SERVER_PORT', '80'))
    href = '%s://%s/v2.0/' % (environ.get('wsgi.url_scheme', 'http'), host)
    return {'versions': [{'id': 'v2.0', 'status': 'CURRENT',
                          'links': [{'href': href, 'rel': 'self'}]}]}


def application(environ, start_response):
    """The WSGI application (see the module docstring)."""
    method = environ.get('REQUEST_METHOD', 'GET')
    path = environ.get('PATH_INFO', '/') or '/'
    parts = [p for p in path.split('/') if p]
    if parts and parts[-1].endswith('.json'):
        parts[-1] = parts[-1][:-len('.json')]
    if method not in ('GET', 'HEAD'):
        return _not_found(start_response, method, path)
    if not parts:
        return _reply(start_response, '300 Multiple Choices',
                      _versions(environ))
    if parts[0] != 'v2.0':
        return _not_found(start_response, method, path)
    if len(parts) == 1:
        return _reply(start_response, '200 OK', {'resources': []})
    if parts[1] == 'quotas' and len(parts) in (3, 4):
        return _reply(start_response, '200 OK', {'quota': dict(QUOTA)})
    if len(parts) == 2:
        return _reply(start_response, '200 OK', {parts[1]: []})
    return _not_found(start_response, method, path)
