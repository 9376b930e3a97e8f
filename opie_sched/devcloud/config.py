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
"""Configuration files of the devcloud's services, rendered from
:class:`Settings`.

Each ``*_conf`` function returns ``{section: {option: value}}``; a list
value is written as the option repeated (oslo.config ``MultiStrOpt``).
:func:`render` turns that into INI text. Nothing here starts a process or
touches the network, so every file can be checked by unit tests.

The scheduler options of opie_sched (:func:`scheduler_conf`) are shared with
the DevStack plugin: both run ``opie-scheduler --config-file nova.conf
--config-file <that file>``, the file written by ``opie-sched devcloud
scheduler-conf``.
"""

import dataclasses
import secrets
import typing

#: nova's default ``[filter_scheduler] enabled_filters`` (nova 34).
NOVA_DEFAULT_FILTERS = (
    'ComputeFilter',
    'ComputeCapabilitiesFilter',
    'ImagePropertiesFilter',
    'ServerGroupAntiAffinityFilter',
    'ServerGroupAffinityFilter',
)

#: What opie_sched adds to nova's filters and weighers.
OPIE_FILTERS = ('PreemptibleFullStateFilter',)
OPIE_AVAILABLE_FILTERS = ('nova.scheduler.filters.all_filters',
                          'opie_sched.scheduler.filters.all_filters')
OPIE_WEIGHT_CLASSES = (
    'nova.scheduler.weights.all_weighers',
    'opie_sched.scheduler.weights.preemption_cost.PreemptionCostWeigher',
    'opie_sched.scheduler.weights.preemptible_count.PreemptibleCountWeigher',
)

#: Die-Hard (:mod:`opie_sched.scheduler.reliability_plan`), added when
#: asked: the filter goes last (it plans from the hosts that reach it);
#: ``opie_sched.scheduler.filters.all_filters`` already makes it available.
RELIABILITY_FILTERS = ('FailureDomainFilter',)
RELIABILITY_WEIGHT_CLASSES = (
    'opie_sched.scheduler.weights.reliability.ReliabilityWeigher',)

#: ``Settings.market_capacity_source``: the ``[opie_market]
#: capacity_source`` choices.
CAPACITY_SOURCES = ('placement', 'hypervisors')

#: Region of every catalog entry.
REGION = 'RegionOne'

#: Name of the image uploaded by ``up`` (512 zero bytes, raw).
IMAGE = 'devcloud-fake'

#: Users created by ``up``: cloud name -> (user, project, role).
CLOUD_USERS = {
    'devcloud-admin': ('admin', 'admin', 'admin'),
    'devcloud-demo': ('demo', 'demo', 'member'),
    'devcloud-alt': ('alt_demo', 'alt_demo', 'member'),
}

#: Service users (in project ``service``, roles admin and service).
SERVICE_USERS = ('nova', 'placement', 'glance', 'neutron', 'opie-market')

#: opie-autoscaler's application on a devcloud ``--with-autoscaler``: the
#: autoscaler runs as the demo user (an application owner's credentials)
#: and scales the servers tagged :data:`AUTOSCALER_TAG` of project demo.
AUTOSCALER_APP = 'devcloud-app'
AUTOSCALER_TAG = 'devcloud-app'
AUTOSCALER_CLOUD = 'devcloud-demo'
#: Its flavors: (name, vCPU, RAM MB, disk GB, capacity, price). The
#: capacity is in vCPU (the demand's unit); the price is currency per hour.
#: The large flavor is cheaper per vCPU (3.5 for 4) but not for small
#: demands, so the cheapest set (thesis Paper V, 3) changes with the
#: demand: 2 vCPU -> 2 small (2.0/h), 8 -> 2 large (7.0/h), 3 -> 3 small
#: (3.0/h, not 1 large at 3.5/h). Every such repacking passes Paper V's
#: gain test (eq. 3) with the default d and K by at least 6 %.
AUTOSCALER_FLAVORS = (
    ('app.small', 1, 512, 1, 1, 1.0),
    ('app.large', 4, 2048, 1, 4, 3.5),
)
#: Seconds between two rounds of the devcloud's autoscaler (and between
#: two status polls of the servers it boots or deletes).
AUTOSCALER_INTERVAL = 5.0
AUTOSCALER_POLL = 1.0

