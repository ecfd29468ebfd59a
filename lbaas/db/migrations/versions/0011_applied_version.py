"""converge_jobs.applied_version: the data-plane version a converge sent, for the resync

Revision ID: 0011_applied_version
Revises: 0010_lb_page_order
Create Date: 2026-12-08 01:15:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011_applied_version"
down_revision = "0010_lb_page_order"
branch_labels = None
depends_on = None
#: Rolling upgrades (``lbaas.db.migrate``): adds only, so code of the release before runs on it.
PHASE = "expand"


def upgrade() -> None:
    # Nullable, no default: rows written before it (or by the release before) have no
    # version, and the resync converges those as it always did.
    with op.batch_alter_table("converge_jobs") as batch:
        batch.add_column(sa.Column("applied_version", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("converge_jobs") as batch:
        batch.drop_column("applied_version")
