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
"""Where the demo replays a workload: any cloud through openstacksdk.

:class:`OpenStackTarget` drives a cloud named in clouds.yaml (``opie-sched
demo --os-cloud NAME``): it finds or creates the demo's flavors (normal
ones, and their preemptible twins with
:func:`opie_sched.common.flavors.create_preemptible_twin`, the code of
``opie-sched
flavor create-preemptible``), boots and deletes servers through the compute
API and waits with openstacksdk's waiters, and learns about preemptions from
each victim's ``preempt`` instance action (``openstack server event list``).

:class:`EmbeddedTarget` is the same over the in-process
:class:`~opie_sched.demo.cloud.EmbeddedCloud`, plus what only an in-process
cloud allows: the preemption cost from the ``opie.instance.preempt``
notifications, and every running instance's ``launched_at`` moved to its
virtual start, so that cost modules see the trace's runtimes.
"""

import collections
import datetime
import logging
import time
import uuid

from opie_sched.common import compat
from opie_sched.notifications import base as notifications

LOG = logging.getLogger(__name__)

#: Instance action recorded on every victim (see opie_sched's preemption
#: actions); duplicated here so that a replay on a remote cloud does not
#: import nova.
PREEMPT_ACTION = 'preempt'
#: Versioned notification of a preemption decision.
PREEMPT_EVENT = 'opie.instance.preempt'


class BuildLost(Exception):
    """Nova dropped a server's build: it stays in BUILD for ever. The
    message is the reason, one line.
    """


class DeleteFailed(Exception):
    """Nova reverted a server's delete (the compute service failed it):
    the server is back, not deleting. The message says its status.
    """


class ReplayError(Exception):
    """A request of the replay failed for a reason other than the cloud
    refusing a server (e.g. an API error); the message names the request,
    the server and the cloud.
    """


#: Placement's standard resource classes, which count normal servers only
#: (the normal state), in the order of a flavor's (vCPU, MB, GB).
NORMAL_CLASSES = ('VCPU', 'MEMORY_MB', 'DISK_GB')

#: One preemption decision seen by the replay: the victims' uuids and the
#: decision's cost in the cost module's unit (None where the cloud does not
#: tell).
Preemption = collections.namedtuple('Preemption', 'victims cost')


def one_line(exc):
    """``Type: message`` of an exception on one line (whitespace runs
    collapsed; the type alone when the message is empty).
    """
    text = ' '.join(str(exc).split())
    return '%s: %s' % (type(exc).__name__, text) if text else \
        type(exc).__name__


def flavor_name(prefix, vcpus, memory_mb, disk_gb):
    """Name of the demo's normal flavor of that size, e.g.
    ``demo.c2m4000d40`` (vCPU, MB, GB).
    """
    return '%sc%dm%dd%d' % (prefix, vcpus, memory_mb, disk_gb)


