"""Reads: never a write, and on PostgreSQL never a transaction left open between statements."""

from __future__ import annotations

import pytest
from sqlalchemy import select, text

from lbaas.db.engine import Database
from lbaas.db.tables import QuotaRow
from tests.support.databases import PostgresDatabases


def _quota(database: Database, project: str) -> int | None:
    with database.read_connection() as conn:
        return conn.execute(
            select(QuotaRow.loadbalancer).where(QuotaRow.project_id == project)
        ).scalar_one_or_none()


def test_a_read_session_refuses_to_insert(database: Database) -> None:
    with pytest.raises(RuntimeError, match="read"), database.read() as session:
        session.add(QuotaRow(project_id="p-new", loadbalancer=3))
        session.flush()
    with database.read() as session:
        assert session.get(QuotaRow, "p-new") is None


def test_a_read_session_refuses_to_autoflush_a_changed_row(database: Database) -> None:
    with database.write() as session:
        session.add(QuotaRow(project_id="p-1", loadbalancer=3))
    with pytest.raises(RuntimeError, match="read"), database.read() as session:
        row = session.get(QuotaRow, "p-1")
        assert row is not None
        row.loadbalancer = 99
        session.execute(select(QuotaRow))  # autoflush would send the change
    assert _quota(database, "p-1") == 3


def test_a_read_session_may_load_and_leave_rows_untouched(database: Database) -> None:
    with database.write() as session:
        session.add(QuotaRow(project_id="p-2", loadbalancer=4))
    with database.read() as session:
        row = session.get(QuotaRow, "p-2")
        assert row is not None and row.loadbalancer == 4
        session.execute(select(QuotaRow)).all()
    assert _quota(database, "p-2") == 4


@pytest.mark.postgres
def test_a_postgres_read_holds_no_transaction_open(postgres: PostgresDatabases) -> None:
    database = Database(postgres.create("db_reads_autocommit"))
    try:
        with database.read_connection() as conn:
            conn.execute(text("SELECT 1")).all()
            # Inside a transaction now() stays at its start; in autocommit each statement
            # is its own: a slow reader holds no snapshot and is never "idle in transaction".
            assert conn.execute(text("SELECT now() = statement_timestamp()")).scalar_one()
    finally:
        database.dispose()
