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
"""The filter and weighers on nova HostStates (no database: the request's
instances are handed to the per-request view directly).
"""

import datetime
from unittest import mock

import fixtures
import testtools

from nova import objects
from nova.scheduler import weights as nova_weights
from nova.tests.unit.scheduler import fakes

from opie_sched.common import flavors
from opie_sched.preemption import model
from opie_sched.scheduler import cell_reads
from opie_sched.scheduler.filters import preemptible_full_state
from opie_sched.scheduler import host_capacity
from opie_sched.scheduler import ownership
from opie_sched.scheduler import request_view
from opie_sched.scheduler import weights
from opie_sched.scheduler.weights import preemptible_count
from opie_sched.scheduler.weights import preemption_cost
from opie_sched.scheduler.weights import proportional_share

objects.register_all()

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0)
MEDIUM = (2, 4000, 40)
LARGE = (4, 8000, 80)


def flavor(size, preemptible):
    vcpus, ram, disk = size
    specs = (flavors.preemptible_extra_specs(vcpus, ram, disk)
             if preemptible else {})
    return objects.Flavor(vcpus=vcpus, memory_mb=ram, root_gb=disk,
                          ephemeral_gb=0, swap=0, extra_specs=specs)


def instance(uuid, host, size, preemptible, runtime=0):
    return objects.Instance(
        uuid=uuid, host=host, node=host, flavor=flavor(size, preemptible),
        launched_at=NOW - datetime.timedelta(seconds=runtime),
        metadata={}, task_state=None, vm_state='active',
        display_name=uuid, project_id='p')


def host_state(name, instances, vcpus=8, ram=16000, disk=200, ratio=1.0):
    used = [sum(getattr(i.flavor, attr) for i in instances)
            for attr in ('vcpus', 'memory_mb', 'root_gb')]
    return fakes.FakeHostState(name, name, {
        'vcpus_total': vcpus, 'vcpus_used': used[0],
        'total_usable_ram_mb': ram, 'free_ram_mb': ram - used[1],
        'total_usable_disk_gb': disk, 'disk_mb_used': used[2] * 1024,
        'free_disk_mb': 0,  # nova's disk_available_least: ignored
        'cpu_allocation_ratio': ratio, 'ram_allocation_ratio': 1.0,
        'disk_allocation_ratio': 1.0}, instances=instances)


def request(size, preemptible):
    return objects.RequestSpec(flavor=flavor(size, preemptible),
                               num_instances=1)


class _PluginTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MockPatch(
            'oslo_utils.timeutils.utcnow',
            side_effect=lambda with_timezone=False: NOW.replace(
                tzinfo=datetime.timezone.utc) if with_timezone else NOW))
        self.addCleanup(request_view.set_current_view, None)

    def use_hosts(self, *host_states):
        """Make the request's view know the hosts' instances (what
        opie-scheduler bulk-loads once per request).
        """
        view = request_view.RequestView(ctx=None)
        for hs in host_states:
            view._instances[(hs.host, hs.nodename)] = list(
                hs.instances.values())
            view._loaded.add((hs.host, hs.nodename))
            view._meta_loaded.add((hs.host, hs.nodename))
        request_view.set_current_view(view)
        return list(host_states)

    def weigh(self, classes, host_states, spec):
        """``[(host, weight)]`` as nova's weight handler orders them."""
        weighed = nova_weights.HostWeightHandler().get_weighed_objects(
            [cls() for cls in classes], host_states, spec)
        return [(w.obj.host, round(w.weight, 6)) for w in weighed]


