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
"""Every difference between the nova and oslo.service series opie_sched
supports, in one place.

Supported: nova 31 (OpenStack 2025.1, SLURP) to 34 (2026.2); each series
is tested with its own constraints (``tools/constraints-nova3N.txt``,
``tox -e py3-nova3N``). The differences met at start-up:

====  =====================================  ==============================
nova  how a service process is patched       executors to drop before fork
====  =====================================  ==============================
31    ``import nova.monkey_patch`` patches   none (green threads only)
      eventlet in, no ``patch()``
32    ``monkey_patch.patch()``: eventlet     ``nova.utils.destroy_*_
      unless ``OS_NOVA_DISABLE_EVENTLET_     executor()``
      PATCHING`` is set
33    ``monkey_patch.patch(backend=...)``    ``nova.utils.destroy_*_
                                             executor()``
34    ``monkey_patch.patch(backend=...)``    ``nova.thread_pool_factory.
                                             reset_all_executors()``
====  =====================================  ==============================

openstacksdk: the placement proxy's ``fetch_resource_provider_usages``
is missing from the releases of the older series' constraints (4.4.0 to
4.10.0); :func:`resource_provider_usages` reads Placement's usages
either way.

oslo.service: 4.2 (2025.2) added the threading backend,
``backend.get_backend_type()`` and ``backend.base.ServiceBase``; 4.1
(2025.1) has an ``oslo_service.backend`` package with the eventlet
implementation only, and ``ServiceBase`` in ``oslo_service.service``.
4.2-4.3's threading ``service.Launcher`` forks (:func:`service_launcher`).

oslo.db: ``[database] synchronous_reader`` is 17.5's (2026.1); the market
hands oslo.db only the options the installed release has.

nova 34's computes listen on a second RPC topic
(:func:`compute_service_kwargs`).

nova 31 and 32's server list (``GET /servers/detail``) reads instance
faults from the API's default cell database only, so a boot refused by
the scheduler (kept in cell0) is listed as ERROR without its fault; nova
33 gathers the faults of every cell. ``GET /servers/{uuid}`` shows it on
every series (:func:`server_fault`).

nova's functional helper ``_wait_for_state_change`` takes
``wait_for_fault_key`` (wait for an ERROR server's fault too) from nova 34
only (:func:`wait_for_fault_kwargs`).

Only ``os`` and ``sys`` (imported by the interpreter at its start anyway)
are imported at module level, so that a console script may import this
module before it patches the process.
"""

import os
import sys

#: The nova series (major version) from which the embedded demo cloud runs
#: nova's services in native threading mode; before it they run under
#: eventlet (nova 33's compute and conductor do not finish a build there).
NATIVE_THREADING_SERIES = 34

#: The nova series from which nova's services, and opie-scheduler and
#: opie-reconciler (:func:`patch_nova_service`), run on native threads by
#: default; before it (31, 32) they run under eventlet unless
#: :data:`NO_EVENTLET_ENV` is set.
THREADING_DEFAULT_SERIES = 33

#: The environment variable nova reads to leave eventlet out.
NO_EVENTLET_ENV = 'OS_NOVA_DISABLE_EVENTLET_PATCHING'


def nova_series():
    """The installed nova's major version (int, e.g. 31), None without
    nova.
    """
    from importlib import metadata
    try:
        version = metadata.version('nova')
    except metadata.PackageNotFoundError:
        return None
    return int(version.split('.')[0])


def patch_nova_service():
    """Patch this process as the installed nova's own nova-scheduler does.

    Call it first thing in a console script that runs nova's service code,
    before any other import. nova 31 patches eventlet in when
    ``nova.monkey_patch`` is imported (no ``patch`` function); nova 32's
    ``patch()`` takes no backend and patches eventlet unless
    ``OS_NOVA_DISABLE_EVENTLET_PATCHING`` is set; nova 33 and 34 take
    ``backend='threading'`` (the environment variable still overrides it).
    oslo.service's backend is selected by nova's ``patch`` accordingly.

    :returns: ``'eventlet'`` or ``'threading'``, the mode now in force.
    """
    from nova import monkey_patch  # nova 31: patches here
    patch = getattr(monkey_patch, 'patch', None)
    if patch is not None:
        try:
            patch(backend='threading')
        except TypeError:  # nova 32: patch() has no backend argument
            patch()
    patched = getattr(monkey_patch, 'is_patched', None)
    if patched is None:  # nova 31: eventlet unless told otherwise
        return 'eventlet' if 'eventlet' in sys.modules and \
            _eventlet_patched() else 'threading'
    return 'eventlet' if patched() else 'threading'


