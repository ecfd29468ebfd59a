"""The health monitor object as Octavia renders it.

Octavia's code answers ``pools: [{"id"}]`` rather than the api-ref's ``pool_id``; lbaas
does the same. The three HTTP fields are null for monitors that are not HTTP or HTTPS.
"""

from __future__ import annotations

from typing import Any

from lbaas.api.validation.healthmonitor import HTTP_TYPES
from lbaas.api.views.common import ids, lifecycle, ownership, text
from lbaas.db.listing import tags_of
from lbaas.db.session import Session
from lbaas.db.tables import HealthMonitorRow


def healthmonitor_view(row: HealthMonitorRow, tags: list[str]) -> dict[str, Any]:
    http = row.type in HTTP_TYPES
    return {
        "id": row.id,
        "name": text(row.name),
        "type": row.type,
        "delay": row.delay,
        "timeout": row.timeout,
        "max_retries": row.max_retries,
        "max_retries_down": row.max_retries_down,
        "http_method": row.http_method if http else None,
        "url_path": row.url_path if http else None,
        "expected_codes": row.expected_codes if http else None,
        "admin_state_up": row.admin_state_up,
        **ownership(row),
        "pools": ids([row.pool_id]),
        **lifecycle(row),
        "tags": tags,
        "http_version": row.http_version,
        "domain_name": row.domain_name,
    }


def render_healthmonitors(session: Session, rows: list[HealthMonitorRow]) -> list[dict[str, Any]]:
    """Views of many health monitors in one query (their tags)."""
    tags = tags_of(session, [r.id for r in rows])
    return [healthmonitor_view(r, tags[r.id]) for r in rows]


def render_healthmonitor(session: Session, row: HealthMonitorRow) -> dict[str, Any]:
    return render_healthmonitors(session, [row])[0]
