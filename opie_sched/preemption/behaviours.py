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
"""Interruption behaviours: how a victim is interrupted, one registry.

A behaviour is a small class with one rule (its docstring), loaded by
:func:`opie_sched.plugins.load_all` from the entry-point group
``opie_sched.preemption.behaviours`` like the cost modules
(:mod:`opie_sched.preemption.costs`), so an operator can add one from
their own package::

    [entry_points]
    opie_sched.preemption.behaviours =
        my_behaviour = my_pkg.behaviours:MyBehaviour

Every place that names a behaviour reads this registry: the scheduler's
actions (:mod:`opie_sched.scheduler.actions`), the market's enforcement
(:mod:`opie_sched.services.market.enforcement`), the flavor extra spec
``opie:interruption_behavior`` (:mod:`opie_sched.scheduler.extra_specs`),
the options ``[opie_preemption] action`` and ``[opie_market]
preemption_action`` (:class:`OptionType`), the victim records
(:data:`opie_sched.preemption.victim_state.BEHAVIORS`) and the
notification enums (:mod:`opie_sched.notifications`; a unit test fails
when a new behaviour is registered without a payload version bump).

Each behaviour says:

* whether it frees the host (:attr:`InterruptionBehaviour.frees_host`):
  every behaviour loaded must, since a victim is chosen to free its host
  (a behaviour that does not is refused at load, :class:`BehaviourError`);
* which verb to send from which VM state
  (:meth:`InterruptionBehaviour.verb`): a Nova compute API call,
  ``delete``, ``stop``, ``shelve`` or ``shelve_offload``
  (:data:`VERBS`), or :data:`REFUSED` for a state Nova refuses that verb
  in;
* its fallback (:attr:`InterruptionBehaviour.fallback`): the behaviour
  used instead when Nova refuses its verb, either from a state known to be
  refused (:data:`REFUSED`, decided before any call) or when the call
  itself is refused (a race: the state changed since it was read);
* when the victim counts as released
  (:meth:`InterruptionBehaviour.released`): its host is freed.

The three behaviours shipped (one meaning each, for the scheduler and the
market alike):

``delete``
    Deleted at once.
``stop``
    Stopped (a clean shutdown, so the guest can checkpoint), then deleted
    after the grace period (``stop_grace_period`` of the service). A
    stopped server keeps its Placement allocation, so only the delete
    frees the host.
``shelve``
    Shelved and offloaded: the server stays in its project (its owner can
    unshelve it), its host is freed. Nova refuses to shelve a server that
    is rescued, in ERROR, waiting in VERIFY_RESIZE or soft-deleted (only
    ACTIVE, SHUTOFF, PAUSED and SUSPENDED servers can be shelved): such a
    victim falls back to ``delete``, the contract every preemptible server
    has, and its owner is told so by an instance fault.

VM states are Nova's ``vm_state`` strings (``nova.compute.vm_states``,
not imported: this module imports no Nova); services that only see the
API's status map it with :data:`STATUS_VM_STATES`.
"""

import abc
import collections
import collections.abc
import threading

from opie_sched import plugins

NAMESPACE = 'opie_sched.preemption.behaviours'

#: Nova's vm_state values (``nova.compute.vm_states``).
ACTIVE = 'active'
BUILDING = 'building'
PAUSED = 'paused'
SUSPENDED = 'suspended'
STOPPED = 'stopped'
RESCUED = 'rescued'
RESIZED = 'resized'
SOFT_DELETED = 'soft-delete'
DELETED = 'deleted'
ERROR = 'error'
SHELVED = 'shelved'
SHELVED_OFFLOADED = 'shelved_offloaded'

#: The API's server status -> Nova's vm_state, for readers of the API
#: (the market). Statuses not listed (BUILD, MIGRATING, REBOOT ...) are
#: transitions: the caller waits for them to end.
STATUS_VM_STATES = {
    'ACTIVE': ACTIVE, 'PAUSED': PAUSED, 'SUSPENDED': SUSPENDED,
    'SHUTOFF': STOPPED, 'RESCUE': RESCUED, 'VERIFY_RESIZE': RESIZED,
    'SOFT_DELETED': SOFT_DELETED, 'DELETED': DELETED, 'ERROR': ERROR,
    'SHELVED': SHELVED, 'SHELVED_OFFLOADED': SHELVED_OFFLOADED,
}

#: The verbs a behaviour may send: Nova compute API calls.
DELETE_VERB = 'delete'
STOP_VERB = 'stop'
SHELVE_VERB = 'shelve'
OFFLOAD_VERB = 'shelve_offload'
VERBS = (DELETE_VERB, STOP_VERB, SHELVE_VERB, OFFLOAD_VERB)
#: :meth:`InterruptionBehaviour.verb`'s answer for a state in which Nova
#: refuses the behaviour's verb: its :attr:`~InterruptionBehaviour.
#: fallback` applies.
REFUSED = 'refused'


class BehaviourError(ValueError):
    """An unknown behaviour name, or a behaviour that cannot be loaded or
    breaks the contract (does not free the host, no fallback chain that
    ends, an unknown verb).
    """


