"""Listener statistics as stored by the health manager, summed for the API."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from lbaas.db.tables import ListenerStatsRow

COUNTERS = ("bytes_in", "bytes_out", "active_connections", "total_connections", "request_errors")


def listener_totals(session: Session, listener_ids: Sequence[str]) -> dict[str, dict[str, int]]:
    """Per listener: cumulative counters summed over amphorae (active = current gauge)."""
    totals = {lid: dict.fromkeys(COUNTERS, 0) for lid in listener_ids}
    if not listener_ids:
        return totals
    rows = session.scalars(
        select(ListenerStatsRow).where(ListenerStatsRow.listener_id.in_(list(listener_ids)))
    )
    for row in rows:
        into = totals[row.listener_id]
        for name in COUNTERS:
            last = int(row.last.get(name, 0))
            base = 0 if name == "active_connections" else int(row.base.get(name, 0))
            into[name] += base + last
    return totals


def summed_totals(session: Session, listener_ids: Sequence[str]) -> dict[str, int]:
    """The counters of these listeners added up: a load balancer's statistics."""
    total = dict.fromkeys(COUNTERS, 0)
    for counters in listener_totals(session, listener_ids).values():
        for name, value in counters.items():
            total[name] += value
    return total
