"""The dashboard's second-level detail of one scope: each pool's health monitor, each
listener's L7 policies with their rules, and the state of the agent hosts amphorae run on.

Kept apart from ``scope_rows`` because these change rarely and are shown whole:
the page's live updates patch only load balancers, listeners, pools, members and
amphorae row by row, while a change here (``details_stamp`` moved) makes the stream send
the topology again. A host's state rides with its amphorae so that an amphora on a DOWN
host is not drawn healthy because its own row still says ALLOCATED.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import case, func, select
from sqlalchemy.engine import Connection

from lbaas.db.tables import (
    AmphoraRow,
    HealthMonitorRow,
    HostRow,
    L7PolicyRow,
    L7RuleRow,
    table_of,
)
from lbaas.model.enums import HostStatus, ProvisioningStatus

_STATUS = ("provisioning_status", "operating_status")
_MONITOR_COLUMNS: tuple[str, ...] = (
    "id",
    "pool_id",
    "name",
    "type",
    "delay",
    "timeout",
    "max_retries",
)
_MONITOR_COLUMNS += ("max_retries_down", "http_method", "url_path", "expected_codes", *_STATUS)
_POLICY_COLUMNS: tuple[str, ...] = (
    "id",
    "listener_id",
    "name",
    "action",
    "position",
    "redirect_pool_id",
)
_POLICY_COLUMNS += ("redirect_url", "redirect_prefix", "redirect_http_code", *_STATUS)
_RULE_COLUMNS = ("id", "l7policy_id", "type", "compare_type", "key", "value", "invert", *_STATUS)
_DETAIL_TABLES = (HealthMonitorRow, L7PolicyRow, L7RuleRow)


@dataclass(frozen=True)
class DashboardDetails:
    healthmonitors: list[dict[str, Any]] = field(default_factory=list)
    l7policies: list[dict[str, Any]] = field(default_factory=list)
    l7rules: list[dict[str, Any]] = field(default_factory=list)
    host_status: dict[str, str] = field(default_factory=dict)
    """Per agent host id that an amphora in scope names: the host's status (UP, DOWN)."""


def _live(conn: Connection, mapped: Any, names: tuple[str, ...], project: str | None) -> Any:
    table = table_of(mapped)
    query = select(*(table.c[n] for n in names)).where(
        table.c.provisioning_status != ProvisioningStatus.DELETED.value
    )
    if project is not None:
        query = query.where(table.c.project_id == project)
    query = query.order_by(table.c.created_at)
    return [dict(row._mapping) for row in conn.execute(query)]


def dashboard_details(conn: Connection, project: str | None, lbs: Any) -> DashboardDetails:
    """``lbs``: a select of the scope's load balancer ids (its amphorae's hosts)."""
    amps, hosts = table_of(AmphoraRow), table_of(HostRow)
    host_query = select(hosts.c.id, hosts.c.status).where(
        hosts.c.id.in_(select(amps.c.host).where(amps.c.loadbalancer_id.in_(lbs)))
    )
    return DashboardDetails(
        healthmonitors=_live(conn, HealthMonitorRow, _MONITOR_COLUMNS, project),
        l7policies=_live(conn, L7PolicyRow, _POLICY_COLUMNS, project),
        l7rules=_live(conn, L7RuleRow, _RULE_COLUMNS, project),
        host_status={str(h): str(s) for h, s in conn.execute(host_query)},
    )


def details_stamp(conn: Connection, project: str | None) -> tuple[Any, ...]:
    """What moves when a detail changes: per detail table its live rows' count and newest
    ``updated_at``, and how many hosts are not UP (hosts have no ``updated_at``; their
    heartbeat time moves every few seconds and would redraw the page each tick)."""
    stamp: list[Any] = []
    for mapped in _DETAIL_TABLES:
        table = table_of(mapped)
        query = select(func.count(), func.max(table.c.updated_at)).where(
            table.c.provisioning_status != ProvisioningStatus.DELETED.value
        )
        if project is not None:
            query = query.where(table.c.project_id == project)
        stamp.extend(conn.execute(query).one())
    hosts = table_of(HostRow)
    not_up = func.sum(case((hosts.c.status != HostStatus.UP.value, 1), else_=0))
    stamp.extend(conn.execute(select(func.count(), not_up)).one())
    return tuple(stamp)
