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
"""Preemptible instances on a real in-process Nova (the opie scheduler)."""

import datetime
import math
import time

import fixtures

from oslo_utils import timeutils
import sqlalchemy as sa

from nova.compute import api as compute_api
from nova import context as nova_context
from nova.db.main import api as main_db
from nova.db.main import models
from nova import objects

from opie_sched.notifications import base as notes
from opie_sched.preemption import victim_state
from opie_sched.scheduler import actions
from opie_sched.scheduler import reconciler
from tests.functional import base


class _Helpers:

    def set_runtime(self, server_id, seconds):
        """Pretend a server was created and launched ``seconds`` seconds
        ago.
        """
        ctx = nova_context.get_admin_context()
        then = timeutils.utcnow() - datetime.timedelta(seconds=seconds)
        with nova_context.target_cell(
                ctx, self.cell_mappings['cell1']) as cctxt:
            main_db.instance_update(cctxt, server_id, {
                'created_at': then, 'launched_at': then})

    def db_instance(self, server_id):
        ctx = nova_context.get_admin_context(read_deleted='yes')
        with nova_context.target_cell(
                ctx, self.cell_mappings['cell1']) as cctxt:
            inst = objects.Instance.get_by_uuid(
                cctxt, server_id, expected_attrs=['metadata', 'tags'])
            inst.fault = objects.InstanceFault.get_latest_for_instance(
                cctxt, server_id)
            return inst

    def fill_with_preemptibles(self, host, flavor, runtimes):
        """Boot one preemptible server per runtime (seconds) on ``host``."""
        servers = []
        for i, runtime in enumerate(runtimes):
            server = self.boot(flavor + '.preemptible', host=host,
                               name='%s-p%d' % (host, i))
            self.set_runtime(server['id'], runtime)
            servers.append(server)
        return servers

    def preempt_notifications(self):
        return [n for n in self.notifier.versioned_notifications
                if n['event_type'] == actions.EVENT_TYPE]


