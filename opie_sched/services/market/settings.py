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
"""The market's settings, validated: :class:`Settings` from the
``[opie_market]`` options (see :mod:`.opts` for their meanings).

Money in currency, bids and refill rates currency per hour, reserve
prices currency per unit-hour, times seconds.
"""

import dataclasses
import decimal
import functools

from opie_sched.market import bids as market_bids
from opie_sched.market import budget
from opie_sched.market import charge_rules
from opie_sched.market import pricing
from opie_sched.preemption import behaviours

#: Interruption behaviours (``[opie_market] preemption_action`` and the
#: flavor extra spec :data:`.enforcement.BEHAVIOR_SPEC`): the registry's
#: (:mod:`opie_sched.preemption.behaviours`, a live sequence).
BEHAVIORS = behaviours.Names()


class ConfigError(ValueError):
    """The market configuration is not valid (the message says which)."""


def _decimal(value, what, allow_none=False):
    if value in (None, '') and allow_none:
        return None
    try:
        result = decimal.Decimal(str(value).strip())
    except (decimal.InvalidOperation, TypeError):
        raise ConfigError('%s: not a number: %r' % (what, value))
    if not result.is_finite() or result < 0:
        raise ConfigError('%s: must be a finite number >= 0, got %r'
                          % (what, value))
    return result


@dataclasses.dataclass(frozen=True)
class Settings:
    """The market's knobs, validated (see :mod:`.opts` for meanings).

    Money in currency, bids and refill rates currency per hour, reserve
    prices currency per unit-hour, times seconds.
    """
    period_seconds: int = 300
    reserve_prices: dict = dataclasses.field(default_factory=dict)
    default_bid: decimal.Decimal = decimal.Decimal(0)
    bid_cap: decimal.Decimal = None
    notice_period: int = 300
    preemption_action: str = 'delete'
    stop_grace_period: int = 30
    out_of_credit_policy: str = 'lowest_bid'
    pools: tuple = ()
    initial_credit: decimal.Decimal = decimal.Decimal(0)
    refill_rate: decimal.Decimal = decimal.Decimal(0)
    credit_cap: decimal.Decimal = None
    refused_demand_window: int = None
    charge_rule: str = 'share_cost'
    drill_limit: int = 3
    drill_window: int = 86400
    scheduler_notice_window: int = 3600

    def __post_init__(self):
        # loaded now: an unknown or broken plugin stops the service at
        # start, with the loader's sentence
        try:
            self.charge
        except charge_rules.ChargeRuleError as exc:
            raise ConfigError('charge_rule: %s' % exc) from exc
        try:
            self.credit_policy
        except budget.BudgetError as exc:
            raise ConfigError('out_of_credit_policy: %s' % exc) from exc
        if self.refused_demand_window is not None and \
                self.refused_demand_window < 0:
            raise ConfigError('refused_demand_window must be >= 0, got %r'
                              % self.refused_demand_window)
        if self.period_seconds <= 0:
            raise ConfigError('period_seconds must be > 0, got %r'
                              % self.period_seconds)
        if self.notice_period < 0:
            raise ConfigError('notice_period must be >= 0, got %r'
                              % self.notice_period)
        if self.preemption_action not in BEHAVIORS:
            raise ConfigError('preemption_action must be one of %s, got %r'
                              % (', '.join(BEHAVIORS),
                                 self.preemption_action))
        if self.drill_limit < 0:
            raise ConfigError('drill_limit must be >= 0, got %r'
                              % self.drill_limit)
        if self.drill_window <= 0:
            raise ConfigError('drill_window must be > 0, got %r'
                              % self.drill_window)
        if self.scheduler_notice_window <= 0:
            raise ConfigError('scheduler_notice_window must be > 0, got %r'
                              % self.scheduler_notice_window)
        if self.stop_grace_period < 0:
            raise ConfigError('stop_grace_period must be >= 0, got %r'
                              % self.stop_grace_period)
        unknown = set(self.reserve_prices) - set(pricing.RESOURCES)
        if unknown:
            raise ConfigError('reserve_prices: unknown resources %s (known: '
                              '%s)' % (', '.join(sorted(unknown)),
                                       ', '.join(pricing.RESOURCES)))
        if self.default_bid is not None:
            try:
                market_bids.parse_bid(self.default_bid, self.bid_cap,
                                      'default_bid')
            except market_bids.BidError as exc:
                raise ConfigError(str(exc))

    @classmethod
    def from_conf(cls, conf_group):
        """Settings from the ``[opie_market]`` options.

        :raises ConfigError: an option is not a valid number, etc.
        """
        g = conf_group
        reserve = {r: _decimal(v, 'reserve_prices %s' % r)
                   for r, v in (g.reserve_prices or {}).items()}
        return cls(
            period_seconds=g.period_seconds, reserve_prices=reserve,
            default_bid=_decimal(g.default_bid, 'default_bid',
                                 allow_none=True),
            bid_cap=_decimal(g.bid_cap, 'bid_cap', allow_none=True),
            notice_period=g.notice_period,
            preemption_action=g.preemption_action,
            stop_grace_period=g.stop_grace_period,
            out_of_credit_policy=g.out_of_credit_policy,
            pools=tuple(g.pools or ()),
            initial_credit=_decimal(g.initial_credit, 'initial_credit'),
            refill_rate=_decimal(g.refill_rate, 'refill_rate'),
            credit_cap=_decimal(g.credit_cap, 'credit_cap',
                                allow_none=True),
            refused_demand_window=g.refused_demand_window,
            charge_rule=g.charge_rule, drill_limit=g.drill_limit,
            drill_window=g.drill_window,
            scheduler_notice_window=g.scheduler_notice_window)

    @functools.cached_property
    def charge(self):
        """The :class:`~opie_sched.market.charge_rules.ChargeRule` named
        by :attr:`charge_rule`.

        :raises opie_sched.market.charge_rules.ChargeRuleError: not
            installed or failing to load.
        """
        return charge_rules.load(self.charge_rule)

    @functools.cached_property
    def credit_policy(self):
        """The :class:`~opie_sched.market.budget.OutOfCreditPolicy` named
        by :attr:`out_of_credit_policy`.

        :raises opie_sched.market.budget.BudgetError: not installed or
            failing to load.
        """
        return budget.load_policy(self.out_of_credit_policy)

    @property
    def refused_window(self):
        """Seconds a refused boot counts as demand, from its creation.

        Default ``2 * period_seconds + notice_period``: long enough for
        the notice it causes to be enforced -- the boot is priced at the
        next period start (up to one period later), the notice runs
        ``notice_period``, and the case is checked again on the period in
        force at the deadline (one more period). Deleting the refused
        server (its owner gave up) ends its demand at once.
        """
        if self.refused_demand_window is None:
            return 2 * self.period_seconds + self.notice_period
        return self.refused_demand_window


def config_problems(conf, opts):
    """The market's check of its option group for
    :mod:`opie_sched.conf.validation` (entry point
    ``opie_sched.config_checks = opie_market``): what
    :meth:`Settings.from_conf` refuses.

    :param conf: the parsed ``cfg.ConfigOpts``; ``opts`` its
        ``[opie_market]`` group.
    :returns: list of str, one sentence; empty when valid.
    """
    try:
        Settings.from_conf(opts)
    except ConfigError as exc:
        return ['[opie_market] %s' % ' '.join(str(exc).split())]
    return []
