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
"""Alembic migrations of the opie-market database.

``opie-market db sync`` (:func:`db_sync`) upgrades a database to the
newest revision; the scripts live in ``migrations/versions``. The engine
comes from oslo.db (:func:`oslo_db.sqlalchemy.engines.create_engine`
through :class:`.api.MarketStore`), so sqlite pragmas, MySQL SQL modes and
connection retries are oslo.db's.
"""

import os

from alembic import command as alembic_command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script

MIGRATIONS_DIR = os.path.join(os.path.dirname(__file__), 'migrations')


def _config(engine):
    config = alembic_config.Config()
    config.set_main_option('script_location', MIGRATIONS_DIR)
    config.attributes['engine'] = engine
    return config


def db_sync(engine, revision='head'):
    """Upgrade the database of ``engine`` to ``revision`` (default head).

    Safe to run again: an up-to-date database is left as is.
    """
    alembic_command.upgrade(_config(engine), revision)


def db_version(engine):
    """The current revision of the database (None: not under version
    control yet).
    """
    with engine.connect() as conn:
        return alembic_migration.MigrationContext.configure(
            conn).get_current_revision()


def head_revision():
    """The newest revision of the migration scripts."""
    return alembic_script.ScriptDirectory(MIGRATIONS_DIR).get_current_head()