class InterruptionBehaviour(metaclass=abc.ABCMeta):
    """Base class of interruption behaviours.

    :attr:`name` is set from the entry point name at load.
    """

    #: the entry point name (set by the registry).
    name = ''
    #: one line for option and extra spec documentation.
    description = ''
    #: whether the behaviour frees the host (the victim's Placement
    #: allocation ends); required of every behaviour the registry loads.
    frees_host = True
    #: the behaviour used when Nova refuses this one's verb; None: none
    #: (only for a behaviour whose verbs Nova never refuses, ``delete``).
    fallback = 'delete'
    #: option (in the service's option group) holding the seconds between
    #: the first verb and the next step (``stop``: the grace period); None:
    #: the next step follows as soon as the first verb completed.
    grace_option = None
    #: whether its first verb may leave the victim on its host, so that a
    #: next step follows (:func:`opie_sched.scheduler.actions.release`
    #: waits for :meth:`step_done`, then sends the next verb).
    multi_step = True

    @abc.abstractmethod
    def verb(self, vm_state, task_state, first):
        """The compute API call of the victim's next step.

        :param vm_state: Nova's vm_state of the victim now.
        :param task_state: its task_state (None when Nova is idle on it).
        :param first: True for the behaviour's first step on this victim.
        :returns: one of :data:`VERBS`; :data:`REFUSED` when Nova refuses
            this behaviour's verb in ``vm_state``; None when nothing is to
            be sent (the victim is released).
        """

    @abc.abstractmethod
    def released(self, vm_state, task_state, deleted):
        """True when the victim no longer holds its host.

        :param deleted: True when the server is deleted.
        """

    def step_done(self, vm_state, task_state, deleted):
        """True when the step last sent has completed, so the next one may
        be sent (default: released).
        """
        return self.released(vm_state, task_state, deleted)

    def grace(self, opts):
        """Seconds between the first verb and the next step, read from
        ``opts`` (the service's option group) by :attr:`grace_option`;
        0 without one.
        """
        if self.grace_option is None:
            return 0
        return max(0, getattr(opts, self.grace_option, 0) or 0)


class DeleteBehaviour(InterruptionBehaviour):
    """Delete the victim at once. Nova deletes a server in any state, so
    there is no fallback; released once deleted.
    """

    description = 'delete the server at once'
    fallback = None
    multi_step = False

    def verb(self, vm_state, task_state, first):
        return None if vm_state == DELETED else DELETE_VERB

    def released(self, vm_state, task_state, deleted):
        return bool(deleted) or vm_state == DELETED


class StopBehaviour(InterruptionBehaviour):
    """Stop the victim (a clean shutdown: the guest can checkpoint), then
    delete it after the grace period (the service's ``stop_grace_period``).

    A stopped server keeps its Placement allocation: only the delete frees
    the host, and the victim counts as released once deleted. The stop is
    sent only as the first step on an ACTIVE server; from any other state
    (already stopped, rescued, in ERROR ...) the victim is deleted.
    """

    description = ('stop the server (a clean shutdown), then delete it '
                   'after stop_grace_period seconds')
    grace_option = 'stop_grace_period'

    def verb(self, vm_state, task_state, first):
        if vm_state == DELETED:
            return None
        if first and vm_state == ACTIVE:
            return STOP_VERB
        return DELETE_VERB

    def released(self, vm_state, task_state, deleted):
        return bool(deleted) or vm_state == DELETED

    def step_done(self, vm_state, task_state, deleted):
        return self.released(vm_state, task_state, deleted) or (
            vm_state == STOPPED and task_state is None)


class ShelveBehaviour(InterruptionBehaviour):
    """Shelve the victim and offload it: it stays in its project as
    SHELVED_OFFLOADED (its owner can unshelve it), its host is freed.

    Nova shelves only ACTIVE, SHUTOFF, PAUSED and SUSPENDED servers (an
    image snapshot per image-backed server); a shelved server still on its
    host is offloaded. From any other state (rescued, ERROR,
    VERIFY_RESIZE, soft-deleted ...) Nova refuses: the victim falls back
    to ``delete``. Released once offloaded (or deleted).
    """

    description = ('shelve and offload the server (it stays in its '
                   'project, its host is freed); deleted instead when '
                   'Nova refuses to shelve it (rescued, ERROR, '
                   'VERIFY_RESIZE, soft-deleted)')
    #: the vm_states Nova shelves from (``nova.compute.api.API.shelve``).
    SHELVABLE = frozenset([ACTIVE, STOPPED, PAUSED, SUSPENDED])

    def verb(self, vm_state, task_state, first):
        if vm_state in (DELETED, SHELVED_OFFLOADED):
            return None
        if vm_state == SHELVED:
            return OFFLOAD_VERB
        if vm_state in self.SHELVABLE:
            return SHELVE_VERB
        return REFUSED

    def released(self, vm_state, task_state, deleted):
        return bool(deleted) or vm_state in (DELETED, SHELVED_OFFLOADED)

    def step_done(self, vm_state, task_state, deleted):
        return self.released(vm_state, task_state, deleted) or (
            vm_state == SHELVED and task_state is None)