#: ``Settings.neutron``: the real neutron-server (API only: ML2 without
#: mechanism drivers, no agents) or the stand-in of
#: :mod:`opie_sched.devcloud.neutron_standin`.
NEUTRON_MODES = ('server', 'standin')

#: The Redis server (host:port) of the scheduler hosts' locks when there
#: are several (one runs on every machine of the project's kind).
REDIS = '127.0.0.1:6379'

#: nova's quota driver reading Keystone's unified limits.
UNIFIED_LIMITS_DRIVER = 'nova.quota.UnifiedLimitsDriver'

#: The unified limits of nova that are not resources of a server's
#: Placement request (``nova.limit.local``), at nova's legacy defaults
#: (``[quota] metadata_items``, ``injected_files``,
#: ``injected_file_content_bytes``, ``injected_file_path_length``,
#: ``key_pairs``, ``server_groups``, ``server_group_members``): what every
#: project had before the devcloud used unified limits.
NOVA_LOCAL_LIMITS = {
    'server_metadata_items': 128,
    'server_injected_files': 5,
    'server_injected_file_content_bytes': 10 * 1024,
    'server_injected_file_path_bytes': 255,
    'server_key_pairs': 100,
    'server_groups': 10,
    'server_group_members': 10,
}

#: The Placement classes of a normal server and of a preemptible one
#: (``opie_sched.common.flavors``): each has a registered limit.
STANDARD_CLASSES = ('VCPU', 'MEMORY_MB', 'DISK_GB')
PREEMPTIBLE_CLASSES = ('CUSTOM_PREEMPTIBLE_VCPU',
                       'CUSTOM_PREEMPTIBLE_MEMORY_MB',
                       'CUSTOM_PREEMPTIBLE_DISK_GB')


