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
"""What a spot user plans with (market microversions 1.2 and 1.3), on a
running cloud: the placement score against what boots then do, the
owner's event history and the flavor's interruption history after a
market interruption, and an owner's interruption drill (notice, then the
flavor's behaviour, no charge, no interruption counted).

Run serially: the tests fill the cloud's preemptible room.
"""

import time

from oslo_utils import timeutils
from tempest import config
from tempest.lib import decorators

from opie_sched_tempest_plugin.tests.scenario import market_base
from opie_sched_tempest_plugin.tests.scenario import test_market_real

CONF = config.CONF

#: Statuses under which a boot lands now (``out_of_bid``: it lands, then
#: gets notice at the market's next period).
LANDS = ('fits_now', 'out_of_bid')


class PlacementScoreTest(market_base.MarketScenarioTest):
    """``GET /v1/placement-score`` says how many preemptible servers fit;
    the cloud then takes exactly that many, and refuses one more.
    """

    def score(self, flavor, count):
        status, body = self.market.placement_score(flavor.id, count)
        self.assertEqual(200, status, body)
        return body['placement_score']

    @decorators.idempotent_id('b3f0c2d4-6e1a-4c7b-9d28-5a1e3f7c9b10')
    def test_score_matches_what_boots_do(self):
        flavor = self.preemptible
        room = self.preemptible_room(flavor.size)
        if room == 0:
            raise self.skipException('no preemptible room for %s'
                                     % flavor.name)
        doc = self.score(flavor, room + 1)
        self.assertTrue(doc['preemptible'], doc)
        # the score's count of servers that fit now is the cloud's own
        self.assertEqual(room, sum(z['fit_now'] for z in doc['zones']),
                         doc)
        for zone in doc['zones']:
            self.assertNotIn(zone['status'], LANDS, zone)
        one = self.score(flavor, 1)
        self.assertTrue(any(z['status'] in LANDS for z in one['zones']),
                        one)
        ids, _placed = self.fill_with_preemptibles(self.primary, flavor)
        self.assertEqual(room, len(ids))
        full = self.score(flavor, 1)
        self.assertEqual([0] * len(full['zones']),
                         [z['fit_now'] for z in full['zones']], full)
        self.assertFalse(any(z['status'] in LANDS for z in full['zones']),
                         full)
        # and a boot now is refused, as the score said
        (extra,) = self.boot(self.primary, flavor, wait=False)
        deadline = time.monotonic() + CONF.opie.build_timeout
        while True:
            server = self.server_map(self.primary).get(extra)
            if server is not None and server.status in ('ERROR', 'ACTIVE'):
                break
            self.assertLess(time.monotonic(), deadline,
                            'server %s neither ACTIVE nor ERROR' % extra)
            time.sleep(1)
        self.assertEqual('ERROR', server.status, server.fault)
        self.assertIn('No valid host', str(server.fault))


class SpotEventsTest(test_market_real.MarketRealDemandTest):
    """The market's own interruption (the refused-demand scenario of
    :class:`.test_market_real.MarketRealDemandTest`, which runs on a
    default deployment) as its owner and others read it afterwards: the
    victim's whole story in ``GET /v1/events`` (found by its UUID once
    deleted), nothing of it for another project, and the flavor's
    interruption history equal to the scenario's own count.
    """

    # run the market scenario once, from test_owner_reads_the_story only
    test_refused_demand_prices_and_outbids_lowest_per_unit = None

    @decorators.idempotent_id('c41d2e6f-8a3b-4f70-9e15-2b6d7a8c3f21')
    def test_owner_reads_the_story(self):
        started = time.time()
        test_market_real.MarketRealDemandTest.\
            test_refused_demand_prices_and_outbids_lowest_per_unit(self)
        status, body = self.market.events()
        self.assertEqual(200, status, body)
        mine = [e for e in body['events']
                if timeutils.parse_isotime(
                    e['at']).timestamp() >= started - 1]
        victims = {e['server_id'] for e in mine
                   if e['kind'] == 'interruption'}
        self.assertEqual(1, len(victims), mine)
        (victim,) = victims
        status, body = self.market.events(server_id=victim)
        story = [(e['kind'], e['cause']) for e in body['events']]
        self.assertEqual([('notice', 'market'), ('interruption', 'market')],
                         story, body)
        self.assertIn(body['events'][1]['action'],
                      ('delete', 'stop', 'shelve'))
        # another project sees nothing of it
        status, body = self.market_alt.events(server_id=victim)
        self.assertEqual((200, []), (status, body['events']))
        status, body = self.market_alt.events(
            project_id=self.primary_project)
        self.assertEqual(403, status, body)
        # the flavor's history: the scenario's one interruption; the curve
        # drops once, to 1 - 1/k, k the flavor's servers still at risk
        # then (at most the servers counted)
        flavor = self.market.events(server_id=victim)[1]['events'][1][
            'flavor']
        self.assertIsNotNone(flavor)
        status, body = self.market.interruption_history(
            flavor, since=str(int(started) - 1), period_seconds=3600)
        self.assertEqual(200, status, body)
        doc = body['interruption_history']
        n = doc['survival']['servers']
        self.assertGreaterEqual(n, 1, doc)
        self.assertEqual(1, doc['survival']['interruptions'], doc)
        self.assertEqual(1, sum(r['interruptions'] for r in doc['rates']))
        values = sorted({float(p['survival'])
                         for p in doc['survival']['points']} - {1.0})
        self.assertEqual(1, len(values), doc)
        k = round(1 / (1 - values[0]))
        self.assertAlmostEqual(1 - 1 / k, values[0], 9)
        self.assertLessEqual(k, n)


