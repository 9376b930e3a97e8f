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
"""Initial tables of the opie-market service.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from alembic import op
import sqlalchemy as sa

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None

# Exact decimal text (see opie_sched.services.market.db.models.DecimalText).
_DEC = sa.String(64)


def upgrade():
    op.create_table(
        'market_accounts',
        sa.Column('project', sa.String(255), primary_key=True),
        sa.Column('balance', _DEC, nullable=False),
        sa.Column('refill_rate', _DEC, nullable=False),
        sa.Column('cap', _DEC, nullable=True),
        sa.Column('version', sa.Integer, nullable=False),
        sa.Column('created_at', sa.Float, nullable=False),
        sa.Column('updated_at', sa.Float, nullable=True))
    op.create_table(
        'market_ledger',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('kind', sa.String(16), nullable=False),
        sa.Column('project', sa.String(255), nullable=False),
        sa.Column('server', sa.String(64), nullable=False),
        sa.Column('period_start', sa.String(40), nullable=False),
        sa.Column('amount', _DEC, nullable=False),
        sa.Column('balance', _DEC, nullable=False),
        sa.Column('period_seconds', sa.Integer, nullable=True),
        sa.Column('note', sa.Text, nullable=False),
        sa.Column('created_at', sa.Float, nullable=False),
        sa.UniqueConstraint('kind', 'project', 'server', 'period_start',
                            name='uniq_market_ledger0key'))
    op.create_index('market_ledger_project_idx', 'market_ledger',
                    ['project', 'id'])
    op.create_table(
        'market_bids',
        sa.Column('server_uuid', sa.String(64), primary_key=True),
        sa.Column('project', sa.String(255), nullable=False),
        sa.Column('bid', _DEC, nullable=False),
        sa.Column('source', sa.String(16), nullable=False),
        sa.Column('updated_at', sa.Float, nullable=False))
    op.create_index('ix_market_bids_project', 'market_bids', ['project'])
    op.create_table(
        'market_price_history',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('pool', sa.String(255), nullable=False),
        sa.Column('resource', sa.String(64), nullable=False),
        sa.Column('period_start', sa.BigInteger, nullable=False),
        sa.Column('period_seconds', sa.Integer, nullable=False),
        sa.Column('price', _DEC, nullable=False),
        sa.Column('capacity', _DEC, nullable=False),
        sa.Column('bids', _DEC, nullable=False),
        sa.UniqueConstraint('pool', 'resource', 'period_start',
                            name='uniq_market_price0pool0resource0start'))
    op.create_index('market_price_start_idx', 'market_price_history',
                    ['period_start'])
    op.create_table(
        'market_periods',
        sa.Column('period_start', sa.BigInteger, primary_key=True,
                  autoincrement=False),
        sa.Column('period_seconds', sa.Integer, nullable=False),
        sa.Column('state', sa.String(16), nullable=False),
        sa.Column('owner', sa.String(255), nullable=True),
        sa.Column('created_at', sa.Float, nullable=False),
        sa.Column('updated_at', sa.Float, nullable=True))
    op.create_table(
        'market_period_servers',
        sa.Column('period_start', sa.BigInteger, primary_key=True,
                  autoincrement=False),
        sa.Column('server_uuid', sa.String(64), primary_key=True),
        sa.Column('project', sa.String(255), nullable=False),
        sa.Column('pool', sa.String(255), nullable=False),
        sa.Column('host', sa.String(255), nullable=True),
        sa.Column('bid', _DEC, nullable=False),
        sa.Column('bid_source', sa.String(16), nullable=False),
        sa.Column('vcpus', sa.Integer, nullable=False),
        sa.Column('memory_mb', sa.Integer, nullable=False),
        sa.Column('created_at', sa.Float, nullable=True))
    op.create_table(
        'market_notices',
        sa.Column('server_uuid', sa.String(64), primary_key=True),
        sa.Column('project', sa.String(255), nullable=False),
        sa.Column('kind', sa.String(32), nullable=False),
        sa.Column('reason', sa.Text, nullable=False),
        sa.Column('period_start', sa.BigInteger, nullable=False),
        sa.Column('noticed_at', sa.Float, nullable=False),
        sa.Column('deadline', sa.Float, nullable=False),
        sa.Column('state', sa.String(16), nullable=False),
        sa.Column('action', sa.String(16), nullable=True),
        sa.Column('updated_at', sa.Float, nullable=True))
    op.create_index('ix_market_notices_project', 'market_notices',
                    ['project'])
    op.create_table(
        'market_reserve_prices',
        sa.Column('pool', sa.String(255), primary_key=True),
        sa.Column('resource', sa.String(64), primary_key=True),
        sa.Column('price', _DEC, nullable=False),
        sa.Column('updated_at', sa.Float, nullable=False))
