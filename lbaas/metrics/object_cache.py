"""The per-object part of ``/metrics``, kept between scrapes so a scrape redoes only what
moved. It writes exactly what ``object_text(object_figures(...))`` writes (the tests
compare the two); that pair stays the plain statement of the exposition.

Measured (``bench/operations.py``): at 1000 load balancers and 10,000 members a scrape
has over 100,000 samples, and reading every status and counter record, parsing each
record's JSON and formatting every line again cost well over the 200 ms target. Between
two scrapes little moves:

* statuses: the dashboard's change cursor (``lbaas.db.dashboard_changes``: per table the
  live row count and newest ``updated_at``) is read; unchanged, the status families and
  each object's label text are reused. Any change re-reads the statuses whole (a write
  that forgot to stamp ``updated_at`` still shows within ``STATUS_REFRESH_SECONDS``).
* counters: the records are read every scrape as raw JSON text (no parsing by the
  driver); an object whose records' text is the one of the last scrape keeps its summed
  figures and formatted lines, so only objects whose traffic moved are parsed and
  formatted again (an idle member's heartbeat repeats the same numbers); a record's
  ``base`` (what earlier HAProxy processes counted) is parsed once per distinct text. When neither
  statuses nor any record moved, the last scrape's text is the answer.

Memory is bounded by the objects that exist: every cache is rebuilt from this scrape's
rows, so deleted objects fall out.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import orjson
from sqlalchemy import Text, cast, select
from sqlalchemy.engine import Connection

from lbaas.db.dashboard_changes import Cursor, change_cursor
from lbaas.db.engine import Database
from lbaas.db.object_metrics import GAUGES, METRIC_COUNTERS, ObjectFigures, ObjectStatus
from lbaas.db.object_metrics import object_figures as read_figures
from lbaas.db.tables import ListenerStatsRow, table_of
from lbaas.metrics.object_text import (
    BACKEND_TRAFFIC,
    TRAFFIC,
    Projects,
    family_header,
    status_families,
)

#: Seconds after which the statuses are re-read even if the change cursor did not move.
STATUS_REFRESH_SECONDS = 60.0
_ENTITY_KINDS = ("loadbalancers", "listeners", "pools", "members")
_STATS = table_of(ListenerStatsRow).c
_ZERO = dict.fromkeys(METRIC_COUNTERS, 0)

Totals = dict[str, int]
RawKey = tuple[str, ...]


class _Statuses:
    """One read of every object's statuses, with what is derived from it once."""

    def __init__(self, figures: ObjectFigures, projects: Projects) -> None:
        self.figures = figures
        self.text = "".join(status_families(figures, projects))
        # Per object: its label text in the traffic families (id, parent, project).
        self.labels: dict[str, dict[str, str]] = {}
        for kind, parent, objects in (
            ("listener", "loadbalancer_id", figures.listeners),
            ("pool", "loadbalancer_id", figures.pools),
            ("member", "pool_id", figures.members),
        ):
            self.labels[kind] = {
                o.id: f'{kind}_id="{o.id}",{parent}="{o.parent_id}",project_id="{projects[o.project_id]}"'
                for o in objects
            }
        self.lb_labels = {
            lb.id: f'loadbalancer_id="{lb.id}",project_id="{projects[lb.project_id]}"'
            for lb in figures.loadbalancers
        }


_CUMULATIVE = frozenset(METRIC_COUNTERS) - GAUGES


def _summed(records: Sequence[tuple[str, str]], bases: dict[str, Totals]) -> Totals:
    """An object's counters over its amphorae's records, as ``listener_counters`` sums:
    every record's ``last``, plus its ``base`` for cumulative counters (not gauges).
    ``bases``: a record's ``base`` by its text, parsed once (it moves only on reloads)."""
    into = dict(_ZERO)
    for base_text, last_text in records:
        for name, value in orjson.loads(last_text).items():
            if name in into:
                into[name] += int(value)
        base = bases.get(base_text)
        if base is None:
            parsed = orjson.loads(base_text).items()
            base = bases[base_text] = {n: int(v) for n, v in parsed if n in _CUMULATIVE}
        for name, value in base.items():
            into[name] += value
    return into


def _sample_names(traffic: Iterable[tuple[str, str, str, str]], kind: str) -> list[str]:
    return [
        f"lbaas_{kind}_{name}_total" if metric == "counter" else f"lbaas_{kind}_{name}"
        for name, _, _, metric in traffic
    ]


