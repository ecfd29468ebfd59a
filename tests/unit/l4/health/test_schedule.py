"""The checker's pure part with a fake clock: rise and fall, timing, batching, groups."""

from __future__ import annotations

import math

import pytest

from lbaas.l4.health.batch import ChangeBatcher
from lbaas.l4.health.monitor import (
    HealthChange,
    MemberState,
    MonitorSpec,
    ProbeType,
    Target,
    expected_status,
)
from lbaas.l4.health.schedule import CheckSchedule, stagger

MONITOR = MonitorSpec(ProbeType.TCP, delay=2.0, timeout=1.0, rise=2, fall=3)


def target(key: str, monitor: MonitorSpec = MONITOR) -> Target:
    return Target(key, "127.0.0.1", 80, monitor)


def test_fall_needs_consecutive_failures_and_rise_consecutive_successes() -> None:
    state = MemberState()
    assert [state.record(False, MONITOR) for _ in range(2)] == [False, False]
    assert state.record(True, MONITOR) is False  # a success resets the failure streak
    assert [state.record(False, MONITOR) for _ in range(3)] == [False, False, True]
    assert state.healthy is False
    assert state.record(True, MONITOR) is False
    assert state.record(False, MONITOR) is False  # the success streak is reset too
    assert [state.record(True, MONITOR) for _ in range(2)] == [False, True]
    assert state.healthy is True


@pytest.mark.parametrize(
    ("codes", "status", "expected"),
    [
        ("200", 200, True),
        ("200", 201, False),
        ("200,202", 202, True),
        ("200-204", 204, True),
        ("200-204", 205, False),
        ("301, 302", 302, True),
    ],  # fmt: skip
)
def test_expected_codes(codes: str, status: int, expected: bool) -> None:
    assert expected_status(codes, status) is expected


def test_probes_run_every_delay_never_twice_at_once() -> None:
    schedule = CheckSchedule(ChangeBatcher())
    schedule.set_group("lb", [target("a")], now=100.0)
    first = 100.0 + stagger("a", MONITOR.delay)
    assert schedule.due(first - 0.01) == []
    assert schedule.due(first) == [target("a")]
    assert schedule.due(first + 5) == []  # in flight
    schedule.record(target("a"), True, first + 0.5)
    assert schedule.next_wakeup() == pytest.approx(first + 2.0)
    assert schedule.due(first + 1.99) == []
    assert schedule.due(first + 2.0) == [target("a")]
    schedule.record(target("a"), True, first + 4.5)  # took longer than the delay
    assert schedule.next_wakeup() == pytest.approx(first + 4.5)


def test_stagger_spreads_first_probes_within_a_second() -> None:
    offsets = {stagger(f"m{i}", 5.0) for i in range(200)}
    assert all(0 <= o < 1.0 for o in offsets) and len(offsets) > 150
    assert all(0 <= stagger(f"m{i}", 0.2) < 0.2 for i in range(50))


def drive(schedule: CheckSchedule, results: dict[str, bool], start: float, end: float) -> float:
    """Run probes with fixed results on a fake clock, each answering at once."""
    now = start
    while now <= end:
        for due in schedule.due(now):
            schedule.record(due, results[due.key], now)
        now += 0.25
    return now


def test_state_changes_come_out_in_batches_by_time() -> None:
    schedule = CheckSchedule(ChangeBatcher(max_count=10, max_delay=1.0))
    schedule.set_group("lb", [target("a"), target("b")], now=0.0)
    drive(schedule, {"a": False, "b": True}, 0.0, 5.5)
    assert schedule.healthy("a") is False and schedule.healthy("b") is True
    # The fake clock ticks by 0.25 s; a is probed every 2 s from its first tick, and the
    # third failure in a row takes it down.
    first = math.ceil(stagger("a", 2.0) / 0.25) * 0.25
    assert schedule.take_batch(first + 4.0 + 0.99) == []  # younger than max_delay
    batch = schedule.take_batch(first + 4.0 + 1.0)
    assert batch == [HealthChange("a", False, first + 4.0)]
    assert schedule.take_batch(100.0) == []


def test_state_changes_come_out_in_batches_by_count() -> None:
    batcher = ChangeBatcher(max_count=3, max_delay=60.0)
    batcher.add(HealthChange("a", False, 1.0))
    batcher.add(HealthChange("b", False, 1.1))
    assert batcher.take(1.2) == [] and batcher.deadline() == 61.0
    batcher.add(HealthChange("a", True, 1.3))  # the latest state of a, reported once
    assert batcher.take(1.3) == []
    batcher.add(HealthChange("c", False, 1.4))
    taken = batcher.take(1.4)
    assert [(c.key, c.healthy) for c in taken] == [("b", False), ("a", True), ("c", False)]
    assert batcher.deadline() is None


def test_groups_are_replaced_alone_and_unchanged_targets_keep_their_state() -> None:
    schedule = CheckSchedule(ChangeBatcher(max_count=1))
    schedule.set_group("lb1", [target("a"), target("b")], now=0.0)
    schedule.set_group("lb2", [target("c")], now=0.0)
    drive(schedule, {"a": False, "b": True, "c": True}, 0.0, 6.0)
    assert schedule.states("lb1") == {"a": False, "b": True}
    schedule.set_group("lb1", [target("a")], now=7.0)  # b removed, a unchanged
    assert schedule.states("lb1") == {"a": False} and schedule.states("lb2") == {"c": True}
    moved = Target("a", "127.0.0.2", 80, MONITOR)  # a new address starts afresh
    schedule.set_group("lb1", [moved], now=8.0)
    assert schedule.states("lb1") == {"a": True}


def test_a_result_for_a_replaced_target_is_ignored() -> None:
    schedule = CheckSchedule(ChangeBatcher(max_count=1))
    quick = MonitorSpec(ProbeType.TCP, delay=1.0, timeout=1.0, rise=1, fall=1)
    schedule.set_group("lb", [target("a", quick)], now=0.0)
    (old,) = schedule.due(5.0)
    schedule.set_group("lb", [Target("a", "127.0.0.9", 80, quick)], now=5.1)
    schedule.record(old, False, 5.2)
    assert schedule.healthy("a") is True and schedule.take_batch(10.0) == []


def test_a_monitor_needs_sane_numbers() -> None:
    with pytest.raises(ValueError, match="rise, fall"):
        MonitorSpec(ProbeType.TCP, delay=1.0, timeout=1.0, rise=0, fall=1)
