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
"""``opie-sched demo`` options: in-process by default, a cloud with
``--os-cloud``.
"""

import contextlib
import io

import fixtures
import testtools

from opie_sched.cmd import cli
from opie_sched.cmd import demo
from opie_sched.demo import targets


class DemoOptionsTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.EnvironmentVariable('OS_CLOUD'))

    def parse(self, *argv):
        return cli.parse_command(list(argv))

    def test_in_process_by_default(self):
        options, args = self.parse('demo')
        self.assertIsNone(demo._global_cloud(options))
        self.assertIsNone(args.wait_timeout)     # no timeout by default
        self.assertIsNone(args.hosts)            # 4 in-process
        self.assertEqual('none', args.network)

    def test_os_cloud_after_the_command(self):
        # the global option, anywhere on the command line
        options, args = self.parse('demo', '--os-cloud', 'devcloud-admin',
                                   '--image', 'cirros', '--network', 'none')
        self.assertEqual('devcloud-admin', demo._global_cloud(options))
        self.assertEqual('cirros', args.image)

    def test_global_os_cloud_counts_unless_from_the_environment(self):
        options, _ = self.parse('--os-cloud', 'mine', 'demo')
        self.assertEqual('mine', demo._global_cloud(options))
        self.useFixture(fixtures.EnvironmentVariable('OS_CLOUD', 'mine'))
        options, _ = self.parse('demo')
        self.assertIsNone(demo._global_cloud(options))

    def test_results_field(self):
        from opie_sched.demo import replay
        with_pre = replay.ReplayResult('with backfilling', 8.0, requests=3,
                                       normal_requests=2,
                                       preemptible_requests=1,
                                       preemptions=1, preemption_cost=60.0)
        baseline = replay.ReplayResult('normal only', 8.0, requests=2,
                                       normal_requests=2,
                                       preemption_cost=None)
        column = demo.Results([with_pre, baseline])
        rows = column.machine_readable()
        self.assertEqual(['with backfilling', 'normal only'],
                         [r['label'] for r in rows])
        self.assertEqual([3, 1, 60.0], [rows[0][k] for k in (
            'requests', 'preemptions', 'preemption_cost')])
        self.assertIsNone(rows[1]['preemption_cost'])
        text = column.human_readable()
        self.assertIn('with backfilling', text.splitlines()[0])
        [cost] = [line for line in text.splitlines()
                  if 'total preemption cost' in line]
        self.assertEqual(['60', 'n/a'], cost.split()[-2:])

    def test_transparent_normal_placement_by_default(self):
        _, args = self.parse('demo')
        self.assertIsNone(args.normal_placement)
        flags = demo.embedded_flags(args.normal_placement)
        self.assertTrue(
            flags['opie_preemption']['transparent_normal_placement'])
        self.assertEqual(86400.0, flags['opie_preemption']['release_timeout'])
        _, args = self.parse('demo', '--normal-placement', 'full-state')
        self.assertFalse(demo.embedded_flags(args.normal_placement)[
            'opie_preemption']['transparent_normal_placement'])
        # the module constant is not changed by a call
        self.assertNotIn('transparent_normal_placement',
                         demo.SLOW_MACHINE_FLAGS['opie_preemption'])

    def test_bad_wait_timeout_is_a_usage_error(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = cli.main(['demo', '--wait-timeout', '0'])
        self.assertEqual(2, rc)
        self.assertIn('--wait-timeout', err.getvalue())

    def test_flavor_names(self):
        self.assertEqual('demo.c2m4000d40',
                         targets.flavor_name('demo.', 2, 4000, 40))


def _replays():
    """Two replays of one workload with long failure reasons."""
    from opie_sched.demo import replay
    a = replay.ReplayResult(
        'with backfilling', 32.0, requests=100, normal_requests=70,
        preemptible_requests=30, normal_failed=2, preemptible_rejected=4,
        servers_booted=120, preemptions=9, preemption_cost=12345.0,
        preemption_decisions=7, wall_seconds=800)
    b = replay.ReplayResult('normal only', 32.0, requests=70,
                            normal_requests=70, normal_failed=1,
                            servers_booted=90, wall_seconds=500)
    for r in (a, b):
        r.samples = [replay.Sample(0, 10, 5), replay.Sample(3600, 12, 8),
                     replay.Sample(7200, 0, 0)]
    room = {'host%d' % i: (i, 4000 * i, 40 * i) for i in range(1, 5)}
    big = replay.NormalFailure('1234', 3725, (8, 16000, 160), 3, 2,
                               'No valid host was found. ', room)
    a.failures = [big, replay.NormalFailure(
        '1299', 7325, (4, 8000, 80), 1, 1, 'No valid host was found. '
        'There are not enough hosts available.', room)]
    b.failures = [big]
    return a, b


class DemoReportTest(testtools.TestCase):
    """What a person reads: the report of ``-f table`` at 100 columns."""

    def render(self, fields, values, *argv):
        app = cli.OpieSched(['demo'])
        options, _ = app.parser.parse_known_args(['demo'])
        app.options = options
        factory, name, _ = app.command_manager.find_command(['demo'])
        cmd = factory(app, options, cmd_name=name)
        args = cmd.get_parser('opie-sched demo').parse_args(list(argv))
        cmd.formatter = cmd._formatter_plugins[args.formatter].obj
        app.stdout = io.StringIO()
        cmd.produce_output(args, fields, values)
        return app.stdout.getvalue()

    def setUp(self):
        super().setUp()
        from opie_sched.demo import report
        self.report = report
        self.a, self.b = _replays()
        out = self.useFixture(fixtures.TempDir()).path
        # the figure is not what these tests read (and costs a second)
        self.useFixture(fixtures.MockPatch(
            'opie_sched.demo.report.plot',
            side_effect=lambda path, *args, **kwargs: path))
        self.fields, self.values = demo.report_fields(
            '4 hosts x (8 vCPU, 16000 MB, 200 GB) in-process',
            'generated (seed 42)', demo.NORMAL_PLACEMENT['transparent'][1],
            self.a, self.b, out)

    def test_table_fits_100_columns(self):
        text = self.render(self.fields, self.values)
        widest = max(text.splitlines(), key=len)
        self.assertLessEqual(len(widest), 100, text)
        # every word of every failure reason is still there, in order
        reasons = self.report.failure_report([self.a, self.b])
        shown = ' '.join(' '.join(line.strip('| ').split())
                         for line in text.splitlines()
                         if line.startswith(('| failed normal', '|   ')))
        for reason in reasons:
            self.assertIn(' '.join(reason.split()), shown)

    def test_results_are_an_aligned_table(self):
        text = self.render(self.fields, self.values)
        rows = [line.split('|')[2].rstrip() for line in text.splitlines()
                if 'total preemption cost' in line or
                'vCPU utilisation, all' in line or
                'metric' in line]
        # numbers right-aligned under their replay's label
        ends = {len(row) for row in rows}
        self.assertEqual(1, len(ends), rows)
        self.assertTrue(rows[0].endswith('normal only'), rows)
        self.assertEqual(['12345', '0'], rows[1].split()[-2:])

    def test_machine_formats_keep_the_text(self):
        import json
        doc = json.loads(self.render(self.fields, self.values, '-f',
                                     'json'))
        self.assertEqual('\n'.join(self.report.failure_report(
            [self.a, self.b])), doc['failed normal requests'])
        self.assertEqual(demo.NORMAL_PLACEMENT['transparent'][1],
                         doc['normal placement'])