class ObjectExposition:
    """Every load balancer, listener, pool and member in Prometheus' text format."""

    def __init__(self, database: Database, clock: Callable[[], float] = time.monotonic) -> None:
        self._database = database
        self._clock = clock
        self._lock = threading.Lock()
        self._cursor: Cursor | None = None
        self._statuses: _Statuses | None = None
        self._read_at = 0.0
        self._records: dict[str, tuple[RawKey, Totals]] = {}
        self._lines: dict[str, tuple[Totals, str, list[str]]] = {}
        self._bases: dict[str, Totals] = {}
        self._last: tuple[_Statuses, str] | None = None
        self._moved = True

    def text(self) -> str:
        with self._lock:  # one scrape at a time: they share the caches
            with self._database.read_connection() as conn:
                statuses = self._current_statuses(conn)
                totals = self._totals(conn)
            if self._last is not None and self._last[0] is statuses and not self._moved:
                return self._last[1]  # nothing moved: the text of the last scrape
            text = statuses.text + "".join(self._traffic(statuses, totals))
            self._last = (statuses, text)
            return text

    def _current_statuses(self, conn: Connection) -> _Statuses:
        cursor = change_cursor(conn, None)
        now = self._clock()
        kept = self._statuses
        if (
            kept is None
            or self._cursor is None
            or any(cursor[k] != self._cursor[k] for k in _ENTITY_KINDS)
            or now - self._read_at > STATUS_REFRESH_SECONDS
        ):
            figures = read_figures(conn, with_counters=False)
            kept = self._statuses = _Statuses(figures, Projects())
            self._read_at = now
            self._lines.clear()  # labels may have changed
        self._cursor = cursor
        return kept

    def _totals(self, conn: Connection) -> dict[str, Totals]:
        """Per object id: its summed counters, parsed again only where the text moved."""
        query = select(_STATS.listener_id, cast(_STATS.base, Text), cast(_STATS.last, Text))
        grouped: dict[str, list[tuple[str, str]]] = {}
        for object_id, base, last in conn.execute(
            query.order_by(_STATS.listener_id, _STATS.amphora_id)
        ):
            grouped.setdefault(object_id, []).append((base, last))
        records: dict[str, tuple[RawKey, Totals]] = {}
        totals: dict[str, Totals] = {}
        moved = len(grouped) != len(self._records)
        for object_id, pairs in grouped.items():
            key = tuple(text for pair in pairs for text in pair)
            kept = self._records.get(object_id)
            if kept is not None and kept[0] == key:
                summed = kept[1]
            else:
                summed, moved = _summed(pairs, self._bases), True
            records[object_id] = (key, summed)
            totals[object_id] = summed
        self._records, self._moved = records, moved
        if len(self._bases) > 2 * len(records):  # bounded: drop texts no record has now
            kept_bases = {base for pairs in grouped.values() for base, _ in pairs}
            self._bases = {t: v for t, v in self._bases.items() if t in kept_bases}
        return totals

    def _object_lines(
        self, object_id: str, summed: Totals, labels: str, pairs: list[tuple[str, str]]
    ) -> list[str]:
        """The object's line in each of its kind's traffic families; ``pairs`` are the
        families' (sample name, counter)."""
        kept = self._lines.get(object_id)
        if kept is not None and kept[0] is summed and kept[1] == labels:
            return kept[2]
        lines = [f"{name}{{{labels}}} {summed[field]}\n" for name, field in pairs]
        self._lines[object_id] = (summed, labels, lines)
        return lines

    def _traffic(self, statuses: _Statuses, totals: dict[str, Totals]) -> Iterable[str]:
        figures = statuses.figures
        listener_names = _sample_names(TRAFFIC, "listener")
        lb_names = _sample_names(TRAFFIC, "loadbalancer")
        fields = [field for _, field, _, _ in TRAFFIC]
        listener_labels = statuses.labels["listener"]
        pairs = list(zip(listener_names, fields, strict=True))
        per_lb: dict[str, list[int]] = {lb.id: [0] * len(fields) for lb in figures.loadbalancers}
        listener_lines = []
        for listener in figures.listeners:
            summed = totals.get(listener.id, _ZERO)
            listener_lines.append(
                self._object_lines(listener.id, summed, listener_labels[listener.id], pairs)
            )
            sums = per_lb.get(listener.parent_id)
            if sums is not None:
                for i, field in enumerate(fields):
                    sums[i] += summed[field]
        for i, (name, _, help_text, metric) in enumerate(TRAFFIC):
            yield family_header(f"lbaas_listener_{name}", help_text, metric)
            yield "".join(lines[i] for lines in listener_lines)
            yield family_header(f"lbaas_loadbalancer_{name}", help_text, metric)
            lb_name = lb_names[i]
            yield "".join(
                f"{lb_name}{{{statuses.lb_labels[lb.id]}}} {per_lb[lb.id][i]}\n"
                for lb in figures.loadbalancers
            )
        yield from self._backend(statuses, totals)
        yield from self._vip_probes(statuses, totals)

    def _backend(self, statuses: _Statuses, totals: dict[str, Totals]) -> Iterable[str]:
        fields = [field for _, field, _, _ in BACKEND_TRAFFIC]
        for kind, objects in (
            ("pool", statuses.figures.pools),
            ("member", statuses.figures.members),
        ):
            pairs = list(zip(_sample_names(BACKEND_TRAFFIC, kind), fields, strict=True))
            labels = statuses.labels[kind]
            counted = [
                self._object_lines(o.id, totals[o.id], labels[o.id], pairs)
                for o in objects
                if o.id in totals
            ]
            for i, (name, _, help_text, metric) in enumerate(BACKEND_TRAFFIC):
                yield family_header(f"lbaas_{kind}_{name}", help_text, metric)
                yield "".join(lines[i] for lines in counted)

    def _vip_probes(self, statuses: _Statuses, totals: dict[str, Totals]) -> Iterable[str]:
        help_text = "Whether the listener's VIP:port accepted the agents' latest TCP probe."
        yield family_header("lbaas_listener_vip_probe_up", help_text, "gauge")
        labels = statuses.labels["listener"]
        listeners: list[ObjectStatus] = statuses.figures.listeners
        for listener in listeners:
            summed: Any = totals.get(listener.id)
            if summed and summed["vip_probes"]:
                up = 1 if summed["vip_answered"] else 0
                yield f"lbaas_listener_vip_probe_up{{{labels[listener.id]}}} {up}\n"
