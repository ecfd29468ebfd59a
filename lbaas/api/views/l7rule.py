"""The L7 rule object as Octavia renders it (it names no policy: the path does)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lbaas.api.views.common import lifecycle, ownership
from lbaas.db.listing import tags_of
from lbaas.db.session import Session
from lbaas.db.tables import L7RuleRow


def l7rule_view(row: L7RuleRow, tags: Sequence[str]) -> dict[str, Any]:
    return {
        "id": row.id,
        "type": row.type,
        "compare_type": row.compare_type,
        "key": row.key,
        "value": row.value,
        "invert": row.invert,
        **lifecycle(row),
        **ownership(row),
        "admin_state_up": row.admin_state_up,
        "tags": list(tags),
    }


def render_l7rules(session: Session, rows: Sequence[L7RuleRow]) -> list[dict[str, Any]]:
    """Views of many rules with one query (their tags)."""
    tags = tags_of(session, [r.id for r in rows])
    return [l7rule_view(r, tags[r.id]) for r in rows]