class FullStateFilterTest(_PluginTest):

    def setUp(self):
        super().setUp()
        self.filt = preemptible_full_state.PreemptibleFullStateFilter()

    def test_preemptible_request_needs_full_state_room(self):
        full = host_state('h', [instance('a', 'h', LARGE, True),
                                instance('b', 'h', MEDIUM, False)])
        self.assertTrue(self.filt.host_passes(full, request(MEDIUM, True)))
        self.assertFalse(self.filt.host_passes(full, request(LARGE, True)))

    def test_each_dimension_counts(self):
        empty = []
        for size in ((9, 100, 1), (1, 16001, 1), (1, 100, 201)):
            hs = host_state('h', empty)
            self.assertFalse(self.filt.host_passes(hs, request(size, True)),
                             size)
        self.assertTrue(self.filt.host_passes(
            host_state('h', empty), request((8, 16000, 200), True)))

    def test_allocation_ratio_applies(self):
        hs = host_state('h', [instance('a', 'h', LARGE, False)], ratio=2.0)
        self.assertTrue(self.filt.host_passes(hs, request((12, 10, 1),
                                                          True)))
        self.assertFalse(self.filt.host_passes(hs, request((13, 10, 1),
                                                           True)))

    def test_normal_requests_pass(self):
        full = host_state('h', [instance('a', 'h', LARGE, True),
                                instance('b', 'h', LARGE, True)])
        self.assertTrue(self.filt.host_passes(full, request(LARGE, False)))

    def test_error_rejects_host_without_raising(self):
        hs = host_state('h', [])
        hs.vcpus_total = None  # a broken host record
        self.assertFalse(self.filt.host_passes(hs, request(MEDIUM, True)))

    def test_request_read_once_per_spec_in_a_request(self):
        request_view.set_current_view(request_view.RequestView(ctx=None))
        sizes = self.useFixture(fixtures.MockPatchObject(
            ownership, 'request_resources',
            wraps=ownership.request_resources)).mock
        states = [host_state('h%d' % i, [instance('a%d' % i, 'h%d' % i,
                                                  LARGE, False)])
                  for i in range(5)]
        spec = request(MEDIUM, True)
        self.assertEqual([True] * 5, [self.filt.host_passes(hs, spec)
                                      for hs in states])
        self.assertEqual(1, sizes.call_count)
        # another spec, or the same spec with another flavor: read again
        big = request((5, 100, 1), True)
        self.assertEqual([False] * 5, [self.filt.host_passes(hs, big)
                                       for hs in states])
        spec.flavor = flavor((5, 100, 1), True)
        self.assertFalse(self.filt.host_passes(states[0], spec))
        spec.flavor = flavor(MEDIUM, False)
        self.assertTrue(self.filt.host_passes(states[0], spec))
        self.assertEqual(4, sizes.call_count)

    def test_what_the_request_is_for_is_read_once(self):
        # a normal request: the first host whose full state has no room
        # reads the request's decision, once; when the request may
        # preempt, a host passes when terminating its candidate victims
        # makes room (the ownership model: issue 30), and when it may not
        # (a move that may not preempt) it is judged on its full state
        states = [host_state('h%d' % i, [instance('a%d' % i, 'h%d' % i,
                                                  LARGE, True),
                                         instance('b%d' % i, 'h%d' % i,
                                                  LARGE, True)])
                  for i in range(3)]
        states.append(host_state('room', []))
        spec = request(MEDIUM, False)
        for fit, expected in ((False, [True] * 4),
                              (True, [False, False, False, True])):
            view = request_view.RequestView(ctx=None)
            for hs in states:
                view._instances[(hs.host, hs.nodename)] = list(
                    hs.instances.values())
                view._loaded.add((hs.host, hs.nodename))
            decide = mock.Mock(return_value=request_view.Decision(
                'migration', not fit, fit, fit))
            view.set_policy(decide)
            request_view.set_current_view(view)
            self.assertEqual(expected, [self.filt.host_passes(hs, spec)
                                        for hs in states])
            self.assertEqual(1, decide.call_count)

    def test_preempting_request_rejects_a_host_of_pinned_servers(self):
        # issue 30 hole 7: a preemptible server its owner is moving (here
        # VERIFY_RESIZE) holds its room and is no candidate victim: a
        # normal request that may preempt is kept off a host where only
        # such servers would make room
        pinned = [instance('a', 'h', LARGE, True),
                  instance('b', 'h', LARGE, True)]
        for inst in pinned:
            inst.vm_state = 'resized'
        spec = request(MEDIUM, False)
        for vm_state, passes in (('resized', False), ('active', True)):
            # with the second one running, it can be preempted
            pinned[1].vm_state = vm_state
            [hs] = self.use_hosts(host_state('h', pinned))
            request_view.current_view().set_policy(
                lambda: request_view.Decision('boot', True, False, False))
            self.assertEqual(passes, self.filt.host_passes(hs, spec))


