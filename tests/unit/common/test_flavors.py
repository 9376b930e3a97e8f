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
"""Tests of opie_sched.common.flavors."""

import json
import re
import uuid

import fixtures
import requests_mock
import testtools

from openstack import connection

from opie_sched.common import flavors

NOVA = 'http://nova.example/v2.1'

VALID = {
    'opie:preemptible': 'true',
    'resources:VCPU': '0',
    'resources:MEMORY_MB': '0',
    'resources:DISK_GB': '0',
    'resources:CUSTOM_PREEMPTIBLE_VCPU': '2',
    'resources:CUSTOM_PREEMPTIBLE_MEMORY_MB': '4096',
    'resources:CUSTOM_PREEMPTIBLE_DISK_GB': '40',
}


def with_(**changes):
    """VALID with keys changed (value None deletes); '__' stands for ':'."""
    specs = dict(VALID)
    for key, value in changes.items():
        key = key.replace('__', ':')
        if value is None:
            specs.pop(key, None)
        else:
            specs[key] = value
    return specs


class PreemptibleExtraSpecsTest(testtools.TestCase):

    def test_exact_specs(self):
        self.assertEqual(VALID, flavors.preemptible_extra_specs(2, 4096, 40))

    def test_zero_disk_is_kept_explicit(self):
        specs = flavors.preemptible_extra_specs(1, 512, 0)
        self.assertEqual('0', specs['resources:CUSTOM_PREEMPTIBLE_DISK_GB'])
        self.assertEqual([], flavors.check_preemptible_flavor(specs, 1, 512,
                                                              0))

    def test_constants(self):
        self.assertEqual('opie:preemptible', flavors.MARKER_KEY)
        self.assertEqual(('CUSTOM_PREEMPTIBLE_VCPU',
                          'CUSTOM_PREEMPTIBLE_MEMORY_MB',
                          'CUSTOM_PREEMPTIBLE_DISK_GB'),
                         flavors.PREEMPTIBLE_CLASSES)
        self.assertEqual(flavors.VCPU_CLASS, flavors.CLASS_MAP['VCPU'])

    def test_invalid_amounts(self):
        for args in [(0, 512, 1), (1, 0, 1), (1, 512, -1), (True, 512, 1),
                     (1.5, 512, 1), ('2', 512, 1), (1, None, 1)]:
            self.assertRaises(ValueError, flavors.preemptible_extra_specs,
                              *args)

    def test_values_are_strings(self):
        specs = flavors.preemptible_extra_specs(3, 1000, 7)
        self.assertTrue(all(isinstance(v, str) for v in specs.values()))


