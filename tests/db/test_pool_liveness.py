"""Pooled PostgreSQL connections: no ping in steady use, and a dead one is never handed out."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import text

from lbaas.db.engine import Database
from tests.support.databases import PostgresDatabases

pytestmark = pytest.mark.postgres


class Pings:
    """Counts the pings the pool sends, by wrapping the dialect's own ping."""

    def __init__(self, database: Database, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        dialect = database.engine.dialect
        real = dialect.do_ping

        def counted(dbapi_conn: Any) -> bool:
            self.count += 1
            return real(dbapi_conn)

        monkeypatch.setattr(dialect, "do_ping", counted)


@pytest.fixture
def url(postgres: PostgresDatabases) -> str:
    return postgres.create("db_pool_liveness")


@pytest.fixture
def database(url: str) -> Iterator[Database]:
    # An idle window far longer than any stall of a noisy machine between two reads.
    db = Database(url, pool_size=1, idle_before_ping=60)
    try:
        yield db
    finally:
        db.dispose()


def _backend_pid(database: Database) -> int:
    with database.read_connection() as conn:
        return int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())


def test_a_connection_in_steady_use_is_not_pinged(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _backend_pid(database)
    pings = Pings(database, monkeypatch)
    assert {_backend_pid(database) for _ in range(20)} == {first}
    assert pings.count == 0


def test_a_connection_idle_for_long_is_pinged_once(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    database = Database(url, pool_size=1, idle_before_ping=0.2)
    try:
        first = _backend_pid(database)
        pings = Pings(database, monkeypatch)
        time.sleep(0.3)
        assert _backend_pid(database) == first
        assert pings.count == 1
    finally:
        database.dispose()


def test_a_terminated_backend_is_replaced_before_anyone_uses_it(database: Database) -> None:
    victim = _backend_pid(database)
    other = Database(database.url)
    try:
        with other.read_connection() as conn:
            assert conn.execute(text(f"SELECT pg_terminate_backend({victim})")).scalar_one()
            gone = text(f"SELECT count(*) FROM pg_stat_activity WHERE pid = {victim}")
            deadline = time.monotonic() + 10
            while conn.execute(gone).scalar_one() and time.monotonic() < deadline:
                time.sleep(0.02)
    finally:
        other.dispose()
    # Well within the idle window: only the socket can tell that the server has gone.
    assert _backend_pid(database) != victim
