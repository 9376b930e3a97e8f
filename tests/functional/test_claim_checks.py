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
"""Every claim that may overcommit is checked after it lands (issue 30,
holes 5 and 6), on a real in-process Nova with the reconciler off: what
repairs the host here is the claim's own check, never a reconciler round.

The races are forced deterministically by wrapping the function at the
point where the other request must land: nova's Placement claim of the
scheduling pass (hole 5), the fake driver's spawn on the first host of a
build that fails there and is rescheduled (hole 6).
"""

import datetime
import threading
import time
import types
from unittest import mock

from nova import context as nova_context
from nova import exception
from nova import objects
from nova.scheduler import manager as nova_manager
from nova.scheduler import utils as scheduler_utils
from nova.virt import fake

from oslo_utils import timeutils

from opie_sched.common import flavors
from opie_sched.preemption import victim_state as vs
from opie_sched.scheduler import actions
from opie_sched.scheduler import manager as opie_manager
from opie_sched.scheduler import operations
from opie_sched.scheduler import request_view
from opie_sched.scheduler import reservations
from tests.functional import base
from tests.functional import test_preemption

CAPACITY = (base.HOST['vcpus'], base.HOST['memory_mb'],
            base.HOST['disk_gb'])


class _Base(base.OpieNovaTestCase, test_preemption._Helpers):
    EXTRA_FLAGS = {'opie_reconciler': {'run_in_scheduler': False}}

    def full_used(self, host):
        usages = self.usages(host)
        return tuple(usages.get(std, 0) + usages.get(pre, 0)
                     for std, pre in flavors.CLASS_MAP.items())

    def assertWithinCapacity(self, host):
        used = self.full_used(host)
        self.assertTrue(all(u <= c for u, c in zip(used, CAPACITY)),
                        'host %s over capacity: used %s of %s'
                        % (host, used, CAPACITY))

    def sysmeta(self, server_id):
        ctx = nova_context.get_admin_context(read_deleted='yes')
        with nova_context.target_cell(
                ctx, self.cell_mappings['cell1']) as cctxt:
            return objects.Instance.get_by_uuid(
                cctxt, server_id,
                expected_attrs=['system_metadata']).system_metadata

    def launched(self, server_id):
        """``launched_at`` of a server (None before its build ended or
        while it is still a build request).
        """
        try:
            return self.db_instance(server_id).launched_at
        except exception.InstanceNotFound:
            return None

    def wait_for(self, predicate, timeout=120.0):
        """Poll ``predicate`` (0.2 s apart) until true or ``timeout`` s;
        returns its last value. A bound for what must happen (a loaded
        2-core machine has taken more than 30 s), ended as soon as it
        does.
        """
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value or time.monotonic() > deadline:
                return value
            time.sleep(0.2)


class PreemptibleBetweenReadAndClaimTest(_Base):
    """Hole 5: a preemptible boot lands between a normal request's
    candidate read (its provider summary shows no preemptible usage) and
    its claim. The preemptible's own check ran before the normal claim
    existed, so only the normal claim's check can see the overcommit.
    """

    HOSTS = ('host1',)

    def test_normal_claim_after_a_preemptible_landed_is_checked(self):
        landed = []
        real_claim = scheduler_utils.claim_resources

        def claim(ctx, client, spec_obj, instance_uuid, alloc_req,
                  *args, **kwargs):
            if not landed and spec_obj.flavor.name == 'large':
                # the normal request read its candidates on an empty host;
                # two preemptibles fill it before its claim
                landed.extend(
                    self.boot('large.preemptible', name='p%d' % i)
                    for i in range(2))
            return real_claim(ctx, client, spec_obj, instance_uuid,
                              alloc_req, *args, **kwargs)

        with mock.patch.object(scheduler_utils, 'claim_resources', claim):
            normal = self.boot('large', name='normal')
        self.assertEqual(2, len(landed))
        self.assertEqual('host1', self.server_host(normal))
        # the normal request was held until its victim released the host
        live = self.live_uuids()
        self.assertIn(normal['id'], live)
        self.assertEqual(1, len({p['id'] for p in landed} & live),
                         'exactly one preemptible must be preempted')
        self.assertWithinCapacity('host1')


