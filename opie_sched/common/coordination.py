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
"""What the companion services share to run as several replicas.

``opie-autoscaler`` and ``opie-repacker`` run a periodic loop in which only
one replica may act on a resource at a time; they take tooz locks
(OpenStack's coordination library) on a backend the operator already runs,
or tooz's file driver on one machine.
"""

import abc
import signal
import threading


class CoordinatedLoop(metaclass=abc.ABCMeta):
    """Coordinator lifecycle and stop flag of a periodic service.

    Subclasses set ``self.coordinator`` (a tooz coordinator or None to have
    :meth:`start` create one), ``self.member_id`` (str), ``self._conn``
    (an openstacksdk Connection or None) and ``self.opts`` (their option
    group, with a ``cloud`` option), call :meth:`_init_loop`, and implement
    :meth:`_coordination_url` and ``run_forever()``.
    """

    @property
    def conn(self):
        """The openstacksdk Connection (clouds.yaml entry ``opts.cloud``,
        or the ``OS_*`` variables), made on first use."""
        if self._conn is None:
            import openstack
            self._conn = openstack.connect(cloud=self.opts.cloud)
        return self._conn

    def run_until_signalled(self):
        """``run_forever()`` until SIGTERM or SIGINT asks it to stop
        after the current round."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self.request_stop())
        self.run_forever()

    def _init_loop(self, coordinator):
        self.coordinator = coordinator
        self._own_coordinator = coordinator is None
        self._stop = threading.Event()

    @abc.abstractmethod
    def _coordination_url(self):
        """The tooz backend URL (str), preparing what it needs."""

    def start(self):
        """Join the coordination backend (when not given a coordinator)."""
        if self.coordinator is None:
            from tooz import coordination
            self.coordinator = coordination.get_coordinator(
                self._coordination_url(), self.member_id.encode())
            self.coordinator.start(start_heart=True)
        return self

    def request_stop(self):
        """Make the loop return after the current round."""
        self._stop.set()

    def stop(self):
        """Stop the loop and leave the coordination backend."""
        self._stop.set()
        if self._own_coordinator and self.coordinator is not None:
            self.coordinator.stop()
            self.coordinator = None