@dataclasses.dataclass(eq=False)
class Settings:
    """The parameters of one devcloud (stored in its state file).

    :param ports: ``{service: TCP port}`` for the HTTP services of
        :data:`opie_sched.devcloud.layout.HTTP_SERVICES`.
    :param computes: number of nova-compute services (>= 1).
    :param scheduler_workers: opie-scheduler worker processes (>= 1).
    :param scheduler_hosts: opie-scheduler services as separate scheduler
        hosts (>= 1), each its own process tree with its own ``host`` and
        ``state_path`` (:func:`scheduler_host_conf`); from 2 on, their
        locks are on the Redis server of :data:`REDIS` (tooz's redis
        driver), shared by all of them.
    :param compute_vcpus: vCPUs of each fake compute host.
    :param compute_ram_mb: RAM of each fake compute host, MB.
    :param compute_disk_gb: local disk of each fake compute host, GB.
    :param allocation_ratio: cpu/ram/disk allocation ratio of every host
        (the same value goes into nova.conf and the provider config).
    :param password: password of every user of the cloud (a random one
        when ``None``).
    :param prefix: ``sys.prefix`` of the environment holding the services
        (for the paste files shipped by nova and glance).
    :param preemptible_cpu_ratio: allocation ratio of the vCPUs (> 0), in
        nova.conf (``cpu_allocation_ratio``: the full-state filter reads
        the host's ratio) and in the preemptible vCPU inventory of the
        provider config; RAM and disk keep ``allocation_ratio``. ``None``:
        ``allocation_ratio``. Above 1 Placement admits more preemptible
        vCPU than the hosts have: with ``market_capacity_source =
        'hypervisors'`` (physical CPUs) the market is then contended by
        CPU-heavy preemptible servers.
    :param market_period: ``[opie_market] period_seconds`` (seconds,
        >= 1); ``None``: the market's default.
    :param market_notice: ``[opie_market] notice_period`` (seconds,
        >= 0); ``None``: the market's default.
    :param market_tick: ``[opie_market] tick_interval`` (seconds,
        >= 0.1); ``None``: the market's default.
    :param market_capacity_source: ``[opie_market] capacity_source``, one
        of :data:`CAPACITY_SOURCES`; ``None``: the market's default.
    :param reliability: enable Die-Hard's FailureDomainFilter and
        ReliabilityWeigher in opie-scheduler (:func:`scheduler_conf`).
    :param notifications: nova sends its versioned notifications
        (:func:`notification_conf`) on the cloud's RabbitMQ vhost, topic
        :data:`NOTIFICATION_TOPIC`. Off by default: nothing in the cloud
        consumes them, so they would pile up in RabbitMQ for the cloud's
        life and cost a publish per state change in nova-api,
        nova-conductor and every compute.
    :param stock_scheduler: run stock ``nova-scheduler`` with nova's
        default filters and weighers instead of opie-scheduler (a cloud
        without opie_sched's scheduling, to compare with); opie-market
        and the preemptible flavors stay.
    :param unified_limits: nova's quotas are Keystone's unified limits
        (``[quota] driver`` :data:`UNIFIED_LIMITS_DRIVER`, the
        ``[oslo_limit]`` options of :func:`oslo_limit_conf`, the
        registered limits of :func:`registered_limits`), so the
        preemptible classes have limits of their own; False: nova's legacy
        quotas in its database, lifted for the cloud's projects.
    :raises ValueError: a count or size below 1, a ratio <= 0, a market
        time out of range, an unknown capacity source, stock_scheduler
        with reliability or several scheduler hosts.
    """

    ports: dict
    computes: int = 2
    scheduler_workers: int = 2
    compute_vcpus: int = 8
    compute_ram_mb: int = 16000
    compute_disk_gb: int = 200
    allocation_ratio: float = 1.0
    password: typing.Optional[str] = None
    prefix: str = '/usr'
    host: str = '127.0.0.1'
    mysql: str = 'root@127.0.0.1:3306'
    rabbit: str = 'guest:guest@127.0.0.1:5672'
    debug: bool = False
    with_autoscaler: bool = False
    with_repacker: bool = False
    neutron: str = 'server'
    preemptible_cpu_ratio: typing.Optional[float] = None
    market_period: typing.Optional[int] = None
    market_notice: typing.Optional[int] = None
    market_tick: typing.Optional[float] = None
    market_capacity_source: typing.Optional[str] = None
    reliability: bool = False
    scheduler_hosts: int = 1
    notifications: bool = False
    stock_scheduler: bool = False
    unified_limits: bool = True

    def __post_init__(self):
        for name in ('computes', 'scheduler_workers', 'scheduler_hosts',
                     'compute_vcpus', 'compute_ram_mb', 'compute_disk_gb'):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError('%s must be an integer >= 1, got %r'
                                 % (name, value))
        if self.compute_ram_mb <= 512:
            raise ValueError('compute_ram_mb must exceed the 512 MB nova '
                             'reserves for the host, got %r'
                             % self.compute_ram_mb)
        if self.neutron not in NEUTRON_MODES:
            raise ValueError('neutron must be one of %s, got %r'
                             % (', '.join(NEUTRON_MODES), self.neutron))
        for name in ('allocation_ratio', 'preemptible_cpu_ratio'):
            value = getattr(self, name)
            if value is None and name != 'allocation_ratio':
                continue
            if isinstance(value, bool) or not isinstance(
                    value, (int, float)) or not 0 < value < float('inf'):
                raise ValueError('%s must be a number > 0, got %r'
                                 % (name, value))
        for name, low in (('market_period', 1), ('market_notice', 0),
                          ('market_tick', 0.1)):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(
                    value, (int, float)) or not low <= value < float('inf'):
                raise ValueError('%s must be a number >= %g, got %r'
                                 % (name, low, value))
        for name in ('market_period', 'market_notice'):
            value = getattr(self, name)
            if value is not None and value != int(value):
                raise ValueError('%s must be whole seconds, got %r'
                                 % (name, value))
        if self.stock_scheduler and (self.reliability
                                     or self.scheduler_hosts > 1):
            raise ValueError('stock_scheduler runs one stock nova-scheduler '
                             'host without opie_sched: reliability and '
                             'scheduler_hosts > 1 need opie-scheduler')
        if self.market_capacity_source not in (None,) + CAPACITY_SOURCES:
            raise ValueError('market_capacity_source must be one of %s, got '
                             '%r' % (', '.join(CAPACITY_SOURCES),
                                     self.market_capacity_source))
        self.ports = dict(self.ports)
        self.allocation_ratio = float(self.allocation_ratio)
        self.password = self.password or secrets.token_hex(12)

        def optional(kind, value):
            return None if value is None else kind(value)
        self.preemptible_cpu_ratio = optional(float,
                                              self.preemptible_cpu_ratio)
        self.market_period = optional(int, self.market_period)
        self.market_notice = optional(int, self.market_notice)
        self.market_tick = optional(float, self.market_tick)
        for name in ('reliability', 'notifications', 'stock_scheduler',
                     'unified_limits'):
            setattr(self, name, bool(getattr(self, name)))

    @property
    def cpu_allocation_ratio(self):
        """The vCPU allocation ratio of every host (normal and
        preemptible inventory alike).
        """
        if self.preemptible_cpu_ratio is None:
            return self.allocation_ratio
        return self.preemptible_cpu_ratio

    def to_dict(self):
        """The fields as a JSON-able dict (the state file's
        ``settings``).
        """
        return {f.name: getattr(self, f.name)
                for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, data):
        """The settings of a state file's dict; keys that are no field
        are ignored.
        """
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in names}
        # a cloud started before the devcloud used unified limits
        kwargs.setdefault('unified_limits', False)
        return cls(**kwargs)

    def url(self, service, path=''):
        """The endpoint URL of an HTTP service."""
        return 'http://%s:%d%s' % (self.host, self.ports[service], path)

    @property
    def auth_url(self):
        return self.url('keystone', '/v3')

    def db_url(self, database):
        """SQLAlchemy URL of a MariaDB database (full name)."""
        return 'mysql+pymysql://%s/%s?charset=utf8' % (self.mysql, database)

    def transport_url(self, vhost):
        return 'rabbit://%s/%s' % (self.rabbit, vhost)

    def scheduler_host(self, index):
        """Host name of scheduler host ``index`` (1-based)."""
        return 'devcloud-s%d' % index

    def compute_host(self, index):
        """Host name of compute ``index`` (1-based)."""
        return 'devcloud-c%d' % index