class _FailFirstSpawn:
    """Wraps ``fake.FakeDriver.spawn``: the first spawn of the server
    named ``name`` calls ``before_failing(host)`` and raises (nova's
    compute then reschedules the build to an alternate).
    """

    def __init__(self, name, before_failing):
        self.name = name
        self.before_failing = before_failing
        self.failed_on = []
        self._real = fake.FakeDriver.spawn
        self._lock = threading.Lock()

    def method(self):
        """A function to patch ``FakeDriver.spawn`` with."""
        def spawn(driver, *args, **kwargs):
            return self(driver, *args, **kwargs)
        return spawn

    def __call__(self, driver, context, instance, *args, **kwargs):
        with self._lock:
            first = instance.display_name == self.name and not self.failed_on
            if first:
                self.failed_on.append(instance.host)
        if first:
            self.before_failing(instance.host)
            raise RuntimeError('spawn failed on purpose')
        return self._real(driver, context, instance, *args, **kwargs)


class RescheduleToFilledAlternateTest(_Base):
    """Hole 6: a build fails on its host and is rescheduled by the cell
    conductor to the alternate, which preemptible servers filled since the
    scheduling pass; the conductor claims the alternate itself
    (``build_instances``: ``claim_resources`` with the alternate's
    allocation request), so no scheduler checked that claim.
    """

    HOSTS = ('host1', 'host2')

    def fill_other(self, name, flavor):
        """``(servers, spawn)``: ``spawn`` fails the first build of
        ``name`` after filling the other host with two servers of
        ``flavor`` (billing periods 100 s and 2000 s when preemptible).
        """
        filled = []

        def before_failing(host):
            other = 'host2' if host == 'host1' else 'host1'
            if flavor.endswith('.preemptible'):
                filled.extend(self.fill_with_preemptibles(
                    other, flavor[:-len('.preemptible')], [100, 2000]))
            else:
                filled.extend(self.boot(flavor, host=other,
                                        name='filler%d' % i)
                              for i in range(2))
        return filled, _FailFirstSpawn(name, before_failing)

    def action_names(self, server):
        return {a['action']
                for a in self.api.get_instance_actions(server['id'])}

    def test_normal_server_rescheduled_to_a_filled_alternate(self):
        filled, spawn = self.fill_other('normal', 'large.preemptible')
        with mock.patch.object(fake.FakeDriver, 'spawn', spawn.method()):
            normal = self.boot('large', name='normal')
        [first] = spawn.failed_on
        alternate = self.server_host(normal)
        self.assertNotEqual(first, alternate)
        self.assertEqual(2, len(filled))
        # the alternate's claim is checked when the compute reports the
        # build: the cheapest preemptible (100 s into its billing period)
        # is preempted for the normal server, with no reconciler round
        gone = self.wait_for(
            lambda: filled[0]['id'] not in self.live_uuids())
        self.assertTrue(gone, 'the alternate stayed over capacity: %s'
                        % (self.full_used(alternate),))
        self.assertEqual({filled[1]['id'], normal['id']}, self.live_uuids())
        self.assertWithinCapacity(alternate)
        self.assertWithinCapacity(first)
        self.assertIn(actions.PREEMPT_ACTION, self.action_names(filled[0]))

    def test_preemptible_server_rescheduled_to_a_filled_alternate(self):
        # normal servers filled the alternate (a host full of preemptible
        # ones would refuse the claim in Placement itself): the preemptible
        # new server whose claim finds it full is the one to go
        filled, spawn = self.fill_other('late', 'large')
        with mock.patch.object(fake.FakeDriver, 'spawn', spawn.method()):
            late = self.api.post_server({'server': self._build_server(
                name='late', networks='none',
                flavor_id=self.flavor_ids['large.preemptible'])})
            # built on the alternate (ACTIVE), then found over capacity
            built = self.wait_for(lambda: self.launched(late['id']))
        self.assertTrue(built)
        [first] = spawn.failed_on
        self.assertEqual(2, len(filled))
        gone = self.wait_for(lambda: late['id'] not in self.live_uuids())
        self.assertTrue(gone, 'the alternate stayed over capacity')
        self.assertNotEqual(first, self.db_instance(late['id']).host)
        self.assertIn(actions.PREEMPT_ACTION, self.action_names(late))
        self.assertEqual({p['id'] for p in filled}, self.live_uuids())
        for host in self.HOSTS:
            self.assertWithinCapacity(host)


