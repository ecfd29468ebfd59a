"""Hosts marked down by silence, stale amphorae removed, the per-load-balancer breaker."""

from __future__ import annotations

import threading
from collections.abc import Collection
from typing import Any

from lbaas.fleet.client_pool import AgentPool
from lbaas.health.fleet import HostSweeper, StaleAmphoraCleaner
from lbaas.health.lb_breaker import LoadBalancerBreaker
from lbaas.health.memory_store import InMemoryHealthStore
from lbaas.health.stale import StaleAmphoraSweeper
from lbaas.model.fleet import HostAddress, HostAnnouncement, SilentHost
from lbaas.model.graph import AmphoraId, LoadBalancerId
from tests.support.waiting import wait_until
from tests.unit.providers.amphora_fakes import RecordingAgent

H1 = HostAddress("host-1", "127.0.0.1", 9441)
H2 = HostAddress("host-2", "127.0.0.1", 9442)


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class FakeRegistry:
    def __init__(self) -> None:
        self.heard: dict[str, float] = {}
        self.down: set[str] = set()
        self.stale: dict[HostAddress, list[str]] = {}

    def record(self, seen: HostAnnouncement, epoch: int, sequence: int, at: float) -> bool:
        self.heard[seen.host_id] = at
        self.down.discard(seen.host_id)
        return True

    def silent_up(self, heard_before: float) -> list[SilentHost]:
        return [
            SilentHost(HostAddress(h, "127.0.0.1", 9440), at)
            for h, at in sorted(self.heard.items())
            if at < heard_before and h not in self.down
        ]

    def mark_silent_down(self, host_ids: Collection[str], heard_before: float) -> list[str]:
        newly = [s.host.host_id for s in self.silent_up(heard_before) if s.host.host_id in host_ids]
        self.down.update(newly)
        return newly

    def misplaced(self) -> list[tuple[HostAddress, list[str]]]:
        return [(h, ids) for h, ids in self.stale.items() if h.host_id not in self.down]


def test_a_silent_host_is_marked_down_but_not_before_a_whole_period_of_listening() -> None:
    clock, registry = Clock(), FakeRegistry()
    registry.heard = {"host-1": 900.0, "host-2": 999.0}
    sweeper = HostSweeper(registry, stale_after=3.0, clock=clock)
    assert sweeper.sweep() == []  # just started: the silence may be ours
    clock.now = 1003.5
    assert sweeper.sweep() == ["host-1", "host-2"]
    registry.heard["host-2"] = 1003.4
    registry.down.discard("host-2")
    assert sweeper.sweep() == []


def test_stale_amphorae_of_a_live_host_are_removed_through_its_agent() -> None:
    registry = FakeRegistry()
    registry.stale = {H1: ["amp-old-1", "amp-old-2"], H2: ["amp-x"]}
    registry.down = {"host-2"}
    agents = {"host-1": RecordingAgent(), "host-2": RecordingAgent()}
    legacy: Any = RecordingAgent()
    pool = AgentPool(lambda h: agents[h.host_id], legacy)  # type: ignore[arg-type,return-value]
    cleaner = StaleAmphoraCleaner(registry, pool)
    assert cleaner.clean() == [("host-1", "amp-old-1"), ("host-1", "amp-old-2")]
    assert agents["host-1"].deleted == ["amp-old-1", "amp-old-2"]
    assert agents["host-2"].deleted == []
    agents["host-1"].unreachable = True
    assert cleaner.clean() == []  # tried again on the next sweep


class History:
    def __init__(self) -> None:
        self.retired: dict[str, list[float]] = {}

    def retired_since(self, loadbalancer_id: str, since: float) -> int:
        return sum(1 for at in self.retired.get(loadbalancer_id, []) if at >= since)


def test_the_breaker_opens_after_the_limit_and_closes_when_the_window_passes() -> None:
    clock, history = Clock(), History()
    breaker = LoadBalancerBreaker(history, limit=3, window=300.0, clock=clock)
    history.retired["lb-1"] = [900.0, 950.0]
    assert breaker.allows("lb-1")
    history.retired["lb-1"].append(990.0)
    assert not breaker.allows("lb-1")
    assert breaker.allows("lb-2")  # per load balancer
    clock.now = 1201.0  # 900 left the window
    assert breaker.allows("lb-1")
    assert LoadBalancerBreaker(history, limit=0, window=1.0, clock=clock).allows("lb-1")


def test_the_stale_sweeper_asks_the_breaker_per_load_balancer() -> None:
    t0 = 10_000.0
    clock, history = Clock(t0), History()
    store = InMemoryHealthStore()
    for n in range(4):
        store.add_amphora(AmphoraId(f"amp-{n}"), LoadBalancerId(f"lb-{n}"), last_seen=t0)
    history.retired["lb-1"] = [t0 - 10, t0 - 20, t0 - 30]  # failed over three times lately
    breaker = LoadBalancerBreaker(history, limit=3, window=300.0, clock=clock)
    sweeper = StaleAmphoraSweeper(
        store, stale_after=3.0, failover_threshold=0.9, clock=clock, breaker=breaker
    )
    clock.now = t0 + 4
    for n in (0, 3):
        store.record_heartbeat(AmphoraId(f"amp-{n}"), LoadBalancerId(f"lb-{n}"), clock.now)
    result = sweeper.sweep()
    assert result.stale == (AmphoraId("amp-1"), AmphoraId("amp-2"))
    assert result.failovers_requested == (AmphoraId("amp-2"),)


def test_a_woken_host_sweeper_cleans_at_once_rather_than_at_its_next_sweep() -> None:
    """A returning host's heartbeat that names a stray amphora wakes the sweeper: the
    old MASTER it still runs is deleted without waiting for the interval (an hour here)."""
    registry = FakeRegistry()
    agent = RecordingAgent()
    legacy: Any = RecordingAgent()
    pool = AgentPool(lambda h: agent, legacy)  # type: ignore[arg-type,return-value]
    wake, stop = threading.Event(), threading.Event()
    sweeper = HostSweeper(
        registry, stale_after=3.0, cleaner=StaleAmphoraCleaner(registry, pool), wake=wake
    )
    thread = threading.Thread(target=sweeper.run, args=(stop, 3600.0), daemon=True)
    thread.start()
    try:
        registry.stale = {H1: ["amp-old-master"]}
        wake.set()
        wait_until(lambda: agent.deleted == ["amp-old-master"], 30, "the stray deleted")
    finally:
        stop.set()
        wake.set()
        thread.join(30)
    assert not thread.is_alive()
