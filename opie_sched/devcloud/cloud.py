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
"""``up``, ``down`` and ``status`` of a devcloud.

``up`` order (each step needs the previous ones): preflight; state
directory, ports, configuration files; databases and the RabbitMQ vhost;
the schemas (in parallel); Keystone, Placement, Glance and
neutron-server (or its stand-in); Keystone's projects, users and catalog
(service users and the Placement endpoint must exist before
nova-conductor starts); nova-api,
nova-conductor, opie-scheduler; the provider configs, then the computes;
``discover_hosts``; the image and flavors; opie-market and its API; the
autoscaler and repacker when asked. With unified limits (the default)
nova's registered limits are created with the catalog, before nova-api
starts.
"""

import concurrent.futures
import os
import shutil
import sys
import time

import yaml

from opie_sched.devcloud import bootstrap
from opie_sched.devcloud import config
from opie_sched.devcloud import layout as layout_mod
from opie_sched.devcloud import preflight
from opie_sched.devcloud import process

#: Bounded waits, seconds.
HTTP_TIMEOUT = 300
COMPUTE_TIMEOUT = 300
STOP_TIMEOUT = 10


#: Prefixes of the caller's ``OS_*`` authentication variables, removed from
#: the services' environment.
AUTH_VARIABLES = ('OS_AUTH', 'OS_USER', 'OS_PASSWORD', 'OS_PROJECT',
                  'OS_TOKEN', 'OS_REGION', 'OS_INTERFACE', 'OS_IDENTITY',
                  'OS_DOMAIN', 'OS_SYSTEM', 'OS_TENANT')


class AlreadyUpError(Exception):
    """A cloud is already running in the state directory."""


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)


def _paste_file(*candidates):
    for path in candidates:
        if os.path.exists(path):
            return path
    raise preflight.MissingError('paste file not found; looked at: %s'
                                 % ', '.join(candidates))


def _repo_etc():
    import opie_sched
    return os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(opie_sched.__file__))), 'etc', 'opie_sched')


def write_configs(settings, layout):
    """Every configuration file of the cloud, plus clouds.yaml."""
    etc = layout.etc
    _write(os.path.join(etc, 'keystone', 'keystone.conf'),
           config.render(config.keystone_conf(settings, layout)))
    _write(os.path.join(etc, 'placement', 'placement.conf'),
           config.render(config.placement_conf(settings, layout)))
    glance = config.glance_conf(settings, layout)
    glance_paste = os.path.join(etc, 'glance', 'glance-api-paste.ini')
    glance['paste_deploy']['config_file'] = glance_paste
    _write(os.path.join(etc, 'glance', 'glance-api.conf'),
           config.render(glance))
    shutil.copy(_paste_file(os.path.join(settings.prefix, 'etc', 'glance',
                                         'glance-api-paste.ini')),
                glance_paste)
    if settings.neutron == 'server':
        _write(os.path.join(etc, 'neutron', 'neutron.conf'),
               config.render(config.neutron_conf(settings, layout)))
        shutil.copy(_paste_file(os.path.join(settings.prefix, 'etc',
                                             'neutron', 'api-paste.ini')),
                    os.path.join(etc, 'neutron', 'api-paste.ini'))
        os.makedirs(layout.path('neutron', 'locks'), exist_ok=True)
    _write(os.path.join(etc, 'nova', 'nova.conf'),
           config.render(config.nova_conf(settings, layout)))
    shutil.copy(_paste_file(os.path.join(settings.prefix, 'etc', 'nova',
                                         'api-paste.ini')),
                os.path.join(etc, 'nova', 'api-paste.ini'))
    _write(os.path.join(etc, 'nova', 'scheduler.conf'),
           config.render(
               config.stock_scheduler_conf(settings.scheduler_workers)
               if settings.stock_scheduler else config.scheduler_conf(
                   settings.scheduler_workers,
                   reliability=settings.reliability)))
    for index in range(1, settings.scheduler_hosts + 1):
        _write(os.path.join(etc, 'nova', 'scheduler-host-%d.conf' % index),
               config.render(config.scheduler_host_conf(settings, layout,
                                                        index)))
        os.makedirs(layout.path('scheduler-%d' % index, 'locks'),
                    exist_ok=True)
    for index in range(1, settings.computes + 1):
        _write(os.path.join(etc, 'nova', 'compute-%d.conf' % index),
               config.render(config.compute_conf(settings, layout, index)))
        os.makedirs(config.provider_config_dir(layout, index),
                    exist_ok=True)
    _write(os.path.join(etc, 'opie_sched', 'opie_sched.conf'),
           config.render(config.market_conf(settings, layout)))
    shutil.copy(_paste_file(
        os.path.join(settings.prefix, 'etc', 'opie_sched',
                     'market-api-paste.ini'),
        os.path.join(_repo_etc(), 'market-api-paste.ini')),
        os.path.join(etc, 'opie_sched', 'market-api-paste.ini'))
    for sub in ('glance/images', 'glance/staging', 'glance/tasks',
                'glance/locks', 'nova/locks', 'market', 'repacker', 'locks',
                'logs'):
        os.makedirs(layout.path(sub), exist_ok=True)
    # opie-autoscaler's applications (it reads the file every round): with
    # the autoscaler, its test application at demand 0; edit the file to
    # add others.
    if settings.with_autoscaler:
        apps = config.autoscaler_applications(layout)
        _write(config.autoscaler_demand_file(layout), '0\n')
    else:
        apps = {'applications': []}
    _write(config.autoscaler_applications_file(layout),
           yaml.safe_dump(apps, default_flow_style=False))
    _write(layout.clouds_yaml, yaml.safe_dump(config.clouds_yaml(settings),
                                              default_flow_style=False))
    os.chmod(layout.clouds_yaml, 0o600)