def _eventlet_patched():
    import eventlet.patcher
    return eventlet.patcher.is_monkey_patched('thread')


def patch_for_nova_tests():
    """Patch eventlet in as nova's functional test package does (every
    series runs its functional fixtures under eventlet): nova 31 on the
    import of ``nova.monkey_patch``, nova 32 to 34 through ``patch()``
    (eventlet by default).
    """
    from nova import monkey_patch  # nova 31: patches here
    patch = getattr(monkey_patch, 'patch', None)
    if patch is not None:
        patch()


def reset_executors():
    """Drop nova's process-wide executors before worker processes fork,
    so that each worker builds its own (as nova-scheduler does): nova 34's
    ``thread_pool_factory.reset_all_executors()``, nova 32 and 33's
    ``utils.destroy_scatter_gather_executor()`` and
    ``destroy_default_executor()``; nova 31 has none (green threads).

    :returns: the names of the functions called (list of str).
    """
    try:
        from nova import thread_pool_factory
    except ImportError:
        thread_pool_factory = None
    if thread_pool_factory is not None:
        thread_pool_factory.reset_all_executors()
        return ['thread_pool_factory.reset_all_executors']
    from nova import utils
    called = []
    for name in ('destroy_scatter_gather_executor',
                 'destroy_default_executor'):
        func = getattr(utils, name, None)
        if func is not None:
            func()
            called.append('utils.' + name)
    return called


def use_native_threading():
    """Run nova's services in this process in native threading mode, where
    the installed nova supports it (:data:`NATIVE_THREADING_SERIES` and
    later).

    Must be called before anything imports nova's service fixtures
    (``nova.tests``, whose import patches eventlet in unless told not to).
    On an older nova, nothing is changed (not even ``nova.monkey_patch``
    imported: on nova 31 that import patches eventlet in).

    :returns: True if the process is (now) in native threading mode; False
        if eventlet was already imported or patched in, or nova is older.
    """
    series = nova_series()
    if series is not None and series < NATIVE_THREADING_SERIES:
        return False
    from nova import monkey_patch
    if monkey_patch.is_patched():
        return False
    if 'eventlet' not in sys.modules:
        os.environ[NO_EVENTLET_ENV] = '1'
        monkey_patch.patch(backend='threading')
    return not monkey_patch.is_patched() and 'eventlet' not in sys.modules


def service_backend():
    """oslo.service's ``backend`` module, None on oslo.service < 4.2 (no
    threading backend: eventlet only).
    """
    try:
        from oslo_service import backend
    except ImportError:
        return None
    if not hasattr(backend, 'get_backend_type'):  # 4.1
        return None
    return backend


def service_base():
    """oslo.service's ``ServiceBase`` class, wherever the installed
    oslo.service keeps it (``backend.base`` from 4.2, ``service`` before).
    """
    try:
        from oslo_service.backend import base
    except ImportError:
        base = None
    cls = getattr(base, 'ServiceBase', None)
    if cls is None:  # 4.1
        from oslo_service import service
        cls = service.ServiceBase
    return cls


def eventlet_only_unpatched():
    """True on oslo.service 4.1 (2025.1: eventlet only) in a process that
    eventlet has not patched: there oslo.service's launcher, looping calls
    and signal handler run their work in green threads, which never run
    while the main thread waits on a native lock; the daemons then use
    :class:`NativeLauncher`, :class:`NativeIntervalCall` and plain
    ``signal.signal`` handlers (the threading backend's equivalents, which
    4.1 lacks). False when eventlet patched the process (nova 31's
    ``monkey_patch``: opie-reconciler) or a threading backend exists.
    """
    if service_backend() is not None:
        return False
    return not ('eventlet' in sys.modules and _eventlet_patched())


class NativeIntervalCall(object):
    """``func()`` every ``interval`` seconds on a native thread (the next
    call ``interval`` seconds after the previous one started, at once when
    it outlasted the interval), as oslo.service's threading
    ``FixedIntervalLoopingCall`` with ``stop_on_exception=False``: an
    exception of ``func`` is left to ``func`` (the caller logs it).
    """

    def __init__(self, func):
        import threading
        self.func = func
        self._abort = threading.Event()
        self._done = threading.Event()
        self._thread = None

    def start(self, interval, stop_on_exception=False):
        import threading
        import time

        def loop():
            try:
                while not self._abort.is_set():
                    started = time.monotonic()
                    self.func()
                    self._abort.wait(max(
                        0.0, interval - (time.monotonic() - started)))
            finally:
                self._done.set()
        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()

    def stop(self):
        self._abort.set()

    def wait(self):
        if self._thread is not None:
            self._done.wait()


