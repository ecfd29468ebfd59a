"""key manager: sealed secrets, containers and their consumers

Revision ID: 0005_tls
Revises: 0004_fleet
Create Date: 2026-11-25 18:50:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_tls"
down_revision = "0004_fleet"
branch_labels = None
depends_on = None
#: Rolling upgrades (``lbaas.db.migrate``): adds only, so code of the release before runs on it.
PHASE = "expand"


def _owned() -> list[sa.Column[object]]:
    return [
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=36), nullable=False),
        sa.Column("creator_id", sa.String(length=255), nullable=True),
        sa.Column("name", sa.String(length=255), nullable=True),
    ]


def upgrade() -> None:
    op.create_table(
        "km_secrets",
        *_owned(),
        sa.Column("secret_type", sa.String(length=16), nullable=False),
        sa.Column("algorithm", sa.String(length=255), nullable=True),
        sa.Column("bit_length", sa.Integer(), nullable=True),
        sa.Column("mode", sa.String(length=255), nullable=True),
        sa.Column("expiration", sa.DateTime(), nullable=True),
        sa.Column("content_type", sa.String(length=255), nullable=True),
        sa.Column("kek_id", sa.String(length=32), nullable=True),
        sa.Column("ciphertext", sa.LargeBinary(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_km_secrets_project_id", "km_secrets", ["project_id"])
    op.create_table(
        "km_containers",
        *_owned(),
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_km_containers_project_id", "km_containers", ["project_id"])
    op.create_table(
        "km_container_secrets",
        sa.Column("container_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("secret_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(["container_id"], ["km_containers.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["secret_id"], ["km_secrets.id"]),
        sa.PrimaryKeyConstraint("container_id", "name"),
    )
    op.create_index("ix_km_container_secrets_secret_id", "km_container_secrets", ["secret_id"])
    op.create_table(
        "km_container_consumers",
        sa.Column("container_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("url", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["container_id"], ["km_containers.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("container_id", "name", "url"),
    )
    op.create_table(
        "km_secret_consumers",
        sa.Column("secret_id", sa.String(length=36), nullable=False),
        sa.Column("service", sa.String(length=255), nullable=False),
        sa.Column("resource_type", sa.String(length=255), nullable=False),
        sa.Column("resource_id", sa.String(length=36), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["secret_id"], ["km_secrets.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("secret_id", "service", "resource_type", "resource_id"),
    )


def downgrade() -> None:
    op.drop_table("km_secret_consumers")
    op.drop_table("km_container_consumers")
    op.drop_index("ix_km_container_secrets_secret_id", table_name="km_container_secrets")
    op.drop_table("km_container_secrets")
    op.drop_index("ix_km_containers_project_id", table_name="km_containers")
    op.drop_table("km_containers")
    op.drop_index("ix_km_secrets_project_id", table_name="km_secrets")
    op.drop_table("km_secrets")
