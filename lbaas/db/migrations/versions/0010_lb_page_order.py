"""load_balancers (created_at, id) and (project_id, created_at, id): the lists' order

Revision ID: 0010_lb_page_order
Revises: 0009_member_down
Create Date: 2026-12-07 21:40:00
"""

from __future__ import annotations

from alembic import op

revision = "0010_lb_page_order"
down_revision = "0009_member_down"
branch_labels = None
depends_on = None
#: Rolling upgrades (``lbaas.db.migrate``): adds only, so code of the release before runs on it.
PHASE = "expand"


def upgrade() -> None:
    # Without it every page of the list sorted the whole table: at 10,000 load balancers
    # the sort was half of a page's statement.
    op.create_index("ix_load_balancers_created_id", "load_balancers", ["created_at", "id"])
    # A tenant's list in order: its rows alone, never a walk of everyone's.
    columns = ["project_id", "created_at", "id"]
    op.create_index("ix_load_balancers_project_created_id", "load_balancers", columns)


def downgrade() -> None:
    op.drop_index("ix_load_balancers_project_created_id", table_name="load_balancers")
    op.drop_index("ix_load_balancers_created_id", table_name="load_balancers")
