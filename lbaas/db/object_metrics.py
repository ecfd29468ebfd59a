"""Every load balancer, listener, pool and member with its statuses and traffic, for
``/metrics``: read in a handful of plain statements at scrape time.

The figures are what the database already holds: statuses as the API and the health
manager wrote them, and listener counters as the health manager folded them from
heartbeats (``listener_stats``, one record per amphora and listener, pool or member; an
object's total is the sum over its amphorae, as ``stats_repo`` computes it for the API's
``/stats``), over the records' integer totals (``counter_totals``). Rows are read as tuples on a bare connection, not as ORM objects:
at 10,000 members the ORM alone would cost most of the scrape budget.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from sqlalchemy import Select, literal, select
from sqlalchemy.engine import Connection

from lbaas.db.counter_totals import TOTAL_COLUMNS
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
#: The VIP probe's gauges (``lbaas.amphora.vip_probe``) ride along, only ever current.
#: Each is a record's integer column (``counter_totals``), the five first in ``COUNTERS``' order.
METRIC_COUNTERS = TOTAL_COLUMNS


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


def as_dict(value: Any) -> Mapping[str, Any]:
    # JSON columns come back parsed from PostgreSQL and SQLAlchemy's SQLite dialect alike;
    # a text value is parsed here so a raw driver row works too.
    parsed: Mapping[str, Any] = json.loads(value) if isinstance(value, str) else value
    return parsed


def counter_records(loadbalancer_ids: Any = None, *, listeners_only: bool = True) -> Select[Any]:
    """(object id, ``METRIC_COUNTERS``...) of each record: its integer totals
    (``counter_totals``); of every load balancer, or of those ``loadbalancer_ids`` (a
    select of ids) names."""
    c = table_of(ListenerStatsRow).c
    query = select(c.listener_id, *(c[name] for name in METRIC_COUNTERS))
    if loadbalancer_ids is not None:
        query = query.where(c.loadbalancer_id.in_(loadbalancer_ids))
    if listeners_only:
        query = query.where(c.listener_id.in_(select(table_of(ListenerRow).c.id)))
    return query


def summed_records(conn: Connection, records: Select[Any]) -> dict[str, tuple[int, ...]]:
    """Per object id: the ``counter_records`` of its amphorae added up. Summed here, not
    by ``GROUP BY``: an object has one or two records, and SQLite's grouping (a sort)
    cost twice the plain read at 12,000 records."""
    sums: dict[str, tuple[int, ...]] = {}
    for row in conn.execute(records).fetchall():
        object_id, values = row[0], row[1:]
        had = sums.get(object_id)
        sums[object_id] = values if had is None else tuple(map(operator.add, had, values))
    return sums


def listener_counters(
    conn: Connection, loadbalancer_ids: Any = None, *, listeners_only: bool = True
) -> dict[str, dict[str, int]]:
    """Per listener (and per pool and member unless ``listeners_only``): its counters
    summed over amphorae; of every load balancer, or of those ``loadbalancer_ids`` (a
    select of ids) names."""
    records = counter_records(loadbalancer_ids, listeners_only=listeners_only)
    return {
        str(object_id): dict(zip(METRIC_COUNTERS, values, strict=True))
        for object_id, values in summed_records(conn, records).items()
    }


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