class WeigherTest(_PluginTest):

    def hosts(self):
        # free: h-free has room; h-cheap and h-dear need 4 vCPU freed by
        # preempting (billing period costs 100 s vs 3000 s); h-normal holds
        # only normal instances.
        return self.use_hosts(
            host_state('h-dear', [instance('d1', 'h-dear', LARGE, True, 3000),
                                  instance('d2', 'h-dear', LARGE, False)]),
            host_state('h-free', [instance('f1', 'h-free', LARGE, True)]),
            host_state('h-cheap', [instance('c1', 'h-cheap', LARGE, True,
                                            3700),
                                   instance('c2', 'h-cheap', LARGE, False)]),
            host_state('h-normal', [instance('n1', 'h-normal', LARGE, False),
                                    instance('n2', 'h-normal', LARGE,
                                             False)]))

    def test_preemption_cost_order(self):
        got = self.weigh([preemption_cost.PreemptionCostWeigher], self.hosts(),
                         request(LARGE, False))
        self.assertEqual(['h-free', 'h-cheap', 'h-dear', 'h-normal'],
                         [h for h, _ in got])
        multiplier = 10.0
        self.assertEqual(multiplier * 1.0, got[0][1])
        # cheapest needing preemption: 0.1 + 0.4 * (1 - 100/3000)
        self.assertAlmostEqual(multiplier * (0.1 + 0.4 * (1 - 100 / 3000)),
                               got[1][1], places=4)
        self.assertAlmostEqual(multiplier * 0.1, got[2][1], places=4)
        self.assertEqual(0.0, got[3][1])

    def test_preemptible_requests_are_not_ranked_by_cost(self):
        got = self.weigh([preemption_cost.PreemptionCostWeigher], self.hosts(),
                         request(LARGE, True))
        self.assertEqual({10.0}, {w for _, w in got})

    def test_preemptible_count(self):
        got = dict(self.weigh([preemptible_count.PreemptibleCountWeigher],
                              self.hosts(), request(LARGE, False)))
        # raw: fits -> 0; else -(1 + preemptibles), min-max normalised.
        self.assertEqual(1.0, got['h-free'])
        self.assertEqual(got['h-cheap'], got['h-dear'])
        self.assertLess(got['h-cheap'], got['h-normal'])

    def test_weigher_error_is_neutral(self):
        self.useFixture(fixtures.MockPatch(
            'opie_sched.scheduler.preemption_plans.plans_for',
            side_effect=RuntimeError('boom')))
        got = self.weigh([preemption_cost.PreemptionCostWeigher], self.hosts(),
                         request(LARGE, False))
        self.assertEqual({0.0}, {w for _, w in got})

    def test_one_view_per_request(self):
        host_states = self.hosts()
        load = self.useFixture(fixtures.MockPatch(
            'opie_sched.scheduler.cell_reads.load_instances'))
        self.weigh(weights.all_weighers(), host_states,
                   request(LARGE, False))
        load.mock.assert_not_called()


