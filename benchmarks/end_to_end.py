#!/usr/bin/env python
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
"""End to end on a real cloud: a normal server on a preemptible-full cloud.

Usage::

    python benchmarks/end_to_end.py --devcloud STATE_DIR
        [--stock-devcloud STATE_DIR] [--flavor m1.medium] [--image NAME]
        [--repeat 10] [--timeout 300] [--json PATH]
    python benchmarks/end_to_end.py --os-cloud NAME --transport-url URL
        [--stock-cloud NAME [--stock-clouds-yaml PATH]
         --stock-transport-url URL] ...

Times ``server create`` to ACTIVE of a normal server (openstacksdk,
through the public APIs; admin, to list every server and read Placement)
in three designs. ``--devcloud`` reads a devcloud's clouds.yaml (cloud
``devcloud-admin``) and its notification transport (the devcloud must run
with ``--notifications``); ``--stock-devcloud`` the same of a devcloud
``up --stock-scheduler --notifications`` (stock nova-scheduler).

opie
    The opie cloud is filled with preemptible servers (the preemptible
    twin of ``--flavor``) until no more fit; the normal server is created
    and opie-scheduler preempts inside the scheduling pass.
(a) room free
    The same create where the room is free: on the stock cloud (stock
    nova-scheduler) when given, else on the opie cloud emptied first
    (opie-scheduler without preemption, NOT stock Nova). The output names
    the cloud of every column.
(b) aardvark-style retry
    On the stock cloud when given (aardvark runs beside a stock Nova),
    else on the opie cloud. The cloud is filled with servers of the
    *normal* flavor that this script treats as the preemptible project's
    (named ``e2e-pre-*``; Nova counts them as normal), so the create fails
    with NoValidHost. The reaper (this script) learns of the failure as
    aardvark does, from nova's versioned notifications read with an
    oslo.messaging notification listener on the cloud's transport: the
    ``instance.update`` of the server from ``building`` to ``error`` and
    the ``compute_task.build_instances.error`` whose reason is
    ``NoValidHost`` (nova 34's name of the scheduling error aardvark's
    patched Nova sent as ``scheduler.select_destinations.error``). It
    then reads each host's free room from Placement and the preemptible
    servers once, chooses victims with a greedy rule in the spirit of
    aardvark's strategies (our own rule, not aardvark's code, and not
    opie's exact selection): on each host the preemptible servers largest
    first until the request fits, on the host needing the fewest; deletes
    them, waits until their Placement allocations are gone (as aardvark
    does), and asks Nova to rebuild the same server (aardvark's retry).

    Not as aardvark: stock Nova refuses to rebuild a server whose build
    failed in scheduling (409 "invalid state for 'rebuild'": such a server
    was never scheduled and lives in cell0; aardvark relied on CERN's
    patched Nova and its PENDING state). When the rebuild is refused the
    reaper does what a stock Nova allows: deletes the failed server and
    creates the same request again (same name, flavor, image), which adds
    a build request and a quota check; the output says which one ran.

opie + headroom (``--headroom``)
    The demand the headroom is for (issue 31's target): an aggregate
    ``e2e-headroom`` holding every compute host gets ``opie_headroom`` =
    one normal server's size; the cloud is filled with preemptible
    servers; opie's reconciler marks the victims that restore the
    headroom at risk, gives them their notice (opie-scheduler's
    ``[opie_preemption] headroom_notice_seconds``) and acts at the
    deadline; once Placement shows room for one normal server, the normal
    server is created and timed. While waiting, the servers' metadata is
    listed every second: a victim's notice is its deadline
    (``opie:preempt_deadline``) less the start of its ``preempt_notice``
    instance action (recorded by opie just before it writes the notice;
    both whole seconds), or, where that action cannot be read, less the
    time the notice was first seen (which under-states the notice by up
    to the polling period and the listing's own time). Prints the create
    to ACTIVE against (a) (target <= 1.1) and the share of victims given
    at least ``--notice`` seconds less 1 s (the deadline is written in
    whole seconds; target >= 95 %). Each repetition waits a reconciler
    round and the notice out (about 3 minutes with the defaults).

burst beyond the headroom (``--headroom --burst 10,50``)
    After the headroom design, once per size N: the headroom restored
    as above, then N normal servers created at once. The first takes the
    headroom's room; the others preempt inside their scheduling pass
    (their victims' notices are cut, as the spot users' docs say). Prints
    the median, 90th percentile and maximum create to ACTIVE, how many
    failed (target 0: a normal request never fails), the victims taken
    and the time to send the N creates. The cloud must hold N + 1
    servers of the flavor. The burst's servers are watched by one listing
    every 0.5 s (each time late by at most that).

No design polls a full server listing in its timed create (the headroom
design's wait lists the servers once a second, before it): the failure
comes from the notifications, ACTIVE from a GET of the one server every
50 ms (the same for every column), the victims' release from ``GET
/allocations/{victim}``. Between repetitions the clouds are topped up,
not refilled; with a stock cloud the three designs take turns in each
repetition (the machine's load weighs alike on them). Prints per design
the median, 90th percentile and count of create to ACTIVE, a breakdown,
the ratios opie/(a) (target <= 1.5) and (b)/opie (target >= 2), and
whether the latter can be reached at all: a design that frees room inside
the scheduling pass still creates the server once, so (b)/(a) is the
ceiling of (b)/opie on that cloud. ``--json
PATH`` also writes the samples and the
medians that :class:`opie_sched.simulator.preemption_latency.RetryStepCosts`
reads (``model_steps``: ``boot``, ``delete``, ``fail`` in seconds).
"""

import argparse
from concurrent import futures
import configparser
import json
import os
import statistics
import sys
import threading
import time
import uuid

POLL = 0.05
PREFIX = 'e2e-'

#: nova's versioned notifications (nova's default topic and its
#: control exchange).
NOTIFICATION_TOPIC = 'versioned_notifications'
NOTIFICATION_EXCHANGE = 'nova'
#: The versioned notification of a build that found no host (nova 34).
BUILD_ERROR = 'compute_task.build_instances.error'


def _now():
    return time.monotonic()


