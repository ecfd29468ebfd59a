"""network mtu: the MTU a network declares, applied to amphora legs on it

Revision ID: 0003_ampnet
Revises: 0002
Create Date: 2026-11-25 19:05:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_ampnet"
down_revision = "0002"
branch_labels = None
depends_on = None
#: Rolling upgrades (``lbaas.db.migrate``): adds only, so code of the release before runs on it.
PHASE = "expand"


def upgrade() -> None:
    with op.batch_alter_table("networks", schema=None) as batch_op:
        batch_op.add_column(sa.Column("mtu", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("networks", schema=None) as batch_op:
        batch_op.drop_column("mtu")
