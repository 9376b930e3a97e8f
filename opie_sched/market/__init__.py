"""Proportional-share spot market for preemptible servers (nova-free core).

* :mod:`.pricing` -- prices, proportional shares, allocation errors and
  worst-fit decreasing placement (Merkat eq. 1 and §3.1, Themis §III.B).
* :mod:`.bids` -- parsing and validating bids (currency per hour).
* :mod:`.budget` -- the credit manager: accounts, refills, per-period
  charges in an idempotent ledger, out-of-credit detection (Merkat §2.2,
  §4.1.3).
* :mod:`.outbid` -- servers whose bid no longer covers the spot price.

All money and resource amounts are :class:`decimal.Decimal`.
"""
