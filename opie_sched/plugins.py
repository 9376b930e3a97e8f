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
"""The one loader of plugins: a named plugin of an entry-point group.

Every plugin family of opie_sched is a group of entry points in
``setup.cfg [entry_points]``, one class per plugin:

=============================================  ==============================
entry-point group                              family
=============================================  ==============================
``opie_sched.preemption.costs``                cost modules
``opie_sched.preemption.behaviours``           interruption behaviours
``opie_sched.market.charge_rules``             the market's charge rules
``opie_sched.market.out_of_credit``            out-of-credit policies
``opie_sched.repacker.strategies``             repacker strategies
``opie_sched.autoscaler.policies``             autoscaler SLO policies
``opie_sched.autoscaler.demand``               autoscaler demand sources
``opie_sched.utilisation``                     utilisation sources
=============================================  ==============================

(``opie_sched.cli``, the commands of ``opie-sched``, is cliff's.)

:func:`load` is the one way to get a plugin by name and :func:`load_all`
the one way to get every plugin of a group: stevedore loads the entry
point, and every failure is one of two errors with one message format:

* :class:`PluginNotFound` -- no entry point of that name in the group::

    unknown repacker strategy 'rmp' (entry-point group
    opie_sched.repacker.strategies; available: gossip, p2p, rpm, tabu)

* :class:`PluginLoadError` -- the entry point exists but importing it, or
  constructing the plugin, failed::

    repacker strategy 'tabu' (entry-point group
    opie_sched.repacker.strategies) failed to load: ImportError: ...

Both are :class:`PluginError`, which carries ``group``, ``name`` and
``available``. A family whose plugins raise an error of their own for bad
options (e.g. the autoscaler's ``PolicyError``) names it in ``passthrough``
and gets it unchanged.

The names are read from the package metadata (:func:`names`), without
importing any plugin, so a missing name is reported before stevedore is
asked (which would otherwise log a warning of its own). An option naming a
plugin takes its possible values from the same metadata
(:class:`OptionType`), so a plugin installed by another package is
accepted, listed in the sample configuration and checked at start by
:mod:`opie_sched.conf.validation` like the shipped ones.
"""

import importlib.metadata

from oslo_config import types
from stevedore import driver


class PluginError(Exception):
    """A plugin could not be had.

    :ivar group: the entry-point group (stevedore namespace).
    :ivar name: the plugin name asked for.
    :ivar kind: what the plugin is, in words (``'repacker strategy'``).
    :ivar available: sorted names installed in ``group``.
    """

    def __init__(self, message, group, name, kind, available):
        super().__init__(message)
        self.group = group
        self.name = name
        self.kind = kind
        self.available = available


class PluginNotFound(PluginError, LookupError):
    """No entry point named ``name`` in ``group``."""

    def __init__(self, group, name, kind, available):
        super().__init__(
            'unknown %s %r (entry-point group %s; available: %s)'
            % (kind, name, group, ', '.join(available) or 'none'),
            group, name, kind, available)


class PluginLoadError(PluginError):
    """The entry point ``name`` of ``group`` failed to import or to
    construct; ``cause`` is the original exception (also ``__cause__``).
    """

    def __init__(self, group, name, kind, available, cause):
        super().__init__(
            '%s %r (entry-point group %s) failed to load: %s: %s'
            % (kind, name, group, type(cause).__name__, cause),
            group, name, kind, available)
        self.cause = cause


def names(group):
    """The sorted, distinct names of the entry points of ``group`` (from
    the package metadata; no plugin is imported).
    """
    return sorted({ep.name for ep in
                   importlib.metadata.entry_points(group=group)})


def load(group, name, kind='plugin', invoke=True, args=(), kwargs=None,
         passthrough=()):
    """The plugin ``name`` of the entry-point group ``group``.

    :param group: entry-point group (stevedore namespace).
    :param name: entry-point name; anything else than a string is
        reported as not found.
    :param kind: what the plugin is, for messages (``'demand source'``).
    :param invoke: call what the entry point names with ``args`` and
        ``kwargs`` and return the result; false: return it uncalled (the
        class or function).
    :param passthrough: exception types that constructing the plugin may
        raise unchanged (a family's own error for bad options).
    :raises PluginNotFound: no entry point of that name.
    :raises PluginLoadError: importing it failed, several distributions
        register the name, or (``invoke``) constructing it raised an
        exception not in ``passthrough``.
    """
    available = names(group)
    if not isinstance(name, str) or name not in available:
        raise PluginNotFound(group, name, kind, available)
    try:
        target = driver.DriverManager(group, name).driver
    except Exception as exc:
        raise PluginLoadError(group, name, kind, available, exc) from exc
    if not invoke:
        return target
    try:
        return target(*args, **(kwargs or {}))
    except tuple(passthrough):
        raise
    except Exception as exc:
        raise PluginLoadError(group, name, kind, available, exc) from exc


def load_all(group, kind='plugin', invoke=True, args=(), kwargs=None,
             passthrough=()):
    """Every plugin of ``group``, ``{name: plugin}`` by name (see
    :func:`load` for the parameters).

    :raises PluginLoadError: the first plugin (by name) that fails.
    """
    return {name: load(group, name, kind=kind, invoke=invoke, args=args,
                       kwargs=kwargs, passthrough=passthrough)
            for name in names(group)}


def description(plugin):
    """One line about ``plugin`` (a class or an object): its
    ``description`` attribute, else the first sentence of its docstring.
    """
    text = getattr(plugin, 'description', '') or ''
    if not text:
        doc = (getattr(plugin, '__doc__', '') or '').strip()
        text = ' '.join(doc.split('\n\n', 1)[0].split())
    return text


class OptionType(types.String):
    """oslo.config type of an option naming one plugin of ``group``.

    Its possible values are the entry points installed in ``group``, read
    when the option is (so a plugin added by another package is
    accepted); a value that is none of them is refused with the
    :class:`PluginNotFound` sentence. :attr:`choices` (what the sample
    configuration lists) imports the plugins for their
    :func:`description`.

    :param group: entry-point group.
    :param kind: what the plugin is, in words (``'charge rule'``): the
        option's type name and the error's.
    """

    def __init__(self, group, kind):
        self.group = group
        self.kind = kind
        super().__init__(type_name=kind)

    @property
    def choices(self):
        out = {}
        for name in names(self.group):
            try:
                out[name] = description(load(self.group, name,
                                             kind=self.kind, invoke=False))
            except PluginError as exc:
                out[name] = str(exc)
        return out

    @choices.setter
    def choices(self, value):
        # fixed: the installed entry points
        pass

    def __call__(self, value):
        value = str(value)
        available = names(self.group)
        if value not in available:
            raise ValueError(str(PluginNotFound(self.group, value,
                                                self.kind, available)))
        return value

    def __eq__(self, other):
        return (type(other) is type(self) and other.group == self.group
                and other.kind == self.kind)

    def __hash__(self):
        return hash((type(self), self.group, self.kind))

    def __repr__(self):
        # what oslo.config's DefaultValueError names when the default is
        # not installed (raised at import): say where the names come from
        # and how stale metadata is fixed, without importing any plugin
        return ('%s (entry-point group %s; installed: %s; a plugin '
                'missing here that setup.cfg declares means the installed '
                'package metadata is stale: reinstall the package, e.g. '
                'pip install -e .)' % (self.kind, self.group,
                                       ', '.join(names(self.group))
                                       or 'none'))

    def _formatter(self, value):
        return str(value)