class CheckPreemptibleFlavorTest(testtools.TestCase):

    def check(self, specs, sizes=(2, 4096, 40)):
        return flavors.check_preemptible_flavor(specs, *sizes)

    def assertProblem(self, fragment, specs, sizes=(2, 4096, 40)):
        problems = self.check(specs, sizes)
        self.assertEqual(1, len(problems), problems)
        self.assertIn(fragment, problems[0])

    def test_valid(self):
        self.assertEqual([], self.check(VALID))
        self.assertEqual([], flavors.check_preemptible_flavor(VALID))

    def test_other_specs_are_fine(self):
        self.assertEqual([], self.check(with_(
            hw__cpu_policy='shared', trait__HW_CPU_X86_AVX2='required',
            opie__bid='0.05', hw__mem_page_size='large')))

    def test_marker(self):
        self.assertProblem('opie:preemptible is not set',
                           with_(opie__preemptible=None))
        self.assertProblem('is not true', with_(opie__preemptible='false'))
        self.assertProblem('is not a boolean',
                           with_(opie__preemptible='maybe'))
        for value in ('True', '1', 'yes', 'on', 'y', 't'):
            self.assertEqual([], self.check(with_(opie__preemptible=value)))

    def test_standard_classes_must_be_zero(self):
        self.assertProblem('resources:VCPU is missing',
                           with_(resources__VCPU=None))
        self.assertProblem('resources:MEMORY_MB=4096 must be 0',
                           with_(resources__MEMORY_MB='4096'))
        self.assertProblem("resources:DISK_GB='x' is not an integer",
                           with_(resources__DISK_GB='x'))

    def test_custom_amounts(self):
        self.assertProblem(
            'resources:CUSTOM_PREEMPTIBLE_VCPU is missing (the flavor has '
            '2 vCPU)', with_(resources__CUSTOM_PREEMPTIBLE_VCPU=None))
        self.assertProblem(
            "resources:CUSTOM_PREEMPTIBLE_MEMORY_MB=2048 does not match the "
            "flavor's 4096 MB",
            with_(resources__CUSTOM_PREEMPTIBLE_MEMORY_MB='2048'))
        self.assertProblem(
            "does not match the flavor's 41 GB", VALID, (2, 4096, 41))
        self.assertProblem(
            'is not an integer',
            with_(resources__CUSTOM_PREEMPTIBLE_VCPU='2.0'))

    def test_zero_disk_may_be_left_out(self):
        specs = with_(resources__CUSTOM_PREEMPTIBLE_DISK_GB=None)
        self.assertEqual([], self.check(specs, (2, 4096, 0)))
        # whatever the flavor's disk: its disks are volumes (issue 30
        # hole 9, the twin of a resources:DISK_GB=0 flavor)
        self.assertEqual([], self.check(specs, (2, 4096, 40)))
        self.assertEqual([], self.check(
            with_(resources__CUSTOM_PREEMPTIBLE_DISK_GB='0'), (2, 4096, 40)))
        self.assertProblem('does not match the flavor', with_(
            resources__CUSTOM_PREEMPTIBLE_DISK_GB='20'))

    def test_without_sizes_amounts_must_be_positive(self):
        specs = with_(resources__CUSTOM_PREEMPTIBLE_VCPU='0')
        problems = flavors.check_preemptible_flavor(specs)
        self.assertEqual(1, len(problems))
        self.assertIn('must be >= 1', problems[0])
        self.assertIn('is missing', flavors.check_preemptible_flavor(
            with_(resources__CUSTOM_PREEMPTIBLE_MEMORY_MB=None))[0])
        self.assertEqual([], flavors.check_preemptible_flavor(
            with_(resources__CUSTOM_PREEMPTIBLE_DISK_GB='0')))

    def test_pinning_uses_normal_capacity(self):
        self.assertProblem('hw:cpu_policy=dedicated',
                           with_(hw__cpu_policy='dedicated'))
        self.assertProblem('hw:cpu_policy=mixed',
                           with_(hw__cpu_policy='mixed'))
        self.assertProblem('resources:PCPU=2 requests normal capacity',
                           with_(resources__PCPU='2'))
        self.assertEqual([], self.check(with_(resources__PCPU='0')))

    def test_granular_groups(self):
        self.assertProblem('resources1:VCPU=1 requests normal capacity',
                           with_(resources1__VCPU='1'))
        self.assertEqual([], self.check(with_(resources1__VCPU='0')))
        self.assertProblem('must be requested in the unsuffixed group',
                           with_(resources_G1__CUSTOM_PREEMPTIBLE_VCPU='1'))
        # other classes in groups are not our business
        self.assertEqual([], self.check(with_(resources1__VGPU='1')))

    def test_everything_wrong_reports_everything(self):
        problems = flavors.check_preemptible_flavor(
            {'resources:VCPU': '2'}, 2, 4096, 40)
        # (a missing preemptible disk is a disk of 0: no problem)
        self.assertEqual(6, len(problems), problems)

    def test_none_specs(self):
        self.assertEqual(6, len(flavors.check_preemptible_flavor(None)))


