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
"""

import threading

from opie_sched.preemption import planner
from opie_sched.scheduler import actions
from opie_sched.scheduler import ownership

#: Calls of nova's compute API that stop, shelve or delete a server.
DESTRUCTIVE = frozenset(['delete', 'stop', 'shelve', 'shelve_offload',
                         'soft_delete', 'force_delete', 'force_stop'])


class Destroyed:
    """One destructive call opie made."""

    def __init__(self, verb, uuid, preemptor):
        self.verb = verb
        self.uuid = uuid
        self.preemptor = preemptor

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
            self.faults = {}