def render(sections):
    """INI text of ``{section: {option: value}}`` (lists repeat the option,
    booleans are ``True``/``False``, ``None`` values are left out).
    """
    lines = []
    for section, options in sections.items():
        lines.append('[%s]' % section)
        for key, value in options.items():
            if value is None:
                continue
            values = value if isinstance(value, (list, tuple)) else [value]
            for item in values:
                lines.append('%s = %s' % (key, item))
        lines.append('')
    return '\n'.join(lines)


def _authtoken(settings, username):
    """``[keystone_authtoken]`` of a service validating tokens: its
    :func:`_service_auth` and keystonemiddleware's own options.
    """
    return dict({'www_authenticate_uri': settings.auth_url},
                **_service_auth(settings, username),
                memcached_servers=None, service_token_roles_required=True)


def _service_auth(settings, username):
    """keystoneauth options of a service calling another service."""
    return {
        'auth_type': 'password',
        'auth_url': settings.auth_url,
        'username': username,
        'password': settings.password,
        'project_name': 'service',
        'user_domain_name': 'Default',
        'project_domain_name': 'Default',
        'region_name': REGION,
    }


def keystone_conf(settings, layout):
    return {
        'DEFAULT': {'debug': settings.debug},
        'database': {'connection': settings.db_url(
            layout.database('keystone'))},
        'token': {'provider': 'fernet'},
        'fernet_tokens': {'key_repository': layout.path(
            'keystone', 'fernet-keys')},
        'fernet_receipts': {'key_repository': layout.path(
            'keystone', 'fernet-keys')},
        'credential': {'key_repository': layout.path(
            'keystone', 'credential-keys')},
        # Without a cache a token validation takes about 1 s here.
        'cache': {'enabled': True, 'backend': 'dogpile.cache.memory'},
        'identity': {'password_hash_rounds': 4},
    }


def placement_conf(settings, layout):
    return {
        'DEFAULT': {'debug': settings.debug},
        'placement_database': {'connection': settings.db_url(
            layout.database('placement'))},
        'api': {'auth_strategy': 'keystone'},
        'keystone_authtoken': _authtoken(settings, 'placement'),
        # Placement 16.0.0 retries a conflicting allocation write inside
        # the request's open transaction: on MySQL/MariaDB the retried
        # capacity check reads stale usage and concurrent claims can
        # exceed an inventory (30 concurrent 1-VCPU claims on a 12-VCPU
        # provider: 13-14 accepted in 8 of 10 rounds). One attempt hands
        # every conflict back to nova, which retries it in a new request.
        'placement': {'allocation_conflict_retry_count': 1},
    }