class PreemptionTest(base.OpieNovaTestCase, _Helpers):
    HOSTS = ('host1',)

    def test_preemptible_request_on_full_host_gets_no_valid_host(self):
        self.fill_with_preemptibles('host1', 'large', [100, 200])
        server = self.boot('small.preemptible', expected='ERROR')
        self.assertIn('No valid host', server['fault']['message'])
        # Nothing was preempted for a preemptible request.
        self.assertEqual(3, len(self.api.get_servers(detail=False)))
        self.assertEqual([], self.preempt_notifications())

    def test_normal_request_preempts_cheapest_under_billing_period(self):
        # runtime mod 3600 s: 3000 -> 3000, 4000 -> 400, 7100 -> 3500,
        # 1000 -> 1000. A large normal server (4 vCPU) needs two mediums:
        # the cheapest pair is 400 + 1000.
        start = time.monotonic()
        p = self.fill_with_preemptibles('host1', 'medium',
                                        [3000, 4000, 7100, 1000])
        normal = self.boot('large', name='normal')
        # each victim aged by at most this much before the decision
        aged = time.monotonic() - start
        self.assertEqual('host1', self.server_host(normal))

        alive = self.live_uuids()
        self.assertEqual({p[0]['id'], p[2]['id'], normal['id']}, alive)
        [create] = self.api.get_instance_actions(normal['id'])
        decision = set()
        for victim in (p[1], p[3]):
            self.assertTrue(self.db_instance(victim['id']).deleted)
            # The owner's "server event list" shows the preemption under a
            # request id of its own, never the preemptor's request.
            by_name = {a['action']: a for a in
                       self.api.get_instance_actions(victim['id'])}
            self.assertEqual({'create', 'delete', actions.PREEMPT_ACTION},
                             set(by_name))
            self.assertNotEqual(create['request_id'],
                                by_name[actions.PREEMPT_ACTION]['request_id'])
            self.assertEqual(by_name['delete']['request_id'],
                             by_name[actions.PREEMPT_ACTION]['request_id'])
            decision.add(by_name[actions.PREEMPT_ACTION]['request_id'])
        # one decision, one request id of its own
        self.assertEqual(1, len(decision))

        usages = self.usages('host1')
        self.assertEqual(4, usages['VCPU'])
        self.assertEqual(8000, usages['MEMORY_MB'])
        self.assertEqual(80, usages['DISK_GB'])
        self.assertEqual(4, usages['CUSTOM_PREEMPTIBLE_VCPU'])
        self.assertEqual(8000, usages['CUSTOM_PREEMPTIBLE_MEMORY_MB'])
        self.assertEqual(80, usages['CUSTOM_PREEMPTIBLE_DISK_GB'])

        [note] = self.preempt_notifications()
        data = notes.from_primitive(note['payload'])
        self.assertEqual(normal['id'], data.preemptor_uuid)
        self.assertEqual({p[1]['id'], p[3]['id']},
                         {v.uuid for v in data.victims})
        # 400 + 1000, plus the seconds both victims aged meanwhile (a
        # loaded machine can take more than a few seconds)
        self.assertGreaterEqual(data.total_cost, 1400 - 1)
        self.assertLessEqual(data.total_cost, 1400 + 2 * aged + 1)

    def test_unsatisfiable_normal_request_fails_and_kills_nothing(self):
        self.flavor_ids['xlarge'] = self._create_flavor(
            name='xlarge', vcpu=8, memory_mb=16000, disk=160)
        normal = self.boot('large', name='normal')
        p = self.fill_with_preemptibles('host1', 'medium', [10, 20])
        # The normal state has 4 vCPU free: an 8 vCPU normal request
        # cannot be satisfied by any preemption.
        server = self.boot('xlarge', expected='ERROR')
        self.assertIn('No valid host', server['fault']['message'])
        self.assertEqual({normal['id'], p[0]['id'], p[1]['id'],
                          server['id']}, self.live_uuids())
        self.assertEqual([], self.preempt_notifications())

    def test_reconciler_is_idempotent_when_nothing_to_do(self):
        self.fill_with_preemptibles('host1', 'large', [10])
        self.assertEqual([], reconciler.Reconciler().run_once())


class MultiCreateTest(base.OpieNovaTestCase, _Helpers):
    HOSTS = ('host1', 'host2')

    def test_multi_create_preempts_on_several_hosts(self):
        # Costs (billing period): host1 large 1000 s and 3000 s, host2
        # large 500 s and 2000 s. Two normal large servers need two
        # victims; the cheapest two are host2's 500 and host1's 1000.
        p1 = self.fill_with_preemptibles('host1', 'large', [1000, 3000])
        p2 = self.fill_with_preemptibles('host2', 'large', [500, 2000])
        req = self._build_server(flavor_id=self.flavor_ids['large'],
                                 networks='none')
        req['min_count'] = 2
        req['max_count'] = 2
        req['return_reservation_id'] = True
        self.api.post_server({'server': req})
        servers = [s for s in self.api.get_servers()
                   if s['flavor']['original_name'] == 'large']
        self.assertEqual(2, len(servers))
        for s in servers:
            # two preemptions then two builds: slow on a loaded machine
            self._wait_for_state_change(s, 'ACTIVE', max_retries=120)
        self.assertEqual({'host1', 'host2'},
                         {self.server_host(s) for s in servers})
        alive = self.live_uuids()
        self.assertNotIn(p1[0]['id'], alive)
        self.assertNotIn(p2[0]['id'], alive)
        self.assertIn(p1[1]['id'], alive)
        self.assertIn(p2[1]['id'], alive)
        for host in ('host1', 'host2'):
            usages = self.usages(host)
            self.assertLessEqual(
                usages['VCPU'] + usages['CUSTOM_PREEMPTIBLE_VCPU'], 8)


