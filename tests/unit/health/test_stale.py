"""Stale amphorae are failed over once each, unless so many are stale it must be our fault."""

from __future__ import annotations

import logging
import threading

import pytest

from lbaas.health.memory_store import InMemoryHealthStore
from lbaas.health.stale import StaleAmphoraSweeper
from lbaas.health.store import AmphoraHeartbeat
from lbaas.model.graph import AmphoraId, LoadBalancerId
from tests.support.clock import FakeClock

STALE_AFTER = 3.0
T0 = 10_000.0


def amphora(n: int) -> AmphoraId:
    return AmphoraId(f"amp-{n}")


class Fleet:
    """``size`` amphorae, one load balancer each, all heard from at T0."""

    def __init__(self, size: int, threshold: float = 0.5) -> None:
        self.clock = FakeClock(T0)
        self.store = InMemoryHealthStore()
        self.ids = [amphora(n) for n in range(size)]
        for amp in self.ids:
            self.store.add_amphora(amp, LoadBalancerId(f"lb-{amp}"), last_seen=T0)
        self.sweeper = StaleAmphoraSweeper(
            self.store, stale_after=STALE_AFTER, failover_threshold=threshold, clock=self.clock
        )

    def heartbeat(self, amphorae: list[AmphoraId]) -> None:
        for amp in amphorae:
            assert self.store.record_heartbeat(amp, LoadBalancerId(f"lb-{amp}"), self.clock())

    def silence(self, silent: list[AmphoraId], seconds: float) -> None:
        """Let time pass while every amphora but ``silent`` keeps heartbeating."""
        self.clock.advance(seconds)
        self.heartbeat([a for a in self.ids if a not in silent])


def test_nothing_is_stale_within_stale_after() -> None:
    fleet = Fleet(4)
    fleet.clock.advance(STALE_AFTER)
    result = fleet.sweeper.sweep()
    assert result.stale == () and result.failovers_requested == ()
    assert fleet.store.failover_requests() == []


def test_one_silent_amphora_is_failed_over_once() -> None:
    fleet = Fleet(4)
    fleet.silence([amphora(2)], STALE_AFTER + 1)
    first = fleet.sweeper.sweep()
    assert first.stale == (amphora(2),)
    assert first.failovers_requested == (amphora(2),)
    fleet.silence([amphora(2)], 5)
    second = fleet.sweeper.sweep()
    assert second.stale == (amphora(2),)
    assert second.failovers_requested == ()
    assert fleet.store.failover_requests() == [amphora(2)]
    assert fleet.sweeper.alarm is None


def test_failover_can_be_requested_again_once_the_previous_one_finished() -> None:
    fleet = Fleet(4)
    fleet.silence([amphora(0)], STALE_AFTER + 1)
    fleet.sweeper.sweep()
    fleet.store.finish_failover(amphora(0))
    assert fleet.sweeper.sweep().failovers_requested == (amphora(0),)


def test_every_heartbeat_stops_no_failover_and_alarm_visible(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fleet = Fleet(10)
    caplog.set_level(logging.ERROR, logger="lbaas.health.stale")
    fleet.silence(fleet.ids, STALE_AFTER + 1)
    result = fleet.sweeper.sweep()
    expected = "failover storm: 10 of 10 amphorae stale; automatic failover stopped"
    assert fleet.sweeper.alarm == expected
    assert result.alarm == expected
    assert len(result.stale) == 10 and result.failovers_requested == ()
    fleet.silence(fleet.ids, 60)
    fleet.sweeper.sweep()
    assert fleet.store.failover_requests() == []
    assert [r.getMessage() for r in caplog.records] == [expected]  # logged once, not per sweep


def test_storm_message_counts_stale_and_total() -> None:
    fleet = Fleet(10)
    fleet.silence(fleet.ids[:8], STALE_AFTER + 1)
    fleet.sweeper.sweep()
    assert fleet.sweeper.alarm == (
        "failover storm: 8 of 10 amphorae stale; automatic failover stopped"
    )


@pytest.mark.parametrize(
    ("size", "silent", "threshold", "storm"),
    [
        (10, 5, 0.5, False),  # exactly at the threshold: not above it
        (10, 6, 0.5, True),
        (10, 2, 0.1, True),
        (10, 10, 1.0, False),  # threshold 1: the guard never trips
        (1, 1, 0.5, False),  # one amphora alone is a failure, not a storm
        (2, 2, 0.5, True),
    ],
)
def test_storm_threshold(size: int, silent: int, threshold: float, storm: bool) -> None:
    fleet = Fleet(size, threshold=threshold)
    fleet.silence(fleet.ids[:silent], STALE_AFTER + 1)
    result = fleet.sweeper.sweep()
    assert (result.alarm is not None) is storm
    assert len(result.failovers_requested) == (0 if storm else silent)


def test_alarm_clears_when_heartbeats_return_and_the_rest_fail_over() -> None:
    fleet = Fleet(10)
    fleet.silence(fleet.ids, STALE_AFTER + 1)
    assert fleet.sweeper.sweep().alarm is not None
    fleet.heartbeat(fleet.ids[1:])  # all but one come back
    result = fleet.sweeper.sweep()
    assert fleet.sweeper.alarm is None and result.alarm is None
    assert result.failovers_requested == (amphora(0),)


def test_silence_from_before_the_sweeper_started_is_not_counted() -> None:
    # The health manager itself was down for a minute: every last_seen is old.
    fleet = Fleet(1)
    fleet.clock.advance(60)
    sweeper = StaleAmphoraSweeper(
        fleet.store, stale_after=STALE_AFTER, failover_threshold=0.5, clock=fleet.clock
    )
    assert sweeper.sweep().stale == ()
    fleet.clock.advance(STALE_AFTER + 1)
    assert sweeper.sweep().failovers_requested == (amphora(0),)


def test_amphorae_never_heard_from_are_not_candidates() -> None:
    fleet = Fleet(2)
    fleet.store.add_amphora(AmphoraId("booting"), LoadBalancerId("lb-x"))
    fleet.clock.advance(STALE_AFTER + 1)
    fleet.heartbeat(fleet.ids)
    result = fleet.sweeper.sweep()
    assert result.total == 2 and result.stale == ()


class BrokenStore(InMemoryHealthStore):
    def __init__(self, stop: threading.Event) -> None:
        super().__init__()
        self._stop = stop
        self.calls = 0

    def list_amphora_heartbeats(self) -> list[AmphoraHeartbeat]:
        self.calls += 1
        if self.calls == 2:
            self._stop.set()
        raise ConnectionError("database went away")


def test_run_survives_a_failing_store_and_stops_when_asked() -> None:
    stop = threading.Event()
    store = BrokenStore(stop)
    sweeper = StaleAmphoraSweeper(store, stale_after=1, failover_threshold=0.5)
    sweeper.run(stop, interval=0)
    assert store.calls == 2 and sweeper.errors == 2


@pytest.mark.parametrize(("stale_after", "threshold"), [(0, 0.5), (-1, 0.5), (3, -0.1), (3, 1.5)])
def test_settings_are_checked(stale_after: float, threshold: float) -> None:
    with pytest.raises(ValueError):
        StaleAmphoraSweeper(
            InMemoryHealthStore(), stale_after=stale_after, failover_threshold=threshold
        )
