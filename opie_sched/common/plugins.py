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
"""Loading one named plugin from an entry-point group.

Every plugin family of opie_sched (repacker strategies, autoscaler SLO
policies and demand sources, utilisation sources, ...) is a group of
entry points in ``setup.cfg [entry_points]``. :func:`load` is the one way
to get a plugin by name: stevedore loads the entry point, and every
failure is one of two errors with one message format:

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
asked (which would otherwise log a warning of its own).
"""

import importlib.metadata

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