class IsPreemptibleTest(testtools.TestCase):

    def test_not_marked(self):
        self.assertFalse(flavors.is_preemptible(None))
        self.assertFalse(flavors.is_preemptible({}))
        self.assertFalse(flavors.is_preemptible({'hw:cpu_policy': 'shared'}))
        self.assertFalse(flavors.is_preemptible(
            with_(opie__preemptible='false')))
        self.assertFalse(flavors.is_preemptible({'opie:preemptible': '0'}))

    def test_marked_and_consistent(self):
        self.assertTrue(flavors.is_preemptible(VALID))
        self.assertTrue(flavors.is_preemptible(VALID, 2, 4096, 40))
        self.assertTrue(flavors.is_preemptible(
            with_(opie__preemptible='Yes')))

    def test_round_trip(self):
        for sizes in [(1, 512, 0), (16, 65536, 500)]:
            self.assertTrue(flavors.is_preemptible(
                flavors.preemptible_extra_specs(*sizes), *sizes))

    def test_invalid_marker_raises(self):
        exc = self.assertRaises(flavors.InvalidPreemptibleFlavor,
                                flavors.is_preemptible,
                                {'opie:preemptible': 'maybe'})
        self.assertIn("opie:preemptible='maybe' is not a boolean", str(exc))

    def test_marked_but_inconsistent_raises(self):
        exc = self.assertRaises(flavors.InvalidPreemptibleFlavor,
                                flavors.is_preemptible,
                                {'opie:preemptible': 'true'})
        self.assertIsInstance(exc, ValueError)
        # three standard classes missing, the preemptible vCPU and RAM
        # missing; a missing preemptible disk is a disk of 0 (its disks
        # are volumes), no problem
        self.assertEqual(5, len(exc.problems))
        self.assertIn('resources:VCPU is missing', str(exc))
        self.assertNotIn('resources:CUSTOM_PREEMPTIBLE_DISK_GB', str(exc))
        self.assertRaises(flavors.InvalidPreemptibleFlavor,
                          flavors.is_preemptible, VALID, 4, 4096, 40)

    def test_message_names_flavor(self):
        exc = flavors.InvalidPreemptibleFlavor(['a', 'b'], flavor='m1.x')
        self.assertEqual("flavor 'm1.x' is not a valid preemptible flavor: "
                         "a; b", str(exc))


class NovaResourceRequestTest(testtools.TestCase):
    """Nova's own translation of the specs into a Placement request."""

    def test_only_preemptible_classes_are_requested(self):
        from nova import objects
        from nova.scheduler import utils as scheduler_utils
        objects.register_all()
        flavor = objects.Flavor(
            vcpus=2, memory_mb=4096, root_gb=30, ephemeral_gb=10, swap=0,
            extra_specs=flavors.preemptible_extra_specs(2, 4096, 40))
        spec = objects.RequestSpec(flavor=flavor, is_bfv=False)
        request = scheduler_utils.ResourceRequest.from_request_spec(spec)
        self.assertEqual({'CUSTOM_PREEMPTIBLE_VCPU': 2,
                          'CUSTOM_PREEMPTIBLE_MEMORY_MB': 4096,
                          'CUSTOM_PREEMPTIBLE_DISK_GB': 40},
                         request.merged_resources())


# -- a small Nova compute API on requests-mock, for the openstacksdk code --

def _flavor_body(f):
    return {
        'id': f['id'], 'name': f['name'], 'vcpus': f['vcpus'],
        'ram': f['ram'], 'disk': f['disk'],
        'OS-FLV-EXT-DATA:ephemeral': f['ephemeral'],
        'swap': f['swap'] or '',
        'os-flavor-access:is_public': f['is_public'],
        'OS-FLV-DISABLED:disabled': False,
        'rxtx_factor': 1.0,
        'description': f.get('description'),
        'extra_specs': dict(f['extra_specs']),
        'links': [],
    }


