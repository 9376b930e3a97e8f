"""An all-in-one Nova in-process (API, conductor, the opie scheduler,
Placement, fake compute hosts, sqlite) configured the way an operator enables
opie_sched. Used by ``opie-sched demo`` and by the functional tests.

It is built on nova's own functional-test fixtures (shipped in the nova
wheel): the services are the real Nova code, only the hypervisor is fake
(:mod:`opie_sched.demo.fake_driver`).
"""

import os
import sys
import time

import fixtures

from nova.tests.functional import integrated_helpers

from opie_sched.demo import fake_driver
from opie_sched import flavors
from opie_sched import provider_config

#: The paper's host (8 vCPU, 16000 MB, 200 GB) and flavors.
HOST = {'vcpus': 8, 'memory_mb': 16000, 'disk_gb': 200}
PAPER_FLAVORS = {'small': (1, 2000, 20), 'medium': (2, 4000, 40),
                 'large': (4, 8000, 80)}

OPIE_MANAGER = 'opie_sched.scheduler.manager.OpieSchedulerManager'
NOVA_MANAGER = 'nova.scheduler.manager.SchedulerManager'


def api_paste_config():
    """nova's api-paste.ini as installed with the nova wheel."""
    candidates = [os.path.join(sys.prefix, 'etc', 'nova', 'api-paste.ini')]
    import nova
    candidates.append(os.path.join(os.path.dirname(nova.__file__), '..',
                                   '..', '..', '..', 'etc', 'nova',
                                   'api-paste.ini'))
    for path in candidates:
        if os.path.exists(path):
            return os.path.abspath(path)
    raise RuntimeError('api-paste.ini of nova not found in %s' % candidates)


def configure_nova(flags, provider_config_dir, scheduler_filters=True):
    """Apply the nova.conf settings that enable opie_sched.

    :param flags: a ``flags(**kw)`` callable (nova TestCase.flags).
    """
    flags(api_paste_config=api_paste_config(), group='wsgi')
    flags(compute_driver=fake_driver.COMPUTE_DRIVER)
    # The initial_* ratios are what a new ComputeNode record starts with;
    # nova copies the plain ones only at the next resource update.
    flags(cpu_allocation_ratio=1.0, ram_allocation_ratio=1.0,
          disk_allocation_ratio=1.0, initial_cpu_allocation_ratio=1.0,
          initial_ram_allocation_ratio=1.0,
          initial_disk_allocation_ratio=1.0, reserved_host_memory_mb=0,
          reserved_host_disk_mb=0)
    flags(provider_config_location=provider_config_dir, group='compute')
    flags(cores=10000, ram=10000000, instances=1000, group='quota')
    if scheduler_filters:
        flags(available_filters=['nova.scheduler.filters.all_filters',
                                 'opie_sched.scheduler.filters.all_filters'],
              enabled_filters=['ComputeFilter',
                               'PreemptibleFullStateFilter'],
              weight_classes=['opie_sched.scheduler.weights.all_weighers'],
              host_subset_size=1,
              shuffle_best_same_weighed_hosts=False,
              group='filter_scheduler')
    flags(notification_format='versioned', group='notifications')


def write_provider_config(directory, host=HOST):
    """Give every compute node preemptible inventory = its capacity."""
    doc = provider_config.build_provider_config([dict(
        uuid='$COMPUTE_NODE', vcpus=host['vcpus'],
        memory_mb=host['memory_mb'], disk_gb=host['disk_gb'])])
    path = os.path.join(directory, 'opie-preemptible.yaml')
    with open(path, 'w') as f:
        f.write(provider_config.dump_yaml(doc))
    return path


