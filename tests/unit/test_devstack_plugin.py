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
"""devstack/plugin.sh run with bash, DevStack's functions stubbed.

DevStack's own functions (``iniset``, ``is_service_enabled``,
``write_uwsgi_config``, ``get_or_create_endpoint``...) are replaced by
stubs that keep real ini files or record their calls; the plugin's
phases (``stack post-config``, ``stack extra``, ``stack test-config``)
run in bash as ``stack.sh`` runs them, each in a fresh shell, and the
rendered files are checked. ``opie-sched devcloud scheduler-conf`` and
``opie-sched provider-config`` are the real commands. The environment is
the ``local.conf`` snippet of doc/source/install/devstack.rst, and the
tempest.conf that page shows is compared with the rendered one.
"""

import configparser
import getpass
import os
import re
import shutil
import subprocess
import sys

import fixtures
from oslo_config import cfg
import testtools

from opie_sched.common import credentials
from opie_sched.conf import repacker as repacker_opts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
DOC = os.path.join(ROOT, 'doc', 'source', 'install', 'devstack.rst')

#: A small ini editor standing in for DevStack's inifile functions: keeps
#: repeated keys (iniset_multiline, iniadd) as DevStack does.
FAKEINI = r'''
import os, sys

def load(path):
    secs = {}
    if os.path.exists(path):
        cur = None
        for line in open(path).read().splitlines():
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            if line.startswith('['):
                cur = line[1:-1]
                secs.setdefault(cur, [])
                continue
            k, _, v = line.partition('=')
            secs[cur].append((k.strip(), v.strip()))
    return secs

def save(path, secs):
    with open(path, 'w') as f:
        for sec, items in secs.items():
            f.write('[%s]\n' % sec)
            for k, v in items:
                f.write('%s = %s\n' % (k, v))
            f.write('\n')

cmd, path, sec, opt = sys.argv[1:5]
vals = sys.argv[5:]
secs = load(path)
items = secs.setdefault(sec, [])
old = [v for k, v in items if k == opt]
if cmd == 'get':
    print(old[0] if old else '')
    sys.exit(0)
if cmd == 'add':
    vals = old + [w for v in vals for w in v.split()]
kept = [(k, v) for k, v in items if k != opt]
secs[sec] = kept + [(opt, v) for v in vals]
save(path, secs)
'''

STUBS = r'''
_rec() { printf '%s\n' "$*" >> "$CALLS"; }
is_service_enabled() {
    local s
    for s in "$@"; do
        [[ " $ENABLED_SERVICES " == *" $s "* ]] && return 0
    done
    return 1
}
trueorfalse() {
    local v=${!2:-$1}
    case "$v" in
        1|yes|Yes|true|True|TRUE|on|On) echo True ;;
        0|no|No|false|False|FALSE|off|Off) echo False ;;
        *) echo "$1" ;;
    esac
}
get_python_exec_prefix() { echo /usr/local/bin; }
iniset() { "$PY" "$FAKEINI" set "$@"; }
iniset_multiline() { "$PY" "$FAKEINI" set "$@"; }
iniadd() { "$PY" "$FAKEINI" add "$@"; }
iniget() { "$PY" "$FAKEINI" get "$@"; }
sudo() { "$@"; }
echo_summary() { :; }
die() { echo "die: $*" >&2; exit 1; }
setup_develop() { _rec setup_develop "$@"; }
pip_install() { _rec pip_install "$@"; }
run_process() { _rec run_process "$@"; }
stop_process() { _rec stop_process "$@"; }
recreate_database() { _rec recreate_database "$@"; }
database_connection_url() { echo "mysql+pymysql://root:pw@127.0.0.1/$1"; }
create_service_user() { _rec create_service_user "$@"; }
configure_keystone_authtoken_middleware() {
    _rec configure_keystone_authtoken_middleware "$@"
}
get_or_create_service() { _rec get_or_create_service "$@"; echo SVC-ID; }
get_or_create_endpoint() { _rec get_or_create_endpoint "$@"; }
iniset_rpc_backend() {
    _rec iniset_rpc_backend "$@"
    iniset "$2" DEFAULT transport_url rabbit://stackrabbit:pw@127.0.0.1:5672/
}
write_uwsgi_config() {
    _rec write_uwsgi_config "$@"
    rm -f "$1"
    iniset "$1" uwsgi module "$2"
    iniset "$1" uwsgi socket "/var/run/uwsgi/$5.socket"
}
remove_uwsgi_config() { _rec remove_uwsgi_config "$@"; }
openstack() {
    _rec openstack "$@"
    local all="$*" name
    case "$all" in
        *"flavor show "*.preemptible*) return 1 ;;
        *"registered limit list "*)
            # Keystone's registered limits: the names in $LIMITS
            name=${all##*--resource-name }
            name=${name%% *}
            if grep -qx -- "$name" "$LIMITS" 2>/dev/null; then
                echo "ID-$name"
            fi ;;
        *"registered limit create "*) printf '%s\n' "${@: -1}" >> "$LIMITS" ;;
    esac
    return 0
}
'''

