"""Quota enforcement: count what a project has, compare with its effective limit."""

from __future__ import annotations

from typing import Any

from lbaas.config import QuotaSettings
from lbaas.db import table_rows
from lbaas.db.quotas import quota_repo
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
from lbaas.model.enums import ProvisioningStatus

KINDS: dict[str, tuple[type[Base], str]] = {
    "loadbalancer": (LoadBalancerRow, "Load Balancer"),
    "listener": (ListenerRow, "Listener"),
    "pool": (PoolRow, "Pool"),
    "member": (MemberRow, "Member"),
    "healthmonitor": (HealthMonitorRow, "Health Monitor"),
    "l7policy": (L7PolicyRow, "L7 Policy"),
    "l7rule": (L7RuleRow, "L7 Rule"),
}


def effective_limit(record: QuotaRow, defaults: QuotaSettings, kind: str) -> int:
    stored = getattr(record, kind)
    return int(stored) if stored is not None else int(getattr(defaults, kind))


def check_quota(
    session: Session, defaults: QuotaSettings, project_id: str, kind: str, adding: int = 1
) -> None:
    """Raise QuotaExceeded (403) if adding ``adding`` objects would pass the limit."""
    record = quota_repo.lock_quota_record(session, project_id)
    if adding <= 0:
        return
    limit = effective_limit(record, defaults, kind)
    if limit < 0:
        return
    table, label = KINDS[kind]
    columns: Any = table  # every quota kind has project_id and provisioning_status
    column, status = columns.project_id, columns.provisioning_status
    in_use = table_rows.count_rows(
        session, table, column == project_id, status != ProvisioningStatus.DELETED.value
    )
    if in_use + adding > limit:
        raise QuotaExceeded(label)
