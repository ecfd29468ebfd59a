"""What the web dashboard shows, read for one caller's scope in a few Core selects.

A scope is a project id (the caller's own objects) or ``None`` (every project: an admin
or a global observer), the same rule the load balancer list applies. Children carry their
own ``project_id`` column, so every table is filtered directly; amphorae, converge jobs
and listener counters have none and are filtered through the scoped load balancer ids.
Rows come back as plain dicts keyed by column name, ready for JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from lbaas.db.health.stats_repo import listener_counters
from lbaas.db.loadbalancers.scope_details import DashboardDetails, dashboard_details
from lbaas.db.tables import (
    AmphoraRow,
    ConvergeJobRow,
    ListenerRow,
    LoadBalancerRow,
    MemberRow,
    PoolRow,
    table_of,
)
from lbaas.model.enums import ProvisioningStatus

_STATUS: tuple[str, ...] = ("provisioning_status", "operating_status")
_LB_COLUMNS: tuple[str, ...] = (
    "id",
    "name",
    "project_id",
    "vip_address",
    "provider",
    "admin_state_up",
    *_STATUS,
)
_LISTENER_COLUMNS: tuple[str, ...] = ("id", "loadbalancer_id", "name", "protocol", "protocol_port")
_LISTENER_COLUMNS += ("default_pool_id", "admin_state_up", *_STATUS)
_POOL_COLUMNS: tuple[str, ...] = (
    "id",
    "loadbalancer_id",
    "name",
    "protocol",
    "lb_algorithm",
    *_STATUS,
)
_MEMBER_COLUMNS: tuple[str, ...] = (
    "id",
    "pool_id",
    "name",
    "address",
    "protocol_port",
    "weight",
    "backup",
)
_MEMBER_COLUMNS += ("admin_state_up", *_STATUS)
AMPHORA_COLUMNS: tuple[str, ...] = (
    "id",
    "loadbalancer_id",
    "status",
    "role",
    "host",
    "compute_id",
)
AMPHORA_COLUMNS += ("lb_network_ip",)


@dataclass(frozen=True)
class DashboardRows:
    loadbalancers: list[dict[str, Any]]
    listeners: list[dict[str, Any]]
    pools: list[dict[str, Any]]
    members: list[dict[str, Any]]
    amphorae: list[dict[str, Any]]
    errors: dict[str, str]
    """Per load balancer id: its converge job's last error, where it has one."""
    counters: dict[str, dict[str, int]]
    """Per listener id: ``stats_repo.METRIC_COUNTERS`` summed over its amphorae."""
    details: DashboardDetails = field(default_factory=DashboardDetails)
    """Health monitors, L7 policies and rules, hosts' states (a full read only)."""


ENTITY_COLUMNS: dict[str, tuple[Any, tuple[str, ...]]] = {
    "loadbalancers": (LoadBalancerRow, _LB_COLUMNS),
    "listeners": (ListenerRow, _LISTENER_COLUMNS),
    "pools": (PoolRow, _POOL_COLUMNS),
    "members": (MemberRow, _MEMBER_COLUMNS),
}
"""The tables with their own ``project_id``, by the dashboard's name of the kind."""


def live_query(mapped: Any, columns: Any, project: str | None) -> Any:
    """``columns`` of ``mapped``'s rows that are not DELETED, in ``project`` (``None``: all)."""
    table = table_of(mapped)
    query = select(*columns).where(table.c.provisioning_status != ProvisioningStatus.DELETED.value)
    return query if project is None else query.where(table.c.project_id == project)


def _live(conn: Connection, kind: str, project: str | None) -> Any:
    mapped, names = ENTITY_COLUMNS[kind]
    table = table_of(mapped)
    query = live_query(mapped, [table.c[name] for name in names], project)
    return [dict(row._mapping) for row in conn.execute(query.order_by(table.c.created_at))]


def lb_ids(project: str | None) -> Any:
    lbs = table_of(LoadBalancerRow)
    query = select(lbs.c.id).where(lbs.c.provisioning_status != ProvisioningStatus.DELETED.value)
    return query if project is None else query.where(lbs.c.project_id == project)


def dashboard_rows(conn: Connection, project: str | None) -> DashboardRows:
    """Everything the dashboard shows for ``project`` (``None``: every project)."""
    amps = table_of(AmphoraRow)
    amp_query = select(*(amps.c[name] for name in AMPHORA_COLUMNS)).where(
        amps.c.loadbalancer_id.in_(lb_ids(project))
    )
    jobs = table_of(ConvergeJobRow).c
    job_query = select(jobs.loadbalancer_id, jobs.last_error).where(
        jobs.loadbalancer_id.in_(lb_ids(project)), jobs.last_error.is_not(None)
    )
    return DashboardRows(
        loadbalancers=_live(conn, "loadbalancers", project),
        listeners=_live(conn, "listeners", project),
        pools=_live(conn, "pools", project),
        members=_live(conn, "members", project),
        amphorae=[dict(row._mapping) for row in conn.execute(amp_query.order_by(amps.c.id))],
        errors={str(lb): str(error) for lb, error in conn.execute(job_query)},
        counters=listener_counters(conn, lb_ids(project)),
        details=dashboard_details(conn, project, lb_ids(project)),
    )
