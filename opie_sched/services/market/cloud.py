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
"""What the market reads from and does to Nova, through openstacksdk.

:func:`connect` builds the openstacksdk connection (the one place the
service's credentials are read); :class:`Cloud` wraps it with the calls
the market makes; :class:`ServerInfo` is a server as the market sees it.
"""

import dataclasses
import datetime
import threading

from oslo_log import log as logging
from oslo_utils import timeutils

from opie_sched.common import compat
from opie_sched.common import flavors
from opie_sched.market import pricing
from opie_sched.preemption import ownership
from opie_sched.services.market import opts

LOG = logging.getLogger(__name__)

# flavors whose marker disagreement was logged ({flavor name: message}):
# once per process and flavor, not once per server per tick
_reported = {}
_reported_lock = threading.Lock()
_REPORTED_MAX = 1024


def is_preemptible(extra_specs, flavor_name=None):
    """Whether a server is preemptible, by the ownership model's rule: its
    own flavor copy requests a ``CUSTOM_PREEMPTIBLE_*`` class in its
    unsuffixed ``resources:`` group
    (:func:`opie_sched.preemption.ownership.requests_preemptible`).

    The truth is the server's embedded flavor (Nova's copy of the flavor
    in the instance, shown by the API with its extra specs since
    microversion 2.47), not the consumer's Placement allocations: Nova
    builds every Placement claim of the server from that copy (its boot,
    and again at each move, unshelve and evacuation), so the classes it
    requests are what Placement holds and will hold; the scheduler's own
    re-check before every destructive step reads the same copy
    (:func:`opie_sched.scheduler.ownership.may_be_victim`). Allocations
    would cost one Placement read per server and tick, and a boot not
    placed yet (priced as demand) holds none. Where the two can differ
    (the source allocation of an unconfirmed resize belongs to the
    migration, not to the server) the scheduler's model pins the server;
    the market confirms such a resize before acting on it.

    The marker ``opie:preemptible`` is a consistency check only: a
    disagreement is logged at ERROR once per flavor and process, and the
    classes decide.

    :param extra_specs: the embedded flavor's extra specs (mapping str ->
        str, or None: no extra specs shown, a normal server).
    :param flavor_name: the flavor's name, for the message.
    :returns: bool.
    """
    specs = extra_specs or {}
    preemptible = ownership.requests_preemptible(specs)
    if preemptible != ownership.marked(specs):
        _report(specs, flavor_name)
    return preemptible


def _report(specs, flavor_name):
    message = ownership.disagreement(specs, flavor_name or '')
    if message is None:
        return
    key = flavor_name or ''
    with _reported_lock:
        if _reported.get(key) == message:
            return
        if len(_reported) >= _REPORTED_MAX:
            _reported.clear()
        _reported[key] = message
    LOG.error('Inconsistent preemptible flavor: %s', message)


#: Server statuses of a move or rebuild in progress: enforcement waits
#: (Nova refuses a stop or delete in the middle). VERIFY_RESIZE is not
#: one: the resize is done, Nova waits for the owner, and the market
#: does not (:meth:`.enforcement.Enforcer.check`).
BUSY_STATUSES = ('BUILD', 'MIGRATING', 'REBUILD', 'RESIZE', 'REVERT_RESIZE')

#: Status of a resize waiting for its confirmation.
VERIFY_RESIZE = 'VERIFY_RESIZE'

#: Text of Nova's NoValidHost fault (nova.exception.NoValidHost).
NO_VALID_HOST = 'No valid host'


