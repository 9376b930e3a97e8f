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
"""Tests of ``opie-sched market allocate`` (opie_sched.cmd.market)."""

import io
import json
import os

import fixtures
import testtools

from opie_sched.cmd import cli


# -- the CLI -----------------------------------------------------------------

MERKAT = {
    'hosts': [{'name': 'node-%d' % i, 'capacity': {'vcpus': 100}}
              for i in (1, 2, 3)],
    'vms': ([{'uuid': 'small-%d' % i, 'bid': 12} for i in (1, 2, 3)]
            + [{'uuid': 'large-%d' % i, 'bid': 30} for i in (1, 2)]),
}


class MarketCLITest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.stdout = io.StringIO()
        self.stderr = io.StringIO()
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', self.stdout))
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', self.stderr))

    def write(self, doc, name='snap.json'):
        path = os.path.join(self.tmp, name)
        with open(path, 'w') as f:
            f.write(doc if isinstance(doc, str) else json.dumps(doc))
        return path

    def run_json(self, doc):
        self.assertEqual(0, self.run_main('market', 'allocate',
                                          self.write(doc), '-f', 'json'),
                         self.stderr.getvalue())
        return json.loads(self.stdout.getvalue())

    def test_merkat_example_json(self):
        out = self.run_json(MERKAT)
        price = (3 * 12 + 2 * 30) / 300.0
        self.assertAlmostEqual(price, out['pools'][0]['prices']['vcpus'])
        vms = {v['uuid']: v for v in out['vms']}
        for uuid, bid, host_bids in (('small-1', 12, 36),
                                     ('large-2', 30, 30)):
            vm = vms[uuid]
            cluster = bid / price
            local = bid / (host_bids / 100.0)
            self.assertAlmostEqual(cluster, vm['cluster_share']['vcpus'])
            self.assertAlmostEqual(local, vm['host_share']['vcpus'])
            self.assertAlmostEqual((local - cluster) / local, vm['error'])
            self.assertTrue(vm['placed'])
            self.assertEqual('bid', vm['bid_source'])
        hosts = {h['name']: h for h in out['hosts']}
        self.assertEqual(['small-1', 'small-2', 'small-3'],
                         hosts['node-3']['vms'])

    def test_table(self):
        self.assertEqual(0, self.run_main('market', 'allocate',
                                          self.write(MERKAT), '-c', 'vms'))
        cells = [line.split('|')[2].strip() for line in
                 self.stdout.getvalue().splitlines() if line.count('|') == 3]
        self.assertEqual('Value', cells[0])
        self.assertEqual(['vm', 'host', 'bid source', 'bids/h',
                          'cluster share', 'host share', 'errors',
                          'vm error'],
                         [c.strip() for c in cells[1].split('   ')
                          if c.strip()])
        row = [c for c in cells if c.startswith('small-1')][0].split()
        self.assertEqual(['small-1', 'node-3', '(placed)', 'bid',
                          'vcpus=12', 'vcpus=37.5', 'vcpus=33.3333',
                          'vcpus=-0.125', '-0.125'], row)

    def test_table_has_every_field(self):
        self.assertEqual(0, self.run_main('market', 'allocate',
                                          self.write(MERKAT)))
        out = self.stdout.getvalue()
        for field in ('resources', 'reserve_price', 'pools', 'hosts',
                      'vms'):
            self.assertIn('| %s ' % field, out)
        self.assertIn('vcpus=0.32', out)     # (3 * 12 + 2 * 30) / 300

    def test_bid_sources_reserve_and_split(self):
        doc = {
            'reserve_price': {'vcpus': 0.5},
            'default_bid': '0.4', 'max_bid': 10,
            'hosts': [{'name': 'h', 'pool': 'gold',
                       'capacity': {'vcpus': 8, 'memory_mb': 8192}}],
            'vms': [{'uuid': 'm', 'host': 'h', 'metadata': {'opie:bid': 1},
                     'flavor_extra_specs': {'opie:bid': '2'},
                     'request': {'vcpus': 4, 'memory_mb': 2048}},
                    {'uuid': 'f', 'host': 'h',
                     'flavor_extra_specs': {'opie:bid': '2'}},
                    {'uuid': 'd', 'pool': 'gold'},
                    {'uuid': 'x', 'host': 'h',
                     'bid': {'vcpus': '0.25', 'memory_mb': '0.5'}}]}
        out = self.run_json(doc)
        vms = {v['uuid']: v for v in out['vms']}
        self.assertEqual(['metadata', 'flavor', 'default', 'bid'],
                         [vms[u]['bid_source'] for u in 'mfdx'])
        # m: weights 4/8 : 2048/8192 = 2 : 1 of its bid of 1.
        self.assertAlmostEqual(2 / 3, vms['m']['bids']['vcpus'])
        self.assertAlmostEqual(1 / 3, vms['m']['bids']['memory_mb'])
        self.assertEqual(0.5, out['reserve_price']['vcpus'])
        # vCPU bids: 2/3 + 1 + 0.2 + 0.25 = 2.1167 < reserve 0.5 * 8 -> 0.5
        self.assertEqual(0.5, out['pools'][0]['prices']['vcpus'])
        self.assertAlmostEqual(0.25 / 0.5, vms['x']['host_share']['vcpus'])

    def run_main(self, *argv):
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_CLIENT_CONFIG_FILE', os.path.join(self.tmp, 'none.yaml')))
        self.useFixture(fixtures.EnvironmentVariable('HOME', self.tmp))
        return cli.main(list(argv))

    def assertSnapshotError(self, doc, fragment):
        self.stderr.seek(0)
        self.stderr.truncate()
        code = self.run_main('market', 'allocate', self.write(doc))
        err = self.stderr.getvalue()
        self.assertEqual(1, code, err)
        self.assertEqual(1, err.count('\n'), err)
        self.assertTrue(err.startswith('opie-sched: error: '), err)
        self.assertIn(fragment, err)

    def test_main_runs_the_command(self):
        self.assertEqual(0, self.run_main('market', 'allocate',
                                          self.write(MERKAT), '--format',
                                          'json'))
        # --format is the long form of -f
        self.assertEqual(5, len(json.loads(self.stdout.getvalue())['vms']))

    def test_bad_snapshots_name_the_field(self):
        def merkat(**changes):
            doc = json.loads(json.dumps(MERKAT))
            for path, value in changes.items():
                where, key = path.rsplit('__', 1)
                target = doc
                for part in where.split('__'):
                    target = target[int(part) if part.isdigit() else part]
                target[key] = value
            return doc

        self.assertSnapshotError(merkat(hosts__1__capacity__vcpus=-1),
                                 'hosts[1].capacity.vcpus: -1 is less than '
                                 'or equal to the minimum of 0')
        self.assertSnapshotError(merkat(hosts__0__capacity__vcpu=1),
                                 'hosts[0].capacity: Additional properties')
        self.assertSnapshotError(merkat(vms__2__bid=-1),
                                 'vms[2].bid: must not be negative')
        self.assertSnapshotError(merkat(vms__2__bid='NaN'),
                                 'vms[2].bid: not a number')
        self.assertSnapshotError(merkat(vms__0__bid=True),
                                 'vms[0].bid: True is not of type')
        self.assertSnapshotError(merkat(vms__1__bid={'vcpus': 'x'}),
                                 'vms[1].bid.vcpus: not a number')
        self.assertSnapshotError(merkat(vms__1__host='node-9'),
                                 'vms[1].host: unknown host')
        self.assertSnapshotError(merkat(vms__1__uuid='small-1'),
                                 'vms[1].uuid: duplicate VM')
        self.assertSnapshotError(merkat(hosts__2__name='node-1'),
                                 'hosts[2].name: duplicate host')
        self.assertSnapshotError(merkat(vms__4__pool='gold'),
                                 "vms[4].pool: no host in pool 'gold'")
        self.assertSnapshotError(merkat(vms__4__pool='gold',
                                        vms__4__host='node-2'),
                                 "vms[4].pool: 'gold', but host 'node-2' "
                                 "is in pool 'default'")
        self.assertSnapshotError(
            merkat(hosts__1__capacity={'memory_mb': 5}),
            'hosts[1].capacity: has memory_mb, hosts[0] has vcpus')
        self.assertSnapshotError(
            merkat(vms__0__request={'memory_mb': 5}),
            'vms[0].request.memory_mb: no host has resource')
        self.assertSnapshotError(dict(MERKAT, max_bid=20),
                                 'vms[3].bid: 30 is above the largest')
        no_bid = merkat(vms__0__metadata={'opie:bid': 'cheap'})
        del no_bid['vms'][0]['bid']
        self.assertSnapshotError(no_bid,
                                 'vms[0]: server metadata opie:bid: not a '
                                 'number')
        del no_bid['vms'][0]['metadata']
        self.assertSnapshotError(no_bid, 'vms[0]: no bid')
        self.assertSnapshotError({'hosts': []}, "'vms' is a required")
        self.assertSnapshotError('{"hosts": [', 'not valid JSON')
        self.assertSnapshotError('{"hosts": NaN, "vms": []}',
                                 'NaN is not a number')
        code = self.run_main('market', 'allocate',
                             os.path.join(self.tmp, 'missing.json'))
        self.assertEqual(1, code)
        self.assertIn('cannot read', self.stderr.getvalue())
