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
"""Headroom rules (:mod:`opie_sched.preemption.headroom`): the option's
syntax, the pool's deficit and the victims against the brute-force oracle,
what counts as released early.
"""

import datetime
import itertools
import os
import random

import fixtures
from oslo_config import cfg
import testtools

from opie_sched import conf as opie_conf
from opie_sched.conf import validation
from opie_sched.preemption import costs
from opie_sched.preemption import headroom
from opie_sched.preemption import model
from opie_sched.preemption import victims

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
SIZES = [(1, 2000, 20), (2, 4000, 40), (4, 8000, 80)]


def inst(uuid, runtime, res, preemptible=True, leaving=False):
    return model.InstanceInfo(
        uuid=uuid, resources=model.Resources(*res), preemptible=preemptible,
        launched_at=NOW - datetime.timedelta(seconds=runtime),
        leaving=leaving)


def host(name, instances, capacity=(8, 16000, 200)):
    used = model.Resources.total(i.resources for i in instances)
    return model.HostView(name=name, capacity=model.Resources(*capacity),
                          used=used, instances=instances)


class ParseTest(testtools.TestCase):

    def test_syntax(self):
        self.assertFalse(headroom.parse('0').enabled)
        self.assertFalse(headroom.parse('').enabled)
        self.assertEqual(0.1, headroom.parse('10%').fraction)
        self.assertEqual(0.25, headroom.parse('0.25').fraction)
        self.assertEqual(model.Resources(4, 8192, 0),
                         headroom.parse('8192 MB, 4 vcpu').amount)
        self.assertEqual(model.Resources(0, 0, 100),
                         headroom.parse('100 GB').amount)
        for bad in ('1', '150%', '-2', 'nan', '4 cores', '4 vcpu, 1 vcpu',
                    'lots'):
            self.assertRaises(ValueError, headroom.parse, bad)

    def test_target(self):
        cap = model.Resources(16, 32000, 400)
        self.assertEqual(model.Resources(1.6, 3200, 40),
                         headroom.parse('10%').target(cap))
        self.assertEqual(model.Resources(4, 0, 0),
                         headroom.parse('4 vcpu').target(cap))

    def test_option_refused_at_start(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(tmp, 'a.conf')
        with open(path, 'w') as f:
            f.write('[opie_preemption]\nheadroom = 4 cores\n')
        conf = cfg.ConfigOpts()
        opie_conf.register_opts(conf)
        conf(['--config-file', path])
        found = validation.problems(conf)
        self.assertEqual(1, len(found), found)
        self.assertIn('[opie_preemption] headroom', found[0])
        self.assertIn("unknown unit 'cores'", found[0])


class PlanPoolTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.policy = costs.CostPolicy([(costs.BillingPeriodCost(
            period=3600), 1.0)])

    def test_nothing_when_headroom_is_kept(self):
        h = host('a', [inst('p1', 10, SIZES[1])])
        plan = headroom.plan_pool('pool', [h], headroom.parse('6 vcpu'),
                                  self.policy, NOW)
        self.assertFalse(plan.needs_preemption)
        self.assertEqual((), plan.victims)

    def test_leaving_counts_as_free_and_is_no_candidate(self):
        h = host('a', [inst('p1', 10, SIZES[2], leaving=True),
                       inst('p2', 20, SIZES[2])])
        plan = headroom.plan_pool('pool', [h], headroom.parse('4 vcpu'),
                                  self.policy, NOW)
        self.assertFalse(plan.needs_preemption)

    def test_infeasible_takes_nothing(self):
        h = host('a', [inst('n', 10, SIZES[2], preemptible=False),
                       inst('p', 10, SIZES[2])])
        plan = headroom.plan_pool('pool', [h], headroom.parse('6 vcpu'),
                                  self.policy, NOW)
        self.assertTrue(plan.needs_preemption)
        self.assertFalse(plan.feasible)
        self.assertEqual((), plan.victims)

    def test_matches_the_brute_force_oracle(self):
        """Random pools of 2-3 hosts: the plan's cost is the brute-force
        minimum over the pool's candidates, and it covers the deficit.
        """
        rng = random.Random(31)
        checked = 0
        for _ in range(400):
            views = []
            n = 0
            for h in range(rng.randint(2, 3)):
                insts, used = [], [0, 0, 0]
                for _ in range(rng.randint(0, 4)):
                    size = rng.choice(SIZES)
                    if used[0] + size[0] > 8:
                        break
                    used = [u + s for u, s in zip(used, size)]
                    insts.append(inst('u%02d' % n, rng.randint(0, 7200),
                                      size,
                                      preemptible=rng.random() < 0.8))
                    n += 1
                views.append(host('h%d' % h, insts))
            room = headroom.parse(rng.choice(
                ['4 vcpu', '6 vcpu, 12000 MB', '25%', '0.4', '100 GB']))
            plan = headroom.plan_pool('pool', views, room, self.policy, NOW)
            # the deficit, counted here: free = sum of each host's
            # capacity - used, leaving instances not used
            cap = [sum(v.capacity[d] for v in views) for d in range(3)]
            free = [sum(max(v.capacity[d] - sum(
                i.resources[d] for i in v.instances if not i.leaving), 0)
                for v in views) for d in range(3)]
            target = (room.amount if room.amount is not None
                      else [room.fraction * c for c in cap])
            deficit = model.Resources(*(max(t - f, 0)
                                        for t, f in zip(target, free)))
            self.assertEqual(deficit, plan.deficit)
            cands = [(i, self.policy.instance_cost(i, v, NOW))
                     for v in views for i in v.preemptible_instances]
            want = victims.brute_force_victims(cands, deficit,
                                               method='python')
            if deficit.is_zero():
                self.assertFalse(plan.needs_preemption)
                continue
            if want is None:
                self.assertFalse(plan.feasible)
                continue
            self.assertTrue(plan.feasible)
            checked += 1
            self.assertAlmostEqual(want.total_cost, plan.total_cost,
                                   places=6)
            freed = model.Resources.total(i.resources
                                          for _, i, _ in plan.victims)
            self.assertTrue(plan.deficit.fits_in(freed))
            self.assertEqual(want.uuids, tuple(sorted(
                i.uuid for _, i, _ in plan.victims)))
        # the cases decided are not a handful
        self.assertGreater(checked, 60)


class PlanSlotsTest(testtools.TestCase):
    """A headroom of slots (``N x <amounts>``): free rooms inside one host
    each, against an enumeration of every subset of the pool's
    candidates.
    """

    def setUp(self):
        super().setUp()
        self.policy = costs.CostPolicy([(costs.BillingPeriodCost(
            period=3600), 1.0)])

    def test_syntax(self):
        room = headroom.parse('2 x 8 vcpu, 16000 MB')
        self.assertEqual((2, model.Resources(8, 16000, 0)),
                         (room.slots, room.amount))
        self.assertFalse(headroom.parse('0 x 4 vcpu').enabled)
        self.assertRaises(ValueError, headroom.parse, '2 x 0.5')
        self.assertEqual(2, headroom.host_slots((9, 40000, 0), (4, 0, 0)))

    def test_crumbs_are_no_slot(self):
        # 2 vCPU free on each of two hosts: 4 vCPU summed, no 4 vCPU slot
        views = [host('a', [inst('a1', 100, SIZES[1]),
                            inst('a2', 200, SIZES[1]),
                            inst('a3', 300, SIZES[1])]),
                 host('b', [inst('b1', 50, SIZES[1]),
                            inst('b2', 60, SIZES[1]),
                            inst('b3', 70, SIZES[1])])]
        self.assertFalse(headroom.plan_pool(
            'p', views, headroom.parse('4 vcpu'), self.policy,
            NOW).needs_preemption)
        plan = headroom.plan_pool('p', views, headroom.parse('1 x 4 vcpu'),
                                  self.policy, NOW)
        self.assertEqual(['b1'], [i.uuid for _, i, _ in plan.victims])

    def test_matches_enumeration(self):
        rng = random.Random(7)
        checked = 0
        for _ in range(300):
            views = []
            n = 0
            for h in range(rng.randint(2, 3)):
                insts, used = [], 0
                for _ in range(rng.randint(0, 4)):
                    size = rng.choice(SIZES)
                    if used + size[0] > 8:
                        break
                    used += size[0]
                    insts.append(inst('u%02d' % n, rng.randint(1, 3599),
                                      size, preemptible=rng.random() < 0.8))
                    n += 1
                views.append(host('h%d' % h, insts))
            room = headroom.parse(rng.choice(
                ['1 x 4 vcpu', '2 x 4 vcpu', '1 x 8 vcpu, 16000 MB',
                 '3 x 2 vcpu', '2 x 1 vcpu, 4000 MB']))
            plan = headroom.plan_pool('p', views, room, self.policy, NOW)
            cands = [(v.name, i, self.policy.instance_cost(i, v, NOW))
                     for v in views for i in v.preemptible_instances]

            def slots(removed):
                return sum(headroom.host_slots(
                    v.projected_free() + model.Resources.total(
                        i.resources for h, i, _ in removed if h == v.name),
                    room.amount) for v in views)

            best = None
            for r in range(len(cands) + 1):
                for combo in itertools.combinations(cands, r):
                    if slots(combo) >= room.slots:
                        c = sum(x[2] for x in combo)
                        if best is None or c < best:
                            best = c
            if best == 0:
                self.assertFalse(plan.needs_preemption)
                continue
            if best is None:
                self.assertFalse(plan.feasible)
                continue
            checked += 1
            self.assertTrue(plan.feasible)
            self.assertAlmostEqual(best, plan.total_cost, places=6)
            self.assertGreaterEqual(slots(plan.victims), room.slots)
        self.assertGreater(checked, 60)


class KeepsHeadroomTest(testtools.TestCase):
    """The scheduler filter's rule (:func:`headroom.keeps_headroom` over a
    :func:`headroom.pool_room` summed once): a preemptible placement keeps
    the pool's headroom exactly when the Keeper's plan of the pool with
    that server placed needs nothing.
    """

    def setUp(self):
        super().setUp()
        self.policy = costs.CostPolicy([(costs.BillingPeriodCost(
            period=3600), 1.0)])

    @staticmethod
    def judge(views, room, i, request):
        frees = [v.capacity - v.used for v in views]
        pool = headroom.pool_room(room, frees, [v.capacity for v in views])
        return headroom.keeps_headroom(pool, frees[i],
                                       model.Resources(*request))

    def test_amounts(self):
        # 8 vCPU hosts; a: 6 used, b: 4 used: 6 vCPU free in the pool
        views = [host('a', [inst('a1', 1, (6, 0, 0))]),
                 host('b', [inst('b1', 1, (4, 0, 0))])]
        room = headroom.parse('4 vcpu')
        self.assertTrue(self.judge(views, room, 0, (2, 0, 0)))
        self.assertTrue(self.judge(views, room, 1, (2, 0, 0)))
        self.assertFalse(self.judge(views, room, 1, (3, 0, 0)))
        # a dimension the headroom does not name is not kept
        self.assertTrue(self.judge(views, room, 1, (1, 15000, 0)))

    def test_fraction_of_the_capacity(self):
        views = [host('a', [inst('a1', 1, (6, 0, 0))]),
                 host('b', [inst('b1', 1, (4, 0, 0))])]
        # 25 % of 16 vCPU, 32000 MB, 400 GB: 4 vCPU, 8000 MB, 100 GB
        room = headroom.parse('25%')
        self.assertTrue(self.judge(views, room, 1, (2, 4000, 40)))
        self.assertFalse(self.judge(views, room, 1, (3, 4000, 40)))
        # RAM: 4000 + 6000 MB free of a target of 8000 MB
        ram = [host('a', [inst('a1', 1, (0, 12000, 0))]),
               host('b', [inst('b1', 1, (0, 10000, 0))])]
        self.assertTrue(self.judge(ram, room, 1, (1, 2000, 40)))
        self.assertFalse(self.judge(ram, room, 1, (1, 2001, 40)))

    def test_slots(self):
        # a: 4 vCPU free (one 4-vCPU slot), b: 4 vCPU free (one slot)
        views = [host('a', [inst('a1', 1, (4, 0, 0))]),
                 host('b', [inst('b1', 1, (4, 0, 0))])]
        room = headroom.parse('1 x 4 vcpu')
        # either host may take 1 vCPU: the other keeps its slot
        self.assertTrue(self.judge(views, room, 0, (1, 0, 0)))
        self.assertTrue(self.judge(views, room, 1, (4, 0, 0)))
        self.assertFalse(self.judge(
            views, headroom.parse('2 x 4 vcpu'), 0, (1, 0, 0)))
        # summed, the same 8 free vCPU would refuse 5: crumbs are no slot
        crumbs = [host('a', [inst('a1', 1, (6, 0, 0))]),
                  host('b', [inst('b1', 1, (6, 0, 0))])]
        self.assertFalse(self.judge(crumbs, room, 0, (1, 0, 0)))
        self.assertTrue(self.judge(crumbs, headroom.parse('4 vcpu'), 0,
                                   (0, 0, 0)))

    def test_pool_below_its_headroom_keeps_nothing(self):
        views = [host('a', [inst('a1', 1, (7, 0, 0))])]
        self.assertFalse(self.judge(views, headroom.parse('2 vcpu'), 0,
                                    (1, 0, 0)))

    def test_agrees_with_the_keepers_plan(self):
        """Random pools, a random request on a random host: kept exactly
        when ``plan_pool`` of the pool with the request placed there
        (a new preemptible server) finds no deficit; overcommitted hosts
        (negative free room) included.
        """
        rng = random.Random(3131)
        kept = refused = 0
        for _ in range(2000):
            views = []
            for h in range(rng.randint(1, 4)):
                used = model.Resources(rng.randint(0, 10),
                                       rng.randint(0, 18000),
                                       rng.randint(0, 220))
                views.append(model.HostView(
                    name='h%d' % h, capacity=model.Resources(8, 16000, 200),
                    used=used, instances=[]))
            room = headroom.parse(rng.choice(
                ['4 vcpu', '6 vcpu, 12000 MB', '25%', '0.1', '100 GB',
                 '1 x 4 vcpu', '2 x 2 vcpu, 4000 MB', '3 x 1 vcpu']))
            i = rng.randrange(len(views))
            request = rng.choice(SIZES)
            got = self.judge(views, room, i, request)
            placed = list(views)
            placed[i] = model.HostView(
                name=views[i].name, capacity=views[i].capacity,
                used=views[i].used + model.Resources(*request),
                instances=[inst('new', 0, request)])
            plan = headroom.plan_pool('p', placed, room, self.policy, NOW)
            self.assertEqual(not plan.needs_preemption, got,
                             (room.text, i, request, views))
            kept += got
            refused += not got
        # both answers are well represented
        self.assertGreater(kept, 300)
        self.assertGreater(refused, 300)

    def test_aggregate_headroom(self):
        default = headroom.parse('4 vcpu')
        self.assertEqual((default, None),
                         headroom.aggregate_headroom(None, default))
        room, problem = headroom.aggregate_headroom(
            {headroom.AGGREGATE_KEY: '1 x 8 vcpu'}, default)
        self.assertEqual((1, None), (room.slots, problem))
        room, problem = headroom.aggregate_headroom(
            {headroom.AGGREGATE_KEY: 'lots'}, default)
        self.assertIs(default, room)
        self.assertIn('lots', problem)
        self.assertFalse(headroom.aggregate_headroom(
            {headroom.AGGREGATE_KEY: '0'}, default)[0].enabled)


class ReleasedEarlyTest(testtools.TestCase):

    def test_states(self):
        r = headroom.released_early
        self.assertFalse(r('active', None, 1))
        self.assertTrue(r('active', None, 4))      # guest shut down
        self.assertTrue(r('active', None, 6))      # crashed
        self.assertTrue(r('active', 'powering-off', 1))
        self.assertTrue(r('stopped', None, 4))
        self.assertTrue(r('active', 'shelving', 1))
        self.assertTrue(r('shelved_offloaded', None, 0))
        self.assertTrue(r('active', 'deleting', 1))
        self.assertTrue(r('active', None, 1, deleted=True))
        self.assertFalse(r('active', 'rebooting', 1))
