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
"""Tests of the market's ``[database]`` options
(opie_sched.services.market.opts): oslo.db's group configures the
store; ``[opie_market] connection`` still works, as a deprecated alias.
"""

import os

import fixtures
from oslo_config import cfg
import testtools

from opie_sched.services.market.db import api as db_api
from opie_sched.services.market.db import migration
from opie_sched.services.market import opts
from opie_sched.services.market import service


def _conf(test, text):
    path = os.path.join(test.useFixture(fixtures.TempDir()).path,
                        'market.conf')
    with open(path, 'w') as f:
        f.write(text)
    conf = cfg.ConfigOpts()
    opts.register_opts(conf)
    conf(['--config-file', path])
    return conf


class DatabaseOptionsTest(testtools.TestCase):

    def test_database_group(self):
        conf = _conf(self, '[database]\nconnection = sqlite:////tmp/x.db\n'
                           'max_pool_size = 7\nmax_retries = 3\n'
                           'slave_connection = sqlite:////tmp/y.db\n')
        self.assertEqual('sqlite:////tmp/x.db', opts.connection_url(conf))
        engine = opts.engine_options(conf)
        self.assertEqual(7, engine['max_pool_size'])
        self.assertEqual(3, engine['max_retries'])
        self.assertEqual('sqlite:////tmp/y.db', engine['slave_connection'])

    def test_opie_market_connection_is_a_deprecated_alias(self):
        conf = _conf(self, '[opie_market]\nconnection = sqlite:////tmp/a\n')
        self.assertEqual('sqlite:////tmp/a', opts.connection_url(conf))
        self.assertEqual('sqlite:////tmp/a', conf.database.connection)
        # the new name wins
        conf = _conf(self, '[opie_market]\nconnection = sqlite:////tmp/a\n'
                           '[database]\nconnection = sqlite:////tmp/b\n')
        self.assertEqual('sqlite:////tmp/b', opts.connection_url(conf))

    def test_default_is_the_sqlite_file_in_state_dir(self):
        conf = _conf(self, '[opie_market]\nstate_dir = /srv/m\n')
        self.assertEqual('sqlite:////srv/m/market.sqlite',
                         opts.connection_url(conf))

    def test_the_store_gets_the_engine_options(self):
        state = self.useFixture(fixtures.TempDir()).path
        conf = _conf(self, '[opie_market]\nstate_dir = %s\n'
                           '[database]\nmysql_sql_mode = ANSI\n'
                           'connection_recycle_time = 77\n' % state)
        seen = {}
        real = db_api.MarketStore.__init__

        def init(store, connection, **kwargs):
            seen.update(kwargs, connection=connection)
            real(store, connection, **kwargs)
        self.useFixture(fixtures.MonkeyPatch(
            'opie_sched.services.market.db.api.MarketStore.__init__', init))
        store = service.make_store(conf, sync=True)
        self.addCleanup(store.dispose)
        self.assertEqual('ANSI', seen['mysql_sql_mode'])
        self.assertEqual(77, seen['connection_recycle_time'])
        self.assertEqual(migration.head_revision(), store.version())

    def test_sample_lists_the_database_group(self):
        groups = dict(opts.list_opts())
        names = {o.dest for o in groups['database']}
        self.assertTrue({'connection', 'slave_connection', 'max_pool_size',
                         'max_retries', 'connection_recycle_time'} <= names)
        self.assertNotIn('connection', {o.dest for o in groups[
            'opie_market']})
