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
"""Shared plumbing of the opie_sched Tempest tests.

Every test talks to the cloud through public APIs only: openstacksdk
connections built from the credentials Tempest provisions (primary, alt,
admin), raw REST calls with explicit microversions where the semantics
depend on one, and the market API through :mod:`.market_client`.

Terms: a host's *normal state* counts normal instances only (Placement's
``VCPU``/``MEMORY_MB``/``DISK_GB`` usage); its *full state* counts normal
and preemptible instances (plus the ``CUSTOM_PREEMPTIBLE_*`` usage). A
host is within capacity when, for each of vCPU, MB and GB, the full state's
usage is at most Placement's capacity ``(total - reserved) *
allocation_ratio`` of the standard class.
"""

import collections
import math
import time

import openstack
from oslo_log import log as logging
from oslo_utils import strutils
from tempest.common import credentials_factory  # noqa: F401 (config load)
from tempest import config
from tempest.lib.common.utils import data_utils
from tempest.lib import exceptions as lib_exc
from tempest import test

CONF = config.CONF
LOG = logging.getLogger(__name__)

#: Standard Placement classes and their preemptible twins (opie_sched's
#: ``opie_sched.common.flavors``; repeated here: the tests import no service
#: code).
STANDARD = ('VCPU', 'MEMORY_MB', 'DISK_GB')
PREEMPTIBLE = {'VCPU': 'CUSTOM_PREEMPTIBLE_VCPU',
               'MEMORY_MB': 'CUSTOM_PREEMPTIBLE_MEMORY_MB',
               'DISK_GB': 'CUSTOM_PREEMPTIBLE_DISK_GB'}
MARKER = 'opie:preemptible'
#: nova's unified limits a fill meets (Keystone resource names).
UNLIMITED = ('servers',) + tuple(
    'class:%s' % rc for rc in STANDARD + tuple(PREEMPTIBLE.values()))
#: Instance action recorded on every victim.
PREEMPT_ACTION = 'preempt'

#: A flavor as the tests use it: id, name and its size per class.
Flavor = collections.namedtuple('Flavor', 'id name size')


def flavor_size(flavor):
    """``{'VCPU': n, 'MEMORY_MB': mb, 'DISK_GB': gb}`` of a flavor dict
    (root + ephemeral disk; swap is not placement disk).
    """
    return {'VCPU': int(flavor['vcpus']), 'MEMORY_MB': int(flavor['ram']),
            'DISK_GB': int(flavor['disk']) + int(
                flavor.get('OS-FLV-EXT-DATA:ephemeral') or 0)}


def capacity(inventory):
    """Placement's usable amount of one inventory record."""
    return int(math.floor((inventory['total'] - inventory['reserved'])
                          * inventory['allocation_ratio']))


def fits(size, free):
    """How many servers of ``size`` fit in ``free`` (dicts by class)."""
    counts = [free.get(rc, 0) // amount for rc, amount in size.items()
              if amount > 0]
    return max(0, min(counts)) if counts else 0


