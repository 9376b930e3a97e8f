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
"""Cost modules: what terminating one preemptible instance costs the provider.

A cost module is a small class with one rule (its docstring). Modules are
loaded with stevedore from the ``opie_sched.preemption.costs`` namespace, so an
operator can add one from their own package::

    [entry_points]
    opie_sched.preemption.costs =
        my_rule = my_pkg.costs:MyRuleCost

and combine modules with multipliers in ``[opie_preemption] cost_modules``
(e.g. ``billing_period:1.0,count:60``). The cost of an instance is
``Σ multiplier × module cost``; the cost of a victim set is the sum over its
instances. Every module returns a finite value >= 0, so the victim selection
can stay exact (see :mod:`opie_sched.preemption.victims`).
"""

import abc
import math

from opie_sched import plugins

NAMESPACE = 'opie_sched.preemption.costs'


class CostModuleError(ValueError):
    """A cost module could not be loaded, or returned an invalid cost."""


class BaseCostModule(metaclass=abc.ABCMeta):
    """Base class of cost modules.

    Subclasses implement :meth:`cost`. ``conf`` is the oslo.config object
    (or None in the pure library) and may be used to read options.
    """

    #: the unit of the value :meth:`cost` returns, for reports.
    unit = ''

    def __init__(self, conf=None, **kwargs):
        self.conf = conf

    @abc.abstractmethod
    def cost(self, instance, host, now):
        """Cost of terminating ``instance`` at ``now``.

        :param instance: :class:`~opie_sched.preemption.model.InstanceInfo`
        :param host: the :class:`~opie_sched.preemption.model.HostView` it
            runs on.
        :param now: timezone-aware UTC datetime.
        :returns: float >= 0.
        """


class BillingPeriodCost(BaseCostModule):
    """Elapsed time in the current billing period, in seconds.

    Providers bill preemptible instances by whole periods and do not bill a
    period the provider cuts short, so terminating an instance loses the
    time already run in its current period: ``cost = runtime mod period``
    (López García et al., Alg. 4). The period is ``[opie_preemption]
    billing_period`` (default 3600 s).
    """

    unit = 's'

    def __init__(self, conf=None, period=None, **kwargs):
        super().__init__(conf)
        if period is None:
            period = conf.opie_preemption.billing_period if conf else 3600
        if period <= 0:
            raise CostModuleError('billing period must be > 0 seconds, '
                                  'got %r' % (period,))
        self.period = period

    def cost(self, instance, host, now):
        return math.fmod(instance.runtime_seconds(now), self.period)


class RuntimeCost(BaseCostModule):
    """Work lost, in seconds of runtime: the youngest instances go first."""

    unit = 's'

    def cost(self, instance, host, now):
        return instance.runtime_seconds(now)


class CountCost(BaseCostModule):
    """One per victim: the fewest instances are terminated."""

    unit = 'instances'

    def cost(self, instance, host, now):
        return 1.0


class WasteCost(BaseCostModule):
    """Capacity freed, as a fraction of the host's capacity, summed over
    vCPU, RAM and disk.

    Since the need is fixed, minimising the sum over victims of what each
    one frees minimises the capacity freed beyond the need (the waste).
    Dimensions where the host has no capacity are ignored.
    """

    unit = 'host fractions'

    def cost(self, instance, host, now):
        total = 0.0
        for amount, cap in zip(instance.resources, host.capacity):
            if cap > 0:
                total += amount / cap
        return total


class CostPolicy:
    """Weighted combination of cost modules.

    :param modules: list of ``(module, multiplier)`` pairs; multipliers are
        floats >= 0.
    """

    def __init__(self, modules):
        if not modules:
            raise CostModuleError('at least one cost module is required')
        for module, multiplier in modules:
            if not (isinstance(multiplier, (int, float))
                    and math.isfinite(multiplier) and multiplier >= 0):
                raise CostModuleError(
                    'cost multiplier for %s must be a finite number >= 0, '
                    'got %r' % (type(module).__name__, multiplier))
        self.modules = list(modules)

    def instance_cost(self, instance, host, now):
        """The combined cost of terminating one instance (float >= 0).

        :raises CostModuleError: when a module returns a negative, infinite
            or NaN value.
        """
        total = 0.0
        for module, multiplier in self.modules:
            value = module.cost(instance, host, now)
            if not (math.isfinite(value) and value >= 0):
                raise CostModuleError(
                    'cost module %s returned %r for instance %s; costs must '
                    'be finite and >= 0' % (type(module).__name__, value,
                                            instance.uuid))
            total += multiplier * value
        return total

    def describe(self):
        return ','.join('%s:%g' % (type(m).__name__, w)
                        for m, w in self.modules)


def parse_cost_modules(spec):
    """Parse ``name[:multiplier],...`` into ``[(name, multiplier)]``.

    :param spec: a string such as ``"billing_period:1.0,count:60"`` or a list
        of such items (as oslo.config ListOpt gives).
    :raises CostModuleError: on an empty spec, an empty name or a multiplier
        that is not a finite number >= 0.
    """
    items = spec.split(',') if isinstance(spec, str) else list(spec)
    result = []
    for item in items:
        item = item.strip()
        if not item:
            continue
        name, _, mult = item.partition(':')
        name = name.strip()
        if not name:
            raise CostModuleError('empty cost module name in %r' % (spec,))
        try:
            multiplier = float(mult) if mult.strip() else 1.0
        except ValueError:
            raise CostModuleError('multiplier of cost module %r is not a '
                                  'number: %r' % (name, mult))
        if not (math.isfinite(multiplier) and multiplier >= 0):
            raise CostModuleError('multiplier of cost module %r must be a '
                                  'finite number >= 0, got %r'
                                  % (name, mult))
        result.append((name, multiplier))
    if not result:
        raise CostModuleError('no cost module named in %r' % (spec,))
    return result


def load_cost_module(name, conf=None, **kwargs):
    """Load one cost module by entry-point name (:func:`opie_sched.plugins.
    load`), constructed with ``conf`` and ``kwargs``.

    :raises CostModuleError: when no module of that name is installed or it
        fails to import or to initialise (the loader's message; its
        :class:`~opie_sched.plugins.PluginError` is the ``__cause__``).
    """
    try:
        return plugins.load(NAMESPACE, name, kind='cost module',
                            kwargs=dict(conf=conf, **kwargs),
                            passthrough=(CostModuleError,))
    except plugins.PluginError as exc:
        raise CostModuleError(str(exc)) from exc


def names():
    """Sorted names of the installed cost modules."""
    return plugins.names(NAMESPACE)


def load_policy(spec, conf=None, **kwargs):
    """Build a :class:`CostPolicy` from a ``name[:multiplier],...`` spec.

    :raises CostModuleError: see :func:`parse_cost_modules` and
        :func:`load_cost_module`.
    """
    return CostPolicy([(load_cost_module(name, conf=conf, **kwargs), mult)
                       for name, mult in parse_cost_modules(spec)])
