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
"""Credit manager: project accounts, refills, per-period charges, a ledger.

Merkat §2.2 and §4.1.3: a bank gives users budgets of credits; each
account is charged by the market scheduler for the resources its VMs use;
a transfer refills accounts at a predefined interval so that applications
do not run dry mid-execution. Themis (SLO-policies paper, §2) funds
applications *at a rate*. Here:

* an :class:`Account` per project holds a ``balance`` (currency), a
  ``refill_rate`` (currency per hour) and a ``cap`` (currency): a refill
  never lifts the balance above the cap; bank credits are not capped;
* every period of ``period_seconds`` (e.g. 3600 s), each running
  preemptible server is charged what its share costs,
  ``charge_per_hour * period_seconds / 3600`` with ``charge_per_hour =
  sum_r p*_r * a_r`` from :func:`.outbid.assess` -- its bid when its
  share is ``b / p*`` (Themis SLO-policies §2: "users are charged for the
  cost of used resources, i.e., the VM bids, at each scheduling period";
  Merkat §2.3: "VMs are billed based on their bids"), less when the
  work-conserving cap (its flavor) binds, the reserve cost of its flavor
  when the pool is not contended. A server without an assessed charge
  pays ``sum_r price_r * held_r`` (:func:`period_charge`). Charges may
  drive the balance below zero;
* every change is a :class:`LedgerEntry` (``charge``, ``credit``,
  ``refill``) with an idempotency :class:`EntryKey`: a charge is keyed by
  ``(project, server, period start)``, a refill by ``(project, period
  start)``, a credit by ``(project, time granted)``. Posting an entry
  whose key is already in the ledger changes nothing and returns the
  entry recorded first, so replaying a period after a restart never
  charges twice;
* amounts are :class:`~decimal.Decimal`, rounded to :data:`QUANTUM`
  (half-even) per entry;
* :meth:`CreditManager.out_of_credit` names the servers to preempt when a
  project cannot pay for the next period, in the order of an
  out-of-credit policy (:class:`OutOfCreditPolicy`, one class per policy,
  entry points of the group :data:`POLICY_NAMESPACE`; ``[opie_market]
  out_of_credit_policy``).

Persistence: :class:`CreditManager` keeps no state itself; it reads and
writes through a :class:`LedgerStore`. :class:`InMemoryStore` is the pure
implementation; a database layer (oslo.db) implements the same five
methods, with ``post`` as one transaction: insert the entry (unique
constraint on the key -> :class:`DuplicateEntry`) and update the account
row ``WHERE version = expected`` (no row -> :class:`StaleAccount`). The
manager retries a stale post, so several workers may share one store.
"""

import abc
import dataclasses
import decimal
from decimal import Decimal

from opie_sched.market import outbid
from opie_sched.market import pricing
from opie_sched import plugins

#: Ledger amounts are rounded to this many currency units (half-even).
QUANTUM = Decimal('0.000001')
#: Seconds per hour: bids, refill rates and prices are per hour.
HOUR = 3600

KIND_CHARGE = 'charge'
KIND_CREDIT = 'credit'
KIND_REFILL = 'refill'

#: How many times a post that lost a race is recomputed.
RETRIES = 5

ZERO = Decimal(0)


class BudgetError(ValueError):
    """Bad input to the credit manager (the message says which)."""


class UnknownAccount(KeyError):
    """No account for the project."""


class DuplicateEntry(Exception):
    """The ledger already holds an entry with this key."""


class StaleAccount(Exception):
    """The account changed since it was read (optimistic locking)."""


def quantize(amount):
    """``amount`` rounded to :data:`QUANTUM` (half-even), a Decimal."""
    return pricing.as_decimal(amount).quantize(
        QUANTUM, rounding=decimal.ROUND_HALF_EVEN)


def _non_negative(value, what):
    value = pricing.as_decimal(value)
    if not value.is_finite() or value < 0:
        raise BudgetError('%s must be a finite number >= 0, got %s'
                          % (what, value))
    return value


def _period(period_seconds):
    if isinstance(period_seconds, bool) or period_seconds <= 0:
        raise BudgetError('period_seconds must be > 0, got %r'
                          % (period_seconds,))
    return period_seconds


def period_start_for(timestamp, period_seconds):
    """Start of the period holding ``timestamp``.

    Periods are aligned on the epoch so that a replay after a restart
    computes the same keys. Both in seconds (int or float); returns int
    when both are ints.
    """
    _period(period_seconds)
    return timestamp - timestamp % period_seconds


