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
"""What the companion services share to run as daemons and as replicas.

``opie-autoscaler``, ``opie-repacker``, ``opie-market run`` and
``opie-reconciler`` are periodic daemons in which only one replica may act
on a resource at a time. The replicas coordinate through tooz locks
(OpenStack's coordination library) on a backend the operator already runs,
or tooz's file driver on one machine; the daemon itself is oslo.service's:

* :class:`PeriodicService` -- an oslo.service service
  (``oslo_service.service.ServiceBase``) that runs one round every
  ``interval`` seconds on oslo.service's ``FixedIntervalLoopingCall``; its
  ``stop()`` lets the current round finish and starts no other;
* :class:`CoordinatedRounds` -- the tooz coordinator lifecycle of the
  autoscaler's and the repacker's rounds, and :class:`RoundsService`
  running them as a :class:`PeriodicService`;
* :func:`serve` -- oslo.service's ``Launcher`` and ``SignalHandler``:
  SIGTERM or SIGINT stops the service after the current round, exit code 0;
* :func:`start_coordinator` and :class:`Leadership` -- the one tooz
  helper of every opie_sched service: a started coordinator (heartbeat
  thread on), and a leadership held through a tooz lock whose ownership
  is re-checked at every round (used by ``opie-scheduler``'s and
  ``opie-reconciler``'s reconciler lock,
  :class:`opie_sched.scheduler.locks.Coordinator`, and the market's
  leader, :class:`opie_sched.services.market.engine.Leadership`);
* :func:`use_threading_backend` -- oslo.service's native-threading backend
  (no eventlet, no monkey patching), chosen when a daemon starts, never at
  import time: these modules are also imported next to Nova's
  eventlet-patched test fixtures, which choose the backend themselves.
"""

import abc
import sys
import threading

from oslo_log import log as logging

from opie_sched.common import compat
from opie_sched.common import leadership

LOG = logging.getLogger(__name__)

#: Kept in :mod:`.leadership` (the scheduler plugin needs them without
#: oslo.service); re-exported for the services.
start_coordinator = leadership.start_coordinator
Leadership = leadership.Leadership


class _NoEventlet:
    """A meta path finder refusing to import eventlet (as Nova does in its
    native threading mode): libraries that use eventlet when it is
    importable (futurist, oslo.utils) take their native-thread path.
    """

    def find_spec(self, fullname, path, target=None):
        if fullname == 'eventlet' or fullname.startswith('eventlet.'):
            raise ImportError('opie_sched daemons run on native threads; '
                              'eventlet is not to be imported')


def use_threading_backend():
    """Select oslo.service's threading backend unless one is selected.

    Must run before anything imports ``oslo_service.service`` or
    ``oslo_service.loopingcall`` (oslo.messaging does): their import picks
    the eventlet backend when none is selected. When it selects the
    threading backend and eventlet is not imported yet, eventlet's import
    is refused from then on. ``opie-reconciler`` does not need it: Nova's
    ``monkey_patch.patch(backend='threading')`` makes the same choice (or
    eventlet's, when the operator configures Nova so).

    :returns: the selected ``oslo_service.backend.BackendType``; None on
        oslo.service < 4.2 (2025.1), which has no backends: the daemons
        then run on native threads without oslo.service's launcher
        (:func:`opie_sched.common.compat.eventlet_only_unpatched`).
    """
    backend = compat.service_backend()
    if backend is None:
        return None
    if backend.get_backend_type() is None:
        if 'eventlet' not in sys.modules and not any(
                isinstance(f, _NoEventlet) for f in sys.meta_path):
            sys.meta_path.insert(0, _NoEventlet())
        backend.init_backend(backend.BackendType.THREADING)
    return backend.get_backend_type()


class PeriodicService(compat.service_base()):
    """An oslo.service service running :meth:`run_round` every ``interval``
    seconds.

    Rounds run one at a time on an ``oslo_service.loopingcall.
    FixedIntervalLoopingCall`` (of oslo.service's threading backend unless
    another backend was selected before :meth:`start`): the next round
    starts ``interval`` seconds after the previous one started, at once
    when it outlasted the interval.
    An exception in a round is logged (``round_failed``) and the next round
    runs. :meth:`stop` lets a round in progress finish and starts no other.

    :param interval: seconds between the starts of two rounds (>= 0).
    :param name: the daemon's name, for messages.
    """

    #: Logged with the traceback when a round raises.
    round_failed = 'round failed'

    def __init__(self, interval, name):
        self.interval = interval
        self.name = name
        self.start_error = None
        self._timer = None
        self._lock = threading.Lock()
        self._stopped = False
        self._stop_requested = threading.Event()

    @abc.abstractmethod
    def run_round(self):
        """One round."""

    def _round(self):
        try:
            self.run_round()
        except Exception:
            LOG.exception(self.round_failed)

    def start(self):
        """Start the rounds (the first one at once).

        :raises Exception: whatever the service's start raises; it is kept
            in :attr:`start_error` and :meth:`request_stop` is called.
        """
        try:
            self._start()
        except Exception as exc:
            self.start_error = exc
            self.request_stop()
            raise

    def _start(self):
        backend = compat.service_backend()
        if backend is not None and backend.get_backend_type() is None:
            # Not through serve() (a test, an embedding program): native
            # threads all the same, eventlet's import left alone.
            backend.init_backend(backend.BackendType.THREADING)
        with self._lock:
            if self._stopped or self._timer is not None:
                return
            self._timer = compat.interval_call(self._round)
            self._timer.start(interval=self.interval,
                              stop_on_exception=False)

    def request_stop(self):
        """Ask whoever waits in :meth:`wait_for_stop_request` to stop the
        service (safe in a signal handler: it only sets an event).
        """
        self._stop_requested.set()

    def wait_for_stop_request(self):
        """Block until :meth:`request_stop`."""
        self._stop_requested.wait()

    def stop(self):
        """Stop the rounds: wait for the current one to finish.

        Once :meth:`wait_for_stop_request` returns, no round starts.
        """
        with self._lock:
            self._stopped = True
            timer = self._timer
        if timer is not None:
            timer.stop()
        self._stop_requested.set()
        if timer is not None:
            timer.wait()

    def wait(self):
        """Block until the rounds are stopped (returns at once when they
        never started).
        """
        with self._lock:
            timer = self._timer
        if timer is not None:
            timer.wait()

    def reset(self):
        """Nothing to reset on SIGHUP: options are read every round."""


