"""The member object as Octavia renders it: no ``pool_id`` and no ``description``."""

from __future__ import annotations

from typing import Any

from lbaas.api.views.common import lifecycle, ownership, text
from lbaas.db.listing import tags_of
from lbaas.db.session import Session
from lbaas.db.tables import MemberRow


def member_view(row: MemberRow, tags: list[str]) -> dict[str, Any]:
    return {
        "id": row.id,
        "name": text(row.name),
        "admin_state_up": row.admin_state_up,
        **ownership(row),
        **lifecycle(row),
        "address": row.address,
        "protocol_port": row.protocol_port,
        "weight": row.weight,
        "backup": row.backup,
        "subnet_id": row.subnet_id,
        "monitor_address": row.monitor_address,
        "monitor_port": row.monitor_port,
        "tags": tags,
        "vnic_type": row.vnic_type or "normal",
    }


def render_members(session: Session, rows: list[MemberRow]) -> list[dict[str, Any]]:
    """Views of many members in one query (their tags)."""
    tags = tags_of(session, [r.id for r in rows])
    return [member_view(r, tags[r.id]) for r in rows]


def render_member(session: Session, row: MemberRow) -> dict[str, Any]:
    return render_members(session, [row])[0]
