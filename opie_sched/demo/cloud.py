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
"""An all-in-one Nova in-process (API, conductor, the opie scheduler,
Placement, fake compute hosts, sqlite) configured the way an operator enables
opie_sched. Used by ``opie-sched demo``, ``opie-sched market demo``, the
benchmarks and (through :func:`configure_nova`) the functional tests.

:class:`EmbeddedCloud` is a runtime, not a test: a ``fixtures.Fixture``
that composes nova's in-process service fixtures as a library. There is no
test runner, hence no test timeout, output capture or warnings-as-errors;
started after :func:`use_native_threading`, the services run in native
threading mode, nova 34's production default.

Which of nova's test fixtures are used, and why there is no other way:
nova ships no in-process runtime. Its services need a message bus
(``RPCFixture``: oslo.messaging's in-memory ``fake://`` driver with nova's
serializers), cell and API databases created from nova's own migrations
with their cell mappings (``Database``/``CellDatabases``), an in-process
Placement (``PlacementFixture``: placement's WSGI application behind
wsgi-intercept, with nova's report client pointed at it), image, network
and volume services nova calls on every boot (``GlanceFixture``,
``NeutronFixture``, ``CinderFixture``: in-memory stand-ins, since no Glance,
Neutron or Cinder runs), the compute API's WSGI application with its paste
pipeline behind wsgi-intercept (``OSAPIFixture``), a notification sink
(``NotificationFixture``: the demo counts preemptions from the
``opie.instance.preempt`` notifications), per-host compute node identities
in one process (``ComputeNodeIdFixture``), nova's report client reaching
that Placement without Keystone (``OpenStackSDKFixture``), nova's
configuration defaults for all of the above (``ConfFixture``), the default
policy as a deployment without a policy file has it (``RealPolicyFixture``),
nova's thread pools shut down with the cloud so that another can start in
the same process (``IsolatedExecutorFixture``; and, under eventlet only,
``PropagateTestCaseIdToChildEventlets`` for the notification sink), and
service start-up with cell targeting and one ``host`` per compute service
(``ServiceFixture``, ``ConfPatcher``). Everything else a nova test case sets
up (timeouts, output capture, warning filters, poison
fixtures, mock checks) is left out.
A deployment with real services is ``opie-sched demo --os-cloud NAME``.
"""

import atexit
import inspect
import logging
import os
import sys
import threading

import fixtures

from opie_sched.common import compat
from opie_sched.common import flavors
from opie_sched.common import provider_config

LOG = logging.getLogger(__name__)

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


