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
"""The owners' event history and the servers' lifetimes.

``market_events``: at-risk marks, notices, interruptions (the
scheduler's, seen in its ``opie.instance.preempt`` notifications, and the
market's own), restores, drills and owner deletions, kept after the
server is deleted. ``market_lifetimes``: when each preemptible server
started and how it ended, for the interruption history's survival curve.

Revision ID: 0003
Revises: 0002
"""

from alembic import op
import sqlalchemy as sa

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'market_events',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('server_uuid', sa.String(64), nullable=False),
        sa.Column('project', sa.String(255), nullable=False),
        sa.Column('kind', sa.String(16), nullable=False),
        sa.Column('cause', sa.String(32), nullable=True),
        sa.Column('action', sa.String(16), nullable=True),
        sa.Column('at', sa.Double(), nullable=False),
        sa.Column('host', sa.String(255), nullable=True),
        sa.Column('flavor', sa.String(255), nullable=True),
        sa.Column('detail', sa.Text, nullable=False),
        sa.UniqueConstraint('server_uuid', 'kind', 'at',
                            name='uniq_market_events0server0kind0at'))
    op.create_index('market_events_project_idx', 'market_events',
                    ['project', 'at', 'id'])
    op.create_table(
        'market_lifetimes',
        sa.Column('server_uuid', sa.String(64), primary_key=True),
        sa.Column('project', sa.String(255), nullable=False),
        sa.Column('flavor', sa.String(255), nullable=True),
        sa.Column('vcpus', sa.Integer, nullable=False),
        sa.Column('memory_mb', sa.Integer, nullable=False),
        sa.Column('host', sa.String(255), nullable=True),
        sa.Column('started_at', sa.Double(), nullable=False),
        sa.Column('ended_at', sa.Double(), nullable=True),
        sa.Column('end', sa.String(16), nullable=True))
    op.create_index('market_lifetimes_flavor_idx', 'market_lifetimes',
                    ['flavor', 'started_at'])
