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
"""Charges of a period (Merkat §2.2, §4.1.3): accounts, refills and
what each running preemptible server pays.
"""

import dataclasses

from oslo_log import log as logging

from opie_sched.market import budget

LOG = logging.getLogger(__name__)


class Charger:
    """Posts a period's refills and charges (ledger entries with
    idempotency keys: a replay posts nothing twice).

    :param settings: :class:`.settings.Settings`.
    :param credit: :class:`opie_sched.market.budget.CreditManager`.
    """

    def __init__(self, settings, credit):
        self.settings = settings
        self.credit = credit

    def charged_servers(self, markets):
        """The servers of ``markets`` with their ``charge_per_hour``
        (pending demand left out: it holds nothing), as the configured
        charge rule (``[opie_market] charge_rule``,
        :mod:`opie_sched.market.charge_rules`) says.
        """
        rule = self.settings.charge
        out = []
        for market in markets.values():
            for p in market.positions.values():
                if p.server.pending:
                    continue
                out.append(dataclasses.replace(
                    p.server, charge_per_hour=rule.charge_per_hour(p)))
        return out

    def ensure_account(self, project):
        """Open ``project``'s account with the configured initial credit,
        refill rate and cap, unless it has one.
        """
        s = self.settings
        try:
            self.credit.open_account(project, s.initial_credit,
                                     s.refill_rate, s.credit_cap)
            LOG.info('opened the account of project %s with %s', project,
                     s.initial_credit)
        except budget.BudgetError:
            pass  # already there (maybe opened by another replica)

    def charge(self, ps, servers, prices):
        """Refill and charge every project with servers in the snapshot.

        :param ps: the period's start (epoch seconds).
        :param servers: :meth:`charged_servers` of the period.
        :param prices: ``{pool: {resource: price}}`` of the period.

        :returns: the period's ledger entries (new or replayed).
        """
        entries = []
        for project in sorted({srv.project for srv in servers}):
            self.ensure_account(project)
            entries += self.credit.settle_period(
                project, ps, self.settings.period_seconds, servers, prices)
        return entries
