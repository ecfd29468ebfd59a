"""A project's quota record, created on first use and locked for the quota check."""

from __future__ import annotations

from sqlalchemy import ColumnElement, or_
from sqlalchemy.orm import Session

from lbaas.db.insert_absent import insert_if_absent
from lbaas.db.tables import QuotaRow, table_of


def lock_quota_record(session: Session, project_id: str) -> QuotaRow:
    """The project's quota record, locked for the rest of the transaction (created with all
    defaults the first time the project creates anything).

    The lock is what makes "count, compare, insert" hold under concurrency: two creates of
    one project queue here, and the second counts after the first has committed (READ
    COMMITTED gives the count a fresh snapshot). On SQLite ``BEGIN IMMEDIATE`` already
    serialises writers and ``FOR UPDATE`` is not rendered.
    """
    values = {c.key: None for c in table_of(QuotaRow).columns}
    insert_if_absent(session.connection(), QuotaRow, {**values, "project_id": project_id})
    record = session.get(QuotaRow, project_id, with_for_update=True, populate_existing=True)
    assert record is not None  # inserted above or by a committed concurrent writer
    return record


def has_own_limit() -> ColumnElement[bool]:
    """A condition true of the records that hold at least one limit (not all ``null``)."""
    columns = table_of(QuotaRow).c
    return or_(*(c.is_not(None) for c in columns if c.key != "project_id"))