def glance_conf(settings, layout):
    return {
        'DEFAULT': {
            'debug': settings.debug,
            'enabled_backends': 'fs:file',
            'bind_host': settings.host,
            'bind_port': settings.ports['glance'],
            'public_endpoint': settings.url('glance'),
        },
        'database': {'connection': settings.db_url(
            layout.database('glance'))},
        'glance_store': {'default_backend': 'fs'},
        'fs': {'filesystem_store_datadir': layout.path('glance', 'images')},
        'os_glance_staging_store': {
            'filesystem_store_datadir': layout.path('glance', 'staging')},
        'os_glance_tasks_store': {
            'filesystem_store_datadir': layout.path('glance', 'tasks')},
        'paste_deploy': {'flavor': 'keystone'},
        'keystone_authtoken': _authtoken(settings, 'glance'),
        'oslo_concurrency': {'lock_path': layout.path('glance', 'locks')},
    }


def neutron_conf(settings, layout):
    """neutron.conf of an API-only neutron-server: ML2 with no mechanism
    driver and no tenant network type (servers use ``--nic none``), no
    agents, no service plugins, no notifications to nova.
    """
    return {
        'DEFAULT': {
            'debug': settings.debug,
            'core_plugin': 'ml2',
            'service_plugins': '',
            'auth_strategy': 'keystone',
            'transport_url': settings.transport_url(layout.vhost),
            'api_paste_config': layout.path('etc', 'neutron',
                                            'api-paste.ini'),
            'notify_nova_on_port_status_changes': False,
            'notify_nova_on_port_data_changes': False,
            'state_path': layout.path('neutron'),
        },
        'database': {'connection': settings.db_url(
            layout.database('neutron'))},
        'keystone_authtoken': _authtoken(settings, 'neutron'),
        'ml2': {'type_drivers': 'flat,vlan', 'tenant_network_types': '',
                'mechanism_drivers': '', 'extension_drivers': ''},
        'oslo_concurrency': {'lock_path': layout.path('neutron', 'locks')},
    }


#: The topic of nova's versioned notifications (nova's default
#: ``[notifications] versioned_notifications_topics``).
NOTIFICATION_TOPIC = 'versioned_notifications'


def notification_conf(settings):
    """The notification options of nova.conf: ``{}`` unless
    ``settings.notifications``; else oslo.messaging's ``messagingv2``
    driver on the cloud's own transport (``[DEFAULT] transport_url``,
    its RabbitMQ vhost), nova's versioned format only (the legacy one
    would double every message), on :data:`NOTIFICATION_TOPIC`, and
    ``instance.update`` on every ``vm_state`` change (nova sends none
    by default), e.g. BUILDING -> ERROR when a build finds no valid host.
    """
    if not settings.notifications:
        return {}
    return {
        'oslo_messaging_notifications': {'driver': 'messagingv2'},
        'notifications': {
            'notification_format': 'versioned',
            'versioned_notifications_topics': NOTIFICATION_TOPIC,
            'notify_on_state_change': 'vm_state',
        },
    }


def nova_conf(settings, layout, limits_endpoint=None):
    """nova.conf shared by nova-api, nova-conductor, opie-scheduler and the
    computes (each compute adds :func:`compute_conf`).

    :param limits_endpoint: id of nova's public endpoint in Keystone's
        catalog, for ``[oslo_limit] endpoint_id`` (:func:`quota_conf`;
        known once the catalog exists).
    """
    ratio = settings.allocation_ratio
    return {
        'DEFAULT': {
            'debug': settings.debug,
            'transport_url': settings.transport_url(layout.vhost),
            'compute_driver': 'fake.FakeDriver',
            'state_path': layout.path('nova'),
            'my_ip': settings.host,
            'cpu_allocation_ratio': settings.cpu_allocation_ratio,
            'ram_allocation_ratio': ratio,
            'disk_allocation_ratio': ratio,
            'reserved_host_memory_mb': 512,
        },
        'wsgi': {'api_paste_config': layout.path('etc', 'nova',
                                                 'api-paste.ini')},
        'api': {'auth_strategy': 'keystone'},
        'api_database': {'connection': settings.db_url(
            layout.database('nova_api'))},
        'database': {'connection': settings.db_url(layout.database('nova'))},
        'keystone_authtoken': _authtoken(settings, 'nova'),
        'placement': _service_auth(settings, 'placement'),
        # nova's service user: the token and catalog of the scheduler's
        # own compute API calls that reach Glance (the shelve behaviour's
        # snapshot, the restore's unshelve; opie_sched.scheduler.actions.
        # service_context); send_service_user_token stays off
        'service_user': _service_auth(settings, 'nova'),
        # The stand-in is kept out of the catalog: nova is pointed at it.
        'neutron': dict(_service_auth(settings, 'nova'),
                        endpoint_override=settings.url('neutron')
                        if settings.neutron == 'standin' else None),
        'glance': {'region_name': REGION},
        'conductor': {'workers': 1},
        'oslo_concurrency': {'lock_path': layout.path('nova', 'locks')},
        'oslo_messaging_rabbit': {'heartbeat_timeout_threshold': 0},
        'compute': {'provider_config_location': None},
        **notification_conf(settings),
        **quota_conf(settings, limits_endpoint),
    }


