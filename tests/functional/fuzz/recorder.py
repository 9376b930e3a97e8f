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
"""What opie did, seen from outside its decisions: every destructive call
it makes through nova's compute API (``actions.compute_api``, the one
door of the scheduler's, the reconciler's and the lifetime's victims) and
every victim decision (``planner.plan_host``), with the faults the fuzzer
injects into those calls (a delete refused, a delete lost).

The spot market acts through openstacksdk, i.e. through Nova's REST API,
not through ``actions.compute_api``: its destructive calls are seen where
Nova's API turns them into compute API calls (``nova.compute.api.API``),
for the thread that runs a market round (:meth:`Recorder.market_round`),
whatever code path of the market made them. Each is judged when it is
made with the instance as Nova's API loaded it (``market_check``).
"""

import contextlib
import threading

from nova.compute import api as nova_compute_api

from opie_sched.preemption import planner
from opie_sched.scheduler import actions
from opie_sched.scheduler import ownership

#: Calls of nova's compute API that stop, shelve or delete a server.
DESTRUCTIVE = frozenset(['delete', 'stop', 'shelve', 'shelve_offload',
                         'soft_delete', 'force_delete', 'force_stop'])
#: The entry points of nova's compute API that Nova's REST API calls for
#: a server delete (``soft_delete`` with ``reclaim_instance_interval``),
#: force delete, stop, shelve and shelve offload: what the market's
#: openstacksdk calls become.
MARKET_DESTRUCTIVE = ('delete', 'soft_delete', 'force_delete', 'stop',
                      'shelve', 'shelve_offload')
#: ``preemptor`` of the market's calls.
MARKET = 'opie-market'


class Destroyed:
    """One destructive call opie made."""

    def __init__(self, verb, uuid, preemptor):
        self.verb = verb
        self.uuid = uuid
        self.preemptor = preemptor

    @property
    def by_market(self):
        return self.preemptor == MARKET

    def __repr__(self):
        return '%s(%s, preemptor %s)' % (self.verb, self.uuid,
                                         self.preemptor)


class _ApiSpy:
    """nova's compute API with every destructive call recorded (and the
    injected faults applied) before it is made.
    """

    def __init__(self, recorder, real):
        self._recorder = recorder
        self._real = real

    def __getattr__(self, name):
        attr = getattr(self._real, name)
        if name not in DESTRUCTIVE:
            return attr
        recorder = self._recorder

        def call(ctxt, instance, *args, **kwargs):
            state = ownership.victim_state(instance)
            recorder.destroyed(name, instance.uuid,
                               state.preemptor if state else None)
            fault = recorder.fault_for(name, instance.uuid)
            if fault == 'refuse':
                raise RuntimeError('fuzz: compute service refuses %s' % name)
            if fault == 'lose':
                # accepted and never carried out (an RPC cast lost)
                recorder.sent(name, instance.uuid)
                return None
            result = attr(ctxt, instance, *args, **kwargs)
            recorder.sent(name, instance.uuid)
            return result
        return call


class Recorder:
    """Installs the spies (``install(useFixture)``) and keeps what they
    saw; ``check`` (a callable ``(verb, uuid, preemptor) -> problem or
    None``) judges each destructive call when it is made, against the
    fuzzer's model.
    """

    def __init__(self):
        self.lock = threading.Lock()
        self.calls = []
        self.decisions = []
        self.faults = {}
        self.check = None
        self.problems = []
        #: called ``(verb, uuid)`` after each destructive call was sent
        #: (the worker-kill rule's last point of death)
        self.on_sent = None
        #: judges each market call ``(verb, instance) -> problem or None``
        self.market_check = None
        #: the thread running a market round, or None
        self._market_thread = None
        #: resizes the market confirmed (uuids), since the last take
        self.market_confirmed = []

    def install(self, use_fixture):
        import fixtures
        real_api = actions.compute_api
        spy_cache = {}

        def compute_api():
            real = real_api()
            spy = spy_cache.get(id(real))
            if spy is None:
                spy = spy_cache[id(real)] = _ApiSpy(self, real)
            return spy

        use_fixture(fixtures.MockPatchObject(actions, 'compute_api',
                                             compute_api))
        real_plan = planner.plan_host

        def plan_host(host, request, policy, now):
            plan = real_plan(host, request, policy, now)
            with self.lock:
                self.decisions.append((host, request, policy, now, plan))
            return plan

        use_fixture(fixtures.MockPatchObject(planner, 'plan_host',
                                             plan_host))

    def install_market(self, use_fixture):
        """Spy on nova's compute API for the market's calls
        (:meth:`market_round`).
        """
        import fixtures
        for name in MARKET_DESTRUCTIVE + ('confirm_resize',):
            use_fixture(fixtures.MockPatchObject(
                nova_compute_api.API, name,
                self._market_spy(name, getattr(nova_compute_api.API,
                                               name))))

    def _market_spy(self, name, real):
        recorder = self

        def call(api, context, instance, *args, **kwargs):
            if recorder._market_thread == threading.get_ident():
                if name == 'confirm_resize':
                    with recorder.lock:
                        recorder.market_confirmed.append(instance.uuid)
                else:
                    recorder.market_destroyed(name, instance)
            return real(api, context, instance, *args, **kwargs)
        return call

    @contextlib.contextmanager
    def market_round(self):
        """While in this block, the calling thread's calls of nova's
        compute API (made by Nova's REST API for the market's openstacksdk
        requests, in-process) are the market's.
        """
        self._market_thread = threading.get_ident()
        try:
            yield
        finally:
            self._market_thread = None

    def market_destroyed(self, verb, instance):
        with self.lock:
            self.calls.append(Destroyed(verb, instance.uuid, MARKET))
        if self.market_check is not None:
            problem = self.market_check(verb, instance)
            if problem:
                with self.lock:
                    self.problems.append(problem)

    def destroyed(self, verb, uuid, preemptor):
        with self.lock:
            self.calls.append(Destroyed(verb, uuid, preemptor))
        if self.check is not None:
            problem = self.check(verb, uuid, preemptor)
            if problem:
                with self.lock:
                    self.problems.append(problem)

    def sent(self, verb, uuid):
        if self.on_sent is not None:
            self.on_sent(verb, uuid)

    def fault_for(self, verb, uuid):
        """The fault injected into opie's ``verb`` (``refuse``, ``lose``
        or None): faults are keyed by verb family (``delete`` covers the
        deletes, ``shelve`` the shelves), for every server.
        """
        family = 'shelve' if verb.startswith('shelve') else (
            'delete' if 'delete' in verb else verb)
        with self.lock:
            return self.faults.get(family)

    def take(self):
        """``(calls, decisions, problems)`` since the last take."""
        with self.lock:
            out = (self.calls, self.decisions, self.problems)
            self.calls, self.decisions, self.problems = [], [], []
        return out

    def reset(self):
        with self.lock:
            self.calls, self.decisions, self.problems = [], [], []
            self.market_confirmed = []
            self.faults = {}
