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
"""Tests of the instance rows read from the cells
(opie_sched.scheduler.cell_reads)."""

from unittest import mock

import fixtures
import testtools

from opie_sched.scheduler import cell_reads
from opie_sched.scheduler import ownership

from tests.unit.scheduler.plugin_helpers import flavor
from tests.unit.scheduler.plugin_helpers import LARGE
from tests.unit.scheduler.plugin_helpers import MEDIUM
from tests.unit.scheduler.plugin_helpers import NOW


class InstanceRowsTest(testtools.TestCase):
    """The bulk read's rows (``cell_reads._instance_rows``), on a fake session
    (no database).
    """

    def rows(self, flavor_texts):
        import collections
        Rec = collections.namedtuple('Rec', (
            'uuid host node vm_state task_state launched_at display_name '
            'project_id user_id image_ref updated_at flavor key value'))
        recs = [Rec('u%d' % i, 'h', 'n', 'active', None, NOW, 'x', 'p',
                    'u', 'img', NOW, text, None, None)
                for i, text in enumerate(flavor_texts)]
        session = mock.Mock()
        # the columns with opie's system metadata keys, then its server
        # metadata keys
        session.execute.side_effect = [recs, []]
        read = cell_reads._instance_rows.__wrapped__
        return read(mock.Mock(session=session), ['h'], ['n'])

    def test_one_parse_per_serialized_flavor(self):
        from oslo_serialization import jsonutils

        def text(size, preemptible):
            return jsonutils.dumps({
                'cur': flavor(size, preemptible).obj_to_primitive(),
                'old': None, 'new': None})
        large, medium = text(LARGE, True), text(MEDIUM, False)
        parse = self.useFixture(fixtures.MockPatchObject(
            cell_reads, '_row_flavor', wraps=cell_reads._row_flavor)).mock
        rows = self.rows([large, medium, large, None])
        self.assertEqual(['u0', 'u1', 'u2'], [r.uuid for r in rows])
        self.assertEqual(2, parse.call_count)
        self.assertIs(rows[0].flavor, rows[2].flavor)
        self.assertEqual((4, 8000, 80, True), (
            rows[2].flavor.vcpus, rows[2].flavor.memory_mb,
            rows[2].flavor.root_gb,
            ownership.flavor_is_preemptible(rows[2].flavor)))
        self.assertEqual((2, False), (
            rows[1].flavor.vcpus, ownership.flavor_is_preemptible(
                rows[1].flavor)))
