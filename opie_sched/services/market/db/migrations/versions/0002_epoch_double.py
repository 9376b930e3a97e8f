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
"""Epoch-second columns in double precision.

A FLOAT column is single precision on MySQL/MariaDB: at today's epoch it
keeps only multiples of 128 s, so notice deadlines and the oldest-first
order of victims were wrong there (sqlite and PostgreSQL were not
affected).

Revision ID: 0002
Revises: 0001
"""

from alembic import op
import sqlalchemy as sa

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None

#: table -> its epoch columns (name, nullable)
COLUMNS = {
    'market_accounts': (('created_at', False), ('updated_at', True)),
    'market_ledger': (('created_at', False),),
    'market_bids': (('updated_at', False),),
    'market_periods': (('created_at', False), ('updated_at', True)),
    'market_period_servers': (('created_at', True),),
    'market_notices': (('noticed_at', False), ('deadline', False),
                       ('updated_at', True)),
    'market_reserve_prices': (('updated_at', False),),
}


def upgrade():
    for table, columns in COLUMNS.items():
        with op.batch_alter_table(table) as batch:
            for name, nullable in columns:
                batch.alter_column(name, existing_type=sa.Float(),
                                   type_=sa.Double(),
                                   existing_nullable=nullable)
