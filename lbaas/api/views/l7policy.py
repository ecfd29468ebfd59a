"""The L7 policy object as Octavia renders it (rules as ``[{"id"}]``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lbaas.api.views.common import described_object, ids
from lbaas.db.listing import tags_of
from lbaas.db.loadbalancers import l7_repo
from lbaas.db.session import Session
from lbaas.db.tables import L7PolicyRow


def l7policy_view(row: L7PolicyRow, rule_ids: Sequence[str], tags: Sequence[str]) -> dict[str, Any]:
    """The full policy object; rules as ``[{"id"}]`` in creation order."""
    return {
        **described_object(row),
        "action": row.action,
        "listener_id": row.listener_id,
        "redirect_pool_id": row.redirect_pool_id,
        "redirect_url": row.redirect_url,
        "redirect_prefix": row.redirect_prefix,
        "redirect_http_code": row.redirect_http_code,
        "position": row.position,
        "rules": ids(rule_ids),
        "tags": list(tags),
    }


def render_l7policies(session: Session, rows: Sequence[L7PolicyRow]) -> list[dict[str, Any]]:
    """Views of many policies with a fixed number of queries."""
    policy_ids = [r.id for r in rows]
    rules = l7_repo.rule_ids_in_order(session, policy_ids)
    tags = tags_of(session, policy_ids)
    return [l7policy_view(r, rules[r.id], tags[r.id]) for r in rows]
