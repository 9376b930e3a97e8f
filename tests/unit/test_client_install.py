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
"""``pip install opie_sched[client]`` installs no nova, and what it
installs is enough for the 'openstack spot' plugin and the Tempest plugin.

Two checks: the requirement files (nova only in the extras of the
deployables that run inside or beside nova), and the import graph of the
client-side modules in a fresh interpreter that refuses to import nova,
each imported module's distribution being one that the base requirements
and the ``client`` extra (or tempest, for the Tempest plugin) bring.
"""

import configparser
import importlib.metadata
import importlib.util
import json
import os
import pkgutil
import shutil
import subprocess
import sys

from packaging import markers
from packaging import requirements
import testtools

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

#: The modules a client host or a Tempest node imports.
CLIENT_MODULES = ('opie_sched.services.market.client',
                  'opie_sched.services.market.osc')
TEMPEST_PACKAGE = 'opie_sched_tempest_plugin'

#: Extras that may (must) bring nova.
NOVA_EXTRAS = {'scheduler', 'demo', 'devcloud'}

_PROBE = '''
import importlib, json, sys

class NoNova:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('nova', 'placement'):
            raise ImportError('must not import ' + name)
        return None

sys.meta_path.insert(0, NoNova())
tolerant = sys.argv[1] == '--tolerant'
for name in sys.argv[2:]:
    try:
        importlib.import_module(name)
    except Exception:
        # --tolerant: a third-party submodule that only imports after its
        # package (its own circular imports)
        if not tolerant:
            raise
files = {}
for name, mod in list(sys.modules.items()):
    files[name] = getattr(mod, '__file__', None)
print(json.dumps(files))
'''


def _lines(text):
    return [line.strip() for line in text.splitlines()
            if line.strip() and not line.strip().startswith('#')]


def base_requirements():
    with open(os.path.join(ROOT, 'requirements.txt')) as f:
        return [requirements.Requirement(r) for r in _lines(f.read())]


def extras():
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, 'setup.cfg'))
    return {name: [requirements.Requirement(r) for r in _lines(value)]
            for name, value in cfg['extras'].items()}


def _canon(name):
    return name.lower().replace('_', '-').replace('.', '-')


def closure(names):
    """Canonical names of the installed distributions ``names`` bring
    (their unconditional requirements, transitively).
    """
    seen = set()
    todo = [_canon(n) for n in names]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        for text in dist.requires or ():
            req = requirements.Requirement(text)
            if req.marker is not None and not req.marker.evaluate(
                    {'extra': ''}):
                continue
            todo.append(_canon(req.name))
    return seen


def _distributions_of(files):
    """Canonical distribution names of the imported third-party modules
    (stdlib and this repository's own modules left out).
    """
    by_top = importlib.metadata.packages_distributions()
    stdlib = set(sys.stdlib_module_names)
    found = {}
    for name, path in files.items():
        top = name.split('.')[0]
        if top in stdlib or top.startswith('_') or path is None:
            continue
        if os.path.abspath(path).startswith(ROOT + os.sep):
            continue
        dists = by_top.get(top)
        found[top] = {_canon(d) for d in dists} if dists else {top}
    return found


def _probe(modules, tolerant=False):
    out = subprocess.run([sys.executable, '-c', _PROBE,
                          '--tolerant' if tolerant else '--strict']
                         + list(modules),
                         capture_output=True, text=True, check=False,
                         cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT))
    return out.returncode, out.stdout, out.stderr


class RequirementsTest(testtools.TestCase):

    def test_nova_is_in_no_base_requirement(self):
        names = {_canon(r.name) for r in base_requirements()}
        self.assertNotIn('nova', names)
        self.assertNotIn('openstack-placement', names)

    def test_nova_only_in_the_extras_that_run_it(self):
        with_nova = {name for name, reqs in extras().items()
                     if 'nova' in {_canon(r.name) for r in reqs}}
        self.assertEqual(NOVA_EXTRAS, with_nova)

    def test_client_extra_brings_osc_lib(self):
        self.assertIn('osc-lib', {_canon(r.name)
                                  for r in extras()['client']})

    def test_markers_are_plain(self):
        # closure() evaluates markers with no extra; a marker in our own
        # lists would escape these checks
        for req in base_requirements() + extras()['client']:
            self.assertIsNone(req.marker, str(req))
        self.assertIsInstance(markers.default_environment(), dict)