def service_env(layout):
    """The environment of every process: clouds.yaml of the cloud, the
    environment's bin directory first on PATH.
    """
    env = dict(os.environ)
    env['OS_CLIENT_CONFIG_FILE'] = layout.clouds_yaml
    env['PATH'] = os.pathsep.join([os.path.dirname(sys.executable),
                                   env.get('PATH', '')])
    # The caller's credentials must not leak into the services.
    for key in [k for k in env if k == 'OS_CLOUD' or k.startswith(
            AUTH_VARIABLES)]:
        del env[key]
    return env


def _gunicorn(settings, name, app, extra_env, layout, threads=4):
    env = dict(service_env(layout), OPIE_DEVCLOUD_WSGI=app, **extra_env)
    argv = [bootstrap._bin('gunicorn'), '--no-control-socket',
            '--bind', '%s:%d' % (settings.host, settings.ports[name]),
            '--workers', '1', '--threads', str(threads),
            '--timeout', '300', '--graceful-timeout', '5',
            # No keep-alive: every response closes its connection. With
            # gunicorn's 2 s, clients polling every 1-2 s reused a
            # connection the server was closing (ECONNRESET under load);
            # with 60 s, a reused connection once delivered a previous
            # response's body before the next status line (Placement:
            # 'BadStatusLine: {"allocations": {}}HTTP/1.1 200 OK', three
            # failed boots in the Tempest race). Loopback connections are
            # cheap.
            '--keep-alive', '0',
            '--name', 'devcloud-%s' % name,
            'opie_sched.devcloud.wsgi:application']
    return argv, env


def http_services(settings, layout):
    """``{name: (argv, env, readiness URL)}`` of the HTTP services."""
    etc = layout.etc
    market_conf = os.path.join(etc, 'opie_sched', 'opie_sched.conf')
    specs = {
        'keystone': ('keystone.wsgi.api',
                     {'OS_KEYSTONE_CONFIG_DIR': os.path.join(
                         etc, 'keystone')}, '/v3'),
        'placement': ('placement.wsgi.api',
                      {'OS_PLACEMENT_CONFIG_DIR': os.path.join(
                          etc, 'placement')}, '/'),
        'glance': ('glance.wsgi.api',
                   {'OS_GLANCE_CONFIG_DIR': os.path.join(etc, 'glance')},
                   '/versions'),
        'neutron': (('neutron.wsgi.api', {
            'OS_NEUTRON_CONFIG_DIR': os.path.join(etc, 'neutron'),
            'OS_NEUTRON_CONFIG_FILES': 'neutron.conf'}, '/')
            if settings.neutron == 'server' else
            ('neutron-standin', {}, '/v2.0')),
        'nova-api': ('nova.wsgi.osapi_compute',
                     {'OS_NOVA_CONFIG_DIR': os.path.join(etc, 'nova')},
                     '/'),
        'market-api': ('market', {
            'OPIE_MARKET_CONFIG': market_conf,
            'OPIE_MARKET_PASTE': os.path.join(
                etc, 'opie_sched', 'market-api-paste.ini')}, '/'),
    }
    out = {}
    for name, (app, env, path) in specs.items():
        argv, full_env = _gunicorn(settings, name, app, env, layout)
        out[name] = (argv, full_env, settings.url(name, path))
    return out


