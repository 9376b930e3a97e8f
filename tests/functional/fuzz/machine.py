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
"""The rule-based state machine of the invariant fuzzer (issue 30).

Owners (two projects) and the system act on one in-process Nova with two
opie scheduler services; the machine keeps its own model of what each
owner asked for (each server's owner, its flavor, the owner's pending
move and the flavor it began from, how long it has been preemptible) and
checks, after every step:

* **ownership**: opie never stops, shelves or deletes a server that is
  normal now, was normal when its owner's pending move began (or moves to
  a normal flavor), is being moved by its owner, or is the preemptor of
  the decision; a lifetime kill only of a server preemptible for its
  flavor's ``opie:max_lifetime`` (judged when the call is made,
  :mod:`.recorder`);
* **exact decisions**: every ``planner.plan_host`` decision costs exactly
  the brute-force minimum over its candidates (:mod:`.oracle`), and every
  candidate it offered is one the model says may be a victim;
* **owners see only their own** servers;
* after the ``converge`` step (faults healed, reconciler rounds until
  stable, bounded): no host over capacity by Placement usage (standard
  plus ``CUSTOM_PREEMPTIBLE_*`` against the provider's capacity) nor by
  its servers' flavors, no server left in ``deleting``, no victim record
  past its ``next_attempt``. Every example ends with that step.

A rule that Nova refuses in the current state (4xx) is a no-op step.
"""

import collections
import datetime
import functools
import os
import threading
import time
import uuid as uuid_mod

from hypothesis import stateful
from hypothesis import strategies as st
from oslo_utils import timeutils

from nova import context as nova_context
from nova.db.main import api as main_db
from nova import exception
from nova import objects
from nova.tests.functional.api import client as api_client

from opie_sched.common import flavors
from opie_sched.preemption import victim_state as vs
from opie_sched.scheduler import reconciler
from tests.functional.fuzz import oracle

NORMAL = ('small', 'medium', 'large')
PREEMPTIBLE = ('small.preemptible', 'medium.preemptible',
               'large.preemptible', 'short.preemptible',
               'shelving.preemptible', 'stopping.preemptible')
FLAVORS = NORMAL + PREEMPTIBLE
#: ``opie:max_lifetime`` of ``short.preemptible``, seconds.
SHORT_LIFETIME = 86400
OWNERS = ('a', 'b')
#: Statuses a server settles in (no step of its own in progress).
SETTLED = frozenset(['ACTIVE', 'SHUTOFF', 'ERROR', 'VERIFY_RESIZE',
                     'SHELVED', 'SHELVED_OFFLOADED', 'SOFT_DELETED',
                     'RESCUE', 'PAUSED', 'SUSPENDED'])
#: Statuses of a server that holds room on its host.
HOLDING = frozenset(['ACTIVE', 'SHUTOFF', 'SOFT_DELETED', 'RESCUE',
                     'PAUSED', 'SUSPENDED', 'SHELVED'])
#: Seconds a step waits for its server to settle.
SETTLE_TIMEOUT = float(os.environ.get('OPIE_FUZZ_SETTLE', '45'))


def is_preemptible(flavor):
    return flavor.endswith('.preemptible')


