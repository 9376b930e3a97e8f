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
"""The benchmark driver (``benchmarks/run.py``, ``tox -e bench``): its
table of ratios, the comparison of two runs and its argument checks, on
recorded part results (the parts themselves run in
tests.unit.benchmarks.test_scheduling_latency and by hand).
"""

import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile

import testtools

import tests

ROOT = tests.ROOT
SCRIPT = os.path.join(ROOT, 'benchmarks', 'run.py')


def _load():
    spec = importlib.util.spec_from_file_location('bench_run', SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RESULTS = {
    'sched': {'rows': {
        '100': {'a_opie': 105.0, 'a_stock': 100.0, 'b_opie': 900.0,
                'b_decide': 120.0, 'b_exec': 780.0, 'b_stock': 100.0,
                'c_retry': 250.0},
        '1000': {'a_opie': 1000.0, 'a_stock': 1000.0, 'b_opie': 2500.0,
                 'b_decide': 1400.0, 'b_exec': 1100.0, 'b_stock': 1000.0,
                 'c_retry': 2100.0}}},
    'victim': {'rows': [
        {'n': 12, 'hosts': 6, 'ours_ms': 0.5, 'ours_p95_ms': 0.6,
         'brute_ms': 1.0},
        {'n': 64, 'hosts': 30, 'ours_ms': 2.5, 'ours_p95_ms': 3.0,
         'brute_ms': None}]},
    'sim': {'rows': [
        {'hosts': 1000, 'requests': 20000, 'events': 40000, 'wall': 8.0,
         'eps': 5000.0, 'thesis': False},
        {'hosts': 65536, 'requests': 230000, 'events': 460000,
         'wall': 100.0, 'eps': 4600.0, 'thesis': True}]},
}


class RatioRowsTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.run = _load()
        self.rows = {r['key']: r for r in self.run.ratio_rows(RESULTS)}

    def test_ratios_and_targets(self):
        a = self.rows['sched.100.a']
        self.assertAlmostEqual(1.05, a['value'])
        self.assertEqual(['<=', 1.05], a['target'])
        self.assertTrue(a['ok'])
        b = self.rows['sched.1000.b_decide']
        self.assertAlmostEqual(1.4, b['value'])
        self.assertFalse(b['ok'])
        self.assertAlmostEqual(2100.0 / 2500.0,
                               self.rows['sched.1000.c']['value'])
        self.assertFalse(self.rows['victim.64']['ok'])
        self.assertEqual(2.0, self.rows['victim.12.speedup']['value'])
        self.assertTrue(self.rows['sim.thesis']['ok'])
        self.assertEqual(5000.0, self.rows['sim.1000.eps']['value'])

    def test_table_has_legend_and_compare_columns(self):
        rows = self.run.ratio_rows(RESULTS)
        out = io.StringIO()
        self.run.print_table(rows, out=out)
        text = out.getvalue()
        self.assertIn('b opie decision / stock, 1000 nodes', text)
        self.assertIn('NO', text)
        for letter in ('a = ', 'b = ', 'c = '):
            self.assertIn(letter, text)
        old = [dict(r) for r in rows]
        for r in old:
            if r['key'] == 'sched.1000.b_decide':
                r['value'] = 2.8
        out = io.StringIO()
        self.run.print_table(rows, old, out=out)
        line = [x for x in out.getvalue().splitlines()
                if x.startswith('b opie decision / stock, 1000')][0]
        self.assertEqual(['2.80', '1.40', '0.50'], line.split()[-6:-3])

    def test_missing_parts_give_no_rows(self):
        self.assertEqual([], self.run.ratio_rows({}))


class ScaleAndBurstRowsTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.run = _load()

    def test_growth_exponent_is_the_log_log_slope(self):
        self.assertAlmostEqual(1.0, self.run.growth_exponent(
            [(1000, 2.0), (5000, 10.0), (10000, 20.0)]))
        self.assertAlmostEqual(2.0, self.run.growth_exponent(
            [(10, 1.0), (100, 100.0)]))
        self.assertIsNone(self.run.growth_exponent([(1000, 2.0)]))
        self.assertIsNone(self.run.growth_exponent([(1000, 2.0),
                                                    (1000, 3.0)]))
        rows = {r['key']: r for r in self.run.ratio_rows(RESULTS)}
        # a opie 105 -> 1000 ms from 100 to 1000 nodes
        self.assertAlmostEqual(0.9788, rows['sched.growth.a_opie']['value'],
                               places=3)
        self.assertAlmostEqual(1.0, rows['sched.growth.b_stock']['value'])

    def test_burst_rows(self):
        def burst(state, n, ok, wall, timed_out=0):
            return {'state': state, 'n': n, 'ok': ok, 'lost': n - ok,
                    'timed_out': timed_out, 'wall': wall}
        results = {'burst': {'bursts': {'100': [
            burst('free room', 10, 10, 1.0), burst('free room', 50, 50, 5.0),
            burst('preemption', 10, 10, 4.0),
            burst('preemption', 50, 49, 7.0, timed_out=1)]}}}
        rows = {r['key']: r for r in self.run.ratio_rows(results)}
        self.assertAlmostEqual(0.25, rows['burst.10.throughput']['value'])
        self.assertFalse(rows['burst.10.throughput']['ok'])
        self.assertEqual(0, rows['burst.10.lost']['value'])
        self.assertTrue(rows['burst.10.lost']['ok'])
        self.assertEqual(2, rows['burst.50.lost']['value'])
        self.assertFalse(rows['burst.50.lost']['ok'])
        self.assertAlmostEqual(0.7, rows['burst.50.throughput']['value'])
        self.assertTrue(rows['burst.50.throughput']['ok'])

    def test_end_to_end_args_for_devclouds(self):
        import argparse
        args = argparse.Namespace(devcloud='/tmp/o', stock_devcloud='/tmp/s',
                                  os_cloud=None, stock_cloud=None)
        self.assertEqual(['--devcloud', '/tmp/o', '--repeat', '10',
                          '--stock-devcloud', '/tmp/s'],
                         self.run._e2e_args(args, 10))
        args = argparse.Namespace(devcloud=None, stock_devcloud=None,
                                  os_cloud='c', stock_cloud='s')
        self.assertEqual(['--os-cloud', 'c', '--repeat', '1',
                          '--stock-cloud', 's'],
                         self.run._e2e_args(args, 1))

    def test_end_to_end_headroom_rows(self):
        rows = {r['key']: r for r in self.run.ratio_rows(
            {'e2e': {'medians': {'free': 2.0, 'opie': 3.0, 'retry': 9.0,
                                 'headroom': 2.1},
                     'notice': {'target': 120, 'given': 19,
                                'victims': 20}}})}
        self.assertAlmostEqual(1.05, rows['e2e.headroom_free']['value'])
        self.assertTrue(rows['e2e.headroom_free']['ok'])
        self.assertAlmostEqual(0.95, rows['e2e.headroom_notice']['value'])
        self.assertTrue(rows['e2e.headroom_notice']['ok'])
        rows = {r['key']: r for r in self.run.ratio_rows(
            {'e2e': {'medians': {'free': 2.0, 'opie': 3.0, 'headroom': 2.4},
                     'notice': {'target': 120, 'given': 18,
                                'victims': 20}}})}
        self.assertFalse(rows['e2e.headroom_free']['ok'])
        self.assertFalse(rows['e2e.headroom_notice']['ok'])
        # without the design (quick run): no row
        rows = {r['key'] for r in self.run.ratio_rows(
            {'e2e': {'medians': {'free': 2.0, 'opie': 3.0,
                                 'headroom': None}, 'notice': None}})}
        self.assertFalse(rows & {'e2e.headroom_free', 'e2e.headroom_notice'})

    def test_end_to_end_burst_rows(self):
        rows = {r['key']: r for r in self.run.ratio_rows(
            {'e2e': {'medians': {'free': 2.0, 'opie': 3.0},
                     'bursts': {'50': {'n': 50, 'total': 7.0, 'failed': 1},
                                '10': {'n': 10, 'total': 3.0,
                                       'failed': 0}}}})}
        self.assertAlmostEqual(1.5, rows['e2e.burst.10']['value'])
        self.assertAlmostEqual(3.5, rows['e2e.burst.50']['value'])
        self.assertTrue(rows['e2e.burst.10.failed']['ok'])
        self.assertFalse(rows['e2e.burst.50.failed']['ok'])
        # ordered by size, not as text
        keys = [r['key'] for r in self.run.ratio_rows(
            {'e2e': {'medians': {'free': 2.0},
                     'bursts': {'50': {'total': 1, 'failed': 0},
                                '10': {'total': 1, 'failed': 0}}}})]
        self.assertLess(keys.index('e2e.burst.10'),
                        keys.index('e2e.burst.50'))

    def test_end_to_end_rows(self):
        rows = {r['key']: r for r in self.run.ratio_rows(
            {'e2e': {'medians': {'free': 2.0, 'opie': 3.0, 'retry': 9.0}}})}
        self.assertAlmostEqual(1.5, rows['e2e.opie_free']['value'])
        self.assertTrue(rows['e2e.opie_free']['ok'])
        self.assertAlmostEqual(3.0, rows['e2e.retry_opie']['value'])
        self.assertAlmostEqual(4.5, rows['e2e.retry_free']['value'])
        self.assertIsNone(rows['e2e.retry_free']['target'])


class ArgumentsTest(testtools.TestCase):

    def _run(self, *args):
        return subprocess.run(
            [sys.executable, SCRIPT] + list(args), cwd=ROOT,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            universal_newlines=True, timeout=60)

    def test_unknown_part_is_refused(self):
        proc = self._run('--only', 'nope')
        self.assertEqual(2, proc.returncode)
        self.assertIn('unknown part', proc.stderr)

    def test_bad_compare_file_is_refused(self):
        with tempfile.NamedTemporaryFile('w', suffix='.json') as f:
            json.dump({'no': 'ratios'}, f)
            f.flush()
            proc = self._run('--compare', f.name, '--only', 'victim')
        self.assertEqual(2, proc.returncode)
        self.assertIn('not a results file', proc.stderr)

    def test_end_to_end_needs_a_cloud(self):
        proc = self._run('--only', 'e2e')
        self.assertEqual(2, proc.returncode)
        self.assertIn('--only e2e needs --os-cloud', proc.stderr)


class _Proc:
    def __init__(self, code):
        self.code = code

    def wait(self, timeout=None):
        return self.code

    def kill(self):
        pass


class DevcloudsTest(testtools.TestCase):
    """The end-to-end part on two devclouds the run starts itself: both
    come up with notifications (stock with stock nova-scheduler), a
    failed start is tried again one after the other, and both always go
    down.
    """

    def setUp(self):
        super().setUp()
        self.run = _load()
        self.root = tempfile.mkdtemp()
        self.addCleanup(__import__('shutil').rmtree, self.root, True)
        self.calls = []
        self.lines = []
        #: exit codes of successive ``up`` of each cloud
        self.up_codes = {'opie': [0], 'stock': [0]}
        self.down_codes = {'opie': 0, 'stock': 0}

    def _name(self, cmd):
        return os.path.basename(cmd[cmd.index('--state-dir') + 1])

    def _popen(self, cmd, stdout=None, stderr=None, cwd=None):
        name = self._name(cmd)
        self.calls.append(('up', name, tuple(cmd[5:])))
        codes = self.up_codes[name]
        code = codes.pop(0) if len(codes) > 1 else codes[0]
        if code:
            stdout.write('ERROR: MariaDB not reachable for %s\n' % name)
            stdout.flush()
        return _Proc(code)

    def _down(self, cmd, **kwargs):
        name = self._name(cmd)
        self.calls.append(('down', name))
        return subprocess.CompletedProcess(cmd, self.down_codes[name],
                                           stdout='')

    def _clouds(self):
        return self.run.Devclouds(sys.executable, self.root,
                                  self.lines.append, run=self._down,
                                  popen=self._popen)

    def test_both_come_up_and_go_down_even_when_the_part_fails(self):
        seen = []

        def part(pt, quick, workdir, log):
            seen.append(list(self.calls))
            raise RuntimeError('end_to_end.py crashed')

        clouds = self._clouds()
        self.assertRaises(RuntimeError, self.run.run_on_devclouds, clouds,
                          None, True, self.root, self.lines.append,
                          run=part)
        self.assertEqual(
            [[('up', 'opie', ('--notifications',)),
              ('up', 'stock', ('--notifications', '--stock-scheduler'))]],
            seen)
        self.assertEqual([('down', 'stock'), ('down', 'opie')],
                         self.calls[2:])
        self.assertEqual([], clouds.started)

    def test_results_and_directory_removed_after_a_clean_run(self):
        clouds = self._clouds()
        data, wall, err = self.run.run_on_devclouds(
            clouds, None, True, self.root, self.lines.append,
            run=lambda *a: ({'medians': {'opie': 1.0}}, 1.0, None))
        self.assertEqual(({'medians': {'opie': 1.0}}, None), (data, err))
        self.assertFalse(os.path.exists(self.root))

    def test_failed_start_is_tried_again_one_after_the_other(self):
        self.up_codes['stock'] = [1, 0]
        clouds = self._clouds()
        self.assertIsNone(clouds.up())
        self.assertEqual(
            ['up opie', 'up stock', 'down stock', 'down opie', 'up opie',
             'up stock'], ['%s %s' % c[:2] for c in self.calls])
        self.assertEqual(['opie', 'stock'], clouds.started)

    def test_cloud_that_never_comes_up_is_an_error_with_its_log(self):
        self.up_codes['stock'] = [1]
        clouds = self._clouds()
        ran = []
        data, _, err = self.run.run_on_devclouds(
            clouds, None, True, self.root, self.lines.append,
            run=lambda *a: ran.append(a))
        self.assertEqual([], ran)
        self.assertIsNone(data)
        self.assertIn('devcloud stock did not come up (exit 1)', err)
        self.assertIn('MariaDB not reachable for stock', err)
        self.assertEqual([], clouds.started)
        self.assertEqual(('down', 'opie'), self.calls[-1])

    def test_cloud_left_up_keeps_its_directory(self):
        self.down_codes['opie'] = 1
        clouds = self._clouds()
        self.run.run_on_devclouds(
            clouds, None, True, self.root, self.lines.append,
            run=lambda *a: ({}, 1.0, None))
        self.assertEqual(['opie'], clouds.started)
        self.assertTrue(os.path.isdir(self.root))
        self.assertTrue(any('devcloud opie could not be taken down; run: '
                            '%s devcloud down' % sys.executable in line
                            for line in self.lines))

    def test_a_program_that_cannot_run_is_an_error_at_once(self):
        clouds = self.run.Devclouds('/nonexistent/opie-sched', self.root,
                                    self.lines.append, run=self._down,
                                    popen=self._popen)
        data, _, err = self.run.run_on_devclouds(
            clouds, None, True, self.root, self.lines.append,
            run=lambda *a: self.fail('the part ran'))
        self.assertEqual('cannot run /nonexistent/opie-sched: not an '
                         'executable file', err)
        self.assertEqual([], self.calls)
        self.assertFalse(any('started again' in line for line in self.lines))
