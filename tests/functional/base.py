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
"""Functional test base: the demo's Nova configuration, one per test."""

import io
import json
import logging
import time

import fixtures
from testtools import content

from nova.tests.functional import integrated_helpers

from opie_sched.common import compat
from opie_sched.common import flavors
from opie_sched.demo import cloud
from opie_sched.demo import fake_driver
from opie_sched.scheduler import locks

HOST = cloud.HOST
PAPER_FLAVORS = cloud.PAPER_FLAVORS
OPIE_MANAGER = cloud.OPIE_MANAGER
NOVA_MANAGER = cloud.NOVA_MANAGER


class TeardownLogCapture(fixtures.Fixture):
    """What is logged after nova's own log capture has ended, kept as the
    test's ``teardown-log`` detail instead of printed on standard output.

    nova's ``IsolatedExecutorFixture`` shuts the test's thread pools down
    (INFO "The thread pool ... is shutting down") in a cleanup that runs
    after its ``StandardLogging`` capture is gone, when the root logger has
    the standard-output handler that ``nova.test`` installs at import
    (``oslo_log.log.setup``). Set up before nova's fixtures, this one's
    cleanup runs after theirs; during the test, ``StandardLogging``
    captures as before.
    """

    def _setUp(self):
        stream = io.StringIO()
        handler = logging.StreamHandler(stream)
        handler.setLevel(logging.INFO)
        handler.setFormatter(logging.Formatter(
            '%(asctime)s %(levelname)s [%(name)s] %(message)s'))
        self.useFixture(fixtures.LogHandler(handler, nuke_handlers=True))
        self.addDetail('teardown-log', content.Content(
            content.UTF8_TEXT, lambda: [stream.getvalue().encode('utf-8')]))


class OpieNovaTestCase(integrated_helpers._IntegratedTestBase):
    """Nova with the opie scheduler manager, filter and weighers enabled,
    one per test (nova's TestCase machinery does the rest).

    The same configuration as the demo's
    :class:`~opie_sched.demo.cloud.EmbeddedCloud` runtime
    (:func:`~opie_sched.demo.cloud.configure_nova`), as a nova functional
    test case with its helpers.
    """

    ADMIN_API = True
    microversion = 'latest'
    #: RPC casts stay asynchronous, as in a real deployment: the victims'
    #: computes terminate them while the scheduler waits for the release
    #: (nova's default turns every cast into a nested call in one thread).
    CAST_AS_CALL = False
    #: compute hosts started by setUp
    HOSTS = ('host1', 'host2')
    SCHEDULER_MANAGER = OPIE_MANAGER
    #: extra flags applied before nova starts, as {group: {name: value}}
    EXTRA_FLAGS = {}

    def setUp(self):
        self.useFixture(TeardownLogCapture())
        pc_dir = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fake_driver.SizedFakeHosts(
            HOST['vcpus'], HOST['memory_mb'], HOST['disk_gb']))
        cloud.write_provider_config(pc_dir)
        cloud.configure_nova(self.flags, pc_dir)
        for group, opts in self.EXTRA_FLAGS.items():
            self.flags(group=group, **opts)
        super().setUp()
        if not hasattr(self, 'placement_fixture'):
            # nova before 34 keeps only the fixture's API client
            self.placement_fixture = self.placement.fixture
        # this test's lock directory: its coordinators end with it
        self.addCleanup(locks.reset)
        self.flavor_ids = {}
        for name, (vcpus, ram, disk) in PAPER_FLAVORS.items():
            self.flavor_ids[name] = self._create_flavor(
                name=name, vcpu=vcpus, memory_mb=ram, disk=disk, ephemeral=0)
            self.flavor_ids[name + '.preemptible'] = self._create_flavor(
                name=name + '.preemptible', vcpu=vcpus, memory_mb=ram,
                disk=disk, ephemeral=0,
                extra_spec=flavors.preemptible_extra_specs(vcpus, ram, disk))

    def _setup_scheduler_service(self):
        return self.start_service('scheduler',
                                  manager=self.SCHEDULER_MANAGER)

    def _setup_compute_service(self):
        computes = [self._start_compute(h) for h in self.HOSTS]
        return computes[0]

    # -- helpers -------------------------------------------------------

    #: Polls (0.5 s apart) before a server counts as stuck in its state
    #: change: 120 s, not nova's 5 s. A preempting boot waits for its
    #: victims (a shelve-offload, a stop), a rescheduled one builds twice,
    #: and a 2-core machine shared with other test workers has taken more
    #: than 30 s for that. A bound, not a measure: the wait ends as soon
    #: as the state is reached (speed belongs in ``tox -e bench``).
    BOOT_POLLS = 240

    def _wait_for_state_change(self, server, expected_status,
                               max_retries=None, wait_for_fault_key=True):
        """Nova's helper with :attr:`BOOT_POLLS` as its default bound.

        An ERROR server is returned once its fault is recorded (nova sets
        the status first) when ``wait_for_fault_key``, on every series:
        nova 34's helper waits for it; nova 31 to 33's has no such
        argument (:func:`opie_sched.common.compat.wait_for_fault_kwargs`)
        and the fault is waited for here, within the same bound.
        """
        retries = self.BOOT_POLLS if max_retries is None else max_retries
        helper = super()._wait_for_state_change
        kwargs = compat.wait_for_fault_kwargs(helper, wait_for_fault_key)
        server = helper(server, expected_status, retries, **kwargs)
        if wait_for_fault_key and not kwargs and expected_status == 'ERROR':
            api = getattr(self, 'admin_api', self.api)
            for _ in range(retries):
                if 'fault' in server:
                    break
                time.sleep(0.5)
                server = api.get_server(server['id'])
            if 'fault' not in server:
                self.fail('server %s in ERROR without a fault after %d '
                          'polls' % (server['id'], retries))
        return server

    def boot(self, flavor, host=None, name=None, expected='ACTIVE',
             **kwargs):
        """Boot a server of a paper flavor, optionally on a given host."""
        server = self._build_server(
            name=name, flavor_id=self.flavor_ids[flavor],
            networks='none', host=host, **kwargs)
        server = self.api.post_server({'server': server})
        return self._wait_for_state_change(server, expected,
                                           max_retries=self.BOOT_POLLS)

    def server_host(self, server):
        return self.api.get_server(server['id'])[
            'OS-EXT-SRV-ATTR:host']

    def live_uuids(self):
        return {s['id'] for s in self.api.get_servers(detail=False)}

    def usages(self, host):
        return self._get_provider_usages(
            self._get_provider_uuid_by_host(host))

    def guest_metadata(self, uuid):
        """``meta_data.json`` as nova's metadata service serves it to the
        guest (``/openstack/latest/meta_data.json``), a dict.
        """
        from nova.api.metadata import base as md_base
        from nova import context as nova_context
        from nova import objects
        ctxt = nova_context.get_admin_context()
        mapping = objects.InstanceMapping.get_by_instance_uuid(ctxt, uuid)
        with nova_context.target_cell(ctxt, mapping.cell_mapping) as cctxt:
            instance = objects.Instance.get_by_uuid(
                cctxt, uuid, expected_attrs=['metadata', 'system_metadata',
                                             'flavor', 'ec2_ids',
                                             'device_metadata', 'keypairs',
                                             'info_cache',
                                             'security_groups'])
            md = md_base.InstanceMetadata(instance)
            return json.loads(md.lookup(
                '/openstack/latest/meta_data.json'))
