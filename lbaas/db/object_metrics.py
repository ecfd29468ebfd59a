"""Every load balancer, listener, pool and member with its statuses and traffic, for
``/metrics``: read in a handful of plain statements at scrape time.

The figures are what the database already holds: statuses as the API and the health
manager wrote them, and listener counters as the health manager folded them from
heartbeats (``listener_stats``, one record per amphora and listener, pool or member; an
object's total is the sum over its amphorae, as ``stats_repo`` computes it for the API's
``/stats``). Rows
are read as tuples on a bare connection, not as ORM objects: at 10,000 members the ORM
alone would cost most of the scrape budget.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from sqlalchemy import literal, select
from sqlalchemy.engine import Connection

from lbaas.db.stats_repo import COUNTERS
from lbaas.db.tables import (
    ListenerRow,
    ListenerStatsRow,
    LoadBalancerRow,
    MemberRow,
    PoolRow,
    table_of,
)
from lbaas.model.enums import ProvisioningStatus

#: The API's ``/stats`` counters (Octavia's five) and the request count, which only
#: ``/metrics`` and the dashboard show: Octavia's stats body has no such field.
#: The VIP probe's gauges (``lbaas.agent.vip_probe``) ride along, only ever current.
METRIC_COUNTERS = (*COUNTERS, "requests", "vip_probes", "vip_answered", "check_failures")
GAUGES = frozenset(("active_connections", "vip_probes", "vip_answered"))


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
    return [ObjectStatus._make(row) for row in conn.execute(query)]


def as_dict(value: Any) -> Mapping[str, Any]:
    # JSON columns come back parsed from PostgreSQL and SQLAlchemy's SQLite dialect alike;
    # a text value is parsed here so a raw driver row works too.
    parsed: Mapping[str, Any] = json.loads(value) if isinstance(value, str) else value
    return parsed


def _counter_rows(
    conn: Connection, loadbalancer_ids: Any, listeners_only: bool
) -> Iterator[tuple[str, Mapping[str, Any], Mapping[str, Any]]]:
    c = table_of(ListenerStatsRow).c
    query = select(c.listener_id, c.base, c.last)
    if loadbalancer_ids is not None:
        query = query.where(c.loadbalancer_id.in_(loadbalancer_ids))
    if listeners_only:
        query = query.where(c.listener_id.in_(select(table_of(ListenerRow).c.id)))
    for listener_id, base, last in conn.execute(query):
        yield str(listener_id), as_dict(base), as_dict(last)


def listener_counters(
    conn: Connection, loadbalancer_ids: Any = None, *, listeners_only: bool = True
) -> dict[str, dict[str, int]]:
    """Per listener (and per pool and member unless ``listeners_only``): its counters
    summed over amphorae; of every load balancer, or of those ``loadbalancer_ids`` (a
    select of ids) names."""
    totals: dict[str, dict[str, int]] = {}
    for listener_id, base, last in _counter_rows(conn, loadbalancer_ids, listeners_only):
        into = totals.setdefault(listener_id, dict.fromkeys(METRIC_COUNTERS, 0))
        for name in METRIC_COUNTERS:
            # A gauge: only the current value counts, as in stats_repo.
            carried = 0 if name in GAUGES else int(base.get(name, 0))
            into[name] += carried + int(last.get(name, 0))
    return totals


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
