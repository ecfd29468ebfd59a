"""Listener statistics as stored by the health manager: summed for the API's ``/stats``
and for ``/metrics`` and the dashboard, an amphora's own records, and the VIP probes its
agent reported.

Each record's contribution is already an integer column (``counter_totals``), so the sums
are taken in SQL or over those integers: no record's JSON is read for a sum. The records
are one per amphora and listener, pool or member (their ids share ``listener_id``).
"""

from __future__ import annotations

import json
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from lbaas.db.counter_totals import STATS_COUNTERS, TOTAL_COLUMNS
from lbaas.db.tables import (
    AmphoraRow,
    ListenerRow,
    ListenerStatsRow,
    MemberRow,
    PoolRow,
    table_of,
)

#: The API's ``/stats`` counters (Octavia's five) and the request count, which only
#: ``/metrics`` and the dashboard show: Octavia's stats body has no such field.
#: The VIP probe's gauges (``lbaas.amphora.vip_probe``) ride along, only ever current.
#: Each is a record's integer column (``counter_totals``), the five first in ``COUNTERS``' order.
METRIC_COUNTERS = TOTAL_COLUMNS


def listener_totals(session: Session, listener_ids: Sequence[str]) -> dict[str, dict[str, int]]:
    """Per listener: its counters summed over amphorae (active = the current gauges)."""
    totals = {lid: dict.fromkeys(STATS_COUNTERS, 0) for lid in listener_ids}
    if not listener_ids:
        return totals
    sums = [func.sum(getattr(ListenerStatsRow, name)) for name in STATS_COUNTERS]
    rows = session.execute(
        select(ListenerStatsRow.listener_id, *sums)
        .where(ListenerStatsRow.listener_id.in_(list(listener_ids)))
        .group_by(ListenerStatsRow.listener_id)
    )
    for listener_id, *values in rows:
        totals[listener_id] = {
            name: int(value or 0) for name, value in zip(STATS_COUNTERS, values, strict=True)
        }
    return totals


def summed_totals(session: Session, listener_ids: Sequence[str]) -> dict[str, int]:
    """The counters of these listeners added up: a load balancer's statistics."""
    total = dict.fromkeys(STATS_COUNTERS, 0)
    for counters in listener_totals(session, listener_ids).values():
        for name, value in counters.items():
            total[name] += value
    return total


def amphora_counter_records(
    session: Session, amphora_id: str
) -> list[tuple[ListenerStatsRow, str | None]]:
    """The stored counters of every listener the amphora reported, by listener id, each
    with the amphora's load balancer. Whatever the amphora's status, DELETED included:
    Octavia's amphora statistics join its listener records with the amphora, nothing more."""
    rows = session.execute(
        select(ListenerStatsRow, AmphoraRow.loadbalancer_id)
        .join(AmphoraRow, AmphoraRow.id == ListenerStatsRow.amphora_id)
        .where(ListenerStatsRow.amphora_id == amphora_id)
        # Pools' and members' records share the table: only listeners' are shown.
        .where(ListenerStatsRow.listener_id.not_in(select(PoolRow.id)))
        .where(ListenerStatsRow.listener_id.not_in(select(MemberRow.id)))
        .order_by(ListenerStatsRow.listener_id)
    )
    return [(record, loadbalancer_id) for record, loadbalancer_id in rows]


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


@dataclass(frozen=True)
class ProbeFacts:
    """One amphora's agent's latest probe of a listener's VIP:port, as its last heartbeat
    carried it (``lbaas.amphora.vip_probe``)."""

    amphora_id: str
    answered: bool


def vip_probes(conn: Connection, loadbalancer_id: str) -> dict[str, list[ProbeFacts]]:
    """Per listener id: the latest VIP probe of each amphora's agent that probes it."""
    c = table_of(ListenerStatsRow).c
    query = select(c.listener_id, c.amphora_id, c.last).where(c.loadbalancer_id == loadbalancer_id)
    found: dict[str, list[ProbeFacts]] = {}
    for listener_id, amphora_id, last in conn.execute(query.order_by(c.amphora_id)):
        values = as_dict(last)
        if int(values.get("vip_probes", 0)):
            answered = bool(int(values.get("vip_answered", 0)))
            found.setdefault(str(listener_id), []).append(ProbeFacts(str(amphora_id), answered))
    return found
