"""The per-object part of ``/metrics``, kept between scrapes so a scrape redoes only what
moved. It writes exactly what ``object_text(object_figures(...))`` writes (the tests
compare the two); that pair stays the plain statement of the exposition.

Measured (``bench/operations.py``): at 1000 load balancers and 10,000 members a scrape
has over 100,000 samples, and reading every status and counter record, parsing each
record's JSON and formatting every line again cost well over the 200 ms target. Between
two scrapes little moves:

* statuses: the dashboard's change cursor (``lbaas.db.loadbalancers.scope_changes``: per table the
  live row count and newest ``updated_at``) is read; unchanged, the status families and
  each object's label text are reused. Any change re-reads the statuses whole (a write
  that forgot to stamp ``updated_at`` still shows within ``STATUS_REFRESH_SECONDS``).
* counters: each object's records are read and summed every scrape, as integer
  columns (``lbaas.db.counter_totals``: no JSON is parsed); an object whose sums
  are those of the last scrape keeps its figures and formatted lines, so only objects
  whose traffic moved are formatted again (an idle member's heartbeat repeats the same
  numbers). When neither statuses nor any sum moved, the last scrape's text is the
  answer.

Memory is bounded by the objects that exist: every cache is rebuilt from this scrape's
rows, so deleted objects fall out.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from lbaas.db.engine import Database
from lbaas.db.health.stats_repo import METRIC_COUNTERS, counter_records, summed_records
from lbaas.db.loadbalancers.object_statuses import ObjectFigures, ObjectStatus
from lbaas.db.loadbalancers.object_statuses import object_figures as read_figures
from lbaas.db.loadbalancers.scope_changes import Cursor, change_cursor
from lbaas.db.session import Connection
from lbaas.metrics.object_text import (
    BACKEND_TRAFFIC,
    TRAFFIC,
    Projects,
    family_header,
    pools_balancer,
    status_families,
)

#: Seconds after which the statuses are re-read even if the change cursor did not move.
STATUS_REFRESH_SECONDS = 60.0
_ENTITY_KINDS = ("loadbalancers", "listeners", "pools", "members")
_RECORDS = counter_records(listeners_only=False)
_ZERO = dict.fromkeys(METRIC_COUNTERS, 0)

Totals = dict[str, int]
RawKey = tuple[int, ...]
# Tuples, not lists, of strings and ints throughout the caches: the collector untracks a
# tuple (and a dict) holding only such values, so the cache does not make Python's
# full collections longer (each was ~0.1 s at 10,000 members) or more frequent.
Lines = tuple[str, ...]


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
        ):
            self.labels[kind] = {
                o.id: f'{kind}_id="{o.id}",{parent}="{o.parent_id}",project_id="{projects[o.project_id]}"'
                for o in objects
            }
        balancer_of = pools_balancer(figures)  # a member's load balancer: its pool's
        self.labels["member"] = {
            o.id: f'member_id="{o.id}",pool_id="{o.parent_id}",'
            f'loadbalancer_id="{balancer_of.get(o.parent_id, "")}",project_id="{projects[o.project_id]}"'
            for o in figures.members
        }
        self.lb_labels = {
            lb.id: f'loadbalancer_id="{lb.id}",project_id="{projects[lb.project_id]}"'
            for lb in figures.loadbalancers
        }


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
        # Per object: its sums, labels, lines and each line's text before the number.
        self._lines: dict[str, tuple[Totals, str, Lines, tuple[tuple[str, str], ...]]] = {}
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
        """Per object id: its records' totals summed; an object whose sums
        are those of the last scrape keeps its dict (and so its formatted lines)."""
        records: dict[str, tuple[RawKey, Totals]] = {}
        totals: dict[str, Totals] = {}
        moved = False
        kept_records = self._records
        for object_id, sums in summed_records(conn, _RECORDS).items():
            kept = kept_records.get(object_id)
            if kept is not None and kept[0] == sums:
                summed = kept[1]
            else:
                summed, moved = dict(zip(METRIC_COUNTERS, sums, strict=True)), True
            records[object_id] = (sums, summed)
            totals[object_id] = summed
        self._records = records
        self._moved = moved or len(records) != len(kept_records)
        return totals

    def _object_lines(
        self, object_id: str, summed: Totals, labels: str, pairs: list[tuple[str, str]]
    ) -> Lines:
        """The object's line in each of its kind's traffic families; ``pairs`` are the
        families' (sample name, counter)."""
        kept = self._lines.get(object_id)
        if kept is not None and kept[1] == labels:
            if kept[0] is summed:
                return kept[2]
            prefixes = kept[3]  # only the numbers moved: the text before them is kept
        else:
            prefixes = tuple((f"{name}{{{labels}}} ", field) for name, field in pairs)
        lines = tuple(f"{prefix}{summed[field]}\n" for prefix, field in prefixes)
        self._lines[object_id] = (summed, labels, lines, prefixes)
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