class OpieNovaTestCase(integrated_helpers._IntegratedTestBase):
    """Nova with the opie scheduler manager, filter and weighers enabled."""

    ADMIN_API = True
    microversion = 'latest'
    #: RPC casts stay asynchronous, as in a real deployment: the victims'
    #: computes terminate them while the scheduler waits for the release
    #: (nova's default turns every cast into a nested call in one thread).
    CAST_AS_CALL = False
    #: compute hosts started by setUp
    HOSTS = ('host1', 'host2')
    SCHEDULER_MANAGER = OPIE_MANAGER
    #: extra flags applied before nova starts, as {group: {name: value}}
    EXTRA_FLAGS = {}

    def setUp(self):
        pc_dir = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fake_driver.SizedFakeHosts(
            HOST['vcpus'], HOST['memory_mb'], HOST['disk_gb']))
        write_provider_config(pc_dir)
        configure_nova(self.flags, pc_dir)
        for group, opts in self.EXTRA_FLAGS.items():
            self.flags(group=group, **opts)
        super().setUp()
        self.flavor_ids = {}
        for name, (vcpus, ram, disk) in PAPER_FLAVORS.items():
            self.flavor_ids[name] = self._create_flavor(
                name=name, vcpu=vcpus, memory_mb=ram, disk=disk, ephemeral=0)
            self.flavor_ids[name + '.preemptible'] = self._create_flavor(
                name=name + '.preemptible', vcpu=vcpus, memory_mb=ram,
                disk=disk, ephemeral=0,
                extra_spec=flavors.preemptible_extra_specs(vcpus, ram, disk))

    def _setup_scheduler_service(self):
        return self.start_service('scheduler',
                                  manager=self.SCHEDULER_MANAGER)

    def _setup_compute_service(self):
        computes = [self._start_compute(h) for h in self.HOSTS]
        return computes[0]

    # -- helpers -------------------------------------------------------

    def boot(self, flavor, host=None, name=None, expected='ACTIVE',
             **kwargs):
        """Boot a server of a paper flavor, optionally on a given host."""
        server = self._build_server(
            name=name, flavor_id=self.flavor_ids[flavor],
            networks='none', host=host, **kwargs)
        server = self.api.post_server({'server': server})
        return self._wait_for_state_change(server, expected)

    def server_host(self, server):
        return self.api.get_server(server['id'])[
            'OS-EXT-SRV-ATTR:host']

    def live_uuids(self):
        return {s['id'] for s in self.api.get_servers(detail=False)}

    def usages(self, host):
        return self._get_provider_usages(
            self._get_provider_uuid_by_host(host))


class EmbeddedCloud(OpieNovaTestCase):
    """The demo's all-in-one cloud, driven outside a test runner.

    ``start()`` brings Nova up (nova's fixtures do the work), ``stop()``
    tears it down. Methods return plain values for the replay.
    """

    def __init__(self, hosts=4, opie=True, extra_flags=None):
        super().__init__('runTest')
        self.HOSTS = tuple('host%d' % (i + 1) for i in range(hosts))
        if not opie:
            self.SCHEDULER_MANAGER = NOVA_MANAGER
        self.EXTRA_FLAGS = extra_flags or {}

    def runTest(self):  # pragma: no cover - required by unittest
        pass

    def start(self):
        self.setUp()
        return self

    def stop(self):
        self.doCleanups()

    @property
    def capacity_vcpus(self):
        return HOST['vcpus'] * len(self.HOSTS)

    @property
    def cell(self):
        return self.cell_mappings['cell1']

    def create_flavor(self, name, vcpus, memory_mb, disk_gb, extra_specs):
        return self._create_flavor(name=name, vcpu=vcpus,
                                   memory_mb=memory_mb, disk=disk_gb,
                                   ephemeral=0, extra_spec=extra_specs)

    def boot(self, name, flavor_id, count=1):
        """Create ``count`` servers in one request; wait for each.

        :returns: ``(active uuids, failed uuids)``.
        """
        req = self._build_server(name=name, flavor_id=flavor_id,
                                 networks='none')
        req['min_count'] = req['max_count'] = count
        req['return_reservation_id'] = True
        resv = self.api.post_server({'server': req})['reservation_id']
        servers = self.api.get_servers(
            detail=True, search_opts={'reservation_id': resv})
        ok, failed = [], []
        for server in servers:
            status = self.wait_for_status(server['id'], ('ACTIVE', 'ERROR'))
            (ok if status == 'ACTIVE' else failed).append(server['id'])
        return ok, failed

    def wait_for_status(self, uuid, statuses, timeout=120.0):
        deadline = time.monotonic() + timeout
        while True:
            status = self.api.get_server(uuid)['status']
            if status in statuses:
                return status
            if time.monotonic() > deadline:
                raise RuntimeError('server %s stuck in %s' % (uuid, status))
            time.sleep(0.05)

    def delete_server(self, uuid):
        try:
            self.api.delete_server(uuid)
        except Exception:
            return  # already gone (e.g. preempted in the meantime)
        self._wait_until_deleted({'id': uuid})

    def notifications(self):
        return self.notifier.versioned_notifications