class OpenStackTarget:
    """Replay on a cloud through an ``openstack.connection.Connection``.

    :param conn: the connection (admin: the demo creates flavors when
        missing, reads Placement for the capacity and lists instance
        actions).
    :param name: the cloud's name, for messages.
    :param image: name or ID of the image servers boot from; default the
        first active image.
    :param network: ``none`` (no port), ``auto`` or a network name or ID.
    :param flavor_prefix: prefix of the demo's flavor names.
    :param wait: seconds to wait for a server to become ACTIVE or be
        deleted before failing; None waits as long as it takes (a slow
        cloud makes the replay slower, not wrong).
    :param interval: seconds between two polls of a server's status.
    :param capacity_vcpus: the cloud's vCPU capacity for utilisation;
        default: the VCPU inventories in Placement.
    :param warn: called with one line when the replay works around a
        fault of the cloud (a lost build submitted again); default: log
        it as a warning.
    """

    #: whether launched_at can be moved to virtual time
    virtual_launch_times = False
    #: times a server's delete is asked for when nova reverts it
    DELETE_ATTEMPTS = 3
    #: seconds between two looks at a server being deleted
    DELETE_CHECK_INTERVAL = 2.0

    def __init__(self, conn, name, image=None, network='none',
                 flavor_prefix='demo.', wait=None, interval=2.0,
                 capacity_vcpus=None, warn=None):
        self.conn = conn
        self.name = name
        self.image = image
        self.network = network
        self.flavor_prefix = flavor_prefix
        self.wait = wait
        self.interval = interval
        self._capacity = capacity_vcpus
        self.warn = warn or LOG.warning
        self._image_id = None
        self._flavors = {}
        self.created = set()            # every server uuid booted
        self.hosts = {}                 # server uuid -> its compute host
        self.faults = {}                # failed server uuid -> fault text
        self.run_tag = uuid.uuid4().hex[:6]
        self._actions_seen = set()      # preempt action request ids

    # -- set-up ----------------------------------------------------------

    @property
    def capacity_vcpus(self):
        """vCPUs of the cloud's compute nodes: the sum over Placement's
        compute node providers of (VCPU total - reserved) x allocation
        ratio, unless given.
        """
        if self._capacity is None:
            self._capacity = self._placement_vcpus()
        return self._capacity

    def _placement_vcpus(self):
        from opie_sched.common import provider_config
        try:
            nodes = provider_config.inventories_from_placement(self.conn)
        except Exception as exc:
            raise ReplayError(
                'cannot read the vCPU capacity of cloud %s from Placement '
                '(%s); give it with --capacity-vcpus'
                % (self.name, one_line(exc)))
        total = sum((n['vcpus'] - n['reserved_vcpus'])
                    * n['cpu_allocation_ratio'] for n in nodes)
        if total <= 0:
            raise ReplayError('cloud %s has no compute node with VCPU '
                              'inventory in Placement; give the capacity '
                              'with --capacity-vcpus' % self.name)
        return total

    @property
    def image_id(self):
        if self._image_id is None:
            self._image_id = self._find_image()
        return self._image_id

    def _find_image(self):
        if self.image:
            image = self.conn.image.find_image(self.image,
                                               ignore_missing=True)
            if image is None:
                raise ReplayError('image %r not found on cloud %s'
                                  % (self.image, self.name))
            return image.id
        for image in self.conn.image.images(status='active'):
            return image.id
        raise ReplayError('cloud %s has no active image; give one with '
                          '--image' % self.name)

    def _networks(self):
        if self.network in ('none', 'auto'):
            return self.network
        net = self.conn.network.find_network(self.network,
                                             ignore_missing=True)
        if net is None:
            raise ReplayError('network %r not found on cloud %s'
                              % (self.network, self.name))
        return [{'uuid': net.id}]

    def flavor_id(self, req):
        """ID of the flavor of a request's size and class; created when
        missing (normal flavor, then its preemptible twin).

        :raises ReplayError: a flavor of that name exists with another size,
            or the twin is not preemptible, or creating it was refused.
        """
        from openstack import exceptions as sdk_exc

        from opie_sched.common import flavors

        key = (req.vcpus, req.memory_mb, req.disk_gb, req.preemptible)
        if key in self._flavors:
            return self._flavors[key]
        base_name = flavor_name(self.flavor_prefix, req.vcpus,
                                req.memory_mb, req.disk_gb)
        compute = self.conn.compute
        try:
            base = compute.find_flavor(base_name, ignore_missing=True)
            if base is None:
                base = compute.create_flavor(
                    name=base_name, vcpus=req.vcpus, ram=req.memory_mb,
                    disk=req.disk_gb)
            if (base.vcpus, base.ram, base.disk) != (
                    req.vcpus, req.memory_mb, req.disk_gb):
                raise ReplayError(
                    'flavor %s on cloud %s has %s vCPU, %s MB, %s GB; the '
                    'demo needs %d, %d, %d (delete it or use '
                    '--flavor-prefix)' % (base_name, self.name, base.vcpus,
                                          base.ram, base.disk, req.vcpus,
                                          req.memory_mb, req.disk_gb))
            self._flavors[key[:3] + (False,)] = base.id
            if req.preemptible:
                twin_name = flavors.twin_name(base_name)
                twin = compute.find_flavor(twin_name, ignore_missing=True)
                if twin is None:
                    twin = flavors.create_preemptible_twin(self.conn,
                                                           base.id)
                else:
                    specs = compute.fetch_flavor_extra_specs(twin)
                    if not flavors.is_preemptible(
                            specs.extra_specs or {}, twin.vcpus, twin.ram,
                            twin.disk):
                        raise ReplayError(
                            'flavor %s on cloud %s is not a valid '
                            'preemptible flavor (delete it or use '
                            '--flavor-prefix)' % (twin_name, self.name))
                self._flavors[key] = twin.id
        except (sdk_exc.SDKException, flavors.FlavorError) as exc:
            raise ReplayError('cannot get flavor %s%s on cloud %s: %s' % (
                base_name, '.preemptible' if req.preemptible else '',
                self.name, one_line(exc)))
        return self._flavors[key]

    # -- servers ---------------------------------------------------------

    def server_name(self, job_id):
        return 'opie-demo-%s-job%s' % (self.run_tag, job_id)

    def boot(self, name, flavor_id, count=1):
        """Create ``count`` servers in one request; wait for each.

        :returns: ``(active uuids, failed uuids)``; failed servers (ERROR:
            no room) are deleted. The host of each active server is in
            :attr:`hosts`, the fault message of each failed one in
            :attr:`faults` (read before it is deleted).
        :raises ReplayError: the API refused the request or a wait failed
            otherwise (the message names the request and the server).
        """
        from openstack import exceptions as sdk_exc

        compute = self.conn.compute
        what = 'boot %d x flavor %s as %s on cloud %s' % (
            count, flavor_id, name, self.name)
        try:
            first = compute.create_server(
                name=name, flavor_id=flavor_id, image_id=self.image_id,
                networks=self._networks(), min_count=count, max_count=count)
            if count > 1:
                resv = compute.get_server(first.id).reservation_id
                servers = list(compute.servers(reservation_id=resv))
            else:
                servers = [first]
        except sdk_exc.SDKException as exc:
            raise ReplayError('%s: %s' % (what, one_line(exc)))
        self.created.update(s.id for s in servers)
        ok, failed = [], []
        for server in servers:
            try:
                try:
                    done = self._wait_active(server)
                except BuildLost as lost:
                    done = self._resubmit(server, name, flavor_id, lost)
                ok.append(done.id)
                self.hosts[done.id] = getattr(done, 'compute_host', None)
            except sdk_exc.ResourceFailure as exc:
                uuid_ = getattr(exc, 'server_id', None) or server.id
                failed.append(uuid_)
                self.faults[uuid_] = self._fault(uuid_)
            except sdk_exc.SDKException as exc:
                raise ReplayError('%s: server %s: %s'
                                  % (what, server.id, one_line(exc)))
            except BuildLost as lost:
                raise ReplayError(
                    '%s: nova lost the build of server %s, and of the '
                    'server submitted again in its place (%s)'
                    % (what, server.id, lost))
        for uuid_ in failed:
            self.delete_server(uuid_)
        return ok, failed

    def _wait_active(self, server):
        """Wait for ``server`` to become ACTIVE; returns it.

        :raises openstack.exceptions.ResourceFailure: it went to ERROR.
        :raises openstack.exceptions.ResourceTimeout: not ACTIVE within
            :attr:`wait` seconds.
        :raises BuildLost: never here (a cloud seen through its API
            alone cannot tell a lost build from a slow one).
        """
        return self._active_within(server, self.wait)

    def _active_within(self, server, seconds):
        """openstacksdk's wait for ``server`` to be ACTIVE (ERROR fails
        it), for ``seconds`` (None: for ever).
        """
        return self.conn.compute.wait_for_server(
            server, status='ACTIVE', failures=['ERROR'],
            interval=self.interval, wait=seconds)

    def _resubmit(self, server, name, flavor_id, lost):
        """Replace a server whose build nova lost: delete it (nova's
        delete of a server still in BUILD also removes its Placement
        allocation), boot one server of the same name and flavor, and wait
        for it once.

        :returns: the new server, ACTIVE.
        :raises openstack.exceptions.ResourceFailure: the new server went
            to ERROR (its ``server_id`` attribute names it).
        :raises BuildLost: nova lost the new server's build too.
        """
        from openstack import exceptions as sdk_exc

        self.warn('nova lost the build of server %s (%s); deleting it and '
                  'submitting the request again' % (server.id, lost))
        self.delete_server(server.id)
        self.created.discard(server.id)
        again = self.conn.compute.create_server(
            name=name, flavor_id=flavor_id, image_id=self.image_id,
            networks=self._networks())
        self.created.add(again.id)
        try:
            return self._wait_active(again)
        except sdk_exc.ResourceFailure as exc:
            exc.server_id = again.id
            raise

    def _fault(self, uuid_):
        """The fault message of a server in ERROR, or None."""
        from openstack import exceptions as sdk_exc
        try:
            fault = self.conn.compute.get_server(uuid_).fault or {}
        except sdk_exc.SDKException:
            return None
        return fault.get('message') if isinstance(fault, dict) else None

    def normal_room(self):
        """Room left in the normal state: ``{host: (vCPU, MB, GB)}``, per
        compute node provider, of Placement's standard inventories
        ((total - reserved) x allocation ratio - used: what Placement
        admits a normal request on); None when Placement cannot be read
        (the report then says less).
        """
        from openstack import exceptions as sdk_exc
        placement = self.conn.placement
        room = {}
        try:
            for rp in placement.resource_providers():
                inv = {i.resource_class: i for i in
                       placement.resource_provider_inventories(rp)}
                if not all(rc in inv for rc in NORMAL_CLASSES):
                    continue
                used = compat.resource_provider_usages(placement, rp)
                room[rp.name] = tuple(
                    (inv[rc].total - inv[rc].reserved)
                    * inv[rc].allocation_ratio - used.get(rc, 0)
                    for rc in NORMAL_CLASSES)
        except sdk_exc.SDKException:
            return None
        return room

    def delete_server(self, uuid_):
        """Delete a server and wait until it is gone (already gone: fine).

        :raises ReplayError: the delete or the wait failed.
        """
        from openstack import exceptions as sdk_exc

        compute = self.conn.compute
        try:
            server = compute.get_server(uuid_)
        except sdk_exc.NotFoundException:
            return
        except sdk_exc.SDKException as exc:
            raise ReplayError('delete server %s on cloud %s: %s'
                              % (uuid_, self.name, one_line(exc)))
        for attempt in range(1, self.DELETE_ATTEMPTS + 1):
            try:
                compute.delete_server(server, ignore_missing=True)
                self._wait_deleted(server)
                return
            except DeleteFailed as exc:
                if attempt == self.DELETE_ATTEMPTS:
                    raise ReplayError(
                        'delete server %s on cloud %s failed %d times '
                        '(last: %s)' % (uuid_, self.name, attempt, exc))
                self.warn('the delete of server %s failed (%s); deleting '
                          'it again' % (uuid_, exc))
            except sdk_exc.SDKException as exc:
                raise ReplayError('delete server %s on cloud %s: %s'
                                  % (uuid_, self.name, one_line(exc)))

    def _wait_deleted(self, server):
        """Wait until ``server`` is gone, looking every
        :attr:`DELETE_CHECK_INTERVAL` seconds whether its delete failed.

        A delete the compute service failed is reverted by nova: the
        server is back without a task state (``deleting`` no more) and not
        DELETED, and would never be gone.

        :raises DeleteFailed: the delete failed (message: the server's
            status and fault, one line).
        :raises openstack.exceptions.ResourceTimeout: not gone within
            :attr:`wait` seconds.
        """
        from openstack import exceptions as sdk_exc

        compute = self.conn.compute

        def gone_or_failed():
            try:
                now = compute.get_server(server.id)
            except sdk_exc.NotFoundException:
                return True
            if now.task_state is None and now.status not in (
                    'DELETED', 'SOFT_DELETED'):
                fault = now.fault or {}
                raise DeleteFailed('status %s%s' % (
                    now.status, ', fault: %s' % ' '.join(str(
                        fault.get('message')).split())
                    if isinstance(fault, dict) and fault.get('message')
                    else ''))
            return False

        self._wait_in_steps(
            lambda step: compute.wait_for_delete(
                server, interval=self.interval, wait=step),
            gone_or_failed, self.DELETE_CHECK_INTERVAL)

    def _wait_in_steps(self, wait_step, look, every):
        """Run an openstacksdk waiter in steps of ``every`` seconds, with a
        look at the cloud after each step that timed out, for :attr:`wait`
        seconds in all (None: for ever).

        :param wait_step: called with the step's seconds; returns when the
            wait is over (its value is returned), raises
            ``ResourceTimeout`` when the step ran out.
        :param look: called after a step ran out; True ends the wait
            (None returned); it may raise to end it with an error.
        :raises openstack.exceptions.ResourceTimeout: :attr:`wait` seconds
            passed.
        """
        from openstack import exceptions as sdk_exc

        deadline = None if self.wait is None else \
            time.monotonic() + self.wait
        while True:
            step = every
            if deadline is not None:
                step = max(min(step, deadline - time.monotonic()), 0.001)
            try:
                return wait_step(step)
            except sdk_exc.ResourceTimeout:
                if look():
                    return None
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    def cleanup(self):
        """Delete every server this target booted that still exists."""
        for uuid_ in sorted(self.created):
            self.delete_server(uuid_)
        self.created.clear()

    # -- what the cloud did ----------------------------------------------

    def sync_launched_at(self, running, vnow):
        """Not possible through the public API: cost modules see the
        servers' real ages.
        """

    def collect_preemptions(self, running):
        """Preemptions of servers in ``running`` since the last call.

        A running server that is no longer ACTIVE and has a ``preempt``
        instance action was preempted; servers preempted by one decision
        share the action's request ID.

        :param running: uuids the replay believes running.
        :returns: list of :class:`Preemption` (cost None: only the
            scheduler's notification carries it).
        """
        from openstack import exceptions as sdk_exc

        if not running:
            return []
        compute = self.conn.compute
        try:
            active = {s.id for s in compute.servers(
                details=False, name='^opie-demo-%s-' % self.run_tag,
                status='ACTIVE')}
        except sdk_exc.SDKException as exc:
            raise ReplayError('list servers on cloud %s: %s'
                              % (self.name, one_line(exc)))
        by_request = collections.OrderedDict()
        for uuid_ in sorted(set(running) - active):
            try:
                actions = list(compute.server_actions(uuid_))
            except sdk_exc.NotFoundException:
                actions = []
            except sdk_exc.SDKException as exc:
                raise ReplayError('server event list %s on cloud %s: %s'
                                  % (uuid_, self.name, one_line(exc)))
            for action in actions:
                if action.action == PREEMPT_ACTION:
                    by_request.setdefault(action.request_id, []).append(
                        uuid_)
                    break
        out = []
        for request_id, victims in by_request.items():
            out.append(Preemption(victims, None))
        return out