class RenewalAtEveryClaimTest(_Base):
    """The suspected item of hole 5: a multi-create's later instance
    claimed on a host whose summary showed no preemptible usage returned
    before renewing the lease of the victims its earlier instances
    reserved (the lease is renewed every third of
    ``reservation_timeout``, at each claim).
    """

    def test_claim_on_a_host_without_preemptibles_renews_the_lease(self):
        victim = self.fill_with_preemptibles('host1', 'large', [100])[0]
        cell = self.cell_mappings['cell1'].uuid
        ctx = nova_context.get_admin_context()
        ctx.request_id = 'req-multi-create'
        cctxt = reservations.cell_context(ctx, cell)
        # instance 1 of the request reserved the victim 200 s ago (of a
        # 300 s lease)
        old = timeutils.utcnow(with_timezone=True) - datetime.timedelta(
            seconds=200)
        row = reservations.load_by_uuid(cctxt, [victim['id']])[victim['id']]
        self.assertEqual([victim['id']], reservations.reserve(
            cctxt, [row], 'instance-1', ctx.request_id, {}, now=old))
        plan = types.SimpleNamespace(
            host='host1', total_cost=100.0,
            victims=[(types.SimpleNamespace(uuid=victim['id']), 100.0)])
        rp2 = self._get_provider_uuid_by_host('host2')
        # the request read host2 empty: no preemptible usage
        view = request_view.RequestView(ctx, {rp2: {'resources': {
            rc: {'capacity': c, 'used': 0}
            for rc, c in zip(flavors.STANDARD_CLASSES, CAPACITY)}}})
        view.set_policy(lambda: request_view.Decision(
            operations.BOOT, True, False, False))
        view.pending.append(opie_manager._Pending(plan, cell, 'instance-1'))
        view.renewed_at = time.monotonic() - 200
        flavor = objects.Flavor.get_by_flavor_id(
            ctx, self.flavor_ids['large'])
        spec = objects.RequestSpec(flavor=flavor, num_instances=3,
                                   is_bfv=False)
        # instance 2 claimed on host2 (nova's HostState bookkeeping aside)
        host2 = types.SimpleNamespace(uuid=rp2, host='host2',
                                      nodename='host2', cell_uuid=cell,
                                      updated=None)
        request_view.set_current_view(view)
        self.addCleanup(request_view.set_current_view, None)
        with mock.patch.object(nova_manager.SchedulerManager,
                               '_consume_selected_host'):
            self.scheduler.manager._consume_selected_host(
                host2, spec, instance_uuid='instance-2')
        state = vs.VictimState.from_metadata(self.sysmeta(victim['id']))
        self.assertEqual((vs.RESERVED, ctx.request_id),
                         (state.state, state.request_id))
        self.assertGreater(state.since, old + datetime.timedelta(
            seconds=100), 'the lease was not renewed')


