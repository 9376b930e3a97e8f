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
"""opie-autoscaler moves an application between flavors, make-before-break.

The repacking autoscaler of thesis Paper V (§3) runs an application on the
cheapest set of servers covering its demand, and changes the set
make-before-break (§3.2): the servers a new set adds are ACTIVE before
the surplus is deleted, so the application's capacity never drops below
its demand during a transition.

The cloud runs opie-autoscaler with one application (``[opie]
autoscaler_*``): flavors with a capacity and a price each, its demand
read from a file. The scenario writes demands to that file, as a
monitoring system would, and watches the application's servers through
the compute API only (admin, the project's servers with the
application's tag; a deleted server's ``launched_at`` and
``terminated_at``):

* after each change the ACTIVE servers are a cheapest set for the demand
  (computed here from the capacities and prices, independently of the
  autoscaler's planner), with no other server of the application left;
* at every observation the ACTIVE capacity (servers being deleted do not
  count) is at least the demand already covered: ``min(previous,
  new demand)`` until the new set is reached, the new demand after that;
* the same holds on the servers' own timeline (``launched_at`` /
  ``terminated_at``, including servers that lived between two
  observations).
"""

import datetime
import itertools
import math
import os
import tempfile
import time

from oslo_utils import timeutils
from tempest import config
from tempest.lib import decorators

from opie_sched_tempest_plugin import base

CONF = config.CONF

#: Metadata key opie-autoscaler sets on the servers it boots.
OWNER_KEY = 'opie:autoscaler'
#: Seconds between two observations.
POLL = 1.0
#: Clock tolerance (seconds) between this test and Nova's timestamps,
#: which Nova stores in whole seconds.
SKEW = 2.0


def _epoch(stamp):
    """Seconds since the epoch of a Nova timestamp (UTC when it names no
    zone).
    """
    when = timeutils.parse_isotime(stamp)
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return when.timestamp()


def cheapest_sets(demand, capacities, prices):
    """Every cheapest ``{flavor: count}`` whose capacity covers ``demand``
    (thesis Paper V, §3: the optimal VM set), by enumeration.

    :param demand: number >= 0 (the capacities' unit).
    :param capacities: ``{flavor: capacity > 0}``.
    :param prices: ``{flavor: currency per hour > 0}``.
    :returns: ``(price, [sets])``; the empty set for demand 0.
    """
    names = sorted(capacities)
    ranges = [range(int(math.ceil(demand / capacities[n])) + 1)
              for n in names]
    best, found = None, []
    for counts in itertools.product(*ranges):
        if sum(c * capacities[n] for c, n in zip(counts, names)) < demand:
            continue
        price = round(sum(c * prices[n] for c, n in zip(counts, names)), 9)
        mix = {n: c for n, c in zip(names, counts) if c}
        if best is None or price < best:
            best, found = price, [mix]
        elif price == best:
            found.append(mix)
    return best, found