class NativeLauncher(object):
    """An in-process launcher of one service on native threads (start at
    :meth:`launch_service`, :meth:`stop`, :meth:`wait`), for
    :func:`eventlet_only_unpatched` processes.
    """

    def __init__(self):
        self._service = None

    def launch_service(self, service, workers=None):
        self._service = service
        service.start()

    def stop(self):
        if self._service is not None:
            self._service.stop()

    def wait(self):
        if self._service is not None:
            self._service.wait()


def interval_call(func):
    """A fixed-interval looping call of ``func``: oslo.service's
    ``loopingcall.FixedIntervalLoopingCall``, or :class:`NativeIntervalCall`
    where :func:`eventlet_only_unpatched`.
    """
    if eventlet_only_unpatched():
        return NativeIntervalCall(func)
    from oslo_service import loopingcall
    return loopingcall.FixedIntervalLoopingCall(func)


def add_signal_handlers(signals, handler):
    """Call ``handler(signo, frame)`` on each of ``signals`` (names, e.g.
    ``'SIGTERM'``): oslo.service's ``SignalHandler``, or ``signal.signal``
    where :func:`eventlet_only_unpatched` (4.1's handler runs the callback
    in a green thread).
    """
    if eventlet_only_unpatched():
        import signal
        for name in signals:
            signal.signal(getattr(signal, name), handler)
        return
    from oslo_service import service
    service.SignalHandler().add_handlers(signals, handler)


def service_launcher(conf):
    """oslo.service's in-process ``Launcher`` for ``conf`` (the service
    runs in this process, no worker forked).

    oslo.service 4.2 and 4.3 (2025.2) map ``service.Launcher`` of the
    threading backend to the forking ``ProcessLauncher`` (cotyledon: a
    service launched there starts only in a worker process, in
    ``wait()``); their threading backend's in-process launcher is
    ``backend._threading.service.Launcher``, which takes no ``conf``.
    From 4.4, and on the eventlet backend, ``service.Launcher(conf)`` is
    the in-process one.

    :param conf: the service's ``cfg.ConfigOpts``.
    :returns: a launcher with ``launch_service``, ``stop`` and ``wait``.
    """
    if eventlet_only_unpatched():
        return NativeLauncher()
    from oslo_service import service
    if service.Launcher is not getattr(service, 'ProcessLauncher', None):
        return service.Launcher(conf)
    from oslo_service.backend._threading import service as threading_service
    return threading_service.Launcher()


def compute_service_kwargs():
    """Keyword arguments of nova's ``ServiceFixture`` for a compute:
    ``topic_alt`` (the second RPC topic a compute listens on) where nova
    has it (``compute.rpcapi.RPC_TOPIC_ALT``, nova 34), none before.

    :returns: dict of str to str.
    """
    from nova.compute import rpcapi
    alt = getattr(rpcapi, 'RPC_TOPIC_ALT', None)
    return {} if alt is None else {'topic_alt': alt}


def nova_threading_mode():
    """True when nova runs in this process on native threads:
    ``nova.utils.concurrency_mode_threading()`` where nova has it (nova 32
    on), False on nova 31 (eventlet only).
    """
    from nova import utils
    mode = getattr(utils, 'concurrency_mode_threading', None)
    return False if mode is None else bool(mode())


def isolated_executor_fixture(nova_fixtures, test_id):
    """nova's ``IsolatedExecutorFixture`` (each test's own executors,
    their threads waited for at its end) where nova has it (nova 32 on),
    None on nova 31 (green threads only: no executors to isolate).

    :param nova_fixtures: the ``nova.tests.fixtures`` module.
    :param test_id: the test's (or embedded cloud's) id (str).
    :returns: the fixture, or None.
    """
    cls = getattr(nova_fixtures, 'IsolatedExecutorFixture', None)
    return None if cls is None else cls(test_id)