class OpieBaseTest(test.BaseTestCase):
    """Credentials primary, alt and admin, with openstacksdk connections
    (``self.primary``, ``self.alt``, ``self.admin``) and helpers to boot,
    wait for and inspect servers and hosts.
    """

    credentials = ['primary', 'alt', 'admin']

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.service_available.nova:
            raise cls.skipException('Nova is not available')

    @classmethod
    def _connect(cls, creds):
        auth = {'auth_url': CONF.identity.uri_v3,
                'username': creds.username, 'password': creds.password,
                'project_name': creds.project_name,
                'user_domain_name': creds.user_domain_name or 'Default',
                'project_domain_name':
                    creds.project_domain_name or 'Default'}
        return openstack.connect(
            auth=auth, auth_type='password', identity_api_version='3',
            region_name=CONF.identity.region or None,
            interface=CONF.compute.endpoint_type.replace('URL', ''),
            verify=not CONF.identity.disable_ssl_certificate_validation,
            load_yaml_config=False, load_envvars=False)

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        cls.primary = cls._connect(cls.os_primary.credentials)
        cls.alt = cls._connect(cls.os_alt.credentials)
        cls.admin = cls._connect(cls.os_admin.credentials)

    @classmethod
    def resource_setup(cls):
        super().resource_setup()
        cls.primary_project = cls.os_primary.credentials.project_id
        cls.alt_project = cls.os_alt.credentials.project_id
        for project in (cls.primary_project, cls.alt_project):
            cls.unlimited_quota(project)
        cls.image_id = CONF.compute.image_ref

    # -- REST with explicit microversions ---------------------------------

    @staticmethod
    def call(conn, method, path, microversion='2.1', json=None,
             ok=(200, 201, 202, 204)):
        """``(status, body)`` of a compute API call; raises AssertionError
        on a status not in ``ok`` (None: accept any).
        """
        resp = conn.compute.request(path, method, json=json,
                                    microversion=microversion,
                                    raise_exc=False)
        try:
            body = resp.json()
        except ValueError:
            body = {}
        if ok is not None and resp.status_code not in ok:
            raise AssertionError('%s %s (microversion %s): HTTP %s: %s'
                                 % (method, path, microversion,
                                    resp.status_code, resp.text[:500]))
        return resp.status_code, body

    @staticmethod
    def placement(conn, path):
        resp = conn.placement.get(path, microversion='1.10',
                                  raise_exc=False)
        if resp.status_code != 200:
            raise AssertionError('GET %s: HTTP %s: %s' % (
                path, resp.status_code, resp.text[:500]))
        return resp.json()

    @classmethod
    def unlimited_quota(cls, project_id):
        """No server, vCPU or RAM limit for the project (the fills boot as
        many servers as the cloud holds).

        With ``[compute-feature-enabled] unified_limits`` (nova's quotas
        are Keystone's limits, ``PUT os-quota-sets`` changes nothing):
        Keystone project limits of -1, Keystone's "no limit", for
        :data:`UNLIMITED` (removed by the class's cleanup; nova does not
        enforce negative limits). Otherwise nova's legacy quotas
        ``instances``, ``cores`` and ``ram`` of -1.
        """
        if CONF.compute_feature_enabled.unified_limits:
            for name in UNLIMITED:
                cls.set_project_limit(project_id, name, -1)
            return
        cls.call(cls.admin, 'PUT', '/os-quota-sets/%s' % project_id,
                 json={'quota_set': {'instances': -1, 'cores': -1,
                                     'ram': -1}})

    # -- Keystone's unified limits of nova -----------------------------------

    @classmethod
    def nova_limits_scope(cls):
        """``(service id, region id)`` nova's limits are registered on: the
        catalog's ``compute`` service ([compute] catalog_type) with an
        endpoint in [identity] region (any region when that is unset).
        """
        if getattr(cls, '_nova_limits_scope', None):
            return cls._nova_limits_scope
        region = CONF.identity.region or None
        identity = cls.admin.identity
        services = [s for s in identity.services(
            type=CONF.compute.catalog_type)
            if any(region in (None, e.region_id) for e in
                   identity.endpoints(service_id=s.id))]
        if len(services) != 1:
            raise AssertionError(
                'expected one %s service with an endpoint in region %s, '
                'found %d' % (CONF.compute.catalog_type, region,
                              len(services)))
        if region is None:
            region = next(identity.endpoints(
                service_id=services[0].id)).region_id
        cls._nova_limits_scope = services[0].id, region
        return cls._nova_limits_scope

    @classmethod
    def set_project_limit(cls, project_id, resource, value):
        """Create or update the Keystone limit of nova's ``resource`` for
        the project (as the admin); the class's cleanup deletes a limit it
        created. Returns the limit.
        """
        service_id, region = cls.nova_limits_scope()
        identity = cls.admin.identity
        for found in identity.limits(service_id=service_id,
                                     region_id=region,
                                     project_id=project_id,
                                     resource_name=resource):
            return identity.update_limit(found, resource_limit=value)
        created = identity.create_limit(
            service_id=service_id, region_id=region, project_id=project_id,
            resource_name=resource, resource_limit=value,
            description='opie_sched tempest plugin')
        cls.addClassResourceCleanup(identity.delete_limit, created,
                                    ignore_missing=True)
        return created

    # -- flavors -----------------------------------------------------------

    @classmethod
    def flavor_pair(cls):
        """``(normal, preemptible)`` :class:`Flavor` twins of the same
        size: ``[opie] normal_flavor`` or the smallest flavor whose twin
        ``<name><preemptible_flavor_suffix>`` is marked preemptible.

        :raises skipException: the cloud has no such pair.
        """
        _, body = cls.call(cls.admin, 'GET',
                           '/flavors/detail?is_public=None', '2.61')
        flavors = {f['name']: f for f in body['flavors']}
        suffix = CONF.opie.preemptible_flavor_suffix
        pairs = []
        for name, flavor in flavors.items():
            if name.endswith(suffix) or \
                    (CONF.opie.normal_flavor and
                     name != CONF.opie.normal_flavor):
                continue
            twin = flavors.get(name + suffix)
            if twin is None or not strutils.bool_from_string(
                    (twin.get('extra_specs') or {}).get(MARKER)):
                continue
            if flavor_size(twin) != flavor_size(flavor):
                continue
            pairs.append(flavor)
        if not pairs:
            raise cls.skipException(
                'no normal flavor with a preemptible twin named '
                '<name>%s (opie-sched flavor create-preemptible) on this '
                'cloud' % suffix)
        normal = min(pairs, key=lambda f: (f['vcpus'], f['ram'],
                                           f['disk'], f['name']))
        twin = flavors[normal['name'] + suffix]
        return (Flavor(normal['id'], normal['name'], flavor_size(normal)),
                Flavor(twin['id'], twin['name'], flavor_size(twin)))

    # -- hosts ---------------------------------------------------------------

    @classmethod
    def hosts(cls):
        """``{provider name: {'uuid', 'capacity', 'preemptible_capacity',
        'used'}}`` of every compute node resource provider (one with VCPU
        inventory): capacity of the standard classes, capacity of the
        preemptible classes, and usage of both (dicts by class).
        """
        found = {}
        for rp in cls.placement(cls.admin,
                                '/resource_providers')['resource_providers']:
            inv = cls.placement(cls.admin, '/resource_providers/%s/'
                                'inventories' % rp['uuid'])['inventories']
            if 'VCPU' not in inv:
                continue
            usages = cls.placement(cls.admin, '/resource_providers/%s/'
                                   'usages' % rp['uuid'])['usages']
            found[rp['name']] = {
                'uuid': rp['uuid'],
                'capacity': {rc: capacity(inv[rc]) for rc in STANDARD
                             if rc in inv},
                'preemptible_capacity': {
                    rc: capacity(inv[PREEMPTIBLE[rc]]) for rc in STANDARD
                    if PREEMPTIBLE[rc] in inv},
                'used': usages}
        return found

    @staticmethod
    def full_free(host):
        """Free room of a host's full state, by standard class."""
        used = host['used']
        return {rc: host['capacity'][rc] - used.get(rc, 0)
                - used.get(PREEMPTIBLE[rc], 0) for rc in host['capacity']}

    @classmethod
    def preemptible_room(cls, size, hosts=None):
        """How many preemptible servers of ``size`` the cloud holds now:
        per host, the smaller of its full state's room and its preemptible
        inventory's room.
        """
        hosts = cls.hosts() if hosts is None else hosts
        total = 0
        for host in hosts.values():
            pre_free = {rc: host['preemptible_capacity'].get(rc, 0)
                        - host['used'].get(PREEMPTIBLE[rc], 0)
                        for rc in STANDARD}
            total += min(fits(size, cls.full_free(host)),
                         fits(size, pre_free))
        return total

    def assert_within_capacity(self, hosts=None):
        """Every host's full state within capacity (Placement usage)."""
        hosts = self.hosts() if hosts is None else hosts
        over = {name: {rc: -free for rc, free in
                       self.full_free(host).items() if free < 0}
                for name, host in hosts.items()}
        over = {name: o for name, o in over.items() if o}
        self.assertEqual({}, over, 'hosts over capacity (normal + '
                         'preemptible usage above capacity, by class)')

    # -- servers -------------------------------------------------------------

    def boot(self, conn, flavor, count=1, name=None, hints=None,
             metadata=None, wait=True, availability_zone=None):
        """Boot ``count`` servers of ``flavor`` in one request (no
        network); returns their ids, sorted by name. Cleanup deletes them.

        :param wait: wait until all are ACTIVE (fails on ERROR).
        """
        name = name or data_utils.rand_name(self.__class__.__name__)
        server = {'name': name, 'flavorRef': flavor.id,
                  'imageRef': self.image_id, 'networks': 'none',
                  'min_count': count, 'max_count': count}
        if metadata:
            server['metadata'] = metadata
        if availability_zone:
            server['availability_zone'] = availability_zone
        body = {'server': server}
        if hints:
            body['os:scheduler_hints'] = hints
        self.call(conn, 'POST', '/servers', '2.37', json=body)
        ids = self.find_servers(conn, name, count)
        self.addCleanup(self.delete_and_wait, conn, ids)
        if wait:
            self.wait_for_status(conn, ids, 'ACTIVE')
        return ids

    def find_servers(self, conn, name, count):
        """Ids of the ``count`` servers named ``name`` or ``name-N``."""
        deadline = time.monotonic() + 60
        while True:
            found = sorted(
                (s.name, s.id) for s in conn.compute.servers(
                    name='^%s(-[0-9]+)?$' % name))
            if len(found) >= count or time.monotonic() > deadline:
                break
            time.sleep(1)
        self.assertEqual(count, len(found), 'servers named %s' % name)
        return [i for _, i in found]

    def server_map(self, conn, all_projects=False):
        """``{id: server}`` of the servers ``conn`` sees."""
        return {s.id: s for s in conn.compute.servers(
            all_projects=all_projects)}

    def wait_for_status(self, conn, ids, status, timeout=None):
        """Wait until every server in ``ids`` has ``status``; fail at once
        when one is ERROR, or at the timeout.
        """
        timeout = timeout or CONF.opie.build_timeout
        deadline = time.monotonic() + timeout
        pending = set(ids)
        while pending:
            servers = self.server_map(conn)
            errors = {i: servers[i].fault for i in pending
                      if i in servers and servers[i].status == 'ERROR'}
            self.assertEqual({}, errors, 'servers in ERROR (faults)')
            pending = {i for i in pending
                       if i not in servers or servers[i].status != status}
            if pending and time.monotonic() > deadline:
                self.fail('%d servers not %s after %d s: %s' % (
                    len(pending), status, timeout, sorted(pending)))
            if pending:
                time.sleep(1)

    def delete_and_wait(self, conn, ids, timeout=None):
        """Delete the servers (already gone: fine) and wait until they
        are gone.
        """
        for server_id in ids:
            try:
                conn.compute.delete_server(server_id, ignore_missing=True)
            except openstack.exceptions.SDKException as exc:
                LOG.warning('delete of %s failed: %s', server_id, exc)
        self.wait_gone(conn, ids, timeout)

    def wait_gone(self, conn, ids, timeout=None):
        timeout = timeout or CONF.opie.build_timeout
        deadline = time.monotonic() + timeout
        pending = set(ids)
        while pending:
            pending &= set(self.server_map(conn))
            if pending and time.monotonic() > deadline:
                raise lib_exc.TimeoutException(
                    '%d servers still present after %d s: %s'
                    % (len(pending), timeout, sorted(pending)))
            if pending:
                time.sleep(1)

    def actions(self, conn, server_id):
        """The server's instance actions (works once it is deleted)."""
        _, body = self.call(conn, 'GET', '/servers/%s/os-instance-actions'
                            % server_id, '2.21')
        return [a['action'] for a in body['instanceActions']]

    def fill_with_preemptibles(self, conn, flavor):
        """Boot as many preemptible servers of ``flavor`` as the cloud
        holds (one multi-create); returns ``(ids, {id: host})`` once all
        are ACTIVE. Skips when the cloud holds none.
        """
        count = self.preemptible_room(flavor.size)
        if count == 0:
            raise self.skipException('no preemptible room left for %s'
                                     % flavor.name)
        ids = self.boot(conn, flavor, count)
        placed = self.placement_of(ids)
        hosts = self.hosts()
        self.assertEqual(0, self.preemptible_room(flavor.size, hosts),
                         'the fill left preemptible room')
        # Where the preemptible inventory is smaller than the capacity,
        # the full state still has room: take it with normal servers
        # (admin's), which need no victims.
        room = sum(fits(flavor.size, self.full_free(h))
                   for h in hosts.values())
        if room:
            normal = getattr(self, 'normal', None)
            if normal is None or normal.size != flavor.size:
                self.fail('the full state has room for %d more servers '
                          'after the fill and no normal twin of %s to take '
                          'it' % (room, flavor.name))
            self.boot(self.admin, normal, room)
            self.assertEqual(ids, [i for i in ids
                                   if i in self.server_map(conn)],
                             'normal servers that fitted preempted')
        return ids, placed

    def placement_of(self, ids):
        """``{id: hypervisor hostname}`` (admin view)."""
        servers = self.server_map(self.admin, all_projects=True)
        return {i: servers[i].hypervisor_hostname for i in ids
                if i in servers}
