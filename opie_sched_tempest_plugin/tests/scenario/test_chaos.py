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
"""The chaos tier (issue 19): faults injected into the devcloud while
normal requests preempt, then the cloud must converge on its own.

Faults, one scenario each, on a cloud filled with preemptible servers:

* a scheduler worker SIGKILLed right after its first "Preemption
  decision" log line, and one killed once a victim's record went
  ``terminating`` (each then a normal request on the same host);
* a compute frozen (SIGSTOP) while its victim is being deleted, then
  thawed (SIGCONT);
* a compute SIGKILLed while its victim is being deleted, then started
  again (as an operator would);
* the cloud's RabbitMQ connections closed again and again while a normal
  request preempts (from its POST until just after its decision), then
  its MariaDB connections killed twice right after another request's
  decision.

After each fault, within ``[opie] chaos_converge_timeout`` (polled with
openstacksdk's waiter): every request ACTIVE or ERROR with a fault (the
failed ones are then deleted, as their owner would), nothing in BUILD or
with a task state, no host over capacity in its full state (Placement
usage of the standard plus ``CUSTOM_PREEMPTIBLE_*`` classes against
``(total - reserved) * allocation_ratio``), no allocation whose consumer
is neither a server nor a migration in progress, and no victim beyond the
minimum (per host: the fewest preemptible servers whose removal brings
the final state within capacity, plus the victims of requests that then
failed, attributed by the request id the schedulers' logs name when
each victim's termination began). The figures
are printed (and appended to ``[opie] chaos_report``).

The cloud's state is read through the public APIs only; the faults need
the devcloud's state directory (``[opie] devcloud_state_dir``, set by the
tier's runner) and run on the machine of the cloud. opie-scheduler is
restarted with ``[opie] chaos_reconciler_interval`` for the class and
restored afterwards.
"""

import datetime
import json
import math
import re
import threading
import time

from keystoneauth1 import exceptions as ksa_exc
from openstack import exceptions as sdk_exc
from openstack import utils as sdk_utils
from oslo_log import log as logging
from oslo_utils import strutils
from tempest import config
from tempest.lib.common.utils import data_utils
from tempest.lib import decorators

from opie_sched.devcloud import chaos
from opie_sched_tempest_plugin import base

CONF = config.CONF
LOG = logging.getLogger(__name__)

SCHEDULER = 'opie-scheduler'
DECISION = r'Preemption decision for instance ([0-9a-f-]{36})'
#: A victim's termination began, under which request (the schedulers'
#: log line of actions._terminate_one): victim uuid, request id.
VICTIM_LINE = re.compile(r'Victim ([0-9a-f-]{36}) of \S+ '
                         r'\(request (req-[0-9a-f-]{36})\): terminated '
                         r'under request id')
#: A victim's record went ``terminating`` (the same line).
TERMINATING = VICTIM_LINE.pattern
#: Migration statuses after which a migration holds no allocation.
MIGRATION_DONE = ('confirmed', 'reverted', 'completed', 'error', 'failed',
                  'cancelled', 'done')
#: Seconds a frozen or dead compute stays so before it is thawed or
#: started again (below nova's service_down_time, 60 s: the API still
#: casts to it, as it would to a hung compute).
OUTAGE = 10


def needed_victims(others, preemptibles, capacity, size):
    """The fewest of ``preemptibles`` servers of ``size`` a host must lose
    for ``others`` (its usage without them) plus the rest to fit in
    ``capacity`` (dicts by standard class).
    """
    need = 0
    for rc, cap in capacity.items():
        if size.get(rc, 0) <= 0:
            continue
        over = others.get(rc, 0) + preemptibles * size[rc] - cap
        need = max(need, int(math.ceil(over / float(size[rc]))))
    return min(max(need, 0), preemptibles)


