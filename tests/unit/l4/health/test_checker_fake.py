"""The checker's event loop with a fake prober: many members at once, changes batched."""

from __future__ import annotations

import asyncio
import threading
import time

from lbaas.l4.health.base import Prober
from lbaas.l4.health.checker import HealthChecker
from lbaas.l4.health.monitor import HealthChange, MonitorSpec, ProbeType, Target

FAST = MonitorSpec(ProbeType.TCP, delay=0.1, timeout=0.5, rise=2, fall=2)


class TableProber(Prober):
    """Answers from ``up``; each probe sleeps a little to overlap with the others."""

    def __init__(self, up: dict[str, bool], hang: frozenset[str] = frozenset()) -> None:
        self.up = up
        self.hang = hang
        self.in_flight = 0
        self.most_in_flight = 0

    async def probe(self, target: Target) -> bool:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(10 if target.key in self.hang else 0.05)
            return self.up[target.key]
        finally:
            self.in_flight -= 1


class Collected:
    def __init__(self) -> None:
        self.batches: list[list[HealthChange]] = []
        self.arrived = threading.Event()

    def __call__(self, batch: list[HealthChange]) -> None:
        self.batches.append(batch)
        self.arrived.set()

    def wait_for(self, predicate: object, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if callable(predicate) and predicate():
                return
            time.sleep(0.02)
        raise AssertionError(f"not reached within {timeout}s: {self.batches}")


def test_many_members_probed_concurrently_on_one_thread() -> None:
    keys = [f"m{i}" for i in range(300)]
    prober = TableProber(dict.fromkeys(keys, True))
    sink = Collected()
    checker = HealthChecker(prober, sink, batch_count=1000, batch_delay=1.0, max_concurrent=500)
    threads_before = threading.active_count()
    checker.start()
    try:
        checker.set_targets("lb", [Target(k, "127.0.0.1", 1, FAST) for k in keys])
        sink.wait_for(lambda: checker.probes >= 900)
        assert prober.most_in_flight > 100  # overlapping probes, not one after another
        assert threading.active_count() <= threads_before + 2  # loop + sink, not one per member
        for key in keys[:40]:
            prober.up[key] = False
        sink.wait_for(lambda: sum(len(b) for b in sink.batches) >= 40)
        # 40 members went down within a few delays of each other: a few batches, not 40.
        assert len(sink.batches) <= 4
        assert {c.key for b in sink.batches for c in b} == set(keys[:40])
        assert all(not c.healthy for b in sink.batches for c in b)
        assert sum(checker.states("lb").values()) == 260
    finally:
        checker.stop()


def test_a_probe_that_hangs_fails_by_timeout_and_the_member_comes_back() -> None:
    prober = TableProber({"a": True, "b": True}, hang=frozenset({"a"}))
    sink = Collected()
    monitor = MonitorSpec(ProbeType.TCP, delay=0.1, timeout=1.0, rise=2, fall=2)
    checker = HealthChecker(prober, sink, batch_count=1, batch_delay=0.0)
    checker.start()
    try:
        checker.set_targets("lb", [Target(k, "127.0.0.1", 1, monitor) for k in "ab"])
        sink.wait_for(lambda: checker.states("lb").get("a") is False)
        prober.hang = frozenset()
        sink.wait_for(lambda: checker.states("lb").get("a") is True)
        # The state flips before its batch reaches the sink: wait for the batch too.
        sink.wait_for(lambda: ("a", True) in [(c.key, c.healthy) for b in sink.batches for c in b])
        changes = [(c.key, c.healthy) for b in sink.batches for c in b if c.key == "a"]
        assert changes == [("a", False), ("a", True)]
    finally:
        checker.stop()


def test_a_failing_consumer_does_not_stop_later_batches() -> None:
    prober = TableProber({"a": False, "b": True})
    delivered: list[str] = []

    def flaky(batch: list[HealthChange]) -> None:
        delivered.extend(c.key for c in batch)
        if len(delivered) == 1:
            raise RuntimeError("nft failed")

    checker = HealthChecker(prober, flaky, batch_count=1, batch_delay=0.0)
    checker.start()
    try:
        checker.set_targets("lb", [Target(k, "127.0.0.1", 1, FAST) for k in "ab"])
        deadline = time.monotonic() + 10
        while delivered != ["a"] and time.monotonic() < deadline:
            time.sleep(0.02)
        prober.up["b"] = False
        while delivered != ["a", "b"] and time.monotonic() < deadline:
            time.sleep(0.02)
        assert delivered == ["a", "b"]
    finally:
        checker.stop()