#: Flavor extra spec of the interruption behaviour, and the key of the
#: at-risk mark a drill writes.
BEHAVIOR_SPEC = 'opie:interruption_behavior'
AT_RISK_KEY = 'opie:rebalance_recommendation'


class InterruptionDrillTest(market_base.MarketScenarioTest):
    """``openstack spot interruption simulate``: the owner's preemptible
    server (a flavor whose behaviour is ``stop``) gets the at-risk mark
    and the notice in its metadata, is stopped at the deadline by the
    market, is recorded as a drill in its owner's events, is not charged
    for any period after it, and counts as no interruption in its
    flavor's history. Another project cannot drill it.
    """

    NOTICE = 10

    @decorators.idempotent_id('5e8f1a2b-3c4d-4e6f-9a7b-8c1d2e3f4a50')
    def test_drill_notice_then_behaviour_no_charge(self):
        notice = min(self.NOTICE, CONF.opie.market_notice_period)
        size = self.preemptible.size
        flavor = self.preemptible_flavor(size['VCPU'], size['MEMORY_MB'],
                                         'drill')
        self.call(self.admin, 'POST', '/flavors/%s/os-extra_specs'
                  % flavor.id, json={'extra_specs': {BEHAVIOR_SPEC: 'stop'}})
        if self.preemptible_room(flavor.size) == 0:
            raise self.skipException('no preemptible room for %s'
                                     % flavor.name)
        booted = time.time()
        (server,) = self.boot(self.primary, flavor)
        # a settled period sees it running: its life is on the record
        self.settled_period(time.time() + 1)
        # another project: as if the server did not exist
        status, body = self.market_alt.interruption_drill(server)
        self.assertEqual(404, status, body)
        status, body = self.market.interruption_drill(server, notice)
        self.assertEqual(202, status, body)
        drill = body['interruption_drill']
        self.assertEqual(('drill', 'noticed', 'stop'),
                         (drill['kind'], drill['state'], drill['action']))
        deadline = timeutils.parse_isotime(drill['deadline']).timestamp()
        # what the guest reads, written before the answer
        _, body = self.call(self.primary, 'GET',
                            '/servers/%s/metadata' % server)
        meta = body['metadata']
        self.assertEqual(drill['deadline'], meta.get(
            market_base.DEADLINE_KEY), meta)
        self.assertIn('interruption drill', meta.get(
            market_base.NOTICE_KEY, ''))
        self.assertIn(AT_RISK_KEY, meta)
        # a second drill while this one is pending: refused
        self.assertEqual(409, self.market.interruption_drill(server)[0])
        # running until the deadline, stopped soon after
        while True:
            status = self.server_map(self.primary)[server].status
            now = time.time()
            if status == 'SHUTOFF':
                self.assertGreaterEqual(now, deadline - 1,
                                        'stopped before its deadline')
                break
            self.assertEqual('ACTIVE', status)
            if now > deadline + CONF.opie.market_max_wait:
                self.fail('drilled server still running %.0f s after its '
                          'deadline' % (now - deadline))
            time.sleep(1)
        status, body = self.market.events(server_id=server)
        self.assertEqual(200, status, body)
        story = [(e['kind'], e['cause'], e['action'])
                 for e in body['events']]
        self.assertEqual([('at_risk', 'drill', None),
                          ('notice', 'drill', None),
                          ('drill', 'drill', 'stop')], story, body)
        interrupted = timeutils.parse_isotime(
            body['events'][-1]['at']).timestamp()
        # never charged: once a period starting after the interruption
        # is settled, no charge of the server is for a period after it
        self.settled_period(interrupted + 1)
        status, body = self.market.ledger()
        self.assertEqual(200, status, body)
        late = [e for e in body['ledger']
                if e['server_id'] == server and e['kind'] == 'charge'
                and timeutils.parse_isotime(
                    e['period_start']).timestamp() > interrupted]
        self.assertEqual([], late)
        # and no interruption in the flavor's history
        status, body = self.market.interruption_history(
            flavor.name, since=str(int(booted) - 1), period_seconds=3600)
        self.assertEqual(200, status, body)
        doc = body['interruption_history']
        self.assertGreaterEqual(doc['survival']['servers'], 1, doc)
        self.assertEqual(0, doc['survival']['interruptions'], doc)
        self.assertEqual(0, sum(r['interruptions'] for r in doc['rates']))