def oslo_limit_conf(settings, endpoint_id=None):
    """``[oslo_limit]`` of nova.conf: how nova reads Keystone's limits.
    As nova's unified limits guide says, a service user with the
    ``reader`` role on the system (``nova``, given it by the bootstrap)
    and a system-scoped token: it reads every project's limits, and the
    catalog to find nova's own service. nova's limits are registered on
    the ``compute`` service of :data:`REGION`: oslo.limit and nova find it
    from ``endpoint_id`` (nova's public endpoint) when given, one Keystone
    call; else by type and region among the public endpoints
    (``endpoint_service_type``, ``endpoint_region_name``,
    ``endpoint_interface``), three calls. nova makes them at every quota
    check (a new ``oslo_limit.limit.Enforcer`` per request).
    """
    conf = {
        'auth_type': 'password',
        'auth_url': settings.auth_url,
        'username': 'nova',
        'password': settings.password,
        'user_domain_name': 'Default',
        'system_scope': 'all',
    }
    if endpoint_id:
        conf['endpoint_id'] = endpoint_id
    else:
        conf.update(endpoint_service_type='compute',
                    endpoint_region_name=REGION,
                    endpoint_interface='public')
    return conf


def quota_conf(settings, limits_endpoint=None):
    """The quota sections of nova.conf: ``[quota] driver`` and
    ``[oslo_limit]`` (:func:`oslo_limit_conf` with ``limits_endpoint``)
    when ``settings.unified_limits``; ``{}`` (nova's legacy quotas)
    otherwise.
    """
    if not settings.unified_limits:
        return {}
    return {'quota': {'driver': UNIFIED_LIMITS_DRIVER},
            'oslo_limit': oslo_limit_conf(settings, limits_endpoint)}


#: How many times the cloud's capacity a registered limit allows.
LIMIT_HEADROOM = 10


def registered_limits(settings):
    """``{resource name: default limit}`` of the Keystone registered
    limits of nova (service ``compute``, region :data:`REGION`) on a
    cloud with ``unified_limits``: every limit a project's boots meet.

    * ``class:VCPU``, ``class:MEMORY_MB``, ``class:DISK_GB`` and their
      preemptible twins ``class:CUSTOM_PREEMPTIBLE_*``:
      :data:`LIMIT_HEADROOM` times the cloud's capacity of the class
      (vCPU, MB, GB), the sum over the computes of ``(total - reserved) x
      allocation ratio`` as Placement counts it (the preemptible inventory
      of the provider configs has the same totals and ratios);
    * ``servers``: :data:`LIMIT_HEADROOM` times the cloud's vCPU capacity
      (a server holds at least one vCPU of either class; servers in ERROR
      hold none);
    * :data:`NOVA_LOCAL_LIMITS` at nova's legacy defaults.

    No project meets the class limits or ``servers`` before the cloud is
    full, so the cloud behaves as it did with its projects' quotas
    unlimited, while the preemptible classes already have limits of their
    own that a project limit (``openstack limit create --project P
    --service nova --resource-limit N class:CUSTOM_PREEMPTIBLE_VCPU``)
    lowers.
    """
    n = settings.computes
    vcpus = int(n * settings.compute_vcpus * settings.cpu_allocation_ratio)
    # nova's reserved_host_memory_mb (nova_conf) and the provider configs'
    ram_mb = int(n * (settings.compute_ram_mb - 512)
                 * settings.allocation_ratio)
    disk_gb = int(n * settings.compute_disk_gb * settings.allocation_ratio)
    limits = {'servers': LIMIT_HEADROOM * vcpus}
    for std, pre, amount in zip(STANDARD_CLASSES, PREEMPTIBLE_CLASSES,
                                (vcpus, ram_mb, disk_gb)):
        limits['class:' + std] = LIMIT_HEADROOM * amount
        limits['class:' + pre] = LIMIT_HEADROOM * amount
    limits.update(NOVA_LOCAL_LIMITS)
    return limits


