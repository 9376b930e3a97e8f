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
"""Real OpenStack clients (python-openstackclient, openstacksdk and the
``opie-sched`` CLI) against an in-process Nova: the demo's
:class:`~opie_sched.demo.cloud.EmbeddedCloud` or a functional test
(``tests.functional.base.OpieNovaTestCase``).

Nova's API fixture stubs keystone: it builds the request context from
``X-Auth-User``/``X-Auth-Project-Id``/``X-Roles`` headers that only nova's
test client sends. Real clients authenticate here with keystoneauth's
``admin_token`` plugin (token ``user:project``, as nova's ``noauth2``
middleware reads it) and the compute endpoint of the fixture. Glance is
nova's in-memory GlanceFixture; a read-only Image API v2 endpoint in front
of it (through wsgi-intercept, like the compute API) lets ``openstack server
create --image`` look its image up.

Usage (an :class:`~opie_sched.demo.cloud.EmbeddedCloud` installs
:class:`RealClients` itself; a functional test does it with
``self.useFixture(RealClients(self))``)::

    cloud = EmbeddedCloud(hosts=2).start()
    alice = connection(cloud, 'alice:project-a')   # openstacksdk
    alice.compute.create_server(...)

Like the embedded cloud, this needs nova's functional-test fixtures and
their test-only dependencies (``fixtures``, ``wsgi-intercept``).
"""

import contextlib
import io
import json

import fixtures
from keystoneauth1 import loading
from keystoneauth1 import session as ks_session
import openstack
from openstack import service_description
from wsgi_intercept import interceptor

from nova.api import auth as nova_auth
from nova import context as nova_context

#: openstacksdk's proxy factory as the library ships it (nova's
#: OpenStackSDKFixture replaces it with one that gives Placement a generic
#: REST proxy; real clients here get the real Placement proxy back).
_REAL_MAKE_PROXY = service_description.ServiceDescription._make_proxy

IMAGE_ENDPOINT = 'http://image.opie-sched.test:80'


def _token_context(env, **kwargs):
    """The request context of nova's fixture, or of a ``user:project``
    token (``noauth2`` style) when nova's test headers are absent.
    """
    user = env.get('HTTP_X_AUTH_USER')
    if user is not None:
        project = env['HTTP_X_AUTH_PROJECT_ID']
        roles = env['HTTP_X_ROLES'].split(',')
    else:
        user, _, project = env.get('HTTP_X_AUTH_TOKEN', '').partition(':')
        roles = ['reader', 'member'] + (['admin'] if user == 'admin' else [])
    return nova_context.RequestContext(user, project or user,
                                       is_admin='admin' in roles,
                                       roles=roles, **kwargs)


class _ImageAPI:
    """GET-only Image API v2 over nova's GlanceFixture."""

    def __init__(self, glance):
        self.glance = glance

    @staticmethod
    def _image(img):
        hidden = ('properties', 'deleted', 'deleted_at', 'is_public')
        body = {k: v for k, v in img.items() if k not in hidden}
        body.update(img.get('properties') or {})
        for key in ('created_at', 'updated_at'):
            if body.get(key) is not None:
                body[key] = body[key].isoformat()
        return body

    def __call__(self, environ, start_response):
        path = environ.get('PATH_INFO', '').rstrip('/')
        status, body = '404 Not Found', {'message': 'not found'}
        if path in ('', '/v2'):
            status, body = '200 OK', {'versions': [{
                'id': 'v2.16', 'status': 'CURRENT',
                'links': [{'rel': 'self',
                           'href': IMAGE_ENDPOINT + '/v2/'}]}]}
        elif path == '/v2/images':
            status, body = '200 OK', {'images': [
                self._image(i) for i in self.glance.detail(None)]}
        elif path.startswith('/v2/images/'):
            image = self.glance.images.get(path.rsplit('/', 1)[1])
            if image is not None:
                status, body = '200 OK', self._image(image)
        data = json.dumps(body).encode()
        start_response(status, [('Content-Type', 'application/json'),
                                ('Content-Length', str(len(data)))])
        return [data]


def parse_token(token):
    """``(user, project)`` of a ``user:project`` token.

    :raises ValueError: ``token`` is not text of that form.
    """
    if not isinstance(token, str):
        raise ValueError('token must be text "user:project", got %r'
                         % (token,))
    user, sep, project = token.partition(':')
    if not sep or not user or not project or ':' in project:
        raise ValueError('token must be "user:project" (both non-empty, '
                         'one colon), got %r' % token)
    return user, project


