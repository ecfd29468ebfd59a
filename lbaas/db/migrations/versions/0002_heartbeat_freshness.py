"""heartbeat freshness: the newest (epoch, sequence) accepted per amphora

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-25 15:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None
#: Rolling upgrades (``lbaas.db.migrate``): adds only, so code of the release before runs on it.
PHASE = "expand"


def upgrade() -> None:
    with op.batch_alter_table("amphorae", schema=None) as batch_op:
        batch_op.add_column(sa.Column("heartbeat_epoch", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("heartbeat_sequence", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("amphorae", schema=None) as batch_op:
        batch_op.drop_column("heartbeat_sequence")
        batch_op.drop_column("heartbeat_epoch")