def compute_conf(settings, layout, index):
    """The overlay config of compute ``index`` (1-based): its own host,
    state and instances paths and provider config directory, and nova's
    fake driver that keeps its node identity (the ``compute_id`` file in
    its ``state_path``), so a compute killed or stopped can be started
    again (``fake.FakeDriver`` reports a new node uuid at every start and
    nova refuses to start it a second time).
    """
    return {
        'DEFAULT': {
            'compute_driver': 'fake.FakeDriverWithoutFakeNodes',
            'host': settings.compute_host(index),
            'state_path': layout.path('compute-%d' % index),
            'instances_path': layout.path('compute-%d' % index,
                                          'instances'),
        },
        'compute': {'provider_config_location': provider_config_dir(
            layout, index)},
        'oslo_concurrency': {'lock_path': layout.path(
            'compute-%d' % index, 'locks')},
    }


def coordination_url(settings, layout):
    """``[opie_preemption] coordination_url`` of the scheduler hosts: None
    (the file driver of one host) for one scheduler host, else tooz's
    redis driver on :data:`REDIS` in a namespace of this cloud.
    """
    if settings.scheduler_hosts < 2:
        return None
    return 'redis://%s?namespace=%s' % (REDIS, layout.vhost)


def scheduler_host_conf(settings, layout, index):
    """The overlay config of scheduler host ``index`` (1-based): its own
    ``host``, ``state_path`` and lock path, the locks' backend shared
    by every scheduler host (:func:`coordination_url`), and, when nova
    sends notifications (``settings.notifications``), ``[opie_preemption]
    release_notifications``: the waits on victims wake at Nova's
    versioned notifications (:mod:`opie_sched.scheduler.wakeup`).
    """
    conf = {
        'DEFAULT': {
            'host': settings.scheduler_host(index),
            'state_path': layout.path('scheduler-%d' % index),
        },
        'oslo_concurrency': {'lock_path': layout.path(
            'scheduler-%d' % index, 'locks')},
    }
    preemption = {}
    url = coordination_url(settings, layout)
    if url:
        preemption['coordination_url'] = url
    if settings.notifications:
        preemption['release_notifications'] = True
    if preemption:
        conf['opie_preemption'] = preemption
    return conf


def provider_config_dir(layout, index):
    return layout.path('compute-%d' % index, 'provider_config')


def provider_config_command(settings, output):
    """``opie-sched provider-config`` arguments for one fake host (written
    before the compute first starts; uuid ``$COMPUTE_NODE``).
    """
    ratio = '%g' % settings.allocation_ratio
    return ['provider-config',
            '--vcpus', str(settings.compute_vcpus),
            '--memory-mb', str(settings.compute_ram_mb),
            '--disk-gb', str(settings.compute_disk_gb),
            '--reserved-vcpus', '0', '--reserved-memory-mb', '512',
            '--reserved-disk-gb', '0',
            '--cpu-allocation-ratio', '%g' % settings.cpu_allocation_ratio,
            '--ram-allocation-ratio', ratio,
            '--disk-allocation-ratio', ratio,
            '--output', output]


def stock_scheduler_conf(workers=None):
    """The scheduler file of a ``stock_scheduler`` cloud: nova's own
    filters and weighers (nova's defaults, written out so the file says
    what runs) and ``[scheduler] workers``.
    """
    conf = {
        'filter_scheduler': {
            'available_filters': 'nova.scheduler.filters.all_filters',
            'enabled_filters': ','.join(NOVA_DEFAULT_FILTERS),
            'weight_classes': 'nova.scheduler.weights.all_weighers',
        },
    }
    if workers is not None:
        conf['scheduler'] = {'workers': workers}
    return conf