def _data(payload):
    """The fields of a versioned notification payload (or ``{}``)."""
    return (payload or {}).get('nova_object.data') or {}


class BuildFailures:
    """Which servers failed to build for want of a host, from nova's
    versioned notifications: an oslo.messaging notification listener on
    ``transport_url``, topic :data:`NOTIFICATION_TOPIC`, in a pool of its
    own (it takes a copy of every notification, other consumers keep
    theirs).

    A server counts as failed for want of a host once both its
    ``instance.update`` from ``building`` to ``error`` and a
    :data:`BUILD_ERROR` whose reason's exception is ``NoValidHost`` (or
    ``NoValidHost_Remote``, as raised through RPC) came
    (nova sends the update first). Times are :func:`time.monotonic` at
    reception.
    """

    def __init__(self, transport_url):
        from oslo_config import cfg
        import oslo_messaging
        self._cond = threading.Condition()
        self._update = {}      # server id -> time of building -> error
        self._novalidhost = {}  # server id -> time of BUILD_ERROR
        transport = oslo_messaging.get_notification_transport(
            cfg.ConfigOpts(), url=transport_url)
        self._listener = oslo_messaging.get_notification_listener(
            transport, [oslo_messaging.Target(
                topic=NOTIFICATION_TOPIC, exchange=NOTIFICATION_EXCHANGE)],
            [self], executor='threading',
            pool='e2e-reaper-%s' % uuid.uuid4().hex[:8])
        self._listener.start()

    def stop(self):
        self._listener.stop()
        self._listener.wait()

    # -- oslo.messaging endpoint ------------------------------------------

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self.handle(event_type, payload)

    def error(self, ctxt, publisher_id, event_type, payload, metadata):
        self.handle(event_type, payload)

    def handle(self, event_type, payload, at=None):
        """Record one notification (``payload``: its versioned payload)."""
        at = _now() if at is None else at
        data = _data(payload)
        with self._cond:
            if event_type == 'instance.update':
                update = _data(data.get('state_update'))
                if (update.get('old_state') == 'building'
                        and update.get('state') == 'error'
                        and data.get('uuid')):
                    self._update.setdefault(data['uuid'], at)
            elif event_type == BUILD_ERROR:
                reason = _data(data.get('reason'))
                # the conductor names the scheduler's remote exception
                # NoValidHost_Remote
                if (str(reason.get('exception')).split('_Remote')[0]
                        == 'NoValidHost'
                        and data.get('instance_uuid')):
                    self._novalidhost.setdefault(data['instance_uuid'], at)
            else:
                return
            self._cond.notify_all()

    def failed_at(self, server_id):
        """Time both notifications of ``server_id`` were in, or None."""
        with self._cond:
            if (server_id in self._update
                    and server_id in self._novalidhost):
                return max(self._update[server_id],
                           self._novalidhost[server_id])
        return None

    def wait_failed(self, server_id, timeout):
        """Block until :meth:`failed_at` of ``server_id`` is known.

        :returns: that time (seconds, monotonic).
        :raises RuntimeError: not within ``timeout`` seconds.
        """
        deadline = _now() + timeout
        with self._cond:
            while True:
                at = self.failed_at(server_id)
                if at is not None:
                    return at
                left = deadline - _now()
                if left <= 0:
                    raise RuntimeError(
                        'no NoValidHost notification for server %s within '
                        '%d s (does the cloud send notifications?)'
                        % (server_id, timeout))
                self._cond.wait(left)


def devcloud_endpoints(state_dir):
    """``(clouds.yaml path, notification transport URL)`` of a devcloud.

    :raises SystemExit: no devcloud there, or it sends no notifications
        (``opie-sched devcloud up --notifications``).
    """
    clouds = os.path.join(state_dir, 'clouds.yaml')
    nova = os.path.join(state_dir, 'etc', 'nova', 'nova.conf')
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    if not parser.read(nova) or not os.path.exists(clouds):
        raise SystemExit('no devcloud in %s' % state_dir)
    if not parser.has_option('oslo_messaging_notifications', 'driver'):
        raise SystemExit('the devcloud of %s sends no notifications: start '
                         'it with "opie-sched devcloud up --notifications"'
                         % state_dir)
    return clouds, parser['DEFAULT']['transport_url']


