"""security_groups and security_group_rules (the Networking API's, for vip_sg_ids)

Revision ID: 0008_secgroups
Revises: 0007_totals
Create Date: 2026-12-06 23:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_secgroups"
down_revision = "0007_totals"
branch_labels = None
depends_on = None
#: Rolling upgrades (``lbaas.db.migrate``): adds only, so code of the release before runs on it.
PHASE = "expand"


def upgrade() -> None:
    op.create_table(
        "security_groups",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("description", sa.String(length=255), nullable=False),
        sa.Column("stateful", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_security_groups_project_id", "security_groups", ["project_id"])
    op.create_table(
        "security_group_rules",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("security_group_id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=36), nullable=False),
        sa.Column("direction", sa.String(length=16), nullable=False),
        sa.Column("ethertype", sa.String(length=8), nullable=False),
        sa.Column("protocol", sa.String(length=40), nullable=True),
        sa.Column("port_range_min", sa.Integer(), nullable=True),
        sa.Column("port_range_max", sa.Integer(), nullable=True),
        sa.Column("remote_ip_prefix", sa.String(length=64), nullable=True),
        sa.Column("remote_group_id", sa.String(length=36), nullable=True),
        sa.Column("description", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["security_group_id"], ["security_groups.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_security_group_rules_security_group_id",
        "security_group_rules",
        ["security_group_id"],
    )


def downgrade() -> None:
    op.drop_index("ix_security_group_rules_security_group_id", "security_group_rules")
    op.drop_table("security_group_rules")
    op.drop_index("ix_security_groups_project_id", "security_groups")
    op.drop_table("security_groups")
