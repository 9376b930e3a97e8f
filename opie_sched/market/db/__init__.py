"""Persistent state of the opie-market service (SQLAlchemy via oslo.db).

* :mod:`.models` -- the tables (accounts, ledger, bids, price history,
  period checkpoints and snapshots, preemption notices, reserve prices);
* :mod:`.api` -- :class:`.api.MarketStore`, the oslo.db enginefacade
  store; it implements :class:`opie_sched.market.budget.LedgerStore`;
* :mod:`.migration` -- alembic migrations (``opie-market db sync``).

sqlite is the embedded default (a file); MySQL/MariaDB and PostgreSQL are
used by connection string.
"""
