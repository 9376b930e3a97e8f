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
"""The one-shot steps of ``devcloud up`` and ``down``: databases, the
RabbitMQ vhost, schemas, Keystone's users/projects/catalog, nova's cells,
the image, the flavors.

The operator commands of opie_sched run as subprocesses, exactly as the
install guide tells operators to run them (``opie-sched provider-config``,
``opie-sched --os-cloud devcloud-admin flavor create-preemptible``).
"""

import subprocess
import sys

from opie_sched.devcloud import config
from opie_sched.devcloud import preflight
from opie_sched.devcloud import process

#: Flavors created by ``up`` (name, vCPU, RAM MB, disk GB): the sizes of
#: López García et al., "Resource provisioning in Science Clouds:
#: Requirements and challenges", evaluation section (small, medium,
#: large), plus a tiny one; each gets a preemptible twin.
FLAVORS = (
    ('m1.tiny', 1, 512, 1),
    ('m1.small', 1, 2000, 20),
    ('m1.medium', 2, 4000, 40),
    ('m1.large', 4, 8000, 80),
)


def _mysql(settings):
    import pymysql
    user, _, hostport = settings.mysql.partition('@')
    host, _, port = hostport.partition(':')
    return pymysql.connect(host=host, port=int(port or 3306), user=user,
                           connect_timeout=10, autocommit=True)


#: Connections one devcloud can hold on MariaDB (two scheduler hosts of
#: two workers, conductor, API, Placement, Keystone, computes, market: ~130
#: measured); MariaDB's default ``max_connections`` is 151.
MIN_MAX_CONNECTIONS = 400


def create_databases(settings, layout):
    """(Re)create the cloud's databases (dropping leftovers of a failed
    run of the same state directory), after raising the server's
    ``max_connections`` to :data:`MIN_MAX_CONNECTIONS` when it is lower and
    the devcloud's database user may (a development server; a change made
    at run time, gone when MariaDB restarts).
    """
    import pymysql
    conn = _mysql(settings)
    try:
        with conn.cursor() as cur:
            cur.execute('SELECT @@GLOBAL.max_connections')
            if int(cur.fetchone()[0]) < MIN_MAX_CONNECTIONS:
                try:
                    cur.execute('SET GLOBAL max_connections = %d'
                                % MIN_MAX_CONNECTIONS)
                except pymysql.err.MySQLError as exc:
                    sys.stderr.write(
                        'warning: MariaDB max_connections stays below %d '
                        '(%s): services may be refused connections\n'
                        % (MIN_MAX_CONNECTIONS, exc))
            for name in layout.databases():
                cur.execute('DROP DATABASE IF EXISTS `%s`' % name)
                cur.execute('CREATE DATABASE `%s` CHARACTER SET utf8'
                            % name)
    finally:
        conn.close()


def drop_databases(settings, layout):
    conn = _mysql(settings)
    try:
        with conn.cursor() as cur:
            for name in layout.databases():
                cur.execute('DROP DATABASE IF EXISTS `%s`' % name)
    finally:
        conn.close()


def _rabbitmqctl(*args, check=True):
    proc = subprocess.run(['rabbitmqctl', '-q'] + list(args),
                          stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=60)
    if check and proc.returncode:
        raise process.ServiceError(
            'rabbitmqctl', '%s failed: %s' % (
                ' '.join(args), (proc.stderr or proc.stdout).strip()))
    return proc


def vhost_exists(vhost):
    proc = _rabbitmqctl('list_vhosts', check=False)
    return vhost in proc.stdout.split()


def create_vhost(vhost, user='guest'):
    """Create the RabbitMQ vhost (recreated if left over) and give ``user``
    every permission on it.
    """
    if vhost_exists(vhost):
        _rabbitmqctl('delete_vhost', vhost)
    _rabbitmqctl('add_vhost', vhost)
    _rabbitmqctl('set_permissions', '-p', vhost, user, '.*', '.*', '.*')


def delete_vhost(vhost):
    if vhost_exists(vhost):
        _rabbitmqctl('delete_vhost', vhost)


def _bin(program):
    return preflight.bin_path(program) or program