def period_charge(prices, held, period_seconds):
    """What holding ``held`` at ``prices`` for one period costs.

    ``sum_r price_r * held_r * period_seconds / 3600``.

    :param prices: mapping ``resource -> price`` (currency per unit-hour).
    :param held: mapping ``resource -> units`` (vCPU, MB).
    :param period_seconds: period length in seconds (> 0).
    :returns: Decimal >= 0 rounded to :data:`QUANTUM`, currency.
    """
    for r, n in held.items():
        _non_negative(n, 'held %s' % r)
        _non_negative(prices.get(r, 0), 'price of %s' % r)
    hours = Decimal(_period(period_seconds)) / HOUR
    return quantize(outbid.hourly_cost(prices, held) * hours)


def server_charge(server, prices, period_seconds):
    """What ``server`` (:class:`.outbid.Server`) pays for one period.

    Its ``charge_per_hour`` (:func:`.outbid.assess`) times the period in
    hours when it has one, else :func:`period_charge` of what it holds at
    ``prices`` (its pool's, currency per unit-hour).

    :returns: Decimal >= 0 rounded to :data:`QUANTUM`, currency.
    """
    if server.charge_per_hour is None:
        return period_charge(prices, server.held, period_seconds)
    hours = Decimal(_period(period_seconds)) / HOUR
    return quantize(_non_negative(server.charge_per_hour,
                                  'charge per hour') * hours)


def refill_amount(account, period_seconds):
    """The refill of one period: ``rate * hours``, capped.

    Never lifts the balance above ``account.cap``, never negative (a
    balance already above the cap, e.g. after a bank credit, gets 0).

    :returns: Decimal >= 0 rounded to :data:`QUANTUM`, currency.
    """
    amount = account.refill_rate * Decimal(_period(period_seconds)) / HOUR
    if account.cap is not None:
        amount = min(amount, account.cap - account.balance)
    return quantize(max(amount, ZERO))


@dataclasses.dataclass(frozen=True)
class Account:
    """A project's account.

    :ivar project: project id.
    :ivar balance: currency (may be negative after charges).
    :ivar refill_rate: currency per hour.
    :ivar cap: currency, the most a refill fills up to; None: no cap.
    :ivar version: incremented by every post (optimistic locking).
    """
    project: str
    balance: Decimal = ZERO
    refill_rate: Decimal = ZERO
    cap: Decimal = None
    version: int = 0


@dataclasses.dataclass(frozen=True)
class EntryKey:
    """Idempotency key of a ledger entry.

    ``server`` is the charged server (None for refills and credits);
    ``period_start`` the start of the charged or refilled period, or the
    time a credit was granted (seconds since the epoch).
    """
    kind: str
    project: str
    server: str
    period_start: float


@dataclasses.dataclass(frozen=True)
class LedgerEntry:
    """One change of an account.

    :ivar key: :class:`EntryKey`.
    :ivar amount: currency, > 0 for credits and refills, <= 0 for charges.
    :ivar balance: the account's balance right after this entry.
    :ivar period_seconds: length of the period (None for credits).
    :ivar note: free text (e.g. the prices charged).
    """
    key: EntryKey
    amount: Decimal
    balance: Decimal
    period_seconds: int = None
    note: str = ''


@dataclasses.dataclass(frozen=True)
class _Charged:
    held: dict
    charge_per_hour: Decimal


class LedgerStore(abc.ABC):
    """Where accounts and ledger entries live (see the module docstring).
    """

    @abc.abstractmethod
    def add_account(self, account):
        """Store a new :class:`Account`; :class:`BudgetError` if present.
        """

    @abc.abstractmethod
    def get_account(self, project):
        """The :class:`Account` of ``project``; :class:`UnknownAccount`.
        """

    @abc.abstractmethod
    def get_entry(self, key):
        """The :class:`LedgerEntry` with ``key``, or None."""

    @abc.abstractmethod
    def post(self, entry, expected_version):
        """Atomically append ``entry`` and set the account's balance.

        The account of ``entry.key.project`` gets ``balance =
        entry.balance`` and ``version = expected_version + 1``.

        :raises DuplicateEntry: the key is already in the ledger.
        :raises StaleAccount: the account's version is not
            ``expected_version``.
        """

    @abc.abstractmethod
    def entries(self, project=None):
        """The ledger (of one project, or all) in posting order."""