class Server:
    """What the model knows of one server: what its owner asked for."""

    def __init__(self, uuid, owner, flavor):
        self.uuid = uuid
        self.owner = owner
        self.flavor = flavor
        #: (flavor when the move began, flavor it moves to) while the
        #: owner's resize or migration is unconfirmed
        self.pending = None
        #: a move of its owner in flight (not yet VERIFY_RESIZE)
        self.moving = False
        #: seconds of model time it has been preemptible (clock jumps
        #: included), counted from ``since``
        self.pre_age = 0.0
        self.since = time.monotonic()
        self.status = 'BUILD'
        self.host = None
        self.task_state = None
        self.locked = False
        #: when it was seen settled after its boot (aware UTC): decisions
        #: made before could not see it
        self.ready_at = None
        #: booted from a volume: holds no local disk
        self.bfv = False
        #: when the owner's pending move began (monotonic) and the clock
        #: jumps since (a resize to a preemptible flavor starts the
        #: preemptible life when it begins: the migration's creation)
        self.pending_since = None
        self.pending_aged = 0.0

    def begin_move(self, old, new):
        self.pending, self.moving = (old, new), True
        self.pending_since, self.pending_aged = time.monotonic(), 0.0

    def preemptible_age(self):
        return self.pre_age + time.monotonic() - self.since

    def start_preemptible_clock(self):
        """Preemptible since its pending move began (what the reconciler
        reads: the resize migration's ``created_at``).
        """
        self.pre_age = self.pending_aged
        self.since = self.pending_since or time.monotonic()

    def protection(self, preemptor):
        """Why opie may not stop, shelve or delete this server, or None."""
        if preemptor == self.uuid:
            return 'it is the preemptor of its own decision'
        if not is_preemptible(self.flavor):
            return 'it is normal (%s)' % self.flavor
        if self.pending is not None and not (
                is_preemptible(self.pending[0])
                and is_preemptible(self.pending[1])):
            return ('its owner\'s pending move %s -> %s involves a normal '
                    'flavor' % self.pending)
        if self.moving:
            return 'its owner is moving it'
        if self.pending is not None:
            return ('its owner\'s move %s -> %s awaits confirmation or '
                    'revert' % self.pending)
        if (preemptor == vs.CAUSE_LIFETIME and self.flavor ==
                'short.preemptible'
                and self.preemptible_age() < SHORT_LIFETIME - 60):
            return ('max-lifetime after %.0f s preemptible (limit %d s)'
                    % (self.preemptible_age(), SHORT_LIFETIME))
        return None

    def __repr__(self):
        return '<%s %s %s %s%s>' % (self.uuid[:8], self.owner, self.flavor,
                                    self.status,
                                    ' pending %s->%s' % self.pending
                                    if self.pending else '')