class SharedHostViewsTest(_PluginTest):
    """The HostViews of one request are built once and shared by the
    filter and weighers, and built again for a host its request consumed.
    """

    def hosts(self):
        # h-room fits one MEDIUM in its full state, not two, and its
        # victim would be the dearest; h-cheap and h-dear are full of
        # preemptibles (billing costs 3500 s, 100 s, 3000 s)
        return self.use_hosts(
            host_state('h-room', [instance('r1', 'h-room', LARGE, True,
                                           3500),
                                  instance('r2', 'h-room', MEDIUM, False)]),
            host_state('h-cheap', [instance('c1', 'h-cheap', LARGE, True,
                                            3700),
                                   instance('c2', 'h-cheap', LARGE, True,
                                            3700)]),
            host_state('h-dear', [instance('d1', 'h-dear', LARGE, True,
                                           3000),
                                  instance('d2', 'h-dear', LARGE, True,
                                           3000)]))

    def count_views(self):
        return self.useFixture(fixtures.MockPatchObject(
            model, 'HostView', wraps=model.HostView)).mock

    def test_views_built_once_per_request(self):
        host_states = self.hosts()
        built = self.count_views()
        spec = request(MEDIUM, False)
        filt = preemptible_full_state.PreemptibleFullStateFilter()
        for hs in host_states:
            filt.host_passes(hs, spec)
        for _ in range(2):
            # both weighers, twice (an alternate's pass, say)
            self.weigh(weights.all_weighers(), host_states, spec)
        self.assertEqual(len(host_states), built.call_count)
        self.assertEqual(
            ['h-cheap', 'h-dear', 'h-room'],
            sorted(c.kwargs['name'] for c in built.call_args_list))

    def consume(self, hs, spec):
        """What nova's _consume_selected_host does with opie's manager
        (without a provider summary: the HostState's own figures).
        """
        spec.pci_requests = objects.InstancePCIRequests(requests=[])
        spec.numa_topology = None
        before = host_capacity.consumed_disk_gb(hs)
        vcpus = hs.vcpus_used
        hs.consume_from_request(spec)
        self.assertEqual(vcpus + spec.vcpus, hs.vcpus_used)  # it happened
        host_capacity.note_consumed(hs, spec, before)

    def fresh_weights(self, host_states, spec):
        """The weights a new view (nothing shared) gives."""
        shared = request_view.current_view()
        self.use_hosts(*host_states)
        try:
            return self.weigh(weights.all_weighers(), host_states, spec)
        finally:
            request_view.set_current_view(shared)

    def test_decisions_unchanged_after_consumption(self):
        host_states = self.hosts()
        room = host_states[0]
        spec = request(MEDIUM, False)
        first = self.weigh(weights.all_weighers(), host_states, spec)
        self.assertEqual('h-room', first[0][0])
        # a multi-create: the first instance lands on h-room, whose full
        # state has no room left for the second one
        self.consume(room, spec)
        built = self.count_views()
        second = self.weigh(weights.all_weighers(), host_states, spec)
        self.assertEqual(self.fresh_weights(host_states, spec), second)
        self.assertNotEqual(first, second)
        self.assertEqual('h-cheap', second[0][0])
        # only the consumed host's view was built again by the shared view
        # (the fresh view's three come after it)
        self.assertEqual('h-room', built.call_args_list[0].kwargs['name'])
        self.assertEqual(1 + len(host_states), built.call_count)

    def test_claim_on_summary_rebuilds_view(self):
        # opie's manager: full state from the provider summaries plus the
        # request's own claims (RequestView.note_claim)
        def summary(vcpus_used):
            return {'resources': {
                'VCPU': {'capacity': 8, 'used': 0},
                'MEMORY_MB': {'capacity': 16000, 'used': 0},
                'DISK_GB': {'capacity': 200, 'used': 0},
                'CUSTOM_PREEMPTIBLE_VCPU': {'capacity': 8,
                                            'used': vcpus_used},
                'CUSTOM_PREEMPTIBLE_MEMORY_MB': {'capacity': 16000,
                                                 'used': 0},
                'CUSTOM_PREEMPTIBLE_DISK_GB': {'capacity': 200, 'used': 0}}}
        host_states = self.hosts()
        for hs, used in zip(host_states, (6, 8, 8)):
            hs.uuid = hs.host + '-rp'
            request_view.current_view().summaries[hs.uuid] = summary(used)
        spec = request(MEDIUM, False)
        first = self.weigh(weights.all_weighers(), host_states, spec)
        self.assertEqual('h-room', first[0][0])
        request_view.current_view().note_claim(host_states[0].uuid,
                                        ownership.request_resources(spec))
        second = self.weigh(weights.all_weighers(), host_states, spec)
        summaries = request_view.current_view().summaries
        shared = request_view.current_view()
        self.use_hosts(*host_states)
        request_view.current_view().summaries.update(summaries)
        request_view.current_view().note_claim(host_states[0].uuid,
                                        ownership.request_resources(spec))
        fresh = self.weigh(weights.all_weighers(), host_states, spec)
        request_view.set_current_view(shared)
        self.assertEqual(fresh, second)
        self.assertEqual('h-cheap', second[0][0])

    def test_new_victims_rebuild_views(self):
        host_states = self.hosts()
        spec = request(MEDIUM, False)
        first = self.weigh(weights.all_weighers(), host_states, spec)
        # an earlier instance of the request planned c1 and c2 as victims:
        # h-cheap's are leaving, it no longer needs preemption
        request_view.current_view().planned_victims.update({'c1', 'c2'})
        second = dict(self.weigh(weights.all_weighers(), host_states, spec))
        self.assertNotEqual(dict(first), second)
        self.assertEqual(max(second.values()), second['h-cheap'])

    def test_flavor_facts_per_flavor_and_volume_boot(self):
        # one flavor object shared by three rows (as a bulk read shares
        # it), one of them booted from a volume (no root disk on the
        # host); another flavor, normal, of the same size
        shared = flavor(LARGE, True)
        rows = []
        for uuid, image, flv in (('a', 'img', shared), ('b', '', shared),
                                 ('c', 'img', shared),
                                 ('d', 'img', flavor(LARGE, False))):
            inst = instance(uuid, 'h', LARGE, True, 100)
            inst.flavor = flv
            inst.image_ref = image
            rows.append(inst)
        hs = host_state('h', rows)
        view = request_view.RequestView(ctx=None)
        view._instances[('h', 'h')] = rows
        view._loaded.add(('h', 'h'))
        got = view.host_views([hs], request=ownership.request_resources(
            request(LARGE, False)))[('h', 'h')].instances
        self.assertEqual([ownership.instance_info(i) for i in rows], got)
        # a preemptible server holds its flavor's CUSTOM_PREEMPTIBLE_*
        # amounts in Placement, but no root disk when booted from a volume
        # (the scheduler claims it so: nova's is_bfv rule for DISK_GB,
        # issue 30, hole 9)
        self.assertEqual([(4, 8000, 80), (4, 8000, 0), (4, 8000, 80),
                          (4, 8000, 80)], [tuple(i.resources) for i in got])
        self.assertEqual([True, True, True, False],
                         [i.preemptible for i in got])