class InMemoryStore(LedgerStore):
    """A :class:`LedgerStore` in dicts (tests, what-if tools)."""

    def __init__(self):
        self._accounts = {}
        self._entries = {}

    def add_account(self, account):
        if account.project in self._accounts:
            raise BudgetError('account of %r already exists'
                              % account.project)
        self._accounts[account.project] = account

    def get_account(self, project):
        try:
            return self._accounts[project]
        except KeyError:
            raise UnknownAccount(project)

    def get_entry(self, key):
        return self._entries.get(key)

    def post(self, entry, expected_version):
        project = entry.key.project
        account = self.get_account(project)
        if entry.key in self._entries:
            raise DuplicateEntry(entry.key)
        if account.version != expected_version:
            raise StaleAccount(project)
        self._entries[entry.key] = entry
        self._accounts[project] = dataclasses.replace(
            account, balance=entry.balance, version=account.version + 1)

    def entries(self, project=None):
        return [e for e in self._entries.values()
                if project is None or e.key.project == project]


#: Entry-point group of the out-of-credit policies.
POLICY_NAMESPACE = 'opie_sched.market.out_of_credit'
#: What an out-of-credit policy is, in the loader's messages.
POLICY_KIND = 'out-of-credit policy'


class OutOfCreditPolicy(metaclass=abc.ABCMeta):
    """Base class of out-of-credit policies: which servers of a project
    that cannot pay the next period get notice first
    (:meth:`CreditManager.out_of_credit` drops them in this order until
    the rest fits the balance). An operator can add one from their own
    package::

        [entry_points]
        opie_sched.market.out_of_credit =
            my_policy = my_pkg.credit:MyPolicy
    """

    #: one line for the option's documentation.
    description = ''

    @abc.abstractmethod
    def order(self, servers, prices, period_seconds):
        """``servers`` in the order they are preempted.

        :param servers: list of :class:`.outbid.Server` of one project.
        :param prices: mapping ``pool -> {resource: price}`` (currency
            per unit-hour).
        :param period_seconds: period length in seconds.
        :returns: a list of the same servers.
        """


class LowestBidFirst(OutOfCreditPolicy):
    """The lowest bid first, then the oldest, then by uuid
    (:func:`.outbid.preemption_key`, the order of an out-of-bid notice).
    """

    description = 'the lowest bid first (then the oldest)'

    def order(self, servers, prices, period_seconds):
        return sorted(servers, key=outbid.preemption_key)


class MostExpensiveFirst(OutOfCreditPolicy):
    """The server whose next period costs most first
    (:func:`server_charge`), ties by :func:`.outbid.preemption_key`: the
    fewest servers are stopped to fit the balance.
    """

    description = ('the server whose next period costs most first (the '
                   'fewest servers given notice)')

    def order(self, servers, prices, period_seconds):
        def key(server):
            cost = server_charge(server, prices.get(server.pool, {}),
                                 period_seconds)
            return (-cost,) + outbid.preemption_key(server)
        return sorted(servers, key=key)


def policy_names():
    """Sorted names of the installed out-of-credit policies."""
    return plugins.names(POLICY_NAMESPACE)


def load_policy(name):
    """The out-of-credit policy ``name``, constructed.

    :raises BudgetError: unknown name or a policy failing to load (the
        loader's message; its :class:`~opie_sched.plugins.PluginError` is
        the ``__cause__``).
    """
    try:
        return plugins.load(POLICY_NAMESPACE, name, kind=POLICY_KIND)
    except plugins.PluginError as exc:
        raise BudgetError(str(exc)) from exc