def keystone_schema(settings, layout, env):
    """Keystone's schema, keys and ``keystone-manage bootstrap`` (admin
    user and project, the identity endpoints).
    """
    conf = ['--config-file', layout.path('etc', 'keystone', 'keystone.conf')]
    log = layout.log('keystone-manage')
    km = _bin('keystone-manage')
    process.run([km] + conf + ['db_sync'], log, env)
    for step in ('fernet_setup', 'credential_setup'):
        process.run([km] + conf + [step, '--keystone-user', 'root',
                                   '--keystone-group', 'root'], log, env)
    url = settings.auth_url
    process.run([km] + conf + [
        'bootstrap', '--bootstrap-password', settings.password,
        '--bootstrap-admin-url', url, '--bootstrap-internal-url', url,
        '--bootstrap-public-url', url,
        '--bootstrap-region-id', config.REGION], log, env)


def nova_schema(settings, layout, env):
    """nova's API database, cell0 and cell1."""
    conf = ['--config-file', layout.path('etc', 'nova', 'nova.conf')]
    log = layout.log('nova-manage')
    nm = _bin('nova-manage')
    process.run([nm] + conf + ['api_db', 'sync'], log, env)
    process.run([nm] + conf + [
        'cell_v2', 'map_cell0', '--database_connection',
        settings.db_url(layout.database('nova_cell0'))], log, env)
    process.run([nm] + conf + ['cell_v2', 'create_cell', '--name', 'cell1'],
                log, env)
    process.run([nm] + conf + ['db', 'sync'], log, env)


def schema_commands(layout, neutron='server'):
    """The other schema commands: ``(name, argv)``."""
    commands = []
    if neutron == 'server':
        commands.append(('neutron-db-manage', [
            _bin('neutron-db-manage'), '--config-file',
            layout.path('etc', 'neutron', 'neutron.conf'), 'upgrade',
            'heads']))
    return commands + [
        ('placement-manage', [
            _bin('placement-manage'), '--config-file',
            layout.path('etc', 'placement', 'placement.conf'),
            'db', 'sync']),
        ('glance-manage', [
            _bin('glance-manage'), '--config-file',
            layout.path('etc', 'glance', 'glance-api.conf'), 'db_sync']),
        ('opie-market', [
            _bin('opie-market'), '--config-file',
            layout.path('etc', 'opie_sched', 'opie_sched.conf'),
            'db', 'sync']),
    ]


def discover_hosts(layout, env):
    process.run([_bin('nova-manage'), '--config-file',
                 layout.path('etc', 'nova', 'nova.conf'), 'cell_v2',
                 'discover_hosts', '--verbose'],
                layout.log('nova-manage'), env)


def admin_connection(settings):
    """An openstacksdk connection as the cloud's admin."""
    import openstack
    return openstack.connect(
        auth_url=settings.auth_url, username='admin',
        password=settings.password, project_name='admin',
        user_domain_name='Default', project_domain_name='Default',
        region_name=config.REGION, identity_api_version='3',
        load_yaml_config=False, load_envvars=False)


#: Catalog entries: (service name, type, service key in the settings'
#: ports, path); Neutron's only when the real server runs.
NEUTRON_ENTRY = ('neutron', 'network', 'neutron', '')
CATALOG = (
    ('placement', 'placement', 'placement', ''),
    ('glance', 'image', 'glance', ''),
    ('nova', 'compute', 'nova-api', '/v2.1'),
    ('opie-market', 'spot-market', 'market-api', ''),
)