class GracefulPreemptionTest(base.OpieNovaTestCase, _Helpers):
    HOSTS = ('host1',)
    EXTRA_FLAGS = {'opie_preemption': {'action': 'stop',
                                       'stop_grace_period': 1,
                                       'poll_interval': 0.1}}

    def test_victim_is_stopped_then_deleted_before_normal_starts(self):
        p = self.fill_with_preemptibles('host1', 'large', [1000, 2000])
        normal = self.boot('large', name='normal')
        victim = self.db_instance(p[0]['id'])
        self.assertTrue(victim.deleted)
        actions_ = self.api.get_instance_actions(p[0]['id'])
        self.assertEqual(['create', 'delete', actions.PREEMPT_ACTION, 'stop'],
                         sorted(a['action'] for a in actions_))
        by_name = {a['action']: a for a in actions_}
        self.assertLessEqual(by_name[actions.PREEMPT_ACTION]['start_time'],
                             by_name['stop']['start_time'])
        self.assertLess(by_name['stop']['start_time'],
                        by_name['delete']['start_time'])
        # The normal server started only after its victim was gone.
        started = self.db_instance(normal['id']).launched_at
        self.assertGreaterEqual(started, victim.deleted_at)
        self.assertIn(p[1]['id'], self.live_uuids())


class NoticeTest(base.OpieNovaTestCase, _Helpers):
    """The guest of a scheduler victim reads the preemption notice and its
    deadline in meta_data.json (nova's metadata code) before it stops.
    """
    HOSTS = ('host1',)
    NOTICE = 2
    EXTRA_FLAGS = {'opie_preemption': {'action': 'stop',
                                       'notice_seconds': NOTICE,
                                       'stop_grace_period': 1,
                                       'poll_interval': 0.1}}

    def test_guest_reads_notice_before_its_stop(self):
        p = self.fill_with_preemptibles('host1', 'large', [1000, 2000])
        seen = {}
        real_stop = compute_api.API.stop

        def stop(api, ctxt, instance, *args, **kwargs):
            # what the guest reads when its shutdown begins
            seen[instance.uuid] = (time.time(), instance.vm_state,
                                   self.guest_metadata(instance.uuid))
            return real_stop(api, ctxt, instance, *args, **kwargs)

        self.useFixture(fixtures.MonkeyPatch(
            'nova.compute.api.API.stop', stop))
        start = time.time()
        normal = self.api.post_server({'server': self._build_server(
            name='normal', flavor_id=self.flavor_ids['large'],
            networks='none')})
        # notice, stop, grace, delete, then the build
        normal = self._wait_for_state_change(normal, 'ACTIVE',
                                             max_retries=120)
        took = time.time() - start
        self.assertEqual([p[0]['id']], list(seen))
        stopped_at, vm_state, meta = seen[p[0]['id']]
        self.assertEqual('active', vm_state)
        meta = meta['meta']
        deadline = datetime.datetime.strptime(
            meta[victim_state.DEADLINE_KEY], '%Y-%m-%dT%H:%M:%SZ').replace(
                tzinfo=datetime.timezone.utc).timestamp()
        self.assertEqual(
            'preemption at %s (stop): preempted by the scheduler'
            % meta[victim_state.DEADLINE_KEY], meta[victim_state.NOTICE_KEY])
        # never stopped before its deadline, which was NOTICE s after the
        # notice appeared (to the second)
        self.assertGreaterEqual(stopped_at, deadline)
        noticed_at = self.notice_time(p[0]['id'])
        # the deadline is the notice's time plus NOTICE s, truncated to the
        # second: compared in whole seconds, so the write's own delay (up
        # to a second on a loaded machine) does not count against it
        self.assertGreaterEqual(deadline - math.floor(noticed_at),
                                self.NOTICE - 1)
        self.assertGreaterEqual(stopped_at - noticed_at, self.NOTICE)
        self.assertEqual('host1', self.server_host(normal))
        self.assertNotIn(p[0]['id'], self.live_uuids())
        # the other preemptible server got no notice
        self.assertNotIn(victim_state.NOTICE_KEY,
                         self.guest_metadata(p[1]['id']).get('meta', {}))
        # the request waited for the notice (what it costs)
        self.assertGreaterEqual(took, self.NOTICE)

    def notice_time(self, uuid):
        """When the notice row was written (epoch seconds)."""
        ctx = nova_context.get_admin_context(read_deleted='yes')
        with nova_context.target_cell(
                ctx, self.cell_mappings['cell1']) as cctxt:
            with main_db.get_context_manager(cctxt).reader.using(
                    cctxt) as session:
                row = session.execute(sa.select(models.InstanceMetadata).where(
                    models.InstanceMetadata.instance_uuid == uuid,
                    models.InstanceMetadata.key == victim_state.NOTICE_KEY)
                ).scalars().first()
            return row.created_at.replace(
                tzinfo=datetime.timezone.utc).timestamp()


