"""On PostgreSQL a committed job wakes listening workers; an uncommitted one does not."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from lbaas.db.engine import Database
from lbaas.db.jobs import job_queue
from lbaas.db.jobs.job_notify import PostgresJobListener, libpq_dsn
from lbaas.db.migrate import upgrade_database
from tests.support.databases import PostgresDatabases
from tests.support.wakes import WakeCounter

pytestmark = pytest.mark.postgres


@pytest.fixture
def database(postgres: PostgresDatabases) -> Iterator[Database]:
    db = Database(postgres.create("notify"))
    upgrade_database(db)
    yield db
    db.dispose()


def test_a_committed_job_wakes_the_listener_and_an_uncommitted_one_does_not(
    database: Database,
) -> None:
    wakes = WakeCounter()
    listener = PostgresJobListener(database.url, wakes)
    listener.start()
    try:
        # On connecting, the listener looks once for what it may have missed.
        assert wakes.wait_beyond(0)
        before = wakes.count
        with database.write() as session:
            job_queue.enqueue_converge(session, "lb-committed", time.time(), new=True)
            # Not yet committed: nothing may be delivered.
            assert not wakes.wait_beyond(before, timeout=0.3)
        assert wakes.wait_beyond(before)
        after_commit = wakes.count
        with pytest.raises(RuntimeError), database.write() as session:
            job_queue.enqueue_converge(session, "lb-rolled-back", time.time(), new=True)
            raise RuntimeError("the write fails after enqueueing")
        assert not wakes.wait_beyond(after_commit, timeout=0.5)
    finally:
        listener.stop()


def test_the_dsn_is_the_libpq_form_of_the_sqlalchemy_url() -> None:
    url = "postgresql+psycopg://lbaas:s%40cret@db.example:5433/lbaas"
    assert libpq_dsn(url) == "postgresql://lbaas:s%40cret@db.example:5433/lbaas"
