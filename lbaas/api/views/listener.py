"""The listener object as Octavia renders it, for one row or a page of rows.

Rendering a page costs a fixed number of queries (policy ids and tags for all rows at
once), whatever the page size.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lbaas.api.views.common import ids, lifecycle, ownership, text
from lbaas.db.listing import column_names, tags_of
from lbaas.db.loadbalancers import l7_repo
from lbaas.db.session import Session
from lbaas.db.tables import ListenerRow

# Columns the response shows converted, or under another name; every other column of the
# table is shown as it is stored, so a new optional column needs no change here.
_CONVERTED = frozenset(
    {
        "name",
        "description",
        "project_id",
        "loadbalancer_id",
        "provisioning_status",
        "operating_status",
        "created_at",
        "updated_at",
        "sni_container_refs",
        "insert_headers",
        "allowed_cidrs",
        "tls_versions",
        "alpn_protocols",
    }
)
_AS_STORED = tuple(c for c in column_names(ListenerRow) if c not in _CONVERTED)


def _list_or_none(value: Sequence[str] | None) -> list[str] | None:
    return list(value) if value is not None else None


def listener_view(
    row: ListenerRow, l7policy_ids: Sequence[str], tags: Sequence[str]
) -> dict[str, Any]:
    """The full listener object; policies as ``[{"id"}]`` in evaluation order."""
    return {
        **{name: getattr(row, name) for name in _AS_STORED},
        "name": text(row.name),
        "description": text(row.description),
        **ownership(row),
        **lifecycle(row),
        "sni_container_refs": list(row.sni_container_refs or []),
        "l7policies": ids(l7policy_ids),
        "insert_headers": dict(row.insert_headers or {}),
        "loadbalancers": ids([row.loadbalancer_id]),
        "tags": list(tags),
        "allowed_cidrs": list(row.allowed_cidrs) if row.allowed_cidrs else None,
        "tls_versions": _list_or_none(row.tls_versions),
        "alpn_protocols": _list_or_none(row.alpn_protocols),
    }


def render_listeners(session: Session, rows: Sequence[ListenerRow]) -> list[dict[str, Any]]:
    """Views of many listeners with a fixed number of queries."""
    listener_ids = [r.id for r in rows]
    policies = l7_repo.policy_ids_in_order(session, listener_ids)
    tags = tags_of(session, listener_ids)
    return [listener_view(r, policies[r.id], tags[r.id]) for r in rows]