#: opie-sched as $OPIE_SCHED_BIN_DIR holds it: the real command for the
#: configuration it renders, a recorded call for what needs a cloud.
WRAPPER = r'''#!/bin/bash
case "$1 $2" in
    "devcloud scheduler-conf"|"provider-config "*)
        exec "{bin}/{name}" "$@" ;;
esac
printf '%s\n' "{name} $*" >> "$CALLS"
'''


def doc_blocks():
    """The local.conf snippet and the tempest.conf of the install guide's
    Tempest section (the two literal blocks after its ``local.conf``).
    """
    text = open(DOC).read()
    text = text[text.index('\nTempest\n'):]
    blocks = re.findall(r'::\n\n((?:    .*\n|\n)+)', text)
    local, tempest = [b for b in blocks if '[' in b][:2]
    return local, tempest


def parse_local_conf(block):
    """``(services, variables)`` of a ``[[local|localrc]]`` block."""
    services, variables = [], {}
    for line in block.splitlines():
        line = line.strip()
        if line.startswith('enable_service '):
            services += line.split()[1:]
        elif re.match(r'^[A-Z_]+=', line):
            key, _, value = line.partition('=')
            variables[key] = value
    return services, variables


def read_ini(path):
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    with open(path) as f:
        parser.read_file(f)
    return parser