class ReconcilerTest(base.OpieNovaTestCase, _Helpers):
    """An overcommit made behind the opie scheduler's back (stock nova
    scheduler, as if opie-scheduler had died after the claim).
    """

    HOSTS = ('host1',)
    SCHEDULER_MANAGER = base.NOVA_MANAGER

    def test_reconciler_repairs_overcommit(self):
        p = self.fill_with_preemptibles('host1', 'large', [3000, 4000])
        normal = self.boot('large', name='normal')
        # Stock nova admitted it on the normal state: the host is now
        # overcommitted in its full state and nobody was preempted.
        self.assertEqual({p[0]['id'], p[1]['id'], normal['id']},
                         self.live_uuids())
        rec = reconciler.Reconciler()
        [plan] = rec.plan(nova_context.get_admin_context())
        self.assertEqual([p[1]['id']],
                         [inst.uuid for inst, _ in plan[1].victims])
        acted = rec.run_once()
        self.assertEqual(1, len(acted))
        self._wait_until_deleted(p[1])
        self.assertEqual({p[0]['id'], normal['id']}, self.live_uuids())
        self.assertIn(actions.PREEMPT_ACTION,
                      [a['action'] for a in
                       self.api.get_instance_actions(p[1]['id'])])
        # Idempotent: a second round finds nothing to do.
        self.assertEqual([], rec.run_once())


class ProportionalShareTest(base.OpieNovaTestCase, _Helpers):
    """Themis §III.B on the real scheduler: a preemptible request goes
    where the bids already placed add up to the least.
    """

    HOSTS = ('host1', 'host2')
    EXTRA_FLAGS = {'filter_scheduler': {'weight_classes': [
        'opie_sched.scheduler.weights.all_weighers',
        'opie_sched.scheduler.weights.proportional_share.'
        'ProportionalShareWeigher']}}

    def boot_with_bid(self, name, bid):
        server = self._build_server(
            name=name, flavor_id=self.flavor_ids['small.preemptible'],
            networks='none')
        server['metadata'] = {'opie:bid': bid}
        server = self.api.post_server({'server': server, 'os:scheduler_hints':
                                       {'opie_bid': bid}})
        return self.server_host(self._wait_for_state_change(server,
                                                            'ACTIVE'))

    def test_worst_fit_by_sum_of_bids(self):
        first = self.boot_with_bid('rich', '0.50')
        other = ({'host1', 'host2'} - {first}).pop()
        # 0.1 / (0 + 0.1) on the empty host beats 0.1 / (0.5 + 0.1).
        self.assertEqual(other, self.boot_with_bid('poor-1', '0.10'))
        # Now 0.5 vs 0.1 are placed: the small bidder joins the 0.1 host.
        self.assertEqual(other, self.boot_with_bid('poor-2', '0.10'))
        # A bid of 0.6 buys 0.6/1.1 beside the 0.5 host and 0.6/0.8 beside
        # the two 0.1 bidders: it goes there too.
        self.assertEqual(other, self.boot_with_bid('big', '0.60'))
        # 0.5 vs 0.8: the next one goes to the first host.
        self.assertEqual(first, self.boot_with_bid('poor-3', '0.10'))