class CreditManager:
    """Merkat's credit manager over a :class:`LedgerStore`.

    Every posting method returns the :class:`LedgerEntry` of its key: the
    new one, or the one recorded before (a replay changes nothing).
    """

    def __init__(self, store=None):
        self.store = InMemoryStore() if store is None else store

    def open_account(self, project, balance=0, refill_rate=0, cap=None):
        """Create the account of ``project``.

        :param balance: initial credit, currency.
        :param refill_rate: currency per hour (>= 0).
        :param cap: most a refill fills up to, currency (>= 0) or None.
        :returns: the :class:`Account`.
        """
        account = Account(
            project, pricing.as_decimal(balance),
            _non_negative(refill_rate, 'refill_rate'),
            None if cap is None else _non_negative(cap, 'cap'))
        self.store.add_account(account)
        return account

    def balance(self, project):
        """Current balance of ``project``, currency."""
        return self.store.get_account(project).balance

    def _post(self, key, amount_of, period_seconds=None, note=''):
        """Post the entry ``key`` once; ``amount_of(account)`` -> amount.
        """
        for _ in range(RETRIES):
            found = self.store.get_entry(key)
            if found is not None:
                return found
            account = self.store.get_account(key.project)
            amount = amount_of(account)
            entry = LedgerEntry(key, amount, account.balance + amount,
                                period_seconds, note)
            try:
                self.store.post(entry, account.version)
                return entry
            except (DuplicateEntry, StaleAccount):
                continue
        raise StaleAccount(key.project)

    def credit(self, project, amount, granted_at, note=''):
        """A bank credit (Merkat §2.2), not capped.

        :param amount: currency (> 0).
        :param granted_at: seconds since the epoch; with ``project`` the
            idempotency key.
        """
        amount = quantize(_non_negative(amount, 'credit amount'))
        if amount == 0:
            raise BudgetError('credit amount must be > 0')
        key = EntryKey(KIND_CREDIT, project, None, granted_at)
        return self._post(key, lambda account: amount, note=note)

    def refill(self, project, period_start, period_seconds):
        """The periodic transfer of Merkat §4.1.3 (see
        :func:`refill_amount`); keyed by ``(project, period_start)``.
        """
        _period(period_seconds)
        key = EntryKey(KIND_REFILL, project, None, period_start)
        return self._post(
            key, lambda account: refill_amount(account, period_seconds),
            period_seconds)

    def charge(self, project, server, period_start, period_seconds, prices,
               held, charge_per_hour=None):
        """Charge ``server`` for one period.

        Keyed by ``(project, server, period_start)``: charging the same
        period again returns the first charge, even with other prices.

        :param prices: mapping ``resource -> price`` of the server's pool
            (currency per unit-hour).
        :param held: mapping ``resource -> units`` the server holds.
        :param charge_per_hour: what its share costs per hour
            (:func:`.outbid.assess`), currency per hour; None:
            :func:`period_charge` of ``held`` at ``prices``.
        """
        if charge_per_hour is None:
            cost = period_charge(prices, held, period_seconds)
            note = ', '.join('%s %s at %s' % (r, held[r], prices.get(r, 0))
                             for r in pricing.order_resources(held))
        else:
            cost = server_charge(
                _Charged(held, charge_per_hour), prices, period_seconds)
            note = 'charge %s per hour at %s' % (
                pricing.pretty(charge_per_hour), ', '.join(
                    '%s %s' % (r, prices.get(r, 0))
                    for r in pricing.order_resources(held)))
        key = EntryKey(KIND_CHARGE, project, server, period_start)
        return self._post(key, lambda account: -cost, period_seconds, note)

    def settle_period(self, project, period_start, period_seconds, servers,
                      prices):
        """Refill, then charge every running server of ``project``.

        Safe to replay: each entry is posted once.

        :param servers: iterable of :class:`.outbid.Server` (others'
            servers are ignored).
        :param prices: mapping ``pool -> {resource: price}``.
        :returns: list of the period's :class:`LedgerEntry` (refill first,
            then charges by server uuid).
        """
        entries = [self.refill(project, period_start, period_seconds)]
        mine = sorted((s for s in servers if s.project == project),
                      key=lambda s: s.uuid)
        for server in mine:
            entries.append(self.charge(
                project, server.uuid, period_start, period_seconds,
                prices.get(server.pool, {}), server.held,
                server.charge_per_hour))
        return entries

    def out_of_credit(self, project, servers, prices, period_seconds,
                      policy='lowest_bid'):
        """Servers to preempt so that ``project`` can pay the next period.

        The next period's charge of the kept servers must not exceed the
        current balance (a negative balance keeps only servers that cost
        nothing). Servers are
        dropped in the policy's order until the rest fits; the next
        refill is not counted on.

        :param servers: iterable of :class:`.outbid.Server` (others'
            servers are ignored).
        :param prices: mapping ``pool -> {resource: price}``.
        :param policy: an :class:`OutOfCreditPolicy`, or the name of one
            (:func:`load_policy`).
        :returns: list of :class:`.outbid.Server`, in preemption order;
            empty when the project can pay.
        :raises BudgetError: ``policy`` names no installed policy.
        """
        if not isinstance(policy, OutOfCreditPolicy):
            policy = load_policy(policy)
        balance = self.balance(project)
        mine = [s for s in servers if s.project == project]
        costs = {s.uuid: server_charge(s, prices.get(s.pool, {}),
                                       period_seconds) for s in mine}
        due = sum(costs.values(), ZERO)
        victims = []
        for server in policy.order(mine, prices, period_seconds):
            if due <= max(balance, ZERO):
                break
            victims.append(server)
            due -= costs[server.uuid]
        return victims