class Cloud:
    """One openstacksdk connection and the helpers the designs share.

    :param clouds_yaml: the clouds.yaml holding ``name`` (None: the
        usual openstacksdk search, ``OS_CLIENT_CONFIG_FILE`` first).
    :param transport_url: nova's notification transport (None: no
        notifications, the retry design cannot run here).
    """

    def __init__(self, name, flavor, image, timeout, clouds_yaml=None,
                 transport_url=None, label=None):
        import openstack
        from openstack import config as os_config
        self.name = name
        self.label = label or name
        if clouds_yaml:
            region = os_config.OpenStackConfig(
                config_files=[clouds_yaml]).get_one(cloud=name)
            self.conn = openstack.connection.Connection(config=region)
        else:
            self.conn = openstack.connect(cloud=name)
        self.timeout = timeout
        self.transport_url = transport_url
        self._failures = None
        self.flavor = self.conn.compute.find_flavor(flavor,
                                                    ignore_missing=False)
        self.image = self._image(image)

    def failures(self):
        """The cloud's :class:`BuildFailures` listener (started once)."""
        if self._failures is None:
            if not self.transport_url:
                raise SystemExit('cloud %s: the retry design needs nova\'s '
                                 'notifications (--transport-url or '
                                 '--devcloud)' % self.label)
            self._failures = BuildFailures(self.transport_url)
        return self._failures

    def close(self):
        if self._failures is not None:
            self._failures.stop()

    def _image(self, name):
        if name:
            return self.conn.image.find_image(name, ignore_missing=False)
        for image in self.conn.image.images():
            return image
        raise SystemExit('cloud %s has no image; pass --image' % self.label)

    def twin(self):
        from opie_sched.common import flavors
        return self.conn.compute.find_flavor(
            flavors.twin_name(self.flavor.name), ignore_missing=False)

    # -- servers ---------------------------------------------------------

    def create(self, name, flavor):
        return self.conn.compute.create_server(
            name=name, flavor_id=flavor.id, image_id=self.image.id,
            networks='none')

    def ours(self):
        return [s for s in self.conn.compute.servers(all_projects=True)
                if (s.name or '').startswith(PREFIX)]

    def watch(self, server, until=('ACTIVE',), marks=None, error_ok=False):
        """Poll ``server`` (GET of that server) until its status is in
        ``until`` (or ERROR, unless ``error_ok``); ``marks`` (dict) gets
        the first time each state was seen.

        :returns: the final server.
        :raises RuntimeError: on timeout.
        """
        marks = {} if marks is None else marks
        deadline = _now() + self.timeout
        while True:
            s = self.conn.compute.get_server(server.id)
            t = _now()
            if s.compute_host and 'scheduled' not in marks:
                marks['scheduled'] = t
            marks.setdefault('status:%s' % s.status, t)
            if s.status in until or (s.status == 'ERROR'
                                     and not error_ok):
                return s
            if t > deadline:
                raise RuntimeError('server %s still %s after %d s' % (
                    s.id, s.status, self.timeout))
            time.sleep(POLL)

    def wait_allocations_gone(self, ids):
        """Wait until Placement holds no allocation of these consumers
        (the victims released their host, as aardvark waits).
        """
        deadline = _now() + self.timeout
        ids = set(ids)
        while ids:
            ids = {i for i in ids if self._get('/allocations/%s' % i)
                   .get('allocations')}
            if not ids:
                break
            if _now() > deadline:
                raise RuntimeError('allocations not released: %s'
                                   % sorted(ids))
            time.sleep(POLL)

    def delete(self, ids):
        """Delete servers and wait for their allocations to go."""
        for i in ids:
            self.conn.compute.delete_server(i, ignore_missing=True)
        self.wait_allocations_gone(ids)

    def wait_gone(self, ids):
        """Wait until the servers are gone (GET of each)."""
        deadline = _now() + self.timeout
        for i in ids:
            while self.conn.compute.find_server(
                    i, ignore_missing=True, all_projects=True):
                if _now() > deadline:
                    raise RuntimeError('server %s not deleted' % i)
                time.sleep(POLL)

    def clean(self):
        ours = [s.id for s in self.ours()]
        self.delete(ours)
        self.wait_gone(ours)

    # -- placement -------------------------------------------------------

    def _get(self, path):
        return self.conn.placement.get(
            path, headers={'OpenStack-API-Version': 'placement 1.6'}
        ).json()

    def hosts(self):
        """``{provider name: (capacity, used)}`` (Resources: vCPU, MB, GB)
        from Placement: capacity of the standard classes, usage of the
        full state (standard plus opie's ``CUSTOM_PREEMPTIBLE_*``).
        """
        from opie_sched.preemption import model
        result = {}
        for rp in self._get('/resource_providers')['resource_providers']:
            inv = self._get('/resource_providers/%s/inventories'
                            % rp['uuid'])['inventories']
            use = self._get('/resource_providers/%s/usages'
                            % rp['uuid'])['usages']
            if 'VCPU' not in inv:
                continue
            cap, used = [], []
            for rc in ('VCPU', 'MEMORY_MB', 'DISK_GB'):
                i = inv.get(rc, {})
                cap.append((i.get('total', 0) - i.get('reserved', 0))
                           * i.get('allocation_ratio', 1.0))
                used.append(use.get(rc, 0)
                            + use.get('CUSTOM_PREEMPTIBLE_' + rc, 0))
            result[rp['name']] = (model.Resources(*cap),
                                  model.Resources(*used))
        return result

    def room(self, flavor, hosts):
        """How many more servers of ``flavor`` fit the full states."""
        size = (flavor.vcpus, flavor.ram, flavor.disk)
        total = 0
        for cap, used in hosts.values():
            total += int(min((c - u) // s if s else 10 ** 6
                             for c, u, s in zip(cap, used, size)))
        return max(total, 0)

    def fill(self, flavor, label, capacity_of):
        """Boot servers of ``flavor`` until a create fails: the cloud is
        full (tops up a cloud filled before). ``capacity_of``: hosts ->
        how many to boot at once.
        """
        created = 0
        for _ in range(4):
            count = capacity_of(self.hosts())
            batch = [self.create('%s%s-%d' % (PREFIX, label, created + i),
                                 flavor) for i in range(count)]
            created += count
            errors = []
            for s in batch:
                if self.watch(s).status == 'ERROR':
                    errors.append(s.id)
            self.delete(errors)
            probe = self.create('%sprobe-%s' % (PREFIX, label), flavor)
            full = self.watch(probe).status == 'ERROR'
            self.delete([probe.id])
            if full:
                return created - len(errors)
        raise RuntimeError('cloud %s did not fill up' % self.label)


def create_timed(cloud, name, flavor):
    """``(server, marks)``: create and watch until ACTIVE or ERROR."""
    marks = {'start': _now()}
    server = cloud.create(name, flavor)
    marks['api'] = _now()
    server = cloud.watch(server, marks=marks)
    return server, marks


def timed_normal(cloud, name, design):
    """``(server, sample)``: a normal server of the cloud's flavor created
    and timed (:func:`create_timed`); ``sample`` holds ``total``, ``api``
    and ``scheduled`` in seconds from the create.

    :raises RuntimeError: the server did not become ACTIVE (``design``
        names the design in the message).
    """
    server, marks = create_timed(cloud, name, cloud.flavor)
    if server.status != 'ACTIVE':
        raise RuntimeError('%s: the normal server ended %s: %s'
                           % (design, server.status, server.fault))
    t0 = marks['start']
    return server, {'total': marks['status:ACTIVE'] - t0,
                    'api': marks['api'] - t0,
                    'scheduled': marks.get('scheduled',
                                           marks['status:ACTIVE']) - t0}


def run_opie(cloud, rep):
    twin = cloud.twin()
    cloud.fill(twin, 'pre%d' % rep,
               lambda hosts: max(1, cloud.room(twin, hosts)))
    server, sample = timed_normal(cloud, '%snormal-%d' % (PREFIX, rep),
                                  'opie')
    # top up for the next repetition: the preempted servers' room stays
    cloud.delete([server.id])
    return sample


