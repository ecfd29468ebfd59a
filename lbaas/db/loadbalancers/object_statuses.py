"""Every load balancer, listener, pool and member with its statuses and traffic, for
``/metrics``: read in a handful of plain statements at scrape time.

The figures are what the database already holds: statuses as the API and the health
manager wrote them, and listener counters as the health manager folded them from
heartbeats (``listener_stats``, one record per amphora and listener, pool or member; an
object's total is the sum over its amphorae, as ``stats_repo`` computes it for the API's
``/stats``), over the records' integer totals (``counter_totals``); the counters are
summed in ``stats_repo``. Rows are read as tuples on a bare connection, not as ORM
objects: at 10,000 members the ORM alone would cost most of the scrape budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from sqlalchemy import literal, select
from sqlalchemy.engine import Connection

from lbaas.db.health.stats_repo import listener_counters
from lbaas.db.tables import ListenerRow, LoadBalancerRow, MemberRow, PoolRow, table_of
from lbaas.model.enums import ProvisioningStatus


class ObjectStatus(NamedTuple):
    """One object: its id, the id of its parent (empty for a load balancer), its project
    and its two statuses. A tuple, made straight from the row: there are 10,000s."""

    id: str
    parent_id: str
    project_id: str
    provisioning_status: str
    operating_status: str


@dataclass(frozen=True)
class ObjectFigures:
    loadbalancers: list[ObjectStatus]
    listeners: list[ObjectStatus]
    pools: list[ObjectStatus]
    members: list[ObjectStatus]
    listener_counters: dict[str, dict[str, int]]
    """Per object id (listener, pool or member: their records share ``listener_stats``,
    keyed by the object's id): ``METRIC_COUNTERS`` summed over its amphorae."""


def _statuses(conn: Connection, table: Any, parent: Any) -> list[ObjectStatus]:
    c = table.c
    query = select(c.id, parent, c.project_id, c.provisioning_status, c.operating_status)
    query = query.where(c.provisioning_status != ProvisioningStatus.DELETED.value)
    return [ObjectStatus._make(row) for row in conn.execute(query).fetchall()]


def object_figures(conn: Connection, *, with_counters: bool = True) -> ObjectFigures:
    """Every live object's statuses and (unless not ``with_counters``) counters."""
    lbs = table_of(LoadBalancerRow)
    listeners = table_of(ListenerRow)
    pools = table_of(PoolRow)
    members = table_of(MemberRow)
    return ObjectFigures(
        loadbalancers=_statuses(conn, lbs, literal("").label("parent")),
        listeners=_statuses(conn, listeners, listeners.c.loadbalancer_id),
        pools=_statuses(conn, pools, pools.c.loadbalancer_id),
        members=_statuses(conn, members, members.c.pool_id),
        listener_counters=listener_counters(conn, listeners_only=False) if with_counters else {},
    )
