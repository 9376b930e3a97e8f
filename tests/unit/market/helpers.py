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
"""Helpers shared by the market's unit tests: Decimal closeness, the
hypothesis strategies for bids and capacities, the test servers and
positions."""

from decimal import Decimal

from hypothesis import strategies as st

from opie_sched.market import outbid
from opie_sched.market import pricing


D = Decimal
CPU = pricing.VCPUS
RAM = pricing.MEMORY_MB


def close(test, expected, actual, places=20):
    """Decimal (or float) equality up to ``places`` decimal digits."""
    test.assertLess(abs(D(str(expected)) - D(str(actual))),
                    D(10) ** -places,
                    '%s != %s' % (expected, actual))


# -- strategies --------------------------------------------------------------

BID = st.integers(0, 1000).map(lambda n: D(n) / 10)

CAPACITY = st.integers(1, 500).map(D)


# -- budget ------------------------------------------------------------------

T0 = 1_800_000_000          # a period start, seconds since the epoch
HOUR = 3600


def server(uuid, bid, project='p1', created_at=None, cpu=2, ram=4096,
           pool=pricing.DEFAULT_POOL):
    return outbid.Server(uuid, D(bid), {CPU: cpu, RAM: ram}, project,
                         created_at, pool)


def position(bid, share, charge, uuid='s', project='p1', cpu=2):
    server = outbid.Server(uuid, D(bid), {CPU: cpu}, project=project)
    return outbid.Position(server, {CPU: D(bid)}, {CPU: share}, {},
                           D(charge))
