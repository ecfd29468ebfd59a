"""What one open dashboard page has been sent, and the events that bring it up to date.

The first tick (and any tick where a table's live row count moved: a create or delete)
reads the whole scope and sends ``topology``. Other ticks compare the change cursor
(``lbaas.db.loadbalancers.scope_changes``) with the last one: unchanged, nothing is read but the
listener counters; moved, only the rows stamped since are read, compared with what the
page holds, and the ones that differ are sent as ``changes``. A changed row the page does
not hold, or one that moved to another parent, falls back to a full read. A write that
does not stamp ``updated_at`` still shows at the stream's next reconnect (at most
``api.dashboard_stream_seconds``), which starts from a full read.
"""

from __future__ import annotations

import json
import time
from typing import Any

from lbaas.dashboard.snapshot import build_topology
from lbaas.db.engine import Database
from lbaas.db.health.stats_repo import listener_counters
from lbaas.db.loadbalancers.scope_changes import Cursor, change_cursor, changed_rows, counts_moved
from lbaas.db.loadbalancers.scope_details import details_stamp
from lbaas.db.loadbalancers.scope_rows import DashboardRows, dashboard_rows, lb_ids

KINDS = ("loadbalancers", "listeners", "pools", "members", "amphorae")
_PARENT = {"listeners": "loadbalancer_id", "pools": "loadbalancer_id", "members": "pool_id"}
_PARENT["amphorae"] = "loadbalancer_id"


def event(name: str, data: Any) -> str:
    """One SSE message; JSON never holds a raw newline, so ``data`` is one line."""
    return f"event: {name}\ndata: {json.dumps(data, default=str, sort_keys=True)}\n\n"


class TopologyTracker:
    """One page's view of ``project`` (``None``: every project)."""

    def __init__(self, database: Database, project: str | None) -> None:
        self._database = database
        self._project = project
        self._cursor: Cursor | None = None
        self._objects: dict[str, dict[str, dict[str, Any]]] = {kind: {} for kind in KINDS}
        self._errors: dict[str, str] = {}
        self._details_stamp: tuple[Any, ...] = ()
        self._details: Any = None

    def tick(self) -> list[str]:
        """The SSE messages of this tick: ``topology`` or ``changes`` when something moved,
        and ``traffic`` (listener counters, server clock) always."""
        messages: list[str] = []
        with self._database.read_connection() as conn:
            cursor = change_cursor(conn, self._project)
            before = self._cursor
            # A health monitor, L7 policy or rule, or a host's state moved: shown whole.
            stamp = details_stamp(conn, self._project)
            details_moved, self._details_stamp = stamp != self._details_stamp, stamp
            if before is None or details_moved or counts_moved(before, cursor):
                messages += self._full(dashboard_rows(conn, self._project))
            elif before != cursor:
                rows, errors = changed_rows(conn, self._project, before, cursor)
                patch = self._patch(rows, errors)
                if patch is None:
                    messages += self._full(dashboard_rows(conn, self._project))
                elif patch:
                    messages.append(event("changes", patch))
            self._cursor = cursor
            counters = listener_counters(conn, lb_ids(self._project))
        messages.append(event("traffic", {"at": time.time(), "listeners": counters}))
        return messages

    def _full(self, rows: DashboardRows) -> list[str]:
        objects = {kind: {row["id"]: row for row in getattr(rows, kind)} for kind in KINDS}
        same = objects == self._objects and rows.errors == self._errors
        if same and rows.details == self._details and self._cursor is not None:
            return []
        self._objects, self._errors, self._details = objects, dict(rows.errors), rows.details
        return [event("topology", build_topology(rows))]

    def _patch(self, rows: DashboardRows, errors: dict[str, str | None]) -> dict[str, Any] | None:
        """What differs from the page, by kind; ``None`` when only a full read will do."""
        patch: dict[str, Any] = {}
        for kind in KINDS:
            held = self._objects[kind]
            for row in getattr(rows, kind):
                old = held.get(row["id"])
                parent = _PARENT.get(kind)
                if old is None or (parent and old[parent] != row[parent]):
                    return None
                if old != row:
                    held[row["id"]] = row
                    patch.setdefault(kind, []).append(row)
        for lb, error in errors.items():
            if lb not in self._objects["loadbalancers"]:
                return None
            if self._errors.get(lb) != error:
                if error is None:
                    del self._errors[lb]
                else:
                    self._errors[lb] = error
                patch.setdefault("errors", {})[lb] = error
        return patch