class ClientImportsTest(testtools.TestCase):
    """The modules a client host and a Tempest node import load without
    nova, and come from the base requirements and the client extra.
    """

    def _allowed(self, extra, *more):
        return closure([r.name for r in base_requirements()]
                       + [r.name for r in extras()[extra]]
                       + list(more)) | {'opie-sched'}

    def _check(self, modules, *more, extra='client'):
        """Import ``modules``: nothing of nova, and every other third-party
        module from the base, the client extra or ``more``'s
        distributions, or imported optionally by one of those (e.g.
        keystoneauth1 imports osprofiler when it is there): loaded again
        when only the declared packages' modules are imported.
        """
        files = self._import(modules)
        self.assertEqual([], sorted(m for m in files
                                    if m.split('.')[0] in ('nova',
                                                           'placement')))
        allowed = self._allowed(extra, *more)
        tops = _distributions_of(files)
        declared = {top for top, dists in tops.items() if dists & allowed}
        optional = {m.split('.')[0] for m in self._import(
            [m for m in files if m.split('.')[0] in declared],
            tolerant=True)}
        missing = {top: dists for top, dists in tops.items()
                   if top not in declared and top not in optional}
        self.assertEqual({}, missing)

    def _import(self, modules, tolerant=False):
        code, out, err = _probe(modules, tolerant)
        self.assertEqual(0, code, err[-3000:])
        return json.loads(out.strip().splitlines()[-1])

    def test_osc_plugin_and_client(self):
        self._check(CLIENT_MODULES)

    @testtools.skipUnless(importlib.util.find_spec('tempest'),
                          'tempest is not installed here (test-requirements '
                          'has it; tox -e tempest runs it too)')
    def test_tempest_plugin(self):
        import opie_sched_tempest_plugin
        modules = [TEMPEST_PACKAGE] + [
            m.name for m in pkgutil.walk_packages(
                opie_sched_tempest_plugin.__path__, TEMPEST_PACKAGE + '.')
            if m.name != TEMPEST_PACKAGE + '.runner']
        self.assertIn(TEMPEST_PACKAGE + '.plugin', modules)
        self.assertIn(TEMPEST_PACKAGE + '.tests.scenario.test_market_real',
                      modules)
        self._check(modules, 'tempest')

    def test_services_beside_nova_need_no_nova(self):
        # opie-market and opie-autoscaler with opie_sched[market],
        # opie-repacker with opie_sched[repacker] (doc/source/install)
        self._check(['opie_sched.cmd.market_service',
                     'opie_sched.services.market.service',
                     'opie_sched.services.market.api.app',
                     'opie_sched.cmd.autoscaler',
                     'opie_sched.services.autoscaler.service'],
                    extra='market')
        self._check(['opie_sched.cmd.repacker',
                     'opie_sched.services.repacker.service'],
                    extra='repacker')

    def test_probe_catches_nova(self):
        # the probe itself: a module importing nova fails it
        code, _, err = _probe(['opie_sched.scheduler.cell_reads'])
        self.assertNotEqual(0, code)
        self.assertIn('must not import nova', err)


#: What a client host must not get: the services' concurrency stack.
NOT_ON_A_CLIENT = ('eventlet', 'oslo-messaging', 'oslo-service')

_CLIENT_PROBE = '''
import importlib.metadata as m, json
from cliff import commandmanager
names = sorted({d.metadata['Name'].lower().replace('_', '-')
                .replace('.', '-') for d in m.distributions()})
# the 'openstack spot' commands, loaded as python-openstackclient does
mgr = commandmanager.CommandManager('openstack.spot.v1')
loaded = []
for name, ep in sorted(mgr):
    loaded.append(name)
    ep.load()
[ext] = m.entry_points(group='openstack.cli.extension', name='spot')
plugin = ext.load()
print(json.dumps({'dists': names, 'spot': loaded,
                  'api_version': plugin.API_VERSION_OPTION}))
'''


class CleanVenvInstallTest(testtools.TestCase):
    """``pip install '.[client]'`` in a new virtualenv (PyPI, or this
    machine's pip configuration; bounded by a timeout): none of
    :data:`NOT_ON_A_CLIENT` is installed, and every ``openstack spot``
    command of the plugin loads.
    """

    #: What the install reads from the checkout; copied, so that the build
    #: never rewrites the checkout's opie_sched.egg-info, which the tests
    #: running beside this one read their entry points from.
    SOURCES = ('opie_sched', 'opie_sched_tempest_plugin', 'etc', 'setup.cfg',
               'setup.py', 'pyproject.toml', 'README.rst', 'LICENSE',
               'requirements.txt')

    def _source_copy(self, tmp):
        src = os.path.join(tmp, 'src')
        os.mkdir(src)
        for name in self.SOURCES:
            path = os.path.join(ROOT, name)
            if os.path.isdir(path):
                shutil.copytree(path, os.path.join(src, name),
                                ignore=shutil.ignore_patterns('__pycache__'))
            elif os.path.exists(path):
                shutil.copy2(path, src)
        return src

    def test_client_extra_in_a_clean_venv(self):
        import fixtures
        tmp = self.useFixture(fixtures.TempDir()).path
        venv = os.path.join(tmp, 'v')
        # A copy of the sources without git: pbr takes the version of the
        # checkout's own install.
        src = self._source_copy(tmp)
        version = importlib.metadata.version('opie_sched')
        # The venv gets no pip of its own (nothing of it is checked): this
        # pip installs into it (--python). Nothing is byte-compiled ahead
        # (the probe compiles what it imports) and pbr writes no ChangeLog
        # or AUTHORS from the git history: what is installed, and from
        # where, is unchanged: a third of the CPU time (9.8 s, not 28.9).
        subprocess.run([sys.executable, '-m', 'venv', '--without-pip',
                        venv], check=True, timeout=120)
        python = os.path.join(venv, 'bin', 'python')
        pip = subprocess.run(
            [sys.executable, '-m', 'pip', '--python', python, 'install',
             '-q', '--no-compile', '--disable-pip-version-check',
             src + '[client]'], capture_output=True, text=True,
            timeout=900, env=dict(os.environ, SKIP_GENERATE_AUTHORS='1',
                                  SKIP_WRITE_GIT_CHANGELOG='1',
                                  PBR_VERSION=version))
        self.assertEqual(0, pip.returncode, pip.stderr[-3000:])
        probe = subprocess.run([python, '-c', _CLIENT_PROBE],
                               capture_output=True, text=True, timeout=120,
                               cwd=venv)
        self.assertEqual(0, probe.returncode, probe.stderr[-3000:])
        out = json.loads(probe.stdout.strip().splitlines()[-1])
        self.assertEqual([], [n for n in NOT_ON_A_CLIENT
                              if n in out['dists']])
        self.assertNotIn('nova', out['dists'])
        self.assertIn('opie-sched', out['dists'])
        self.assertIn('spot price list', out['spot'])
        self.assertIn('spot bid set', out['spot'])
        self.assertEqual('os_spot_api_version', out['api_version'])
