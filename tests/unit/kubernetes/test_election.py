"""The leader-election state machine with a fake clock: no sleeps, no server. Two
replicas share an in-memory Lease store that answers as the API server does (a fresh
resourceVersion per write, 409 for a stale one)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from lbaas.config import KubernetesSettings
from lbaas.integrations.kubernetes.base import Conflict
from lbaas.integrations.kubernetes.election import Action, Election, ElectionTimings
from tests.support.clock import FakeClock
from tests.support.fake_leases import LeaseStore

TIMINGS = ElectionTimings(lease_duration=15, renew_deadline=10.0, retry_period=2.0)
WALL = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


class Replica:
    def __init__(self, name: str, store: LeaseStore, clock: FakeClock) -> None:
        self.store = store
        self.election = Election(name, "default", "lead", TIMINGS, clock, lambda: WALL)
        self.cut = False
        """When set, nothing this replica sends reaches the server (a crash, a partition)."""

    def attempt(self) -> Action | None:
        """One try: what it did, or None when it did not reach the server or lost a race."""
        if self.cut:
            return None
        attempt = self.election.begin(self.store.read())
        if attempt.action is Action.WAIT:
            return Action.WAIT
        try:
            written = self.store.write(attempt.action, attempt.body)
        except Conflict:
            return None
        self.election.succeeded(attempt, written)
        return attempt.action


def pair() -> tuple[FakeClock, LeaseStore, Replica, Replica]:
    clock = FakeClock()
    store = LeaseStore()
    return clock, store, Replica("a", store, clock), Replica("b", store, clock)


def spec(store: LeaseStore) -> dict[str, Any]:
    assert store.lease is not None
    found: dict[str, Any] = store.lease["spec"]
    return found


def test_the_first_replica_creates_the_lease_and_the_second_waits() -> None:
    clock, store, a, b = pair()
    assert a.attempt() is Action.CREATE
    assert a.election.leads()
    assert spec(store)["holderIdentity"] == "a"
    assert spec(store)["leaseTransitions"] == 0
    assert spec(store)["renewTime"] == "2024-05-01T12:00:00.000000Z"
    assert b.attempt() is Action.WAIT
    assert not b.election.leads()
    clock.advance(TIMINGS.retry_period)
    assert a.attempt() is Action.RENEW
    assert b.attempt() is Action.WAIT


def test_two_creates_race_and_one_wins() -> None:
    _, store, a, b = pair()
    first = a.election.begin(store.read())
    second = b.election.begin(store.read())
    assert first.action is second.action is Action.CREATE
    a.election.succeeded(first, store.write(first.action, first.body))
    with pytest.raises(Conflict):
        store.write(second.action, second.body)
    assert a.election.leads() and not b.election.leads()


def test_a_renewing_leader_keeps_the_lease_however_long_it_runs() -> None:
    clock, store, a, b = pair()
    a.attempt()
    for _ in range(50):
        clock.advance(TIMINGS.retry_period)
        assert a.attempt() is Action.RENEW
        assert b.attempt() is Action.WAIT
    assert a.election.leads()
    assert spec(store)["holderIdentity"] == "a"


def test_a_leader_that_cannot_renew_stops_before_the_other_may_take_over() -> None:
    clock, store, a, b = pair()
    a.attempt()
    b.attempt()
    a.cut = True
    stopped_at = None
    took_over_at = None
    for step in range(1, 200):
        clock.advance(0.25)
        if a.election.leads():
            assert not b.election.leads()
        elif stopped_at is None:
            stopped_at = step
        if b.attempt() is Action.TAKE_OVER:
            took_over_at = step
            assert not a.election.leads()
            break
    assert stopped_at is not None and took_over_at is not None
    assert stopped_at * 0.25 == pytest.approx(TIMINGS.renew_deadline)
    assert took_over_at * 0.25 == pytest.approx(TIMINGS.lease_duration)
    assert spec(store)["holderIdentity"] == "b"
    assert spec(store)["leaseTransitions"] == 1


def test_the_expiry_countdown_restarts_at_each_renewal_seen() -> None:
    clock, _, a, b = pair()
    a.attempt()
    b.attempt()
    clock.advance(TIMINGS.lease_duration - 1)
    a.attempt()  # renews just before it would have expired
    clock.advance(1)
    assert b.attempt() is Action.WAIT
    clock.advance(TIMINGS.lease_duration - 1)
    assert b.attempt() is Action.WAIT
    clock.advance(1)
    assert b.attempt() is Action.TAKE_OVER


def test_a_replica_started_late_waits_a_whole_duration_after_first_seeing_the_lease() -> None:
    clock, _, a, b = pair()
    a.attempt()
    a.cut = True
    clock.advance(100)  # the holder died long ago, but b has only now started
    assert b.attempt() is Action.WAIT
    clock.advance(TIMINGS.lease_duration)
    assert b.attempt() is Action.TAKE_OVER


def test_a_leader_that_sees_another_holder_stops_at_once() -> None:
    """Within its renew deadline still, but the Lease names someone else (written by a
    replica that judged it expired, or by hand): it stops, and does not fight for it."""
    clock, store, a, _ = pair()
    a.attempt()
    assert store.lease is not None
    store.lease["spec"]["holderIdentity"] = "c"
    store.lease["metadata"]["resourceVersion"] = "written-by-c"
    clock.advance(TIMINGS.retry_period)
    assert a.election.time_left() > 0
    assert a.attempt() is Action.WAIT
    assert not a.election.leads()
    assert spec(store)["holderIdentity"] == "c"


def test_a_renewal_counts_from_when_its_request_started() -> None:
    clock, store, a, _ = pair()
    attempt = a.election.begin(store.read())
    clock.advance(4)  # a slow API server
    a.election.succeeded(attempt, store.write(attempt.action, attempt.body))
    assert a.election.time_left() == pytest.approx(TIMINGS.renew_deadline - 4)


def test_a_released_lease_is_taken_at_once() -> None:
    clock, store, a, b = pair()
    a.attempt()
    b.attempt()
    patch = a.election.release()
    assert patch is not None
    assert not a.election.leads()
    store.write(Action.RENEW, patch)
    assert spec(store)["holderIdentity"] == ""
    assert spec(store)["leaseDurationSeconds"] == 1
    clock.advance(0.1)
    assert b.attempt() is Action.TAKE_OVER
    assert spec(store)["holderIdentity"] == "b"
    assert spec(store)["leaseTransitions"] == 1


def test_only_the_holder_releases() -> None:
    _, store, a, b = pair()
    a.attempt()
    b.attempt()
    assert b.election.release() is None
    stale = a.election.release()
    assert stale is not None
    assert store.lease is not None
    store.lease["spec"]["holderIdentity"] = "c"
    store.lease["metadata"]["resourceVersion"] = "moved-on"
    with pytest.raises(Conflict):
        store.write(Action.RENEW, stale)


@pytest.mark.parametrize(
    ("timings", "refusal"),
    [
        ({"lease_duration": 10, "renew_deadline": 10}, "renew_deadline must be less"),
        ({"renew_deadline": 2, "retry_period": 2}, "retry_period must be less"),
    ],
)
def test_settings_refuse_a_leader_that_could_outlive_its_lease(
    timings: dict[str, float], refusal: str
) -> None:
    with pytest.raises(ValidationError, match=refusal):
        KubernetesSettings.model_validate(timings)
    assert KubernetesSettings().renew_deadline < KubernetesSettings().lease_duration
