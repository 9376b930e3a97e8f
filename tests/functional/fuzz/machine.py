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
* **the market** (``market_round``: owners' bids, drawn and untrusted,
  set as server metadata with their own API clients; a reserve price,
  the projects' first credit and the interruption behaviour drawn; the
  spot market's engine ticks on a fake clock one pricing period later,
  and optionally again past the notice period, the owner starting a move
  of a noticed server in between) never stops, shelves or deletes a
  server that is normal now (by the resource classes its Placement
  allocations hold, or its flavor copy requests when it holds none; and
  by the model's flavor), nor one its owner is moving (a move task state,
  or ``VERIFY_RESIZE``), judged when Nova's API makes the call
  (:mod:`.recorder`); every server the engine reports preempted was seen
  by the recorder. A market termination is no scheduler decision: the
  oracle judges ``plan_host`` decisions only;
* after the ``converge`` step (faults healed, reconciler rounds until
  stable, bounded): no host over capacity by Placement usage (standard
  plus ``CUSTOM_PREEMPTIBLE_*`` against the provider's capacity) nor by
  its servers' flavors, no server left in ``deleting``, no victim record
  past its ``next_attempt``. Every example ends with that step.

A rule that Nova refuses in the current state (4xx), or that finds no
server it may act on, is a no-op step.

The ``kill_worker`` rule kills the scheduler worker of a normal boot after
its decision reserved victims (:mod:`.worker_kill`: before the notice,
after it, after a victim's record went ``terminating``, after its compute
call was sent); the request must fail, and after the reconciler converged
and the owner booted again, the invariants above hold (the dead worker's
Placement claim, nova's until the server is deleted, counted apart) and
the victims taken are at most those the failed request reserved plus the
most an exact decision for the retry takes (:func:`.oracle.minimum_count`,
against the servers running on its host).

Finding power (issue 30's "prove the fuzzer's power"): each example runs a
drawn subset of the rules (swarm testing: a few rules many times), may
start full (preemptible servers topped up until the flavors booted ask
for every host's vCPUs: the next normal boot preempts), and the rules'
preconditions are static (drawn data only, never the cloud's statuses).
"""

import collections
import datetime
import decimal
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
from opie_sched.market import budget
from opie_sched.preemption import victim_state as vs
from opie_sched.scheduler import locks
from opie_sched.scheduler import manager as opie_manager
from opie_sched.scheduler import reconciler
from opie_sched.services.market.db import api as market_db
from opie_sched.services.market.db import models as market_models
from opie_sched.services.market import engine as market_engine
from tests.functional.fuzz import oracle
from tests.functional.fuzz import worker_kill

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
#: The market's pricing period and notice period, seconds (fake clock).
MARKET_PERIOD = 3600
MARKET_NOTICE = 300
#: Bids owners write (``opie:bid`` server metadata): untrusted text,
#: valid or not.
BIDS = ('0', '0.001', '0.05', '0.5', '2', '50', '1e6', '-1', 'abc', 'NaN',
        'Infinity', '', ' 3 ', '0x10', '\u00bd')
#: Nova task states of a move (resize, cold or live migration): the
#: fuzzer's own list, not the ownership model's.
MOVE_TASKS = frozenset(['resize_prep', 'resize_migrating',
                        'resize_migrated', 'resize_finish',
                        'resize_reverting', 'resize_confirming',
                        'migrating'])


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
        #: its build failed on its first host and was rescheduled to an
        #: alternate (``fail_builds``)
        self.rescheduled = False
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
        """Why opie may not stop, shelve or delete this server, or None.

        Its own preemptor only as a preemptible new server whose claim of
        an alternate (a reschedule, claimed by nova's conductor) found the
        host full: it alone goes (``manager._check_landed``), as a
        preemptible claim leaving its host over capacity is taken back in
        the scheduling pass.
        """
        if preemptor == self.uuid and (
                not is_preemptible(self.flavor) or self.pending is not None
                or not self.rescheduled):
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
        #: only a build of this flavor fails (None: any)
        self.fail_flavor = None
        #: the server a step acts on (its host may be changing)
        self.acting = None
        #: an armed :class:`~.worker_kill.Kill` (the next request that
        #: reserves victims dies), or None
        self.kill = None
        #: servers whose scheduling request died with its worker: nova's
        #: conductor buries them in cell0 (ERROR) and the dead worker's
        #: Placement claims stay until the server is deleted
        self.left_claims = set()
        #: what the fuzzer did: examples, steps per rule, opie's
        #: destructive calls, decisions and those the oracle enumerated
        self.stats = collections.Counter()
        #: a fault was injected since the last convergence (a refused or
        #: lost call, a hung compute, a killed worker): the prompt
        #: capacity check waits for the next convergence
        self.faulted = False
        #: the next two scheduling requests meet before either claims (a
        #: :class:`threading.Barrier`), or None
        self.race = None
        #: the next two preemption decisions meet before either reads the
        #: host's state (a :class:`threading.Barrier`), or None
        self.race_reads = None
        #: the market of this example (its store, fake clock), created at
        #: its first round
        self.market_store = None
        self.market_now = None

    def verify(self, problems):
        """Raise AssertionError with ``problems`` when there are some; the
        first failure of a run is also kept in :attr:`stats` (``first
        failure`` and the example it happened in), so that a run whose
        failing example hypothesis cannot replay alike (timing: it then
        raises ``FlakyStrategyDefinition`` or ``Flaky``) still tells what
        failed.
        """
        if not problems:
            return
        text = '\n'.join(problems)
        if 'first failure' not in self.stats:
            self.stats['first failure'] = text[:2000]
            self.stats['first failure example'] = self.stats['examples']
        raise AssertionError(text)

    def count(self, calls, decisions):
        self.stats['invariant checks'] += 1
        self.stats['opie destructive calls'] += len(calls)
        self.stats['decisions'] += len(decisions)
        self.stats['decisions preempting'] += sum(
            1 for d in decisions if d[4].needs_preemption)

    # -- reading the cloud --------------------------------------------------

    def listing(self):
        """Every server of every project, soft-deleted ones included: nova
        hides a ``SOFT_DELETED`` server from its default listing (the
        database's ``soft_deleted`` filter, off unless asked; an admin may
        ask, ``soft_deleted=true``), yet it holds its room, may be a victim
        and may be restored by its owner.
        """
        return self.admin.api_get(
            '/servers/detail?all_tenants=1&soft_deleted=true'
        ).body['servers']

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

    def boot_many(self, requests):
        """Boot one server per ``(owner, flavor)`` without waiting between
        the requests, then wait for all; the new uuids.
        """
        new = []
        for owner, flavor in requests:
            req = self.case._build_server(
                name='fuzz-%s' % flavor,
                flavor_id=self.case.flavor_ids[flavor], networks='none')
            found = self.call(self.owners[owner].post_server,
                              {'server': req})
            if found is not None:
                self.servers[found['id']] = Server(found['id'], owner,
                                                   flavor)
                self.order.append(found['id'])
                new.append(found['id'])
        self.settle(new)
        ready = timeutils.utcnow(with_timezone=True)
        for uuid in new:
            if uuid in self.servers:
                self.servers[uuid].ready_at = ready
        return new

    def boot_killed(self, owner, flavor, stage):
        """A normal boot whose scheduler worker dies at ``stage`` after
        its decision reserved victims (:mod:`.worker_kill`); when it did
        die: the reconciler converges, the owner boots again, the
        reconciler converges again. Problems: the killed request did not
        fail, the capacity problems after each convergence, and victims
        beyond the minimum plus those of the failed request (the retry's
        victims must cost no more than the brute-force minimum freeing
        what the servers running on its host need, the dead worker's
        left-over claim not counted).
        """
        kill = worker_kill.Kill(stage, locks.default_url(opie_manager.CONF))
        start = len(self.recorder.calls)
        self.kill = kill
        self.faulted = True
        try:
            new = self.boot(owner, flavor)
        finally:
            self.kill = None
            kill.close()
        if not kill.died:
            return []
        self.stats['workers killed after the decision (%s)' % stage] += 1
        problems = ['the request of a worker killed at %s did not fail: %s'
                    % (stage, self.servers[u]) for u in new
                    if u in self.servers
                    and self.servers[u].status != 'ERROR']
        self.left_claims.update(new)
        problems.extend('after the kill (%s): %s' % (stage, p)
                        for p in self.converge())
        # the owner tries again
        held = {host: self._held(host) for host in self.case.HOSTS}
        dstart = len(self.recorder.decisions)
        retry = self.boot(owner, flavor)
        problems.extend('after the retry: %s' % p for p in self.converge())
        failed = set(kill.reserved)
        taken = {c.uuid for c in self.recorder.calls[start:]
                 if c.preemptor != vs.CAUSE_LIFETIME}
        needed = 0
        for hv, request, policy, now, plan in \
                self.recorder.decisions[dstart:]:
            if not plan.needs_preemption or not plan.victims or not (
                    {inst.uuid for inst, _ in plan.victims} & taken):
                continue
            size = self.case.PAPER_SIZES[flavor]
            deficit = tuple(max(h + r - c, 0) for h, r, c in zip(
                held.get(hv.name, (0, 0, 0)), size, self.case.HOST_SIZE))
            cands = [i for i in hv.instances
                     if i.preemptible and not i.leaving and not i.pinned]
            costed = [(tuple(i.resources), policy.instance_cost(i, hv, now))
                      for i in cands]
            try:
                needed += oracle.minimum_count(costed, deficit)
            except ValueError:
                needed += len(plan.victims)
        self.stats['victims after a worker kill'] += len(taken)
        if len(taken) > needed + len(failed):
            problems.append(
                'over-preemption after a worker killed at %s: %d victims '
                '%s taken, the minimum for the retry %s is %d and the '
                'failed request had reserved %d %s' % (
                    stage, len(taken), sorted(taken), retry, needed,
                    len(failed), sorted(failed)))
        return problems

    def _held(self, host):
        """(vCPU, MB, GB) the model's servers hold on ``host``."""
        held = [0, 0, 0]
        for srv in self.live():
            if srv.host != host or srv.status in ('SHELVED_OFFLOADED',
                                                  'ERROR'):
                continue
            vcpus, ram, disk = self.case.PAPER_SIZES[srv.flavor]
            held[0] += vcpus
            held[1] += ram
            held[2] += 0 if srv.bfv else disk
        return tuple(held)

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
        self.fail_flavor = None
        self.hang.clear()
        self.hung.set()

    def reset(self):
        """Back to an empty cloud for the next example."""
        self.heal()
        self.faulted = False
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
        self.left_claims.clear()
        del self.order[:]
        self.recorder.reset()
        self.hung.clear()
        if self.market_store is not None:
            self.market_store.dispose()
        self.market_store = self.market_now = None

    # -- the market -----------------------------------------------------------

    def bid(self, srv, value):
        """``srv``'s owner writes ``value`` as its bid (server metadata,
        the owner's own API client); a refusal (4xx) is a no-op.
        """
        self.call(self.owners[srv.owner].api_post,
                  '/servers/%s/metadata' % srv.uuid,
                  {'metadata': {'opie:bid': value}})

    def market_engine(self, reserve, credit, action):
        """The spot market's engine on this example's store (a new sqlite
        file per example), Nova read and acted on through openstacksdk
        (admin) with Placement capacities.
        """
        if self.market_store is None:
            self.stats['market stores'] += 1
            self.market_store = market_db.MarketStore(
                'sqlite:///%s/market-%d.sqlite' % (
                    self.case.market_dir, self.stats['market stores']))
            self.market_store.sync()
            self.market_now = budget.period_start_for(
                int(time.time()), MARKET_PERIOD)
        settings = market_engine.Settings(
            period_seconds=MARKET_PERIOD, notice_period=MARKET_NOTICE,
            reserve_prices={'vcpus': decimal.Decimal(reserve)},
            initial_credit=decimal.Decimal(credit),
            bid_cap=decimal.Decimal(100), preemption_action=action,
            stop_grace_period=60)
        return market_engine.MarketEngine(
            self.market_store,
            market_engine.Cloud(self.case.market_conn, 'placement'),
            settings)

    def market_tick(self, engine, now):
        """One tick of the market at ``now`` (fake clock), its calls of
        Nova's compute API recorded as the market's; then the servers
        settle and resizes the market confirmed are the model's. Problems:
        a server the engine reports preempted that the recorder did not
        see.
        """
        start = len(self.recorder.calls)
        with self.recorder.market_round():
            report = engine.tick(now)
        seen = {c.uuid for c in self.recorder.calls[start:] if c.by_market}
        self.stats['market ticks'] += 1
        self.stats['market notices'] += len(report.notices)
        self.stats['market notices withdrawn'] += len(report.cancelled)
        self.stats['market preempted'] += len(report.preempted)
        self.stats['market calls'] += sum(
            1 for c in self.recorder.calls[start:] if c.by_market)
        self.stats['market errors'] += len(report.errors)
        self.settle(timeout=20)
        self.adopt_confirmed()
        return ['the market preempted %s but the recorder saw no call of '
                'it' % u for u in report.preempted if u not in seen]

    def adopt_confirmed(self):
        """The resizes the market confirmed (a noticed server waiting in
        VERIFY_RESIZE past its deadline) become the model's: the server
        has its new flavor, no pending move.
        """
        with self.recorder.lock:
            confirmed = self.recorder.market_confirmed
            # a server its owner's step is still moving: that step's end
            # adopts it (the rule calls this again)
            self.recorder.market_confirmed = [
                u for u in confirmed
                if u in self.servers and self.servers[u].moving]
            confirmed = [u for u in confirmed
                         if u not in self.recorder.market_confirmed]
        if not confirmed:
            return
        self.stats['market confirmed resizes'] += len(confirmed)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            self.sync()
            if not any(self.servers[u].status == 'VERIFY_RESIZE'
                       for u in confirmed if u in self.servers):
                break
            time.sleep(0.25)
        for uuid in confirmed:
            srv = self.servers.get(uuid)
            if (srv is None or srv.pending is None
                    or srv.status == 'VERIFY_RESIZE'):
                continue
            old, new = srv.pending
            srv.flavor = self.admin.get_server(uuid)['flavor'][
                'original_name']
            srv.pending = None
            if is_preemptible(srv.flavor) and not is_preemptible(old):
                srv.start_preemptible_clock()

    def noticed(self):
        """uuids the market has a pending notice for."""
        if self.market_store is None:
            return set()
        return {n['server_uuid'] for n in self.market_store.notices(
            state=market_models.NOTICED)}

    def _holds_preemptible(self, instance):
        """Whether ``instance`` is preemptible now by the resource classes
        its Placement allocations hold (those its flavor copy requests
        when it holds none: shelved offloaded, not placed).
        """
        allocs = self.case.placement.get(
            '/allocations/%s' % instance.uuid).body['allocations']
        held = {}
        for alloc in allocs.values():
            for rc, amount in alloc.get('resources', {}).items():
                held[rc] = held.get(rc, 0) + amount
        if held:
            return any(amount > 0 and rc.startswith('CUSTOM_PREEMPTIBLE_')
                       for rc, amount in held.items())
        specs = instance.flavor.extra_specs or {}
        return any(k.startswith('resources:CUSTOM_PREEMPTIBLE_')
                   and str(v).strip() not in ('', '0')
                   for k, v in specs.items())

    def judge_market(self, verb, instance):
        """Why the market's ``verb`` of ``instance`` (as Nova's API loaded
        it, when the call is made) is wrong, or None.
        """
        why = []
        if (instance.task_state in MOVE_TASKS
                or instance.vm_state == 'resized'):
            why.append('its owner is moving it (task state %s, vm state '
                       '%s)' % (instance.task_state, instance.vm_state))
        if not self._holds_preemptible(instance):
            why.append('it is normal now by the resource classes it holds')
        srv = self.servers.get(instance.uuid)
        if (srv is not None and srv.pending is None
                and not is_preemptible(srv.flavor)):
            why.append('it is normal (%s)' % srv.flavor)
        if not why:
            return None
        return ('the market %s %s although %s'
                % (verb, srv or instance.uuid, '; '.join(why)))

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
                # pinned: the decision itself holds it back (its owner's
                # move, the ownership model); the model judges the rest
                if not inst.preemptible or inst.leaving or inst.pinned:
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

    def placement_problems(self, host):
        """``host`` over capacity by Placement usage: the standard plus the
        preemptible class of each resource against the provider's
        capacity (the claims a killed worker left counted apart).
        """
        problems = []
        case = self.case
        rp = case._get_provider_uuid_by_host(host)
        inv = case.placement.get(
            '/resource_providers/%s/inventories' % rp).body['inventories']
        used = dict(case._get_provider_usages(rp))
        # the claims a dead worker left (nova's, until the server is
        # deleted): not opie's to repair; counted apart
        for uuid in self.left_claims & set(self.servers):
            held = case.placement.get('/allocations/%s' % uuid).body[
                'allocations'].get(rp, {}).get('resources', {})
            for rc, amount in held.items():
                used[rc] = used.get(rc, 0) - amount
            if held:
                self.stats['capacity checks discounting a claim left '
                           'by a killed worker'] += 1
        for std, pre in flavors.CLASS_MAP.items():
            i = inv[std]
            cap = (i['total'] - i['reserved']) * i['allocation_ratio']
            total = used.get(std, 0) + used.get(pre, 0)
            if total > cap:
                problems.append('host %s over capacity by Placement: '
                                '%s + %s = %s > %s' % (
                                    host, std, pre, total, cap))
        return problems

    def prompt_problems(self):
        """Hosts over capacity by Placement once every server settled,
        when no fault was injected since the last convergence (no refused
        or lost delete, shelve or stop, no hung compute, no killed
        worker): every claim is then either preempted for (its victims
        gone before its request returns) or checked after it lands, so an
        overcommit is a claim nobody checked (two requests racing for one
        host's room, an alternate the conductor claimed) even when the
        reconciler's next round would repair it. Servers still busy after
        the wait are left to the convergence's check.
        """
        if self.faulted:
            return []
        if not self.settle(timeout=20):
            self.stats['prompt capacity checks skipped (busy)'] += 1
            return []
        self.stats['prompt capacity checks'] += 1
        problems = self._prompt_read()
        if problems and any(s.rescheduled for s in self.live()):
            # the check of an alternate's claim runs when its compute
            # reports the build (nova's fanout to the schedulers), after
            # the server went ACTIVE: given 15 s to repair the host
            deadline = time.monotonic() + 15
            while problems and time.monotonic() < deadline:
                time.sleep(1)
                self.settle(timeout=10)
                problems = self._prompt_read()
            self.stats['prompt capacity checks waiting for an '
                       'alternate\'s check'] += 1
        return problems

    def _prompt_read(self):
        problems = []
        for host in self.case.HOSTS:
            problems.extend('after the step, no fault injected: %s' % p
                            for p in self.placement_problems(host))
        return problems

    def capacity_problems(self):
        """Hosts over capacity (Placement usage, and the servers' flavors
        on them), servers left deleting, victim records past due.
        """
        problems = []
        case = self.case
        for host in case.HOSTS:
            problems.extend(self.placement_problems(host))
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
                # a soft-deleted server runs no more (its room is a
                # candidate's; restored, the next round ends it)
                if (srv.flavor == 'short.preemptible' and srv.pending is None
                        and srv.status in HOLDING - {'SOFT_DELETED'}
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
        self.faulted = False
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


#: Every rule of the machine (:func:`make_machine`).
RULES = ('boot', 'boot_normal', 'multi_create', 'boot_from_volume',
         'server_group', 'boot_rescheduled', 'boot_concurrently',
         'boot_racing', 'resize',
         'confirm', 'revert', 'migrate', 'live_migrate', 'evacuate',
         'shelve', 'unshelve', 'rescue', 'unrescue', 'stop', 'soft_delete',
         'restore', 'delete', 'lock', 'kill_worker', 'reconcile',
         'converge', 'fault_delete', 'fault_shelve', 'lose_compute_deletes',
         'hang_compute', 'heal', 'clock_jump', 'expire_lifetimes',
         'market_round')
#: The rules an example may leave out (swarm testing); a reconciler round
#: is always possible.
SWARM = tuple(r for r in RULES if r != 'reconcile')
servers_idx = st.integers(min_value=0, max_value=63)
#: ages of the first servers, seconds (some past ``short.preemptible``'s
#: lifetime)
ages = st.one_of(st.integers(min_value=0, max_value=7200),
                 st.integers(min_value=SHORT_LIFETIME,
                             max_value=2 * SHORT_LIFETIME))


def counted(fn):
    """Count each run of a rule in its machine's ``cloud.stats``."""
    @functools.wraps(fn)
    def rule(self, *args, **kwargs):
        self.cloud.stats['rule ' + fn.__name__] += 1
        return fn(self, *args, **kwargs)
    return rule


def make_machine(cloud, excluded=(), swarm=True):
    """A state machine class bound to ``cloud``; rules named in
    ``excluded`` are left out (their preconditions are false). ``swarm``:
    each example runs a drawn subset of the other rules (swarm testing);
    False: every rule not excluded runs in every example (a run focused
    on a few rules, where a drawn subset would often leave out the one
    rule a guarantee needs).
    """

    def when(name, statuses=None):
        """Rule ``name`` runs unless excluded or left out of this example
        (swarm testing, :meth:`InvariantMachine.fill`). Static: the
        precondition reads only the example's drawn data, never the cloud
        (a precondition on the servers' statuses made hypothesis raise
        ``FlakyStrategyDefinition`` when timing changed them on a replay).
        ``statuses`` documents the servers the rule acts on; without one
        the rule is a no-op step.
        """
        return stateful.precondition(
            lambda self: name not in excluded and name in self.enabled)

    class InvariantMachine(stateful.RuleBasedStateMachine):

        def __init__(self):
            super().__init__()
            self.cloud = cloud
            cloud.reset()
            cloud.recorder.check = cloud.judge_destroy
            cloud.recorder.market_check = cloud.judge_market
            cloud.stats['examples'] += 1
            #: the rules of this example (swarm testing: drawn by fill)
            self.enabled = frozenset(RULES)

        # -- owners -----------------------------------------------------

        @stateful.initialize(
            servers=st.lists(
                st.tuples(st.sampled_from(OWNERS), st.sampled_from(FLAVORS),
                          ages),
                min_size=2, max_size=6),
            top_up=st.one_of(st.just(()), st.lists(
                st.tuples(st.sampled_from(OWNERS),
                          st.sampled_from(PREEMPTIBLE), ages),
                min_size=8, max_size=8)),
            rules=st.fixed_dictionaries(
                {name: st.booleans() for name in SWARM}),
            # a mixed start first: hypothesis's simplest example has one
            mixed=st.one_of(st.lists(
                st.tuples(st.sampled_from(OWNERS), st.sampled_from(NORMAL),
                          st.sampled_from(PREEMPTIBLE), ages),
                min_size=1, max_size=2), st.just(())))
        def fill(self, servers, top_up=(), rules=None, mixed=()):
            """The cloud's first servers, each ``age`` seconds old (their
            preemption costs differ; some older than ``short.preemptible``'s
            lifetime, normal servers that a resize may make preemptible);
            then, for a full start, preemptible servers of ``top_up`` until
            the flavors booted ask for every host's vCPUs (the next normal
            boot preempts). ``rules``: which rules of :data:`SWARM` this
            example runs (swarm testing: an example runs a few rules many
            times; None: all).

            ``mixed``: first, per ``(owner, normal flavor, preemptible
            flavor, age)``, the owner creates an affinity server group and
            boots a server of each flavor into it, one request after the
            other: a host holding normal and preemptible usage, which
            opie's weighers rarely build by themselves (they keep the two
            apart). Two claims racing for such a host's last room are what
            the check after each claim is for: Placement admits a
            preemptible claim by its own classes' room, which the normal
            usage does not take.
            """
            if rules is not None and swarm:
                self.enabled = frozenset(
                    [r for r in RULES if r not in rules]
                    + [r for r, on in rules.items() if on])
            cloud = self.cloud
            room = len(cloud.case.HOSTS) * cloud.case.HOST_SIZE[0]
            asked = 0
            for owner, normal, preemptible, age in mixed:
                group = cloud.server_group(owner, 'affinity')
                if not group:
                    continue
                for flavor in (normal, preemptible):
                    asked += cloud.case.PAPER_SIZES[flavor][0]
                    for uuid in cloud.boot(owner, flavor, group=group):
                        cloud.age(uuid, age)
                cloud.stats['mixed starts'] += 1
            asked += sum(cloud.case.PAPER_SIZES[f][0] for _, f, _ in servers)
            for owner, flavor, age in top_up:
                if asked >= room:
                    break
                asked += cloud.case.PAPER_SIZES[flavor][0]
                servers = list(servers) + [(owner, flavor, age)]
            for owner, flavor, age in servers:
                for uuid in cloud.boot(owner, flavor):
                    cloud.age(uuid, age)

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

        @when('boot_concurrently')
        @stateful.rule(flavors=st.tuples(st.sampled_from(FLAVORS),
                                         st.sampled_from(FLAVORS)))
        @counted
        def boot_concurrently(self, flavors):
            """Both owners boot at once (one server each, neither waiting
            for the other): the two scheduler services may decide at the
            same time.
            """
            if len(self.cloud.order) < 11:
                self.cloud.boot_many(list(zip(OWNERS, flavors)))

        @when('boot_racing')
        @stateful.rule(flavors=st.tuples(st.sampled_from(FLAVORS),
                                         st.sampled_from(FLAVORS)),
                       fail_build=st.booleans(),
                       failing=st.sampled_from([0, 1]))
        @counted
        def boot_racing(self, flavors, fail_build=False, failing=None):
            """Both owners boot at once, on the two scheduler services,
            and the two scheduling requests are held before their first
            claim until both got there (the test case's ``_race_claims``):
            both chose a host on the same Placement state, as two workers
            racing for one host's room (the host lock and the check
            after each claim must keep the host within capacity); when
            both then preempt, their decisions are held before reading the
            host's allocations until both got there (up to 5 s).
            ``fail_build``: the first build fails, and the conductor
            claims an alternate the other request may have filled since;
            ``failing``: the first build of that request's flavor
            (``flavors[failing]``; None: whichever comes first).
            """
            if len(self.cloud.order) < 11:
                cloud = self.cloud
                cloud.race = threading.Barrier(
                    2, action=lambda: setattr(cloud, 'race', None))
                cloud.race_reads = threading.Barrier(
                    2, action=lambda: setattr(cloud, 'race_reads', None))
                cloud.fail_builds = 1 if fail_build else 0
                cloud.fail_flavor = (flavors[failing] if fail_build
                                     and failing is not None else None)
                try:
                    cloud.boot_many(list(zip(OWNERS, flavors)))
                finally:
                    cloud.race = cloud.race_reads = None
                    cloud.fail_builds = 0
                    cloud.fail_flavor = None

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
        @stateful.rule(i=servers_idx, normal=st.booleans())
        @counted
        def migrate(self, i, normal=False):
            """``normal``: a server of a normal flavor (a cold migration
            may preempt for it, ``[opie_preemption] moves_preempt =
            resize``), else any.
            """
            srv = self.cloud.pick(i, lambda s: s.status in (
                'ACTIVE', 'SHUTOFF') and (not normal or not is_preemptible(
                    s.flavor)))
            if srv is None:
                return
            srv.begin_move(srv.flavor, srv.flavor)
            ok = self.cloud.action(srv, {'migrate': None},
                                   api=self.cloud.admin)
            self._after_move(srv, ok)

        @when('live_migrate', ('ACTIVE',))
        @stateful.rule(i=servers_idx, normal=st.booleans())
        @counted
        def live_migrate(self, i, normal=False):
            """``normal``: a server of a normal flavor (one that would
            preempt if live migrations did, issue 19 hole 2), else any.
            """
            srv = self.cloud.pick(i, lambda s: s.status == 'ACTIVE' and (
                not normal or not is_preemptible(s.flavor)))
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
            self.cloud.verify(['the live migration of %s preempted %s'
                               % (srv, killed)] if killed else [])

        @when('evacuate', ('ACTIVE', 'SHUTOFF'))
        @stateful.rule(i=servers_idx, normal=st.booleans())
        @counted
        def evacuate(self, i, normal=False):
            """``normal``: a server of a normal flavor, else any."""
            srv = self.cloud.pick(i, lambda s: s.status in (
                'ACTIVE', 'SHUTOFF') and s.host and (
                    not normal or not is_preemptible(s.flavor)))
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
            self.cloud.verify(['the evacuation of %s preempted %s'
                               % (srv, killed)] if killed else [])

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
                self.cloud.stats['soft deletes'] += 1

        @when('restore', ('SOFT_DELETED',))
        @stateful.rule(i=servers_idx)
        @counted
        def restore(self, i):
            srv = self.cloud.pick(i, lambda s: s.status == 'SOFT_DELETED')
            if srv is not None and self.cloud.action(srv, {'restore': None}):
                self.cloud.stats['restores'] += 1
                self.cloud.settle([srv.uuid])

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

        @when('kill_worker')
        @stateful.rule(owner=st.sampled_from(OWNERS),
                       flavor=st.sampled_from(NORMAL),
                       stage=st.sampled_from(worker_kill.STAGES))
        @counted
        def kill_worker(self, owner, flavor, stage):
            """A normal boot whose scheduler worker is killed after its
            decision reserved victims (at ``stage``); the reconciler
            converges, the owner boots again (:meth:`Cloud.boot_killed`).
            """
            if len(self.cloud.order) < 11:
                problems = self.cloud.boot_killed(owner, flavor, stage)
                self.cloud.verify(problems)

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
            self.cloud.verify(problems)

        @when('fault_delete')
        @stateful.rule(kind=st.sampled_from(['refuse', 'lose']))
        @counted
        def fault_delete(self, kind):
            self.cloud.faulted = True
            self.cloud.recorder.faults['delete'] = kind

        @when('fault_shelve')
        @stateful.rule(verb=st.sampled_from(['shelve', 'stop']),
                       kind=st.sampled_from(['refuse', 'lose']))
        @counted
        def fault_shelve(self, verb, kind):
            self.cloud.faulted = True
            self.cloud.recorder.faults[verb] = kind

        @when('lose_compute_deletes')
        @stateful.rule()
        @counted
        def lose_compute_deletes(self):
            self.cloud.faulted = True
            self.cloud.lose_compute_deletes = True

        @when('hang_compute')
        @stateful.rule()
        @counted
        def hang_compute(self):
            self.cloud.faulted = True
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

        @when('market_round')
        @stateful.rule(
            bids=st.lists(st.one_of(st.none(), st.sampled_from(BIDS)),
                          max_size=12),
            # first (hypothesis's simplest draws): a reserve above the
            # default bid, credit enough (an out-of-bid notice, not an
            # out-of-credit one) and a move to a normal flavor
            reserve=st.sampled_from(['1', '10', '0.1', '0.01', '0']),
            credit=st.sampled_from(['100', '1', '0.05', '0']),
            action=st.sampled_from(['delete', 'stop', 'shelve']),
            enforce=st.booleans(),
            move=st.one_of(st.tuples(
                servers_idx, st.one_of(st.sampled_from(NORMAL),
                                       st.sampled_from(FLAVORS))),
                st.none()))
        @counted
        def market_round(self, bids, reserve, credit, action, enforce,
                         move):
            """The owners bid (``bids[i]`` for the i-th server, None: no
            bid written), then the market's engine ticks one pricing
            period later (prices, charges, notices, and the enforcement
            of the notices given before); with ``enforce`` or ``move`` it
            ticks again past the notice period (enforcing this round's
            notices). ``move``: between the two ticks the owner of a
            noticed server starts resizing it to a flavor (no wait): the
            enforcement meets a server being moved (or waiting in
            VERIFY_RESIZE, which it confirms); a third tick, and a fourth
            once the owner's step ended, meet it moved (half the moves are
            to a normal flavor).
            """
            cloud = self.cloud
            for srv, value in zip(cloud.live(), bids):
                if value is not None:
                    cloud.bid(srv, value)
            engine = cloud.market_engine(reserve, credit, action)
            cloud.market_now += MARKET_PERIOD
            now = cloud.market_now + 1
            problems = cloud.market_tick(engine, now)
            moved = None
            if move is not None:
                noticed = cloud.noticed()
                moved = cloud.pick(move[0], lambda s: (
                    s.uuid in noticed and s.status in ('ACTIVE',
                                                       'SHUTOFF')))
                if moved is not None and moved.flavor != move[1]:
                    moved.begin_move(moved.flavor, move[1])
                    ok = cloud.action(moved, {'resize': {
                        'flavorRef': cloud.case.flavor_ids[move[1]]}})
                    cloud.stats['market rounds meeting a move'] += 1
                else:
                    moved = None
            if enforce or move is not None:
                problems += cloud.market_tick(engine, now + MARKET_NOTICE
                                              + 1)
            if moved is not None:
                # the tick after: the move is over (the resize the market
                # confirmed, the one it waited for)
                problems += cloud.market_tick(engine, now + MARKET_NOTICE
                                              + 2)
                old = moved.pending[0]
                self._after_move(moved, ok)
                cloud.adopt_confirmed()
                if (moved.pending is None and moved.flavor != old
                        and is_preemptible(moved.flavor)
                        and not is_preemptible(old)):
                    # the market confirmed the resize it met
                    moved.start_preemptible_clock()
                # and once the owner's step is over (a resize the market
                # confirmed at the third tick is done now)
                problems += cloud.market_tick(engine, now + MARKET_NOTICE
                                              + 3)
            cloud.verify(problems)

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
            problems.extend(self.cloud.prompt_problems())
            self.cloud.verify(problems)

        def teardown(self):
            try:
                problems = self.cloud.converge()
                calls, decisions, more = self.cloud.recorder.take()
                self.cloud.count(calls, decisions)
                problems = list(more) + problems + \
                    self.cloud.candidate_problems(decisions)
                self.cloud.verify(problems)
            finally:
                self.cloud.recorder.check = None

    return InvariantMachine
