"""drop load_balancers(project_id): (project_id, created_at, id) serves every lookup by it

Revision ID: 0012_drop_lb_project_index
Revises: 0011_applied_version
Create Date: 2026-12-08 01:20:00
"""

from __future__ import annotations

from alembic import op

revision = "0012_drop_lb_project_index"
down_revision = "0011_applied_version"
branch_labels = None
depends_on = None
#: Rolling upgrades (``lbaas.db.migrate``): removes what only the release before relies on,
#: so it runs once no process of that release is left (``lbaas db upgrade --contract``).
PHASE = "contract"


def upgrade() -> None:
    # 0010's (project_id, created_at, id) begins with project_id, so it answers every
    # lookup the single-column index did (a tenant's list, its quota count); keeping both
    # costs a second index write per create and delete, and its space. A contract step,
    # though dropping an index breaks no statement: the release before was written and
    # measured with this index, and its statements keep their plans while it still runs.
    op.drop_index("ix_load_balancers_project_id", table_name="load_balancers")


def downgrade() -> None:
    op.create_index("ix_load_balancers_project_id", "load_balancers", ["project_id"])
