"""fleet: the hosts registry (one row per enrolled agent)

Revision ID: 0004_fleet
Revises: 0003_ampnet
Create Date: 2026-11-25 18:45:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_fleet"
down_revision = "0003_ampnet"
branch_labels = None
depends_on = None
#: Rolling upgrades (``lbaas.db.migrate``): adds only, so code of the release before runs on it.
PHASE = "expand"


def upgrade() -> None:
    op.create_table(
        "hosts",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("address", sa.String(length=255), nullable=False),
        sa.Column("port", sa.Integer(), nullable=False),
        sa.Column("zone", sa.String(length=255), nullable=False),
        sa.Column("capacity", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("enrolled_at", sa.DateTime(), nullable=False),
        sa.Column("last_heartbeat_at", sa.Float(), nullable=True),
        sa.Column("heartbeat_epoch", sa.BigInteger(), nullable=True),
        sa.Column("heartbeat_sequence", sa.BigInteger(), nullable=True),
        sa.Column("reported_amphorae", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )


def downgrade() -> None:
    op.drop_table("hosts")
