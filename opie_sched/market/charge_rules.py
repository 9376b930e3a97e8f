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
"""Charge rules: what a running preemptible server pays per hour.

A charge rule is a small class with one rule (its docstring), an entry
point of the group ``opie_sched.market.charge_rules`` loaded by
:func:`opie_sched.plugins.load`, chosen by ``[opie_market] charge_rule``.
An operator can add one from their own package::

    [entry_points]
    opie_sched.market.charge_rules =
        my_rule = my_pkg.charging:MyRule

Each period, the market assesses every server's position in its pool
(:func:`opie_sched.market.outbid.assess`) and asks the rule what it pays
per hour (:meth:`ChargeRule.charge_per_hour`); the credit manager charges
that times the period in hours (:func:`opie_sched.market.budget.
server_charge`).
"""

import abc

from opie_sched.market import pricing
from opie_sched import plugins

NAMESPACE = 'opie_sched.market.charge_rules'
#: What a charge rule is, in the loader's messages.
KIND = 'charge rule'
#: The rules shipped, in their documented order (the notification enum's);
#: any other comes after them, by name (:func:`names`).
SHIPPED = ('share_cost', 'bid')


class ChargeRuleError(ValueError):
    """An unknown charge rule, or one that cannot be loaded."""


class ChargeRule(metaclass=abc.ABCMeta):
    """Base class of charge rules."""

    #: one line for the option's documentation and the logs.
    description = ''

    @abc.abstractmethod
    def charge_per_hour(self, position):
        """What the server of ``position`` pays per hour.

        :param position: its :class:`opie_sched.market.outbid.Position`
            (``charge_per_hour``: what its share costs at the clearing
            prices, currency per hour; ``shares``: resource -> units it
            is entitled to; ``server.bid``: currency per hour).
        :returns: currency per hour, a Decimal >= 0.
        """


class ShareCostRule(ChargeRule):
    """A server pays what its share costs at the clearing price,
    ``sum_r p*_r * a_r`` (:func:`opie_sched.market.outbid.assess`): a
    uniform price. Our deviation from the papers, which bill the bid
    (Merkat §2.3, Themis SLO-policies §2): under the work-conserving rule a
    server capped at its flavor would pay more than the market price of
    what it got, so two servers holding the same flavor would pay
    different amounts for the same thing.
    """

    description = ('a server pays what its share costs at the clearing '
                   'price (a uniform price; our deviation from the papers: '
                   'a server capped at its flavor pays the market price of '
                   'it, not more)')

    def charge_per_hour(self, position):
        return position.charge_per_hour


class BidRule(ChargeRule):
    """A server that holds a share pays its bid (Merkat §2.3 "VMs are
    billed based on their bids"; Themis SLO-policies §2); one without a
    share pays what its (empty) share costs.
    """

    description = ('a server pays its bid (the papers\' rule: Merkat §2.3, '
                   'Themis SLO-policies §2)')

    def charge_per_hour(self, position):
        if any(units > 0 for units in position.shares.values()):
            return pricing.as_decimal(position.server.bid)
        return position.charge_per_hour


def _order(name):
    return (SHIPPED.index(name) if name in SHIPPED else len(SHIPPED), name)


def names():
    """The installed charge rules: the shipped ones in :data:`SHIPPED`
    order, then the others by name.
    """
    return tuple(sorted(plugins.names(NAMESPACE), key=_order))


def load(name):
    """The charge rule ``name``, constructed.

    :raises ChargeRuleError: unknown name or a rule failing to load (the
        loader's message; its :class:`~opie_sched.plugins.PluginError` is
        the ``__cause__``).
    """
    try:
        return plugins.load(NAMESPACE, name, kind=KIND)
    except plugins.PluginError as exc:
        raise ChargeRuleError(str(exc)) from exc
