"""Proportional-share spot market for preemptible servers (nova-free core).

* :mod:`.pricing` -- prices, proportional shares, allocation errors and
  worst-fit decreasing placement (Merkat eq. 1 and §3.1, Themis §III.B).
* :mod:`.bids` -- parsing and validating bids (currency per hour).
* :mod:`.budget` -- the credit manager: accounts, refills, per-period
  charges in an idempotent ledger, out-of-credit detection (Merkat §2.2,
  §4.1.3).
* :mod:`.outbid` -- servers whose bid no longer covers the spot price.

The ``opie-market`` service around that core (Nova only through
openstacksdk): :mod:`.engine` (one period: prices, charges, notices,
preemptions; leader election), :mod:`.service` (wiring, the periodic
loop), :mod:`.db` (the store), :mod:`.api` (REST API), :mod:`.osc`
(``openstack spot ...``), :mod:`.opts` (``[opie_market]``). ``opie-sched
market demo`` runs the engine against the demo's embedded Nova.

All money and resource amounts are :class:`decimal.Decimal`: money in
currency, bids currency per hour, prices currency per unit-hour.
"""
