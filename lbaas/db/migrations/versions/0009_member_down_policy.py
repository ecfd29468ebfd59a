"""pools.member_down_policy (the lbaas_member_down_policy extension), "keep" for every pool

Revision ID: 0009_member_down
Revises: 0008_secgroups
Create Date: 2026-12-07 03:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_member_down"
down_revision = "0008_secgroups"
branch_labels = None
depends_on = None
#: Rolling upgrades (``lbaas.db.migrate``): adds only, so code of the release before runs on it.
PHASE = "expand"


def upgrade() -> None:
    # An added column with a server default: existing pools read "keep", what their data
    # planes did before the column existed. batch_alter_table: SQLite alters by copying.
    with op.batch_alter_table("pools") as batch:
        batch.add_column(
            sa.Column(
                "member_down_policy", sa.String(length=16), nullable=False, server_default="keep"
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("pools") as batch:
        batch.drop_column("member_down_policy")