def run_free(cloud, rep):
    server, sample = timed_normal(cloud, '%sfree-%d' % (PREFIX, rep),
                                  'free room')
    t1 = _now()
    cloud.delete([server.id])
    cloud.wait_gone([server.id])
    sample['delete'] = _now() - t1
    return sample


#: The aggregate of the headroom design and its metadata key (that of
#: opie_sched.preemption.headroom; not imported: the script runs on any
#: cloud from the client side).
HEADROOM_AGGREGATE = PREFIX + 'headroom'
HEADROOM_KEY = 'opie_headroom'
#: Server metadata keys of a victim's notice (opie_sched's
#: preemption.victim_state).
NOTICE_KEY = 'opie:preempt_notice'
DEADLINE_KEY = 'opie:preempt_deadline'
AT_RISK_KEY = 'opie:rebalance_recommendation'
#: The instance action opie records on a victim as it gives the notice.
NOTICE_ACTION = 'preempt_notice'
#: Seconds between two listings of the servers' metadata while the
#: headroom design waits for its room.
HEADROOM_POLL = 1.0


def _epoch(text):
    """Seconds since the epoch of an ISO 8601 UTC time (``...Z``), or
    None when ``text`` is not one.
    """
    import datetime
    try:
        return datetime.datetime.strptime(
            text, '%Y-%m-%dT%H:%M:%SZ').replace(
                tzinfo=datetime.timezone.utc).timestamp()
    except (TypeError, ValueError):
        return None


class NoticeLog:
    """What the servers' metadata showed of their notices, listing after
    listing.

    :meth:`see` takes one listing: ``[(server id, metadata dict)]`` at
    wall-clock ``at`` (seconds since the epoch) and returns the servers
    noticed for the first time; :meth:`given_at` records when the notice
    was given (its instance action's start). :meth:`notices` gives each
    noticed server's notice in seconds: its deadline less when it was
    given, else less the first listing that showed it (later than the
    notice, so never over-stated).
    """

    def __init__(self):
        self.first_notice = {}
        self.first_at_risk = {}
        self.deadline = {}
        self.given = {}

    def given_at(self, server_id, at):
        """The notice of ``server_id`` was given at ``at`` (seconds since
        the epoch; None: unknown).
        """
        if at is not None:
            self.given[server_id] = at

    def see(self, listing, at):
        new = []
        for server_id, meta in listing:
            meta = meta or {}
            if AT_RISK_KEY in meta:
                self.first_at_risk.setdefault(server_id, at)
            deadline = _epoch(meta.get(DEADLINE_KEY))
            if NOTICE_KEY in meta and deadline is not None:
                if server_id not in self.first_notice:
                    new.append(server_id)
                self.first_notice.setdefault(server_id, at)
                self.deadline[server_id] = deadline
        return new

    def notices(self):
        """``{server id: seconds of notice}``."""
        return {i: self.deadline[i] - self.given.get(i, t)
                for i, t in self.first_notice.items()}


def notice_given_at(conn, server_id):
    """Start of the server's latest ``preempt_notice`` instance action
    (seconds since the epoch), or None when it has none or it cannot be
    read.
    """
    import datetime
    try:
        starts = [a.start_time for a in conn.compute.server_actions(server_id)
                  if a.action == NOTICE_ACTION and a.start_time]
    except Exception:
        return None
    times = []
    for text in starts:
        try:
            t = datetime.datetime.fromisoformat(text.replace('Z', '+00:00'))
        except (AttributeError, ValueError):
            continue
        if t.tzinfo is None:
            t = t.replace(tzinfo=datetime.timezone.utc)
        times.append(t.timestamp())
    return max(times) if times else None


def notice_share(notices, target):
    """``(given, total)``: victims whose notice was at least ``target``
    seconds less 1 s (deadlines are written in whole seconds), of all.

    :param notices: iterable of seconds of notice.
    """
    notices = list(notices)
    return sum(1 for n in notices if n >= target - 1.0), len(notices)


def headroom_text(flavor):
    """The ``opie_headroom`` value of one free room for a server of
    ``flavor`` inside one host (the slots form: amounts would be summed
    over the pool's hosts, which a full cloud can meet with no host able
    to take the server).
    """
    return '1 x %d vcpu, %d MB, %d GB' % (flavor.vcpus, flavor.ram,
                                          flavor.disk)


class HeadroomAggregate:
    """The design's aggregate: every nova-compute host, with
    ``opie_headroom`` = one server of the cloud's normal flavor; deleted
    by :meth:`remove` (hosts first).
    """

    def __init__(self, cloud):
        self.cloud = cloud
        self.aggregate = None

    def create(self):
        compute = self.cloud.conn.compute
        for old in compute.aggregates():
            if old.name == HEADROOM_AGGREGATE:
                self._delete(old)
        self.aggregate = compute.create_aggregate(name=HEADROOM_AGGREGATE)
        hosts = sorted({s.host for s in compute.services()
                        if s.binary == 'nova-compute'})
        for host in hosts:
            compute.add_host_to_aggregate(self.aggregate, host)
        compute.set_aggregate_metadata(
            self.aggregate, {HEADROOM_KEY: headroom_text(self.cloud.flavor)})
        return hosts

    def _delete(self, aggregate):
        compute = self.cloud.conn.compute
        aggregate = compute.get_aggregate(aggregate)
        for host in aggregate.hosts or ():
            compute.remove_host_from_aggregate(aggregate, host)
        compute.delete_aggregate(aggregate, ignore_missing=True)

    def remove(self):
        if self.aggregate is not None:
            self._delete(self.aggregate)
            self.aggregate = None


