"""Pieces every view shares: timestamps, names, project ids, ``[{"id"}]`` lists."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any


def timestamp(value: datetime | None) -> str | None:
    """Octavia's format: ISO-8601 in UTC without a zone suffix."""
    return None if value is None else value.isoformat(timespec="seconds")


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
