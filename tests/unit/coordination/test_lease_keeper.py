"""The lease holder's state machine with a fake clock: when a node fences itself.

The engine is the embedded one on the same fake clock; a renewal's network delay is a
clock advance made by a wrapper while the call is "in flight", so the tests say exactly
when the holder sent it, when the engine counted it and when the holder must give up.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import pytest

from lbaas.coordination.base import CoordinationUnavailable, LiveLease
from lbaas.coordination.embedded import EmbeddedCoordinator
from lbaas.coordination.keeper import KeeperLoop, LeaseKeeper

TTL = 0.5


@dataclass
class FakeClock:
    now: float = 100.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class SlowEngine:
    """The embedded engine behind a network: each call takes ``delay`` s, or fails."""

    engine: EmbeddedCoordinator
    clock: FakeClock
    delay: float = 0.0
    reachable: bool = True

    def renew(self, name: str, holder: str, ttl: float) -> bool:
        self.clock.advance(self.delay / 2)  # the request on its way
        if not self.reachable:
            raise CoordinationUnavailable("cut off")
        granted = self.engine.renew(name, holder, ttl)
        self.clock.advance(self.delay / 2)  # the answer on its way back
        return granted

    def release(self, name: str, holder: str) -> None:
        self.engine.release(name, holder)

    def live(self, prefix: str) -> list[LiveLease]:
        return self.engine.live(prefix)

    def close(self) -> None:
        pass


@dataclass
class Announcer:
    events: list[str] = field(default_factory=list)

    def announce(self) -> None:
        self.events.append("announce")

    def withdraw(self) -> None:
        self.events.append("withdraw")


def _world(delay: float = 0.0) -> tuple[FakeClock, SlowEngine, Announcer, LeaseKeeper]:
    clock = FakeClock()
    engine = SlowEngine(EmbeddedCoordinator(clock), clock, delay)
    bird = Announcer()
    keeper = LeaseKeeper(engine, "tier/h1", "h1", TTL, clock, bird.announce, bird.withdraw)
    return clock, engine, bird, keeper


def test_a_granted_lease_announces_once_and_renewals_keep_it() -> None:
    clock, _, bird, keeper = _world()
    for _ in range(10):
        assert keeper.attempt()
        clock.advance(0.2)
        assert keeper.check()
    assert bird.events == ["announce"]


def test_a_node_cut_off_withdraws_by_itself_before_the_engine_lets_the_lease_go() -> None:
    clock, engine, bird, keeper = _world(delay=0.05)
    assert keeper.attempt()
    sent_at = 100.0
    engine.reachable = False
    while keeper.check():
        keeper.attempt()  # each fails; the clock moves by the request's half delay
        clock.advance(0.01)
    assert bird.events == ["announce", "withdraw"]
    # It gave up no later than ttl after it SENT its last granted renewal...
    assert clock.now >= sent_at + TTL and keeper.remaining() <= 0
    # ...while the engine, which counted from receiving it, still holds the lease then.
    fenced_at = clock.now
    engine_expiry = sent_at + engine.delay / 2 + TTL
    assert fenced_at <= engine_expiry + 0.01


def test_the_holder_fences_first_whatever_the_delay() -> None:
    for delay in (0.01, 0.1, 0.3, 0.45):
        clock, engine, _, keeper = _world(delay=delay)
        assert keeper.attempt()
        engine.reachable = False
        clock.advance(keeper.remaining())
        assert not keeper.check()
        # At that instant the engine's lease has not yet expired (or just does): never
        # a moment where the watcher sees it gone while the node still announces.
        assert [lease.holder for lease in engine.live("tier/")] == ["h1"]


def test_a_renewal_slower_than_the_ttl_never_extends_the_lease() -> None:
    clock, _, bird, keeper = _world(delay=0.6)
    assert keeper.attempt()  # granted, but it came back after the ttl: already stale
    assert not keeper.check()
    assert bird.events == []  # never announced on a lease that was over on arrival


def test_a_busy_node_that_renews_late_but_within_the_ttl_is_not_marked_down() -> None:
    clock, engine, bird, keeper = _world(delay=0.05)
    watcher_saw: list[set[str]] = []
    for busy in (0.1, 0.3, 0.35, 0.2, 0.38, 0.1):  # a loaded loop's irregular gaps
        assert keeper.attempt()
        for _ in range(int(busy / 0.05)):
            clock.advance(0.05)
            assert keeper.check()
            watcher_saw.append({lease.holder for lease in engine.live("tier/")})
    assert bird.events == ["announce"]
    assert all(seen == {"h1"} for seen in watcher_saw)


def test_another_holder_cannot_take_a_held_lease_until_it_expires() -> None:
    clock, engine, _, keeper = _world()
    assert keeper.attempt()
    assert not engine.renew("tier/h1", "intruder", TTL)
    clock.advance(TTL)
    assert engine.renew("tier/h1", "intruder", TTL)
    assert not keeper.attempt()  # refused: no longer ours
    clock.advance(TTL)
    assert not keeper.check()


def test_coming_back_announces_again_and_release_withdraws_and_frees() -> None:
    clock, engine, bird, keeper = _world()
    assert keeper.attempt()
    engine.reachable = False
    clock.advance(TTL)
    assert not keeper.attempt()
    engine.reachable = True
    assert keeper.attempt()
    keeper.release()
    assert bird.events == ["announce", "withdraw", "announce", "withdraw"]
    assert engine.live("") == []


def test_the_loop_refuses_an_interval_that_cannot_keep_the_lease() -> None:
    _, _, _, keeper = _world()
    with pytest.raises(ValueError, match="below the ttl"):
        KeeperLoop(keeper, TTL)
    with pytest.raises(ValueError, match="ttl"):
        LeaseKeeper(EmbeddedCoordinator(), "x", "h", 0, FakeClock(), print, print)


def test_the_loop_holds_the_lease_in_its_threads_and_gives_it_back_on_stop() -> None:
    engine = EmbeddedCoordinator()
    bird = Announcer()
    keeper = LeaseKeeper(engine, "tier/h1", "h1", 5.0, time.monotonic, bird.announce, bird.withdraw)
    loop = KeeperLoop(keeper, 0.05)
    loop.start()
    try:
        deadline = time.monotonic() + 30
        while engine.live("tier/") == [] or bird.events != ["announce"]:
            assert time.monotonic() < deadline, "the loop never took its lease"
            time.sleep(0.01)
    finally:
        loop.stop()
    assert bird.events == ["announce", "withdraw"]
    assert engine.live("tier/") == []