def keystone_catalog(settings):
    """Projects, users, role assignments and service endpoints; with
    ``settings.unified_limits`` nova's registered limits
    (:func:`register_limits`) and the system reader role of user
    ``nova``, which reads them. Returns the id of nova's public endpoint
    (``[oslo_limit] endpoint_id``).
    """
    conn = admin_connection(settings)
    identity = conn.identity
    domain = identity.find_domain('default', ignore_missing=False)
    roles = {r.name: r for r in identity.roles()}
    for name in ('member', 'reader', 'service'):
        if name not in roles:
            roles[name] = identity.create_role(name=name)

    def project(name):
        found = identity.find_project(name, domain_id=domain.id)
        return found or identity.create_project(name=name,
                                                domain_id=domain.id)

    def user(name, proj, role_names):
        found = identity.find_user(name, domain_id=domain.id)
        if found is None:
            found = identity.create_user(
                name=name, password=settings.password, domain_id=domain.id,
                default_project_id=proj.id)
        for role_name in role_names:
            identity.assign_project_role_to_user(proj, found,
                                                 roles[role_name])
        return found

    service_project = project('service')
    users = {name: user(name, service_project, ('admin', 'service'))
             for name in config.SERVICE_USERS}
    if settings.unified_limits:
        # nova reads the limits as a system reader ([oslo_limit])
        identity.assign_system_role_to_user(users['nova'], roles['reader'],
                                            system='all')
    for name, (username, proj, role) in config.CLOUD_USERS.items():
        if username == 'admin':
            continue
        user(username, project(proj), (role,))
    catalog = CATALOG + ((NEUTRON_ENTRY,) if settings.neutron == 'server'
                         else ())
    endpoints = {}
    for name, stype, key, path in catalog:
        service = identity.create_service(name=name, type=stype)
        for interface in ('public', 'internal'):
            endpoints[stype, interface] = identity.create_endpoint(
                service_id=service.id, interface=interface,
                url=settings.url(key, path), region_id=config.REGION).id
    if settings.unified_limits:
        register_limits(conn, settings)
    return endpoints['compute', 'public']


def register_limits(conn, settings):
    """Keystone's registered limits of nova
    (:func:`opie_sched.devcloud.config.registered_limits`) on the catalog's
    ``compute`` service in :data:`~opie_sched.devcloud.config.REGION`, as
    the admin (a project admin may create them). Returns
    ``{resource name: default limit}``.
    """
    identity = conn.identity
    [service] = list(identity.services(type='compute'))
    limits = config.registered_limits(settings)
    for name, value in sorted(limits.items()):
        identity.create_registered_limit(
            service_id=service.id, region_id=config.REGION,
            resource_name=name, default_limit=value,
            description='opie-sched devcloud default')
    return limits


def image_and_flavors(settings, layout, env):
    """The fake image, the flavors and their preemptible twins (through
    ``opie-sched flavor create-preemptible``).
    """
    conn = admin_connection(settings)
    conn.image.create_image(
        name=config.IMAGE, data=b'\0' * 512, disk_format='raw',
        container_format='bare', visibility='public',
        allow_duplicates=True)
    for name, vcpus, ram, disk in FLAVORS:
        conn.compute.create_flavor(name=name, vcpus=vcpus, ram=ram,
                                   disk=disk, is_public=True)
    if not settings.unified_limits:
        # nova's default legacy quotas (10 instances, 20 cores) are below
        # what one filled devcloud holds: no limits for the users'
        # projects. (Unified limits: the registered limits of
        # keystone_catalog exceed the cloud's capacity.)
        for _cloud, (_user, project, _role) in config.CLOUD_USERS.items():
            project_id = conn.identity.find_project(
                project, ignore_missing=False).id
            conn.set_compute_quotas(project_id, instances=-1, cores=-1,
                                    ram=-1)
    sched = _bin('opie-sched')
    for name, _vcpus, _ram, _disk in FLAVORS:
        process.run([sched, '--os-cloud', 'devcloud-admin', 'flavor',
                     'create-preemptible', name],
                    layout.log('opie-sched'), env)


def autoscaler_flavors(settings):
    """The public flavors of opie-autoscaler's application
    (:data:`opie_sched.devcloud.config.AUTOSCALER_FLAVORS`; normal
    flavors, priced in the applications file).
    """
    conn = admin_connection(settings)
    for name, vcpus, ram, disk, _capacity, _price in \
            config.AUTOSCALER_FLAVORS:
        conn.compute.create_flavor(name=name, vcpus=vcpus, ram=ram,
                                   disk=disk, is_public=True)


def provider_config(settings, layout, index, env):
    """Write compute ``index``'s provider config with ``opie-sched
    provider-config`` before the compute first starts.
    """
    out = '%s/opie-preemptible.yaml' % config.provider_config_dir(
        layout, index)
    process.run([_bin('opie-sched')] + config.provider_config_command(
        settings, out), layout.log('opie-sched'), env)