class CoordinatedRounds(metaclass=abc.ABCMeta):
    """Coordinator lifecycle of a periodic companion service's rounds.

    Subclasses set ``self.member_id`` (str), ``self._conn`` (an
    openstacksdk Connection or None), ``self.conf`` (their ``ConfigOpts``)
    and ``self.opts`` (their option group, with a ``cloud`` option), call
    :meth:`_init_coordination`, and implement :meth:`_coordination_url`,
    :meth:`run_round` and :meth:`round_interval`. :meth:`service` runs the
    rounds as an oslo.service service.
    """

    @property
    def conn(self):
        """The openstacksdk Connection, made on first use:
        ``[service_credentials]`` of ``self.conf`` when its ``auth_type``
        is set, else the clouds.yaml entry ``opts.cloud`` or the ``OS_*``
        variables (:func:`opie_sched.common.credentials.connect`).
        """
        if self._conn is None:
            from opie_sched.common import credentials
            self._conn = credentials.connect(self.conf,
                                             cloud=self.opts.cloud)
        return self._conn

    def _init_coordination(self, coordinator):
        """``coordinator``: a started tooz coordinator (kept running by
        :meth:`stop`), or None to have :meth:`start` make one.
        """
        self.coordinator = coordinator
        self._own_coordinator = coordinator is None

    @abc.abstractmethod
    def _coordination_url(self):
        """The tooz backend URL (str), preparing what it needs."""

    @abc.abstractmethod
    def run_round(self):
        """One round of the daemon; exceptions are logged, not raised."""

    @abc.abstractmethod
    def round_interval(self):
        """Seconds between the starts of two rounds of the daemon."""

    def start(self):
        """Join the coordination backend (when not given a coordinator).

        :raises tooz.coordination.ToozError: the backend is unreachable.
        """
        if self.coordinator is None:
            self.coordinator = start_coordinator(self._coordination_url(),
                                                 self.member_id)
        return self

    def stop(self):
        """Leave the coordination backend (a given coordinator is kept)."""
        if self._own_coordinator and self.coordinator is not None:
            self.coordinator.stop()
            self.coordinator = None

    def service(self, name):
        """These rounds as a :class:`RoundsService` named ``name``."""
        return RoundsService(self, name)


class RoundsService(PeriodicService):
    """A :class:`CoordinatedRounds` run as an oslo.service service: start
    joins the coordination backend, stop leaves it after the last round.

    :param rounds: :class:`CoordinatedRounds`.
    :param name: the daemon's name, for messages.
    """

    def __init__(self, rounds, name):
        super().__init__(rounds.round_interval(), name)
        self.rounds = rounds
        self.round_failed = '%s round failed' % name

    def run_round(self):
        self.rounds.run_round()

    def _start(self):
        self.rounds.start()
        super()._start()

    def stop(self):
        super().stop()
        self.rounds.stop()


def serve(conf, service):
    """Run ``service`` in this process until SIGTERM or SIGINT.

    The service is launched with oslo.service's ``Launcher`` (in this
    process; no worker fork) on the threading backend
    (:func:`use_threading_backend`). SIGTERM and SIGINT, through
    oslo.service's ``SignalHandler``, stop it gracefully: the round in
    progress finishes, no other starts; a second signal changes nothing.

    :param conf: the ``cfg.ConfigOpts`` of the daemon.
    :param service: a :class:`PeriodicService`.
    :returns: the exit code: 0 after a signal, 1 when the service could
        not start.
    """
    backend_type = use_threading_backend()
    compat.add_signal_handlers(('SIGTERM', 'SIGINT'),
                               lambda signo, frame: service.request_stop())
    launcher = compat.service_launcher(conf)
    if backend_type is not None:
        mode = 'oslo.service %s backend' % backend_type.value
    elif compat.eventlet_only_unpatched():
        mode = 'native threads: oslo.service 4.1 has no threading backend'
    else:
        mode = 'oslo.service eventlet backend'
    LOG.info('%s: running (%s)', service.name, mode)
    launcher.launch_service(service)
    service.wait_for_stop_request()
    if service.start_error is None:
        LOG.info('%s: stopping after the current round', service.name)
    launcher.stop()
    launcher.wait()
    if service.start_error is not None:
        LOG.error('%s could not start: %s', service.name,
                  service.start_error)
        return 1
    LOG.info('%s: stopped', service.name)
    return 0
