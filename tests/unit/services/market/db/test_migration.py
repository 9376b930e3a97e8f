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
"""The models (opie_sched.services.market.db.models) and the alembic
migrations (opie_sched.services.market.db.migration) create the same
schema (oslo.db's ModelsMigrationsSync), on SQLite always, on
MariaDB/MySQL and PostgreSQL when a local server answers."""

from oslo_db.sqlalchemy import test_migrations
import sqlalchemy as sa
import testtools

from opie_sched.services.market.db import migration
from opie_sched.services.market.db import models
from tests.unit.services.market.db import test_api as store_tests
from tests.unit.services.market import helpers as market_tests


class _ModelsMigrationsSync(test_migrations.ModelsMigrationsSync):
    """The migrations at head create what the models declare."""

    def make_url(self):
        raise NotImplementedError

    def setUp(self):
        super().setUp()
        self.engine = sa.create_engine(self.make_url())
        self.addCleanup(self.engine.dispose)

    def get_engine(self):
        return self.engine

    def get_metadata(self):
        return models.Base.metadata

    def db_sync(self, engine):
        migration.db_sync(engine)


class SqliteModelsMigrationsSyncTest(_ModelsMigrationsSync,
                                     testtools.TestCase):

    def make_url(self):
        return market_tests.sqlite_url(self)


class _ServerSync(_ModelsMigrationsSync):
    """On a throw-away database of a local server (skipped if absent)."""

    ENV = None
    DEFAULT = None

    def make_url(self):
        return market_tests.server_database_url(self, self.ENV, self.DEFAULT)


class MySQLModelsMigrationsSyncTest(_ServerSync, testtools.TestCase):
    ENV = store_tests.MySQLStoreTest.ENV
    DEFAULT = store_tests.MySQLStoreTest.DEFAULT


class PostgreSQLModelsMigrationsSyncTest(_ServerSync, testtools.TestCase):
    ENV = store_tests.PostgreSQLStoreTest.ENV
    DEFAULT = store_tests.PostgreSQLStoreTest.DEFAULT
