"""Leader election over one engine with a fake clock: one leader at a time, always.

Two processes' ``Leadership`` of the same loop campaign on the embedded engine; each
round, both renew (when they can reach it) and the test reads who leads.
"""

from __future__ import annotations

from dataclasses import dataclass

from lbaas.coordination.base import CoordinationUnavailable, LiveLease
from lbaas.coordination.embedded import EmbeddedCoordinator
from lbaas.coordination.leader import Leadership, process_holder

TTL = 3.0


@dataclass
class Clock:
    now: float = 50.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Reach:
    engine: EmbeddedCoordinator
    up: bool = True

    def renew(self, name: str, holder: str, ttl: float) -> bool:
        if not self.up:
            raise CoordinationUnavailable("cut off")
        return self.engine.renew(name, holder, ttl)

    def release(self, name: str, holder: str) -> None:
        self.engine.release(name, holder)

    def live(self, prefix: str) -> list[LiveLease]:
        return self.engine.live(prefix)

    def close(self) -> None:
        pass


def _round(clock: Clock, *parties: Leadership) -> list[str]:
    for party in parties:
        party.keeper.attempt()
    clock.now += TTL / 3
    return [party.keeper.holder for party in parties if party.leads()]


def test_one_leads_the_other_takes_over_after_a_partition_never_both() -> None:
    clock = Clock()
    engine = EmbeddedCoordinator(clock)
    reach_a, reach_b = Reach(engine), Reach(engine)
    a = Leadership(reach_a, "distributed-poll", TTL, holder="a", clock=clock)
    b = Leadership(reach_b, "distributed-poll", TTL, holder="b", clock=clock)
    leaders = [_round(clock, a, b) for _ in range(5)]
    assert all(round_ == ["a"] for round_ in leaders)
    reach_a.up = False  # a partitioned: it stops leading by itself, then b takes over
    leaders = [_round(clock, a, b) for _ in range(6)]
    assert all(len(round_) <= 1 for round_ in leaders)
    assert leaders[-1] == ["b"]
    reach_a.up = True  # a back: b keeps leading, a follows
    assert [_round(clock, a, b) for _ in range(3)] == [["b"]] * 3


def test_a_leader_that_stops_hands_over_at_once_and_loops_are_separate() -> None:
    clock = Clock()
    engine = EmbeddedCoordinator(clock)
    a = Leadership(engine, "housekeeping", TTL, holder="a", clock=clock)
    b = Leadership(engine, "housekeeping", TTL, holder="b", clock=clock)
    other = Leadership(engine, "tier-watch", TTL, holder="b", clock=clock)
    assert _round(clock, a, b, other) == ["a", "b"]  # b leads the other loop
    a.keeper.release()  # what stop() does after its threads end; a renews no more
    assert not a.leads()
    assert _round(clock, b) == ["b"]  # at once, not after a's lease
    assert process_holder() != process_holder()
