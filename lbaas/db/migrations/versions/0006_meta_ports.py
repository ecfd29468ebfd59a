"""ports: name, project, DNS name and host binding (instances' ports for the metadata proxy)

Revision ID: 0006_meta
Revises: 0005_tls
Create Date: 2026-11-25 19:45:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_meta"
down_revision = "0005_tls"
branch_labels = None
depends_on = None
#: Rolling upgrades (``lbaas.db.migrate``): adds only, so code of the release before runs on it.
PHASE = "expand"


def upgrade() -> None:
    # server_default "" fills the rows that exist already (VIPs, reserved addresses).
    with op.batch_alter_table("ports", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("name", sa.String(length=255), nullable=False, server_default="")
        )
        batch_op.add_column(sa.Column("project_id", sa.String(length=36), nullable=True))
        batch_op.add_column(
            sa.Column("host_id", sa.String(length=255), nullable=False, server_default="")
        )
        batch_op.add_column(
            sa.Column("dns_name", sa.String(length=255), nullable=False, server_default="")
        )
        batch_op.create_index("ix_ports_host_id", ["host_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("ports", schema=None) as batch_op:
        batch_op.drop_index("ix_ports_host_id")
        batch_op.drop_column("dns_name")
        batch_op.drop_column("host_id")
        batch_op.drop_column("project_id")
        batch_op.drop_column("name")