class Cloud:
    """The test case's cloud as the machine drives it (set up once per
    test; each example starts from :meth:`reset`).

    :param case: the running ``OpieNovaTestCase`` (two hosts, two
        scheduler services, the recorder installed).
    """

    def __init__(self, case, recorder):
        self.case = case
        self.recorder = recorder
        self.admin = case.api
        owner_a = case.api_fixture.api
        owner_a.microversion = 'latest'
        owner_b = api_client.TestOpenStackClient(
            'fuzz-b', case.api.base_url,
            project_id='fuzz-project-b', roles=['reader', 'member'])
        owner_b.microversion = 'latest'
        self.owners = {'a': owner_a, 'b': owner_b}
        self.servers = {}
        self.order = []
        self.hang = threading.Event()
        self.hung = threading.Event()
        #: the compute services drop the deletes they receive (the
        #: instance stays in task state ``deleting``)
        self.lose_compute_deletes = False
        #: builds the computes fail (each a spawn error: the compute
        #: reschedules the server to an alternate)
        self.fail_builds = 0
        #: the server a step acts on (its host may be changing)
        self.acting = None
        #: what the fuzzer did: examples, steps per rule, opie's
        #: destructive calls, decisions and those the oracle enumerated
        self.stats = collections.Counter()

    def count(self, calls, decisions):
        self.stats['invariant checks'] += 1
        self.stats['opie destructive calls'] += len(calls)
        self.stats['decisions'] += len(decisions)
        self.stats['decisions preempting'] += sum(
            1 for d in decisions if d[4].needs_preemption)

    # -- reading the cloud --------------------------------------------------

    def listing(self):
        return self.admin.api_get(
            '/servers/detail?all_tenants=1').body['servers']

    def sync(self):
        """The model's statuses and hosts from the API; servers gone from
        it are dropped.
        """
        seen = {s['id']: s for s in self.listing()}
        for uuid in list(self.order):
            srv = self.servers[uuid]
            found = seen.get(uuid)
            if found is None:
                self.order.remove(uuid)
                del self.servers[uuid]
                continue
            srv.status = found['status']
            srv.host = found.get('OS-EXT-SRV-ATTR:host')
            srv.task_state = found.get('OS-EXT-STS:task_state')
        return seen

    def settle(self, uuids=None, timeout=SETTLE_TIMEOUT):
        """Wait until the given servers (default: all) have no task in
        progress; True when they all did within ``timeout``.
        """
        deadline = time.monotonic() + timeout
        while True:
            seen = {s['id']: s for s in self.listing()}
            busy = [u for u in (uuids if uuids is not None else seen)
                    if u in seen and (
                        seen[u]['status'] not in SETTLED
                        or seen[u].get('OS-EXT-STS:task_state'))]
            if not busy or time.monotonic() > deadline:
                self.sync()
                return not busy
            time.sleep(0.25)

    def live(self):
        return [self.servers[u] for u in self.order]

    def has(self, statuses):
        """True when a server of the model has one of ``statuses``."""
        return any(s.status in statuses for s in self.live())

    def pick(self, index, where=None):
        cands = [s for s in self.live() if where is None or where(s)]
        if not cands:
            return None
        srv = cands[index % len(cands)]
        self.acting = srv.uuid
        return srv

    # -- acting -------------------------------------------------------------

    def call(self, fn, *args):
        """One API call; a 4xx refusal is None (a no-op step)."""
        try:
            return fn(*args)
        except api_client.OpenStackApiException as exc:
            status = getattr(exc.response, 'status_code', 0)
            if status and 400 <= status < 500:
                return None
            raise

    def action(self, srv, body, api=None):
        """POST a server action; True when Nova accepted it."""
        api = api or self.owners[srv.owner]
        try:
            api.post_server_action(srv.uuid, body)
            return True
        except api_client.OpenStackApiException as exc:
            status = getattr(exc.response, 'status_code', 0)
            if status and 400 <= status < 500:
                return False
            raise

    def boot(self, owner, flavor, count=1, bfv=False, group=None):
        """Boot ``count`` servers (one request); ``bfv``: from a new
        volume (no image, no local disk); ``group``: a server group's id
        (its policy as a scheduler hint). The new servers' uuids.
        """
        req = self.case._build_server(
            name='fuzz-%s' % flavor, flavor_id=self.case.flavor_ids[flavor],
            networks='none', image_uuid='' if bfv else None)
        if bfv:
            req['block_device_mapping_v2'] = [{
                'boot_index': 0, 'uuid': str(uuid_mod.uuid4()),
                'source_type': 'volume', 'destination_type': 'volume'}]
        if count > 1:
            req['min_count'] = req['max_count'] = count
            req['return_reservation_id'] = True
        body = {'server': req}
        if group:
            body['os:scheduler_hints'] = {'group': group}
        api = self.owners[owner]
        before = {s['id'] for s in self.listing()}
        result = self.call(api.post_server, body)
        if result is None:
            return []
        new = [s['id'] for s in self.listing() if s['id'] not in before] \
            if count > 1 else [result['id']]
        for uuid in new:
            self.servers[uuid] = Server(uuid, owner, flavor)
            self.servers[uuid].bfv = bfv
            self.order.append(uuid)
        self.settle(new)
        ready = timeutils.utcnow(with_timezone=True)
        for uuid in new:
            if uuid in self.servers:
                self.servers[uuid].ready_at = ready
        return new

    def server_group(self, owner, policy):
        """A new server group of ``owner`` with ``policy``; its id, or
        None when Nova refuses it (quota).
        """
        found = self.call(self.owners[owner].post_server_groups, {
            'name': 'fuzz-%s' % policy, 'policy': policy})
        return found and found['id']

    def evacuate(self, srv):
        """The operator evacuates ``srv``'s host: its compute service is
        forced down, ``srv`` evacuated (the scheduler picks the
        destination), then the compute restarts (destroying what was
        evacuated from it, freeing the source allocation) and comes back.
        True when Nova accepted the evacuation.
        """
        case, host = self.case, srv.host
        [service] = self.admin.get_services(binary='nova-compute',
                                            host=host)
        self.admin.put_service_force_down(service['id'], True)
        try:
            ok = self.action(srv, {'evacuate': {}}, api=self.admin)
            if ok:
                self.settle([srv.uuid])
        finally:
            case.computes[host] = case.restart_compute_service(
                case.computes[host])
            self.admin.put_service_force_down(service['id'], False)
        return ok

    def age_all(self, seconds):
        """A clock jump: every server (and every model clock) ``seconds``
        older.
        """
        for srv in self.live():
            self.age(srv.uuid, seconds)

    def age(self, uuid, seconds):
        """One server ``seconds`` older (created and launched)."""
        ctx = nova_context.get_admin_context()
        with nova_context.target_cell(
                ctx, self.case.cell_mappings['cell1']) as cctxt:
            try:
                inst = objects.Instance.get_by_uuid(cctxt, uuid)
            except exception.InstanceNotFound:
                # never scheduled (in cell0) or gone
                return
            changes = {}
            for field in ('created_at', 'launched_at'):
                value = getattr(inst, field)
                if value is not None:
                    changes[field] = (value.replace(tzinfo=None)
                                      - datetime.timedelta(seconds=seconds))
            if changes:
                main_db.instance_update(cctxt, uuid, changes)
            # the resize that made it preemptible is as much older
            for mig in objects.MigrationList.get_by_filters(
                    cctxt, {'instance_uuid': uuid}):
                main_db.migration_update(cctxt, mig.id, {
                    'created_at': mig.created_at.replace(tzinfo=None)
                    - datetime.timedelta(seconds=seconds)})
        srv = self.servers[uuid]
        srv.pre_age += seconds
        if srv.pending is not None:
            srv.pending_aged += seconds

    def heal(self):
        """Every injected fault ends: the compute services answer again."""
        self.recorder.faults = {}
        self.lose_compute_deletes = False
        self.fail_builds = 0
        self.hang.clear()
        self.hung.set()

    def reset(self):
        """Back to an empty cloud for the next example."""
        self.heal()
        self.recorder.reset()
        for _ in range(3):
            self.settle(timeout=30)
            servers = self.listing()
            if not servers:
                break
            for s in servers:
                if s.get('locked'):
                    self.call(self.admin.post_server_action, s['id'],
                              {'unlock': None})
                if s['status'] == 'SOFT_DELETED':
                    self.call(self.admin.post_server_action, s['id'],
                              {'forceDelete': None})
                else:
                    self.call(self.admin.delete_server, s['id'])
            deadline = time.monotonic() + 60
            while self.listing() and time.monotonic() < deadline:
                time.sleep(0.25)
        for owner in OWNERS:
            for group in self.owners[owner].get_server_groups():
                self.call(self.owners[owner].delete_server_group,
                          group['id'])
        self.servers.clear()
        del self.order[:]
        self.recorder.reset()
        self.hung.clear()

    # -- the system's judgement ---------------------------------------------

    def clear_acting(self):
        self.acting = None

    def judge_destroy(self, verb, uuid, preemptor):
        srv = self.servers.get(uuid)
        if srv is None:
            return None
        why = srv.protection(preemptor)
        if why:
            return ('opie %s %s (preemptor %s) although %s'
                    % (verb, srv, preemptor, why))
        return None

    def candidate_problems(self, decisions):
        """Candidates a decision offered that the model says may not be
        victims.
        """
        problems = []
        for hv, request, policy, now, plan in decisions:
            for inst in hv.instances:
                if not inst.preemptible or inst.leaving:
                    continue
                srv = self.servers.get(inst.uuid)
                if srv is None:
                    continue
                why = srv.protection(None)
                if why and 'lifetime' not in why:
                    problems.append('host %s offered %s as a candidate '
                                    'although %s' % (hv.name, srv, why))
            if plan.needs_preemption:
                present = {i.uuid for i in hv.instances}
                if now.tzinfo is None:
                    now = now.replace(tzinfo=datetime.timezone.utc)
                for srv in self.live():
                    if (srv.host == hv.name and srv.uuid not in present
                            and srv.uuid != self.acting
                            # booted after the decision (its own boot's,
                            # or an earlier one of the same step)
                            and srv.ready_at is not None
                            and srv.ready_at <= now
                            and srv.status in HOLDING
                            and not srv.task_state
                            and srv.protection(None) is None):
                        problems.append(
                            'host %s: %s holds room there and may be a '
                            'victim, but the decision did not see it'
                            % (hv.name, srv))
            problems.extend(oracle.check_decision(hv, request, policy, now,
                                                  plan))
        return problems

    def capacity_problems(self):
        """Hosts over capacity (Placement usage, and the servers' flavors
        on them), servers left deleting, victim records past due.
        """
        problems = []
        case = self.case
        for host in case.HOSTS:
            rp = case._get_provider_uuid_by_host(host)
            inv = case.placement.get(
                '/resource_providers/%s/inventories' % rp
            ).body['inventories']
            used = case._get_provider_usages(rp)
            for std, pre in flavors.CLASS_MAP.items():
                i = inv[std]
                cap = (i['total'] - i['reserved']) * i['allocation_ratio']
                total = used.get(std, 0) + used.get(pre, 0)
                if total > cap:
                    problems.append('host %s over capacity by Placement: '
                                    '%s + %s = %s > %s' % (
                                        host, std, pre, total, cap))
            held = [0, 0, 0]
            for srv in self.live():
                if srv.host != host or srv.status in (
                        'SHELVED_OFFLOADED', 'ERROR'):
                    continue
                vcpus, ram, disk = case.PAPER_SIZES[srv.flavor]
                held[0] += vcpus
                held[1] += ram
                held[2] += 0 if srv.bfv else disk
            if any(h > c for h, c in zip(held, case.HOST_SIZE)):
                problems.append('host %s over capacity by its servers: %s > '
                                '%s (%s)' % (host, held, case.HOST_SIZE,
                                             [s for s in self.live()
                                              if s.host == host]))
        now = timeutils.utcnow(with_timezone=True)
        ctx = nova_context.get_admin_context()
        with nova_context.target_cell(
                ctx, case.cell_mappings['cell1']) as cctxt:
            for srv in self.live():
                meta = main_db.instance_system_metadata_get(cctxt, srv.uuid)
                state = vs.VictimState.from_metadata(meta)
                if srv.task_state == 'deleting' and state is not None:
                    problems.append('victim %s (%s) still deleting after '
                                    'convergence' % (srv, state.state))
                if (srv.flavor == 'short.preemptible' and srv.pending is None
                        and srv.status in HOLDING
                        and srv.preemptible_age() > SHORT_LIFETIME + 600):
                    problems.append('%s outlived its max_lifetime (%.0f s '
                                    'preemptible)' % (
                                        srv, srv.preemptible_age()))
                if (state is not None and state.state == vs.TERMINATING
                        and state.next_attempt is not None
                        and state.next_attempt < now - datetime.timedelta(
                            seconds=5)):
                    problems.append('%s leaving past its deadline %s'
                                    % (srv, state.next_attempt))
        return problems

    def converge(self, rounds=6):
        """Faults healed, then reconciler rounds until one acts on nothing
        and no termination is pending (bounded); the capacity problems
        left.
        """
        self.heal()
        self.settle(timeout=30)
        rec = reconciler.Reconciler()
        for _ in range(rounds):
            acted = rec.run_once()
            self.settle(timeout=30)
            pending = self._terminating()
            if not acted and not pending:
                break
            time.sleep(1.2)
        return self.capacity_problems()

    def _terminating(self):
        ctx = nova_context.get_admin_context()
        found = []
        with nova_context.target_cell(
                ctx, self.case.cell_mappings['cell1']) as cctxt:
            for srv in self.live():
                meta = main_db.instance_system_metadata_get(cctxt, srv.uuid)
                state = vs.VictimState.from_metadata(meta)
                if state is not None and state.state == vs.TERMINATING:
                    found.append(srv.uuid)
        return found

    def owner_problems(self):
        problems = []
        for owner, api in self.owners.items():
            for s in api.api_get('/servers').body['servers']:
                srv = self.servers.get(s['id'])
                if srv is not None and srv.owner != owner:
                    problems.append('owner %s sees %s' % (owner, srv))
        return problems