def wait_for_headroom(cloud, label, wait):
    """Fill the cloud with preemptible servers (the twin of its flavor)
    and wait until the headroom's room for one normal server is free
    (the reconciler's notice given and acted on), watching the notices.

    :returns: ``(NoticeLog, waited)``: what the servers' metadata showed
        and the seconds from the full cloud to the room free.
    :raises RuntimeError: when the room is not free within ``wait``.
    """
    twin = cloud.twin()
    cloud.fill(twin, label, lambda hosts: max(1, cloud.room(twin, hosts)))
    log = NoticeLog()
    full_at = _now()
    while cloud.room(cloud.flavor, cloud.hosts()) < 1:
        new = log.see([(s.id, s.metadata) for s in cloud.conn.compute.servers(
            details=True, all_projects=True)
            if (s.name or '').startswith(PREFIX)], time.time())
        for server_id in new:
            log.given_at(server_id, notice_given_at(cloud.conn, server_id))
        if _now() - full_at > wait:
            raise RuntimeError('headroom: no room for one %s %d s after '
                               'the fill' % (cloud.flavor.name, wait))
        time.sleep(HEADROOM_POLL)
    return log, _now() - full_at


def run_headroom(cloud, rep, wait):
    """One repetition of the headroom design (module docstring).

    :param wait: seconds to wait for the headroom's room to be free.
    :returns: the sample: ``total``, ``api``, ``scheduled`` (seconds
        from the create), ``waited`` (seconds from the full cloud to the
        room free) and ``notices`` (seconds of notice per victim).
    :raises RuntimeError: when the room is not free within ``wait`` or
        the normal server does not become ACTIVE.
    """
    log, waited = wait_for_headroom(cloud, 'hr%d' % rep, wait)
    server, sample = timed_normal(cloud, '%shr-normal-%d' % (PREFIX, rep),
                                  'headroom')
    sample.update(waited=waited, notices=sorted(log.notices().values()))
    cloud.delete([server.id])
    return sample


#: Seconds between two listings of a burst's servers.
BURST_POLL = 0.5
#: Creates of a burst in flight at once (threads, one API call each).
BURST_SENDERS = 10


def burst_outcome(created, seen):
    """What a burst's listings showed.

    :param created: ``{server id: seconds (clock of _now) its create
        was sent}``.
    :param seen: ``{server id: (status, seconds first seen in it)}``,
        ACTIVE or ERROR only.
    :returns: dict: ``times`` (create to ACTIVE in seconds, sorted),
        ``failed`` (ERROR) and ``pending`` (neither yet) counts.
    """
    times = sorted(seen[i][1] - t for i, t in created.items()
                   if i in seen and seen[i][0] == 'ACTIVE')
    failed = sum(1 for i in created if i in seen and seen[i][0] == 'ERROR')
    return {'times': times, 'failed': failed,
            'pending': sum(1 for i in created if i not in seen)}


def run_burst(cloud, n, rep, wait):
    """A burst beyond the headroom (issue 31's burst row): the cloud
    filled with preemptible servers and its headroom restored (as
    :func:`run_headroom`), then ``n`` normal servers created at once: the
    first takes the headroom's room, the others preempt inside their
    scheduling pass (today's path; their victims' notices are cut).
    The creates are sent ``BURST_SENDERS`` at a time from threads while
    the burst's servers are listed every ``BURST_POLL`` seconds (one
    listing for all, not a GET per server: so each time is late by at
    most that spacing and a listing's own time). A create the API
    refuses counts as failed.

    :returns: the sample: ``n``, ``total`` (median create to ACTIVE),
        ``p90``, ``max``, ``failed`` (ERROR: must be 0), ``api`` (seconds
        to send the ``n`` creates), ``victims`` (preemptible servers gone
        or no longer ACTIVE after the burst), ``waited``; ``api`` is
        the seconds until the last create was answered.
    :raises RuntimeError: the headroom's room was not free within
        ``wait``, or servers neither ACTIVE nor ERROR within the timeout.
    """
    label = 'burst%d-%d' % (n, rep)
    log, waited = wait_for_headroom(cloud, label, wait)
    twin = cloud.twin()
    before = {s.id for s in cloud.conn.compute.servers(
        details=True, all_projects=True)
        if (s.name or '').startswith(PREFIX) and s.status == 'ACTIVE'
        and _flavor_field(s.flavor, 'original_name') == twin.name}
    name = '%s%s-normal' % (PREFIX, label)
    created = {}
    lock = threading.Lock()

    def send(i):
        t = _now()
        server = cloud.create('%s-%d' % (name, i), cloud.flavor)
        with lock:
            created[server.id] = t

    # the creates go out together (BURST_SENDERS at a time) while the
    # listing watches: a server ACTIVE before the last create was sent is
    # seen then, not after
    pool = futures.ThreadPoolExecutor(max_workers=min(n, BURST_SENDERS))
    start = _now()
    jobs = [pool.submit(send, i) for i in range(n)]
    seen = {}
    api = None
    deadline = _now() + cloud.timeout + n
    try:
        while True:
            at = _now()
            for s in cloud.conn.compute.servers(
                    details=True, all_projects=True, name='^%s' % name):
                if s.status in ('ACTIVE', 'ERROR'):
                    seen.setdefault(s.id, (s.status, at))
            if api is None and all(j.done() for j in jobs):
                api = _now() - start
            with lock:
                out = burst_outcome(dict(created), seen)
            if api is not None and not out['pending']:
                break
            if _now() > deadline:
                raise RuntimeError('burst of %d: %d servers neither ACTIVE '
                                   'nor ERROR after %d s' % (
                                       n, out['pending'], cloud.timeout))
            time.sleep(BURST_POLL)
    finally:
        pool.shutdown(wait=True)
    refused = [j.exception() for j in jobs if j.exception() is not None]
    for exc in refused:
        print('  burst of %d: a create was refused: %s' % (n, exc),
              file=sys.stderr)
    still = {s.id for s in cloud.conn.compute.servers(
        details=True, all_projects=True)
        if s.id in before and s.status == 'ACTIVE'}
    times = out['times'] or [float('nan')]
    sample = {'n': n, 'total': statistics.median(times),
              'p90': percentile90(times), 'max': max(times),
              'failed': out['failed'] + len(refused), 'api': api,
              'victims': len(before - still), 'waited': waited}
    cloud.delete(list(created))
    return sample


def _flavor_field(flavor, key):
    """A field of a server's embedded flavor (dict or sdk resource)."""
    try:
        value = flavor[key]
    except (KeyError, TypeError):
        value = getattr(flavor, key, None)
    return value or 0


