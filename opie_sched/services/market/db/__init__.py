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
"""Persistent state of the opie-market service (SQLAlchemy via oslo.db).

* :mod:`.models` -- the tables (accounts, ledger, bids, price history,
  period checkpoints and snapshots, preemption notices, reserve prices);
* :mod:`.api` -- :class:`.api.MarketStore`, the oslo.db enginefacade
  store; it implements :class:`opie_sched.market.budget.LedgerStore`;
* :mod:`.migration` -- alembic migrations (``opie-market db sync``).

sqlite is the embedded default (a file); MySQL/MariaDB and PostgreSQL are
used by connection string.
"""