def reset_context_globals(context):
    """Empty ``nova.context``'s cell caches (what a previous in-process
    cloud filled): ``context.reset_globals()`` where nova has it (nova 34;
    it also resets nova's service auth), else its two caches by hand
    (nova 31-33 keep them as module attributes, as their own test base
    resets them).

    :param context: the ``nova.context`` module.
    """
    reset = getattr(context, 'reset_globals', None)
    if reset is not None:
        reset()
        return
    context.CELL_CACHE = {}
    context.CELLS = []


def wait_for_fault_kwargs(helper, wait_for_fault_key):
    """Keyword arguments for nova's functional test helper
    ``InstanceHelperMixin._wait_for_state_change``: ``wait_for_fault_key``
    where the helper takes it (nova 34: an ERROR server is returned once
    its fault is recorded, which nova does after setting the status), none
    before (nova 31 to 33: the helper returns an ERROR server as soon as
    its status is, the caller waits for the fault itself).

    :param helper: the helper (a bound method).
    :param wait_for_fault_key: bool, the caller's wish.
    :returns: dict of str to bool, empty where the helper lacks it.
    """
    import inspect
    if 'wait_for_fault_key' in inspect.signature(helper).parameters:
        return {'wait_for_fault_key': wait_for_fault_key}
    return {}


#: Placement microversion of ``GET /resource_providers/{uuid}/usages``
#: (the route exists from 1.0; 1.9 is what the rest of opie_sched reads).
USAGES_MICROVERSION = '1.9'


def resource_provider_usages(placement, provider):
    """A resource provider's usages in Placement.

    openstacksdk's ``fetch_resource_provider_usages`` where the installed
    openstacksdk has it, else the same request through the proxy:
    ``GET /resource_providers/{uuid}/usages`` at microversion
    :data:`USAGES_MICROVERSION`.

    :param placement: an openstacksdk placement proxy (``conn.placement``).
    :param provider: a resource provider (anything with ``id``).
    :returns: ``{resource class: amount used}`` (dict of str to int).
    :raises openstack.exceptions.SDKException: Placement refused or could
        not be reached.
    """
    fetch = getattr(placement, 'fetch_resource_provider_usages', None)
    if fetch is not None:
        return fetch(provider).usages or {}
    from openstack import exceptions
    resp = placement.get('/resource_providers/%s/usages' % provider.id,
                         microversion=USAGES_MICROVERSION)
    exceptions.raise_from_response(resp)
    return resp.json().get('usages') or {}


def server_fault(compute, uuid):
    """The fault of server ``uuid`` as ``GET /servers/{uuid}`` shows it.

    For a server that ``GET /servers/detail`` lists as ERROR without a
    fault: nova 31 and 32's list fills faults by one query of the API's
    default cell database (``InstanceList.fill_faults``), so the fault of
    a server in another cell -- every boot the scheduler refused
    (NoValidHost) is kept in cell0 -- is missing there; the single-server
    view loads it from the server's own cell on every series. From nova
    33 the list gathers the faults of every cell and this is not needed.

    :param compute: an openstacksdk compute proxy (``conn.compute``).
    :param uuid: the server's UUID (str).
    :returns: the fault (dict with ``code``, ``created`` and ``message``),
        or None when the server has none or is gone (404).
    :raises openstack.exceptions.SDKException: Nova refused the request
        otherwise or could not be reached.
    """
    from openstack import exceptions
    try:
        server = compute.get_server(uuid)
    except exceptions.NotFoundException:
        return None
    return getattr(server, 'fault', None) or None


#: Compute microversion of server tags (``/servers/{uuid}/tags``).
TAGS_MICROVERSION = '2.26'


def add_server_tag(compute, uuid, tag):
    """Add ``tag`` to server ``uuid`` at :data:`TAGS_MICROVERSION`.

    openstacksdk's ``add_tag_to_server`` sends the proxy's default
    microversion, which before the 2026.1 releases can be 2.1 (openstacksdk
    4.7.1 of nova 32's constraints: Nova answers 404); this request names
    the microversion the route needs on every series.

    :param compute: an openstacksdk compute proxy (``conn.compute``).
    :param uuid: the server's UUID (str).
    :param tag: the tag (str, at most 60 characters, no ``/`` or ``,``).
    :raises openstack.exceptions.SDKException: Nova refused it (e.g. 404
        for a server that is gone) or could not be reached.
    """
    from urllib import parse

    from openstack import exceptions
    resp = compute.put('/servers/%s/tags/%s' % (
        parse.quote(uuid, safe=''), parse.quote(tag, safe='')),
        microversion=TAGS_MICROVERSION)
    exceptions.raise_from_response(resp)