class ProportionalShareWeigherTest(_PluginTest):

    def bid_hosts(self):
        def spot(uuid, host, bid):
            inst = instance(uuid, host, MEDIUM, True)
            if bid is not None:
                inst.metadata = {'opie:bid': bid}
            return inst
        return self.use_hosts(
            host_state('h-busy', [spot('a1', 'h-busy', '0.3'),
                                  spot('a2', 'h-busy', '0.2')]),
            host_state('h-one', [spot('b1', 'h-one', '0.1')]),
            host_state('h-none', [instance('c1', 'h-none', LARGE, False)]),
            host_state('h-bad', [spot('d1', 'h-bad', 'lots'),
                                 spot('d2', 'h-bad', None)]))

    def test_worst_fit_by_sum_of_bids(self):
        spec = request(MEDIUM, True)
        spec.scheduler_hints = {'opie_bid': ['0.1']}
        got = dict(self.weigh([proportional_share.ProportionalShareWeigher],
                              self.bid_hosts(), spec))
        # share = bid / (sum of bids on the host + bid), Themis §III.B;
        # an invalid or missing bid counts the default bid 0.01.
        self.assertEqual(1.0, got['h-none'])
        self.assertAlmostEqual(0.1 / 0.2, got['h-one'], places=5)
        self.assertAlmostEqual(0.1 / 0.6, got['h-busy'], places=5)
        self.assertAlmostEqual(0.1 / 0.12, got['h-bad'], places=5)

    def test_flavor_bid_then_default(self):
        spec = request(MEDIUM, True)
        spec.flavor.extra_specs['opie:bid'] = '0.5'
        got = dict(self.weigh([proportional_share.ProportionalShareWeigher],
                              self.bid_hosts(), spec))
        self.assertAlmostEqual(0.5 / 1.0, got['h-busy'], places=5)
        self.assertEqual(['h-busy'],
                         [h for h, w in got.items() if w == min(got.values())])

    def test_normal_requests_are_not_in_the_market(self):
        got = self.weigh([proportional_share.ProportionalShareWeigher],
                         self.bid_hosts(), request(MEDIUM, False))
        self.assertEqual({0.0}, {w for _, w in got})

    def test_invalid_request_bid_is_neutral(self):
        spec = request(MEDIUM, True)
        spec.scheduler_hints = {'opie_bid': ['-1']}
        got = self.weigh([proportional_share.ProportionalShareWeigher],
                         self.bid_hosts(), spec)
        self.assertEqual({0.0}, {w for _, w in got})