servers_idx = st.integers(min_value=0, max_value=63)


def counted(fn):
    """Count each run of a rule in its machine's ``cloud.stats``."""
    @functools.wraps(fn)
    def rule(self, *args, **kwargs):
        self.cloud.stats['rule ' + fn.__name__] += 1
        return fn(self, *args, **kwargs)
    return rule


def make_machine(cloud, excluded=()):
    """A state machine class bound to ``cloud``; rules named in
    ``excluded`` are left out (their preconditions are false).
    """

    def when(name, statuses=None):
        """Rule ``name`` runs unless excluded, and only when a server
        has one of ``statuses`` (None: always). These preconditions read
        the cloud: hypothesis may raise ``FlakyStrategyDefinition`` when
        it replays a prefix whose statuses differ (timing); seen once in
        a power run, counted there as no finding.
        """
        return stateful.precondition(
            lambda self: name not in excluded and (
                statuses is None or self.cloud.has(statuses)))

    class InvariantMachine(stateful.RuleBasedStateMachine):

        def __init__(self):
            super().__init__()
            self.cloud = cloud
            cloud.reset()
            cloud.recorder.check = cloud.judge_destroy
            cloud.stats['examples'] += 1

        # -- owners -----------------------------------------------------

        @stateful.initialize(servers=st.lists(
            st.tuples(st.sampled_from(OWNERS), st.sampled_from(FLAVORS),
                      st.one_of(st.integers(min_value=0, max_value=7200),
                                st.integers(min_value=SHORT_LIFETIME,
                                            max_value=2 * SHORT_LIFETIME))),
            min_size=2, max_size=6))
        def fill(self, servers):
            """The cloud's first servers, each ``age`` seconds old (their
            preemption costs differ; some older than ``short.preemptible``'s
            lifetime, normal servers that a resize may make preemptible).
            """
            for owner, flavor, age in servers:
                for uuid in self.cloud.boot(owner, flavor):
                    self.cloud.age(uuid, age)

        @when('boot')
        @stateful.rule(owner=st.sampled_from(OWNERS),
                       flavor=st.sampled_from(FLAVORS))
        @counted
        def boot(self, owner, flavor):
            if len(self.cloud.order) < 12:
                self.cloud.boot(owner, flavor)

        @when('boot_normal')
        @stateful.rule(owner=st.sampled_from(OWNERS),
                       flavor=st.sampled_from(NORMAL))
        @counted
        def boot_normal(self, owner, flavor):
            if len(self.cloud.order) < 12:
                self.cloud.boot(owner, flavor)

        @when('multi_create')
        @stateful.rule(owner=st.sampled_from(OWNERS),
                       flavor=st.sampled_from(FLAVORS))
        @counted
        def multi_create(self, owner, flavor):
            if len(self.cloud.order) < 11:
                self.cloud.boot(owner, flavor, count=2)

        @when('boot_from_volume')
        @stateful.rule(owner=st.sampled_from(OWNERS),
                       flavor=st.sampled_from(FLAVORS))
        @counted
        def boot_from_volume(self, owner, flavor):
            if len(self.cloud.order) < 12:
                self.cloud.boot(owner, flavor, bfv=True)

        @when('server_group')
        @stateful.rule(owner=st.sampled_from(OWNERS),
                       flavor=st.sampled_from(FLAVORS),
                       policy=st.sampled_from(['affinity', 'anti-affinity']))
        @counted
        def server_group(self, owner, flavor, policy):
            """Two servers in one request, in a new group of ``policy``."""
            if len(self.cloud.order) < 11:
                group = self.cloud.server_group(owner, policy)
                if group:
                    self.cloud.boot(owner, flavor, count=2, group=group)

        @when('boot_rescheduled')
        @stateful.rule(owner=st.sampled_from(OWNERS),
                       flavor=st.sampled_from(FLAVORS))
        @counted
        def boot_rescheduled(self, owner, flavor):
            """A boot whose first host fails the build: the conductor
            claims an alternate without the scheduler.
            """
            if len(self.cloud.order) < 12:
                self.cloud.fail_builds = 1
                try:
                    self.cloud.boot(owner, flavor)
                finally:
                    self.cloud.fail_builds = 0

        def _resize(self, i, flavor):
            srv = self.cloud.pick(i, lambda s: s.status in ('ACTIVE',
                                                           'SHUTOFF'))
            if srv is None or flavor == srv.flavor:
                return
            srv.begin_move(srv.flavor, flavor)
            ok = self.cloud.action(srv, {'resize': {
                'flavorRef': self.cloud.case.flavor_ids[flavor]}})
            self._after_move(srv, ok)

        def _after_move(self, srv, ok):
            if ok:
                self.cloud.settle([srv.uuid])
            else:
                self.cloud.sync()
            srv.moving = False
            if srv.status != 'VERIFY_RESIZE':
                # refused or failed: back to what it was
                srv.pending = None
                found = self.cloud.admin.get_server(srv.uuid) \
                    if srv.uuid in self.cloud.servers else None
                if found is not None:
                    srv.flavor = found['flavor']['original_name']

        @when('resize', ('ACTIVE', 'SHUTOFF'))
        @stateful.rule(i=servers_idx, flavor=st.sampled_from(FLAVORS))
        @counted
        def resize(self, i, flavor):
            self._resize(i, flavor)

        @when('confirm', ('VERIFY_RESIZE',))
        @stateful.rule(i=servers_idx)
        @counted
        def confirm(self, i):
            srv = self.cloud.pick(i, lambda s: s.status == 'VERIFY_RESIZE')
            if srv is None:
                return
            if self.cloud.action(srv, {'confirmResize': None}):
                old, new = srv.pending
                srv.flavor = new
                srv.pending = None
                if is_preemptible(new) and not is_preemptible(old):
                    srv.start_preemptible_clock()
                self.cloud.settle([srv.uuid])

        @when('revert', ('VERIFY_RESIZE',))
        @stateful.rule(i=servers_idx)
        @counted
        def revert(self, i):
            srv = self.cloud.pick(i, lambda s: s.status == 'VERIFY_RESIZE')
            if srv is None:
                return
            if self.cloud.action(srv, {'revertResize': None}):
                # protected as its pending move until the revert is done
                self.cloud.settle([srv.uuid])
                srv.flavor = srv.pending[0]
                srv.pending = None

        @when('migrate', ('ACTIVE', 'SHUTOFF'))
        @stateful.rule(i=servers_idx)
        @counted
        def migrate(self, i):
            srv = self.cloud.pick(i, lambda s: s.status in ('ACTIVE',
                                                           'SHUTOFF'))
            if srv is None:
                return
            srv.begin_move(srv.flavor, srv.flavor)
            ok = self.cloud.action(srv, {'migrate': None},
                                   api=self.cloud.admin)
            self._after_move(srv, ok)

        @when('live_migrate', ('ACTIVE',))
        @stateful.rule(i=servers_idx)
        @counted
        def live_migrate(self, i):
            srv = self.cloud.pick(i, lambda s: s.status == 'ACTIVE')
            if srv is None:
                return
            srv.moving = True
            start = len(self.cloud.recorder.calls)
            if self.cloud.action(srv, {'os-migrateLive': {
                    'host': None, 'block_migration': 'auto'}},
                    api=self.cloud.admin):
                self.cloud.settle([srv.uuid])
            srv.moving = False
            killed = [c for c in self.cloud.recorder.calls[start:]
                      if c.preemptor == srv.uuid]
            assert not killed, ('the live migration of %s preempted %s'
                                % (srv, killed))

        @when('evacuate', ('ACTIVE', 'SHUTOFF'))
        @stateful.rule(i=servers_idx)
        @counted
        def evacuate(self, i):
            srv = self.cloud.pick(i, lambda s: s.status in (
                'ACTIVE', 'SHUTOFF') and s.host)
            if srv is None:
                return
            srv.moving = True
            start = len(self.cloud.recorder.calls)
            try:
                self.cloud.evacuate(srv)
            finally:
                srv.moving = False
            killed = [c for c in self.cloud.recorder.calls[start:]
                      if c.preemptor == srv.uuid]
            assert not killed, ('the evacuation of %s preempted %s'
                                % (srv, killed))

        def _simple(self, i, status, body, api=None):
            srv = self.cloud.pick(i, lambda s: s.status in status)
            if srv is not None and self.cloud.action(srv, body, api=api):
                self.cloud.settle([srv.uuid])
            return srv

        @when('shelve', ('ACTIVE', 'SHUTOFF'))
        @stateful.rule(i=servers_idx)
        @counted
        def shelve(self, i):
            self._simple(i, ('ACTIVE', 'SHUTOFF'), {'shelve': None})

        @when('unshelve', ('SHELVED', 'SHELVED_OFFLOADED'))
        @stateful.rule(i=servers_idx)
        @counted
        def unshelve(self, i):
            self._simple(i, ('SHELVED', 'SHELVED_OFFLOADED'),
                         {'unshelve': None})

        @when('rescue', ('ACTIVE', 'SHUTOFF'))
        @stateful.rule(i=servers_idx)
        @counted
        def rescue(self, i):
            self._simple(i, ('ACTIVE', 'SHUTOFF'), {'rescue': {}})

        @when('unrescue', ('RESCUE',))
        @stateful.rule(i=servers_idx)
        @counted
        def unrescue(self, i):
            self._simple(i, ('RESCUE',), {'unrescue': None})

        @when('stop', ('ACTIVE',))
        @stateful.rule(i=servers_idx)
        @counted
        def stop(self, i):
            self._simple(i, ('ACTIVE',), {'os-stop': None})

        @when('soft_delete', SETTLED - {'SOFT_DELETED'})
        @stateful.rule(i=servers_idx)
        @counted
        def soft_delete(self, i):
            srv = self.cloud.pick(i, lambda s: s.status != 'SOFT_DELETED')
            if srv is not None and self.cloud.call(
                    self.cloud.owners[srv.owner].delete_server,
                    srv.uuid) is not None:
                self.cloud.settle([srv.uuid])

        @when('restore', ('SOFT_DELETED',))
        @stateful.rule(i=servers_idx)
        @counted
        def restore(self, i):
            self._simple(i, ('SOFT_DELETED',), {'restore': None})

        @when('delete', SETTLED)
        @stateful.rule(i=servers_idx)
        @counted
        def delete(self, i):
            srv = self.cloud.pick(i)
            if srv is None:
                return
            if srv.status == 'SOFT_DELETED':
                self.cloud.action(srv, {'forceDelete': None})
            else:
                self.cloud.call(self.cloud.owners[srv.owner].delete_server,
                                srv.uuid)
            self.cloud.settle([srv.uuid])

        @when('lock', SETTLED)
        @stateful.rule(i=servers_idx)
        @counted
        def lock(self, i):
            srv = self.cloud.pick(i)
            if srv is not None and self.cloud.action(
                    srv, {'unlock' if srv.locked else 'lock': None}):
                srv.locked = not srv.locked

        # -- the system -------------------------------------------------

        @when('reconcile')
        @stateful.rule()
        @counted
        def reconcile(self):
            reconciler.Reconciler().run_once()
            self.cloud.settle(timeout=20)

        @when('converge')
        @stateful.rule()
        @counted
        def converge(self):
            problems = self.cloud.converge()
            assert not problems, '\n'.join(problems)

        @when('fault_delete')
        @stateful.rule(kind=st.sampled_from(['refuse', 'lose']))
        @counted
        def fault_delete(self, kind):
            self.cloud.recorder.faults['delete'] = kind

        @when('fault_shelve')
        @stateful.rule(verb=st.sampled_from(['shelve', 'stop']),
                       kind=st.sampled_from(['refuse', 'lose']))
        @counted
        def fault_shelve(self, verb, kind):
            self.cloud.recorder.faults[verb] = kind

        @when('lose_compute_deletes')
        @stateful.rule()
        @counted
        def lose_compute_deletes(self):
            self.cloud.lose_compute_deletes = True

        @when('hang_compute')
        @stateful.rule()
        @counted
        def hang_compute(self):
            self.cloud.hung.clear()
            self.cloud.hang.set()

        @when('heal')
        @stateful.rule()
        @counted
        def heal(self):
            self.cloud.heal()
            self.cloud.settle(timeout=20)

        @when('clock_jump')
        @stateful.rule(hours=st.integers(min_value=1, max_value=48))
        @counted
        def clock_jump(self, hours):
            self.cloud.age_all(hours * 3600)

        @when('expire_lifetimes')
        @stateful.rule()
        @counted
        def expire_lifetimes(self):
            """The clock jumps past ``short.preemptible``'s lifetime and a
            reconciler round ends what outlived it.
            """
            self.cloud.age_all(SHORT_LIFETIME + 600)
            reconciler.Reconciler().run_once()
            self.cloud.settle(timeout=20)

        # -- invariants -------------------------------------------------

        @stateful.invariant()
        def nothing_wrong_destroyed_and_decisions_exact(self):
            self.cloud.clear_acting()
            self.cloud.sync()
            calls, decisions, problems = self.cloud.recorder.take()
            self.cloud.count(calls, decisions)
            problems = list(problems)
            problems.extend(self.cloud.candidate_problems(decisions))
            problems.extend(self.cloud.owner_problems())
            assert not problems, '\n'.join(problems)

        def teardown(self):
            try:
                problems = self.cloud.converge()
                calls, decisions, more = self.cloud.recorder.take()
                self.cloud.count(calls, decisions)
                problems = list(more) + problems + \
                    self.cloud.candidate_problems(decisions)
                assert not problems, '\n'.join(problems)
            finally:
                self.cloud.recorder.check = None

    return InvariantMachine
