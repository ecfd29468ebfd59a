"""Pieces every view shares: timestamps, names, project ids, ``[{"id"}]`` lists."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

import orjson


def timestamp(value: datetime | str | None) -> str | None:
    """Octavia's format: ISO-8601 in UTC without a zone suffix, to the second.

    Listings read timestamps as their stored text (``YYYY-MM-DD HH:MM:SS[.ffffff]``).
    """
    if value is None:
        return None
    if isinstance(value, str):
        return f"{value[:10]}T{value[11:19]}"
    return value.isoformat(timespec="seconds")


def json_value(value: Any, empty: Any) -> Any:
    """A JSON column's value, whether decoded (ORM rows) or stored text (listings)."""
    if value is None:
        return empty
    if isinstance(value, str):
        return empty if value in ("[]", "{}") else orjson.loads(value)
    return value


def text(value: str | None) -> str:
    """Names and descriptions are stored null but rendered as ""."""
    return value or ""


def ids(values: Iterable[str]) -> list[dict[str, str]]:
    return [{"id": v} for v in values]


def ownership(row: Any) -> dict[str, Any]:
    return {"project_id": row.project_id, "tenant_id": row.project_id}


def lifecycle(row: Any) -> dict[str, Any]:
    return {
        "provisioning_status": row.provisioning_status,
        "operating_status": row.operating_status,
        "created_at": timestamp(row.created_at),
        "updated_at": timestamp(row.updated_at),
    }


def described_object(row: Any) -> dict[str, Any]:
    """How the view of an object with a description (load balancer, pool, L7 policy)
    begins: its id, name, description, state, ownership and lifecycle."""
    return {
        "id": row.id,
        "name": text(row.name),
        "description": text(row.description),
        "admin_state_up": row.admin_state_up,
        **ownership(row),
        **lifecycle(row),
    }


def single(
    render: Callable[[Any, list[Any]], list[dict[str, Any]]],
) -> Callable[[Any, Any], dict[str, Any]]:
    """The one-object renderer of a page renderer (same queries, one row)."""

    def render_one(session: Any, row: Any) -> dict[str, Any]:
        return render(session, [row])[0]

    return render_one