class NoDiskInventoryTest(_Base):
    """A suspected item of issue 30: on a host whose provider has no
    ``DISK_GB`` inventory (its disks are volumes: Ceph-style flavors with
    ``resources:DISK_GB=0``), the request's provider summary was unusable,
    so the post-claim check fell back to the worker's own HostState and
    returned without a lock or a Placement read when that HostState (which
    does not see another worker's claims) showed room.
    """

    HOSTS = ('host1',)

    def test_claim_on_a_host_without_disk_inventory_is_checked(self):
        ceph = {'resources:DISK_GB': '0'}
        self.flavor_ids['ceph'] = self._create_flavor(
            name='ceph', vcpu=4, memory_mb=8000, disk=80, ephemeral=0,
            extra_spec=ceph)
        self.flavor_ids['ceph.preemptible'] = self._create_flavor(
            name='ceph.preemptible', vcpu=4, memory_mb=8000, disk=80,
            ephemeral=0, extra_spec=flavors.preemptible_extra_specs(
                4, 8000, 0))
        rp = self._get_provider_uuid_by_host('host1')
        # what this worker's HostState knows: the host before the
        # preemptible claims (another worker's)
        node = self.placement.get('/resource_providers/%s/usages'
                                  % rp).body['usages']
        self.assertEqual(0, sum(node.values()))
        preemptibles = [self.boot('ceph.preemptible', name='p%d' % i)
                        for i in range(2)]
        # the provider summary the normal request read: no DISK_GB
        inventories = self._get_provider_inventory(rp)
        usages = self.placement.get('/resource_providers/%s/usages'
                                    % rp).body['usages']
        summary = {rp: {'resources': {
            rc: {'capacity': (inv['total'] - inv['reserved'])
                 * inv['allocation_ratio'], 'used': usages.get(rc, 0)}
            for rc, inv in inventories.items() if rc != 'DISK_GB'}}}
        # the normal claim lands (the preemption phase bypassed), then its
        # host's provider loses the DISK_GB inventory nothing claims
        self.flags(enabled=False, group='opie_preemption')
        normal = self.boot('ceph', name='normal')
        self.flags(enabled=True, group='opie_preemption')
        del inventories['DISK_GB']
        self._update_inventory(rp, {
            'resource_provider_generation': self.placement.get(
                '/resource_providers/%s' % rp).body['generation'],
            'inventories': inventories})
        self.assertNotIn('DISK_GB', self._get_provider_inventory(rp))
        ctx = nova_context.get_admin_context()
        ctx.request_id = 'req-no-disk'
        view = request_view.RequestView(ctx, summary)
        view.set_policy(lambda: request_view.Decision(
            operations.BOOT, True, False, False))
        cell = self.cell_mappings['cell1'].uuid
        stale = types.SimpleNamespace(
            uuid=rp, host='host1', nodename='host1', cell_uuid=cell,
            updated=None, vcpus_total=CAPACITY[0], cpu_allocation_ratio=1.0,
            total_usable_ram_mb=CAPACITY[1], ram_allocation_ratio=1.0,
            free_ram_mb=CAPACITY[1] - 8000, total_usable_disk_gb=0,
            disk_allocation_ratio=1.0, vcpus_used=4, disk_mb_used=0)
        flavor = objects.Flavor.get_by_flavor_id(ctx, self.flavor_ids['ceph'])
        spec = objects.RequestSpec(flavor=flavor, num_instances=1,
                                   is_bfv=False)
        request_view.set_current_view(view)
        self.addCleanup(request_view.set_current_view, None)
        with mock.patch.object(nova_manager.SchedulerManager,
                               '_consume_selected_host'):
            self.scheduler.manager._consume_selected_host(
                stale, spec, instance_uuid=normal['id'])
        # one preemptible reserved as the victim, from Placement's figures
        [item] = view.pending
        [(victim, _)] = item.plan.victims
        self.assertIn(victim.uuid, {p['id'] for p in preemptibles})
        state = vs.VictimState.from_metadata(self.sysmeta(victim.uuid))
        self.assertEqual((vs.RESERVED, ctx.request_id),
                         (state.state, state.request_id))