def real_clients_enabled():
    """Whether a :class:`RealClients` fixture is in use (nova's API then
    accepts ``user:project`` tokens).
    """
    return (nova_auth.NovaKeystoneContext._create_context
            is _token_context)


def connection(cloud, token='admin:admin'):
    """An openstacksdk connection to ``cloud``'s Nova as ``token``.

    The user ``admin`` gets the ``admin`` role (all projects' servers,
    os-hypervisors, flavor extra specs); any other user is a ``member``
    and ``reader`` of its project. There is no Keystone: the compute
    endpoint is the fixture's, the session's token is sent as is.

    :param cloud: a started :class:`~opie_sched.demo.cloud.EmbeddedCloud`
        (or nova ``_IntegratedTestBase`` test) with a :class:`RealClients`
        fixture in use.
    :param token: ``"user:project"``.
    :returns: ``openstack.connection.Connection``.
    :raises ValueError: a malformed token.
    :raises RuntimeError: no :class:`RealClients` fixture is in use, so
        Nova would refuse the token.
    """
    parse_token(token)
    if not real_clients_enabled():
        raise RuntimeError('nova does not accept "user:project" tokens: '
                           'use a RealClients(cloud) fixture first, e.g. '
                           'cloud.useFixture(RealClients(cloud))')
    auth = loading.get_plugin_loader('admin_token').load_from_options(
        endpoint=cloud.api_fixture.base_url, token=token)
    # No Keystone, hence no catalog: Placement's and the Image API's
    # endpoints are given (a clouds.yaml would say the same).
    return openstack.connection.Connection(
        session=ks_session.Session(auth=auth),
        placement_endpoint_override=cloud.placement_fixture.endpoint,
        placement_api_version='1',
        image_endpoint_override=IMAGE_ENDPOINT + '/v2')


class RealClients(fixtures.Fixture):
    """Let real clients reach the cloud's Nova; see the module docstring.

    :param test: a started nova ``_IntegratedTestBase`` test case, e.g.
        an :class:`~opie_sched.demo.cloud.EmbeddedCloud`.
    """

    def __init__(self, test):
        super().__init__()
        self.test = test

    def _setUp(self):
        self.useFixture(fixtures.MonkeyPatch(
            'nova.api.auth.NovaKeystoneContext._create_context',
            _token_context))
        intercept = interceptor.RequestsInterceptor(
            lambda: _ImageAPI(self.test.glance), url=IMAGE_ENDPOINT)
        intercept.install_intercept()
        self.addCleanup(intercept.uninstall_intercept)
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_IMAGE_ENDPOINT_OVERRIDE', IMAGE_ENDPOINT + '/v2'))
        # Placement, as the in-process fixture serves it, for openstacksdk's
        # typed Placement proxy (nova's own report client is patched by
        # its PlacementFixture and does not use openstacksdk).
        self.useFixture(fixtures.MockPatchObject(
            service_description.ServiceDescription, '_make_proxy',
            _REAL_MAKE_PROXY))
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_PLACEMENT_ENDPOINT_OVERRIDE',
            self.test.placement_fixture.endpoint))
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_PLACEMENT_API_VERSION', '1'))
        self.auth_args = [
            '--os-auth-type', 'admin_token', '--os-token', 'admin:admin',
            '--os-endpoint', self.test.api_fixture.base_url]

    def connection(self, token='admin:admin'):
        """An openstacksdk connection as ``token`` (see
        :func:`connection`).
        """
        return connection(self.test, token)

    def openstack(self, *args):
        """Run ``openstack ARGS`` in-process; parsed JSON output (with
        ``-f json`` in ARGS), else the text. Fails the test on a non-zero
        exit code.
        """
        from openstackclient import shell
        argv = self.auth_args + ['--os-compute-api-version', '2.96'] + list(
            args)
        return self._run('openstack', shell.main, argv, args)

    def opie_sched(self, *args):
        """Run ``opie-sched ARGS`` in-process (its console script's
        function), like :meth:`openstack`.
        """
        from importlib import metadata
        [script] = metadata.entry_points(group='console_scripts',
                                         name='opie-sched')
        return self._run('opie-sched', script.load(),
                         self.auth_args + list(args), args)

    def _run(self, prog, main, argv, args):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
        if rc:
            self.test.fail('%s %s exited %s: %s%s' % (
                prog, ' '.join(args), rc, err.getvalue(), out.getvalue()))
        text = out.getvalue()
        return json.loads(text) if 'json' in args else text
