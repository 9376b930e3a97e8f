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
"""Proportional-share spot market for preemptible servers (nova-free core).

* :mod:`.pricing` -- work-conserving prices and proportional shares
  (Merkat eq. 1 with maximum allocations, §3.1; Themis §III.B; the price
  falls to the reserve when the demand fits), allocation errors and
  worst-fit decreasing placement; what a share means on a real
  hypervisor (``quota:cpu_shares``).
* :mod:`.bids` -- parsing and validating bids (currency per hour).
* :mod:`.budget` -- the credit manager: accounts, refills, per-period
  charges in an idempotent ledger, out-of-credit detection (Merkat §2.2,
  §4.1.3).
* :mod:`.outbid` -- the one market rule used by the engine, the API and
  the scheduler's weigher: shares, out-of-bid servers (share below the
  flavor under contention) and what each server pays (its share's cost).
* :mod:`.rebalance` -- tabu-search migrations that reduce the allocation
  error (Themis Fig. 2, Merkat §3.1); run by the repacker
  (:mod:`opie_sched.services.repacker.tabu`).
* :mod:`.slo` -- SLO-driven application controllers (Themis Fig. 3-4,
  Merkat Alg. 1-2) used by the autoscaler's policies.

The ``opie-market`` service around this core is
:mod:`opie_sched.services.market`; ``opie-sched market demo`` runs its
engine against the demo's embedded Nova.

All money and resource amounts are :class:`decimal.Decimal`: money in
currency, bids currency per hour, prices currency per unit-hour.
"""
