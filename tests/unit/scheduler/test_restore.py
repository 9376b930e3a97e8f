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
"""Where the restore step may unshelve a server: free room, best fit, the
pools' headrooms (amounts and slots) kept.
"""

import testtools

from opie_sched.preemption import headroom
from opie_sched.preemption import model
from opie_sched.scheduler import restore

R = model.Resources
LARGE = R(4, 8000, 80)


def view(name, used, capacity=R(8, 16000, 200)):
    return model.HostView(name=name, capacity=capacity, used=used)


class RoomTest(testtools.TestCase):

    def test_only_free_room_best_fit(self):
        room = restore.Room({'full': view('full', R(8, 16000, 160)),
                             'half': view('half', R(4, 8000, 80)),
                             'empty': view('empty', R(0, 0, 0))})
        # the fullest host that still holds it whole
        self.assertEqual('half', room.place(LARGE))
        room.take('half', LARGE)
        self.assertEqual('empty', room.place(LARGE))
        room.take('empty', LARGE)
        self.assertEqual('empty', room.place(LARGE))
        room.take('empty', LARGE)
        self.assertIsNone(room.place(LARGE))
        # one dimension short is no room
        room = restore.Room({'h': view('h', R(0, 9000, 0))})
        self.assertIsNone(room.place(LARGE))

    def test_summed_headroom_kept(self):
        views = {'a': view('a', R(4, 8000, 80)), 'b': view('b', R(8, 16000,
                                                                  160))}
        pools = [('p', headroom.parse('4 vcpu'), {'a', 'b'})]
        # 4 vCPUs free in the pool = the headroom: nothing may take them
        self.assertIsNone(restore.Room(views, pools).place(LARGE))
        # a pool without a headroom: restored
        self.assertEqual('a', restore.Room(views, []).place(LARGE))
        # a host outside the pool is not bound by it
        pools = [('p', headroom.parse('4 vcpu'), {'b'})]
        self.assertEqual('a', restore.Room(views, pools).place(LARGE))

    def test_slot_headroom_kept(self):
        views = {'a': view('a', R(0, 0, 0)), 'b': view('b', R(4, 8000, 80))}
        one_slot = [('p', headroom.parse('1 x 8 vcpu, 16000 MB'), {'a', 'b'})]
        # a holds the pool's one free slot: b's hole may be used, a's not
        self.assertEqual('b', restore.Room(views, one_slot).place(LARGE))
        room = restore.Room(views, one_slot)
        room.take('b', LARGE)
        self.assertIsNone(room.place(LARGE))


class ServiceContextTest(testtools.TestCase):
    """The token and catalog of nova's [service_user] for the calls that
    reach Glance (shelve, unshelve).
    """

    def test_unconfigured_leaves_the_context(self):
        from unittest import mock

        from opie_sched.scheduler import actions
        ctx = object()
        with mock.patch('keystoneauth1.loading.load_auth_from_conf_options',
                        return_value=None):
            self.assertIs(ctx, actions.service_context(ctx))

    def test_token_and_catalog_of_the_service_user(self):
        import types
        from unittest import mock

        from opie_sched.scheduler import actions
        access = mock.Mock(auth_token='tok')
        access.has_service_catalog.return_value = True
        access.service_catalog.catalog = [
            {'type': 'image', 'name': 'glance', 'endpoints': [
                {'interface': 'public', 'region_id': 'R1', 'url': 'http://g'},
                {'interface': 'internal', 'region_id': 'R1',
                 'url': 'http://gi'}]},
            {'type': 'identity', 'endpoints': []}]
        auth = mock.Mock()
        auth.get_access.return_value = access
        ctx = types.SimpleNamespace(auth_token=None, service_catalog=[])
        with mock.patch('keystoneauth1.loading.load_auth_from_conf_options',
                        return_value=auth), \
                mock.patch('keystoneauth1.loading.'
                           'load_session_from_conf_options'):
            new = actions.service_context(ctx)
        self.assertEqual('tok', new.auth_token)
        # the v2 form nova's context reads (keystonemiddleware's header)
        self.assertEqual([{'type': 'image', 'name': 'glance', 'endpoints': [
            {'region': 'R1', 'publicURL': 'http://g',
             'internalURL': 'http://gi'}]}], new.service_catalog)
        self.assertIsNone(ctx.auth_token)   # a copy
        # a failing Keystone: the context as it was, logged
        auth.get_access.side_effect = RuntimeError('keystone down')
        with mock.patch('keystoneauth1.loading.load_auth_from_conf_options',
                        return_value=auth), \
                mock.patch('keystoneauth1.loading.'
                           'load_session_from_conf_options'):
            self.assertIs(ctx, actions.service_context(ctx))