def greedy_victims(hosts, preemptible, need):
    """An aardvark-style choice (our rule, not aardvark's code nor opie's
    exact selection): on each host, the preemptible servers largest first
    until the request fits the freed room; the host needing the fewest
    victims wins (ties: least room freed beyond the request, then name).

    :param hosts: ``{host: (capacity, used)}``, each a sequence (vCPU, MB,
        GB).
    :param preemptible: ``{host: [((vCPU, MB, GB), server id)]}``.
    :param need: the request, (vCPU, MB, GB).
    :returns: ``(host, [server id])``.
    :raises RuntimeError: no host can be freed enough.
    """
    best = None
    for name in sorted(hosts):
        cap, used = hosts[name]
        free = [c - u for c, u in zip(cap, used)]
        chosen = []
        for size, sid in sorted(preemptible.get(name, []), reverse=True):
            if all(f >= n for f, n in zip(free, need)):
                break
            chosen.append(sid)
            free = [f + x for f, x in zip(free, size)]
        if not all(f >= n for f, n in zip(free, need)):
            continue
        key = (len(chosen), sum(f - n for f, n in zip(free, need)), name)
        if best is None or key < best[0]:
            best = (key, name, chosen)
    if best is None:
        raise RuntimeError('reaper: no host can be freed')
    return best[1], best[2]


def aardvark_victims(cloud, request):
    """:func:`greedy_victims` over the cloud's Placement usage and its
    preemptible project's servers (``e2e-pre*``, ACTIVE; one listing).
    """
    hosts = cloud.hosts()
    by_host = {}
    for s in cloud.ours():
        if '-pre' not in s.name or s.status != 'ACTIVE':
            continue
        size = (_flavor_field(s.flavor, 'vcpus'),
                _flavor_field(s.flavor, 'ram'),
                _flavor_field(s.flavor, 'disk')
                + _flavor_field(s.flavor, 'ephemeral'))
        by_host.setdefault(s.hypervisor_hostname, []).append((size, s.id))
    return greedy_victims(hosts, by_host, (request.vcpus, request.memory_mb,
                                           request.disk_gb))


def _rebuild_refused(exc):
    from openstack import exceptions
    return (isinstance(exc, exceptions.ConflictException)
            and 'rebuild' in str(exc))


def run_retry(cloud, rep, attempts=3):
    """The aardvark-style retry: the build fails (NoValidHost, learnt from
    the notifications), the reaper frees a host, the same server is
    rebuilt, or deleted and created again when Nova refuses the rebuild.
    """
    from opie_sched.preemption import model
    f = cloud.flavor
    failures = cloud.failures()
    cloud.fill(f, 'pre%d' % rep,
               lambda hosts: max(1, cloud.room(f, hosts)))
    request = model.Resources(f.vcpus, f.ram, f.disk)
    name = '%snormal-%d' % (PREFIX, rep)
    t0 = _now()
    server = cloud.create(name, f)
    t_api = _now()
    sample = {'api': t_api - t0, 'victims': 0, 'rounds': 0}
    for attempt in range(attempts):
        t_fail = failures.wait_failed(server.id, cloud.timeout)
        if attempt == 0:
            sample['failed'] = t_fail - t0
        host, victims = aardvark_victims(cloud, request)
        t_chosen = _now()
        cloud.delete(victims)
        t_gone = _now()
        sample['rounds'] += 1
        sample['victims'] += len(victims)
        sample.setdefault('reaper', t_chosen - t_fail)
        sample.setdefault('victims_gone', t_gone - t_chosen)
        sample['host'] = host
        try:
            cloud.conn.compute.rebuild_server(server, image=cloud.image.id)
            sample['retry'] = 'rebuild'
        except Exception as exc:
            if not _rebuild_refused(exc):
                raise
            sample['retry'] = 'delete+create (rebuild refused: 409)'
            cloud.conn.compute.delete_server(server.id)
            server = cloud.create(name, f)
        marks = {}
        again = cloud.watch(server, marks=marks)
        if again.status == 'ACTIVE':
            break
        if 'No valid host' not in str((again.fault or {}).get('message')):
            raise RuntimeError('retry: server %s ended %s: %s'
                               % (server.id, again.status, again.fault))
        # lost the room to another build: the next round starts from its
        # notifications, as the first did
    else:
        raise RuntimeError('retry: no ACTIVE server after %d rounds'
                           % attempts)
    t_active = marks['status:ACTIVE']
    sample.update(total=t_active - t0, recreate=t_active - t_gone)
    cloud.delete([server.id])
    return sample


def med(samples, key):
    values = [s[key] for s in samples if key in s]
    return statistics.median(values) if values else float('nan')


def p90(samples, key):
    """90th percentile (linear between closest ranks) of ``key``."""
    return percentile90(s[key] for s in samples if key in s)