def scheduler_conf(workers=None, base_filters=None, reliability=False):
    """The opie_sched part of the scheduler's nova.conf.

    :param workers: ``[scheduler] workers`` (``None``: nova's default).
    :param base_filters: the filters to keep before opie_sched's (default
        nova's :data:`NOVA_DEFAULT_FILTERS`); a comma-separated string or a
        list.
    :param reliability: also enable Die-Hard: FailureDomainFilter last
        and ReliabilityWeigher (:mod:`opie_sched.scheduler.reliability_plan`;
        failure domains from host aggregate metadata). Requests without
        the ``opie_tasks`` hint pass the filter and weigh 0.
    """
    if base_filters is None:
        base_filters = NOVA_DEFAULT_FILTERS
    elif isinstance(base_filters, str):
        base_filters = [f.strip() for f in base_filters.split(',')
                        if f.strip()]
    filters = list(base_filters)
    filters += [f for f in OPIE_FILTERS if f not in filters]
    available = list(OPIE_AVAILABLE_FILTERS)
    weighers = list(OPIE_WEIGHT_CLASSES)
    if reliability:
        filters = [f for f in filters if f not in RELIABILITY_FILTERS]
        filters += list(RELIABILITY_FILTERS)
        weighers += list(RELIABILITY_WEIGHT_CLASSES)
    conf = {
        'filter_scheduler': {
            'available_filters': available,
            'enabled_filters': ','.join(filters),
            'weight_classes': ','.join(weighers),
        },
    }
    if workers is not None:
        conf['scheduler'] = {'workers': workers}
    return conf


def market_conf(settings, layout):
    """opie_sched.conf of opie-market, its API and the companions."""
    return {
        'DEFAULT': {'debug': settings.debug},
        'database': {
            'connection': settings.db_url(layout.database('market')),
        },
        'opie_market': {
            'state_dir': layout.path('market'),
            'cloud': 'devcloud-admin',
            'api_auth_strategy': 'keystone',
            'api_host': settings.host,
            'api_port': settings.ports['market-api'],
            'coordination_url': 'file://' + layout.path('locks'),
            'period_seconds': settings.market_period,
            'notice_period': settings.market_notice,
            'tick_interval': settings.market_tick,
            'capacity_source': settings.market_capacity_source,
        },
        'keystone_authtoken': _authtoken(settings, 'opie-market'),
        'opie_autoscaler': {
            'cloud': AUTOSCALER_CLOUD,
            'coordination_url': 'file://' + layout.path('locks'),
            # the catalog's spot-market entry (bootstrap registers it)
            'market_url': 'catalog',
            'applications_file': autoscaler_applications_file(layout),
            'interval': AUTOSCALER_INTERVAL,
            'poll_interval': AUTOSCALER_POLL,
        },
        'opie_repacker': {
            'cloud': 'devcloud-admin',
            'state_dir': layout.path('repacker'),
            'dry_run': True,
        },
    }


def autoscaler_applications_file(layout):
    """opie-autoscaler's applications file (re-read every round)."""
    return layout.path('autoscaler-apps.yaml')


def autoscaler_demand_file(layout):
    """The demand of :data:`AUTOSCALER_APP`, vCPU as a bare number: what a
    monitoring system would write (``file`` demand source of
    opie-autoscaler).
    """
    return layout.path('autoscaler-demand')


def autoscaler_applications(layout):
    """The applications file's content (a dict): :data:`AUTOSCALER_APP`
    on :data:`AUTOSCALER_FLAVORS`, its servers tagged
    :data:`AUTOSCALER_TAG`, booted from the devcloud's image without a
    network, its demand read from :func:`autoscaler_demand_file`.
    """
    return {'applications': [{
        'name': AUTOSCALER_APP,
        'tag': AUTOSCALER_TAG,
        'image': IMAGE,
        'networks': 'none',
        'flavors': {name: {'capacity': capacity, 'price': price}
                    for name, _v, _r, _d, capacity, price
                    in AUTOSCALER_FLAVORS},
        'demand': {'source': 'file', 'path': autoscaler_demand_file(layout)},
        'max_servers': 20,
    }]}


def clouds_yaml(settings):
    """clouds.yaml content (a dict) with the clouds of
    :data:`CLOUD_USERS`.
    """
    clouds = {}
    for name, (user, project, _role) in CLOUD_USERS.items():
        clouds[name] = {
            'auth': {
                'auth_url': settings.auth_url,
                'username': user,
                'password': settings.password,
                'project_name': project,
                'user_domain_name': 'Default',
                'project_domain_name': 'Default',
            },
            'region_name': REGION,
            'interface': 'public',
            'identity_api_version': 3,
        }
    return {'clouds': clouds}