class FakeNova(fixtures.Fixture):
    """Flavor API of Nova (microversion 2.61 shapes) with requests-mock.

    ``flavors`` maps id -> dict; ``fail_extra_specs`` makes POST
    os-extra_specs answer 400; ``fail_delete`` makes DELETE answer 500.
    """

    def __init__(self, url=NOVA, mocker=None):
        super().__init__()
        self.url = url
        self.mocker = mocker
        self.flavors = {}
        self.access = {}
        self.fail_extra_specs = False
        self.fail_delete = False
        self.deleted = []

    def _setUp(self):
        m = self.mocker
        if m is None:
            m = self.useFixture(MockerFixture()).mocker
        self.mocker = m
        version = {'version': {
            'id': 'v2.1', 'status': 'CURRENT', 'version': '2.96',
            'min_version': '2.1',
            'links': [{'rel': 'self', 'href': self.url + '/'}]}}
        m.get(self.url, json=version)
        m.get(self.url + '/', json=version)
        base = re.escape(self.url + '/flavors')
        m.get(re.compile(base + r'/detail(\?.*)?$'), json=self._list)
        m.get(re.compile(base + r'/([^/?]+)$'), json=self._get)
        m.post(re.compile(base + r'$'), json=self._create)
        m.post(re.compile(base + r'/([^/?]+)/os-extra_specs$'),
               json=self._extra_specs)
        m.get(re.compile(base + r'/([^/?]+)/os-extra_specs$'),
              json=self._get_extra_specs)
        m.delete(re.compile(base + r'/([^/?]+)$'), json=self._delete)
        m.get(re.compile(base + r'/([^/?]+)/os-flavor-access$'),
              json=self._get_access)
        m.post(re.compile(base + r'/([^/?]+)/action$'), json=self._action)

    def add(self, name, vcpus=1, ram=2048, disk=20, ephemeral=0, swap=0,
            is_public=True, extra_specs=None, description=None):
        fid = str(uuid.uuid4())
        self.flavors[fid] = dict(
            id=fid, name=name, vcpus=vcpus, ram=ram, disk=disk,
            ephemeral=ephemeral, swap=swap, is_public=is_public,
            description=description, extra_specs=dict(extra_specs or {}))
        return fid

    def by_name(self, name):
        return [f for f in self.flavors.values() if f['name'] == name]

    def _id(self, request):
        return request.path.split('/flavors/')[1].split('/')[0]

    def _list(self, request, context):
        everything = request.qs.get('is_public') == ['none']
        return {'flavors': [_flavor_body(f) for f in self.flavors.values()
                            if everything or f['is_public']]}

    def _get(self, request, context):
        fid = self._id(request)
        if fid not in self.flavors:
            context.status_code = 404
            return {'itemNotFound': {'code': 404,
                                     'message': 'Flavor %s could not be '
                                                'found.' % fid}}
        return {'flavor': _flavor_body(self.flavors[fid])}

    def _create(self, request, context):
        body = request.json()['flavor']
        if self.by_name(body['name']):
            context.status_code = 409
            return {'conflictingRequest': {
                'code': 409, 'message': 'Flavor with name %s already '
                                        'exists.' % body['name']}}
        fid = self.add(body['name'], body['vcpus'], body['ram'],
                       body.get('disk', 0),
                       body.get('OS-FLV-EXT-DATA:ephemeral', 0),
                       body.get('swap', 0),
                       body.get('os-flavor-access:is_public', True),
                       description=body.get('description'))
        self.created_body = body
        return {'flavor': _flavor_body(self.flavors[fid])}

    def _extra_specs(self, request, context):
        if self.fail_extra_specs:
            context.status_code = 400
            return {'badRequest': {'code': 400,
                                   'message': 'Validation failed'}}
        specs = request.json()['extra_specs']
        self.flavors[self._id(request)]['extra_specs'].update(specs)
        return {'extra_specs': specs}

    def _get_extra_specs(self, request, context):
        return {'extra_specs': dict(
            self.flavors[self._id(request)]['extra_specs'])}

    def _delete(self, request, context):
        if self.fail_delete:
            context.status_code = 500
            return {'computeFault': {'code': 500, 'message': 'boom'}}
        self.deleted.append(self._id(request))
        self.flavors.pop(self._id(request), None)
        context.status_code = 202
        return {}

    def _get_access(self, request, context):
        fid = self._id(request)
        return {'flavor_access': [{'flavor_id': fid, 'tenant_id': t}
                                  for t in self.access.get(fid, [])]}

    def _action(self, request, context):
        fid = self._id(request)
        body = request.json()
        tenant = body['addTenantAccess']['tenant']
        self.access.setdefault(fid, []).append(tenant)
        return {'flavor_access': []}


class MockerFixture(fixtures.Fixture):

    def _setUp(self):
        self.mocker = requests_mock.Mocker()
        self.mocker.start()
        self.addCleanup(self.mocker.stop)


def sdk_connection(**endpoints):
    """A real openstacksdk Connection without authentication."""
    kwargs = {'%s_endpoint_override' % k: v for k, v in endpoints.items()}
    return connection.Connection(auth_type='none', **kwargs)


class CreatePreemptibleTwinTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.nova = self.useFixture(FakeNova())
        self.conn = sdk_connection(compute=NOVA)
        self.small = self.nova.add(
            'm1.small', vcpus=1, ram=2048, disk=20, ephemeral=5, swap=512,
            description='small one',
            extra_specs={'hw:mem_page_size': 'any',
                         'trait:HW_CPU_X86_AVX2': 'required',
                         'resources:VCPU': '1',
                         'opie:preemptible': 'false'})

    def test_creates_twin(self):
        flavor = flavors.create_preemptible_twin(self.conn, 'm1.small')
        self.assertEqual('m1.small.preemptible', flavor.name)
        stored = self.nova.by_name('m1.small.preemptible')[0]
        self.assertEqual(flavor.id, stored['id'])
        self.assertEqual((1, 2048, 20, 5, 512, True, 'small one'),
                         (stored['vcpus'], stored['ram'], stored['disk'],
                          stored['ephemeral'], stored['swap'],
                          stored['is_public'], stored['description']))
        # disk as Nova counts DISK_GB: root 20 + ephemeral 5 + swap 512 MB
        # rounded up to 1 GB
        expected = flavors.preemptible_extra_specs(1, 2048, 26)
        expected.update({'hw:mem_page_size': 'any',
                         'trait:HW_CPU_X86_AVX2': 'required'})
        self.assertEqual(expected, stored['extra_specs'])
        self.assertEqual(expected, flavor.extra_specs)
        self.assertTrue(flavors.is_preemptible(flavor.extra_specs, 1, 2048,
                                               26))

    def test_twin_of_a_ceph_style_flavor_claims_no_disk(self):
        # issue 30 hole 9: the base holds no DISK_GB (its disks are
        # volumes); its twin must not hold preemptible disk either
        self.nova.add('ceph', vcpus=2, ram=4096, disk=40,
                      extra_specs={'resources:DISK_GB': '0'})
        flavor = flavors.create_preemptible_twin(self.conn, 'ceph')
        self.assertEqual('0', flavor.extra_specs[
            'resources:%s' % flavors.DISK_GB_CLASS])
        self.assertEqual(flavors.preemptible_extra_specs(2, 4096, 0),
                         flavor.extra_specs)
        self.nova.add('bad', vcpus=2, ram=4096, disk=40,
                      extra_specs={'resources:DISK_GB': 'none'})
        self.assertRaisesRegex(flavors.FlavorError, 'invalid resources',
                               flavors.create_preemptible_twin, self.conn,
                               'bad')

    def test_by_id_with_name_and_visibility(self):
        flavor = flavors.create_preemptible_twin(
            self.conn, self.small, name='spot.small', is_public=False)
        stored = self.nova.by_name('spot.small')[0]
        self.assertEqual(flavor.id, stored['id'])
        self.assertFalse(stored['is_public'])

    def test_private_base_finds_and_copies_access(self):
        fid = self.nova.add('secret', vcpus=2, ram=1024, disk=10,
                            is_public=False)
        self.nova.access[fid] = ['p1', 'p2']
        flavor = flavors.create_preemptible_twin(self.conn, 'secret')
        self.assertFalse(self.nova.flavors[flavor.id]['is_public'])
        self.assertEqual(['p1', 'p2'], self.nova.access[flavor.id])

    def test_base_not_found(self):
        exc = self.assertRaises(flavors.FlavorError,
                                flavors.create_preemptible_twin,
                                self.conn, 'm9.huge')
        self.assertEqual("flavor 'm9.huge' not found", str(exc))

    def test_ambiguous_base(self):
        self.nova.add('dup')
        self.nova.add('dup')
        exc = self.assertRaises(flavors.FlavorError,
                                flavors.create_preemptible_twin,
                                self.conn, 'dup')
        self.assertIn('more than one flavor', str(exc))

    def test_refuses_preemptible_base(self):
        self.nova.add('p', vcpus=2, ram=4096, disk=40, extra_specs=VALID)
        exc = self.assertRaises(flavors.FlavorError,
                                flavors.create_preemptible_twin,
                                self.conn, 'p')
        self.assertIn('is itself preemptible', str(exc))
        self.nova.add('q', extra_specs={'opie:preemptible': 'perhaps'})
        exc = self.assertRaises(flavors.FlavorError,
                                flavors.create_preemptible_twin,
                                self.conn, 'q')
        self.assertIn('invalid opie:preemptible', str(exc))

    def test_refuses_existing_target(self):
        self.nova.add('m1.small.preemptible')
        exc = self.assertRaises(flavors.FlavorError,
                                flavors.create_preemptible_twin,
                                self.conn, 'm1.small')
        self.assertEqual("a flavor named 'm1.small.preemptible' already "
                         "exists", str(exc))
        self.assertEqual(2, len(self.nova.flavors))

    def test_refuses_existing_private_target(self):
        self.nova.add('m1.small.preemptible', is_public=False)
        self.assertRaises(flavors.FlavorError,
                          flavors.create_preemptible_twin,
                          self.conn, 'm1.small')

    def test_refuses_resources_it_cannot_carry(self):
        self.nova.add('gpu', extra_specs={'resources:VGPU': '1'})
        exc = self.assertRaises(flavors.FlavorError,
                                flavors.create_preemptible_twin,
                                self.conn, 'gpu')
        self.assertIn('resources:VGPU=1', str(exc))
        self.nova.add('pinned', extra_specs={'hw:cpu_policy': 'dedicated'})
        exc = self.assertRaises(flavors.FlavorError,
                                flavors.create_preemptible_twin,
                                self.conn, 'pinned')
        self.assertIn('hw:cpu_policy=dedicated', str(exc))
        self.assertEqual([], self.nova.by_name('gpu.preemptible'))

    def test_rolls_back_when_extra_specs_fail(self):
        self.nova.fail_extra_specs = True
        exc = self.assertRaises(flavors.FlavorError,
                                flavors.create_preemptible_twin,
                                self.conn, 'm1.small')
        self.assertIn('the new flavor was deleted', str(exc))
        self.assertIn('Validation failed', str(exc))
        self.assertEqual(1, len(self.nova.deleted))
        self.assertEqual([], self.nova.by_name('m1.small.preemptible'))

    def test_rollback_failure_is_reported(self):
        self.nova.fail_extra_specs = True
        self.nova.fail_delete = True
        self.useFixture(fixtures.FakeLogger())
        exc = self.assertRaises(flavors.FlavorError,
                                flavors.create_preemptible_twin,
                                self.conn, 'm1.small')
        self.assertIn('delete it by hand', str(exc))

    def test_request_shapes(self):
        flavors.create_preemptible_twin(self.conn, 'm1.small')
        self.assertEqual(
            {'name': 'm1.small.preemptible', 'vcpus': 1, 'ram': 2048,
             'disk': 20, 'OS-FLV-EXT-DATA:ephemeral': 5, 'swap': 512,
             'os-flavor-access:is_public': True,
             'description': 'small one'},
            self.nova.created_body)
        posts = [r for r in self.nova.mocker.request_history
                 if r.method == 'POST' and 'os-extra_specs' in r.path]
        self.assertEqual(1, len(posts))
        self.assertEqual(
            set(flavors.preemptible_extra_specs(1, 2048, 26)) |
            {'hw:mem_page_size', 'trait:HW_CPU_X86_AVX2'},
            set(json.loads(posts[0].body)['extra_specs']))


# -- one definition of "preemptible" -----------------------------------------

class PreemptibleMarkerTest(testtools.TestCase):

    def test_marker(self):
        for value in ('true', 'True', '1', 'yes', 'on', True):
            self.assertTrue(flavors.is_marked_preemptible(
                {flavors.MARKER_KEY: value}), value)
        for specs in (None, {}, {flavors.MARKER_KEY: 'false'},
                      {flavors.MARKER_KEY: 'maybe'},
                      {flavors.MARKER_KEY: False}, {'other': 'true'}):
            self.assertFalse(flavors.is_marked_preemptible(specs), specs)
        # the resources are a separate check: the marker alone decides
        self.assertTrue(flavors.is_marked_preemptible(
            {flavors.MARKER_KEY: 'true', 'resources:VCPU': '2'}))
