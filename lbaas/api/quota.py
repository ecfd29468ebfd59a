"""Quota enforcement: count what a project has, compare with its effective limit."""

from __future__ import annotations

from typing import Any

from lbaas.config import QuotaSettings
from lbaas.db import queries
from lbaas.db.session import Session
from lbaas.db.tables import (
    Base,
    HealthMonitorRow,
    L7PolicyRow,
    L7RuleRow,
    ListenerRow,
    LoadBalancerRow,
    MemberRow,
    PoolRow,
    QuotaRow,
)
from lbaas.errors import QuotaExceeded

KINDS: dict[str, tuple[type[Base], str]] = {
    "loadbalancer": (LoadBalancerRow, "Load Balancer"),
    "listener": (ListenerRow, "Listener"),
    "pool": (PoolRow, "Pool"),
    "member": (MemberRow, "Member"),
    "healthmonitor": (HealthMonitorRow, "Health Monitor"),
    "l7policy": (L7PolicyRow, "L7 Policy"),
    "l7rule": (L7RuleRow, "L7 Rule"),
}


def effective_limit(session: Session, defaults: QuotaSettings, project_id: str, kind: str) -> int:
    record = session.get(QuotaRow, project_id)
    stored = getattr(record, kind) if record is not None else None
    return int(stored) if stored is not None else int(getattr(defaults, kind))


def check_quota(
    session: Session, defaults: QuotaSettings, project_id: str, kind: str, adding: int = 1
) -> None:
    """Raise QuotaExceeded (403) if adding ``adding`` objects would pass the limit."""
    queries.ensure_quota_record(session, project_id)
    if adding <= 0:
        return
    limit = effective_limit(session, defaults, project_id, kind)
    if limit < 0:
        return
    table, label = KINDS[kind]
    columns: Any = table  # every quota kind has project_id and provisioning_status
    column, status = columns.project_id, columns.provisioning_status
    in_use = queries.count_rows(session, table, column == project_id, status != "DELETED")
    if in_use + adding > limit:
        raise QuotaExceeded(label)
