"""Several health managers over the same heartbeats: do their flushes wait on each other?

Every agent sends each heartbeat to every health manager (``agent.health_managers``), so
each manager writes the liveness, stamps and counters of the same amphorae. This builds
``--loadbalancers`` load balancers with one amphora each on PostgreSQL (as
``bench/health_manager.py`` does), then starts ``--managers`` processes, each a health
manager's SQL store, heartbeat processor and flusher thread (every 0.25 s, as the service
runs it), and feeds every one of them the same heartbeats, round after round: each round
is one heartbeat of every amphora with the same (epoch, sequence) at every manager, the
managers starting each round together (as a datagram reaches them all at once), a round
ending with its manager's last flush. The first round (cold caches) is left out of the
figures. Printed as JSON: heartbeats per second (per manager and all managers together),
the time of every flush, the statements' time from ``pg_stat_statements`` (the amphora
row locks, the liveness and stamp updates, the counter locks and upserts), the machine's
load, and checks that every amphora's stamp and every listener's bytes reached the
database. Nothing here asserts on time.

By default PostgreSQL is a throw-away cluster of the bench's own (``bench/scale_pg.py``,
which preloads ``pg_stat_statements``); ``--admin-url`` uses an existing server instead
(statement times then only if it preloads the library).

    python bench/health_contention.py [--managers 3] [--loadbalancers 1000] [--rounds 10]
        [--admin-url URL] [--quick]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from health_manager import Fleet, build_fleet, fleet_checks, plane_settings, report  # noqa: E402
from scale_pg import (  # noqa: E402
    Db,
    database,
    reset_statements,
    server_for,
    slowest_statements,
)
from sqlalchemy import func, select  # noqa: E402

from lbaas.compose import build_control_plane  # noqa: E402
from lbaas.db.engine import Database  # noqa: E402
from lbaas.db.tables import AmphoraRow  # noqa: E402
from lbaas.health.flusher import DEFAULT_INTERVAL  # noqa: E402
from lbaas.health.processor import HeartbeatOutcome, HeartbeatProcessor  # noqa: E402
from lbaas.health.sql_store import SqlHealthStore  # noqa: E402
from lbaas.model.graph import AmphoraId  # noqa: E402

EPOCH = 1
# The flush's statements as pg_stat_statements keeps them (an IN list of another length
# is another entry: they are summed).
STATEMENTS = {
    "lock_amphorae": "SELECT amphorae.id, amphorae.loadbalancer_id, amphorae.heartbeat_epoch%",
    "record_heartbeats": "UPDATE amphorae SET last_heartbeat_at%",
    "record_stamps": "UPDATE amphorae SET heartbeat_epoch%",
    "lock_counters": "SELECT listener_stats.amphora_id%FOR UPDATE%",
    "put_counters": "INSERT INTO listener_stats%",
}


class TimedFlushes:
    """The service's ``Flusher`` loop, timing every ``store.flush()`` (its own and ours)."""

    def __init__(self, store: SqlHealthStore) -> None:
        self._store = store
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.durations: list[float] = []
        self._thread = threading.Thread(target=self._run, name="timed-flusher", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def forget(self) -> None:
        with self._lock:
            self.durations = []

    def flush(self) -> None:
        start = time.perf_counter()
        self._store.flush()
        with self._lock:
            self.durations.append(time.perf_counter() - start)

    def _run(self) -> None:
        while not self._stop.wait(DEFAULT_INTERVAL):
            self.flush()


def _manager(url: str, fleet: Fleet, rounds: int, barriers: Any, results: Any) -> None:
    """One health-manager process: every round's heartbeats, then its flush."""
    cold_done, warm, each_round = barriers
    lbs, pools, amphorae = fleet
    db = Database(url, pool_size=2)
    store = SqlHealthStore(db)
    processor = HeartbeatProcessor(store)
    flushes = TimedFlushes(store)
    flushes.start()
    walls: list[float] = []
    try:
        for seq in range(1, rounds + 2):  # the cold round, then ``rounds``
            beats = [
                (AmphoraId(amphorae[lb["id"]]), report(lb, pools[lb["id"]], seq, True))
                for lb in lbs
            ]
            if seq == 2:
                cold_done.wait()
                flushes.forget()
                warm.wait()  # the parent has reset the statement counts
                cpu = time.process_time()
            else:
                each_round.wait()
            start = time.perf_counter()
            applied = sum(
                processor.process(a, EPOCH, beat, seq) is HeartbeatOutcome.APPLIED
                for a, beat in beats
            )
            flushes.flush()
            if seq > 1:
                walls.append(time.perf_counter() - start)
        flushes.stop()
        flushes.flush()  # what the last flush passed by, as the service's Flusher.stop does
        cpu = time.process_time() - cpu  # all threads: processing and flushes
        results.put(
            {"walls": walls, "flushes": flushes.durations, "applied_last": applied, "cpu": cpu}
        )
    finally:
        db.dispose()


def _statement_figures(db: Db) -> dict[str, Any] | str:
    """The flush's statements, summed per kind, and the five slowest by total time."""
    figures: dict[str, Any] = {}
    with db.connect() as conn:
        slowest = slowest_statements(conn)
        if isinstance(slowest, str):
            return slowest  # why they are unavailable
        for name, pattern in STATEMENTS.items():
            calls, total = conn.execute(
                "SELECT coalesce(sum(calls), 0)::bigint, coalesce(sum(total_exec_time), 0)::float8"
                " FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database"
                " WHERE datname = current_database()) AND query LIKE %s",
                (pattern,),
            ).fetchone() or (0, 0)
            figures[name] = {
                "calls": int(calls),
                "mean_ms": round(float(total) / calls, 2) if calls else None,
                "total_ms": round(float(total), 1),
            }
        figures["slowest_by_total"] = slowest["total"][:5]
    return figures


def _ms(values: list[float]) -> dict[str, Any]:
    ordered = sorted(values)
    if not ordered:
        return {"count": 0}
    return {
        "count": len(ordered),
        "median": round(statistics.median(ordered) * 1000, 1),
        "p90": round(ordered[int(0.9 * (len(ordered) - 1))] * 1000, 1),
        "max": round(ordered[-1] * 1000, 1),
    }


def _checks(url: str, fleet: Fleet, last_seq: int) -> dict[str, int]:
    """Every amphora's last stamp and liveness stored, every status and byte (as in
    ``bench/health_manager.py``)."""
    lbs, _, amphorae = fleet
    db = Database(url, pool_size=1)
    try:
        with db.read() as session:
            stamped, heard = session.execute(
                select(
                    func.count().filter(AmphoraRow.heartbeat_sequence == last_seq),
                    func.count().filter(AmphoraRow.last_heartbeat_at.is_not(None)),
                ).where(AmphoraRow.id.in_(list(amphorae.values())))
            ).one()
        return {
            "amphorae_with_last_stamp": int(stamped),
            "amphorae_heard": int(heard),
            **fleet_checks(db, lbs, last_seq),
        }
    finally:
        db.dispose()


def _run(db: Db, managers: int, count: int, rounds: int) -> dict[str, Any]:
    url = db.sqlalchemy_url()
    with tempfile.TemporaryDirectory() as tmp:
        plane = build_control_plane(plane_settings(tmp, url))
        plane.start()
        try:
            fleet = build_fleet(plane, count)
        finally:
            plane.stop()
    spawn = multiprocessing.get_context("spawn")
    barriers = (spawn.Barrier(managers + 1), spawn.Barrier(managers + 1), spawn.Barrier(managers))
    results = spawn.Queue()
    processes = [
        spawn.Process(target=_manager, args=(url, fleet, rounds, barriers, results))
        for _ in range(managers)
    ]
    for process in processes:
        process.start()
    barriers[0].wait(600)  # every manager has done its cold round
    with db.connect() as conn:
        reset_statements(conn)
    load_before = os.getloadavg()
    barriers[1].wait(600)
    outcomes = [results.get(timeout=1800) for _ in processes]
    load_after = os.getloadavg()
    for process in processes:
        process.join()
    # Rounds start together: a round of all managers lasts as long as its slowest one.
    round_walls = [max(o["walls"][r] for o in outcomes) for r in range(rounds)]
    per_manager = [count / wall for o in outcomes for wall in o["walls"]]
    return {
        "managers": managers,
        "loadbalancers": count,
        "rounds": rounds,
        "load_average": {"before": load_before, "after": load_after},
        "heartbeats_per_s": {
            "per_manager_median": round(statistics.median(per_manager), 1),
            "per_manager_min": round(min(per_manager), 1),
            "all_managers_median": round(managers * count / statistics.median(round_walls), 1),
        },
        "round_ms": _ms(round_walls),
        "cpu_ms_per_heartbeat": [round(o["cpu"] * 1000 / (count * rounds), 3) for o in outcomes],
        "flush_ms": _ms([d for o in outcomes for d in o["flushes"]]),
        "statements": _statement_figures(db),
        "checks": {
            "applied_last_round": [o["applied_last"] for o in outcomes],
            **_checks(url, fleet, rounds + 1),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument("--managers", type=int, default=3)
    parser.add_argument("--loadbalancers", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--admin-url", default="", help="an existing server, not an own one")
    args = parser.parse_args()
    count, rounds = (5, 2) if args.quick else (args.loadbalancers, args.rounds)
    started = time.monotonic()
    with (
        server_for(args.admin_url) as server,
        database(server, f"health_contention_{uuid.uuid4().hex[:8]}") as db,
    ):
        figures = _run(db, args.managers, count, rounds)
    figures["seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