# -- the registry -------------------------------------------------------------

_lock = threading.Lock()
_registry = None


#: What a behaviour is, in the loader's messages.
KIND = 'interruption behaviour'


def _check(found):
    for name, behaviour in found.items():
        if not isinstance(behaviour, InterruptionBehaviour):
            raise BehaviourError('interruption behaviour %s is not an '
                                 'InterruptionBehaviour' % name)
        if not behaviour.frees_host:
            raise BehaviourError(
                'interruption behaviour %s does not free the host: a '
                'victim is chosen to free its host' % name)
        seen, current = [name], behaviour
        while current.fallback is not None:
            if current.fallback not in found:
                raise BehaviourError('interruption behaviour %s falls back '
                                     'to %s, which is not registered'
                                     % (current.name, current.fallback))
            if current.fallback in seen:
                raise BehaviourError('interruption behaviours fall back in '
                                     'a cycle: %s' % ' -> '.join(
                                         seen + [current.fallback]))
            seen.append(current.fallback)
            current = found[current.fallback]


#: The behaviours shipped, in their documented order; any other comes
#: after them, by name (:func:`names`).
SHIPPED = ('delete', 'stop', 'shelve')


def _order(name):
    return (SHIPPED.index(name) if name in SHIPPED else len(SHIPPED), name)


def _build():
    try:
        loaded = plugins.load_all(NAMESPACE, kind=KIND)
    except plugins.PluginError as exc:
        raise BehaviourError(str(exc)) from exc
    found = collections.OrderedDict()
    for name in sorted(loaded, key=_order):
        loaded[name].name = name
        found[name] = loaded[name]
    _check(found)
    return found


def registry():
    """``{name: InterruptionBehaviour}`` of every registered behaviour
    (the entry points of :data:`NAMESPACE`), by name, loaded once per
    process.

    :raises BehaviourError: a behaviour cannot be loaded (the loader's
        message, its :class:`~opie_sched.plugins.PluginError` the
        ``__cause__``) or breaks the contract.
    """
    global _registry
    with _lock:
        if _registry is None:
            _registry = _build()
        return _registry


def reset():
    """Forget the loaded behaviours: the next use loads the entry points
    installed then (a test that installs one).
    """
    global _registry
    with _lock:
        _registry = None


def names():
    """The registered behaviour names: the shipped ones in
    :data:`SHIPPED` order, then the others by name.
    """
    return tuple(registry())


def get(name):
    """The behaviour ``name``.

    :raises BehaviourError: no behaviour of that name is registered (the
        :class:`~opie_sched.plugins.PluginNotFound` sentence).
    """
    found = registry()
    if isinstance(name, str) and name in found:
        return found[name]
    raise BehaviourError(str(plugins.PluginNotFound(
        NAMESPACE, name, KIND, sorted(found))))


def is_known(name):
    """True when ``name`` is a registered behaviour."""
    return name in registry()


def resolve(name, vm_state, task_state=None, first=True):
    """The behaviour that applies to a victim in ``vm_state`` and the verb
    to send: ``name``'s own verb, or its fallback's (followed as long as
    Nova refuses) when ``name`` reports :data:`REFUSED`.

    :returns: ``(behaviour name, verb or None)``.
    :raises BehaviourError: ``name`` is unknown.
    """
    behaviour = get(name)
    while True:
        verb = behaviour.verb(vm_state, task_state, first)
        if verb != REFUSED:
            if verb is not None and verb not in VERBS:
                raise BehaviourError('interruption behaviour %s returned '
                                     'an unknown verb %r'
                                     % (behaviour.name, verb))
            return behaviour.name, verb
        # the registry checked that the chain ends
        behaviour = get(behaviour.fallback)
        first = True


def fallback(name):
    """The behaviour to use when Nova refused ``name``'s verb, or None."""
    return get(name).fallback


class Names(collections.abc.Sequence):
    """The registered behaviour names as a live sequence: what it contains
    is read from the registry at each use (the extra spec validator's
    ``enum``).
    """

    def __getitem__(self, index):
        return names()[index]

    def __len__(self):
        return len(names())

    def __contains__(self, value):
        return isinstance(value, str) and is_known(value)

    def __repr__(self):
        return repr(list(names()))


class OptionType(plugins.OptionType):
    """oslo.config type of an option naming a behaviour
    (:class:`opie_sched.plugins.OptionType` of :data:`NAMESPACE`): its
    choices are the registered behaviours, read when the value is (so a
    behaviour added by an entry point is accepted, and listed in the
    sample configuration with its description), in :func:`names` order.
    """

    def __init__(self):
        super().__init__(NAMESPACE, KIND)

    @property
    def choices(self):
        return collections.OrderedDict(
            (name, behaviour.description)
            for name, behaviour in registry().items())

    @choices.setter
    def choices(self, value):
        # fixed: the registry's
        pass

    def __call__(self, value):
        value = str(value)
        get(value)
        return value