class AutoscalerFlavorMoveTest(base.OpieBaseTest):
    """Demands 2 -> 8 -> 3 vCPU (by default) move the application from
    small to large servers and back, never below the covered demand.
    """

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.opie.autoscaler:
            raise cls.skipException(
                '[opie] autoscaler = false: no opie-autoscaler runs '
                'against this cloud')

    @classmethod
    def resource_setup(cls):
        super().resource_setup()
        opts = CONF.opie
        missing = [name for name in (
            'autoscaler_application', 'autoscaler_tag',
            'autoscaler_project', 'autoscaler_demand_file')
            if not getattr(opts, name)]
        if missing or not opts.autoscaler_capacities:
            raise AssertionError(
                '[opie] autoscaler = true but %s not set' % ', '.join(
                    missing + ([] if opts.autoscaler_capacities
                               else ['autoscaler_capacities'])))
        try:
            cls.capacities = {k: float(v) for k, v in
                              opts.autoscaler_capacities.items()}
            cls.prices = {k: float(opts.autoscaler_prices[k])
                          for k in cls.capacities}
            cls.demands = [float(d) for d in opts.autoscaler_demands]
        except (KeyError, ValueError) as exc:
            raise AssertionError(
                '[opie] autoscaler_capacities, autoscaler_prices (one per '
                'flavor) and autoscaler_demands must be numbers: %s' % exc)
        if (min(list(cls.capacities.values()) + list(cls.prices.values()))
                <= 0 or min(cls.demands, default=-1) < 0):
            raise AssertionError('[opie] autoscaler_*: capacities and '
                                 'prices must be > 0, demands >= 0')
        cls.project_id = cls.admin.identity.find_project(
            opts.autoscaler_project, ignore_missing=False).id

    # -- observation -------------------------------------------------------

    def _list(self, since=None):
        """The application's servers (admin view, embedded flavors):
        tagged ones now, or -- with ``since`` -- every server of the
        project named like the application's, deleted ones included.
        """
        query = 'all_tenants=1&project_id=%s' % self.project_id
        if since is None:
            query += '&tags=%s' % CONF.opie.autoscaler_tag
        else:
            query += '&name=%s&changes-since=%s' % (
                '%5E' + CONF.opie.autoscaler_application + '-',
                time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(since - 5)))
        _, body = self.call(self.admin, 'GET', '/servers/detail?' + query,
                            '2.47')
        return body['servers']

    def _observe(self):
        """``(capacity, {flavor: ACTIVE count}, others)``: ACTIVE capacity
        (servers being deleted left out) and the other servers of the
        application as ``'id status/task flavor'``.
        """
        capacity, mix, others = 0.0, {}, []
        for server in self._list():
            flavor = server['flavor']['original_name']
            task = server.get('OS-EXT-STS:task_state')
            self.assertEqual(
                CONF.opie.autoscaler_application,
                server['metadata'].get(OWNER_KEY),
                'server %s carries the application\'s tag but was not '
                'booted by opie-autoscaler' % server['id'])
            if (server['status'] == 'ACTIVE' and task is None
                    and flavor in self.capacities):
                capacity += self.capacities[flavor]
                mix[flavor] = mix.get(flavor, 0) + 1
            else:
                others.append('%s %s/%s %s' % (server['id'],
                                               server['status'], task,
                                               flavor))
        return capacity, mix, others

    def _write_demand(self, value):
        """Replace the demand file atomically (a reader never sees a
        half-written number).
        """
        path = CONF.opie.autoscaler_demand_file
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path),
                                   prefix='.demand-')
        with os.fdopen(fd, 'w') as f:
            f.write('%g\n' % value)
        os.replace(tmp, path)

    def _step(self, previous, demand, history):
        """Write ``demand`` and wait for a cheapest set, checking the
        capacity at every observation; returns ``(written, done)`` times
        (seconds since the epoch).
        """
        _, expected = cheapest_sets(demand, self.capacities, self.prices)
        written = time.time()
        self._write_demand(demand)
        floor = min(previous, demand)
        deadline = time.monotonic() + CONF.opie.autoscaler_step_timeout
        while True:
            capacity, mix, others = self._observe()
            history.append('%.0fs demand %g: capacity %g %s %s' % (
                time.time() - written, demand, capacity, mix, others))
            self.assertGreaterEqual(
                capacity, floor,
                'the application\'s ACTIVE capacity dropped below the '
                'demand it covered (%g) while moving from demand %g to %g '
                '(not make-before-break); observations:\n%s' % (
                    floor, previous, demand, '\n'.join(history)))
            if mix in expected and not others:
                return written, time.time()
            if time.monotonic() > deadline:
                self.fail('demand %g: the application did not reach a '
                          'cheapest set %s in %d s; observations:\n%s' % (
                              demand, expected,
                              CONF.opie.autoscaler_step_timeout,
                              '\n'.join(history[-20:])))
            time.sleep(POLL)

    def _drain(self):
        """Demand 0 and wait until the application runs no server."""
        self._write_demand(0)
        deadline = time.monotonic() + CONF.opie.autoscaler_step_timeout
        while self._list():
            if time.monotonic() > deadline:
                raise AssertionError(
                    'the application still runs %s %d s after its demand '
                    'went to 0' % ([(s['id'], s['status']) for s in
                                    self._list()],
                                   CONF.opie.autoscaler_step_timeout))
            time.sleep(POLL)

    # -- timeline ----------------------------------------------------------

    def _check_timeline(self, since, steps):
        """Capacity from the servers' ``launched_at`` / ``terminated_at``
        (deleted servers included) never below the covered demand.

        :param steps: ``[(written, done, previous, demand)]``.
        """
        def floor_at(t):
            floor = 0.0
            for written, done, previous, demand in steps:
                if t >= written:
                    floor = min(previous, demand) if t < done else demand
            return floor

        events = []
        for server in self._list(since):
            cap = self.capacities.get(server['flavor']['original_name'])
            launched = server.get('OS-SRV-USG:launched_at')
            if cap is None or not launched:
                continue
            events.append((_epoch(launched), 0, cap, server['id']))
            ended = server.get('OS-SRV-USG:terminated_at')
            if ended:
                events.append((_epoch(ended), 1, -cap, server['id']))
        # Nova's whole seconds: a launch and a termination in the same
        # second count in that order.
        events.sort()
        self.assertTrue(events, 'no launched server of the application '
                        'since the scenario began')
        capacity, lines = 0.0, []
        breaks = sorted(t for s in steps for t in s[:2])
        for stamp, _order, delta, server_id in events:
            capacity += delta
            lines.append('%s %+g %s -> %g' % (
                time.strftime('%H:%M:%S', time.gmtime(stamp)), delta,
                server_id, capacity))
            if delta > 0:
                continue
            near = [stamp - SKEW, stamp + SKEW] + [
                t for t in breaks if stamp - SKEW <= t <= stamp + SKEW]
            floor = min(floor_at(t) for t in near)
            self.assertGreaterEqual(
                capacity, floor, 'on the servers\' timeline the capacity '
                'fell to %g below the covered demand %g when %s was '
                'terminated:\n%s' % (capacity, floor, server_id,
                                     '\n'.join(lines)))

    # -- the scenario ------------------------------------------------------

    @decorators.idempotent_id('0b9c1e27-5a4d-4f63-9d0e-7c2a8b5f4e31')
    def test_flavor_moves_make_before_break(self):
        plans = [cheapest_sets(d, self.capacities, self.prices)[1]
                 for d in self.demands]
        flavor_sets = [{frozenset(m) for m in p} for p in plans]
        self.assertTrue(
            any(not (a & b) for a, b in zip(flavor_sets, flavor_sets[1:])),
            '[opie] autoscaler_demands %s: no two consecutive demands '
            'have cheapest sets of different flavors (%s); the scenario '
            'would not move the application between flavors' % (
                self.demands, plans))
        self.addCleanup(self._drain)
        self._drain()
        since = time.time()
        steps, history, previous = [], [], 0.0
        for demand in self.demands + [0.0]:
            written, done = self._step(previous, demand, history)
            steps.append((written, done, previous, demand))
            previous = demand
        self._check_timeline(since, steps)
