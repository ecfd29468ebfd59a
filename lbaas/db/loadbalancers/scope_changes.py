"""The dashboard's cheap change cursor and the read of only what moved since it.

A page's stream does not re-read its whole scope every tick: at 1000 load balancers and
10,000 members that read and its JSON cost most of the one-second budget from a change to
the page. Every write the dashboard shows stamps ``updated_at`` (the API's writes, the
status writer, the health manager's operating statuses, the amphora and converge job
repositories), so per table the pair (live row count, newest ``updated_at``) is a cursor:
unchanged pair, nothing to read; a new count (a create or delete), a full read; only a
newer stamp, a read of the rows stamped since the previous cursor, less ``OVERLAP``
seconds (a transaction may commit after a later-stamped one: re-reading a short window
and comparing with what was sent catches it).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from lbaas.db.loadbalancers.scope_rows import (
    AMPHORA_COLUMNS,
    ENTITY_COLUMNS,
    DashboardRows,
    lb_ids,
    live_query,
)
from lbaas.db.tables import AmphoraRow, ConvergeJobRow, table_of

OVERLAP_SECONDS = 2.0

Cursor = dict[str, tuple[int, Any]]
"""Per table (``ENTITY_COLUMNS``' kinds, ``amphorae``, ``jobs``): live count, newest stamp."""

_AMPS = table_of(AmphoraRow)
_JOBS = table_of(ConvergeJobRow)


def change_cursor(conn: Connection, project: str | None) -> Cursor:
    """The cursor of ``project``'s scope (``None``: every project), one small select each."""
    cursor: Cursor = {}
    for kind, (mapped, _) in ENTITY_COLUMNS.items():
        table = table_of(mapped)
        query = live_query(mapped, (func.count(), func.max(table.c.updated_at)), project)
        count, newest = conn.execute(query).one()
        cursor[kind] = (int(count), newest)
    for kind, table in (("amphorae", _AMPS), ("jobs", _JOBS)):
        query = select(func.count(), func.max(table.c.updated_at)).where(
            table.c.loadbalancer_id.in_(lb_ids(project))
        )
        count, newest = conn.execute(query).one()
        cursor[kind] = (int(count), newest)
    return cursor


def counts_moved(before: Cursor, now: Cursor) -> bool:
    return any(before.get(kind, (None,))[0] != count for kind, (count, _) in now.items())


def _since(stamp: Any) -> Any:
    if isinstance(stamp, datetime):
        return stamp - timedelta(seconds=OVERLAP_SECONDS)
    return None if stamp is None else float(stamp) - OVERLAP_SECONDS


def changed_rows(
    conn: Connection, project: str | None, before: Cursor, now: Cursor
) -> tuple[DashboardRows, dict[str, str | None]]:
    """The rows of each table whose stamp moved, stamped since ``before``'s, and the
    converge errors (``None``: cleared) of the jobs that moved."""
    found: dict[str, list[dict[str, Any]]] = {kind: [] for kind in ENTITY_COLUMNS}
    for kind, (mapped, names) in ENTITY_COLUMNS.items():
        if before[kind][1] == now[kind][1]:
            continue
        table = table_of(mapped)
        query = live_query(mapped, [table.c[name] for name in names], project)
        since = _since(before[kind][1])
        if since is not None:
            query = query.where(table.c.updated_at >= since)
        found[kind] = [dict(row._mapping) for row in conn.execute(query)]
    amphorae: list[dict[str, Any]] = []
    if before["amphorae"][1] != now["amphorae"][1]:
        query = select(*(_AMPS.c[name] for name in AMPHORA_COLUMNS))
        query = query.where(_AMPS.c.loadbalancer_id.in_(lb_ids(project)))
        since = _since(before["amphorae"][1])
        if since is not None:
            query = query.where(_AMPS.c.updated_at >= since)
        amphorae = [dict(row._mapping) for row in conn.execute(query)]
    errors: dict[str, str | None] = {}
    if before["jobs"][1] != now["jobs"][1]:
        query = select(_JOBS.c.loadbalancer_id, _JOBS.c.last_error)
        query = query.where(_JOBS.c.loadbalancer_id.in_(lb_ids(project)))
        since = _since(before["jobs"][1])
        if since is not None:
            query = query.where(_JOBS.c.updated_at >= since)
        errors = {str(lb): error for lb, error in conn.execute(query)}
    rows = DashboardRows(
        found["loadbalancers"],
        found["listeners"],
        found["pools"],
        found["members"],
        amphorae,
        {},
        {},
    )
    return rows, errors