class DevStackPluginTest(testtools.TestCase):
    """The phases of devstack/plugin.sh and the files they render."""

    def setUp(self):
        super().setUp()
        if not shutil.which('bash'):
            self.skipTest('no bash')  # pragma: no cover
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.bin = os.path.join(self.tmp, 'bin')
        os.makedirs(self.bin)
        real_bin = os.path.dirname(sys.executable)
        for name in ('opie-sched', 'opie-market', 'opie-scheduler',
                     'opie-repacker'):
            path = os.path.join(self.bin, name)
            with open(path, 'w') as f:
                f.write(WRAPPER.replace('{bin}', real_bin)
                        .replace('{name}', name))
            os.chmod(path, 0o755)
        self.fakeini = os.path.join(self.tmp, 'fakeini.py')
        with open(self.fakeini, 'w') as f:
            f.write(FAKEINI)
        self.stubs = os.path.join(self.tmp, 'stubs.sh')
        with open(self.stubs, 'w') as f:
            f.write(STUBS)
        self.calls = os.path.join(self.tmp, 'calls')
        self.tempest_conf = os.path.join(self.tmp, 'tempest.conf')
        self.opie_conf = os.path.join(self.tmp, 'etc', 'opie_sched',
                                      'opie_sched.conf')
        self.uwsgi_conf = os.path.join(self.tmp, 'etc', 'opie_sched',
                                       'market-api-uwsgi.ini')
        self.nova_conf = os.path.join(self.tmp, 'etc', 'nova', 'nova.conf')
        os.makedirs(os.path.dirname(self.nova_conf))
        open(self.nova_conf, 'w').close()

    def stack(self, services, variables, phases=('post-config', 'extra',
                                                  'test-config')):
        """Run the phases, each in a new bash as stack.sh sources the
        plugin, with DevStack's default services plus ``services``.
        """
        env = {
            'PATH': os.environ['PATH'],
            'HOME': self.tmp,
            'PYTHONPATH': os.environ.get('PYTHONPATH', ''),
            'PY': sys.executable, 'FAKEINI': self.fakeini,
            'CALLS': self.calls,
            'LIMITS': os.path.join(self.tmp, 'registered-limits'),
            'ENABLED_SERVICES': ' '.join(
                ['key', 'mysql', 'rabbit', 'etcd3', 'g-api', 'placement-api',
                 'n-api', 'n-cond', 'n-sch', 'n-cpu', 'nova'] + services),
            'NOVA_CONF': self.nova_conf,
            'NOVA_CONF_DIR': os.path.dirname(self.nova_conf),
            'NOVA_STATE_PATH': os.path.join(self.tmp, 'nova'),
            'PLACEMENT_CONF': os.path.join(self.tmp, 'placement.conf'),
            'TEMPEST_CONFIG': self.tempest_conf,
            'DATA_DIR': os.path.join(self.tmp, 'data'),
            'OPIE_SCHED_CONF_DIR': os.path.dirname(self.opie_conf),
            'OPIE_SCHED_BIN_DIR': self.bin,
            'SERVICE_HOST': '192.0.2.10', 'SERVICE_PROTOCOL': 'http',
            'SERVICE_LISTEN_ADDRESS': '0.0.0.0',
            'REGION_NAME': 'RegionOne', 'STACK_USER': getpass.getuser(),
            'ENABLE_DEBUG_LOG_LEVEL': 'True',
            'NOVA_FILTERS': 'ComputeFilter,ImagePropertiesFilter',
        }
        env.update(variables)
        for phase in phases:
            script = ('set -e; source "$1"; source "$2"; '
                      'source "$3" stack %s' % phase)
            proc = subprocess.run(
                ['bash', '-c', script, 'bash', self.stubs,
                 os.path.join(ROOT, 'devstack', 'settings'),
                 os.path.join(ROOT, 'devstack', 'plugin.sh')],
                env=env, capture_output=True, text=True)
            self.assertEqual(0, proc.returncode,
                             '%s: %s' % (phase, proc.stderr[-3000:]))

    def calls_of(self, name):
        if not os.path.exists(self.calls):
            return []
        with open(self.calls) as f:
            return [line.split()[1:] for line in f.read().splitlines()
                    if line.split()[0] == name]

    def test_install_guide_local_conf(self):
        local, expected = doc_blocks()
        services, variables = parse_local_conf(local)
        self.stack(services, variables)
        rendered = read_ini(self.tempest_conf)
        shown = configparser.ConfigParser(interpolation=None)
        shown.read_string(expected)
        for section in shown.sections():
            for key, value in shown.items(section):
                if key == 'repacker_command':
                    continue  # the paths of this test's DevStack
                self.assertEqual(value, rendered.get(section, key),
                                 '[%s] %s' % (section, key))
        self.assertEqual(
            '%s/opie-repacker --config-file %s' % (self.bin, self.opie_conf),
            rendered.get('opie', 'repacker_command'))
        # Every [opie] option the page shows is rendered, none more.
        self.assertEqual(sorted(shown.options('opie')),
                         sorted(rendered.options('opie')))

    def test_features_follow_what_was_deployed(self):
        self.stack(['tempest'], {'OPIE_SCHED_ENABLE_SCHEDULER': 'False'})
        conf = read_ini(self.tempest_conf)
        self.assertEqual('False', conf.get('service_available',
                                           'opie_market'))
        for flag in ('market', 'preemption', 'reliability', 'repacker',
                     'autoscaler'):
            self.assertEqual('False', conf.get('opie', flag), flag)

    def test_market_api_without_worker_is_not_the_market(self):
        self.stack(['tempest', 'opie-market-api'], {})
        conf = read_ini(self.tempest_conf)
        self.assertEqual('False', conf.get('service_available',
                                           'opie_market'))
        self.assertEqual('True', conf.get('opie', 'preemption'))

    def test_no_tempest_no_tempest_conf(self):
        self.stack(['opie-market', 'opie-market-api'], {})
        self.assertFalse(os.path.exists(self.tempest_conf))

    def test_market_api_under_uwsgi_behind_apache(self):
        self.stack(['opie-market', 'opie-market-api'], {})
        [write] = self.calls_of('write_uwsgi_config')
        # DevStack's signature: file, wsgi module, URL path, http (empty:
        # behind Apache), name.
        self.assertEqual([self.uwsgi_conf,
                          'opie_sched.wsgi.market:application',
                          '/spot-market', 'opie-market-api'], write)
        # The module form DevStack's write_uwsgi_config recognises.
        self.assertRegex(write[1], r'^[a-zA-Z0-9_.]+:[a-zA-Z0-9_]+$')
        with open(self.uwsgi_conf) as f:
            env = [line.split(' = ', 1)[1] for line in f.read().splitlines()
                   if line.startswith('env = ')]
        paste = os.path.join(ROOT, 'etc', 'opie_sched',
                             'market-api-paste.ini')
        self.assertEqual(['OPIE_MARKET_CONFIG=%s' % self.opie_conf,
                          'OPIE_MARKET_PASTE=%s' % paste], env)
        self.assertTrue(os.path.exists(paste))
        url = 'http://192.0.2.10/spot-market'
        self.assertEqual([['opie-market', 'spot-market', 'opie_sched',
                           'spot', 'market']],
                         self.calls_of('get_or_create_service'))
        # public, admin, internal
        self.assertEqual([['SVC-ID', 'RegionOne', url, url, url]],
                         self.calls_of('get_or_create_endpoint'))
        api = [c for c in self.calls_of('run_process')
               if c[0] == 'opie-market-api']
        self.assertEqual(1, len(api))
        self.assertIn('--ini %s' % self.uwsgi_conf, ' '.join(api[0]))
        self.assertNotIn('gunicorn', ' '.join(api[0]))

    def test_companion_services_on_devstack_rabbit(self):
        self.stack(['opie-market', 'opie-market-api'], {},
                   phases=('post-config',))
        self.assertEqual([['opie_sched', self.opie_conf]],
                         self.calls_of('iniset_rpc_backend'))
        conf = read_ini(self.opie_conf)
        self.assertTrue(conf.get('DEFAULT', 'transport_url')
                        .startswith('rabbit://'))

    def test_companion_services_as_the_service_user(self):
        # issue 22: [service_credentials] (keystoneauth), not clouds.yaml
        self.stack(['opie-repacker'], {
            'KEYSTONE_SERVICE_URI': 'http://192.0.2.10/identity',
            'SERVICE_PASSWORD': 'svcpw', 'SERVICE_DOMAIN_NAME': 'Default',
            'SERVICE_PROJECT_NAME': 'service'},
            phases=('post-config', 'extra'))
        conf = read_ini(self.opie_conf)
        section = {k: conf.get('service_credentials', k)
                   for k in conf.options('service_credentials')
                   if k not in conf.defaults()}
        self.assertEqual(
            {'auth_type': 'password',
             'auth_url': 'http://192.0.2.10/identity',
             'username': 'opie', 'password': 'svcpw',
             'user_domain_name': 'Default', 'project_name': 'service',
             'project_domain_name': 'Default', 'region_name': 'RegionOne'},
            section)
        self.assertFalse(conf.has_option('opie_repacker', 'cloud'))
        self.assertEqual([['opie', 'admin']],
                         self.calls_of('create_service_user'))
        # and the services load exactly that section
        cfg_conf = cfg.ConfigOpts()
        repacker_opts.register_opts(cfg_conf)
        cfg_conf(['--config-file', self.opie_conf], project='opie_sched')
        self.assertTrue(credentials.configured(cfg_conf))
        auth = credentials.session(cfg_conf).auth
        self.assertEqual(('http://192.0.2.10/identity', 'opie'),
                         (auth.auth_url, auth._username))

    def test_reliability_reaches_the_scheduler_options(self):
        self.stack(['tempest'], {'OPIE_SCHED_RELIABILITY': 'True'},
                   phases=('post-config', 'test-config'))
        sched = os.path.join(os.path.dirname(self.nova_conf),
                             'opie-scheduler.conf')
        self.assertIn('FailureDomainFilter',
                      read_ini(sched).get('filter_scheduler',
                                          'enabled_filters'))
        self.assertEqual('True', read_ini(self.tempest_conf).get(
            'opie', 'reliability'))

    def registered_limit_calls(self):
        """The ``openstack ... registered limit create|set`` calls:
        ``[(cloud, verb, args)]``.
        """
        out = []
        for call in self.calls_of('openstack'):
            if call[2:4] == ['registered', 'limit'] and call[4] != 'list':
                out.append((call[1], call[4], call[5:]))
        return out

    def test_preemptible_limits_with_unified_limits(self):
        # issue 23: a preemptible quota of its own
        self.stack(['tempest'], {'NOVA_USE_UNIFIED_LIMITS': 'True',
                                 'OPIE_SCHED_PREEMPTIBLE_VCPU_LIMIT': '8'},
                   phases=('post-config', 'test-config'))
        self.assertEqual([
            ('devstack-system-admin', 'create',
             ['--service', 'nova', '--default-limit', value, '--region',
              'RegionOne', 'class:CUSTOM_PREEMPTIBLE_%s' % rc])
            for rc, value in (('VCPU', '8'), ('MEMORY_MB', '51200'),
                              ('DISK_GB', '20'))],
            self.registered_limit_calls())
        self.assertEqual('True', read_ini(self.tempest_conf).get(
            'compute-feature-enabled', 'unified_limits'))
        # a second run updates them instead of failing on duplicates
        os.remove(self.calls)
        self.stack([], {'NOVA_USE_UNIFIED_LIMITS': 'True',
                        'OPIE_SCHED_PREEMPTIBLE_DISK_GB_LIMIT': ''},
                   phases=('post-config',))
        self.assertEqual([
            ('devstack-system-admin', 'set',
             ['--default-limit', value, 'ID-class:CUSTOM_PREEMPTIBLE_%s'
              % rc])
            for rc, value in (('VCPU', '20'), ('MEMORY_MB', '51200'))],
            self.registered_limit_calls())

    def test_no_preemptible_limits_with_legacy_quotas(self):
        self.stack(['tempest'], {}, phases=('post-config', 'test-config'))
        self.assertEqual([], self.registered_limit_calls())
        self.assertFalse(read_ini(self.tempest_conf).has_section(
            'compute-feature-enabled'))
