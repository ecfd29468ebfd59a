"""The counter ledger outlives the agent: a new life reports only what it newly counted."""

from __future__ import annotations

import stat
from pathlib import Path

from lbaas.amphora.ledger_store import LEDGER_FILE
from lbaas.amphora.stats import StatsCollector, WorkerLedger
from lbaas.model.graph import ListenerId, LoadBalancerId
from lbaas.model.health import ListenerCounters

L1 = ListenerId("l1")
LB = LoadBalancerId("lb")


def _rows(stot: int, bytes_in: int = 0) -> list[dict[str, str]]:
    frontend = {"pxname": "fe_l1", "svname": "FRONTEND", "status": "OPEN", "scur": "0"}
    frontend.update({"slim": "100", "stot": str(stot), "bin": str(bytes_in)})
    frontend.update({"bout": "0", "ereq": "0"})
    return [frontend]


def _connections(collector: StatsCollector, pid: int, stot: int, **old: int) -> int:
    old_rows = {int(p): _rows(n) for p, n in old.items()}
    report = collector.report(pid, _rows(stot, bytes_in=10 * stot), old_rows)
    return report.listeners[L1].counters.total_connections


def test_a_resumed_ledger_reports_only_what_its_workers_count_from_now_on() -> None:
    counted = {L1: ListenerCounters(total_connections=50, bytes_in=500)}
    carried = {L1: ListenerCounters(total_connections=30, bytes_in=300)}
    ledger = WorkerLedger.resumed(carried, {7: counted})
    assert ledger.totals()[L1] == ListenerCounters()
    ledger.observe(7, {L1: ListenerCounters(total_connections=52, bytes_in=520)})
    assert ledger.totals()[L1] == ListenerCounters(total_connections=2, bytes_in=20)
    ledger.retire_absent({8})  # worker 7 exited; what it counted stays counted once
    assert ledger.totals()[L1] == ListenerCounters(total_connections=2, bytes_in=20)


def test_a_new_collector_on_the_same_file_counts_nothing_twice(tmp_path: Path) -> None:
    store = tmp_path / LEDGER_FILE
    first = StatsCollector(LB, store=store)
    assert _connections(first, 100, 20, **{"90": 30}) == 50  # a reload happened before
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    second = StatsCollector(LB, store=store)  # the agent restarted; HAProxy did not
    assert _connections(second, 100, 20) == 0  # worker 90 exited meanwhile
    assert _connections(second, 100, 25) == 5
    third = StatsCollector(LB, store=store)  # and again, after that report
    assert _connections(third, 100, 25) == 0
    assert _connections(third, 100, 26) == 1


def test_a_ledger_of_another_load_balancer_or_unreadable_starts_afresh(tmp_path: Path) -> None:
    store = tmp_path / LEDGER_FILE
    assert _connections(StatsCollector(LB, store=store), 100, 20) == 20
    assert _connections(StatsCollector(LoadBalancerId("other"), store=store), 100, 20) == 20
    store.write_text("{not json")
    assert _connections(StatsCollector(LB, store=store), 100, 20) == 20


def test_an_unchanged_ledger_is_not_rewritten(tmp_path: Path) -> None:
    store = tmp_path / LEDGER_FILE
    collector = StatsCollector(LB, store=store)
    _connections(collector, 100, 3)
    store.unlink()
    _connections(collector, 100, 3)  # no traffic: nothing to write
    assert not store.exists()
    _connections(collector, 100, 4)
    assert store.exists()
