"""listener_stats: one integer column per counter, the record's base + last (gauges: last)

Revision ID: 0007_totals
Revises: 0006_meta
Create Date: 2026-11-26 08:30:00
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0007_totals"
down_revision = "0006_meta"
branch_labels = None
depends_on = None
#: Rolling upgrades (``lbaas.db.migrate``): adds only, so code of the release before runs on it.
PHASE = "expand"

# Written out rather than imported: a migration keeps meaning what it meant when written.
# A cumulative counter's column is base + last; a gauge's is last alone.
_CUMULATIVE = (
    *("bytes_in", "bytes_out", "total_connections", "request_errors", "requests"),
    "check_failures",
)
_GAUGES = ("active_connections", "vip_probes", "vip_answered")
_COLUMNS = _CUMULATIVE + _GAUGES


def upgrade() -> None:
    with op.batch_alter_table("listener_stats", schema=None) as batch_op:
        for name in _COLUMNS:
            batch_op.add_column(
                sa.Column(name, sa.BigInteger(), nullable=False, server_default="0")
            )
    _carry_over()


def _carry_over() -> None:
    """Fill the new columns of the records that exist from their ``base`` and ``last``."""
    stats = sa.table(
        "listener_stats",
        sa.column("amphora_id", sa.String()),
        sa.column("listener_id", sa.String()),
        sa.column("base", sa.JSON()),
        sa.column("last", sa.JSON()),
        *(sa.column(name, sa.BigInteger()) for name in _COLUMNS),
    )
    conn = op.get_bind()
    rows = conn.execute(
        sa.select(stats.c.amphora_id, stats.c.listener_id, stats.c.base, stats.c.last)
    )
    values: list[dict[str, Any]] = [
        {"amp": amphora_id, "obj": listener_id, **_totals(base or {}, last or {})}
        for amphora_id, listener_id, base, last in rows
    ]
    if values:
        conn.execute(
            stats.update()
            .where(stats.c.amphora_id == sa.bindparam("amp"))
            .where(stats.c.listener_id == sa.bindparam("obj"))
            .values({name: sa.bindparam(name) for name in _COLUMNS}),
            values,
        )


def _totals(base: dict[str, Any], last: dict[str, Any]) -> dict[str, int]:
    return {
        name: int(last.get(name, 0)) + (0 if name in _GAUGES else int(base.get(name, 0)))
        for name in _COLUMNS
    }


def downgrade() -> None:
    with op.batch_alter_table("listener_stats", schema=None) as batch_op:
        for name in reversed(_COLUMNS):
            batch_op.drop_column(name)