def scheduler_name(index, stock=False):
    """Service name of scheduler host ``index`` (1-based):
    ``opie-scheduler``, ``opie-scheduler-2``, ...; ``nova-scheduler``
    when ``stock`` (a ``stock_scheduler`` cloud has one).
    """
    if stock:
        return 'nova-scheduler'
    return 'opie-scheduler' if index == 1 else 'opie-scheduler-%d' % index


def daemons(settings, layout):
    """``{name: (argv, env)}`` of the other services, in start order."""
    env = service_env(layout)
    nova = ['--config-file', os.path.join(layout.etc, 'nova', 'nova.conf')]
    out = {
        'nova-conductor': ([bootstrap._bin('nova-conductor')] + nova, env),
    }
    for index in range(1, settings.scheduler_hosts + 1):
        out[scheduler_name(index, settings.stock_scheduler)] = (
            [bootstrap._bin('nova-scheduler' if settings.stock_scheduler
                            else 'opie-scheduler')] + nova + [
                '--config-file', os.path.join(layout.etc, 'nova',
                                              'scheduler.conf'),
                '--config-file', os.path.join(
                    layout.etc, 'nova', 'scheduler-host-%d.conf' % index)],
            env)
    for index in range(1, settings.computes + 1):
        cenv = dict(env, OPIE_DEVCLOUD_VCPUS=str(settings.compute_vcpus),
                    OPIE_DEVCLOUD_RAM_MB=str(settings.compute_ram_mb),
                    OPIE_DEVCLOUD_DISK_GB=str(settings.compute_disk_gb))
        out['nova-compute-%d' % index] = (
            [sys.executable, '-m', 'opie_sched.devcloud.compute'] + nova + [
                '--config-file', os.path.join(
                    layout.etc, 'nova', 'compute-%d.conf' % index)], cenv)
    opie = ['--config-file', os.path.join(layout.etc, 'opie_sched',
                                          'opie_sched.conf')]
    out['opie-market'] = ([bootstrap._bin('opie-market')] + opie + ['run'],
                          env)
    if settings.with_autoscaler:
        out['opie-autoscaler'] = ([bootstrap._bin('opie-autoscaler')] + opie,
                                  env)
    if settings.with_repacker:
        out['opie-repacker'] = ([bootstrap._bin('opie-repacker')] + opie,
                                env)
    return out