class ChaosTest(base.OpieBaseTest):
    """Faults during preemption; the cloud converges to a sound state."""

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.opie.preemption:
            raise cls.skipException('[opie] preemption = false')
        if not CONF.opie.devcloud_state_dir:
            raise cls.skipException(
                '[opie] devcloud_state_dir is unset: the chaos scenarios '
                'kill and freeze the devcloud\'s processes through its '
                'state directory')

    @classmethod
    def resource_setup(cls):
        super().resource_setup()
        cls.faults = chaos.Faults(CONF.opie.devcloud_state_dir)
        cls.normal, cls.preemptible = cls.chaos_flavors()
        cls.compute_services = {
            cls.faults.settings.compute_host(i): 'nova-compute-%d' % i
            for i in range(1, cls.faults.settings.computes + 1)}
        #: every opie-scheduler service (one per scheduler host)
        cls.schedulers = cls.faults.services(SCHEDULER)
        if not cls.schedulers:
            raise chaos.FaultError('the devcloud of %s runs no %s' % (
                CONF.opie.devcloud_state_dir, SCHEDULER))
        interval = CONF.opie.chaos_reconciler_interval
        if interval:
            overlay = cls.faults.overlay(SCHEDULER, {
                'opie_reconciler': {'interval': interval},
                'opie_preemption': {'retry_interval': interval}})
            for name in cls.schedulers:
                argv = cls.faults._service(name)['argv']
                if overlay in argv:
                    # left by an interrupted run
                    argv = argv[:argv.index(overlay) - 1]
                cls.addClassResourceCleanup(cls.restart_scheduler, name,
                                            argv, ())
                cls.restart_scheduler(name, argv, ('--config-file', overlay))

    @classmethod
    def restart_scheduler(cls, name, argv, extra):
        """Restart one opie-scheduler service and wait until its workers
        started.
        """
        watch = cls.faults.watch(name)
        cls.faults.restart(name, extra, argv=argv)
        for _ in range(cls.faults.settings.scheduler_workers):
            watch.wait_for('Starting scheduler node', 120, interval=0.2)

    def scheduler_workers(self):
        """Pids of every opie-scheduler worker process."""
        return {pid for name in self.schedulers
                for pid in self.faults.workers(name)}

    @classmethod
    def chaos_flavors(cls):
        """The largest normal flavor with a preemptible twin of which every
        host holds at least two (so a host has victims to choose from).
        """
        _, body = cls.call(cls.admin, 'GET',
                           '/flavors/detail?is_public=None', '2.61')
        flavors = {f['name']: f for f in body['flavors']}
        suffix = CONF.opie.preemptible_flavor_suffix
        hosts = cls.hosts()
        pairs = []
        for name, flavor in flavors.items():
            twin = flavors.get(name + suffix)
            if twin is None or not strutils.bool_from_string(
                    (twin.get('extra_specs') or {}).get(base.MARKER)):
                continue
            size = base.flavor_size(flavor)
            if size != base.flavor_size(twin):
                continue
            if hosts and min(min(base.fits(size, h['capacity']),
                                 base.fits(size, h['preemptible_capacity']))
                             for h in hosts.values()) >= 2:
                pairs.append((size['MEMORY_MB'], size['VCPU'], name))
        if not pairs:
            raise cls.skipException('no normal flavor with a preemptible '
                                    'twin of which every host holds two')
        name = max(pairs)[2]
        return tuple(base.Flavor(f['id'], f['name'], base.flavor_size(f))
                     for f in (flavors[name], flavors[name + suffix]))

    # -- the cloud's state -------------------------------------------------

    def _servers(self):
        """``{id: server dict}`` of every server of the cloud."""
        _, body = self.call(self.admin, 'GET',
                            '/servers/detail?all_tenants=1', '2.47')
        return {s['id']: s for s in body['servers']}

    def _migrations_in_progress(self):
        _, body = self.call(self.admin, 'GET', '/os-migrations', '2.59')
        return {m['uuid'] for m in body['migrations']
                if m['status'] not in MIGRATION_DONE}

    def snapshot(self):
        """The figures of the whole cloud now: ``stuck`` (servers in
        BUILD or with a task state), ``over`` (``{host: {class:
        excess}}``), ``orphans`` (``{consumer: host}``), ``faultless``
        (ERROR servers without a fault), ``servers``, ``hosts``.
        """
        servers = self._servers()
        hosts = self.hosts()
        stuck = sorted('%s %s/%s' % (i, s['status'],
                                     s.get('OS-EXT-STS:task_state'))
                       for i, s in servers.items()
                       if s['status'] == 'BUILD'
                       or s.get('OS-EXT-STS:task_state'))
        over = {}
        for name, host in hosts.items():
            excess = {rc: -free for rc, free in
                      self.full_free(host).items() if free < 0}
            if excess:
                over[name] = excess
        live = set(servers) | self._migrations_in_progress()
        orphans = {}
        for name, host in hosts.items():
            allocs = self.placement(self.admin, '/resource_providers/%s/'
                                    'allocations' % host['uuid'])
            for consumer in allocs['allocations']:
                if consumer not in live:
                    orphans[consumer] = name
        faultless = sorted(i for i, s in servers.items()
                           if s['status'] == 'ERROR'
                           and not (s.get('fault') or {}).get('message'))
        return {'stuck': stuck, 'over': over, 'orphans': orphans,
                'faultless': faultless, 'servers': servers, 'hosts': hosts}

    def wait_until(self, what, condition, deadline):
        """Poll ``condition()`` (returns ``(done, value)``) every second
        until done or ``deadline`` (monotonic); returns the last value. A
        connection the API server closed meanwhile counts as "not yet"
        (gunicorn closes keep-alive connections idle for 2 s, which races
        with a request reusing one).
        """
        value = None
        try:
            for _ in sdk_utils.iterate_timeout(
                    max(1, deadline - time.monotonic()), what, wait=1):
                try:
                    done, value = condition()
                except ksa_exc.ConnectionError as exc:
                    LOG.warning('chaos: %s: %s; polling again', what, exc)
                    continue
                if done:
                    break
        except sdk_exc.ResourceTimeout:
            LOG.warning('chaos: %s: not reached in time', what)
        return value

    # -- requests ------------------------------------------------------------

    def boot_normal(self, count=1, host=None):
        """POST one normal request (admin, optionally to ``host``);
        returns ``(request id, [server ids])`` at once (not waiting).
        """
        name = data_utils.rand_name('opie-chaos')
        server = {'name': name, 'flavorRef': self.normal.id,
                  'imageRef': self.image_id, 'networks': 'none',
                  'min_count': count, 'max_count': count}
        if host:
            server['host'] = host
        resp = self.admin.compute.request(
            '/servers', 'POST', json={'server': server},
            microversion='2.74', raise_exc=False)
        self.assertEqual(202, resp.status_code, resp.text[:500])
        request_id = resp.headers.get('x-openstack-request-id')
        if count == 1:
            ids = [resp.json()['server']['id']]
        else:
            ids = self.find_servers(self.admin, name, count)
        self.addCleanup(self.delete_and_wait, self.admin, ids)
        return request_id, ids

    def settle(self, requests, deadline, outcome):
        """Wait until no server of ``requests`` (``{request id: [ids]}``)
        builds or has a task; record each server's status and fault in
        ``outcome`` (``{id: (request id, status, fault message)}``); delete
        the failed ones (as their owner would) and wait until they are
        gone.
        """
        ids = {i: rid for rid, sids in requests.items() for i in sids}

        def settled():
            servers = self._servers()
            busy = [i for i in ids if i in servers and (
                servers[i]['status'] == 'BUILD'
                or servers[i].get('OS-EXT-STS:task_state'))]
            return not busy, servers
        servers = self.wait_until('requests settled', settled, deadline)
        failed = []
        for server_id, rid in ids.items():
            server = servers.get(server_id)
            status = server['status'] if server else 'GONE'
            fault = ((server or {}).get('fault') or {}).get('message')
            outcome[server_id] = (rid, status, fault)
            if status != 'ACTIVE':
                failed.append(server_id)
        self.delete_and_wait(self.admin, failed,
                             timeout=max(30, deadline - time.monotonic()))

    # -- one scenario --------------------------------------------------------

    def prepare(self):
        """Fill the cloud with preemptible servers; returns ``{id:
        host}`` of the fill and the deadline's start.
        """
        ids, placed = self.fill_with_preemptibles(self.primary,
                                                  self.preemptible)
        # from here on: which request each victim's termination serves
        self.victim_lines = self.faults.watch(*self.schedulers)
        return placed

    def assess(self, scenario, fill, outcome, t_fault, notes):
        """Converge, then assert and print the figures of ``scenario``."""
        deadline = t_fault + CONF.opie.chaos_converge_timeout

        def sound():
            snap = self.snapshot()
            return (not (snap['stuck'] or snap['over'] or snap['orphans'])
                    and all(i not in snap['servers'] or
                            snap['servers'][i]['status'] == 'ACTIVE'
                            for i in outcome)), snap
        snap = self.wait_until('cloud sound', sound, deadline)
        converged = time.monotonic() - t_fault
        servers, hosts = snap['servers'], snap['hosts']

        # Victims: fill servers gone; each attributed by the request id of
        # its preempt action.
        failed_requests = {rid for rid, status, _ in outcome.values()
                           if status != 'ACTIVE'}
        gone = [i for i in fill if i not in servers]
        chosen_by = self.choosers()
        spent, unexplained = {}, []
        for victim in gone:
            _, body = self.call(self.admin, 'GET',
                                '/servers/%s/os-instance-actions' % victim,
                                '2.21')
            preempts = [a['request_id'] for a in body['instanceActions']
                        if a['action'] == base.PREEMPT_ACTION]
            if not preempts:
                unexplained.append(victim)
            elif chosen_by.get(victim) in failed_requests:
                spent[fill[victim]] = spent.get(fill[victim], 0) + 1
        victims, minimum = {}, {}
        for name, host in hosts.items():
            here = [i for i in fill if fill[i] == name]
            left = [i for i in here if i in servers]
            others = {rc: host['used'].get(rc, 0)
                      + host['used'].get(base.PREEMPTIBLE[rc], 0)
                      - len(left) * self.preemptible.size[rc]
                      for rc in base.STANDARD}
            victims[name] = len(here) - len(left)
            minimum[name] = needed_victims(
                others, len(here), host['capacity'],
                self.preemptible.size) + spent.get(name, 0)
        beyond = {n: victims[n] - minimum[n] for n in hosts
                  if victims[n] > minimum[n]}
        statuses = {}
        for _, status, _ in outcome.values():
            statuses[status] = statuses.get(status, 0) + 1
        no_fault = sorted(i for i, (_, status, fault) in outcome.items()
                          if status != 'ACTIVE' and not fault)
        figures = dict(notes, scenario=scenario,
                       requests=statuses,
                       failed_without_fault=len(no_fault) + len(
                           snap['faultless']),
                       stuck=len(snap['stuck']),
                       hosts_over_capacity=len(snap['over']),
                       orphan_allocations=len(snap['orphans']),
                       victims=sum(victims.values()),
                       victims_minimum=sum(minimum.values()),
                       victims_of_failed_requests=sum(spent.values()),
                       victims_unexplained=len(unexplained),
                       converged_s=round(converged, 1))
        self.report(figures)
        failures = {}
        for key, value in (('stuck in BUILD or a task', snap['stuck']),
                           ('hosts over capacity (excess by class)',
                            snap['over']),
                           ('allocations without a server', snap['orphans']),
                           ('failed requests without a fault',
                            no_fault + snap['faultless']),
                           ('victims beyond the minimum per host', beyond),
                           ('victims without a preempt action',
                            unexplained)):
            if value:
                failures[key] = value
        self.assertEqual({}, failures, 'chaos %s: %s' % (
            scenario, json.dumps(figures, sort_keys=True)))
        return figures

    def choosers(self):
        """``{victim uuid: request id}`` of the victims whose termination
        began since :meth:`prepare`, read from the schedulers' logs (the
        line each writes when a victim's record goes ``terminating``).

        Not from the victim's ``preempt`` instance action: it is recorded
        under a request id of the decision's own, never the preemptor's
        (the victim's owner must not learn another project's request id);
        nor from its fault (nova soft-deletes a deleted server's faults
        with it).
        """
        found = {}
        for line in self.victim_lines.lines():
            match = VICTIM_LINE.search(line)
            if match:
                found[match.group(1)] = match.group(2)
        return found

    def report(self, figures):
        line = 'chaos %s: %s' % (figures['scenario'], ', '.join(
            '%s %s' % (k, json.dumps(v, sort_keys=True))
            for k, v in sorted(figures.items()) if k != 'scenario'))
        LOG.info(line)
        print(line)
        if CONF.opie.chaos_report:
            with open(CONF.opie.chaos_report, 'a') as f:
                f.write(line + '\n')

    def pick_host(self, fill):
        """The compute host holding the most of the fill."""
        counts = {}
        for host in fill.values():
            counts[host] = counts.get(host, 0) + 1
        return max(sorted(counts), key=lambda h: counts[h])

    def wait_deleting(self, fill, host, timeout=60):
        """Wait until a fill server on ``host`` is being deleted (the
        victim's delete was sent to its compute); returns its id.
        """
        deadline = time.monotonic() + timeout

        def deleting():
            servers = self._servers()
            found = [i for i, h in fill.items() if h == host and (
                i not in servers or servers[i].get(
                    'OS-EXT-STS:task_state') == 'deleting')]
            return bool(found), found
        found = self.wait_until('victim deleting', deleting, deadline)
        self.assertTrue(found, 'no victim on %s was being deleted within '
                        '%d s' % (host, timeout))
        return found[0]

    # -- the scenarios -------------------------------------------------------

    def kill_worker_at(self, pattern, scenario):
        """Boot two normal servers on one host of the fill; SIGKILL the
        opie-scheduler worker as soon as it writes a line matching
        ``pattern``; the request fails (its worker is gone), the next one
        to the same host must still preempt; then assess ``scenario``.
        """
        fill = self.prepare()
        host = self.pick_host(fill)
        watch = self.faults.watch(*self.schedulers)
        workers = self.scheduler_workers()
        # Two instances on one host: the first decision is logged while
        # the second is still being claimed.
        rid, ids = self.boot_normal(count=2, host=host)
        line, _ = watch.wait_for(pattern, 120)
        pid = chaos.pid_of(line)
        self.assertIn(pid, workers, 'the line %r was not written by an '
                      'opie-scheduler worker %s' % (line, workers))
        self.faults.kill(pid)
        t_fault = time.monotonic()
        kill_delay = time.time() - chaos.time_of(line)
        respawned = self.wait_until(
            'worker respawned',
            lambda: (len(self.scheduler_workers()) >= len(workers),
                     time.monotonic() - t_fault),
            t_fault + 60)
        outcome = {}
        deadline = t_fault + CONF.opie.chaos_converge_timeout
        self.settle({rid: ids}, deadline, outcome)
        # The host again, now that the dead worker's request is over: its
        # reservations must not make the next request skip preemption.
        rid2, ids2 = self.boot_normal(count=1, host=host)
        self.settle({rid2: ids2}, deadline, outcome)
        return self.assess(scenario, fill, outcome, t_fault,
                           {'killed_pid': pid,
                            'kill_after_line_s': round(kill_delay, 3),
                            'worker_respawned_s': round(respawned or -1, 1),
                            'host': host})

    @decorators.idempotent_id('c4a05f3e-7d1b-4b8e-9a61-2f0d3e5c7b01')
    def test_scheduler_worker_killed_after_decision(self):
        # Killed as soon as it logs its decision: usually before its
        # victims' records went ``terminating`` (they are released), at
        # times after (they are terminated for a request that failed).
        self.kill_worker_at(DECISION,
                            'scheduler worker killed after its decision')

    @decorators.idempotent_id('0d6b1f47-2a8e-4c53-9e1d-7b4f5a6c8e03')
    def test_scheduler_worker_killed_while_victims_terminate(self):
        # Killed once a victim's record is ``terminating``: the reconciler
        # finishes that termination for a request that then failed; the
        # victim counts once, as the failed request's.
        figures = self.kill_worker_at(
            TERMINATING, 'scheduler worker killed while its victims '
            'terminate')
        self.assertGreaterEqual(
            figures['victims_of_failed_requests'], 1,
            'the victim whose termination had begun was not terminated '
            'for the failed request: %s' % figures)

    @decorators.idempotent_id('5b7e2c90-3f4a-4d1c-8e6b-9a0c1d2e3f02')
    def test_compute_frozen_while_victims_deleted(self):
        fill = self.prepare()
        host = self.pick_host(fill)
        service = self.compute_services[host]
        self.faults.freeze(service)
        self.addCleanup(self.faults.thaw, service)
        t_fault = time.monotonic()
        rid, ids = self.boot_normal(count=1, host=host)
        victim = self.wait_deleting(fill, host)
        frozen_for = OUTAGE - (time.monotonic() - t_fault)
        if frozen_for > 0:
            # The compute stays frozen for the outage, however long the
            # decision took; nothing to poll for meanwhile.
            time.sleep(frozen_for)
        self.faults.thaw(service)
        outcome = {}
        self.settle({rid: ids}, t_fault + CONF.opie.chaos_converge_timeout,
                    outcome)
        self.assess('compute frozen while its victim is deleted', fill,
                    outcome, t_fault,
                    {'frozen_s': round(time.monotonic() - t_fault, 1),
                     'victim': victim, 'host': host})

    @decorators.idempotent_id('8d2f4a61-0b3c-4e5d-9f7a-6b1c2d3e4f03')
    def test_compute_killed_while_victims_deleted(self):
        fill = self.prepare()
        host = self.pick_host(fill)
        service = self.compute_services[host]
        # Frozen first, so that it is killed with the victim's delete in
        # flight (sent, not finished).
        self.faults.freeze(service)
        self.addCleanup(self.faults.thaw, service)
        t_fault = time.monotonic()
        rid, ids = self.boot_normal(count=1, host=host)
        victim = self.wait_deleting(fill, host)
        self.faults.kill_service(service)
        dead = OUTAGE - (time.monotonic() - t_fault)
        if dead > 0:
            time.sleep(dead)
        restarted = datetime.datetime.utcnow()
        t_restart = time.monotonic()
        self.faults.restart(service)
        up = self.wait_until(
            'compute up again',
            lambda: (self._compute_reported(host, restarted),
                     time.monotonic() - t_restart),
            t_restart + 120)
        outcome = {}
        self.settle({rid: ids}, t_fault + CONF.opie.chaos_converge_timeout,
                    outcome)
        self.assess('compute killed while its victim is deleted', fill,
                    outcome, t_fault,
                    {'victim': victim, 'host': host,
                     'compute_reported_after_restart_s': round(up or -1, 1)})

    def _compute_reported(self, host, since):
        """Whether the nova-compute of ``host`` reported (is up) after
        ``since`` (naive UTC datetime).
        """
        _, body = self.call(self.admin, 'GET',
                            '/os-services?binary=nova-compute&host=%s'
                            % host, '2.11')
        for svc in body['services']:
            updated = svc.get('updated_at')
            if svc['state'] == 'up' and updated and \
                    datetime.datetime.fromisoformat(
                        updated.split('.')[0]) > since:
                return True
        return False

    def drop_around_decision(self, drop, before, after):
        """Boot one normal request; call ``drop()`` (returns how many
        connections it dropped) back to back from its POST until its
        preemption decision when ``before``, then ``after`` times right
        after the decision.

        :returns: ``(request id, ids, rounds, connections dropped,
            whether a decision was logged within 60 s)``.
        """
        watch = self.faults.watch(*self.schedulers)
        stop = threading.Event()
        dropped = []

        def loop():
            while not stop.is_set():
                try:
                    dropped.append(drop())
                except Exception as exc:
                    LOG.warning('chaos: drop failed: %s', exc)
        rid, ids = self.boot_normal(count=1)
        thread = threading.Thread(target=loop, daemon=True)
        if before:
            thread.start()
        try:
            watch.wait_for(DECISION, 60)
            decided = True
        except chaos.FaultError:
            decided = False
        stop.set()
        if before:
            thread.join(30)
        for _ in range(after):
            dropped.append(drop())
        return rid, ids, len(dropped), sum(dropped), decided

    @decorators.idempotent_id('2e6a8c14-5d7f-4a9b-8c0d-1e2f3a4b5c04')
    def test_broker_and_database_connections_dropped(self):
        fill = self.prepare()
        notes, outcome = {}, {}
        t_fault = time.monotonic()
        deadline = t_fault + CONF.opie.chaos_converge_timeout
        # The broker's connections from the POST on (rabbitmqctl takes
        # 1-2 s a call) and once after the decision; the database's twice
        # right after the decision, while the scheduler terminates the
        # victim (earlier, nova itself loses builds: a conductor that
        # cannot bury a failed request in cell0 leaves its build request
        # listed in BUILD forever).
        for fault, drop, before, after in (
                ('broker', self.faults.close_broker_connections, True, 1),
                ('database', self.faults.kill_database_connections, False,
                 2)):
            rid, ids, rounds, count, decided = self.drop_around_decision(
                drop, before, after)
            notes.update({'%s_drops' % fault: rounds,
                          '%s_connections_dropped' % fault: count,
                          '%s_request_decided' % fault: decided})
            self.settle({rid: ids}, deadline, outcome)
        self.assess('broker then database connections dropped', fill,
                    outcome, t_fault, notes)
