"""Real OpenStack clients (python-openstackclient, openstacksdk and the
``opie-sched`` CLI) against the in-process Nova of a functional test.

Nova's API fixture stubs keystone: it builds the request context from
``X-Auth-User``/``X-Auth-Project-Id``/``X-Roles`` headers that only nova's
test client sends. Real clients authenticate here with keystoneauth's
``admin_token`` plugin (token ``user:project``, as nova's ``noauth2``
middleware reads it) and the compute endpoint of the fixture. Glance is
nova's in-memory GlanceFixture; a read-only Image API v2 endpoint in front
of it (through wsgi-intercept, like the compute API) lets ``openstack server
create --image`` look its image up.
"""

import contextlib
import io
import json

import fixtures
from wsgi_intercept import interceptor

from nova import context as nova_context

IMAGE_ENDPOINT = 'http://image.opie-sched.test:80'


def _token_context(env, **kwargs):
    """The request context of nova's fixture, or of a ``user:project``
    token (``noauth2`` style) when nova's test headers are absent."""
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


class RealClients(fixtures.Fixture):
    """Let real clients reach the test's Nova; see the module docstring.

    :param test: a started nova ``_IntegratedTestBase`` test case.
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
        self.auth_args = [
            '--os-auth-type', 'admin_token', '--os-token', 'admin:admin',
            '--os-endpoint', self.test.api_fixture.base_url]

    def openstack(self, *args):
        """Run ``openstack ARGS`` in-process; parsed JSON output (with
        ``-f json`` in ARGS), else the text. Fails the test on a non-zero
        exit code."""
        from openstackclient import shell
        argv = self.auth_args + ['--os-compute-api-version', '2.96'] + list(
            args)
        return self._run('openstack', shell.main, argv, args)

    def opie_sched(self, *args):
        """Run ``opie-sched ARGS`` in-process, like :meth:`openstack`."""
        from opie_sched.cmd import cli
        return self._run('opie-sched', cli.main, self.auth_args + list(args),
                         args)

    def _run(self, prog, main, argv, args):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
        if rc:
            self.test.fail('%s %s exited %s: %s%s' % (
                prog, ' '.join(args), rc, err.getvalue(), out.getvalue()))
        text = out.getvalue()
        return json.loads(text) if 'json' in args else text