class BulkLoadTest(_PluginTest):
    """Instances are loaded only for hosts that would need preemption."""

    def test_hosts_with_room_are_not_loaded(self):
        roomy = [host_state('h%d' % i, [instance('i%d' % i, 'h%d' % i,
                                                 MEDIUM, True)])
                 for i in range(3)]
        full = host_state('full', [instance('f1', 'full', LARGE, True),
                                   instance('f2', 'full', LARGE, True)])
        load = self.useFixture(fixtures.MockPatch(
            'opie_sched.scheduler.cell_reads.load_instances',
            return_value={('full', 'full'): list(full.instances.values())}))
        request_view.set_current_view(request_view.RequestView(ctx=None))
        got = dict(self.weigh(weights.all_weighers(), roomy + [full],
                              request(LARGE, False)))
        # the full-state weighers do not read server metadata
        load.mock.assert_called_once_with(None, {None: {'full'}},
                                          nodes_by_cell={None: {'full'}},
                                          server_metadata=False)
        self.assertEqual('full', min(got, key=got.get))

    def test_nothing_loaded_when_every_host_fits(self):
        roomy = [host_state('h%d' % i, []) for i in range(3)]
        load = self.useFixture(fixtures.MockPatch(
            'opie_sched.scheduler.cell_reads.load_instances'))
        request_view.set_current_view(request_view.RequestView(ctx=None))
        self.weigh(weights.all_weighers(), roomy, request(LARGE, False))
        load.mock.assert_not_called()


class InstanceRowsTest(testtools.TestCase):
    """The bulk read's rows (``cell_reads._instance_rows``), on a fake session
    (no database).
    """

    def rows(self, flavor_texts):
        import collections
        Rec = collections.namedtuple('Rec', (
            'uuid host node vm_state task_state launched_at display_name '
            'project_id user_id image_ref updated_at flavor key value'))
        recs = [Rec('u%d' % i, 'h', 'n', 'active', None, NOW, 'x', 'p',
                    'u', 'img', NOW, text, None, None)
                for i, text in enumerate(flavor_texts)]
        session = mock.Mock()
        # the columns with opie's system metadata keys, then its server
        # metadata keys
        session.execute.side_effect = [recs, []]
        read = cell_reads._instance_rows.__wrapped__
        return read(mock.Mock(session=session), ['h'], ['n'])

    def test_one_parse_per_serialized_flavor(self):
        from oslo_serialization import jsonutils

        def text(size, preemptible):
            return jsonutils.dumps({
                'cur': flavor(size, preemptible).obj_to_primitive(),
                'old': None, 'new': None})
        large, medium = text(LARGE, True), text(MEDIUM, False)
        parse = self.useFixture(fixtures.MockPatchObject(
            cell_reads, '_row_flavor', wraps=cell_reads._row_flavor)).mock
        rows = self.rows([large, medium, large, None])
        self.assertEqual(['u0', 'u1', 'u2'], [r.uuid for r in rows])
        self.assertEqual(2, parse.call_count)
        self.assertIs(rows[0].flavor, rows[2].flavor)
        self.assertEqual((4, 8000, 80, True), (
            rows[2].flavor.vcpus, rows[2].flavor.memory_mb,
            rows[2].flavor.root_gb,
            ownership.flavor_is_preemptible(rows[2].flavor)))
        self.assertEqual((2, False), (
            rows[1].flavor.vcpus, ownership.flavor_is_preemptible(
                rows[1].flavor)))
