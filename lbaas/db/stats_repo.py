"""Listener statistics as stored by the health manager, summed for the API.

Each record's contribution is already an integer column (``counter_totals``), so the sums
are taken in SQL: no record's JSON is read here.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from lbaas.db.counter_totals import STATS_COUNTERS
from lbaas.db.tables import ListenerStatsRow


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