def percentile90(values):
    """90th percentile (linear between closest ranks) of ``values``
    (nan when empty).
    """
    values = sorted(values)
    if not values:
        return float('nan')
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=10, method='inclusive')[8]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--devcloud', metavar='STATE_DIR',
                   help='a devcloud (opie-scheduler, --notifications): its '
                        'clouds.yaml, cloud devcloud-admin, and transport')
    p.add_argument('--stock-devcloud', metavar='STATE_DIR',
                   help='a devcloud up with --stock-scheduler '
                        '--notifications, for (a) and (b)')
    p.add_argument('--os-cloud',
                   help='cloud (clouds.yaml) running opie-scheduler, admin')
    p.add_argument('--transport-url',
                   help="nova's notification transport of --os-cloud")
    p.add_argument('--stock-cloud',
                   help='cloud running stock Nova for (a) and (b) (default: '
                        '--os-cloud, (a) with the room free)')
    p.add_argument('--stock-clouds-yaml', metavar='PATH',
                   help='the clouds.yaml of --stock-cloud')
    p.add_argument('--stock-transport-url',
                   help="nova's notification transport of --stock-cloud")
    p.add_argument('--flavor', default='m1.medium',
                   help='normal flavor; its preemptible twin fills the '
                        'cloud (default: %(default)s)')
    p.add_argument('--image', help='image name or id (default: the first)')
    p.add_argument('--repeat', type=int, default=3)
    p.add_argument('--timeout', type=float, default=300.0,
                   help='seconds to wait for any one server')
    p.add_argument('--json', metavar='PATH')
    p.add_argument('--designs', default='free,opie,retry',
                   help='comma-separated designs besides the headroom '
                        'one: free, opie, retry; free is always run '
                        '(default: %(default)s)')
    p.add_argument('--headroom', action='store_true',
                   help='also run the headroom design on the opie cloud '
                        '(about 3 minutes per repetition)')
    p.add_argument('--notice', type=float, default=120.0,
                   help='the headroom notice the opie cloud gives '
                        '(opie-scheduler\'s [opie_preemption] '
                        'headroom_notice_seconds; the target of the '
                        'notice share; default: %(default)s)')
    p.add_argument('--headroom-wait', type=float, default=600.0,
                   help='seconds to wait for the headroom\'s room per '
                        'repetition (default: %(default)s)')
    p.add_argument('--burst', default='',
                   help='with --headroom: comma-separated burst sizes N; '
                        'after the headroom design, N normal servers '
                        'created at once beyond the headroom, once per '
                        'size (the cloud must hold N + 1 servers of the '
                        'flavor; e.g. 10,50)')
    args = p.parse_args(argv)
    if args.repeat < 1:
        p.error('--repeat must be >= 1')
    try:
        bursts = [int(n) for n in args.burst.split(',') if n.strip()]
    except ValueError:
        p.error('--burst: comma-separated whole numbers, got %r'
                % args.burst)
    if any(n < 1 for n in bursts):
        p.error('--burst: sizes must be >= 1')
    if bursts and not args.headroom:
        p.error('--burst needs --headroom (the burst is beyond it)')
    designs = {d.strip() for d in args.designs.split(',') if d.strip()}
    if designs - {'free', 'opie', 'retry'}:
        p.error('--designs: unknown %s'
                % ', '.join(sorted(designs - {'free', 'opie', 'retry'})))
    designs.add('free')
    if not (args.devcloud or args.os_cloud):
        p.error('give --devcloud or --os-cloud')
    clouds_yaml, transport = None, args.transport_url
    if args.devcloud:
        clouds_yaml, transport = devcloud_endpoints(args.devcloud)
    opie = Cloud(args.os_cloud or 'devcloud-admin', args.flavor, args.image,
                 args.timeout, clouds_yaml, transport,
                 label=args.devcloud or args.os_cloud)
    stock = None
    if args.stock_devcloud:
        yaml_path, url = devcloud_endpoints(args.stock_devcloud)
        stock = Cloud(args.stock_cloud or 'devcloud-admin', args.flavor,
                      args.image, args.timeout, yaml_path, url,
                      label=args.stock_devcloud)
    elif args.stock_cloud:
        stock = Cloud(args.stock_cloud, args.flavor, args.image,
                      args.timeout, args.stock_clouds_yaml,
                      args.stock_transport_url, label=args.stock_cloud)
    other = stock or opie
    free_on = ('%s (stock nova-scheduler)' % stock.label if stock else
               '%s emptied first (opie-scheduler, NOT stock Nova: no stock '
               'cloud given)' % opie.label)
    retry_on = ('%s (stock nova-scheduler)' % stock.label if stock else
                '%s (opie-scheduler; its fill is normal servers, so opie '
                'never preempts there)' % opie.label)
    print('end to end: flavor %s (%d vCPU / %d MB / %d GB), image %s, %d '
          'repetitions' % (opie.flavor.name, opie.flavor.vcpus,
                           opie.flavor.ram, opie.flavor.disk,
                           opie.image.name, args.repeat))
    print('  (a) room free ran on: %s' % free_on)
    print('  opie ran on: %s (opie-scheduler)' % opie.label)
    print('  (b) retry ran on: %s' % retry_on)
    samples = {'opie': [], 'free': [], 'retry': []}
    if args.headroom:
        samples['headroom'] = []
    if bursts:
        samples['burst'] = []

    def show(v):
        if isinstance(v, float):
            return '%.2f' % v
        if isinstance(v, list):
            return '%d (min %s)' % (len(v), '%.1f' % min(v) if v else '-')
        return v

    def say(design, rep, s):
        print('  rep %d %-5s %.2f s  %s' % (
            rep + 1, design, s['total'], ', '.join(
                '%s %s' % (k, show(v))
                for k, v in sorted(s.items()) if k != 'total')),
            file=sys.stderr)
        sys.stderr.flush()

    try:
        opie.clean()
        if stock:
            # the three designs in turn, so that the machine's load (other
            # tenants) weighs alike on them; (a) takes the room the
            # retry's server left on the stock cloud
            stock.clean()
            for rep in range(args.repeat):
                for design, func, cloud in (('free', run_free, stock),
                                            ('opie', run_opie, opie),
                                            ('retry', run_retry, stock)):
                    if design not in designs:
                        continue
                    samples[design].append(func(cloud, rep))
                    say(design, rep, samples[design][-1])
        else:
            # (a) on the empty cloud, then the designs that fill it
            for rep in range(args.repeat):
                samples['free'].append(run_free(opie, rep))
                say('free', rep, samples['free'][-1])
            for design, func in (('opie', run_opie), ('retry', run_retry)):
                if design not in designs:
                    continue
                opie.clean()
                for rep in range(args.repeat):
                    samples[design].append(func(opie, rep))
                    say(design, rep, samples[design][-1])
        if args.headroom:
            opie.clean()
            aggregate = HeadroomAggregate(opie)
            try:
                hosts = aggregate.create()
                print('  headroom ran on: %s, aggregate %s (%d hosts), '
                      'opie_headroom %s' % (opie.label, HEADROOM_AGGREGATE,
                                            len(hosts),
                                            headroom_text(opie.flavor)))
                for rep in range(args.repeat):
                    samples['headroom'].append(
                        run_headroom(opie, rep, args.headroom_wait))
                    say('headroom', rep, samples['headroom'][-1])
                for n in bursts:
                    samples['burst'].append(
                        run_burst(opie, n, 0, args.headroom_wait))
                    say('burst', 0, samples['burst'][-1])
            finally:
                opie.clean()
                aggregate.remove()
    finally:
        for cloud in {id(c): c for c in (opie, other)}.values():
            cloud.clean()
            cloud.close()
    free, op, retry = (med(samples[k], 'total') for k in
                       ('free', 'opie', 'retry'))
    print()
    print('%-30s %7s %7s %3s  %s' % ('create -> ACTIVE (s)', 'median',
                                     'p90', 'n', 'cloud'))
    for key, label, on in (('free', '(a) room free', free_on),
                           ('opie', 'opie, preemptible-full',
                            '%s (opie-scheduler)' % opie.label),
                           ('retry', '(b) aardvark-style retry',
                            retry_on)):
        print('%-30s %7.2f %7.2f %3d  %s' % (
            label, med(samples[key], 'total'), p90(samples[key], 'total'),
            len(samples[key]), on))
    headroom = None
    given = total = 0
    if args.headroom:
        headroom = med(samples['headroom'], 'total')
        print('%-30s %7.2f %7.2f %3d  %s' % (
            'opie + headroom, demand in it', headroom,
            p90(samples['headroom'], 'total'), len(samples['headroom']),
            '%s (opie-scheduler, aggregate %s)' % (opie.label,
                                                   HEADROOM_AGGREGATE)))
        given, total = notice_share(
            [n for s in samples['headroom'] for n in s['notices']],
            args.notice)
    for b in samples.get('burst', ()):
        print('%-30s %7.2f %7.2f %3d  %s' % (
            'burst N = %d beyond it' % b['n'], b['total'], b['p90'],
            b['n'], 'failed %d, max %.2f, victims %d, creates sent in '
            '%.1f s' % (b['failed'], b['max'], b['victims'], b['api'])))
    print()
    if 'opie' in designs:
        print('ratio opie/(a): %.2f (target <= 1.5)' % (op / free))
    if headroom is not None:
        print('ratio (opie + headroom)/(a): %.2f (target <= 1.1)'
              % (headroom / free))
        print('victims given >= %.0f s of notice (less 1 s): %d of %d '
              '(%s; target >= 95 %%); waited for the room: median %.0f s'
              % (args.notice, given, total,
                 '%.0f %%' % (100.0 * given / total) if total else 'none',
                 med(samples['headroom'], 'waited')))
    if 'retry' in designs and 'opie' in designs:
        print('ratio (b)/opie: %.2f (target >= 2)' % (retry / op))
        print(retry_target_reach(free, op, retry))
    print()
    print('breakdown (medians, s):')
    if 'opie' in designs:
        print('  opie : API %.2f, scheduled (victims chosen, deleted, host '
              'set) %.2f, ACTIVE %.2f' % (med(samples['opie'], 'api'),
                                          med(samples['opie'], 'scheduled'),
                                          op))
    if 'retry' in designs:
        parts = [('API answer', med(samples['retry'], 'api')),
                 ('NoValidHost notified', med(samples['retry'], 'failed')),
                 ('reaper choice', med(samples['retry'], 'reaper')),
                 ('victims\' allocations gone',
                  med(samples['retry'], 'victims_gone')),
                 ('retry to ACTIVE', med(samples['retry'], 'recreate'))]
        print('  retry: ' + ', '.join('%s %.2f' % kv for kv in parts))
        print('  retry ran as: %s' % ', '.join(sorted(
            {s.get('retry', '?') for s in samples['retry']})))
        top = max(parts[1:], key=lambda kv: kv[1])
        print('  retry is dominated by: %s (%.0f%% of its total)' % (
            top[0], 100.0 * top[1] / retry))
    if headroom is not None:
        print('  headroom: scheduled %.2f, ACTIVE %.2f; notices (s) %s' % (
            med(samples['headroom'], 'scheduled'), headroom,
            ', '.join('%.1f' % n for n in sorted(
                n for s in samples['headroom'] for n in s['notices']))))
    if args.json:
        doc = {'cloud': opie.label, 'free_room_cloud': free_on,
               'retry_cloud': retry_on,
               'stock_cloud': stock.label if stock else None,
               'flavor': opie.flavor.name, 'samples': samples,
               'medians': {'free': free, 'opie': op, 'retry': retry,
                           'headroom': headroom},
               'bursts': {str(b['n']): b for b in samples.get('burst', ())},
               'notice': {'target': args.notice, 'given': given,
                          'victims': total} if headroom is not None
               else None,
               'p90': {k: p90(samples[k], 'total') for k in samples},
               'ratios': {'opie_vs_free': op / free,
                          'retry_vs_opie': retry / op},
               # what RetryStepCosts reads (seconds)
               'model_steps': {
                   'boot': free,
                   'delete': med(samples['free'], 'delete'),
                   'fail': med(samples['retry'], 'failed'),
                   'reaper': med(samples['retry'], 'reaper')}}
        with open(args.json, 'w') as f:
            json.dump(doc, f, indent=1)
    return 0


def retry_target_reach(free, op, retry):
    """One line on the (b)/opie >= 2 target: what opie's create to ACTIVE
    would have to be, and whether any design could get there.

    A design that frees room inside the scheduling pass still creates the
    server once, so its create to ACTIVE is at best (a)'s on free room:
    (b)/(a) is the ceiling of (b)/opie on that cloud.

    :param free: (a)'s median, seconds; ``op``, ``retry``: opie's and
        (b)'s medians, seconds.
    """
    need = retry / 2.0
    ceiling = retry / free
    if retry / op >= 2:
        return ('(b)/opie >= 2 reached (ceiling (b)/(a) = %.2f)' % ceiling)
    if ceiling < 2:
        return ('(b)/opie >= 2 is out of reach on this cloud: it needs opie '
                '<= %.2f s, below a create on free room (%.2f s); the '
                'retry costs free room + %.2f s, so its ceiling (b)/(a) is '
                '%.2f' % (need, free, retry - free, ceiling))
    return ('(b)/opie >= 2 needs opie <= %.2f s: %.2f s less than now '
            '(ceiling (b)/(a) = %.2f)' % (need, op - need, ceiling))


if __name__ == '__main__':
    sys.exit(main())