def iso(timestamp):
    """Epoch seconds as ISO 8601 UTC text (``...Z``)."""
    return datetime.datetime.fromtimestamp(
        timestamp, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


def epoch(text):
    """ISO 8601 text (Nova's times) as epoch seconds; None if unreadable.
    """
    if not text:
        return None
    try:
        return timeutils.parse_isotime(text).timestamp()
    except ValueError:
        return None


class Refused(Exception):
    """Nova refused an interruption verb in the server's state (HTTP
    409, e.g. a shelve of a rescued server).
    """


@dataclasses.dataclass(frozen=True)
class ServerInfo:
    """A server as the market reads it from Nova.

    ``vcpus`` in vCPU, ``memory_mb`` in MB, ``created_at`` epoch seconds.
    """
    uuid: str
    project: str
    status: str
    host: str
    vcpus: int
    memory_mb: int
    extra_specs: dict
    metadata: dict
    created_at: float = None
    name: str = None
    task_state: str = None
    fault: str = None
    #: the flavor's name (Nova's ``flavor.original_name``), or None
    flavor_name: str = None

    @property
    def refused(self):
        """True for a boot Nova turned away: ERROR with a NoValidHost
        fault and never on a host.
        """
        return (self.status == 'ERROR' and not self.host
                and NO_VALID_HOST.lower() in (self.fault or '').lower())

    @property
    def unplaced(self):
        """True for a boot still being scheduled (BUILD, no host yet)."""
        return self.status == 'BUILD' and not self.host

    @property
    def preemptible(self):
        """The ownership model's rule (:func:`is_preemptible`): the
        preemptible resource classes its flavor copy requests, the marker
        only checked against them.
        """
        return is_preemptible(self.extra_specs, self.flavor_name)

    @property
    def busy(self):
        """True while Nova works on the server (resize, migration,
        rebuild, ...): the market does not act on it then.
        """
        return bool(self.task_state) or self.status in BUSY_STATUSES


def _fault_text(fault):
    if not fault:
        return None
    if isinstance(fault, dict):
        return str(fault.get('message') or '')
    return str(fault)


def _server_info(server):
    flavor = server.flavor or {}
    if not isinstance(flavor, dict):
        flavor = flavor.to_dict()
    return ServerInfo(
        uuid=server.id, project=server.project_id, status=server.status,
        host=server.compute_host, vcpus=int(flavor.get('vcpus') or 0),
        memory_mb=int(flavor.get('ram') or 0),
        extra_specs=dict(flavor.get('extra_specs') or {}),
        metadata=dict(server.metadata or {}),
        created_at=epoch(server.created_at), name=server.name,
        task_state=getattr(server, 'task_state', None),
        fault=_fault_text(getattr(server, 'fault', None)),
        flavor_name=flavor.get('original_name') or flavor.get('name'))


class Cloud:
    """What the market needs from Nova, through openstacksdk.

    :param conn: an ``openstack.connection.Connection`` with admin rights
        (all projects' servers, flavor extra specs, hosts).
    :param capacity_source: ``placement`` (preemptible inventories
        ``CUSTOM_PREEMPTIBLE_VCPU``/``CUSTOM_PREEMPTIBLE_MEMORY_MB``, else
        ``VCPU``/``MEMORY_MB``, times the allocation ratio, minus reserved)
        or ``hypervisors`` (``os-hypervisors`` at microversion 2.87).
        The market is contended -- prices rise above the reserve, shares
        fall below flavors, servers go out of bid -- only when the
        preemptible demand exceeds this capacity. With ``placement`` the
        capacity is what Placement admits, so that happens only when an
        inventory is lowered below its allocations; with ``hypervisors``
        (physical sizes, hosts not up left out) it also happens when the
        preemptible inventory is overcommitted (an allocation ratio above
        1 lets Placement admit more preemptible vCPU than the hosts have,
        which the market then shares by bid) or a host goes down.
    """

    def __init__(self, conn, capacity_source='placement'):
        self.conn = conn
        self.capacity_source = capacity_source
        # {uuid: fault text} of refused boots the list showed without
        # their fault (:meth:`servers`); a refused boot's fault does not
        # change, so it is read once
        self._faults = {}

    def servers(self):
        """Every server of every project, as :class:`ServerInfo`.

        A preemptible server listed as ERROR, on no host and without a
        fault gets its fault from ``GET /servers/{uuid}``
        (:func:`opie_sched.common.compat.server_fault`: nova 31 and 32's
        list omits the faults of cell0, where every refused boot is), so
        that a refused boot is seen as one (:attr:`ServerInfo.refused`) on
        every series; one request per such server, once a fault is found.
        """
        listed = [_server_info(s) for s in self.conn.compute.servers(
            details=True, all_projects=True)]
        faults = {}
        for i, info in enumerate(listed):
            if (info.status != 'ERROR' or info.host or info.fault
                    or not info.preemptible):
                continue
            fault = self._faults.get(info.uuid)
            if fault is None:
                fault = _fault_text(compat.server_fault(self.conn.compute,
                                                        info.uuid))
            if fault:
                faults[info.uuid] = fault
                listed[i] = dataclasses.replace(info, fault=fault)
        self._faults = faults
        return listed

    def get_server(self, uuid):
        """:class:`ServerInfo` of ``uuid``, or None when it is gone."""
        from openstack import exceptions as sdk_exc
        try:
            server = self.conn.compute.get_server(uuid)
        except sdk_exc.NotFoundException:
            return None
        if server.status == 'DELETED':
            return None
        return _server_info(server)

    def hosts(self):
        """``{host: {"vcpus": units, "memory_mb": units}}``."""
        if self.capacity_source == 'hypervisors':
            return self._hypervisor_hosts()
        return self._placement_hosts()

    def _hypervisor_hosts(self):
        resp = self.conn.compute.get('/os-hypervisors/detail',
                                     microversion='2.87')
        resp.raise_for_status()
        hosts = {}
        for hv in resp.json().get('hypervisors', []):
            if hv.get('state', 'up') != 'up':
                continue
            name = (hv.get('service') or {}).get('host') or hv[
                'hypervisor_hostname']
            hosts[name] = {pricing.VCPUS: int(hv['vcpus']),
                           pricing.MEMORY_MB: int(hv['memory_mb'])}
        return hosts

    def _node_hosts(self):
        """``({compute node uuid: service host}, {node name: service
        host})`` from ``os-hypervisors`` (microversion 2.53: the
        hypervisor id is the compute node's uuid, which is also its
        resource provider's uuid).
        """
        resp = self.conn.compute.get('/os-hypervisors/detail',
                                     microversion='2.53')
        resp.raise_for_status()
        by_id, by_name = {}, {}
        for hv in resp.json().get('hypervisors', []):
            host = (hv.get('service') or {}).get('host')
            if not host:
                continue
            if hv.get('id'):
                by_id[str(hv['id'])] = host
            if hv.get('hypervisor_hostname'):
                by_name[hv['hypervisor_hostname']] = host
        return by_id, by_name

    def _placement_hosts(self):
        """Capacities from Placement, keyed by **compute service host**
        (what servers' ``OS-EXT-SRV-ATTR:host`` and host aggregates
        name): a resource provider is named after the compute *node*
        (e.g. an FQDN), which may differ from the service host. The
        provider is matched to its node by uuid (then by name); the
        capacities of several nodes of one service host (ironic) add up.
        A provider no hypervisor names is keyed by its own name (logged).
        """
        placement = self.conn.placement
        by_id, by_name = self._node_hosts()
        hosts = {}
        for rp in placement.resource_providers():
            inv = {i.resource_class: i for i in
                   placement.resource_provider_inventories(rp)}
            capacity = {}
            for resource, classes in (
                    (pricing.VCPUS, (flavors.VCPU_CLASS, 'VCPU')),
                    (pricing.MEMORY_MB, (flavors.MEMORY_MB_CLASS,
                                         'MEMORY_MB'))):
                for rc in classes:
                    if rc in inv:
                        i = inv[rc]
                        capacity[resource] = int(
                            (i.total - (i.reserved or 0))
                            * (i.allocation_ratio or 1))
                        break
            if len(capacity) != 2:
                continue
            host = by_id.get(str(rp.id)) or by_name.get(rp.name)
            if host is None:
                LOG.warning('resource provider %s (%s) is no compute node '
                            'of os-hypervisors; priced as host %r',
                            rp.id, rp.name, rp.name)
                host = rp.name
            total = hosts.setdefault(host, dict.fromkeys(capacity, 0))
            for resource, units in capacity.items():
                total[resource] += units
        return hosts

    def aggregates(self):
        """``{aggregate name: [host, ...]}``."""
        return {a.name: list(a.hosts or ())
                for a in self.conn.compute.aggregates()}

    def set_metadata(self, uuid, metadata):
        self.conn.compute.set_server_metadata(uuid, **metadata)

    def delete_metadata(self, uuid, keys):
        from openstack import exceptions as sdk_exc
        for key in keys:
            try:
                self.conn.compute.delete_server_metadata(uuid, [key])
            except sdk_exc.NotFoundException:
                pass

    def add_tag(self, uuid, tag):
        """Tag server ``uuid`` (``PUT /servers/{uuid}/tags/{tag}``).

        :raises openstack.exceptions.SDKException: Nova refused it.
        """
        compat.add_server_tag(self.conn.compute, uuid, tag)

    def instance_actions(self, uuid):
        """Nova's instance actions of ``uuid`` (admin: every action,
        whoever asked it), as ``[(action name, start epoch seconds)]``;
        ``[]`` when the server is gone. Users cannot write them: the
        scheduler's ``preempt_notice`` and ``preempt`` actions are the
        service-owned trace of its notices
        (:func:`opie_sched.preemption.victim_state.pending_notice`).
        """
        from openstack import exceptions as sdk_exc
        try:
            resp = self.conn.compute.get(
                '/servers/%s/os-instance-actions' % uuid,
                microversion='2.58')
        except sdk_exc.NotFoundException:
            return []
        if resp.status_code == 404:
            return []
        resp.raise_for_status()
        return [(a.get('action'), epoch(a.get('start_time')))
                for a in resp.json().get('instanceActions', [])]

    def confirm_resize(self, uuid):
        """Confirm a resize waiting in VERIFY_RESIZE (asynchronous)."""
        self.conn.compute.confirm_server_resize(uuid)

    def terminate(self, uuid, verb):
        """Send an interruption verb (:data:`opie_sched.preemption.
        behaviours.VERBS`: ``delete``, ``stop``, ``shelve`` or
        ``shelve_offload``) to a server.

        :raises Refused: Nova refused it in the server's state (409).
        """
        from openstack import exceptions as sdk_exc
        compute = self.conn.compute
        calls = {'stop': compute.stop_server,
                 'shelve': compute.shelve_server,
                 'shelve_offload': compute.shelve_offload_server}
        try:
            if verb in calls:
                calls[verb](uuid)
            else:
                compute.delete_server(uuid, ignore_missing=True)
        except sdk_exc.ConflictException as exc:
            raise Refused(str(exc))

    @classmethod
    def from_conf(cls, conf):
        """The cloud of ``conf``: :func:`connect` with ``[opie_market]
        capacity_source``.
        """
        return cls(connect(conf), opts.group(conf).capacity_source)


def connect(conf):
    """An openstacksdk connection with admin rights on Nova:
    ``[service_credentials]`` when its ``auth_type`` is set, else
    ``[opie_market] cloud`` (a clouds.yaml entry) or the ``OS_*``
    environment variables (:func:`opie_sched.common.credentials.connect`).
    The one place the service's credentials are read.
    """
    from opie_sched.common import credentials
    return credentials.connect(conf, cloud=opts.group(conf).cloud,
                               app_name='opie-market')
