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
"""``tox -e tempest``: the Tempest tier on a devcloud.

::

    python -m opie_sched_tempest_plugin.runner [--state-dir DIR]
        [--computes N] [--scheduler-workers N] [--scheduler-hosts N]
        [--compute-vcpus N]
        [--preemptible-cpu-ratio R] [--market-period S]
        [--market-notice S] [--market-tick S] [--regex R]
        [--concurrency N] [--only opie|tempest] [--legacy-quotas]
        [--keep-cloud]

1. When MariaDB or RabbitMQ is unreachable, prints one line saying that
   the tier was skipped and why, and exits 0; when the ``CI`` environment
   variable is set (to anything but empty), that line says FAILED and the
   exit status is 1: a CI job must not pass without testing.
2. ``opie-sched devcloud up`` (``--scheduler-workers 2`` and
   ``--scheduler-hosts 2`` by default: the race test runs against two
   scheduler hosts of two workers each, their locks on Redis; one host
   when no Redis answers on 127.0.0.1:6379) with Die-Hard enabled
   (``--reliability``), a fast market (period 20 s, notice 20 s, tick
   2 s) with the market's default capacity source (``placement``: what
   Placement admits, so only refused boots contend it, as in a default
   deployment; the notice scenario of ``capacity_source = hypervisors``
   is skipped) and preemptible vCPUs overcommitted 2:1
   (``--preemptible-cpu-ratio 2``). The hosts get 512 MB of RAM per
   physical vCPU (plus nova's 512 MB reserve). Refused boots of the other
   tests bid 0 (the default bid) and never change a price; only the
   market scenarios' bidders contend the market.
   opie-autoscaler runs with the devcloud's application
   (``--with-autoscaler``) and opie-repacker in dry run
   (``--with-repacker``), for the autoscaler and repacker scenarios.
   nova's quotas are Keystone's unified limits, the devcloud's default
   (``--legacy-quotas``: nova's legacy quotas), so the preemptible quota
   scenario runs.
3. ``tempest init`` in ``DIR/tempest`` and a tempest.conf for the devcloud
   (no Neutron, Cinder or Swift; ``run_validation = false``; the fake
   driver's abilities and ``unified_limits`` of
   ``[compute-feature-enabled]``; the ``[opie]`` group, with the
   autoscaler's application and the command running opie-repacker once).
4. Our plugin's tests, serially (they fill the whole cloud; the chaos
   scenarios get the state directory, ``[opie] devcloud_state_dir``, to
   kill, freeze and restart the cloud's processes, and append their
   figures to ``DIR-chaos.txt``, printed after the run), then the
   selection of Tempest's own compute API tests of ``tempest-include.txt``
   minus ``tempest-exclude.txt`` (each exclusion with its reason), on a
   cloud whose free room is first filled with preemptible servers, so
   every normal boot of Tempest's tests preempts.
5. ``opie-sched devcloud down``, also on failure or interruption.
6. Prints passed/failed/skipped of both runs and the time taken; exits 1
   when a test failed or a step broke, or when one of our plugin's tests
   skipped although the tier enabled it (see :func:`unexpected_skips`;
   Tempest's own compute tests may skip). The runner's log is
   ``DIR-tier.log``; after a failure the services' logs are copied to
   ``DIR-logs`` before the cloud is removed.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
INCLUDE = os.path.join(HERE, 'tempest-include.txt')
EXCLUDE = os.path.join(HERE, 'tempest-exclude.txt')

#: The devcloud's flavors Tempest's own tests boot (``flavor_ref``,
#: ``flavor_ref_alt``).
FLAVOR = 'm1.tiny'
FLAVOR_ALT = 'm1.small'
PREEMPTIBLE_SUFFIX = '.preemptible'

_TOTALS = re.compile(r'^ - (Passed|Skipped|Failed|Expected Fail|'
                     r'Unexpected Success): (\d+)', re.M)


#: A test's result line in ``tempest run``'s output when it skipped (a
#: class-level skip names ``setUpClass (module.Class)``).
_SKIPPED = re.compile(r'^\{\d+\} (.+?)(?: \[[^\]]*\])? \.\.\. SKIPPED: ?(.*)$',
                      re.M)
#: The reason our plugin's tests give when a feature is off in tempest.conf.
_FEATURE_OFF = re.compile(r'^\[opie\] (\w+) = false\b')


def unexpected_skips(output, tempest_conf_path):
    """``[(test, reason)]`` of the skips in ``output`` (our plugin's run)
    that the tier did not ask for: every skip except those whose reason is
    ``[opie] FLAG = false`` for a FLAG that ``tempest_conf_path`` sets to
    false. A test skipped on the cloud's state (too few hosts, no room...)
    is unexpected: the tier would pass without testing it.
    """
    import configparser
    conf = configparser.ConfigParser(interpolation=None, strict=False)
    conf.read(tempest_conf_path)
    out = []
    for test, reason in _SKIPPED.findall(output):
        off = _FEATURE_OFF.match(reason)
        if off and conf.get('opie', off.group(1),
                            fallback='').lower() == 'false':
            continue
        out.append((test, reason.strip()))
    return out


def _say(message):
    sys.stdout.write('tempest tier: %s\n' % message)
    sys.stdout.flush()


#: What the devcloud needs running on this machine: (name, host, port).
SERVERS = (('MariaDB', '127.0.0.1', 3306), ('RabbitMQ', '127.0.0.1', 5672))


def unreachable():
    """Why the tier cannot run here (MariaDB or RabbitMQ does not accept
    TCP connections), or None. Anything else missing is for ``devcloud
    up`` to report, as a failure.
    """
    from opie_sched.devcloud import preflight
    problems = ['%s is not reachable on %s:%d' % (name, host, port)
                for name, host, port in SERVERS
                if not preflight.tcp_open(host, port)]
    return '; '.join(problems) or None


def _bin(name):
    local = os.path.join(os.path.dirname(sys.executable), name)
    return local if os.path.exists(local) else name


def _run(cmd, log=None, **kwargs):
    """Run ``cmd``; its output goes to our stdout and to ``log``.
    Returns ``(returncode, output)``.
    """
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, **kwargs)
    lines = []
    with open(log, 'a') if log else open(os.devnull, 'w') as out:
        for line in proc.stdout:
            lines.append(line)
            out.write(line)
            sys.stdout.write(line)
            sys.stdout.flush()
    return proc.wait(), ''.join(lines)


def counts(output):
    """``{'passed', 'failed', 'skipped'}`` from the totals ``tempest run``
    prints (zeros when it printed none).
    """
    found = {k.lower(): int(v) for k, v in _TOTALS.findall(output)}
    return {'passed': found.get('passed', 0),
            'failed': found.get('failed', 0)
            + found.get('unexpected success', 0),
            'skipped': found.get('skipped', 0)}


def _connect(clouds_yaml, cloud):
    import openstack
    from openstack import config as os_config
    region = os_config.OpenStackConfig(
        config_files=[clouds_yaml], load_envvars=False).get_one(cloud)
    return openstack.connection.Connection(config=region)


def _admin_auth(clouds_yaml):
    import yaml
    with open(clouds_yaml) as f:
        return yaml.safe_load(f)['clouds']['devcloud-admin']


def _flavor_ids(conn):
    flavors = {f.name: f.id for f in conn.compute.flavors(is_public=None)}
    missing = [n for n in (FLAVOR, FLAVOR_ALT) if n not in flavors]
    if missing:
        raise RuntimeError('the devcloud has no flavor %s' % missing)
    return flavors


def _reliability_enabled(state_dir):
    """Whether the devcloud's scheduler runs FailureDomainFilter."""
    for root, _dirs, files in os.walk(state_dir):
        for name in files:
            if name.endswith('.conf'):
                try:
                    with open(os.path.join(root, name)) as f:
                        if 'FailureDomainFilter' in f.read():
                            return True
                except OSError:
                    continue
    return False


def _market_notice_period(state_dir):
    """``[opie_market] notice_period`` of the devcloud's market (seconds;
    the option's default 300 when the file does not set it).
    """
    import configparser
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.read(os.path.join(state_dir, 'etc', 'opie_sched',
                             'opie_sched.conf'))
    return parser.getint('opie_market', 'notice_period', fallback=300)


def _market_contention(state_dir):
    """Whether boots can contend the devcloud's market: its hosts
    overcommit vCPUs (nova.conf ``cpu_allocation_ratio`` > 1, the same
    ratio as the preemptible inventory) and the market prices the
    physical CPUs (``capacity_source = hypervisors``).
    """
    import configparser
    market = configparser.ConfigParser(interpolation=None, strict=False)
    market.read(os.path.join(state_dir, 'etc', 'opie_sched',
                             'opie_sched.conf'))
    nova = configparser.ConfigParser(interpolation=None, strict=False)
    nova.read(os.path.join(state_dir, 'etc', 'nova', 'nova.conf'))
    return (market.get('opie_market', 'capacity_source',
                       fallback='placement') == 'hypervisors' and
            nova.getfloat('DEFAULT', 'cpu_allocation_ratio',
                          fallback=1.0) > 1)


def host_ram_mb(vcpus):
    """RAM of a devcloud host for the tier: 512 MB (the smallest flavor's
    RAM per vCPU) per physical vCPU plus the 512 MB nova reserves, so
    servers of the devcloud's flavors never hold more vCPUs than the host
    has, however the vCPUs are overcommitted.
    """
    return 512 * vcpus + 512


def tempest_conf(clouds_yaml, state_dir, summary, computes,
                 headroom_notice_seconds=None):
    """The text of tempest.conf for the devcloud.

    :param headroom_notice_seconds: ``[opie] headroom_notice_seconds``
        (None: the plugin's default).
    """
    admin = _admin_auth(clouds_yaml)
    auth = admin['auth']
    conn = _connect(clouds_yaml, 'devcloud-admin')
    image = next(iter(conn.image.images()))
    flavors = _flavor_ids(conn)
    market = (summary.get('endpoints') or {}).get('market-api')
    sections = {
        'DEFAULT': {'log_file': 'tempest.log'},
        'auth': {'use_dynamic_credentials': True,
                 'admin_username': auth['username'],
                 'admin_password': auth['password'],
                 'admin_project_name': auth['project_name'],
                 'admin_domain_name': auth['user_domain_name']},
        'identity': {'uri_v3': auth['auth_url'], 'auth_version': 'v3',
                     'region': admin.get('region_name', 'RegionOne')},
        'identity-feature-enabled': {'api_v2': False},
        'compute': {'image_ref': image.id, 'image_ref_alt': image.id,
                    'flavor_ref': flavors[FLAVOR],
                    'flavor_ref_alt': flavors[FLAVOR_ALT],
                    'min_microversion': '2.1',
                    'max_microversion': 'latest',
                    'min_compute_nodes': computes,
                    'build_timeout': 180},
        # The fake driver: what it implements and what needs absent
        # services (network, volumes, console proxies, metadata).
        'compute-feature-enabled': {
            'resize': True, 'cold_migration': True,
            'live_migration': True,
            'block_migration_for_live_migration': True,
            'pause': True, 'suspend': True, 'rescue': True,
            'shelve': False, 'shelve_migrate': False,
            'snapshot': False, 'console_output': False,
            'vnc_console': False, 'spice_console': False,
            'serial_console': False, 'rdp_console': False,
            'interface_attach': False, 'change_password': False,
            'metadata_service': False, 'config_drive': False,
            'personality': False, 'attach_encrypted_volume': False,
            'volume_multiattach': False, 'hostname_fqdn_sanitization':
                True,
            # nova's quotas are Keystone's unified limits (the devcloud's
            # default): Tempest skips its legacy quota-set tests, our
            # plugin sets Keystone project limits
            'unified_limits': unified_limits(summary)},
        'service_available': {'nova': True, 'glance': True,
                              'neutron': False, 'cinder': False,
                              'swift': False, 'horizon': False,
                              'opie_market': bool(market)},
        'validation': {'run_validation': False},
        'opie': {'preemption': True,
                 'preemptible_flavor_suffix': PREEMPTIBLE_SUFFIX,
                 'normal_flavor': FLAVOR,
                 'market': bool(market),
                 'market_endpoint': market,
                 'market_notice_period': _market_notice_period(state_dir),
                 'market_contention': _market_contention(state_dir),
                 'reliability': _reliability_enabled(state_dir),
                 # the chaos scenarios' process control and figures
                 'devcloud_state_dir': state_dir,
                 'chaos_report': chaos_report(state_dir)},
    }
    sections['opie'].update(autoscaler_options(summary.get('autoscaler')))
    if headroom_notice_seconds is not None:
        sections['opie']['headroom_notice_seconds'] = headroom_notice_seconds
    repacker = summary.get('repacker')
    sections['opie'].update({
        'repacker': bool(repacker),
        'repacker_command': (' '.join(shlex.quote(a)
                                      for a in repacker['command'])
                             if repacker else None)})
    lines = []
    for section, options in sections.items():
        lines.append('[%s]' % section)
        lines += ['%s = %s' % (k, v) for k, v in options.items()
                  if v is not None]
        lines.append('')
    return '\n'.join(lines)


def unified_limits(summary):
    """Whether the devcloud of ``summary`` (``devcloud up``'s) runs nova
    with Keystone's unified limits.
    """
    return summary.get('quotas') == 'unified limits'


def chaos_report(state_dir):
    """The file the chaos scenarios append their figures to (beside the
    state directory: ``devcloud down`` removes that).
    """
    return state_dir + '-chaos.txt'


def autoscaler_options(app):
    """The ``[opie] autoscaler*`` options of the devcloud's autoscaled
    application (``summary['autoscaler']`` of ``devcloud up``; None: no
    autoscaler). The scenario's demands are the option's default.
    """
    if not app:
        return {'autoscaler': False}
    flavors = sorted(app['flavors'].items())
    return {
        'autoscaler': True,
        'autoscaler_application': app['application'],
        'autoscaler_tag': app['tag'],
        'autoscaler_project': app['project'],
        'autoscaler_demand_file': app['demand_file'],
        'autoscaler_capacities': ','.join('%s:%g' % (name, f['capacity'])
                                          for name, f in flavors),
        'autoscaler_prices': ','.join('%s:%g' % (name, f['price'])
                                      for name, f in flavors),
    }


def fill_preemptible(clouds_yaml, log, legacy_quotas=False):
    """Fill the cloud's free room with preemptible servers of the tiny
    flavor (as devcloud-demo); returns how many were booted. With
    ``legacy_quotas`` nova's quotas of project demo are lifted first (the
    registered limits of a devcloud with unified limits exceed its
    capacity).
    """
    conn = _connect(clouds_yaml, 'devcloud-demo')
    admin = _connect(clouds_yaml, 'devcloud-admin')
    flavors = _flavor_ids(admin)
    twin = flavors.get(FLAVOR + PREEMPTIBLE_SUFFIX)
    flavor = admin.compute.get_flavor(twin)
    room = 0
    rps = admin.placement.get('/resource_providers', microversion='1.10')
    for rp in rps.json()['resource_providers']:
        inv = admin.placement.get('/resource_providers/%s/inventories'
                                  % rp['uuid']).json()['inventories']
        if 'CUSTOM_PREEMPTIBLE_VCPU' not in inv:
            continue
        use = admin.placement.get('/resource_providers/%s/usages'
                                  % rp['uuid']).json()['usages']
        free = []
        for std, pre, size in (('VCPU', 'CUSTOM_PREEMPTIBLE_VCPU',
                                flavor.vcpus),
                               ('MEMORY_MB', 'CUSTOM_PREEMPTIBLE_MEMORY_MB',
                                flavor.ram)):
            cap = int((inv[std]['total'] - inv[std]['reserved'])
                      * inv[std]['allocation_ratio'])
            free.append((cap - use.get(std, 0) - use.get(pre, 0)) // size)
        room += max(0, min(free))
    if room:
        if legacy_quotas:
            admin.compute.put('/os-quota-sets/%s' % conn.current_project_id,
                              json={'quota_set': {'instances': -1,
                                                  'cores': -1, 'ram': -1}},
                              microversion='2.1')
        image = next(iter(conn.image.images()))
        conn.compute.post('/servers', json={'server': {
            'name': 'tempest-tier-fill', 'flavorRef': twin,
            'imageRef': image.id, 'networks': 'none',
            'min_count': room, 'max_count': room}}, microversion='2.37')
        deadline = time.monotonic() + 300
        status = []
        while time.monotonic() < deadline:
            status = [s.status for s in conn.compute.servers(
                name='^tempest-tier-fill')]
            if status and all(s in ('ACTIVE', 'ERROR') for s in status):
                break
            time.sleep(3)
        with open(log, 'a') as f:
            f.write('fill: %s\n' % sorted(status))
    return room


def _tempest(workspace, args, log):
    return _run([_bin('tempest'), 'run', '--config-file',
                 os.path.join(workspace, 'etc', 'tempest.conf')] + args,
                log, cwd=workspace)


def _redis_answers():
    import socket
    try:
        socket.create_connection(('127.0.0.1', 6379), timeout=3).close()
    except OSError:
        return False
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='opie-tempest', description=__doc__.split('\n\n')[0])
    parser.add_argument('--state-dir', default='.tempest-cloud')
    parser.add_argument('--computes', type=int, default=3)
    parser.add_argument('--scheduler-workers', type=int, default=2)
    parser.add_argument('--scheduler-hosts', type=int, default=2,
                        help='scheduler hosts (devcloud --scheduler-hosts; '
                             'default 2, 1 when Redis is unreachable)')
    parser.add_argument('--compute-vcpus', type=int, default=12)
    parser.add_argument('--preemptible-cpu-ratio', type=float, default=2.0,
                        help='vCPU overcommit of the hosts (devcloud '
                             '--preemptible-cpu-ratio; default 2)')
    parser.add_argument('--market-period', type=int, default=20,
                        help='market period, seconds (default 20)')
    parser.add_argument('--market-notice', type=int, default=20,
                        help='market notice period, seconds (default 20)')
    parser.add_argument('--market-tick', type=float, default=2.0,
                        help='market tick, seconds (default 2)')
    parser.add_argument('--concurrency', type=int, default=2,
                        help='workers of the run of Tempest\'s own tests')
    parser.add_argument('--legacy-quotas', action='store_true',
                        help="nova's legacy quotas instead of Keystone's "
                             'unified limits (devcloud --legacy-quotas)')
    parser.add_argument('--notifications', action='store_true',
                        help="nova sends its versioned notifications on the "
                             "devcloud's RabbitMQ (devcloud --notifications)"
                             '; opie-scheduler then wakes its waits on '
                             'victims at them ([opie_preemption] '
                             'release_notifications)')
    parser.add_argument('--headroom-notice-seconds', type=int,
                        help='[opie] headroom_notice_seconds: the notice of '
                             "the headroom scenarios (default the plugin's, "
                             '60 s)')
    parser.add_argument('--only', choices=('opie', 'tempest'))
    parser.add_argument('--regex', default=r'^opie_sched_tempest_plugin\.',
                        help='which of our plugin\'s tests run (a '
                             'stestr regex; default all of them)')
    parser.add_argument('--keep-cloud', action='store_true',
                        help='leave the devcloud running (debugging)')
    args = parser.parse_args(argv)

    why = unreachable()
    if why:
        if os.environ.get('CI'):
            _say('FAILED: %s (CI is set: the tier must run)' % why)
            return 1
        _say('skipped: %s' % why)
        return 0
    if args.scheduler_hosts > 1 and not _redis_answers():
        _say('Redis does not answer on 127.0.0.1:6379: one scheduler host')
        args.scheduler_hosts = 1
    t0 = time.monotonic()
    state_dir = os.path.abspath(args.state_dir)
    workspace = os.path.join(state_dir, 'tempest')
    os.makedirs(state_dir, exist_ok=True)
    # Beside the state directory: devcloud down removes that.
    log = state_dir + '-tier.log'
    if os.path.exists(log):
        os.remove(log)
    results = {}
    failed_step = None
    up = False
    try:
        rc, out = _run([_bin('opie-sched'), 'devcloud', 'up',
                        '--state-dir', state_dir, '--replace',
                        '--computes', str(args.computes),
                        '--scheduler-workers', str(args.scheduler_workers),
                        '--scheduler-hosts', str(args.scheduler_hosts),
                        '--compute-vcpus', str(args.compute_vcpus),
                        '--compute-ram-mb',
                        str(host_ram_mb(args.compute_vcpus)),
                        '--preemptible-cpu-ratio',
                        '%g' % args.preemptible_cpu_ratio,
                        '--market-period', str(args.market_period),
                        '--market-notice', str(args.market_notice),
                        '--market-tick', '%g' % args.market_tick,
                        '--reliability', '--with-autoscaler',
                        '--with-repacker', '--format', 'json']
                       + (['--legacy-quotas'] if args.legacy_quotas else [])
                       + (['--notifications'] if args.notifications else []),
                       log)
        up = True
        if rc:
            failed_step = 'devcloud up (exit %d)' % rc
            return 1
        summary = json.loads(out[out.index('{'):out.rindex('}') + 1])
        t_up = time.monotonic() - t0
        if not os.path.isdir(workspace):
            rc, _ = _run([_bin('tempest'), 'init', '--workspace-path',
                          os.path.join(state_dir, 'workspace.yaml'),
                          workspace], log)
            if rc:
                failed_step = 'tempest init (exit %d)' % rc
                return 1
        with open(os.path.join(workspace, 'etc', 'tempest.conf'), 'w') as f:
            f.write(tempest_conf(summary['clouds_yaml'], state_dir, summary,
                                 args.computes,
                                 args.headroom_notice_seconds))
        if args.only in (None, 'opie'):
            if os.path.exists(chaos_report(state_dir)):
                os.remove(chaos_report(state_dir))
            rc, out = _tempest(workspace, [
                '--regex', args.regex, '--serial'], log)
            results['opie_sched plugin'] = dict(counts(out), rc=rc)
            if os.path.exists(chaos_report(state_dir)):
                with open(chaos_report(state_dir)) as f:
                    for line in f:
                        _say(line.rstrip())
            skips = unexpected_skips(out, os.path.join(
                workspace, 'etc', 'tempest.conf'))
            for test, reason in skips:
                _say('unexpected skip: %s: %s' % (test, reason))
            results['opie_sched plugin']['bad_skips'] = len(skips)
        if args.only in (None, 'tempest'):
            filled = fill_preemptible(
                summary['clouds_yaml'], log,
                legacy_quotas=not unified_limits(summary))
            _say('%d preemptible servers fill the cloud before Tempest\'s '
                 'own tests' % filled)
            rc, out = _tempest(workspace, [
                '--include-list', INCLUDE, '--exclude-list', EXCLUDE,
                '--concurrency', str(args.concurrency)], log)
            results['Tempest compute API'] = dict(counts(out), rc=rc)
    except Exception as exc:
        failed_step = '%s: %s' % (type(exc).__name__, exc)
        raise
    finally:
        t_tests = time.monotonic() - t0
        broken = failed_step or any(r['rc'] or r['failed']
                                    or r.get('bad_skips')
                                    for r in results.values())
        logs = os.path.join(state_dir, 'logs')
        if up and broken and os.path.isdir(logs):
            kept = state_dir + '-logs'
            shutil.rmtree(kept, ignore_errors=True)
            shutil.copytree(logs, kept)
            _say('service logs kept in %s' % kept)
        if up and not args.keep_cloud:
            _run([_bin('opie-sched'), 'devcloud', 'down', '--state-dir',
                  state_dir], log)
        total = time.monotonic() - t0
        for name, r in results.items():
            _say('%s: %d passed, %d failed, %d skipped%s%s' % (
                name, r['passed'], r['failed'], r['skipped'],
                ' (%d unexpected: FAILED)' % r['bad_skips']
                if r.get('bad_skips') else '',
                '' if r['rc'] == 0 else ' (tempest run exit %d)' % r['rc']))
        if 't_up' in locals():
            _say('cloud up %.0f s, up + tests %.0f s, total with down '
                 '%.0f s (log: %s)' % (t_up, t_tests, total, log))
        if failed_step:
            _say('FAILED at %s' % failed_step)
    bad = [n for n, r in results.items()
           if r['rc'] or r['failed'] or r.get('bad_skips')]
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