def configure_nova(flags, provider_config_dir, scheduler_filters=True,
                   cpu_allocation_ratio=1.0):
    """Apply the nova.conf settings that enable opie_sched.

    :param flags: a ``flags(**kw)`` callable (nova TestCase.flags).
    :param cpu_allocation_ratio: nova's ``cpu_allocation_ratio`` and
        ``initial_cpu_allocation_ratio`` (> 0, default 1.0: no
        overcommit). Give the preemptible vCPU inventory's ratio
        (:func:`write_provider_config`) here too: the scheduler's
        full-state filter reads the host's ratio.
    """
    # Imported here: nova.virt imports eventlet (see use_native_threading).
    from opie_sched.demo import fake_driver
    flags(api_paste_config=api_paste_config(), group='wsgi')
    flags(compute_driver=fake_driver.COMPUTE_DRIVER)
    # The initial_* ratios are what a new ComputeNode record starts with;
    # nova copies the plain ones only at the next resource update.
    flags(cpu_allocation_ratio=cpu_allocation_ratio,
          ram_allocation_ratio=1.0, disk_allocation_ratio=1.0,
          initial_cpu_allocation_ratio=cpu_allocation_ratio,
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


def write_provider_config(directory, host=HOST, cpu_allocation_ratio=1.0):
    """Give every compute node preemptible inventory = its capacity.

    :param directory: nova's ``[compute] provider_config_location``.
    :param host: ``{"vcpus", "memory_mb", "disk_gb"}`` of a node.
    :param cpu_allocation_ratio: allocation ratio of the preemptible vCPU
        inventory (> 0; 2.0 admits twice the host's vCPUs); RAM and disk
        are never overcommitted.
    :returns: the path of the file written.
    :raises opie_sched.common.provider_config.ProviderConfigError: a bad ratio.
    """
    doc = provider_config.build_provider_config([dict(
        uuid='$COMPUTE_NODE', vcpus=host['vcpus'],
        memory_mb=host['memory_mb'], disk_gb=host['disk_gb'],
        cpu_allocation_ratio=cpu_allocation_ratio)])
    path = os.path.join(directory, 'opie-preemptible.yaml')
    with open(path, 'w') as f:
        f.write(provider_config.dump_yaml(doc))
    return path


#: Set in the environment by :func:`use_native_threading`; nova's own
#: ``monkey_patch.patch()`` calls (nova.tests imports it too) read it.
NO_EVENTLET_ENV = 'OS_NOVA_DISABLE_EVENTLET_PATCHING'


def use_native_threading():
    """Run nova's services in this process in native threading mode.

    Must be called before anything imports nova's service fixtures
    (``nova.tests``, whose import monkey-patches eventlet unless told not
    to), i.e. before :meth:`EmbeddedCloud.start`.

    :returns: True if the process is (now) in native threading mode; False
        if eventlet was already imported or patched in (e.g. by a test
        runner that imported nova's functional tests first), or nova is
        older than 34: the services then run under eventlet.
    """
    # nova's series differ here (opie_sched.common.compat): before nova
    # 34 the services stay under eventlet and False is returned.
    from opie_sched.common import compat
    return compat.use_native_threading()


class _LogToFile(fixtures.Fixture):
    """Nova's log records (INFO and up) to a file instead of the handlers
    already installed (the console).
    """

    def __init__(self, path):
        super().__init__()
        self.path = path

    def _setUp(self):
        root = logging.getLogger()
        handler = logging.FileHandler(self.path)
        handler.setFormatter(logging.Formatter(
            '%(asctime)s %(threadName)s %(levelname)s %(name)s: '
            '%(message)s'))
        handler.setLevel(logging.INFO)
        for old in list(root.handlers):
            level = old.level
            old.setLevel(logging.CRITICAL + 1)
            self.addCleanup(old.setLevel, level)
        self.addCleanup(root.setLevel, root.level)
        root.setLevel(logging.INFO)
        root.addHandler(handler)
        self.addCleanup(handler.close)
        self.addCleanup(root.removeHandler, handler)


class LostBuilds(fixtures.Fixture):
    """Which builds nova's conductor dropped, and why.

    ``schedule_and_build_instances`` is an RPC cast: when it raises (e.g.
    the API database refused ``UPDATE instance_mappings`` with SQLite's
    "database is locked", seen once in about a dozen loaded demo runs),
    oslo.messaging logs the exception and nobody else hears of it; the
    servers whose build request still exists stay in BUILD for ever, in
    the embedded cloud as in a real one. This fixture wraps the
    conductor's method and records, for every such server, a one-line
    reason, so that the demo can tell a lost build from a slow one.

    The same call's earlier servers, already cast to their compute host
    (their build request deleted), are not lost and are not recorded.
    """

    METHOD = ('nova.conductor.manager.ComputeTaskManager.'
              'schedule_and_build_instances')

    def __init__(self):
        super().__init__()
        self._lost = {}
        self._lock = threading.Lock()

    def _setUp(self):
        from nova.conductor import manager as conductor_manager
        original = conductor_manager.ComputeTaskManager.\
            schedule_and_build_instances
        signature = inspect.signature(original)
        record = self._record

        def schedule_and_build_instances(*args, **kwargs):
            try:
                return original(*args, **kwargs)
            except Exception as exc:
                bound = signature.bind(*args, **kwargs)
                record(bound.arguments['context'],
                       bound.arguments['build_requests'], exc)
                raise

        self.useFixture(fixtures.MonkeyPatch(self.METHOD,
                                             schedule_and_build_instances))

    def _record(self, context, build_requests, exc):
        from nova import exception as nova_exc
        from nova import objects

        from opie_sched.demo import targets
        reason = targets.one_line(exc)
        for build_request in build_requests or ():
            uuid_ = build_request.instance_uuid
            try:
                objects.BuildRequest.get_by_instance_uuid(context, uuid_)
            except nova_exc.BuildRequestNotFound:
                continue            # reached its compute host: not lost
            except Exception:
                LOG.exception('cannot tell whether the build of %s was '
                              'lost; assuming it was', uuid_)
            with self._lock:
                self._lost[uuid_] = reason

    def reason(self, instance_uuid):
        """Why nova lost that server's build (one line), or None."""
        with self._lock:
            return self._lost.get(instance_uuid)


class EmbeddedCloud(fixtures.Fixture):
    """The all-in-one cloud as a runtime (see the module docstring).

    ``start()`` brings Nova up, ``stop()`` tears it down (or use it as a
    fixture). Real clients reach it through openstacksdk:
    :meth:`connection` (``opie_sched.demo.clients``).

    :param hosts: number of fake compute hosts, each of :data:`HOST` size.
    :param opie: run the opie scheduler manager (else nova's own).
    :param extra_flags: nova.conf settings applied before the services
        start, as ``{group: {name: value}}`` (group ``DEFAULT`` or None for
        the default group).
    :param log_file: write nova's log (INFO and up) to this file, not to
        the console; default: leave logging as it is.
    :param preemptible_cpu_ratio: allocation ratio of each host's
        preemptible vCPU inventory (a number > 0; default 1.0). Above 1
        the preemptible CPUs are overcommitted: Placement and the
        full-state filter admit ``ratio * 8`` preemptible vCPU per host
        (nova's ``cpu_allocation_ratio`` follows), while the hypervisors
        still report 8 physical CPUs -- the contention a spot market
        prices (``opie-sched market demo``).
    :param cells: number of compute cells (``cell1`` .. ``cellN``, an int
        >= 1; default 1), besides ``cell0``; each has its own database
        and cell mapping. The hosts are spread over them in blocks
        (:meth:`cell_of_host`): with as many hosts as cells, host *i* is
        in cell *i*. ``cell1`` stays the default cell.
    :raises ValueError: ``preemptible_cpu_ratio`` is not a number > 0, or
        ``cells`` not an int >= 1.
    """

    SCHEDULER_MANAGER = OPIE_MANAGER

    def __init__(self, hosts=4, opie=True, extra_flags=None, log_file=None,
                 preemptible_cpu_ratio=1.0, cells=1):
        super().__init__()
        if isinstance(cells, bool) or not isinstance(cells, int) or \
                cells < 1:
            raise ValueError('cells must be an int >= 1, got %r' % (cells,))
        self.cells = cells
        if isinstance(preemptible_cpu_ratio, bool) or not isinstance(
                preemptible_cpu_ratio, (int, float)) or not (
                0 < preemptible_cpu_ratio < float('inf')):
            raise ValueError('preemptible_cpu_ratio must be a number > 0, '
                             'got %r' % (preemptible_cpu_ratio,))
        self.preemptible_cpu_ratio = float(preemptible_cpu_ratio)
        self.HOSTS = tuple('host%d' % (i + 1) for i in range(hosts))
        if not opie:
            self.SCHEDULER_MANAGER = NOVA_MANAGER
        self.EXTRA_FLAGS = extra_flags or {}
        self.log_file = log_file
        self.computes = {}
        self.cell_mappings = {}
        self.host_mappings = {}
        self.flavor_ids = {}
        self._up = False

    # -- what nova's fixtures ask of their "test" ----------------------

    def id(self):
        """Name given to nova's fixtures that tag their work by test."""
        return 'opie-sched.embedded-cloud'

    def flags(self, **kw):
        """Override nova.conf options until :meth:`stop` (``group=``)."""
        from nova import conf as nova_conf
        group = kw.pop('group', None)
        if group == 'DEFAULT':
            group = None
        for name, value in kw.items():
            nova_conf.CONF.set_override(name, value, group)

    def stub_out(self, old, new):
        """Replace ``old`` (dotted name) with ``new`` until :meth:`stop`."""
        self.useFixture(fixtures.MonkeyPatch(old, new))

    # -- life cycle ----------------------------------------------------

    def start(self):
        """Bring the cloud up; returns ``self``.

        :raises RuntimeError: nova failed to start (the message names the
            step; nova's log, if any, is in ``log_file``).
        """
        try:
            self.setUp()
            self._up = True
        except fixtures.MultipleExceptions as exc:
            raise RuntimeError('the embedded Nova failed to start: %s'
                               % _first_error(exc)) from None
        except fixtures.SetupError as exc:
            raise RuntimeError('the embedded Nova failed to start: %s'
                               % _first_error(exc)) from None
        # Registered after the services started, hence after futurist's
        # own exit handler (atexit runs the last registered first).
        atexit.register(self._stop_at_exit)
        return self

    def stop(self):
        """Stop the services and remove the databases and files (nothing
        if the cloud is not up: a failed start cleaned up already).
        """
        if self._up:
            self._up = False
            atexit.unregister(self._stop_at_exit)
            self.cleanUp()

    def _stop_at_exit(self):
        """Stop a cloud still up when the interpreter exits (its program
        raised, or forgot :meth:`stop`).

        Without it the process never ends: futurist's exit handler joins
        every worker thread it ever started, and the services' periodic
        tasks (service heartbeats, ``update_available_resource``, the
        scheduler's periodic tasks) run on such threads until their service
        is stopped.
        """
        if self._up:
            LOG.warning('The embedded Nova is still up at exit; stopping it')
            self.stop()

    def _setUp(self):
        # Imported here: importing nova.tests applies nova's concurrency
        # mode (see use_native_threading).
        from nova import conf as nova_conf
        from nova import objects
        from nova.tests import fixtures as nova_fixtures
        from nova.tests.functional import fixtures as func_fixtures

        # Before any patching below: clients keeps openstacksdk's own proxy
        # factory, which OpenStackSDKFixture replaces, for real clients.
        from opie_sched.demo import clients
        from opie_sched.demo import fake_driver

        objects.register_all()
        if self.log_file:
            self.useFixture(_LogToFile(self.log_file))
        self._reset_globals()
        self.addCleanup(self._reset_globals)
        self.useFixture(fixtures.NestedTempfile())
        self.useFixture(nova_fixtures.OpenStackSDKFixture())
        # Under eventlet only (a no-op in native threading mode): the
        # notification sink needs the cloud's id on every green thread.
        self.useFixture(nova_fixtures.PropagateTestCaseIdToChildEventlets(
            self.id()))
        executors = compat.isolated_executor_fixture(nova_fixtures,
                                                     self.id())
        if executors is not None:  # nova 32 on (compat)
            self.useFixture(executors)
        self.useFixture(nova_fixtures.ConfFixture(nova_conf.CONF))
        self.flags(lock_path=self.useFixture(fixtures.TempDir()).path,
                   group='oslo_concurrency')
        self.useFixture(nova_fixtures.RPCFixture('nova.test'))
        nova_conf.CONF.set_default('driver', ['test'],
                                   group='oslo_messaging_notifications')
        self.useFixture(nova_fixtures.Database(database='api'))
        self._setup_cells(nova_fixtures)
        self.useFixture(nova_fixtures.ComputeNodeIdFixture())
        # As nova's functional tests: no reschedule penalty (the fake
        # driver never fails a build).
        self.flags(build_failure_weight_multiplier=0.0,
                   group='filter_scheduler')

        pc_dir = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fake_driver.SizedFakeHosts(
            HOST['vcpus'], HOST['memory_mb'], HOST['disk_gb']))
        write_provider_config(
            pc_dir, cpu_allocation_ratio=self.preemptible_cpu_ratio)
        configure_nova(self.flags, pc_dir,
                       cpu_allocation_ratio=self.preemptible_cpu_ratio)
        from opie_sched import conf as opie_conf
        opie_conf.register_opts(nova_conf.CONF)
        for group, opts in self.EXTRA_FLAGS.items():
            self.flags(group=group, **opts)

        self.placement_fixture = self.useFixture(
            func_fixtures.PlacementFixture())
        self.placement = self.placement_fixture.api
        self.neutron = self.useFixture(nova_fixtures.NeutronFixture(self))
        self.cinder = self.useFixture(nova_fixtures.CinderFixture(self))
        self.glance = self.useFixture(nova_fixtures.GlanceFixture(self))
        self.policy = self.useFixture(nova_fixtures.RealPolicyFixture())
        self.notifier = self.useFixture(
            nova_fixtures.NotificationFixture(self))

        self.flags(transport_url=self.cell.transport_url)
        self.lost_builds = self.useFixture(LostBuilds())
        self.conductor = self.start_service('conductor')
        self.scheduler = self.start_service(
            'scheduler', manager=self.SCHEDULER_MANAGER)
        for host in self.HOSTS:
            self._start_compute(host)
        self.compute = self.computes[self.HOSTS[0]] if self.HOSTS else None
        self.api_fixture = self.useFixture(nova_fixtures.OSAPIFixture(
            api_version='v2.1'))

        self.clients = self.useFixture(clients.RealClients(self))
        self._create_paper_flavors()

    @staticmethod
    def _reset_globals():
        """Nova's and opie's process-wide caches, which a previous cloud in
        this process may have filled.
        """
        from nova.api.openstack import wsgi_app
        from nova.compute import api as compute_api
        from nova.compute import rpcapi as compute_rpcapi
        from nova import context
        import nova.crypto
        import nova.limit.utils
        from nova import objects
        from nova import quota
        from nova.scheduler.client import report
        from nova.scheduler import utils as scheduler_utils
        import nova.service_auth

        objects.Service.clear_min_version_cache()
        compute_api.CELLS = []
        compat.reset_context_globals(context)
        compute_rpcapi.reset_globals()
        quota.UID_QFD_POPULATED_CACHE_BY_PROJECT = set()
        quota.UID_QFD_POPULATED_CACHE_ALL = False
        wsgi_app.init_global_data.reset()
        wsgi_app.init_application.reset()
        report.PLACEMENTCLIENT = None
        scheduler_utils.reset_globals()
        nova.crypto._KEYMGR = None
        nova.limit.utils.IDENTITY_CLIENT = None
        nova.service_auth.reset_globals()
        # opie's own: the compute API the scheduler deletes victims with,
        # and the tooz coordinators of this cloud's lock directory (each
        # with a heartbeat thread that outlived the cloud)
        from opie_sched.scheduler import actions
        from opie_sched.scheduler import locks
        actions.reset()
        locks.reset()

    def _setup_cells(self, nova_fixtures):
        """cell0 and cell1 .. cellN with their mappings (as nova's tests
        do; cell1 is the default database).
        """
        from nova import context
        from nova import objects
        from oslo_utils.fixture import uuidsentinel

        celldbs = nova_fixtures.CellDatabases()
        if compat.nova_threading_mode():
            celldbs._cell_lock = _readers_first_lock(nova_fixtures)
        ctxt = context.get_context()
        transport = 'fake://nowhere/'
        cell0 = objects.CellMapping(
            context=ctxt, uuid=objects.CellMapping.CELL0_UUID, name='cell0',
            transport_url=transport,
            database_connection=objects.CellMapping.CELL0_UUID)
        cell0.create()
        celldbs.add_cell_database(objects.CellMapping.CELL0_UUID)
        self.cell_mappings = {'cell0': cell0}
        for i in range(1, self.cells + 1):
            name = 'cell%d' % i
            uuid = getattr(uuidsentinel, name)
            cell = objects.CellMapping(
                context=ctxt, uuid=uuid, name=name, transport_url=transport,
                database_connection=uuid)
            cell.create()
            celldbs.add_cell_database(uuid, default=(i == 1))
            self.cell_mappings[name] = cell
        self.useFixture(celldbs)

    def cell_of_host(self, host):
        """Name of the cell a host of :attr:`HOSTS` is (to be) started in:
        the hosts in blocks over ``cell1`` .. ``cellN`` (``cell1`` when there
        is one cell, or for a host not in :attr:`HOSTS`).
        """
        if self.cells == 1 or host not in self.HOSTS:
            return 'cell1'
        return 'cell%d' % (self.HOSTS.index(host) * self.cells
                           // len(self.HOSTS) + 1)

    def start_service(self, name, host=None, cell_name=None, **kwargs):
        """Start a nova service (``conductor``, ``scheduler``,
        ``compute``) in this process; stopped by :meth:`stop`.

        :param cell_name: a compute's cell (default: :meth:`cell_of_host`).
        """
        from nova import context
        from nova import objects
        from nova.tests import fixtures as nova_fixtures

        cell = None
        if host is not None:
            self.useFixture(nova_fixtures.ConfPatcher(host=host))
        if name == 'compute':
            for key, value in compat.compute_service_kwargs().items():
                kwargs.setdefault(key, value)
            cell = self.cell_mappings[cell_name
                                      or self.cell_of_host(host or name)]
        svc = self.useFixture(
            nova_fixtures.ServiceFixture(name, host, cell=cell, **kwargs))
        self.addCleanup(svc.service.stop)
        if name == 'compute':
            ctxt = context.get_context()
            mapping = objects.HostMapping(context=ctxt, host=host or name,
                                          cell_mapping=cell)
            mapping.create()
            self.host_mappings[mapping.host] = mapping
            with context.target_cell(ctxt, cell) as cctxt:
                node = objects.ComputeNode.get_by_service_id(
                    context=cctxt, service_id=svc.service.service_ref.id)
                node.mapped = 1
                node.save()
        return svc.service

    def _start_compute(self, host):
        compute = self.start_service('compute', host=host)
        self.computes[host] = compute
        return compute

    def _create_paper_flavors(self):
        conn = self.connection()
        for name, (vcpus, ram, disk) in PAPER_FLAVORS.items():
            self.flavor_ids[name] = conn.compute.create_flavor(
                name=name, vcpus=vcpus, ram=ram, disk=disk).id
            twin = flavors.create_preemptible_twin(conn, self.flavor_ids[name])
            self.flavor_ids[twin.name] = twin.id

    # -- for the demo and real clients ---------------------------------

    @property
    def capacity_vcpus(self):
        """vCPUs of all compute hosts."""
        return HOST['vcpus'] * len(self.HOSTS)

    @property
    def cell(self):
        """cell1's ``CellMapping`` (the default cell; every host's cell
        when there is one, see :meth:`cell_of_host`).
        """
        return self.cell_mappings['cell1']

    @property
    def image_id(self):
        """An image of the in-memory Glance servers can boot from."""
        return self.glance.auto_disk_config_enabled_image['id']

    def connection(self, token='admin:admin'):
        """An openstacksdk connection to this cloud's Nova as ``token``
        (``"user:project"``; see :func:`opie_sched.demo.clients.connection`).
        """
        from opie_sched.demo import clients
        return clients.connection(self, token)

    def notifications(self):
        """Versioned notifications emitted so far (dicts), oldest first."""
        return self.notifier.versioned_notifications


def _readers_first_lock(nova_fixtures):
    """A reader/writer lock for nova's ``CellDatabases`` fixture whose
    readers never wait for a writer that is only waiting.

    In native threading mode the fixture's lock (writer-preferring) and
    its ``DatabaseWriteLock`` (one lock per database, held for a whole
    writer transaction) deadlock: a writer transaction that reads with an
    untargeted context (``Service.save`` -> ``service_update``) waits for
    a reader slot behind a pending cell switch (a ``target_cell`` to
    another cell, e.g. the quota count's), which waits for the readers
    inside ``target_cell`` blocks, one of which waits for that writer
    transaction's database lock. Seen with py-spy in 1 of 13 runs of the
    native-threading race test at a load of 20 (every thread idle, the
    test hung until its guard). A pending writer now waits until no
    reader is left instead of stopping new readers.
    """

    class ReadersFirst(nova_fixtures.ReaderWriterLock):

        @property
        def has_pending_writers(self):
            return False

    return ReadersFirst()


def _first_error(exc):
    """One line naming the first exception in a fixtures error."""
    # Imported here: targets imports oslo.messaging, which imports
    # eventlet (see use_native_threading).
    from opie_sched.demo import targets
    inner = exc.args[0] if exc.args else exc
    if isinstance(inner, tuple) and len(inner) == 3:
        inner = inner[1]
        if isinstance(inner, fixtures.MultipleExceptions) and inner.args:
            inner = inner.args[0][1]
    return targets.one_line(inner)
