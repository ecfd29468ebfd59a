"""Health managers flush the same heartbeats without waiting on each other (PostgreSQL).

Every agent sends each heartbeat to every health manager, so they all flush the same
amphora rows. One manager here is paused in the middle of its flush, its statements done
and its row locks held, as a busy one would be; the other's flush must pass those rows by
(``SKIP LOCKED``), carry what it heard to its next flush, and there write only what the
paused one did not store. SQLite has no row locks (its writers take turns), so these run
on PostgreSQL only.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import select, text

from lbaas.db.engine import Database
from lbaas.db.session import Connection
from lbaas.db.tables import AmphoraRow
from lbaas.health.processor import HeartbeatProcessor
from lbaas.health.receiver import HeartbeatReceiver, ReceiverCounts
from lbaas.health.sql_store import SKIPS_BEFORE_WAITING, SqlHealthStore
from lbaas.model.enums import OperatingStatus
from lbaas.model.health import MemberState
from lbaas.wire.heartbeat.envelope import ReplayGuard
from tests.api.test_health_store import (
    Scene,
    bytes_in,
    last_heartbeat,
    member_status,
    statements_of_this_thread,
)
from tests.api.test_heartbeat_freshness import EPOCH, KEY, datagram
from tests.support.api_client import Api
from tests.support.waiting import wait_until

pytestmark = pytest.mark.parametrize(
    "database_url", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)

HOLD_LIMIT = 30.0  # a paused flush commits by itself after this: a waiting test fails, not hangs


class PausedFlushes(Database):
    """A health manager's database whose write transactions, statements done and row
    locks held, wait for ``release`` before they commit."""

    def __init__(self, url: str) -> None:
        super().__init__(url, pool_size=2)
        self.holding = threading.Event()
        self.release = threading.Event()

    @contextmanager
    def write_connection(self) -> Iterator[Connection]:
        with super().write_connection() as conn:
            yield conn
            self.holding.set()
            self.release.wait(HOLD_LIMIT)


class Manager:
    """One health manager: a receiver over a store of its own, on its own engine."""

    def __init__(self, database: Database, clock: list[float]) -> None:
        self.store = SqlHealthStore(database)
        processor = HeartbeatProcessor(self.store, clock=lambda: clock[0])
        self.receiver = HeartbeatReceiver(processor, KEY, ReplayGuard(max_age=300.0))

    def hear(self, datagram: bytes) -> ReceiverCounts:
        self.receiver.handle_datagram(datagram, "192.0.2.99:4242")
        return self.receiver.counters.snapshot()


@pytest.fixture
def paused(plane: Any) -> Iterator[PausedFlushes]:
    database = PausedFlushes(plane.database.url)
    try:
        yield database
    finally:
        database.release.set()
        database.dispose()


def stored_stamp(plane: Any, amphora_id: str) -> tuple[int | None, int | None]:
    with plane.database.read() as session:
        row = session.execute(
            select(AmphoraRow.heartbeat_epoch, AmphoraRow.heartbeat_sequence).where(
                AmphoraRow.id == amphora_id
            )
        ).one()
    return row[0], row[1]


def two_managers(
    api: Api, plane: Any, paused: PausedFlushes, now: float
) -> tuple[Scene, list[float], Manager, Manager]:
    """A load balancer with one amphora; the clock; the paused manager and the other."""
    clock = [now]
    return Scene(api, plane), clock, Manager(paused, clock), Manager(plane.database, clock)


def flush_in_background(manager: Manager) -> threading.Thread:
    thread = threading.Thread(target=manager.store.flush, name="paused-flush")
    thread.start()
    return thread


def test_the_same_heartbeat_at_two_managers_is_written_once_and_neither_waits(
    api: Api, plane: Any, paused: PausedFlushes
) -> None:
    scene, clock, first, second = two_managers(api, plane, paused, 3_000.0)
    sent = datagram(scene, 1, 100, MemberState.UP)
    for manager in (first, second):
        counts = manager.hear(sent)
        assert (counts.accepted, counts.rejected, counts.ignored) == (1, 0, 0)

    flushing = flush_in_background(first)
    assert paused.holding.wait(HOLD_LIMIT)
    second.store.flush()  # the amphora's row is the first's until it commits
    assert flushing.is_alive(), "the second flush waited for the first's row locks"
    paused.release.set()
    flushing.join()
    with statements_of_this_thread() as statements:
        second.store.flush()  # what it passed by: the same stamp, written by the first
    assert statements and not [s for s in statements if "FOR UPDATE" in s]  # no row taken

    assert bytes_in(plane, scene.listener["id"]) == 100
    assert last_heartbeat(plane, scene.amphora) == 3_000.0
    assert stored_stamp(plane, scene.amphora) == (EPOCH, 1)
    assert member_status(plane, scene.member["id"]) == OperatingStatus.ONLINE


def test_what_a_held_row_kept_back_is_written_next_flush_when_newer(
    api: Api, plane: Any, paused: PausedFlushes
) -> None:
    """The first manager misses the second datagram (UDP may drop it): the second one
    writes it once the row is free, folding its counters after the first's report."""
    scene, clock, first, second = two_managers(api, plane, paused, 4_000.0)
    earlier = datagram(scene, 1, 100, MemberState.UP)
    first.hear(earlier)
    second.hear(earlier)
    clock[0] = 4_001.0
    # HAProxy reloaded in between: its counters start again (40 after 100 is 140 in all).
    assert second.hear(datagram(scene, 2, 40, MemberState.UP)).accepted == 2

    flushing = flush_in_background(first)
    assert paused.holding.wait(HOLD_LIMIT)
    second.store.flush()
    assert flushing.is_alive(), "the second flush waited for the first's row locks"
    paused.release.set()
    flushing.join()
    assert stored_stamp(plane, scene.amphora) == (EPOCH, 1)  # the first's only
    second.store.flush()

    assert stored_stamp(plane, scene.amphora) == (EPOCH, 2)
    assert bytes_in(plane, scene.listener["id"]) == 140
    assert last_heartbeat(plane, scene.amphora) == 4_001.0


def lock_waiters(plane: Any) -> int:
    query = text(
        "SELECT count(*) FROM pg_stat_activity"
        " WHERE datname = current_database() AND wait_event_type = 'Lock'"
    )
    with plane.database.read_connection() as conn:
        return int(conn.execute(query).scalar_one())


def test_a_row_held_flush_after_flush_is_waited_for_in_the_end(
    api: Api, plane: Any, paused: PausedFlushes
) -> None:
    """So that a long transaction elsewhere cannot make carried facts pile up."""
    scene, clock, first, second = two_managers(api, plane, paused, 5_000.0)
    first.hear(datagram(scene, 1, 100, MemberState.UP))
    second.hear(datagram(scene, 2, 200, MemberState.UP))

    flushing = flush_in_background(first)
    assert paused.holding.wait(HOLD_LIMIT)
    for _ in range(SKIPS_BEFORE_WAITING):
        second.store.flush()
    assert stored_stamp(plane, scene.amphora) == (None, None)  # nothing committed yet
    waiting = flush_in_background(second)
    wait_until(lambda: lock_waiters(plane) == 1, what="the second flush to wait for the row")
    paused.release.set()
    flushing.join()
    waiting.join()

    assert stored_stamp(plane, scene.amphora) == (EPOCH, 2)
    assert bytes_in(plane, scene.listener["id"]) == 200