class Cloud:
    """A devcloud in ``state_dir``; ``say`` prints progress lines."""

    def __init__(self, state_dir, say=None):
        self.layout = layout_mod.Layout(state_dir)
        self.say = say or (lambda msg: None)
        self.state = None
        self.started = time.monotonic()

    # -- state ------------------------------------------------------------

    def _save(self):
        self.layout.save(self.state)

    def running(self):
        """``{service: pid}`` of the recorded services still alive."""
        state = self.layout.load() or {}
        return {name: svc['pid']
                for name, svc in state.get('services', {}).items()
                if process.alive(svc.get('pid'))}

    # -- up ---------------------------------------------------------------

    def up(self, settings, replace=False):
        """Start the cloud; return its :meth:`status` (the summary with,
        per service, whether it is alive, its processes, memory and
        health).

        :raises AlreadyUpError: services of this state directory run and
            ``replace`` is false.
        :raises preflight.MissingError: MariaDB, RabbitMQ or a package
            missing.
        :raises process.ServiceError: a step or service failed (what was
            started is torn down first).
        """
        alive = self.running()
        if alive and not replace:
            raise AlreadyUpError(
                'a devcloud is already up in %s (%s); use --replace or '
                'devcloud down' % (self.layout.root, ', '.join(sorted(
                    alive))))
        preflight.check(neutron=settings.neutron == 'server',
                        redis=settings.scheduler_hosts > 1)
        if self.layout.load() is not None:
            self.say('removing the previous cloud of %s' % self.layout.root)
            self.down()
        os.makedirs(self.layout.root, exist_ok=True)
        self.state = {'settings': settings.to_dict(), 'services': {},
                      'db_prefix': self.layout.db_prefix,
                      'vhost': self.layout.vhost, 'status': 'starting'}
        self._save()
        try:
            self._up(settings)
        except BaseException as exc:
            if isinstance(exc, process.ServiceError) and exc.log:
                exc.tail = process.tail(exc.log)
            self.say('start-up failed; tearing down what was started '
                     '(logs kept in %s)' % self.layout.logs)
            self.down(keep_logs=True)
            raise
        return self.status()

    def _start(self, name, argv, env):
        log = self.layout.log(name)
        pid = process.start(name, argv, log, env=env)
        self.state['services'][name] = {'pid': pid, 'log': log,
                                        'argv': argv}
        self._save()
        return pid

    def _wait_http(self, name, url, timeout=HTTP_TIMEOUT):
        svc = self.state['services'][name]
        process.wait_for((name, svc['log']),
                         lambda: process.http_answers(url), timeout,
                         pids=[svc['pid']])

    def _up(self, settings):
        layout = self.layout
        t0 = time.monotonic()
        write_configs(settings, layout)
        self.say('configuration in %s' % layout.etc)
        bootstrap.create_databases(settings, layout)
        bootstrap.create_vhost(layout.vhost)
        self.say('databases %s* and RabbitMQ vhost %s created'
                 % (layout.db_prefix, layout.vhost))
        env = service_env(layout)
        with concurrent.futures.ThreadPoolExecutor(5) as pool:
            futures = [pool.submit(bootstrap.keystone_schema, settings,
                                   layout, env),
                       pool.submit(bootstrap.nova_schema, settings, layout,
                                   env)]
            futures += [pool.submit(process.run, argv, layout.log(name),
                                    env, 600, name)
                        for name, argv in bootstrap.schema_commands(
                            layout, settings.neutron)]
            for future in futures:
                future.result()
        self.say('schemas ready (%.0f s)' % (time.monotonic() - t0))
        http = http_services(settings, layout)
        for name in ('keystone', 'placement', 'glance', 'neutron'):
            self._start(name, http[name][0], http[name][1])
        for name in ('keystone', 'placement', 'glance', 'neutron'):
            self._wait_http(name, http[name][2])
        nova_endpoint = bootstrap.keystone_catalog(settings)
        if settings.unified_limits:
            # nova finds its limits by its endpoint's id: one Keystone
            # call per quota check instead of three
            _write(os.path.join(layout.etc, 'nova', 'nova.conf'),
                   config.render(config.nova_conf(
                       settings, layout, limits_endpoint=nova_endpoint)))
        self.say('Keystone, Placement, Glance, %s up; catalog and users '
                 'created' % ('neutron-server (API only)'
                              if settings.neutron == 'server'
                              else 'the Neutron stand-in'))
        self._start('nova-api', http['nova-api'][0], http['nova-api'][1])
        procs = daemons(settings, layout)
        for index in range(1, settings.computes + 1):
            bootstrap.provider_config(settings, layout, index, env)
        for name, (argv, denv) in procs.items():
            if name.startswith(('nova-', 'opie-scheduler')):
                self._start(name, argv, denv)
        self._wait_http('nova-api', http['nova-api'][2])
        self._wait_computes(settings)
        bootstrap.discover_hosts(layout, env)
        self._wait_hypervisors(settings)
        self.say('nova up: %d computes, %s on %d host(s) with '
                 '%d workers each%s%s' % (
                     settings.computes, 'stock nova-scheduler'
                     if settings.stock_scheduler else 'opie-scheduler',
                     settings.scheduler_hosts,
                     settings.scheduler_workers,
                     ', locks on %s' % config.coordination_url(
                         settings, layout)
                     if settings.scheduler_hosts > 1 else '',
                     ', notifications on topic %s' % config.NOTIFICATION_TOPIC
                     if settings.notifications else ''))
        bootstrap.image_and_flavors(settings, layout, env)
        self.say('image %s, flavors and preemptible twins created'
                 % config.IMAGE)
        if settings.with_autoscaler:
            bootstrap.autoscaler_flavors(settings)
        self._start('market-api', http['market-api'][0],
                    http['market-api'][1])
        for name, (argv, denv) in procs.items():
            if name.startswith(('opie-market', 'opie-autoscaler',
                                'opie-repacker')):
                self._start(name, argv, denv)
        self._wait_http('market-api', http['market-api'][2])
        time.sleep(1)
        for name, svc in self.state['services'].items():
            if not process.alive(svc['pid']):
                raise process.ServiceError(name, 'exited', svc['log'])
        self.state['status'] = 'up'
        self.state['start_seconds'] = round(time.monotonic() - t0, 1)
        self._save()

    def _nova_services(self, settings):
        conn = bootstrap.admin_connection(settings)
        return list(conn.compute.services())

    def _wait_computes(self, settings):
        pids = [svc['pid'] for name, svc in self.state['services'].items()]

        def ready():
            up = [s for s in self._nova_services(settings)
                  if s.binary == 'nova-compute' and s.state == 'up']
            return len(up) >= settings.computes
        process.wait_for(('nova-compute', self.layout.log('nova-compute-1')),
                         ready, COMPUTE_TIMEOUT, pids=pids, interval=2)

    def _wait_hypervisors(self, settings):
        conn = bootstrap.admin_connection(settings)

        def ready():
            return len(list(conn.compute.hypervisors())) >= settings.computes
        process.wait_for(('nova-compute', self.layout.log('nova-compute-1')),
                         ready, COMPUTE_TIMEOUT, interval=2)

    # -- down -------------------------------------------------------------

    def down(self, keep_logs=False):
        """Stop every process, drop the databases and the vhost, remove
        the state directory (but its ``logs`` when ``keep_logs``). Returns
        the names of the stopped services.
        """
        state = self.layout.load()
        if state is None and not os.path.isdir(self.layout.root):
            return []
        state = state or {}
        stopped = []
        services = state.get('services', {})
        pids = {}
        for name in services:
            pid = services[name].get('pid')
            if pid and (process.alive(pid) or process.group_pids(pid)):
                pids[pid] = name
                stopped.append(name)
        killed = process.stop_all(list(pids), timeout=STOP_TIMEOUT)
        if killed:
            self.say('killed (no exit %d s after SIGTERM): %s' % (
                STOP_TIMEOUT, ', '.join(pids[pid] for pid in killed)))
        settings_data = state.get('settings')
        if settings_data:
            settings = config.Settings.from_dict(settings_data)
            try:
                bootstrap.drop_databases(settings, self.layout)
            except Exception as exc:
                self.say('could not drop the databases: %s' % exc)
        try:
            bootstrap.delete_vhost(self.layout.vhost)
        except Exception as exc:
            self.say('could not delete RabbitMQ vhost %s: %s'
                     % (self.layout.vhost, exc))
        if not keep_logs:
            shutil.rmtree(self.layout.root, ignore_errors=True)
            return stopped
        for entry in os.listdir(self.layout.root):
            path = self.layout.path(entry)
            if entry == 'logs':
                continue
            if os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        return stopped

    # -- status -----------------------------------------------------------

    def summary(self):
        state = self.state or self.layout.load() or {}
        settings = config.Settings.from_dict(state['settings'])
        return {
            'state_dir': self.layout.root,
            'clouds_yaml': self.layout.clouds_yaml,
            'clouds': sorted(config.CLOUD_USERS),
            'neutron': settings.neutron,
            'status': state.get('status'),
            'start_seconds': state.get('start_seconds'),
            'db_prefix': self.layout.db_prefix,
            'vhost': self.layout.vhost,
            'scheduler_hosts': [settings.scheduler_host(i) for i in range(
                1, settings.scheduler_hosts + 1)],
            'coordination_url': config.coordination_url(settings,
                                                        self.layout),
            'scheduler': ('nova-scheduler (stock)' if settings.stock_scheduler
                          else 'opie-scheduler'),
            # nova's quotas: Keystone's unified limits, with nova's
            # registered limits (defaults of every project), or the legacy
            # quotas of nova's database
            'quotas': ('unified limits' if settings.unified_limits
                       else 'legacy'),
            'registered_limits': (config.registered_limits(settings)
                                  if settings.unified_limits else None),
            # where a listener reads nova's notifications (oslo.messaging
            # transport URL and topic), None when the cloud sends none
            'notifications': ({
                'transport_url': settings.transport_url(self.layout.vhost),
                'topic': config.NOTIFICATION_TOPIC}
                if settings.notifications else None),
            'endpoints': {name: settings.url(name)
                          for name in settings.ports},
            'services': {name: {'pid': svc['pid'], 'log': svc['log']}
                         for name, svc in state.get('services',
                                                    {}).items()},
            'autoscaler': (self.autoscaler_summary()
                           if settings.with_autoscaler else None),
            'repacker': (self.repacker_summary()
                         if settings.with_repacker else None),
        }

    def autoscaler_summary(self):
        """What a test needs to drive the autoscaler's application:
        ``{'application', 'tag', 'cloud', 'project', 'applications_file',
        'demand_file', 'flavors': {name: {'capacity', 'price'}}}``
        (capacity in vCPU, price in currency per hour).
        """
        _user, project, _role = config.CLOUD_USERS[config.AUTOSCALER_CLOUD]
        return {
            'application': config.AUTOSCALER_APP,
            'tag': config.AUTOSCALER_TAG,
            'cloud': config.AUTOSCALER_CLOUD,
            'project': project,
            'applications_file': config.autoscaler_applications_file(
                self.layout),
            'demand_file': config.autoscaler_demand_file(self.layout),
            'flavors': {name: {'capacity': capacity, 'price': price}
                        for name, _v, _r, _d, capacity, price
                        in config.AUTOSCALER_FLAVORS},
        }

    def repacker_summary(self):
        """How to run opie-repacker once against this cloud: ``{'command':
        argv}`` (the environment set with ``env``: the cloud's
        clouds.yaml; its configuration file, dry run unless a later
        ``--config-file`` says otherwise), ``'state_dir'``.
        """
        return {
            'command': ['env', 'OS_CLIENT_CONFIG_FILE=%s'
                        % self.layout.clouds_yaml,
                        bootstrap._bin('opie-repacker'), '--config-file',
                        os.path.join(self.layout.etc, 'opie_sched',
                                     'opie_sched.conf')],
            'state_dir': self.layout.path('repacker'),
        }

    def status(self):
        """The summary plus, per service, ``alive``, ``rss_mib`` and
        ``health`` (HTTP answers / nova service up).
        """
        state = self.layout.load()
        if state is None:
            return None
        self.state = state
        out = self.summary()
        settings = config.Settings.from_dict(state['settings'])
        nova = {}
        try:
            for svc in self._nova_services(settings):
                key = svc.binary if svc.binary not in (
                    'nova-compute', 'nova-scheduler') else (
                    '%s@%s' % (svc.binary, svc.host))
                nova[key] = '%s/%s' % (svc.status, svc.state)
        except Exception as exc:
            nova = {'error': str(exc).splitlines()[0]}
        total = 0
        for name, info in out['services'].items():
            pids = process.group_pids(info['pid'])
            info['alive'] = process.alive(info['pid'])
            info['processes'] = len(pids)
            rss = process.rss_kib(pids)
            total += rss
            info['rss_mib'] = round(rss / 1024.0, 1)
            if name in settings.ports:
                try:
                    ok = process.http_answers(settings.url(name))
                except Exception:
                    ok = False
                info['health'] = 'answers' if ok else 'no answer'
            elif name == 'nova-conductor':
                info['health'] = nova.get('nova-conductor', '?')
            elif name.startswith(('opie-scheduler', 'nova-scheduler')):
                index = 1 if name in ('opie-scheduler',
                                      'nova-scheduler') else int(
                    name.rsplit('-', 1)[1])
                info['health'] = nova.get('nova-scheduler@%s' % (
                    settings.scheduler_host(index)), '?')
            elif name.startswith('nova-compute-'):
                host = settings.compute_host(int(name.rsplit('-', 1)[1]))
                info['health'] = nova.get('nova-compute@%s' % host, '?')
            else:
                info['health'] = 'running' if info['alive'] else 'exited'
        out['rss_mib_total'] = round(total / 1024.0, 1)
        out['nova_services'] = nova
        return out
