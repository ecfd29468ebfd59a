"""Listener counters never go backwards across reloads, restarts and failovers."""

from __future__ import annotations

from lbaas.health.counters import (
    ZERO,
    CounterRecord,
    fold,
    fold_report,
    listener_stats,
    retire,
    sum_counters,
    total,
)
from lbaas.model.graph import ListenerId
from lbaas.model.health import ListenerCounters

from .builders import counters

EPOCH_1 = 1_700_000_000_000_000_000
EPOCH_2 = EPOCH_1 + 60_000_000_000


def fold_all(epoch_and_reports: list[tuple[int, ListenerCounters]]) -> CounterRecord:
    record: CounterRecord | None = None
    for epoch, reported in epoch_and_reports:
        record = fold(record, epoch, reported)
    assert record is not None
    return record


def test_first_report_is_taken_as_it_is() -> None:
    record = fold(None, EPOCH_1, counters(100, 200, 3, 10, 1))
    assert record == CounterRecord(epoch=EPOCH_1, base=ZERO, last=counters(100, 200, 3, 10, 1))
    assert total(record) == counters(100, 200, 3, 10, 1)


def test_growing_counters_of_one_process_replace_each_other() -> None:
    record = fold_all(
        [
            (EPOCH_1, counters(100, 200, 3, 10, 1)),
            (EPOCH_1, counters(150, 260, 1, 12, 1)),
            (EPOCH_1, counters(150, 260, 0, 12, 1)),
        ]
    )
    assert record.base == ZERO
    assert total(record) == counters(150, 260, 0, 12, 1)


def test_haproxy_reload_keeps_what_the_old_process_counted() -> None:
    # Same agent (same epoch), but HAProxy reloaded: its counters start again from zero.
    record = fold_all(
        [
            (EPOCH_1, counters(1000, 2000, 5, 40, 2)),
            (EPOCH_1, counters(10, 20, 4, 1, 0)),
            (EPOCH_1, counters(30, 50, 6, 3, 0)),
        ]
    )
    assert record.base == counters(1000, 2000, 0, 40, 2)
    assert total(record) == counters(1030, 2050, 6, 43, 2)


def test_a_single_cumulative_counter_going_down_is_a_reload() -> None:
    for dropped in (
        counters(500, 900, 0, 10, 2),  # bytes_in
        counters(600, 800, 0, 10, 2),  # bytes_out
        counters(600, 900, 0, 9, 2),  # total_connections
        counters(600, 900, 0, 10, 1),  # request_errors
    ):
        record = fold_all([(EPOCH_1, counters(600, 900, 7, 10, 2)), (EPOCH_1, dropped)])
        assert record.base == counters(600, 900, 0, 10, 2), dropped


def test_active_connections_going_down_is_not_a_reload() -> None:
    record = fold_all(
        [(EPOCH_1, counters(10, 10, 50, 60, 0)), (EPOCH_1, counters(10, 10, 2, 60, 0))]
    )
    assert record.base == ZERO
    assert total(record).active_connections == 2


def test_agent_restart_starts_a_new_epoch_even_if_counters_happen_to_be_higher() -> None:
    record = fold_all(
        [(EPOCH_1, counters(100, 100, 1, 5, 0)), (EPOCH_2, counters(300, 300, 2, 9, 0))]
    )
    assert record.epoch == EPOCH_2
    assert total(record) == counters(400, 400, 2, 14, 0)


def test_reload_then_restart_then_reload_loses_nothing() -> None:
    record = fold_all(
        [
            (EPOCH_1, counters(100, 1, 0, 10, 1)),
            (EPOCH_1, counters(5, 1, 0, 1, 0)),  # reload: 100 kept
            (EPOCH_1, counters(20, 2, 0, 2, 0)),
            (EPOCH_2, counters(7, 1, 0, 1, 0)),  # agent restart: 20 kept
            (EPOCH_2, counters(3, 1, 1, 1, 0)),  # reload: 7 kept
        ]
    )
    assert total(record) == counters(130, 5, 1, 14, 1)


def test_report_from_an_older_epoch_arriving_late_is_ignored() -> None:
    current = fold_all(
        [(EPOCH_1, counters(100, 100, 1, 5, 0)), (EPOCH_2, counters(10, 10, 1, 1, 0))]
    )
    assert fold(current, EPOCH_1, counters(120, 120, 9, 6, 0)) is current
    assert total(current) == counters(110, 110, 1, 6, 0)


def test_folding_the_same_report_twice_changes_nothing() -> None:
    once = fold_all([(EPOCH_1, counters(1, 2, 3, 4, 5)), (EPOCH_1, counters(10, 20, 3, 40, 5))])
    assert fold(once, EPOCH_1, counters(10, 20, 3, 40, 5)) == once


def test_fold_report_touches_only_reported_listeners() -> None:
    a, b, c = ListenerId("a"), ListenerId("b"), ListenerId("c")
    current = {a: fold(None, EPOCH_1, counters(10)), b: fold(None, EPOCH_1, counters(20))}
    updated = fold_report(current, EPOCH_1, {b: counters(25), c: counters(1)})
    assert set(updated) == {b, c}
    assert total(updated[b]) == counters(25)
    assert total(updated[c]) == counters(1)


def test_failover_keeps_the_old_amphoras_counts_but_not_its_connections() -> None:
    old = fold(None, EPOCH_1, counters(1000, 500, 8, 70, 3))
    retired = retire(old)
    assert total(retired) == counters(1000, 500, 0, 70, 3)
    new = fold(None, EPOCH_2, counters(10, 5, 2, 1, 0))
    assert listener_stats([retired, new]) == counters(1010, 505, 2, 71, 3)


def test_listener_stats_sum_over_amphorae_and_lb_stats_over_listeners() -> None:
    master = fold_all([(EPOCH_1, counters(100, 10, 4, 9, 1)), (EPOCH_1, counters(5, 1, 3, 1, 0))])
    backup = fold(None, EPOCH_2, counters(2, 2, 0, 2, 0))
    first = listener_stats([master, backup])
    assert first == counters(107, 13, 3, 12, 1)
    second = listener_stats([fold(None, EPOCH_1, counters(1, 1, 1, 1, 1))])
    assert sum_counters([first, second]) == counters(108, 14, 4, 13, 2)
    assert sum_counters([]) == ZERO