class EmbeddedTarget(OpenStackTarget):
    """:class:`OpenStackTarget` over a started
    :class:`~opie_sched.demo.cloud.EmbeddedCloud`.
    """

    virtual_launch_times = True

    #: seconds between two looks at the conductor's lost builds while a
    #: server is in BUILD
    LOST_CHECK_INTERVAL = 1.0
    DELETE_CHECK_INTERVAL = 1.0

    def __init__(self, cloud, wait=None, interval=0.05, warn=None):
        super().__init__(cloud.connection(), 'embedded',
                         network='none', wait=wait, interval=interval,
                         capacity_vcpus=cloud.capacity_vcpus, warn=warn)
        self.cloud = cloud
        self._image_id = cloud.image_id
        self._notes_seen = 0

    def _wait_active(self, server):
        """As :meth:`OpenStackTarget._wait_active`, and every
        :attr:`LOST_CHECK_INTERVAL` seconds a look at the conductor's lost
        builds (:class:`~opie_sched.demo.cloud.LostBuilds`).

        :raises BuildLost: nova's conductor dropped this server's build.
        """
        def lost():
            reason = self.cloud.lost_builds.reason(server.id)
            if reason is not None:
                raise BuildLost(reason)
            return False

        return self._wait_in_steps(
            lambda step: self._active_within(server, step),
            lost, self.LOST_CHECK_INTERVAL)

    def cleanup(self):
        """Nothing: the embedded cloud is thrown away after the replay."""
        self.created.clear()

    def sync_launched_at(self, running, vnow):
        """Make every running instance look ``vnow - start`` seconds old.

        :param running: ``{uuid: virtual start}`` (seconds).
        """
        if not running:
            return
        from oslo_utils import timeutils

        from nova import context as nova_context
        from nova import objects

        wall = timeutils.utcnow()
        ctx = nova_context.get_admin_context()
        with nova_context.target_cell(ctx, self.cloud.cell) as cctxt:
            insts = objects.InstanceList.get_by_filters(
                cctxt, {'uuid': list(running), 'deleted': False})
            for inst in insts:
                inst.launched_at = wall - datetime.timedelta(
                    seconds=max(vnow - running[inst.uuid], 0))
                inst.save()

    def collect_preemptions(self, running):
        """Preemption decisions from the scheduler's notifications."""
        notes = self.cloud.notifications()
        out = []
        for note in notes[self._notes_seen:]:
            if note['event_type'] != PREEMPT_EVENT:
                continue
            data = notifications.from_primitive(note['payload'])
            out.append(Preemption([v.uuid for v in data.victims],
                                  data.total_cost))
        self._notes_seen = len(notes)
        return out
